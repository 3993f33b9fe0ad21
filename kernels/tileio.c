/* tileio: the MPI-Tile-IO benchmark (Ross, Argonne; used by Saini et al., section 3.1.2): one tile of a dense 2-D
 * array of tiles per process, through a subarray file view.
 *
 * The file holds, after `header-bytes` bytes, a row-major array of Y rows by X elements of `sz-element` bytes made of
 * nr-tiles-x x nr-tiles-y tiles of sz-tile-x x sz-tile-y elements; neighbouring tiles share overlap-x columns and
 * overlap-y rows, so X = nr-tiles-x*(sz-tile-x - overlap-x) + overlap-x (Y likewise). Rank r holds tile
 * (r % nr-tiles-x, r / nr-tiles-x) in a contiguous buffer and writes it, then reads it back, with one
 * MPI_File_write_at_all / read_at_all (MPI_File_write_at / read_at with --independent).
 * RATIONALE: the data is the common pattern of writer rank 0 at each file offset, never of the writing rank, so
 * processes that share an overlapping region write identical bytes there and the file verifies whichever wins.
 *
 * Phases: "write" (including MPI_File_sync) and "read"; their bytes count every tile whole, so the bytes of an
 * overlap are counted once per tile that holds them.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/view.h"
#include "kernels.h"

#define MAX_TILE_BYTES (1LL << 30) /* one buffer per process, and MPI counts are ints */

typedef struct {
    iotame_standard_options_t std;
    int64_t nx, ny, sx, sy, elem, ox, oy, header;
    bool independent;
} tileio_opts_t;

/* Tile grid from nprocs when not given (near-square, MPI_Dims_create), then the consistency of the sizes. */
static int tileio_check(const iotame_run_t *run, tileio_opts_t *o)
{
    const int np = run->nprocs;
    if (o->nx == 0 && o->ny == 0) {
        int dims[2] = {0, 0};
        MPI_Dims_create(np, 2, dims);
        o->nx = dims[0];
        o->ny = dims[1];
    } else if (o->ny == 0) {
        if (np % o->nx != 0)
            return iotame_usage_error("option --nr-tiles-x: %lld tiles per row do not divide %d processes (one "
                                      "tile per process)", (long long)o->nx, np);
        o->ny = np / o->nx;
    } else if (o->nx == 0) {
        if (np % o->ny != 0)
            return iotame_usage_error("option --nr-tiles-y: %lld tiles per column do not divide %d processes (one "
                                      "tile per process)", (long long)o->ny, np);
        o->nx = np / o->ny;
    }
    if (o->nx * o->ny != np)
        return iotame_usage_error("options --nr-tiles-x and --nr-tiles-y: %lld x %lld tiles, but %d processes "
                                  "(one tile per process)", (long long)o->nx, (long long)o->ny, np);
    if (o->ox >= o->sx)
        return iotame_usage_error("option --overlap-x: %lld must be smaller than --sz-tile-x %lld",
                                  (long long)o->ox, (long long)o->sx);
    if (o->oy >= o->sy)
        return iotame_usage_error("option --overlap-y: %lld must be smaller than --sz-tile-y %lld",
                                  (long long)o->oy, (long long)o->sy);
    if (o->sx > MAX_TILE_BYTES / o->sy / o->elem)
        return iotame_usage_error("options --sz-tile-x, --sz-tile-y and --sz-element: a tile of %lld x %lld x %lld "
                                  "bytes is more than %lld bytes", (long long)o->sx, (long long)o->sy,
                                  (long long)o->elem, MAX_TILE_BYTES);
    /* nx, ny <= np and sx, sy <= 2^30, so these fit in int64_t; the subarray needs ints */
    if (o->nx * (o->sx - o->ox) + o->ox > INT_MAX || o->ny * (o->sy - o->oy) + o->oy > INT_MAX)
        return iotame_usage_error("options --sz-tile-x, --sz-tile-y: the array has more than %d elements per "
                                  "dimension", INT_MAX);
    return 0;
}

