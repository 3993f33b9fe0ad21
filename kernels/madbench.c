/* madbench: the I/O kernel of MADbench (Borrill et al.) in its I/O-only mode, as used by Seelam, Kerstens and Teller,
 * "Throttling I/O Streams to Accelerate File-I/O Performance" (UTEP-CS-07-22), to study RMOD/WMOD throttling.
 *
 * NBIN matrices of NPIX x NPIX doubles are distributed block-cyclically (ScaLAPACK blocks of --blocksize rows and
 * columns) over a near-square process grid. A task's share of one matrix is one contiguous slot on file: slot `bin`
 * of its own file (--filetype unique), or slot rank * NBIN + bin of one shared file, slots as large as the largest
 * share. Three phases, each a loop over the bins of the paper's five steps: compute, barrier, I/O, barrier, compute.
 *   dSdC  build each matrix (compute) and write it, synced before the task passes the token on
 *   invD  read each matrix back, then build and invert D (compute)
 *   W     read each matrix back, then multiply (compute)
 * As in the I/O-only mode the linear algebra is a stub: a busy-wait or sleep of --compute-scale seconds per Gflop of
 * the work it replaces. Throttling by token passing: tasks form groups of RMOD (WMOD) consecutive ranks and the
 * token goes from rank to rank inside a group, so ceil(N / RMOD) tasks read at once.
 *
 * Besides "phases" (I/O time: compute and the wait before the I/O excluded), "madbench" holds the paper's per-phase
 * TIO (mean over tasks of the time from the first barrier to the end of the task's own I/O, token wait included,
 * summed over bins) and LBSTIO (mean time in the barrier after the I/O).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernels.h"

enum { FILE_UNIQUE, FILE_SHARED };
enum { COMPUTE_BUSY, COMPUTE_SLEEP };
enum { TOKEN_TAG = 317 };
#define BINWIDTH 10 /* multipoles per bin in MADbench's dSdC build; only sets its flop count here */

typedef struct {
    iotame_standard_options_t std;
    int64_t npix, nbin, ngang, blocksize, rmod, wmod;
    int filetype, api, compute_mode;
    double compute_scale;
} mad_opts_t;

typedef struct {
    mad_opts_t o;
    int prow, pcol, myrow, mycol;
    uint64_t my_rows, my_cols, my_bytes; /* this task's share of one matrix */
    uint64_t slot;                       /* bytes between bins: own share (unique) or the largest share (shared) */
    char path[PATH_MAX + 16];
    void *buf;
    json_t *summary; /* the "madbench" object */
} mad_t;

/* ScaLAPACK's NUMROC: rows (or columns) of an n-long dimension in blocks of nb that process p of np owns. */
static uint64_t numroc(uint64_t n, uint64_t nb, uint64_t p, uint64_t np)
{
    uint64_t blocks = n / nb, count = blocks / np * nb, extra = blocks % np;
    if (p < extra) count += nb;
    else if (p == extra) count += n % nb;
    return count;
}

/* Near-square grid: prow the largest divisor of n not above sqrt(n). MADbench needs a square task count; any
 * count works here. */
static void grid_of(int n, int *prow, int *pcol)
{
    int r = (int)sqrt((double)n);
    while (r > 1 && n % r != 0) r--;
    *prow = r;
    *pcol = n / r;
}

static int mad_parse(iotame_run_t *run, int argc, char **argv, mad_opts_t *o)
{
    static const char *const filetypes[] = {"unique", "shared", NULL};
    static const char *const apis[] = {"posix", "mpiio", NULL};
    static const char *const modes[] = {"busy", "sleep", NULL};
    const iotame_option_t opts[] = {
        IOTAME_STANDARD_OPTIONS(o->std, "iotame-madbench.dat"),
        {.name = "no-pix", .type = IOTAME_OPT_INT, .value = &o->npix, .def = "256", .min = "1", .max = "1000000",
         .help = "pixels: each matrix is NO_PIX x NO_PIX doubles"},
        {.name = "no-bin", .type = IOTAME_OPT_INT, .value = &o->nbin, .def = "8", .min = "1", .max = "100000",
         .help = "bins: matrices written by dSdC and read back by invD and W"},
        {.name = "no-gang", .type = IOTAME_OPT_INT, .value = &o->ngang, .def = "1", .min = "1",
         .help = "gangs (only 1: no gang scheduling, as in the paper)"},
        {.name = "blocksize", .type = IOTAME_OPT_INT, .value = &o->blocksize, .def = "32", .min = "1",
         .help = "ScaLAPACK block size in rows and columns"},
        {.name = "filetype", .type = IOTAME_OPT_ENUM, .value = &o->filetype, .def = "unique", .choices = filetypes,
         .help = "one file per task (FILE.%08d of the rank) or one shared file"},
        {.name = "rmod", .type = IOTAME_OPT_INT, .value = &o->rmod, .def = "1", .min = "1",
         .help = "one of every RMOD tasks reads at a time (1: all at once)"},
        {.name = "wmod", .type = IOTAME_OPT_INT, .value = &o->wmod, .def = "1", .min = "1",
         .help = "one of every WMOD tasks writes at a time (1: all at once)"},
        {.name = "api", .type = IOTAME_OPT_ENUM, .value = &o->api, .def = "posix", .choices = apis,
         .help = "I/O interface"},
        {.name = "compute-scale", .type = IOTAME_OPT_DOUBLE, .value = &o->compute_scale, .def = "0", .min = "0",
         .help = "seconds of stub computation per Gflop of the replaced work (0: pure I/O)"},
        {.name = "compute-mode", .type = IOTAME_OPT_ENUM, .value = &o->compute_mode, .def = "busy",
         .choices = modes, .help = "stub computation: spin on the clock or sleep"},
        {0}};
    int rc = iotame_options_parse(run, opts, argc, argv);
    if (rc) return rc;
    if (o->ngang != 1)
        return iotame_usage_error("option --no-gang: only 1 is supported (no gang scheduling, as in the paper's "
                                  "runs), got %lld", (long long)o->ngang);
    int prow, pcol;
    grid_of(run->nprocs, &prow, &pcol);
    int64_t blocks = (o->npix + o->blocksize - 1) / o->blocksize;
    if (blocks < pcol)
        return iotame_usage_error("option --blocksize: %lld pixels in blocks of %lld make %lld block columns, fewer "
                                  "than the %d x %d process grid needs (use a smaller --blocksize or a larger "
                                  "--no-pix)", (long long)o->npix, (long long)o->blocksize, (long long)blocks, prow,
                                  pcol);
    return 0;
}

