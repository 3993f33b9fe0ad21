/* phases: the compute/I-O phase benchmark of Isaila et al., "Latency hiding file I/O for Blue Gene systems"
 * (section 5.1, Figures 3-6), which measures write-behind: the throughput the application sees and the close time.
 *
 * All processes open one shared file once (MPI-IO on the job's communicator), then run --phases phases of
 * (compute for --compute seconds, spinning or sleeping; barrier; write --records records of --record-size bytes
 * each, one MPI_File_write_at or, with --collective, MPI_File_write_at_all per record), then close the file.
 * Records never overlap. Record i of rank r in phase p is at
 *   --layout contiguous   ((p * nprocs + r) * records + i) * record_size   (a block per rank and phase, the paper's)
 *   --layout interleaved  ((p * records + i) * nprocs + r) * record_size   (ranks interleaved record by record)
 * The data is the common pattern of the writing rank at each file offset. After the close the file is reopened,
 * every record read back (the same calls as the writes) and verified.
 *
 * RATIONALE: there is no MPI_File_sync anywhere in the write loop: the point is what a write-behind layer hides, so
 * the writes are timed as the application sees them and whatever is still unflushed shows in the close time.
 *
 * Result: "phases" holds "write" (bytes / the sum of the I/O phase times: the paper's aggregate throughput),
 * "write_close" (bytes / (I/O phase times + close time)) and "read" (the verification read). "application" holds
 * the times, max over ranks: each I/O phase from the start of its first write to the end of its last, their sum,
 * the compute time, the MPI_File_close time, and the wall time from before the open to after the close (pattern
 * generation between phases counts only there); null for a --skip-write run.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep under -std=c11 too */

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "kernels.h"

enum { LAYOUT_CONTIGUOUS, LAYOUT_INTERLEAVED };
enum { COMPUTE_BUSY, COMPUTE_SLEEP };
#define MAX_FILE_BYTES (INT64_MAX / 2)
#define MAX_PHASE_BYTES (1LL << 34) /* the per-phase buffer of one process */

typedef struct {
    iotame_standard_options_t std;
    int64_t phases, record_size, records;
    double compute;
    int compute_mode, layout;
    bool collective;
} phases_opts_t;

static int phases_parse(iotame_run_t *run, int argc, char **argv, phases_opts_t *o)
{
    static const char *const layouts[] = {"contiguous", "interleaved", NULL};
    static const char *const modes[] = {"busy", "sleep", NULL};
    const iotame_option_t opts[] = {
        {.name = "phases", .type = IOTAME_OPT_INT, .value = &o->phases, .def = "4", .min = "1", .max = "1000000",
         .help = "compute/I-O phases"},
        {.name = "record-size", .type = IOTAME_OPT_SIZE, .value = &o->record_size, .def = "1m", .min = "1",
         .max = "1g", .help = "bytes per record: one write call"},
        {.name = "records", .type = IOTAME_OPT_INT, .value = &o->records, .def = "16", .min = "1",
         .max = "1000000", .help = "records per process and phase"},
        {.name = "compute", .type = IOTAME_OPT_DOUBLE, .value = &o->compute, .def = "0", .min = "0", .max = "3600",
         .help = "seconds of computation before each I/O phase"},
        {.name = "compute-mode", .type = IOTAME_OPT_ENUM, .value = &o->compute_mode, .def = "busy",
         .choices = modes, .help = "computation: spin on the CPU (as the paper) or sleep"},
        {.name = "layout", .type = IOTAME_OPT_ENUM, .value = &o->layout, .def = "contiguous", .choices = layouts,
         .help = "a contiguous block per process and phase, or processes interleaved record by record"},
        {.name = "collective", .type = IOTAME_OPT_FLAG, .value = &o->collective,
         .help = "collective I/O (MPI_File_write_at_all / read_at_all); default independent"},
        IOTAME_STANDARD_OPTIONS(o->std, "iotame-phases.dat"),
        {0}};
    int rc = iotame_options_parse(run, opts, argc, argv);
    if (rc) return rc;
    if (o->records > MAX_PHASE_BYTES / o->record_size)
        return iotame_usage_error("options --records and --record-size: %lld records of %lld bytes is more than "
                                  "%lld bytes per process and phase", (long long)o->records,
                                  (long long)o->record_size, MAX_PHASE_BYTES);
    if (o->phases > MAX_FILE_BYTES / (o->records * o->record_size) / run->nprocs)
        return iotame_usage_error("option --phases: %lld phases make the file too large", (long long)o->phases);
    return 0;
}

