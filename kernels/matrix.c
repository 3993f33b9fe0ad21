/* matrix: the Matrix benchmark of Orthrus (Zhang et al., section 3.2), collective access to a column band.
 *
 * A row-major matrix of rows x cols elements of `element` bytes has its columns split evenly among the processes:
 * rank r owns the band of cols/nprocs contiguous columns starting at column r*cols/nprocs, and the part of one row
 * inside a band is a block of block-size = cols/nprocs*element bytes. A rank's file view is that band over all rows
 * (a subarray). Each collective call (MPI_File_write_at_all, then MPI_File_read_at_all) moves `depth` consecutive
 * blocks of every rank (depth rows of the matrix, nprocs*depth*block-size bytes); `iterations` calls cover it, so
 * rows = depth x iterations. Give either the matrix (--rows, --cols) or the access (--block-size, --iterations) and
 * the other is derived; give both and they must agree. The data is the common pattern of writer rank 0 at each file
 * offset, so the file is the same whatever the number of processes.
 *
 * Phases: "write" (open, every call, MPI_File_sync, close) then "read" (open, every call, close), each summing
 * all iterations. --skip-write reads and verifies the file of an earlier --keep run.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/view.h"
#include "kernels.h"

#define DEFAULT_BLOCK_SIZE 4096
#define DEFAULT_ITERATIONS 8
#define MAX_CALL_BYTES (1LL << 30) /* per rank and call: one buffer, and MPI counts are ints */

typedef struct {
    iotame_standard_options_t std;
    int64_t rows, cols, element, block_size, depth, iterations;
} matrix_opts_t;

/* Fills in whichever of (rows, cols) and (block-size, iterations) was left 0 and checks they agree.
 * Returns 0 or IOTAME_EXIT_USAGE after a message naming the options. */
static int matrix_derive(const iotame_run_t *run, matrix_opts_t *o)
{
    const int64_t np = run->nprocs;
    if (o->cols == 0 && o->block_size == 0) o->block_size = DEFAULT_BLOCK_SIZE;
    if (o->block_size % o->element != 0)
        return iotame_usage_error("option --block-size: %lld is not a multiple of --element %lld",
                                  (long long)o->block_size, (long long)o->element);
    if (o->cols == 0) {
        if (o->block_size / o->element > INT_MAX / np)
            return iotame_usage_error("option --block-size: %lld bytes per row and process makes more than %d "
                                      "columns", (long long)o->block_size, INT_MAX);
        o->cols = np * (o->block_size / o->element);
    } else if (o->cols % np != 0) {
        return iotame_usage_error("option --cols: %lld columns cannot be split evenly among %lld processes",
                                  (long long)o->cols, (long long)np);
    } else if (o->block_size == 0) {
        o->block_size = o->cols / np * o->element;
    } else if (o->block_size != o->cols / np * o->element) {
        return iotame_usage_error("options --cols and --block-size disagree: %lld columns of %lld bytes on %lld "
                                  "processes make blocks of %lld bytes, not %lld", (long long)o->cols,
                                  (long long)o->element, (long long)np, (long long)(o->cols / np * o->element),
                                  (long long)o->block_size);
    }

    if (o->rows == 0 && o->iterations == 0) o->iterations = DEFAULT_ITERATIONS;
    if (o->rows == 0) {
        if (o->iterations > INT_MAX / o->depth)
            return iotame_usage_error("options --depth and --iterations: more than %d rows", INT_MAX);
        o->rows = o->depth * o->iterations;
    } else if (o->rows % o->depth != 0) {
        return iotame_usage_error("option --rows: %lld rows are not a whole number of calls of --depth %lld rows",
                                  (long long)o->rows, (long long)o->depth);
    } else if (o->iterations == 0) {
        o->iterations = o->rows / o->depth;
    } else if (o->rows != o->depth * o->iterations) {
        return iotame_usage_error("options --rows, --depth and --iterations disagree: %lld calls of %lld rows "
                                  "cover %lld rows, not %lld", (long long)o->iterations, (long long)o->depth,
                                  (long long)(o->iterations * o->depth), (long long)o->rows);
    }

    if (o->depth > MAX_CALL_BYTES / o->block_size)
        return iotame_usage_error("options --depth and --block-size: %lld blocks of %lld bytes is more than %lld "
                                  "bytes per process and call", (long long)o->depth, (long long)o->block_size,
                                  MAX_CALL_BYTES);
    if (o->rows > INT64_MAX / 2 / o->cols / o->element)
        return iotame_usage_error("options --rows and --cols: the matrix is too large");
    return 0;
}

