/* The runtime's life cycle: environment, configuration (read on rank 0, broadcast, validated everywhere so
 * every rank takes the same decision) and the statistics written at MPI_Finalize. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "core.h"
#include "iotame.h"
#include "module.h"

int iotame__active;
int iotame__tsc;
int iotame__builtin_sizes;
int iotame__threaded;
_Thread_local int iotame__depth;

static struct {
    MPI_Comm comm; /* our own duplicate of MPI_COMM_WORLD: our messages never meet the application's */
    int rank, nprocs;
    uint64_t start_ns, start_tick;
    iotame_config_t *config;
    char *config_path;
    char *config_error; /* why the configuration was ignored (IOTAME_ON_ERROR=passthrough) */
    char *stats_path;
    int app_threaded;  /* the application asked for MPI_THREAD_MULTIPLE */
    int sync_at_close; /* posix.sync_at_close (the defaults', else the setting's default) */
    pid_t pid;         /* the process that called MPI_Init: a forked child never writes partial statistics */
    int written;       /* statistics written (partial, or MPI_Finalize's): claimed atomically, once */
} rt = {.comm = MPI_COMM_NULL};

const char *iotame_version(void) { return IOTAME_VERSION; }
const iotame_config_t *iotame_core_config(void) { return rt.config; }
int iotame_core_rank(void) { return rt.rank; }
int iotame_core_app_threaded(void) { return rt.app_threaded; }
int iotame_core_sync_at_close(void) { return rt.sync_at_close; }
void iotame_core_threads_started(void) { __atomic_store_n(&iotame__threaded, 1, __ATOMIC_RELEASE); }

static int env_is(const char *name, const char *value)
{
    const char *v = getenv(name);
    return v && strcmp(v, value) == 0;
}

static char *dup_env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? strdup(v) : NULL;
}

/* Rank 0 reads the file; everybody receives the same bytes (or the same read error). */
static char *broadcast_file(const char *path, size_t *len, char **errors)
{
    char *text = NULL;
    long long n = 0;
    if (rt.rank == 0) {
        size_t got = 0;
        if (iotame_config_read_file(path, &text, &got, errors) == 0) n = (long long)got;
        else n = -1;
    }
    PMPI_Bcast(&n, 1, MPI_LONG_LONG, 0, rt.comm);
    if (n < 0) {
        if (rt.rank != 0) *errors = strdup("unreadable");
        return NULL;
    }
    if (rt.rank != 0) text = malloc((size_t)n + 1);
    /* Every rank joins the broadcast even when its allocation failed: a receive buffer is still needed. */
    char scratch;
    PMPI_Bcast(text ? text : &scratch, text ? (int)n : 0, MPI_CHAR, 0, rt.comm);
    if (!text) return NULL;
    text[n] = '\0';
    *len = (size_t)n;
    return text;
}

/* FNV-1a of a string ("" for none): equal names give equal values on every rank. */
static uint64_t init_name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; s && *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Warns (rank 0) when the ranks were not given the same IOTAME_CONFIG: rank 0's is every rank's, and a job launched
 * with per-rank environments would otherwise run under a configuration some ranks were not given. */
static void init_config_agreement(void)
{
    uint64_t h = init_name_hash(rt.config_path), mine[2] = {h, ~h}, all[2];
    PMPI_Allreduce(mine, all, 2, MPI_UINT64_T, MPI_MAX, rt.comm);
    if (rt.rank == 0 && all[0] != ~all[1])
        fprintf(stderr, "iotame: warning: %s differs between ranks: every rank uses rank 0's (%s)\n",
                IOTAME_ENV_CONFIG, rt.config_path ? rt.config_path : "none");
}

static void load_config(void)
{
    /* Rank 0's environment decides, so that no rank waits in a broadcast the others skip. */
    rt.config_path = dup_env(IOTAME_ENV_CONFIG);
    init_config_agreement();
    int has = rt.config_path != NULL;
    PMPI_Bcast(&has, 1, MPI_INT, 0, rt.comm);
    if (!has) {
        free(rt.config_path);
        rt.config_path = NULL;
        return;
    }
    if (!rt.config_path) rt.config_path = strdup("IOTAME_CONFIG of rank 0");
    char *errors = NULL;
    size_t len = 0;
    char *text = broadcast_file(rt.config_path, &len, &errors);
    if (text) iotame_config_parse(rt.config_path, text, len, &rt.config, &errors);
    free(text);
    if (rt.config) {
        iotame_log_info("iotame: configuration %s: %zu file rule(s)\n", rt.config_path, rt.config->nrules);
        return;
    }
    if (!errors) errors = strdup("iotame: out of memory reading the configuration\n");
    /* Every rank saw the same bytes, so every rank reaches this point: the decision is shared. */
    if (env_is(IOTAME_ENV_ON_ERROR, "passthrough")) {
        if (rt.rank == 0)
            fprintf(stderr, "%siotame: warning: running without configuration (IOTAME_ON_ERROR=passthrough)\n",
                    errors);
        errors[strcspn(errors, "\n")] = '\0'; /* the statistics keep the first problem */
        rt.config_error = errors;
        return;
    }
    if (rt.rank == 0)
        fprintf(stderr, "%siotame: stopping before any I/O (set IOTAME_ON_ERROR=passthrough to run without it)\n",
                errors);
    fflush(stderr);
    free(errors);
    PMPI_Barrier(rt.comm);
    PMPI_Finalize();
    exit(IOTAME_EXIT_BAD_CONFIG);
}

