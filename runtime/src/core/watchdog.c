/* The watchdog (docs/design/watchdog.md): one thread per process that looks at every thread's "where am I" record
 * (core/watch.h) about once a second and, when one has stayed inside a call of the runtime without progress for
 * runtime.hang_seconds, reports once: a line on stderr, the same in IOTAME_STATS.hang.RANK at once and in the
 * partial statistics whenever the process writes them (a fatal signal, an exit, MPI_Abort), and, with
 * runtime.hang_backtrace, the stuck thread's stack. The statistics records are not read here: other threads may be
 * updating them.
 * It never ends the job unless runtime.hang_action is "abort". The hot path takes no lock: records are updated with
 * relaxed atomic stores by their owners and read here with relaxed loads. */
#define _GNU_SOURCE
#include <errno.h>
#include <execinfo.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core.h"

static iotame_watch_seen_t watch_seen[IOTAME_WATCH_SLOTS]; /* the watchdog thread's own */
#define watch_slots iotame__watch_slots

static struct {
    pthread_t thread;
    int running;
    pthread_mutex_t lock; /* only the watchdog thread and start/stop take it: never a wrapper */
    pthread_cond_t cond;
    int stop;
    uint64_t hang_ns;
    int abort_job, backtrace;
    pid_t pid;
    int reported;   /* once per process */
    json_t *report; /* the report, for the partial statistics (set once, before `reported`) */
} wd = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

/* ---- the stuck thread's stack (runtime.hang_backtrace) ---- */

static int watch_stack_signal; /* 0: none installed */
static int watch_stack_done;   /* the stuck thread wrote its stack */

/* Runs on the stuck thread: backtrace() was called once at start, so it allocates nothing here. */
static void watch_on_stack_signal(int sig)
{
    (void)sig;
    int saved = errno;
    void *frames[64];
    int n = backtrace(frames, 64);
    static const char head[] = "iotame: watchdog: the stuck thread's stack:\n";
    ssize_t ignored = write(STDERR_FILENO, head, sizeof head - 1);
    (void)ignored;
    backtrace_symbols_fd(frames, n, STDERR_FILENO);
    __atomic_store_n(&watch_stack_done, 1, __ATOMIC_RELEASE);
    errno = saved;
}