static int matrix_parse(iotame_run_t *run, int argc, char **argv, matrix_opts_t *o)
{
    const iotame_option_t opts[] = {
        {.name = "rows", .type = IOTAME_OPT_INT, .value = &o->rows, .def = "0", .min = "0", .max = "2147483647",
         .help = "matrix rows; 0: depth x iterations"},
        {.name = "cols", .type = IOTAME_OPT_INT, .value = &o->cols, .def = "0", .min = "0", .max = "2147483647",
         .help = "matrix columns, split evenly among the processes; 0: nprocs x block-size / element"},
        {.name = "element", .type = IOTAME_OPT_SIZE, .value = &o->element, .def = "8", .min = "1", .max = "1g",
         .help = "bytes per element"},
        {.name = "block-size", .type = IOTAME_OPT_SIZE, .value = &o->block_size, .def = "0", .min = "0",
         .help = "bytes of one row in one process's band; 0: from --cols, else 4k"},
        {.name = "depth", .type = IOTAME_OPT_INT, .value = &o->depth, .def = "4", .min = "1", .max = "1073741824",
         .help = "access depth: blocks (rows) per process and collective call"},
        {.name = "iterations", .type = IOTAME_OPT_INT, .value = &o->iterations, .def = "0", .min = "0",
         .help = "collective calls per phase; 0: rows / depth, else 8"},
        IOTAME_STANDARD_OPTIONS(o->std, "iotame-matrix.dat"),
        {0}};
    int rc = iotame_options_parse(run, opts, argc, argv);
    if (rc == 0) rc = matrix_derive(run, o);
    if (rc) return rc;
    /* params show what ran, not the zeros that asked for derived values */
    iotame_param_int(run, "rows", o->rows);
    iotame_param_int(run, "cols", o->cols);
    iotame_param_int(run, "block-size", o->block_size);
    iotame_param_int(run, "iterations", o->iterations);
    return 0;
}

/* File offset of row `row` of rank r's band. */
static uint64_t block_offset(const matrix_opts_t *o, int r, int64_t row)
{
    return ((uint64_t)row * (uint64_t)o->cols * (uint64_t)o->element) + (uint64_t)r * (uint64_t)o->block_size;
}

/* What a pass needs: the options, the view's types and the buffer of one call. */
typedef struct {
    const matrix_opts_t *o;
    MPI_Datatype etype, band;
    unsigned char *buf;
} matrix_ctx_t;

/* One phase (an iotame_pass_fn): every call writes (fills) or reads (checks) `depth` blocks of this rank's band. */
static int matrix_pass(iotame_run_t *run, void *ctx, bool write)
{
    const matrix_ctx_t *c = ctx;
    const matrix_opts_t *o = c->o;
    const char *path = o->std.file;
    const size_t bs = (size_t)o->block_size;
    const int count = (int)(o->depth * (o->block_size / o->element)); /* etypes per call */
    unsigned char *buf = c->buf;
    iotame_file_t f;
    int rc = iotame_view_open(run, &f, path, write);
    if (rc) return rc;
    iotame_view_set(&f, 0, c->etype, c->band);
    for (int64_t it = 0; it < o->iterations; it++) {
        int64_t row0 = it * o->depth;
        if (write) {
            for (int64_t k = 0; k < o->depth; k++)
                iotame_data_fill(run, buf + k * bs, bs, 0, block_offset(o, run->rank, row0 + k));
            iotame_view_write(&f, (MPI_Offset)it * count, buf, count, c->etype, true);
        } else {
            iotame_view_clear(run, buf, bs * (size_t)o->depth, 0); /* no stale data can pass the check */
            iotame_view_read(&f, (MPI_Offset)it * count, buf, count, c->etype, true);
            for (int64_t k = 0; k < o->depth; k++)
                iotame_data_check(run, path, buf + k * bs, bs, 0, block_offset(o, run->rank, row0 + k));
        }
    }
    if (write) iotame_file_sync(&f);
    iotame_file_close(&f);
    return IOTAME_EXIT_OK;
}

static int matrix_run(iotame_run_t *run, int argc, char **argv)
{
    matrix_opts_t o;
    int rc = matrix_parse(run, argc, argv, &o);
    if (rc) return rc;
    run->seed = (uint64_t)o.std.seed;

    MPI_Datatype etype, band;
    MPI_Type_contiguous((int)o.element, MPI_BYTE, &etype);
    iotame_view_commit(&etype);
    int width = (int)(o.cols / run->nprocs);
    int sizes[2] = {(int)o.rows, (int)o.cols}, subsizes[2] = {(int)o.rows, width}, starts[2] = {0, run->rank * width};
    MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, etype, &band);
    iotame_view_commit(&band);
    unsigned char *buf = iotame_alloc((size_t)(o.depth * o.block_size));
    uint64_t my_bytes = (uint64_t)o.rows * (uint64_t)o.block_size;

    matrix_ctx_t c = {.o = &o, .etype = etype, .band = band, .buf = buf};
    rc = iotame_write_then_read(run, &o.std, my_bytes, matrix_pass, &c);

    free(buf);
    MPI_Type_free(&band);
    MPI_Type_free(&etype);
    return rc;
}

const iotame_kernel_t iotame_kernel_matrix = {
    .name = "matrix",
    .summary = "Orthrus Matrix: column bands of a row-major matrix, --depth rows per collective call",
    .run = matrix_run,
};
