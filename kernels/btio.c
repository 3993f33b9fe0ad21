/* btio: the I/O of NPB BT-IO (NASA Ames), "full" subtype: collective MPI-IO through subarray views of BT's
 * multi-partition decomposition, one solution appended to the file every few time steps, read back at the end.
 *
 * The solution is 5 doubles per point of an N^3 grid (--class S 12, W 24, A 64, B 102, C 162, or --grid N), stored as
 * BT's Fortran array u(5, N, N, N): byte 40*((z*N + y)*N + x) + 8*m. With P = q^2 processes the grid is cut into
 * q^3 cells and each process owns q of them on a diagonal: cell c of the process at (i, j) = (rank / q, rank % q) is
 * cell ((j + c) % q, (i - c + q) % q, c), so each z-slab of cells is covered once. Cell c's points are stored
 * in memory with 2 ghost layers on every side, as BT does; the memory datatype is a struct of the cells' interior
 * subarrays and the file view a struct of the cells' subarrays of the grid. Time step s = 1..steps sleeps
 * --compute-seconds (BT's solver), and when s is a multiple of --write-interval or the last step, the solution is
 * written with one MPI_File_write_at_all through a view displaced by (dumps so far) x solution size. Then every dump
 * is read back (MPI_File_read_at_all) and verified. The data is the common pattern of writer rank 0 at each file
 * offset, so each dump differs and the file is the same whatever the number of processes.
 *
 * Phases: "write" (every dump, then one MPI_File_sync at the end, as BT has none between dumps; the compute sleeps
 * are excluded from its time) and "read" (every dump), each summing all dumps.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep under -std=c11 too */

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/view.h"
#include "kernels.h"

#define VARS 5 /* doubles per grid point */
#define POINT_BYTES (VARS * 8)
#define GHOST 2
#define MAX_CALL_BYTES (1LL << 30)

static const char *const classes[] = {"S", "W", "A", "B", "C", NULL};
static const int class_grid[] = {12, 24, 64, 102, 162};
static const int class_steps[] = {60, 200, 200, 200, 200}; /* BT's niter */

typedef struct {
    iotame_standard_options_t std;
    int cls;
    int64_t grid, steps, interval;
    double compute;
} btio_opts_t;

/* One cell of this process: position and size in grid points (x, y, z), and where it sits in the buffer. */
typedef struct {
    int low[3], size[3];
    size_t mem_offset; /* bytes from the start of the buffer to the cell's ghosted block */
} cell_t;

static int btio_parse(iotame_run_t *run, int argc, char **argv, btio_opts_t *o, int *q)
{
    const iotame_option_t opts[] = {
        {.name = "class", .type = IOTAME_OPT_ENUM, .value = &o->cls, .def = "S", .choices = classes,
         .help = "NPB problem class: grid 12^3 (S), 24^3 (W), 64^3 (A), 102^3 (B), 162^3 (C)"},
        {.name = "grid", .type = IOTAME_OPT_INT, .value = &o->grid, .def = "0", .min = "0", .max = "65536",
         .help = "grid points per dimension instead of the class's; 0: the class's"},
        {.name = "steps", .type = IOTAME_OPT_INT, .value = &o->steps, .def = "0", .min = "0", .max = "1000000",
         .help = "time steps; 0: the class's (60 for S, 200 otherwise)"},
        {.name = "write-interval", .type = IOTAME_OPT_INT, .value = &o->interval, .def = "5", .min = "1",
         .help = "write the solution every N steps (and at the last step)"},
        {.name = "compute-seconds", .type = IOTAME_OPT_DOUBLE, .value = &o->compute, .def = "0", .min = "0",
         .max = "3600", .help = "sleep per time step in place of BT's solver (not counted in the write phase)"},
        IOTAME_STANDARD_OPTIONS(o->std, "iotame-btio.dat"),
        {0}};
    int rc = iotame_options_parse(run, opts, argc, argv);
    if (rc) return rc;
    if (o->grid == 0) o->grid = class_grid[o->cls];
    if (o->steps == 0) o->steps = class_steps[o->cls];
    iotame_param_int(run, "grid", o->grid);
    iotame_param_int(run, "steps", o->steps);

    *q = (int)lround(sqrt((double)run->nprocs));
    if (*q * *q != run->nprocs)
        return iotame_usage_error("needs a square number of processes (1, 4, 9, 16, ...; mpiexec -n), got %d",
                                  run->nprocs);
    if (o->grid < *q)
        return iotame_usage_error("option --grid: %lld points per dimension cannot be cut into %d cells of at least "
                                  "one point (sqrt of %d processes)", (long long)o->grid, *q, run->nprocs);
    int64_t big = (o->grid + *q - 1) / *q; /* the largest cell's side */
    if (big * big * big * *q > MAX_CALL_BYTES / POINT_BYTES)
        return iotame_usage_error("option --grid: %lld^3 points on %d processes is more than %lld bytes per process "
                                  "and write (use more processes)", (long long)o->grid, run->nprocs, MAX_CALL_BYTES);
    return 0;
}

