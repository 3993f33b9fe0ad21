/* noncontig: the access pattern of ROMIO's noncontig benchmark (Latham and Ross, Argonne), as used by Orthrus
 * (section 3.3): interleaved vectors of MPI_INT chunks.
 *
 * Each rank's file view is a vector of `veclen` chunks of `elmtcount` 4-byte ints with a stride of nprocs chunks,
 * displaced by rank chunks, so the chunks of the ranks interleave: chunk j of rank r is at byte
 * (j*nprocs + r)*elmtcount*4 of a region of nprocs*veclen*elmtcount*4 bytes. Loop l accesses the l-th such region
 * (the view's l-th tile), so the file holds `loops` regions. The memory side is a contiguous buffer, or with
 * --mem-noncontig a vector with a hole of elmtcount ints after every chunk (the holes must survive the reads).
 * Independent MPI_File_write_at/read_at by default, --collective for the _all versions. With --count N a call passes
 * N instances of a datatype of veclen/N chunks (the file view tiles them), as programs that describe their data
 * as many small derived types do: the same bytes at the same offsets, flattened into N x veclen/N pieces instead
 * of one strided run. The data is the common pattern of writer rank 0 at each file offset, so the content depends
 * on offsets only.
 *
 * Phases: "write" (every loop, then MPI_File_sync) and "read", each summing all loops.
 */
#include <stdlib.h>
#include <string.h>

#include "common/view.h"
#include "kernels.h"

#define INT_BYTES 4 /* the benchmark's MPI_INT; checked against MPI at run time */
#define MAX_CALL_BYTES (1LL << 30)

typedef struct {
    iotame_standard_options_t std;
    int64_t elmtcount, veclen, loops, count;
    bool collective, mem_noncontig;
} noncontig_opts_t;

static int noncontig_parse(iotame_run_t *run, int argc, char **argv, noncontig_opts_t *o)
{
    const iotame_option_t opts[] = {
        {.name = "elmtcount", .type = IOTAME_OPT_INT, .value = &o->elmtcount, .def = "64", .min = "1",
         .max = "268435456", .help = "ints (4 bytes) per contiguous chunk"},
        {.name = "veclen", .type = IOTAME_OPT_INT, .value = &o->veclen, .def = "256", .min = "1",
         .max = "268435456", .help = "chunks per process and call (the vector's count)"},
        {.name = "loops", .type = IOTAME_OPT_INT, .value = &o->loops, .def = "4", .min = "1",
         .help = "calls per phase, each on the next region of the file"},
        {.name = "count", .type = IOTAME_OPT_INT, .value = &o->count, .def = "1", .min = "1", .max = "268435456",
         .help = "datatype instances per call: the veclen chunks as count types of veclen/count chunks each"},
        {.name = "collective", .type = IOTAME_OPT_FLAG, .value = &o->collective,
         .help = "collective I/O (MPI_File_write_at_all / read_at_all); default independent"},
        {.name = "mem-noncontig", .type = IOTAME_OPT_FLAG, .value = &o->mem_noncontig,
         .help = "noncontiguous memory too: a vector with a hole after every chunk"},
        IOTAME_STANDARD_OPTIONS(o->std, "iotame-noncontig.dat"),
        {0}};
    int rc = iotame_options_parse(run, opts, argc, argv);
    if (rc) return rc;
    if (o->veclen > MAX_CALL_BYTES / INT_BYTES / o->elmtcount)
        return iotame_usage_error("options --veclen and --elmtcount: %lld chunks of %lld ints is more than %lld "
                                  "bytes per process and call", (long long)o->veclen, (long long)o->elmtcount,
                                  MAX_CALL_BYTES);
    if (o->veclen % o->count != 0)
        return iotame_usage_error("option --count: %lld does not divide --veclen %lld (each instance holds veclen/count "
                                  "chunks)", (long long)o->count, (long long)o->veclen);
    if (o->elmtcount > INT32_MAX / run->nprocs)
        return iotame_usage_error("option --elmtcount: %lld ints times %d processes overflows the vector stride",
                                  (long long)o->elmtcount, run->nprocs);
    if (o->loops > INT64_MAX / 2 / MAX_CALL_BYTES / run->nprocs)
        return iotame_usage_error("option --loops: %lld makes the file too large", (long long)o->loops);
    return 0;
}

/* Byte offset in the file of chunk j of loop l of rank r. */
static uint64_t chunk_offset(const noncontig_opts_t *o, int nprocs, int r, int64_t l, int64_t j)
{
    uint64_t chunk = (uint64_t)o->elmtcount * INT_BYTES;
    return ((uint64_t)l * (uint64_t)o->veclen * (uint64_t)nprocs + (uint64_t)j * (uint64_t)nprocs + (uint64_t)r) *
           chunk;
}

/* What a pass needs: the options, the file view's type, the memory datatype (o->count instances a call) and its
 * buffer. */
