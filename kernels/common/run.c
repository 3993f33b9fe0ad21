/* One kernel run: result JSON, timed phases, verification errors gathered to rank 0, messages. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pattern.h"
#include "run.h"

/* Message prefix state: one run per process. */
static const char *msg_kernel = "";
static int msg_rank = 0;

void iotame_run_init(iotame_run_t *run, const char *kernel, const char *summary, MPI_Comm comm)
{
    memset(run, 0, sizeof *run);
    run->comm = comm;
    MPI_Comm_rank(comm, &run->rank);
    MPI_Comm_size(comm, &run->nprocs);
    run->kernel = kernel;
    run->summary = summary;
    run->seed = IOTAME_DEFAULT_SEED;
    run->result = json_object();
    run->params = json_object();
    run->phases = json_array();
    json_object_set_new(run->result, "kernel", json_string(kernel));
    json_object_set_new(run->result, "nprocs", json_integer(run->nprocs));
    json_object_set(run->result, "params", run->params);
    json_object_set(run->result, "phases", run->phases);
    msg_kernel = kernel;
    msg_rank = run->rank;
}

void iotame_run_free(iotame_run_t *run)
{
    json_decref(run->params);
    json_decref(run->phases);
    json_decref(run->result);
    run->result = run->params = run->phases = NULL;
}

/* ---- params ---- */

void iotame_param_int(iotame_run_t *run, const char *key, int64_t value)
{
    json_object_set_new(run->params, key, json_integer(value));
}

void iotame_param_double(iotame_run_t *run, const char *key, double value)
{
    json_object_set_new(run->params, key, json_real(value));
}

void iotame_param_bool(iotame_run_t *run, const char *key, bool value)
{
    json_object_set_new(run->params, key, json_boolean(value));
}

void iotame_param_str(iotame_run_t *run, const char *key, const char *value)
{
    json_object_set_new(run->params, key, value ? json_string(value) : json_null());
}

/* ---- phases ---- */

void iotame_phase_begin(iotame_run_t *run, const char *name)
{
    MPI_Barrier(run->comm);
    run->phase_name = name;
    run->phase_excluded = 0.0;
    run->phase_start = MPI_Wtime();
}

void iotame_phase_append(iotame_run_t *run, const char *name, uint64_t bytes, double seconds)
{
    json_t *phase = json_object();
    json_object_set_new(phase, "name", json_string(name));
    json_object_set_new(phase, "bytes", json_integer((json_int_t)bytes));
    json_object_set_new(phase, "seconds", json_real(seconds));
    /* One figure (docs/design/bandwidth.md): bytes / seconds, in MB/s (10^6 B/s) and MiB/s (2^20 B/s) beside it. */
    json_object_set_new(phase, "mbs", json_real(seconds > 0.0 ? (double)bytes / seconds / 1e6 : 0.0));
    json_object_set_new(phase, "mibs", json_real(seconds > 0.0 ? (double)bytes / seconds / 1048576.0 : 0.0));
    json_array_append_new(run->phases, phase);
}

double iotame_phase_end(iotame_run_t *run, uint64_t local_bytes)
{
    /* RATIONALE: each rank stops its clock before the closing reduction (which is the barrier), so the maximum is
     * the time until the last rank finished its I/O; a rank that waited in a barrier for another rank's pattern
     * check does not count that wait as I/O. */
    double seconds = MPI_Wtime() - run->phase_start - run->phase_excluded;
    if (seconds < 0.0) seconds = 0.0;
    uint64_t bytes = local_bytes;
    MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, run->comm);
    MPI_Allreduce(MPI_IN_PLACE, &bytes, 1, MPI_UINT64_T, MPI_SUM, run->comm);
    iotame_phase_append(run, run->phase_name ? run->phase_name : "phase", bytes, seconds);
    run->phase_name = NULL;
    run->phase_excluded = 0.0;
    return seconds;
}

void iotame_phase_exclude(iotame_run_t *run, double seconds)
{
    run->phase_excluded += seconds;
}

/* ---- verification ---- */

void iotame_data_fill(iotame_run_t *run, void *buf, size_t len, int writer, uint64_t offset)
{
    double t = MPI_Wtime();
    iotame_pattern_fill(buf, len, run->seed, writer, offset);
    run->phase_excluded += MPI_Wtime() - t;
}