static void mad_setup(iotame_run_t *run, mad_t *m)
{
    const mad_opts_t *o = &m->o;
    grid_of(run->nprocs, &m->prow, &m->pcol);
    m->myrow = run->rank % m->prow; /* column-major grid, as BLACS */
    m->mycol = run->rank / m->prow;
    uint64_t n = (uint64_t)o->npix, nb = (uint64_t)o->blocksize;
    m->my_rows = numroc(n, nb, (uint64_t)m->myrow, (uint64_t)m->prow);
    m->my_cols = numroc(n, nb, (uint64_t)m->mycol, (uint64_t)m->pcol);
    m->my_bytes = m->my_rows * m->my_cols * sizeof(double);
    /* Process (0, 0) owns the most rows and columns. */
    uint64_t largest = numroc(n, nb, 0, (uint64_t)m->prow) * numroc(n, nb, 0, (uint64_t)m->pcol) * sizeof(double);
    m->slot = o->filetype == FILE_SHARED ? largest : m->my_bytes;
    if (o->filetype == FILE_SHARED) snprintf(m->path, sizeof m->path, "%s", o->std.file);
    else snprintf(m->path, sizeof m->path, "%s.%08d", o->std.file, run->rank);
    m->buf = iotame_alloc(m->my_bytes);

    m->summary = json_object();
    json_t *grid = json_array();
    json_array_append_new(grid, json_integer(m->prow));
    json_array_append_new(grid, json_integer(m->pcol));
    json_object_set_new(m->summary, "grid", grid);
    json_object_set_new(m->summary, "matrix_bytes", json_integer((json_int_t)(n * n * sizeof(double))));
    json_object_set_new(m->summary, "writers", json_integer((run->nprocs + o->wmod - 1) / o->wmod));
    json_object_set_new(m->summary, "readers", json_integer((run->nprocs + o->rmod - 1) / o->rmod));
}

static uint64_t offset_of(const iotame_run_t *run, const mad_t *m, int64_t bin)
{
    uint64_t slot_index = (uint64_t)bin;
    if (m->o.filetype == FILE_SHARED) slot_index += (uint64_t)run->rank * (uint64_t)m->o.nbin;
    return slot_index * m->slot;
}

/* The stub of the I/O-only mode: time proportional to the flops of the replaced computation, kept out of the
 * phase's I/O time. Returns the seconds spent. */
static double compute(iotame_run_t *run, const mad_t *m, double flops)
{
    double seconds = m->o.compute_scale * flops * 1e-9;
    if (seconds <= 0.0) return 0.0;
    double start = MPI_Wtime();
    if (m->o.compute_mode == COMPUTE_SLEEP) {
        struct timespec left = {.tv_sec = (time_t)seconds, .tv_nsec = (long)((seconds - floor(seconds)) * 1e9)};
        while (nanosleep(&left, &left) != 0 && errno == EINTR) {}
    } else {
        while (MPI_Wtime() - start < seconds) {}
    }
    double spent = MPI_Wtime() - start;
    iotame_phase_exclude(run, spent);
    return spent;
}

/* RMOD/WMOD token passing: inside each group of `mod` consecutive ranks, a task waits for its predecessor's I/O. */
static void token_wait(const iotame_run_t *run, int64_t mod)
{
    int token;
    if (run->rank % mod != 0) MPI_Recv(&token, 1, MPI_INT, run->rank - 1, TOKEN_TAG, run->comm, MPI_STATUS_IGNORE);
}

