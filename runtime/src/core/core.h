/* core: the runtime's state (init/finalize), configuration, hints, logging and statistics.
 * The only interface of runtime/src/core/ to the other parts. */
#ifndef IOTAME_CORE_H
#define IOTAME_CORE_H

#include <mpi.h>
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "config.h"

/* ---- state ---- */

/* Nonzero between a successful MPI_Init and MPI_Finalize unless IOTAME_DISABLE=1: wrappers pass through
 * untouched while it is zero. */
extern int iotame__active;
/* Nonzero when MPICH's builtin datatype handles were checked to encode their size (intercept.h). */
extern int iotame__builtin_sizes;
/* Nonzero when requests can come from several threads of this process at once (the application asked for
 * MPI_THREAD_MULTIPLE, or a module started a thread of its own that makes requests): statistics then update
 * atomically. Read it freely; set it only through iotame_core_threads_started. */
extern int iotame__threaded;
/* Nesting depth of wrappers on this thread: MPI or HDF5 calling MPI_File_* from inside one of our wrappers
 * must reach the library directly, uncounted (Darshan's lesson). */
extern _Thread_local int iotame__depth __attribute__((tls_model("initial-exec")));

/* After PMPI_Init*: reads the environment and the configuration. A bad configuration stops every rank with
 * IOTAME_EXIT_BAD_CONFIG (or warns, with IOTAME_ON_ERROR=passthrough). */
void iotame_core_init(int thread_level);
/* Before PMPI_Finalize: reduces the statistics and writes them (rank 0). */
void iotame_core_finalize(void);

/* Partial statistics (core/partial.c): writes this process's own statistics to IOTAME_STATS.partial.RANK with
 * `reason` (and `signo`, 0 when no signal) when IOTAME_STATS is set, at most once per process, and never after
 * MPI_Finalize's write. Returns whether it wrote (attempted). */
int iotame_core_write_partial(const char *reason, int signo);
/* Waits up to `seconds` until every rank's partial statistics exist (each is renamed into place whole): a launcher
 * kills the other ranks as soon as one dies of a signal, so a rank that dies first must not take the others' with it. */
void iotame_core_await_partials(double seconds);
/* The watchdog's report (a JSON object) to IOTAME_STATS.hang.RANK when IOTAME_STATS is set. Builds nothing from
 * the statistics records, which other threads may be updating: safe while the job runs. Returns whether it wrote. */
int iotame_core_write_hang(json_t *report);
/* Before PMPI_Init: notes which fatal signals the application left at their default action. */
void iotame_partial_snapshot(void);
/* Installs the fatal-signal handlers (only where the application left the default action) and the exit hook. */
void iotame_partial_arm(void);
/* Restores the default action where our handlers are still installed (after MPI_Finalize's write). */
void iotame_partial_disarm(void);

/* Applies the `memory` section (defaults only; the settings' default without a configuration) at start-up. */
void iotame_memory_prepare(const iotame_config_t *cfg);
/* The malloc threshold applied at start-up, 0 when none was (statistics). */
long long iotame_memory_threshold(void);

/* The configuration, or NULL when there is none. */
const iotame_config_t *iotame_core_config(void);
int iotame_core_rank(void);
/* Whether the application asked for MPI_THREAD_MULTIPLE (its hooks may then run in several threads at once). */
int iotame_core_app_threaded(void);
/* A module started a thread of its own whose requests run beside the application's (every rank calls it alike, from
 * its start hook, so that every rank counts the same way). */
void iotame_core_threads_started(void);
/* posix.sync_at_close: a close of a file the process wrote makes its data durable first (MPI_File_close, close). */
int iotame_core_sync_at_close(void);

static inline uint64_t iotame_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Nonzero when timestamps are ticks of an invariant TSC. */
extern int iotame__tsc;

/* A timestamp for the hot path: the TSC costs a fraction of clock_gettime and every wrapper takes two; ticks
 * become nanoseconds with the rate measured over the whole job. */
static inline uint64_t iotame_now(void)
{
#if defined(__x86_64__)
    if (iotame__tsc) return __rdtsc();
#endif
    return iotame_monotonic_ns();
}

