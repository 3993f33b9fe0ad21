/* iobench: the HPCMO IO_Bench tests as run by Saini et al., "Parallel I/O Performance Characterization of Columbia
 * and NEC SX-8 Superclusters" (IPDPS 2007): sequential, backward and random writes and reads of a file of
 * --file-size bytes in --block-size buffers, each bandwidth = file size / real time.
 *
 * IO_Bench is a single-process benchmark. Here every rank runs it at once on its own file (FILE.%08d of the rank),
 * each phase summing the bytes of all ranks, so one rank is the original and more ranks load the file system with
 * independent streams. Random order is a seeded permutation of the blocks (every block exactly once), so a random
 * read checks the whole file. Writes are synced inside the timed phase; reads check every byte against the common
 * pattern.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels.h"

enum { ORDER_SEQ, ORDER_BACK, ORDER_RAND };

typedef struct {
    iotame_standard_options_t std;
    int64_t file_size, block_size;
    int api;
} iob_opts_t;

typedef struct {
    iob_opts_t o;
    uint64_t nblocks;
    uint64_t *order;
    void *buf;
    char path[PATH_MAX + 16];
} iob_t;

static int iob_parse(iotame_run_t *run, int argc, char **argv, iob_opts_t *o)
{
    static const char *const apis[] = {"posix", "mpiio", NULL};
    const iotame_option_t opts[] = {
        IOTAME_STANDARD_OPTIONS(o->std, "iotame-iobench.dat"),
        {.name = "file-size", .type = IOTAME_OPT_SIZE, .value = &o->file_size, .def = "4m", .min = "1",
         .help = "bytes of each rank's file"},
        {.name = "block-size", .type = IOTAME_OPT_SIZE, .value = &o->block_size, .def = "64k", .min = "1",
         .max = "1g", .help = "bytes per request (the I/O buffer)"},
        {.name = "api", .type = IOTAME_OPT_ENUM, .value = &o->api, .def = "posix", .choices = apis,
         .help = "I/O interface (IO_Bench: POSIX)"},
        {0}};
    int rc = iotame_options_parse(run, opts, argc, argv);
    if (rc) return rc;
    if (o->file_size % o->block_size != 0)
        return iotame_usage_error("option --file-size: %lld bytes is not a whole number of --block-size %lld byte "
                                  "buffers", (long long)o->file_size, (long long)o->block_size);
    return 0;
}

/* The block order of one phase. Random: a permutation seeded by (seed, rank, phase), different for write and
 * read so a read does not just replay the write. */
static void order_of(const iotame_run_t *run, iob_t *b, int kind, bool write)
{
    uint64_t n = b->nblocks;
    for (uint64_t i = 0; i < n; i++) b->order[i] = kind == ORDER_BACK ? n - 1 - i : i;
    if (kind == ORDER_RAND) {
        iotame_rng_t rng;
        iotame_rng_seed(&rng, (uint64_t)b->o.std.seed, 2 * (uint64_t)run->rank + (write ? 0 : 1));
        iotame_rng_shuffle(&rng, b->order, n);
    }
}

static int iob_phase(iotame_run_t *run, iob_t *b, const char *name, int kind, bool write)
{
    size_t bs = (size_t)b->o.block_size;
    iotame_file_t f;
    order_of(run, b, kind, write);
    iotame_phase_begin(run, name);
    int mode = write ? IOTAME_FILE_WRITE | IOTAME_FILE_CREATE : IOTAME_FILE_READ;
    int rc = iotame_file_open(&f, (iotame_api_t)b->o.api, MPI_COMM_SELF, b->path, mode, MPI_INFO_NULL);
    if (!iotame_all_ok(run, rc == 0)) {
        if (rc == 0) iotame_file_close(&f);
        return IOTAME_EXIT_IO;
    }
    for (uint64_t i = 0; i < b->nblocks; i++) {
        uint64_t off = b->order[i] * bs;
        if (write) {
            iotame_data_fill(run, b->buf, bs, run->rank, off);
            iotame_file_write_at(&f, off, b->buf, bs, false);
        } else {
            iotame_file_read_at(&f, off, b->buf, bs, false);
            iotame_data_check(run, b->path, b->buf, bs, run->rank, off);
        }
    }
    if (write) iotame_file_sync(&f);
    iotame_file_close(&f);
    iotame_phase_end(run, (uint64_t)b->o.file_size);
    return IOTAME_EXIT_OK;
}

static int iob_remove(iotame_run_t *run, const iob_t *b)
{
    return iotame_file_remove_agreed(run, (iotame_api_t)b->o.api, b->path, true);
}

static int iob_run(iotame_run_t *run, int argc, char **argv)
{
    static const struct {
        const char *name;
        int kind;
        bool write;
    } phases[] = {
        {"seq_write", ORDER_SEQ, true},   {"seq_read", ORDER_SEQ, false},  {"back_write", ORDER_BACK, true},
        {"back_read", ORDER_BACK, false}, {"rand_write", ORDER_RAND, true}, {"rand_read", ORDER_RAND, false},
    };
    iob_t b = {0};
    int rc = iob_parse(run, argc, argv, &b.o);
    if (rc) return rc;
    run->seed = (uint64_t)b.o.std.seed;
    b.nblocks = (uint64_t)(b.o.file_size / b.o.block_size);
    b.order = malloc(b.nblocks * sizeof *b.order);
    if (!iotame_all_ok(run, b.order != NULL)) {
        iotame_error("out of memory for the order of %llu blocks", (unsigned long long)b.nblocks);
        free(b.order);
        return IOTAME_EXIT_IO;
    }
    b.buf = iotame_alloc((size_t)b.o.block_size);
    snprintf(b.path, sizeof b.path, "%s.%08d", b.o.std.file, run->rank);

    bool write = !b.o.std.skip_write;
    if (write) rc = iob_remove(run, &b); /* start from no file, so its size and content are this run's */
    for (size_t i = 0; !rc && i < sizeof phases / sizeof phases[0]; i++)
        if (write || !phases[i].write) rc = iob_phase(run, &b, phases[i].name, phases[i].kind, phases[i].write);
    if (!rc && write && !b.o.std.keep) rc = iob_remove(run, &b);
    free(b.buf);
    free(b.order);
    return rc;
}

const iotame_kernel_t iotame_kernel_iobench = {
    .name = "iobench",
    .summary = "IO_Bench: sequential, backward and random write and read of one file per rank in --block-size "
               "buffers",
    .run = iob_run,
};