/* A real-time signal whose action the application left at the default, or 0. */
static int watch_stack_install(void)
{
    void *frames[4];
    backtrace(frames, 4); /* loads libgcc now, not in the handler */
    for (int sig = SIGRTMAX - 1; sig > SIGRTMIN + 2; sig--) {
        struct sigaction cur;
        if (sigaction(sig, NULL, &cur) != 0 || (cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL) continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = watch_on_stack_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        if (sigaction(sig, &sa, NULL) == 0) return sig;
    }
    return 0;
}

/* ---- the report ---- */

static void watch_report(const iotame_where_t *w, uint64_t stuck_ns)
{
    char waits[512], kernel[PATH_MAX + 256], line[1400 + sizeof kernel];
    iotame_watch_describe_wait(w, waits, sizeof waits);
    iotame_watch_kernel((int)w->tid, kernel, sizeof kernel);
    const char *path = w->file ? iotame_stats_path((const iotame_file_stats_t *)w->file) : NULL;
    double seconds = (double)stuck_ns * 1e-9;
    snprintf(line, sizeof line,
             "iotame: watchdog: rank %d (pid %d, thread %d) has made no progress for %.0f s in %s on %s, "
             "module %s, step %s%s%s%s%s\n",
             iotame_core_rank(), (int)wd.pid, (int)w->tid, seconds, w->call, path ? path : "no file",
             w->module ? w->module : "none", w->step ? w->step : "none", waits[0] ? ", waiting for " : "", waits,
             kernel[0] ? "; in the kernel: " : "", kernel);
    ssize_t ignored = write(STDERR_FILENO, line, strlen(line));
    (void)ignored;
    json_t *r = json_pack("{s:i,s:i,s:f,s:s,s:s?,s:s?,s:s?,s:s?,s:s?,s:s}", "rank", iotame_core_rank(), "thread",
                          (int)w->tid, "seconds", seconds, "call", w->call, "file", path, "module", w->module,
                          "step", w->step, "waits_for", waits[0] ? waits : NULL, "kernel",
                          kernel[0] ? kernel : NULL, "action", wd.abort_job ? "abort" : "report");
    __atomic_store_n(&wd.report, r, __ATOMIC_RELEASE);
    if (wd.backtrace && watch_stack_signal &&
        syscall(SYS_tgkill, (int)wd.pid, (int)w->tid, watch_stack_signal) == 0 && wd.abort_job) {
        /* SIGABRT, a lower signal, would be taken first: the stack is given 2 s to be written */
        struct timespec pause = {0, 10000000};
        for (int i = 0; i < 200 && !__atomic_load_n(&watch_stack_done, __ATOMIC_ACQUIRE); i++) nanosleep(&pause, NULL);
    }
    if (r) iotame_core_write_hang(r);
    if (wd.abort_job) {
        static const char msg[] = "iotame: watchdog: runtime.hang_action is abort: ending the process\n";
        ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
        kill(wd.pid, SIGABRT); /* blocked in this thread: another one takes it (the partial statistics' handler) */
    }
}

/* One look at every record; returns whether it reported. */
static int watch_look(uint64_t now)
{
    for (int i = 0; i < IOTAME_WATCH_SLOTS; i++) {
        iotame_where_t *s = &watch_slots[i];
        if (!__atomic_load_n(&s->used, __ATOMIC_ACQUIRE)) {
            watch_seen[i].inside = 0;
            continue;
        }
        uint64_t p = __atomic_load_n(&s->progress, __ATOMIC_RELAXED);
        const char *call = __atomic_load_n(&s->call, __ATOMIC_RELAXED);
        if (!iotame_watch_stuck(&watch_seen[i], call != NULL, p, now, wd.hang_ns)) continue;
        iotame_where_t copy = {
            .call = call,
            .file = __atomic_load_n(&s->file, __ATOMIC_RELAXED),
            .module = __atomic_load_n(&s->module, __ATOMIC_RELAXED),
            .step = __atomic_load_n(&s->step, __ATOMIC_RELAXED),
            .what = __atomic_load_n(&s->what, __ATOMIC_RELAXED),
            .wait = __atomic_load_n(&s->wait, __ATOMIC_RELAXED),
            .tid = __atomic_load_n(&s->tid, __ATOMIC_RELAXED),
            .a = __atomic_load_n(&s->a, __ATOMIC_RELAXED),
            .b = __atomic_load_n(&s->b, __ATOMIC_RELAXED),
            .c = __atomic_load_n(&s->c, __ATOMIC_RELAXED),
        };
        if (__atomic_load_n(&s->progress, __ATOMIC_RELAXED) != p) continue; /* moved meanwhile: not stuck */
        watch_report(&copy, now - watch_seen[i].since_ns);
        return 1;
    }
    return 0;
}

static void *watch_run(void *arg)
{
    (void)arg;
    /* A look every second at most, four per hang_seconds at least. */
    uint64_t period = wd.hang_ns / 4;
    if (period > 1000000000ull) period = 1000000000ull;
    if (period < 50000000ull) period = 50000000ull;
    pthread_mutex_lock(&wd.lock);
    while (!wd.stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        uint64_t ns = (uint64_t)until.tv_nsec + period;
        until.tv_sec += (time_t)(ns / 1000000000ull);
        until.tv_nsec = (long)(ns % 1000000000ull);
        pthread_cond_timedwait(&wd.cond, &wd.lock, &until);
        if (wd.stop || wd.reported) continue;
        pthread_mutex_unlock(&wd.lock);
        int reported = watch_look(iotame_monotonic_ns());
        pthread_mutex_lock(&wd.lock);
        if (reported) wd.reported = 1;
    }
    pthread_mutex_unlock(&wd.lock);
    return NULL;
}

/* A forked child has no watchdog thread: it neither joins nor keeps records. */
static void watch_after_fork(void)
{
    wd.running = 0;
    __atomic_store_n(&iotame__watch, 0, __ATOMIC_RELAXED);
}

void iotame_watchdog_start(const iotame_config_t *cfg)
{
    const iotame_file_config_t process = {.defaults = cfg ? &cfg->defaults : NULL};
    const iotame_file_config_t *fc = cfg ? &process : NULL;
    const json_t *v = iotame_config_setting(fc, "runtime", "hang_seconds");
    double seconds = json_number_value(v ? v : iotame_config_default("runtime", "hang_seconds"));
    if (!(seconds > 0) || wd.running) return;
    v = iotame_config_setting(fc, "runtime", "hang_action");
    const char *action = json_string_value(v ? v : iotame_config_default("runtime", "hang_action"));
    v = iotame_config_setting(fc, "runtime", "hang_backtrace");
    wd.backtrace = json_is_true(v ? v : iotame_config_default("runtime", "hang_backtrace"));
    wd.abort_job = action && strcmp(action, "abort") == 0;
    wd.hang_ns = (uint64_t)(seconds * 1e9);
    wd.pid = getpid();
    wd.stop = 0;
    static int cond_ready; /* the cond's clock is the monotonic one, as watch_run's deadlines */
    if (!cond_ready) {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&wd.cond, &ca);
        pthread_condattr_destroy(&ca);
        cond_ready = 1;
    }
    if (wd.backtrace && !watch_stack_signal) watch_stack_signal = watch_stack_install();
    static int atfork;
    if (!atfork) atfork = pthread_atfork(NULL, NULL, watch_after_fork) == 0;
    /* The thread takes no signal: the application's and the partial statistics' handlers run elsewhere. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    __atomic_store_n(&iotame__watch, 1, __ATOMIC_RELAXED);
    wd.running = pthread_create(&wd.thread, NULL, watch_run, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!wd.running) __atomic_store_n(&iotame__watch, 0, __ATOMIC_RELAXED);
}

void iotame_watchdog_stop(void)
{
    if (!wd.running || getpid() != wd.pid) return;
    pthread_mutex_lock(&wd.lock);
    wd.stop = 1;
    pthread_cond_signal(&wd.cond);
    pthread_mutex_unlock(&wd.lock);
    pthread_join(wd.thread, NULL);
    wd.running = 0;
    __atomic_store_n(&iotame__watch, 0, __ATOMIC_RELAXED);
}

json_t *iotame_watchdog_json(void)
{
    json_t *r = __atomic_load_n(&wd.report, __ATOMIC_ACQUIRE);
    return r ? json_deep_copy(r) : NULL;
}
