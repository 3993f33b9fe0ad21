/* spio: SPIOBENCH, the NSF scalable parallel I/O benchmark, as run by Saini et al., "Parallel I/O Performance
 * Characterization of Columbia and NEC SX-8 Superclusters" (IPDPS 2007).
 *
 * A fixed aggregate of --total-size bytes is divided evenly among the processes, each accessing its own file
 * (FILE.%08d of the rank) sequentially in --block-size requests, so the bytes per file shrink as processes are
 * added. The paper's sequence of seven phases: initial write (Wrt0), read (Rd1), rewrite (reWr1), read (Rd2),
 * rewrite (reWr2), read (Rd3), rewrite (reWr3). Writes and rewrites are synced inside the timed phase; every read
 * checks every byte against the common pattern (a rewrite writes the same pattern again).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

typedef struct {
    iotame_standard_options_t std;
    int64_t total_size, block_size;
    int api;
} spio_opts_t;

typedef struct {
    spio_opts_t o;
    uint64_t my_size;
    void *buf;
    char path[PATH_MAX + 16];
} spio_t;

static int spio_parse(iotame_run_t *run, int argc, char **argv, spio_opts_t *o)
{
    static const char *const apis[] = {"posix", "mpiio", NULL};
    const iotame_option_t opts[] = {
        IOTAME_STANDARD_OPTIONS(o->std, "iotame-spio.dat"),
        {.name = "total-size", .type = IOTAME_OPT_SIZE, .value = &o->total_size, .def = "6m", .min = "1",
         .help = "aggregate bytes of all files (SPIOBENCH: 128g), divided evenly among the processes"},
        {.name = "block-size", .type = IOTAME_OPT_SIZE, .value = &o->block_size, .def = "64k", .min = "1",
         .max = "1g", .help = "bytes per request"},
        {.name = "api", .type = IOTAME_OPT_ENUM, .value = &o->api, .def = "posix", .choices = apis,
         .help = "I/O interface"},
        {0}};
    int rc = iotame_options_parse(run, opts, argc, argv);
    if (rc) return rc;
    int64_t unit = o->block_size * run->nprocs;
    if (o->total_size % unit != 0)
        return iotame_usage_error("option --total-size: %lld bytes do not divide into whole --block-size %lld byte "
                                  "requests over %d processes (use a multiple of %lld)", (long long)o->total_size,
                                  (long long)o->block_size, run->nprocs, (long long)unit);
    return 0;
}

static int spio_phase(iotame_run_t *run, spio_t *s, const char *name, bool write)
{
    size_t bs = (size_t)s->o.block_size;
    iotame_file_t f;
    iotame_phase_begin(run, name);
    /* The initial write creates the file; a rewrite overwrites it in place. */
    int mode = !write ? IOTAME_FILE_READ : strcmp(name, "write0") == 0 ? IOTAME_FILE_WRITE | IOTAME_FILE_CREATE
                                                                       : IOTAME_FILE_WRITE;
    int rc = iotame_file_open(&f, (iotame_api_t)s->o.api, MPI_COMM_SELF, s->path, mode, MPI_INFO_NULL);
    if (!iotame_all_ok(run, rc == 0)) {
        if (rc == 0) iotame_file_close(&f);
        return IOTAME_EXIT_IO;
    }
    for (uint64_t off = 0; off < s->my_size; off += bs) {
        if (write) {
            iotame_data_fill(run, s->buf, bs, run->rank, off);
            iotame_file_write_at(&f, off, s->buf, bs, false);
        } else {
            iotame_file_read_at(&f, off, s->buf, bs, false);
            iotame_data_check(run, s->path, s->buf, bs, run->rank, off);
        }
    }
    if (write) iotame_file_sync(&f);
    iotame_file_close(&f);
    iotame_phase_end(run, s->my_size);
    return IOTAME_EXIT_OK;
}

static int spio_remove(iotame_run_t *run, const spio_t *s)
{
    return iotame_file_remove_agreed(run, (iotame_api_t)s->o.api, s->path, true);
}

static int spio_run(iotame_run_t *run, int argc, char **argv)
{
    static const char *const phases[] = {"write0", "read1", "rewrite1", "read2", "rewrite2", "read3", "rewrite3"};
    spio_t s = {0};
    int rc = spio_parse(run, argc, argv, &s.o);
    if (rc) return rc;
    run->seed = (uint64_t)s.o.std.seed;
    s.my_size = (uint64_t)(s.o.total_size / run->nprocs);
    s.buf = iotame_alloc((size_t)s.o.block_size);
    snprintf(s.path, sizeof s.path, "%s.%08d", s.o.std.file, run->rank);

    bool write = !s.o.std.skip_write;
    if (write) rc = spio_remove(run, &s); /* the initial write starts from no file */
    for (size_t i = 0; !rc && i < sizeof phases / sizeof phases[0]; i++) {
        bool is_write = strncmp(phases[i], "read", 4) != 0;
        if (write || !is_write) rc = spio_phase(run, &s, phases[i], is_write);
    }
    if (!rc && write && !s.o.std.keep) rc = spio_remove(run, &s);
    free(s.buf);
    return rc;
}

const iotame_kernel_t iotame_kernel_spio = {
    .name = "spio",
    .summary = "SPIOBENCH: fixed --total-size over one file per process; write, then read and rewrite three times",
    .run = spio_run,
};