/* Checks that MPICH's builtin handles carry their size in bits 8-15 before the wrappers rely on it. */
static int builtin_sizes_encoded(void)
{
#if defined(MPICH)
    const MPI_Datatype types[] = {MPI_BYTE, MPI_CHAR, MPI_SHORT, MPI_INT, MPI_LONG, MPI_FLOAT, MPI_DOUBLE,
                                  MPI_LONG_DOUBLE, MPI_INT64_T, MPI_UINT8_T, MPI_C_DOUBLE_COMPLEX};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        unsigned h = (unsigned)types[i];
        MPI_Count size;
        if ((h >> 30) != 1u || PMPI_Type_size_x(types[i], &size) != MPI_SUCCESS || size != (MPI_Count)((h >> 8) & 0xffu))
            return 0;
    }
    return 1;
#else
    return 0;
#endif
}

/* An invariant TSC ticks at a constant rate on every core, in every power state. */
static int invariant_tsc(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    return __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8));
#else
    return 0;
#endif
}

double iotame_ns_per_tick(void)
{
    if (!iotame__tsc) return 1.0;
    /* The longer the interval, the better the rate: the whole job, but at least 20 ms. */
    uint64_t ns;
    while ((ns = iotame_monotonic_ns() - rt.start_ns) < 20000000u) {}
    uint64_t ticks = iotame_now() - rt.start_tick;
    return ticks ? (double)ns / (double)ticks : 1.0;
}

void iotame_core_init(int thread_level)
{
    if (env_is(IOTAME_ENV_DISABLE, "1")) return;
    iotame__tsc = invariant_tsc();
    iotame__builtin_sizes = builtin_sizes_encoded();
    rt.start_ns = iotame_monotonic_ns();
    rt.start_tick = iotame_now();
    rt.app_threaded = iotame__threaded = thread_level == MPI_THREAD_MULTIPLE;
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &rt.comm) != MPI_SUCCESS) return; /* stay a pass-through */
    PMPI_Comm_rank(rt.comm, &rt.rank);
    PMPI_Comm_size(rt.comm, &rt.nprocs);
    load_config();
    const iotame_file_config_t process = {.defaults = rt.config ? &rt.config->defaults : NULL};
    rt.sync_at_close = json_is_true(iotame_config_setting(rt.config ? &process : NULL, "posix", "sync_at_close"));
    iotame_memory_prepare(rt.config);
    rt.stats_path = dup_env(IOTAME_ENV_STATS);
    iotame_modules_start(rt.config);
    iotame_watchdog_start(rt.config);
    iotame__active = 1;
    rt.pid = getpid();
    if (rt.stats_path) {
        char stale[4096]; /* an earlier job's partial statistics of this rank must not be read as this job's */
        snprintf(stale, sizeof stale, "%s.partial.%d", rt.stats_path, rt.rank);
        remove(stale);
        snprintf(stale, sizeof stale, "%s.hang.%d", rt.stats_path, rt.rank);
        remove(stale);
        iotame_partial_arm();
    }
}

int iotame_core_write_partial(const char *reason, int signo)
{
    if (!rt.stats_path || getpid() != rt.pid) return 0;
    if (__atomic_exchange_n(&rt.written, 1, __ATOMIC_ACQ_REL)) return 0;
    double wall = (double)(iotame_monotonic_ns() - rt.start_ns) * 1e-9;
    iotame_stats_write_partial(rt.stats_path, rt.rank, rt.nprocs, wall, rt.config_path, rt.config_error, reason,
                               signo);
    return 1;
}

void iotame_core_await_partials(double seconds)
{
    if (!rt.stats_path || rt.nprocs <= 1) return;
    const struct timespec step = {0, 20 * 1000 * 1000};
    for (double waited = 0; waited < seconds; waited += 0.02) {
        int missing = 0;
        for (int r = 0; r < rt.nprocs && !missing; r++) {
            char path[4096];
            snprintf(path, sizeof path, "%s.partial.%d", rt.stats_path, r);
            missing = access(path, F_OK) != 0;
        }
        if (!missing) return;
        nanosleep(&step, NULL);
    }
}

int iotame_core_write_hang(json_t *report)
{
    if (!rt.stats_path || getpid() != rt.pid) return 0;
    char target[4096], tmp[4200];
    snprintf(target, sizeof target, "%s.hang.%d", rt.stats_path, rt.rank);
    snprintf(tmp, sizeof tmp, "%s.tmp%d", target, (int)getpid());
    if (json_dump_file(report, tmp, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0 || rename(tmp, target) != 0) {
        remove(tmp);
        return 0;
    }
    return 1;
}

void iotame_core_finalize(void)
{
    if (!iotame__active) return;
    iotame_watchdog_stop(); /* first: nothing below is watched, and the thread is gone before the write */
    iotame__active = 0; /* the modules' last work and the reductions below must not count themselves */
    iotame_modules_finalize();
    double wall = (double)(iotame_monotonic_ns() - rt.start_ns) * 1e-9;
    /* A process killed during the collective write below still writes its partial statistics. */
    if (rt.stats_path && !__atomic_load_n(&rt.written, __ATOMIC_ACQUIRE))
        iotame_stats_write(rt.comm, rt.stats_path, wall, rt.config_path, rt.config_error);
    __atomic_store_n(&rt.written, 1, __ATOMIC_RELEASE);
    if (rt.stats_path) iotame_partial_disarm();
    PMPI_Comm_free(&rt.comm);
    iotame_config_free(rt.config);
    rt.config = NULL;
}
