/* One kernel run: the JSON result, timed phases, data verification, messages and exit statuses.
 *
 * main() creates the run, the kernel's .run function fills it, main() calls iotame_run_finish() which gathers the
 * verification errors and prints the one JSON object on stdout (rank 0). A kernel only ever writes to stderr.
 *
 *   iotame_phase_begin(run, "write");          barrier, start clock
 *   ... open, iotame_data_fill(), write, sync, close ...
 *   iotame_phase_end(run, my_bytes);           max seconds over ranks, bytes summed, appended to "phases"
 */
#ifndef IOTAME_KERNELS_RUN_H
#define IOTAME_KERNELS_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <mpi.h>

/* Exit statuses. A kernel's .run returns OK (then main prints the result), HELP (help printed: exit 0, no JSON),
 * USAGE or IO (message already printed on stderr: exit with that status, no JSON). MISMATCH comes from
 * iotame_run_finish() when a verified byte was wrong. */
enum {
    IOTAME_EXIT_HELP = -1,
    IOTAME_EXIT_OK = 0,
    IOTAME_EXIT_MISMATCH = 1,
    IOTAME_EXIT_USAGE = 2,
    IOTAME_EXIT_IO = 3,
};

#define IOTAME_DEFAULT_SEED 42

typedef struct iotame_run {
    MPI_Comm comm;       /* MPI_COMM_WORLD */
    int rank, nprocs;
    const char *kernel;  /* name, for messages and the "kernel" key */
    const char *summary; /* one line, for --help */
    uint64_t seed;       /* data pattern seed used by iotame_data_fill/check; set it from the kernel's option */
    json_t *result;      /* the object rank 0 prints */
    json_t *params;      /* result.params: options are recorded here */
    json_t *phases;      /* result.phases */

    /* Private state: use the functions below. */
    const char *phase_name;
    double phase_start, phase_excluded;
    uint64_t verified_bytes;
    bool has_error;
    uint64_t error_offset;
    int error_expected, error_got;
    char error_file[1024];
} iotame_run_t;

void iotame_run_init(iotame_run_t *run, const char *kernel, const char *summary, MPI_Comm comm);
/* Collective. Gathers errors, prints the result on rank 0; returns IOTAME_EXIT_OK or IOTAME_EXIT_MISMATCH. */
int iotame_run_finish(iotame_run_t *run);
void iotame_run_free(iotame_run_t *run);

/* Entries of "params" (kernels with an option table get theirs recorded by iotame_options_parse). */
void iotame_param_int(iotame_run_t *run, const char *key, int64_t value);
void iotame_param_double(iotame_run_t *run, const char *key, double value);
void iotame_param_bool(iotame_run_t *run, const char *key, bool value);
void iotame_param_str(iotame_run_t *run, const char *key, const char *value); /* NULL gives null */

/* Timed phases (collective). Seconds = max over ranks of (local end - common start - excluded time);
 * bytes = sum over ranks of local_bytes; MB/s with MB = 10^6 bytes. Returns the phase seconds. */
void iotame_phase_begin(iotame_run_t *run, const char *name);
double iotame_phase_end(iotame_run_t *run, uint64_t local_bytes);
/* Appends a phase of `bytes` (all ranks) in `seconds` to "phases", as iotame_phase_end does: a kernel that times a
 * phase of its own (phases: the writes with their close). */
void iotame_phase_append(iotame_run_t *run, const char *name, uint64_t bytes, double seconds);
/* Removes seconds of non-I/O work (pattern, packing) from the current phase on this rank. */
void iotame_phase_exclude(iotame_run_t *run, double seconds);

/* Pattern fill / check with run->seed, their time excluded from the current phase. writer is the rank whose data
 * it is, offset the absolute offset in `file`. A check counts the bytes as verified, records this rank's bad byte
 * for "errors" (the lowest bad offset in the first bad file) and returns true when every byte matched. */
void iotame_data_fill(iotame_run_t *run, void *buf, size_t len, int writer, uint64_t offset);
bool iotame_data_check(iotame_run_t *run, const char *file, const void *buf, size_t len, int writer,
                       uint64_t offset);
/* For kernels that verify by other means: count verified bytes, record one bad byte. */
void iotame_verify_count(iotame_run_t *run, uint64_t bytes);
void iotame_verify_record(iotame_run_t *run, const char *file, uint64_t offset, int expected, int got);

/* Messages on stderr, prefixed "iotame-kernel KERNEL:". iotame_error: any rank, tagged with the rank.
 * iotame_usage_error: rank 0 only, returns IOTAME_EXIT_USAGE so a kernel can `return iotame_usage_error(...)`. */
void iotame_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int iotame_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* For what must never happen (an I/O call failing): prints like iotame_error, aborts the job, exit IOTAME_EXIT_IO. */
_Noreturn void iotame_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Collective: true when ok is true on every rank. Use after a step that may fail on some ranks only
 * (opening per-rank files) so that every rank takes the same branch. */
bool iotame_all_ok(const iotame_run_t *run, bool ok);

#endif