bool iotame_data_check(iotame_run_t *run, const char *file, const void *buf, size_t len, int writer,
                       uint64_t offset)
{
    double t = MPI_Wtime();
    uint8_t expected = 0, got = 0;
    size_t good = iotame_pattern_check(buf, len, run->seed, writer, offset, &expected, &got);
    run->verified_bytes += len;
    if (good < len) iotame_verify_record(run, file, offset + good, expected, got);
    run->phase_excluded += MPI_Wtime() - t;
    return good == len;
}

void iotame_verify_count(iotame_run_t *run, uint64_t bytes)
{
    run->verified_bytes += bytes;
}

void iotame_verify_record(iotame_run_t *run, const char *file, uint64_t offset, int expected, int got)
{
    /* Keep the lowest bad offset of the first bad file, so the report does not depend on access order. */
    if (run->has_error && (strcmp(file, run->error_file) != 0 || offset >= run->error_offset)) return;
    if (!run->has_error)
        iotame_error("data mismatch in %s at offset %llu: expected 0x%02x, got 0x%02x", file,
                     (unsigned long long)offset, expected, got);
    run->has_error = true;
    run->error_offset = offset;
    run->error_expected = expected;
    run->error_got = got;
    snprintf(run->error_file, sizeof run->error_file, "%s", file);
}

/* ---- result ---- */

typedef struct {
    int32_t has_error, expected, got, pad;
    uint64_t offset;
    char file[sizeof ((iotame_run_t *)0)->error_file];
} error_rec_t;

int iotame_run_finish(iotame_run_t *run)
{
    uint64_t verified = run->verified_bytes;
    int bad = run->has_error;
    MPI_Allreduce(MPI_IN_PLACE, &verified, 1, MPI_UINT64_T, MPI_SUM, run->comm);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, run->comm);

    json_t *errors = json_array();
    if (bad) {
        error_rec_t mine = {.has_error = run->has_error, .expected = run->error_expected, .got = run->error_got,
                            .offset = run->error_offset};
        memcpy(mine.file, run->error_file, sizeof mine.file);
        error_rec_t *all = run->rank == 0 ? calloc(run->nprocs, sizeof *all) : NULL;
        MPI_Gather(&mine, sizeof mine, MPI_BYTE, all, sizeof mine, MPI_BYTE, 0, run->comm);
        for (int r = 0; all && r < run->nprocs; r++) {
            if (!all[r].has_error) continue;
            json_t *e = json_object();
            json_object_set_new(e, "rank", json_integer(r));
            json_object_set_new(e, "file", json_string(all[r].file));
            json_object_set_new(e, "offset", json_integer((json_int_t)all[r].offset));
            json_object_set_new(e, "expected", json_integer(all[r].expected));
            json_object_set_new(e, "got", json_integer(all[r].got));
            json_array_append_new(errors, e);
        }
        free(all);
    }
    json_object_set_new(run->result, "verified", bad ? json_false() : verified ? json_true() : json_null());
    json_object_set_new(run->result, "errors", errors);

    if (run->rank == 0) {
        json_dumpf(run->result, stdout, JSON_COMPACT | JSON_REAL_PRECISION(9));
        fputc('\n', stdout);
        fflush(stdout);
    }
    return bad ? IOTAME_EXIT_MISMATCH : IOTAME_EXIT_OK;
}

/* ---- messages ---- */

void iotame_error(const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* One fprintf so lines of different ranks do not interleave. */
    fprintf(stderr, "iotame-kernel %s: rank %d: %s\n", msg_kernel, msg_rank, msg);
}

void iotame_fatal(const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    iotame_error("%s", msg);
    /* RATIONALE: MPI_Abort makes mpiexec kill every process at once; without a pause the message just printed can
     * be lost before mpiexec has forwarded it. */
    fflush(stderr);
    struct timespec pause = {.tv_sec = 0, .tv_nsec = 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    MPI_Abort(MPI_COMM_WORLD, IOTAME_EXIT_IO);
    exit(IOTAME_EXIT_IO); /* not reached */
}

int iotame_usage_error(const char *fmt, ...)
{
    if (msg_rank != 0) return IOTAME_EXIT_USAGE;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "iotame-kernel %s: %s\n", msg_kernel, msg);
    return IOTAME_EXIT_USAGE;
}

bool iotame_all_ok(const iotame_run_t *run, bool ok)
{
    int v = ok;
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_LAND, run->comm);
    return v;
}