static int tileio_parse(iotame_run_t *run, int argc, char **argv, tileio_opts_t *o)
{
    const iotame_option_t opts[] = {
        {.name = "nr-tiles-x", .type = IOTAME_OPT_INT, .value = &o->nx, .def = "0", .min = "0", .max = "1048576",
         .help = "tiles per row of tiles; 0: from nprocs and --nr-tiles-y (near-square)"},
        {.name = "nr-tiles-y", .type = IOTAME_OPT_INT, .value = &o->ny, .def = "0", .min = "0", .max = "1048576",
         .help = "rows of tiles; 0: from nprocs and --nr-tiles-x"},
        {.name = "sz-tile-x", .type = IOTAME_OPT_INT, .value = &o->sx, .def = "128", .min = "1",
         .max = "1073741824", .help = "elements per tile row"},
        {.name = "sz-tile-y", .type = IOTAME_OPT_INT, .value = &o->sy, .def = "128", .min = "1",
         .max = "1073741824", .help = "rows per tile"},
        {.name = "sz-element", .type = IOTAME_OPT_SIZE, .value = &o->elem, .def = "8", .min = "1", .max = "1g",
         .help = "bytes per element"},
        {.name = "overlap-x", .type = IOTAME_OPT_INT, .value = &o->ox, .def = "0", .min = "0",
         .help = "columns shared by horizontally neighbouring tiles"},
        {.name = "overlap-y", .type = IOTAME_OPT_INT, .value = &o->oy, .def = "0", .min = "0",
         .help = "rows shared by vertically neighbouring tiles"},
        {.name = "header-bytes", .type = IOTAME_OPT_SIZE, .value = &o->header, .def = "0", .min = "0",
         .max = "1024g", .help = "bytes before the array (left unwritten)"},
        {.name = "independent", .type = IOTAME_OPT_FLAG, .value = &o->independent,
         .help = "independent I/O (MPI_File_write_at / read_at); default collective"},
        IOTAME_STANDARD_OPTIONS(o->std, "iotame-tileio.dat"),
        {0}};
    int rc = iotame_options_parse(run, opts, argc, argv);
    if (rc == 0) rc = tileio_check(run, o);
    if (rc) return rc;
    iotame_param_int(run, "nr-tiles-x", o->nx);
    iotame_param_int(run, "nr-tiles-y", o->ny);
    return 0;
}

/* File offset of row y of rank r's tile. */
static uint64_t row_offset(const tileio_opts_t *o, int r, int64_t y)
{
    int64_t tx = r % o->nx, ty = r / o->nx, width = o->nx * (o->sx - o->ox) + o->ox;
    int64_t row = ty * (o->sy - o->oy) + y, col = tx * (o->sx - o->ox);
    return (uint64_t)o->header + ((uint64_t)row * (uint64_t)width + (uint64_t)col) * (uint64_t)o->elem;
}

/* What a pass needs: the options, the view's types and the tile's buffer. */
typedef struct {
    const tileio_opts_t *o;
    MPI_Datatype etype, tile;
    unsigned char *buf;
} tileio_ctx_t;

/* One phase (an iotame_pass_fn): this rank's tile in one call. */
static int tileio_pass(iotame_run_t *run, void *ctx, bool write)
{
    const tileio_ctx_t *c = ctx;
    const tileio_opts_t *o = c->o;
    unsigned char *buf = c->buf;
    const char *path = o->std.file;
    const size_t rowlen = (size_t)(o->sx * o->elem);
    const int count = (int)(o->sx * o->sy);
    iotame_file_t f;
    int rc = iotame_view_open(run, &f, path, write);
    if (rc) return rc;
    iotame_view_set(&f, (MPI_Offset)o->header, c->etype, c->tile);
    if (write) {
        for (int64_t y = 0; y < o->sy; y++)
            iotame_data_fill(run, buf + y * rowlen, rowlen, 0, row_offset(o, run->rank, y));
        iotame_view_write(&f, 0, buf, count, c->etype, !o->independent);
        iotame_file_sync(&f);
    } else {
        iotame_view_clear(run, buf, rowlen * (size_t)o->sy, 0); /* no stale data can pass the check */
        iotame_view_read(&f, 0, buf, count, c->etype, !o->independent);
        for (int64_t y = 0; y < o->sy; y++)
            iotame_data_check(run, path, buf + y * rowlen, rowlen, 0, row_offset(o, run->rank, y));
    }
    iotame_file_close(&f);
    return IOTAME_EXIT_OK;
}

static int tileio_run(iotame_run_t *run, int argc, char **argv)
{
    tileio_opts_t o;
    int rc = tileio_parse(run, argc, argv, &o);
    if (rc) return rc;
    run->seed = (uint64_t)o.std.seed;

    MPI_Datatype etype, tile;
    MPI_Type_contiguous((int)o.elem, MPI_BYTE, &etype);
    iotame_view_commit(&etype);
    int tx = run->rank % (int)o.nx, ty = run->rank / (int)o.nx;
    int sizes[2] = {(int)(o.ny * (o.sy - o.oy) + o.oy), (int)(o.nx * (o.sx - o.ox) + o.ox)};
    int subsizes[2] = {(int)o.sy, (int)o.sx};
    int starts[2] = {ty * (int)(o.sy - o.oy), tx * (int)(o.sx - o.ox)};
    MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, etype, &tile);
    iotame_view_commit(&tile);
    uint64_t my_bytes = (uint64_t)(o.sx * o.sy * o.elem);
    unsigned char *buf = iotame_alloc((size_t)my_bytes);

    tileio_ctx_t c = {.o = &o, .etype = etype, .tile = tile, .buf = buf};
    rc = iotame_write_then_read(run, &o.std, my_bytes, tileio_pass, &c);

    free(buf);
    MPI_Type_free(&tile);
    MPI_Type_free(&etype);
    return rc;
}

const iotame_kernel_t iotame_kernel_tileio = {
    .name = "tileio",
    .summary = "MPI-Tile-IO: one tile per process of a dense 2-D array of tiles, subarray views, collective",
    .run = tileio_run,
};
