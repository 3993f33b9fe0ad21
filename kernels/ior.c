/* ior: the access pattern of the IOR benchmark (LLNL), driven by IOR's own short options for the subset below.
 *
 * Each rank writes, then reads, `segments` blocks of `block` bytes in requests of `transfer` bytes. Shared file:
 * segment s of rank r is at s*N*b + r*b; file per process (-F): rank r's file NAME.%08d holds its segments back to
 * back. The data is the common pattern of (seed, writer rank, file offset), so -W and -R check every byte whatever
 * the order (-z) or the reader (-C).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "kernels.h"

typedef struct {
    iotame_api_t api;
    int64_t block, transfer, segments, reps, seed;
    bool fpp, collective, random, fsync, reorder;
    bool write, read, check_write, check_read, keep;
    const char *file;
} ior_opts_t;

static const char help[] =
    "usage: iotame-kernel ior [IOR options]\n"
    "  -a POSIX|MPIIO  API (default MPIIO)\n"
    "  -b SIZE         block size: contiguous bytes per rank and segment (default 1m)\n"
    "  -t SIZE         transfer size: bytes per request, divides -b (default 256k)\n"
    "  -s N            segments (default 1)\n"
    "  -F              file per process (NAME.%08d of the rank)\n"
    "  -c              collective I/O (MPIIO only)\n"
    "  -z              random order of the transfers within each block (seeded, same for write and read)\n"
    "  -e              fsync after writing, inside the timed write phase\n"
    "  -C              reorder tasks: rank r reads the data of rank (r+1)%N\n"
    "  -w, -r          write, read (both when neither is given)\n"
    "  -W, -R          check the data after writing / while reading (untimed)\n"
    "  -o NAME         file name (default iotame-ior.dat)\n"
    "  -i N            repetitions (default 1)\n"
    "  -k              keep the file (default: remove what was written)\n"
    "  -G N            data pattern seed (default 42)\n"
    "Sizes take k, m, g suffixes (powers of 1024).\n";

/* IOR's names of the options, for messages. */
static const char *opt_name(int c)
{
    switch (c) {
    case 'a': return "api";
    case 'b': return "block size";
    case 't': return "transfer size";
    case 's': return "segments";
    case 'o': return "file name";
    case 'i': return "repetitions";
    case 'G': return "seed";
    default: return "?";
    }
}

static int size_arg(int c, const char *arg, int64_t *out)
{
    const char *what = opt_name(c);
    if (iotame_parse_size(arg, out) != 0)
        return iotame_usage_error("option -%c (%s): expected %s, got \"%s\"", c, what, IOTAME_SIZE_SYNTAX, arg);
    if (*out <= 0) return iotame_usage_error("option -%c (%s): must be > 0, got \"%s\"", c, what, arg);
    return 0;
}

static int count_arg(int c, const char *arg, int64_t min, int64_t *out)
{
    const char *what = opt_name(c);
    if (iotame_parse_int(arg, out) != 0 || *out < min)
        return iotame_usage_error("option -%c (%s): expected an integer >= %lld, got \"%s\"", c, what,
                                  (long long)min, arg);
    return 0;
}