/* BT's split of n points into q cells: the first n % q cells get one point more. */
static void split(int n, int q, int k, int *low, int *size)
{
    int base = n / q, extra = n % q;
    *size = base + (k < extra);
    *low = k * base + (k < extra ? k : extra);
}

/* Builds this rank's cells and the two datatypes: file view (struct of grid subarrays) and memory (struct of the
 * cells' interiors inside their ghosted blocks). Returns the buffer size in bytes. */
static size_t btio_layout(const btio_opts_t *o, int rank, int q, cell_t *cells, MPI_Datatype *filetype,
                          MPI_Datatype *memtype)
{
    int i = rank / q, j = rank % q, n = (int)o->grid;
    MPI_Datatype *ftypes = malloc(q * sizeof *ftypes), *mtypes = malloc(q * sizeof *mtypes);
    int *ones = malloc(q * sizeof *ones);
    MPI_Aint *fdisp = malloc(q * sizeof *fdisp), *mdisp = malloc(q * sizeof *mdisp);
    if (!ftypes || !mtypes || !ones || !fdisp || !mdisp) iotame_fatal("out of memory for %d cells", q);
    size_t total = 0;
    for (int c = 0; c < q; c++) {
        cell_t *cl = &cells[c];
        int coord[3] = {(j + c) % q, (i - c + q) % q, c};
        for (int d = 0; d < 3; d++) split(n, q, coord[d], &cl->low[d], &cl->size[d]);
        cl->mem_offset = total;
        /* C order, slowest first: (z, y, x, var) is Fortran's u(var, x, y, z) */
        int fsizes[4] = {n, n, n, VARS}, sub[4] = {cl->size[2], cl->size[1], cl->size[0], VARS};
        int fstarts[4] = {cl->low[2], cl->low[1], cl->low[0], 0};
        int msizes[4] = {sub[0] + 2 * GHOST, sub[1] + 2 * GHOST, sub[2] + 2 * GHOST, VARS};
        int mstarts[4] = {GHOST, GHOST, GHOST, 0};
        MPI_Type_create_subarray(4, fsizes, sub, fstarts, MPI_ORDER_C, MPI_DOUBLE, &ftypes[c]);
        MPI_Type_create_subarray(4, msizes, sub, mstarts, MPI_ORDER_C, MPI_DOUBLE, &mtypes[c]);
        ones[c] = 1;
        fdisp[c] = 0; /* every grid subarray spans the whole solution; cell c lies in z-slab c, so in order */
        mdisp[c] = (MPI_Aint)total;
        total += (size_t)msizes[0] * msizes[1] * msizes[2] * POINT_BYTES;
    }
    MPI_Type_create_struct(q, ones, fdisp, ftypes, filetype);
    MPI_Type_create_struct(q, ones, mdisp, mtypes, memtype);
    iotame_view_commit(filetype);
    iotame_view_commit(memtype);
    for (int c = 0; c < q; c++) {
        MPI_Type_free(&ftypes[c]);
        MPI_Type_free(&mtypes[c]);
    }
    free(ftypes);
    free(mtypes);
    free(ones);
    free(fdisp);
    free(mdisp);
    return total;
}

/* Calls fn on every contiguous run of a cell: one x-row of size[0] points, at its file offset in dump `base` and
 * its place in the buffer. */
typedef void row_fn(iotame_run_t *run, const char *path, unsigned char *mem, size_t len, uint64_t offset);

static void for_each_row(iotame_run_t *run, const btio_opts_t *o, const cell_t *cells, int q, unsigned char *buf,
                         uint64_t base, row_fn *fn)
{
    const uint64_t n = (uint64_t)o->grid;
    for (int c = 0; c < q; c++) {
        const cell_t *cl = &cells[c];
        size_t gx = (size_t)cl->size[0] + 2 * GHOST, gy = (size_t)cl->size[1] + 2 * GHOST;
        size_t len = (size_t)cl->size[0] * POINT_BYTES;
        for (int z = 0; z < cl->size[2]; z++) {
            for (int y = 0; y < cl->size[1]; y++) {
                size_t m = cl->mem_offset + (((z + GHOST) * gy + (y + GHOST)) * gx + GHOST) * POINT_BYTES;
                uint64_t off = base + (((uint64_t)(cl->low[2] + z) * n + (uint64_t)(cl->low[1] + y)) * n +
                                       (uint64_t)cl->low[0]) * POINT_BYTES;
                fn(run, o->std.file, buf + m, len, off);
            }
        }
    }
}