/* Node-shared memory (core/shm.c): a segment of `bytes`, created by the node's first process (`init` runs there on
 * the zeroed map before the others see it) and mapped by every process of `node`; its name is unique to the job
 * and node and unlinked once all have mapped it, so nothing is left behind whatever happens later (a segment left by
 * a job that died before, while still named, is removed here by the next job's first process of the node).
 * Collective over node; NULL on every process when any could not map it. */
void *iotame_node_shared(MPI_Comm node, size_t bytes, void (*init)(void *map, void *arg), void *arg);

/* Nanoseconds per iotame_now() tick (1 without a TSC). */
double iotame_ns_per_tick(void);

/* ---- MPI-3 libraries (Open MPI 4.1: MPI_VERSION 3) ----
 * The large-count functions (_c) are MPI-4. With an MPI-3 library the application cannot call them (no wrappers of
 * them are built), but the runtime's packing of a call's data stream takes MPI_Count sizes (nbytes may pass
 * INT_MAX even when the count does not): these do it with the int forms, in pieces of whole elements, and return
 * an MPI error code. defined under the MPI-4 names, so that the code using them (collective/route.c)
 * is one text for both kinds of library. */
#if MPI_VERSION < 4
int iotame__mpi3_pack(const void *inbuf, MPI_Count incount, MPI_Datatype datatype, void *outbuf, MPI_Count outsize,
                      MPI_Count *position, MPI_Comm comm);
int iotame__mpi3_unpack(const void *inbuf, MPI_Count insize, MPI_Count *position, void *outbuf, MPI_Count outcount,
                        MPI_Datatype datatype, MPI_Comm comm);
#define PMPI_Pack_c iotame__mpi3_pack
#define PMPI_Unpack_c iotame__mpi3_unpack
#endif

/* ---- the watchdog (core/watchdog.c, core/watch.h; docs/design/watchdog.md) ----
 * Each thread inside a call of the runtime keeps its record up to date at step boundaries: relaxed atomic stores
 * to its own record, no lock, nothing at all while runtime.hang_seconds is 0 (iotame__watch is then 0). */

#include "watch.h"


static inline iotame_where_t *iotame_where(void)
{
    if (__builtin_expect(!__atomic_load_n(&iotame__watch, __ATOMIC_RELAXED), 1)) return NULL;
    iotame_where_t *w = iotame__where;
    return w ? w : iotame__where_claim();
}

#define IOTAME__SET(w, field, v) __atomic_store_n(&(w)->field, (v), __ATOMIC_RELAXED)