static void token_pass(const iotame_run_t *run, int64_t mod)
{
    int token = 0, next = run->rank + 1;
    if (next % mod != 0 && next < run->nprocs) MPI_Send(&token, 1, MPI_INT, next, TOKEN_TAG, run->comm);
}

/* One phase: NBIN iterations of compute, barrier, I/O, barrier, compute. flops: the replaced work per bin. */
static int mad_phase(iotame_run_t *run, mad_t *m, const char *name, bool write, double flops)
{
    const mad_opts_t *o = &m->o;
    int64_t mod = write ? o->wmod : o->rmod;
    double tio = 0.0, lbstio = 0.0, busy = 0.0;
    iotame_file_t f;
    iotame_phase_begin(run, name);
    /* RATIONALE: every task opens on MPI_COMM_SELF, also the shared file: MPI_File_sync is collective over the
     * opening communicator, and a task's sync must finish inside its own token window. */
    int mode = write ? IOTAME_FILE_WRITE | IOTAME_FILE_CREATE : IOTAME_FILE_READ;
    int rc = iotame_file_open(&f, (iotame_api_t)o->api, MPI_COMM_SELF, m->path, mode, MPI_INFO_NULL);
    if (!iotame_all_ok(run, rc == 0)) {
        if (rc == 0) iotame_file_close(&f);
        return IOTAME_EXIT_IO;
    }
    for (int64_t bin = 0; bin < o->nbin; bin++) {
        uint64_t off = offset_of(run, m, bin);
        if (write) {
            busy += compute(run, m, flops);
            iotame_data_fill(run, m->buf, m->my_bytes, run->rank, off);
        }
        double t0 = MPI_Wtime();
        MPI_Barrier(run->comm);
        double t1 = MPI_Wtime();
        iotame_phase_exclude(run, t1 - t0); /* waiting for others' computation is not I/O */
        token_wait(run, mod);
        if (write) {
            iotame_file_write_at(&f, off, m->buf, m->my_bytes, false);
            iotame_file_sync(&f);
        } else {
            iotame_file_read_at(&f, off, m->buf, m->my_bytes, false);
        }
        token_pass(run, mod);
        double t2 = MPI_Wtime();
        MPI_Barrier(run->comm);
        double t3 = MPI_Wtime();
        tio += t2 - t1;
        lbstio += t3 - t2;
        if (!write) {
            iotame_data_check(run, m->path, m->buf, m->my_bytes, run->rank, off);
            busy += compute(run, m, flops);
        }
    }
    iotame_file_close(&f);
    iotame_phase_end(run, (uint64_t)o->nbin * m->my_bytes);

    double sums[3] = {tio, lbstio, busy};
    MPI_Allreduce(MPI_IN_PLACE, sums, 3, MPI_DOUBLE, MPI_SUM, run->comm);
    json_t *times = json_object();
    json_object_set_new(times, "tio", json_real(sums[0] / run->nprocs));
    json_object_set_new(times, "lbstio", json_real(sums[1] / run->nprocs));
    json_object_set_new(times, "compute", json_real(sums[2] / run->nprocs));
    json_object_set_new(m->summary, name, times);
    return IOTAME_EXIT_OK;
}

/* Removes this run's file(s): the shared file by rank 0, each task its own. */
static int mad_remove(iotame_run_t *run, const mad_t *m)
{
    return iotame_file_remove_agreed(run, (iotame_api_t)m->o.api, m->path,
                                     m->o.filetype == FILE_UNIQUE || run->rank == 0);
}

static int mad_run(iotame_run_t *run, int argc, char **argv)
{
    mad_t m = {0};
    int rc = mad_parse(run, argc, argv, &m.o);
    if (rc) return rc;
    run->seed = (uint64_t)m.o.std.seed;
    mad_setup(run, &m);

    /* Flops of the replaced ScaLAPACK work per task and bin: the Legendre recursion building dSdC (a few flops per
     * element and multipole), the Cholesky factorization and inversion of D (n^3), the product of W (2 n^3). */
    double n = (double)m.o.npix, p = (double)run->nprocs;
    double f_dsdc = 6.0 * BINWIDTH * (double)(m.my_rows * m.my_cols), f_invd = n * n * n / p,
           f_w = 2.0 * n * n * n / p;

    bool write = !m.o.std.skip_write;
    if (write) {
        rc = mad_remove(run, &m);
        if (!rc) rc = mad_phase(run, &m, "dSdC", true, f_dsdc);
    }
    if (!rc) rc = mad_phase(run, &m, "invD", false, f_invd);
    if (!rc) rc = mad_phase(run, &m, "W", false, f_w);
    /* RATIONALE: remove only what this run wrote; a read-only run leaves its input in place. */
    if (!rc && write && !m.o.std.keep) rc = mad_remove(run, &m);
    json_object_set_new(run->result, "madbench", m.summary);
    free(m.buf);
    return rc;
}

const iotame_kernel_t iotame_kernel_madbench = {
    .name = "madbench",
    .summary = "MADbench I/O mode: NBIN block-cyclic NPIX^2 matrices written (dSdC), read twice (invD, W); "
               "RMOD/WMOD token throttling",
    .run = mad_run,
};