static int ior_parse(const iotame_run_t *run, int argc, char **argv, ior_opts_t *o)
{
    int nprocs = run->nprocs;
    *o = (ior_opts_t){.api = IOTAME_API_MPIIO, .block = 1 << 20, .transfer = 256 << 10, .segments = 1, .reps = 1,
                      .seed = IOTAME_DEFAULT_SEED, .file = "iotame-ior.dat"};
    int c, rc = 0;
    for (int i = 1; i < argc; i++) { /* the usual spelling of help, besides IOR's -h */
        if (strcmp(argv[i], "--help") == 0) {
            if (run->rank == 0) fputs(help, stdout);
            return IOTAME_EXIT_HELP;
        }
    }
    opterr = 0; /* rank 0 reports, not getopt on every rank */
    while (rc == 0 && (c = getopt(argc, argv, ":a:b:t:s:o:i:G:FczeCwrWRkh")) != -1) {
        switch (c) {
        case 'a':
            if (strcasecmp(optarg, "POSIX") == 0) o->api = IOTAME_API_POSIX;
            else if (strcasecmp(optarg, "MPIIO") == 0) o->api = IOTAME_API_MPIIO;
            else rc = iotame_usage_error("option -a (api): expected one of POSIX, MPIIO, got \"%s\"", optarg);
            break;
        case 'b': rc = size_arg(c, optarg, &o->block); break;
        case 't': rc = size_arg(c, optarg, &o->transfer); break;
        case 's': rc = count_arg(c, optarg, 1, &o->segments); break;
        case 'i': rc = count_arg(c, optarg, 1, &o->reps); break;
        case 'G': rc = count_arg(c, optarg, 0, &o->seed); break;
        case 'o':
            if (!*optarg) rc = iotame_usage_error("option -o (file name): expected a file name, got \"\"");
            o->file = optarg;
            break;
        case 'F': o->fpp = true; break;
        case 'c': o->collective = true; break;
        case 'z': o->random = true; break;
        case 'e': o->fsync = true; break;
        case 'C': o->reorder = true; break;
        case 'w': o->write = true; break;
        case 'r': o->read = true; break;
        case 'W': o->check_write = true; break;
        case 'R': o->check_read = true; break;
        case 'k': o->keep = true; break;
        case 'h':
            if (run->rank == 0) fputs(help, stdout);
            return IOTAME_EXIT_HELP;
        case ':': rc = iotame_usage_error("option -%c (%s) needs a value (see -h)", optopt, opt_name(optopt)); break;
        default: rc = iotame_usage_error("unknown option -%c (see -h)", optopt); break;
        }
    }
    if (rc) return rc;
    if (optind < argc) return iotame_usage_error("unexpected argument \"%s\" (see -h)", argv[optind]);

    if (o->block % o->transfer != 0)
        return iotame_usage_error("option -b (block size): %lld is not a multiple of -t (transfer size) %lld",
                                  (long long)o->block, (long long)o->transfer);
    if (o->collective && o->api != IOTAME_API_MPIIO)
        return iotame_usage_error("option -c (collective) needs -a MPIIO: POSIX has no collective I/O");
    if (!o->write && !o->read) o->write = o->read = true;
    if (o->check_write && !o->write) return iotame_usage_error("option -W (check write) needs -w");
    if (o->check_read && !o->read) return iotame_usage_error("option -R (check read) needs -r");
    if (o->block > INT64_MAX / o->segments / nprocs)
        return iotame_usage_error("options -b and -s: file of %lld x %lld x %d bytes is too large",
                                  (long long)o->segments, (long long)o->block, nprocs);
    return 0;
}

static void ior_record(iotame_run_t *run, const ior_opts_t *o)
{
    iotame_param_str(run, "api", iotame_api_names[o->api]);
    iotame_param_int(run, "block", o->block);
    iotame_param_int(run, "transfer", o->transfer);
    iotame_param_int(run, "segments", o->segments);
    iotame_param_bool(run, "file_per_proc", o->fpp);
    iotame_param_bool(run, "collective", o->collective);
    iotame_param_bool(run, "random", o->random);
    iotame_param_bool(run, "fsync", o->fsync);
    iotame_param_bool(run, "reorder", o->reorder);
    iotame_param_int(run, "repetitions", o->reps);
    iotame_param_str(run, "file", o->file);
    iotame_param_int(run, "seed", o->seed);
    iotame_param_bool(run, "write", o->write);
    iotame_param_bool(run, "read", o->read);
    iotame_param_bool(run, "check_write", o->check_write);
    iotame_param_bool(run, "check_read", o->check_read);
    iotame_param_bool(run, "keep", o->keep);
}

/* The file holding the data of rank `owner`. */
static void file_of(const ior_opts_t *o, int owner, char *buf, size_t n)
{
    if (o->fpp) snprintf(buf, n, "%s.%08d", o->file, owner);
    else snprintf(buf, n, "%s", o->file);
}

static uint64_t offset_of(const ior_opts_t *o, int nprocs, int owner, int64_t segment, uint64_t xfer)
{
    uint64_t b = (uint64_t)o->block, t = (uint64_t)o->transfer, s = (uint64_t)segment;
    if (o->fpp) return s * b + xfer * t;
    return s * (uint64_t)nprocs * b + (uint64_t)owner * b + xfer * t;
}

/* Transfer order within a block: 0..n-1, or with -z a permutation seeded by the block owner's rank, so that the
 * write and the read of the same data use the same order. */
static uint64_t *order_of(const ior_opts_t *o, int owner)
{
    uint64_t n = (uint64_t)(o->block / o->transfer);
    uint64_t *order = malloc(n * sizeof *order);
    if (!order) return NULL;
    for (uint64_t i = 0; i < n; i++) order[i] = i;
    if (o->random) {
        iotame_rng_t rng;
        iotame_rng_seed(&rng, (uint64_t)o->seed, (uint64_t)owner);
        iotame_rng_shuffle(&rng, order, n);
    }
    return order;
}