static inline void iotame__where_bump(iotame_where_t *w)
{
    __atomic_store_n(&w->progress, __atomic_load_n(&w->progress, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

/* The thread enters the outermost call `call` of the runtime (a wrapper's name) / leaves it. */
static inline void iotame_where_enter(const char *call)
{
    iotame_where_t *w = iotame_where();
    if (!w) return;
    IOTAME__SET(w, file, NULL);
    IOTAME__SET(w, module, NULL);
    IOTAME__SET(w, step, NULL);
    IOTAME__SET(w, wait, IOTAME_WAIT_NONE);
    IOTAME__SET(w, call, call);
    iotame__where_bump(w);
}
static inline void iotame_where_leave(void)
{
    iotame_where_t *w = iotame_where();
    if (!w) return;
    IOTAME__SET(w, call, NULL);
    iotame__where_bump(w);
}
/* The file (its statistics record) the current call is about. */
static inline void iotame_where_file(const void *fs)
{
    iotame_where_t *w = iotame_where();
    if (w) IOTAME__SET(w, file, fs);
}

/* A step of a module: push returns what it replaces, pop restores it; both count as progress. A push outside any
 * call (a POSIX call the application made itself) makes `module`'s step the call (`call` named by the step). */
typedef struct {
    const char *module, *step;
    int entered;
} iotame_where_mark_t;

static inline iotame_where_mark_t iotame_where_push(const char *module, const char *step)
{
    iotame_where_mark_t m = {NULL, NULL, 0};
    iotame_where_t *w = iotame_where();
    if (!w) return m;
    m.module = w->module;
    m.step = w->step;
    if (!w->call) {
        IOTAME__SET(w, file, NULL);
        IOTAME__SET(w, call, step);
        m.entered = 1;
    }
    IOTAME__SET(w, wait, IOTAME_WAIT_NONE);
    IOTAME__SET(w, module, module);
    IOTAME__SET(w, step, step);
    iotame__where_bump(w);
    return m;
}
static inline void iotame_where_pop(iotame_where_mark_t m)
{
    iotame_where_t *w = iotame_where();
    if (!w) return;
    IOTAME__SET(w, wait, IOTAME_WAIT_NONE);
    IOTAME__SET(w, module, m.module);
    IOTAME__SET(w, step, m.step);
    if (m.entered) IOTAME__SET(w, call, NULL);
    iotame__where_bump(w);
}

/* The module and step in force, without counting progress: for hooks that do not wait (a hook that may wait pushes a
 * step of its own). */
static inline void iotame_where_module(const char *module, const char *step)
{
    iotame_where_t *w = iotame_where();
    if (!w) return;
    IOTAME__SET(w, wait, IOTAME_WAIT_NONE);
    IOTAME__SET(w, module, module);
    IOTAME__SET(w, step, step);
}

/* What the current step waits for (no progress: a wait loop calls it again with fresh figures). */
static inline void iotame_where_wait(iotame_wait_t kind, const char *what, int64_t a, int64_t b, int64_t c)
{
    iotame_where_t *w = iotame_where();
    if (!w) return;
    IOTAME__SET(w, what, what);
    IOTAME__SET(w, a, a);
    IOTAME__SET(w, b, b);
    IOTAME__SET(w, c, c);
    IOTAME__SET(w, wait, (int32_t)kind);
}

/* The runtime's own MPI calls that wait for other ranks, labelled while they run (only inside a call of the
 * runtime: outside one, e.g. the application's own MPI_Barrier through intercept/sync.c, nothing is recorded). */
static inline int iotame_where_coll_begin(const char *name, MPI_Comm comm)
{
    iotame_where_t *w = iotame_where();
    if (!w || !w->call || w->wait != IOTAME_WAIT_NONE) return 0;
    int n = 0;
    if (comm != MPI_COMM_NULL) PMPI_Comm_size(comm, &n);
    iotame_where_wait(IOTAME_WAIT_COLL, name, n, 0, 0);
    return 1;
}
static inline void iotame_where_coll_end(int begun)
{
    if (!begun) return;
    iotame_where_t *w = iotame_where();
    if (!w) return;
    IOTAME__SET(w, wait, IOTAME_WAIT_NONE);
    iotame__where_bump(w);
}
/* The first error code one of the runtime's own messages below returned in this thread since the last
 * iotame_msg_error_take(): a caller that agrees on its outcome (the collective router) turns it into the call's
 * MPI error on every rank instead of going on with what the message left behind. */
extern _Thread_local int iotame__msg_error;
static inline int iotame_msg_error_take(void)
{
    const int code = iotame__msg_error;
    iotame__msg_error = MPI_SUCCESS;
    return code;
}
#define IOTAME__WATCH_COLL(name, comm, expr)                                                                         \
    __extension__({                                                                                            \
        int iotame__begun = iotame_where_coll_begin(name, comm);                                                    \
        int iotame__rc = (expr);                                                                               \
        iotame_where_coll_end(iotame__begun);                                                                       \
        if (iotame__rc != MPI_SUCCESS && iotame__msg_error == MPI_SUCCESS) iotame__msg_error = iotame__rc;          \
        iotame__rc;                                                                                            \
    })
#ifndef IOTAME_NO_COLL_LABELS
#define PMPI_Allreduce(s, r, n, t, o, c) IOTAME__WATCH_COLL("MPI_Allreduce", c, PMPI_Allreduce(s, r, n, t, o, c))
#define PMPI_Bcast(b, n, t, root, c) IOTAME__WATCH_COLL("MPI_Bcast", c, PMPI_Bcast(b, n, t, root, c))
#define PMPI_Barrier(c) IOTAME__WATCH_COLL("MPI_Barrier", c, PMPI_Barrier(c))
#define PMPI_Allgather(s, sn, st, r, rn, rt, c) IOTAME__WATCH_COLL("MPI_Allgather", c, PMPI_Allgather(s, sn, st, r, rn, rt, c))
#define PMPI_Alltoall(s, sn, st, r, rn, rt, c) IOTAME__WATCH_COLL("MPI_Alltoall", c, PMPI_Alltoall(s, sn, st, r, rn, rt, c))
#define PMPI_Alltoallv(s, sc, sd, st, r, rc, rd, rt, c)                                                        \
    IOTAME__WATCH_COLL("MPI_Alltoallv", c, PMPI_Alltoallv(s, sc, sd, st, r, rc, rd, rt, c))
#define PMPI_Gather(s, sn, st, r, rn, rt, root, c)                                                             \
    IOTAME__WATCH_COLL("MPI_Gather", c, PMPI_Gather(s, sn, st, r, rn, rt, root, c))
#define PMPI_Gatherv(s, sn, st, r, rc, rd, rt, root, c)                                                        \
    IOTAME__WATCH_COLL("MPI_Gatherv", c, PMPI_Gatherv(s, sn, st, r, rc, rd, rt, root, c))
#define PMPI_Waitall(n, q, s) IOTAME__WATCH_COLL("MPI_Waitall", MPI_COMM_NULL, PMPI_Waitall(n, q, s))
#define PMPI_Wait(q, s) IOTAME__WATCH_COLL("MPI_Wait", MPI_COMM_NULL, PMPI_Wait(q, s))
#define PMPI_Waitsome(n, q, o, i, s) IOTAME__WATCH_COLL("MPI_Waitsome", MPI_COMM_NULL, PMPI_Waitsome(n, q, o, i, s))
#endif

/* Starts the watchdog thread when runtime.hang_seconds > 0 (MPI_Init, after the configuration); stops and joins it
 * (MPI_Finalize, first). Never blocks for long: the thread looks at a stop flag at least every second. */
void iotame_watchdog_start(const iotame_config_t *cfg);
void iotame_watchdog_stop(void);
/* The report, if the watchdog made one, as a JSON object for the partial statistics ("hang"); NULL otherwise. */
json_t *iotame_watchdog_json(void);

/* ---- logging (stderr; info only with IOTAME_VERBOSE=1, and only rank 0 unless all=1) ---- */

void iotame_log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void iotame_log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- hints: the configuration's mpiio_hints merged into the application's MPI_Info ---- */

/* A new info (free with PMPI_Info_free) holding the user's hints and the configured ones: the user's win
 * unless fc->override. Returns MPI_SUCCESS, or an MPI error code (then *merged is MPI_INFO_NULL). */
int iotame_hints_merge(MPI_Info user, const iotame_file_config_t *fc, MPI_Info *merged);

/* ---- statistics ---- */

/* Every operation we count, with its time category. The large-count (_c) forms count as their plain name. */
#define IOTAME_OPS(X)                                                                                          \
    X(open, META) X(close, META) X(delete, META) X(sync, SYNC) X(set_size, META) X(preallocate, META)           \
    X(set_info, META) X(get_info, META) X(set_view, META) X(seek, META) X(seek_shared, META)                   \
    X(get_size, META) X(set_atomicity, META)                                                                   \
    X(read, READ) X(read_at, READ) X(read_all, READ) X(read_at_all, READ) X(read_shared, READ)                 \
    X(read_ordered, READ) X(iread, READ) X(iread_at, READ) X(iread_all, READ) X(iread_at_all, READ)            \
    X(iread_shared, READ) X(read_all_begin, READ) X(read_all_end, READ) X(read_at_all_begin, READ)             \
    X(read_at_all_end, READ) X(read_ordered_begin, READ) X(read_ordered_end, READ)                             \
    X(write, WRITE) X(write_at, WRITE) X(write_all, WRITE) X(write_at_all, WRITE) X(write_shared, WRITE)       \
    X(write_ordered, WRITE) X(iwrite, WRITE) X(iwrite_at, WRITE) X(iwrite_all, WRITE) X(iwrite_at_all, WRITE)  \
    X(iwrite_shared, WRITE) X(write_all_begin, WRITE) X(write_all_end, WRITE) X(write_at_all_begin, WRITE)     \
    X(write_at_all_end, WRITE) X(write_ordered_begin, WRITE) X(write_ordered_end, WRITE)

#define IOTAME_OP_ENUM(name, cat) IOTAME_OP_##name,
typedef enum { IOTAME_OPS(IOTAME_OP_ENUM) IOTAME_OP_COUNT } iotame_op_t;
#undef IOTAME_OP_ENUM

typedef enum { IOTAME_CAT_READ, IOTAME_CAT_WRITE, IOTAME_CAT_SYNC, IOTAME_CAT_META, IOTAME_CAT_COUNT } iotame_cat_t;

#define IOTAME_HIST_BUCKETS 65 /* 0 bytes, then [2^k, 2^(k+1)) for k = 0..63 */

typedef struct iotame_file_stats iotame_file_stats_t;

/* The record of `path` (created on first use; the same path opened again shares it). NULL on ENOMEM. */
iotame_file_stats_t *iotame_stats_file(const char *path);
/* Sets the rule and hints that applied to the file (for the statistics). */
void iotame_stats_set_config(iotame_file_stats_t *fs, const iotame_file_config_t *fc);
/* Records the hints the MPI library reports for an open file (MPI_File_get_info), once per file: what it took of the
 * configured ones and its own defaults ("hints_taken" in the statistics). */
void iotame_stats_set_taken(iotame_file_stats_t *fs, MPI_File fh);
/* Counts one data call: its duration in iotame_now() ticks and the bytes it moved (also into the histogram). */
void iotame_stats_record(iotame_file_stats_t *fs, iotame_op_t op, uint64_t ticks, uint64_t bytes);
/* Counts one call that moves no bytes of its own (metadata, sync, the _end of a split collective). */
void iotame_stats_record_time(iotame_file_stats_t *fs, iotame_op_t op, uint64_t ticks);
/* Counts a call of op that returned rc when rc is an error (ops[op].errors in the statistics). */
void iotame_stats_record_error(iotame_file_stats_t *fs, iotame_op_t op, int rc);
/* The path a record was created for. */
const char *iotame_stats_path(const iotame_file_stats_t *fs);
/* The record's statistics section of module m (a JSON object created on first use; NULL when fs is NULL or on
 * ENOMEM), which the module fills with what it did. The module serializes its own updates; the sections of every
 * rank are reduced at MPI_Finalize by the module's `merge` hook and written by its `report` hook (core/module.h). */
typedef struct iotame_module iotame_module_t;
json_t *iotame_stats_section(iotame_file_stats_t *fs, const iotame_module_t *m);
/* A module's job-wide section on this rank (created empty at first use): what is not about one file, such as the
 * throttle's phases or the emulated device. Reduced by the module's job_report hook into "modules"/<name>. */
json_t *iotame_stats_job_section(const iotame_module_t *m);
/* Counts a reason for passing a call through (per file when fs is given, else for the job). */
void iotame_stats_passthrough(iotame_file_stats_t *fs, const char *reason);
/* Reduces every rank's records to rank 0 and writes the JSON statistics there. Collective. */
void iotame_stats_write(MPI_Comm comm, const char *path, double wall_seconds, const char *config_path,
                        const char *config_error);
/* This process's own statistics (nprocs 1, built as above) to PATH.partial.RANK with a top-level "partial":
 * {"reason", "rank", "job_nprocs", "signal" (signo, or null when 0)}, for a process that cannot reach MPI_Finalize. Not
 * collective; not async-signal-safe (core/partial.c bounds it with an alarm inside a signal handler). */
void iotame_stats_write_partial(const char *path, int rank, int job_nprocs, double wall, const char *config_path,
                                const char *config_error, const char *reason, int signo);

#endif