static void fill_row(iotame_run_t *run, const char *path, unsigned char *mem, size_t len, uint64_t offset)
{
    (void)path;
    iotame_data_fill(run, mem, len, 0, offset);
}

/* Checks a row, then gives it back to the holes so that iotame_view_holes_check sees only the ghost cells. */
static void check_row(iotame_run_t *run, const char *path, unsigned char *mem, size_t len, uint64_t offset)
{
    iotame_data_check(run, path, mem, len, 0, offset);
    iotame_view_clear(run, mem, len, IOTAME_VIEW_HOLE);
}

static void compute(iotame_run_t *run, double seconds)
{
    if (seconds <= 0) return;
    double t = MPI_Wtime();
    struct timespec ts = {.tv_sec = (time_t)seconds, .tv_nsec = (long)((seconds - floor(seconds)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) continue;
    iotame_phase_exclude(run, MPI_Wtime() - t);
}

static int btio_run(iotame_run_t *run, int argc, char **argv)
{
    btio_opts_t o;
    int q, rc = btio_parse(run, argc, argv, &o, &q);
    if (rc) return rc;
    run->seed = (uint64_t)o.std.seed;

    cell_t *cells = malloc(q * sizeof *cells);
    if (!cells) iotame_fatal("out of memory for %d cells", q);
    MPI_Datatype filetype, memtype;
    size_t buflen = btio_layout(&o, run->rank, q, cells, &filetype, &memtype);
    unsigned char *buf = iotame_alloc(buflen);
    memset(buf, IOTAME_VIEW_HOLE, buflen);
    int my_points = 0;
    for (int c = 0; c < q; c++) my_points += cells[c].size[0] * cells[c].size[1] * cells[c].size[2];
    const uint64_t solution = (uint64_t)o.grid * (uint64_t)o.grid * (uint64_t)o.grid * POINT_BYTES;
    const int64_t dumps = o.steps / o.interval + (o.steps % o.interval != 0);
    const uint64_t my_bytes = (uint64_t)dumps * (uint64_t)my_points * POINT_BYTES;
    const char *path = o.std.file;
    iotame_file_t f;

    if (!o.std.skip_write) {
        rc = iotame_view_remove(run, path); /* as BT's setup_btio */
        if (rc == 0) {
            iotame_phase_begin(run, "write");
            rc = iotame_view_open(run, &f, path, true);
        }
        if (rc == 0) {
            int64_t dump = 0;
            for (int64_t step = 1; step <= o.steps; step++) {
                compute(run, o.compute);
                if (step % o.interval != 0 && step != o.steps) continue;
                uint64_t base = (uint64_t)dump * solution;
                for_each_row(run, &o, cells, q, buf, base, fill_row);
                iotame_view_set(&f, (MPI_Offset)base, MPI_DOUBLE, filetype);
                iotame_view_write(&f, 0, buf, 1, memtype, true);
                dump++;
            }
            iotame_file_sync(&f);
            iotame_file_close(&f);
            iotame_phase_end(run, my_bytes);
        }
    }
    if (rc == 0) {
        iotame_phase_begin(run, "read");
        rc = iotame_view_open(run, &f, path, false);
        for (int64_t dump = 0; rc == 0 && dump < dumps; dump++) {
            uint64_t base = (uint64_t)dump * solution;
            iotame_view_clear(run, buf, buflen, IOTAME_VIEW_HOLE); /* no stale data can pass */
            iotame_view_set(&f, (MPI_Offset)base, MPI_DOUBLE, filetype);
            iotame_view_read(&f, 0, buf, 1, memtype, true);
            for_each_row(run, &o, cells, q, buf, base, check_row);
            iotame_view_holes_check(run, buf, buflen, path);
        }
        if (rc == 0) {
            iotame_file_close(&f);
            iotame_phase_end(run, my_bytes);
        }
    }
    if (rc == 0 && !o.std.keep && !o.std.skip_write) rc = iotame_view_remove(run, path);

    free(buf);
    free(cells);
    MPI_Type_free(&memtype);
    MPI_Type_free(&filetype);
    return rc;
}

const iotame_kernel_t iotame_kernel_btio = {
    .name = "btio",
    .summary = "NPB BT-IO (full): diagonal multi-partition cells, subarray views, a solution appended every "
               "--write-interval steps, collective",
    .run = btio_run,
};