/* File offset of record i of this rank in phase p. */
static uint64_t record_offset(const phases_opts_t *o, const iotame_run_t *run, int64_t p, int64_t i)
{
    uint64_t np = (uint64_t)run->nprocs, r = (uint64_t)run->rank, n = (uint64_t)o->records;
    uint64_t index = o->layout == LAYOUT_CONTIGUOUS ? ((uint64_t)p * np + r) * n + (uint64_t)i
                                                    : ((uint64_t)p * n + (uint64_t)i) * np + r;
    return index * (uint64_t)o->record_size;
}

/* The computation phase: spin (floating-point work, checking the clock) or sleep. Returns the seconds spent. */
static double compute(const phases_opts_t *o)
{
    if (o->compute <= 0.0) return 0.0;
    double start = MPI_Wtime();
    if (o->compute_mode == COMPUTE_SLEEP) {
        struct timespec left = {.tv_sec = (time_t)o->compute,
                                .tv_nsec = (long)((o->compute - floor(o->compute)) * 1e9)};
        while (nanosleep(&left, &left) != 0 && errno == EINTR) {}
    } else {
        volatile double x = 1.0;
        while (MPI_Wtime() - start < o->compute)
            for (int k = 0; k < 1000; k++) x = x * 0.9999999 + 1e-7; /* stays near 1 */
    }
    return MPI_Wtime() - start;
}

/* Opens the shared file on every rank, or returns IOTAME_EXIT_IO on every rank. */
static int open_agreed(iotame_run_t *run, iotame_file_t *f, const char *path, bool write)
{
    int mode = write ? IOTAME_FILE_WRITE | IOTAME_FILE_CREATE : IOTAME_FILE_READ;
    int rc = iotame_file_open(f, IOTAME_API_MPIIO, run->comm, path, mode, MPI_INFO_NULL);
    if (iotame_all_ok(run, rc == 0)) return IOTAME_EXIT_OK;
    if (rc == 0) iotame_file_close(f);
    return IOTAME_EXIT_IO;
}