typedef struct {
    const noncontig_opts_t *o;
    MPI_Datatype filetype, mem;
    unsigned char *buf;
    size_t buflen;
} noncontig_ctx_t;

/* One phase (an iotame_pass_fn): every loop writes (fills) or reads (checks) this rank's veclen chunks; stride is
 * the distance between chunks in the buffer. */
static int noncontig_pass(iotame_run_t *run, void *ctx, bool write)
{
    const noncontig_ctx_t *c = ctx;
    const noncontig_opts_t *o = c->o;
    unsigned char *buf = c->buf;
    const size_t buflen = c->buflen;
    const char *path = o->std.file;
    const size_t chunk = (size_t)o->elmtcount * INT_BYTES, stride = o->mem_noncontig ? 2 * chunk : chunk;
    const int64_t per_call = o->veclen * o->elmtcount; /* ints: the view offset of the next loop */
    iotame_file_t f;
    int rc = iotame_view_open(run, &f, path, write);
    if (rc) return rc;
    iotame_view_set(&f, (MPI_Offset)(run->rank * chunk), MPI_INT, c->filetype);
    for (int64_t l = 0; l < o->loops; l++) {
        if (write) {
            for (int64_t j = 0; j < o->veclen; j++)
                iotame_data_fill(run, buf + j * stride, chunk, 0, chunk_offset(o, run->nprocs, run->rank, l, j));
            iotame_view_write(&f, (MPI_Offset)(l * per_call), buf, (int)o->count, c->mem, o->collective);
        } else {
            iotame_view_clear(run, buf, buflen, IOTAME_VIEW_HOLE); /* no stale data can pass */
            iotame_view_read(&f, (MPI_Offset)(l * per_call), buf, (int)o->count, c->mem, o->collective);
            for (int64_t j = 0; j < o->veclen; j++) {
                iotame_data_check(run, path, buf + j * stride, chunk, 0,
                                  chunk_offset(o, run->nprocs, run->rank, l, j));
                if (o->mem_noncontig) iotame_view_clear(run, buf + j * stride, chunk, IOTAME_VIEW_HOLE);
            }
            if (o->mem_noncontig) iotame_view_holes_check(run, buf, buflen, path);
        }
    }
    if (write) iotame_file_sync(&f);
    iotame_file_close(&f);
    return IOTAME_EXIT_OK;
}

static int noncontig_run(iotame_run_t *run, int argc, char **argv)
{
    noncontig_opts_t o;
    int rc = noncontig_parse(run, argc, argv, &o);
    if (rc) return rc;
    run->seed = (uint64_t)o.std.seed;
    int int_size;
    MPI_Type_size(MPI_INT, &int_size);
    if (int_size != INT_BYTES) iotame_fatal("MPI_INT is %d bytes, this kernel assumes %d", int_size, INT_BYTES);

    const int e = (int)o.elmtcount, v = (int)o.veclen, np = run->nprocs, g = (int)(o.veclen / o.count);
    /* One instance's chunks, resized to the region they interleave with the other ranks' so that the view's tiles
     * (and the memory type's instances) follow each other; with count 1 the tile is one loop's whole region. */
    MPI_Datatype vec, filetype, mem;
    MPI_Type_vector(g, e, np * e, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, (MPI_Aint)np * g * e * INT_BYTES, &filetype);
    iotame_view_commit(&filetype);
    MPI_Type_free(&vec);
    if (o.mem_noncontig) {
        MPI_Datatype holes;
        MPI_Type_vector(g, e, 2 * e, MPI_INT, &holes);
        MPI_Type_create_resized(holes, 0, (MPI_Aint)2 * g * e * INT_BYTES, &mem);
        MPI_Type_free(&holes);
    } else {
        MPI_Type_contiguous(g * e, MPI_INT, &mem);
    }
    iotame_view_commit(&mem);
    size_t buflen = (size_t)v * e * INT_BYTES * (o.mem_noncontig ? 2 : 1);
    unsigned char *buf = iotame_alloc(buflen);
    memset(buf, IOTAME_VIEW_HOLE, buflen);
    uint64_t my_bytes = (uint64_t)o.loops * (uint64_t)v * (uint64_t)e * INT_BYTES;

    noncontig_ctx_t c = {.o = &o, .filetype = filetype, .mem = mem, .buf = buf, .buflen = buflen};
    rc = iotame_write_then_read(run, &o.std, my_bytes, noncontig_pass, &c);

    free(buf);
    MPI_Type_free(&mem);
    MPI_Type_free(&filetype);
    return rc;
}

const iotame_kernel_t iotame_kernel_noncontig = {
    .name = "noncontig",
    .summary = "ROMIO noncontig: interleaved vectors of --veclen chunks of --elmtcount ints, independent or "
               "--collective",
    .run = noncontig_run,
};