/* One pass over every segment of rank owner's data: open, write (fill) or read (and check if `check`), optional
 * fsync after writing, close. Returns IOTAME_EXIT_IO on every rank when the open failed on any. Filling and checking
 * the buffers is the kernel's own work, not I/O: its time is left out of the phase (docs/design/bandwidth.md). */
static int ior_pass(iotame_run_t *run, const ior_opts_t *o, bool write, bool check, int owner,
                    const uint64_t *order, void *buf)
{
    char path[PATH_MAX + 16];
    file_of(o, owner, path, sizeof path);
    iotame_file_t f;
    MPI_Comm comm = o->fpp ? MPI_COMM_SELF : run->comm;
    int mode = write ? IOTAME_FILE_WRITE | IOTAME_FILE_CREATE : IOTAME_FILE_READ;
    int rc = iotame_file_open(&f, o->api, comm, path, mode, MPI_INFO_NULL);
    if (!iotame_all_ok(run, rc == 0)) {
        if (rc == 0) iotame_file_close(&f);
        return IOTAME_EXIT_IO;
    }
    size_t t = (size_t)o->transfer;
    uint64_t n = (uint64_t)(o->block / o->transfer);
    for (int64_t s = 0; s < o->segments; s++) {
        for (uint64_t i = 0; i < n; i++) {
            uint64_t off = offset_of(o, run->nprocs, owner, s, order[i]);
            if (write) {
                iotame_data_fill(run, buf, t, owner, off); /* its time left out of the phase */
                iotame_file_write_at(&f, off, buf, t, o->collective);
            } else {
                iotame_file_read_at(&f, off, buf, t, o->collective);
                if (check) iotame_data_check(run, path, buf, t, owner, off); /* left out alike */
            }
        }
    }
    if (write && o->fsync) iotame_file_sync(&f);
    iotame_file_close(&f);
    return IOTAME_EXIT_OK;
}

/* Removes this run's file(s): the shared file by rank 0, each rank its own with -F. */
static int ior_remove(iotame_run_t *run, const ior_opts_t *o)
{
    char path[PATH_MAX + 16];
    int rc = 0;
    MPI_Barrier(run->comm); /* nobody still has it open */
    if (o->fpp || run->rank == 0) {
        file_of(o, run->rank, path, sizeof path);
        rc = iotame_file_remove(o->api, path);
    }
    return iotame_all_ok(run, rc == 0) ? IOTAME_EXIT_OK : IOTAME_EXIT_IO;
}

static int ior_run(iotame_run_t *run, int argc, char **argv)
{
    ior_opts_t o;
    int rc = ior_parse(run, argc, argv, &o);
    if (rc) return rc;
    ior_record(run, &o);
    run->seed = (uint64_t)o.seed;

    /* As IOR's -C: read back what the neighbour wrote, so a rank does not just read its own page cache. */
    int me = run->rank, reader_owner = o.reorder ? (me + 1) % run->nprocs : me;
    uint64_t *write_order = order_of(&o, me), *read_order = order_of(&o, reader_owner);
    void *buf = iotame_alloc((size_t)o.transfer);
    uint64_t my_bytes = (uint64_t)o.segments * (uint64_t)o.block;
    if (!iotame_all_ok(run, write_order && read_order)) {
        iotame_error("out of memory for the transfer order");
        rc = IOTAME_EXIT_IO;
    }

    for (int64_t rep = 0; rc == 0 && rep < o.reps; rep++) {
        if (o.write) {
            /* Like IOR, start from no file so the size and content are this run's only. */
            rc = ior_remove(run, &o);
            if (rc) break;
            iotame_phase_begin(run, "write");
            rc = ior_pass(run, &o, true, false, me, write_order, buf);
            if (rc) break;
            iotame_phase_end(run, my_bytes);
            if (o.check_write && (rc = ior_pass(run, &o, false, true, me, write_order, buf))) break;
        }
        if (o.read) {
            iotame_phase_begin(run, "read");
            rc = ior_pass(run, &o, false, o.check_read, reader_owner, read_order, buf);
            if (rc) break;
            iotame_phase_end(run, my_bytes);
        }
        /* RATIONALE: remove only what this run wrote; a read-only run leaves its input in place. */
        if (o.write && !o.keep) rc = ior_remove(run, &o);
    }
    free(buf);
    free(write_order);
    free(read_order);
    return rc;
}

const iotame_kernel_t iotame_kernel_ior = {
    .name = "ior",
    .summary = "IOR: blocks of -b bytes in -t byte requests, -s segments, shared file or -F, POSIX or MPIIO",
    .run = ior_run,
};