/* The benchmark proper: open, the compute/I-O phases, close; the times go to "phases" and "application". */
static int phases_write(iotame_run_t *run, const phases_opts_t *o, unsigned char *buf)
{
    const size_t rs = (size_t)o->record_size;
    double *io = calloc((size_t)o->phases, sizeof *io);
    if (!io) iotame_fatal("out of memory for %lld phase times", (long long)o->phases);
    double compute_s = 0.0;
    iotame_file_t f;

    MPI_Barrier(run->comm);
    double t_open = MPI_Wtime();
    int rc = open_agreed(run, &f, o->std.file, true);
    if (rc) {
        free(io);
        return rc;
    }
    for (int64_t p = 0; p < o->phases; p++) {
        for (int64_t i = 0; i < o->records; i++)
            iotame_pattern_fill(buf + (size_t)i * rs, rs, run->seed, run->rank, record_offset(o, run, p, i));
        compute_s += compute(o);
        MPI_Barrier(run->comm); /* every phase's I/O starts together, as after the paper's compute phases */
        double t0 = MPI_Wtime();
        for (int64_t i = 0; i < o->records; i++)
            iotame_file_write_at(&f, record_offset(o, run, p, i), buf + (size_t)i * rs, rs, o->collective);
        io[p] = MPI_Wtime() - t0;
    }
    MPI_Barrier(run->comm); /* the close time is the close's own, not a wait for the last writes of others */
    double t_close = MPI_Wtime();
    iotame_file_close(&f);
    double t_end = MPI_Wtime();

    double times[3] = {compute_s, t_end - t_close, t_end - t_open};
    MPI_Allreduce(MPI_IN_PLACE, io, (int)o->phases, MPI_DOUBLE, MPI_MAX, run->comm);
    MPI_Allreduce(MPI_IN_PLACE, times, 3, MPI_DOUBLE, MPI_MAX, run->comm);
    uint64_t phase_bytes = (uint64_t)run->nprocs * (uint64_t)o->records * rs;
    uint64_t bytes = phase_bytes * (uint64_t)o->phases;
    double io_s = 0.0;
    json_t *per_phase = json_array();
    for (int64_t p = 0; p < o->phases; p++) {
        io_s += io[p];
        json_array_append_new(per_phase, json_real(io[p]));
    }
    free(io);
    iotame_phase_append(run, "write", bytes, io_s);
    iotame_phase_append(run, "write_close", bytes, io_s + times[1]);

    json_t *app = json_object();
    json_object_set_new(app, "bytes", json_integer((json_int_t)bytes));
    json_object_set_new(app, "phase_bytes", json_integer((json_int_t)phase_bytes));
    json_object_set_new(app, "io_phase_seconds", per_phase);
    json_object_set_new(app, "io_seconds", json_real(io_s));
    json_object_set_new(app, "compute_seconds", json_real(times[0]));
    json_object_set_new(app, "close_seconds", json_real(times[1]));
    json_object_set_new(app, "wall_seconds", json_real(times[2]));
    json_object_set_new(app, "mbs", json_real(io_s > 0.0 ? (double)bytes / io_s / 1e6 : 0.0));
    double with_close = io_s + times[1];
    json_object_set_new(app, "mbs_with_close", json_real(with_close > 0.0 ? (double)bytes / with_close / 1e6 : 0.0));
    json_object_set_new(run->result, "application", app);
    return IOTAME_EXIT_OK;
}

/* Reopens the file and reads every record of this rank back with the calls that wrote it, checking the pattern. */
static int phases_read(iotame_run_t *run, const phases_opts_t *o, unsigned char *buf)
{
    const size_t rs = (size_t)o->record_size;
    iotame_file_t f;
    iotame_phase_begin(run, "read");
    int rc = open_agreed(run, &f, o->std.file, false);
    if (rc) return rc;
    for (int64_t p = 0; p < o->phases; p++) {
        for (int64_t i = 0; i < o->records; i++)
            iotame_file_read_at(&f, record_offset(o, run, p, i), buf + (size_t)i * rs, rs, o->collective);
        for (int64_t i = 0; i < o->records; i++)
            iotame_data_check(run, o->std.file, buf + (size_t)i * rs, rs, run->rank, record_offset(o, run, p, i));
    }
    iotame_file_close(&f);
    iotame_phase_end(run, (uint64_t)o->phases * (uint64_t)o->records * rs);
    return IOTAME_EXIT_OK;
}

static int phases_run(iotame_run_t *run, int argc, char **argv)
{
    phases_opts_t o;
    int rc = phases_parse(run, argc, argv, &o);
    if (rc) return rc;
    run->seed = (uint64_t)o.std.seed;
    unsigned char *buf = iotame_alloc((size_t)o.records * (size_t)o.record_size);
    json_object_set_new(run->result, "application", json_null());

    bool write = !o.std.skip_write;
    if (write) {
        rc = iotame_file_remove_agreed(run, IOTAME_API_MPIIO, o.std.file, run->rank == 0);
        if (!rc) rc = phases_write(run, &o, buf);
    }
    if (!rc) rc = phases_read(run, &o, buf);
    /* RATIONALE: remove only what this run wrote; a --skip-write run leaves its input in place. */
    if (!rc && write && !o.std.keep)
        rc = iotame_file_remove_agreed(run, IOTAME_API_MPIIO, o.std.file, run->rank == 0);
    free(buf);
    return rc;
}

const iotame_kernel_t iotame_kernel_phases = {
    .name = "phases",
    .summary = "compute/I-O phases (Blue Gene write-behind): records of a shared file written without sync; "
               "throughput as the application sees it, close time",
    .run = phases_run,
};
