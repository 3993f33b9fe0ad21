/* Partial statistics: a process that cannot reach the collective write at MPI_Finalize (a fatal signal, an exit
 * before MPI_Finalize; MPI_Abort is wrapped in intercept/init.c) writes its own (docs/formats.md "Partial
 * statistics"). Nothing here may change how the job ends: handlers are installed only where the application left
 * the default action before MPI_Init (a handler of the MPI library's stack, UCX's installed when it is loaded or
 * Open MPI's installed in MPI_Init, is chained: it takes the signal after us), and a handled signal goes on once
 * the statistics are written (a fault happens again, another signal is raised again). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"

/* Building the JSON takes locks (malloc, the records'): a handler interrupting a holder would wait forever, so
 * an alarm ends the wait by letting the first signal kill the process as it would have. */
#define PARTIAL_ALARM_SECONDS 3
/* A job ended by SIGINT or SIGTERM gets them on every rank at once: each waits this long at most for the others'
 * statistics before the signal goes on (docs/formats.md, "Partial statistics"). */
#define PARTIAL_PEERS_SECONDS 2.0

static const int partial_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT};
#define PARTIAL_NSIGNALS (sizeof partial_signals / sizeof partial_signals[0])
static const char *const partial_names[PARTIAL_NSIGNALS] = {"SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL",
                                                             "SIGABRT", "SIGTERM", "SIGINT"};
static int partial_installed[PARTIAL_NSIGNALS]; /* the handler of ours is installed for that signal */
static int partial_snapshot_taken, partial_app_default[PARTIAL_NSIGNALS]; /* before PMPI_Init: the application's */
static struct sigaction partial_saved[PARTIAL_NSIGNALS]; /* what ours replaced (the default, or the MPI library's) */
static int partial_first;                       /* the first fatal signal handled (the alarm raises it) */

static size_t partial_index(int sig)
{
    for (size_t i = 0; i < PARTIAL_NSIGNALS; i++)
        if (partial_signals[i] == sig) return i;
    return 0;
}

/* The alarm: the statistics could not be written in time; the first signal's default action ends the process. */
static void partial_on_alarm(int sig)
{
    (void)sig;
    int first = __atomic_load_n(&partial_first, __ATOMIC_ACQUIRE);
    signal(first, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, first);
    raise(first);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

static void partial_on_signal(int sig, siginfo_t *info, void *context)
{
    (void)context;
    int saved = errno, expected = 0;
    size_t i = partial_index(sig);
    if (__atomic_compare_exchange_n(&partial_first, &expected, sig, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = partial_on_alarm;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGALRM, &sa, NULL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGALRM);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
        alarm(PARTIAL_ALARM_SECONDS);
        char reason[128];
        snprintf(reason, sizeof reason, "signal %d (%s) on rank %d", sig, partial_names[i], iotame_core_rank());
        const int written = iotame_core_write_partial(reason, sig);
        alarm(0);
        if (written && (sig == SIGINT || sig == SIGTERM)) iotame_core_await_partials(PARTIAL_PEERS_SECONDS);
    }
    /* As without us: the action we replaced (the default, or the MPI library's handler) takes the signal. A fault
     * the kernel raised happens again when this handler returns, with its own siginfo; any other signal is raised
     * again (blocked until this handler returns). */
    sigaction(sig, &partial_saved[i], NULL);
    int fault = info && info->si_code > 0 && (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL);
    if (!fault) raise(sig);
    errno = saved;
}

/* Whether a handler belongs to the MPI library's stack rather than to the application: those libraries install
 * theirs when they are loaded, before main (UCX prints a backtrace), and are chained behind ours. */
static int partial_library_handler(const struct sigaction *sa)
{
    static const char *const libraries[] = {"libucs", "libucm", "libuct", "libucp", "libfabric", "libmpi",
                                            "libopen-pal", "libpmix", "libpsm"};
    void *h = (sa->sa_flags & SA_SIGINFO) ? (void *)sa->sa_sigaction : (void *)sa->sa_handler;
    Dl_info info;
    if (h == (void *)SIG_DFL || h == (void *)SIG_IGN || !dladdr(h, &info) || !info.dli_fname) return 0;
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    for (size_t i = 0; i < sizeof libraries / sizeof libraries[0]; i++)
        if (strncmp(base, libraries[i], strlen(libraries[i])) == 0) return 1;
    return 0;
}

void iotame_partial_snapshot(void)
{
    if (partial_snapshot_taken) return; /* an MPI whose PMPI_Init calls MPI_Init_thread: the first look counts */
    for (size_t i = 0; i < PARTIAL_NSIGNALS; i++) {
        struct sigaction cur;
        partial_app_default[i] = sigaction(partial_signals[i], NULL, &cur) == 0 &&
                                 ((!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL) ||
                                  partial_library_handler(&cur));
    }
    partial_snapshot_taken = 1;
}

static void partial_on_exit(int status, void *arg)
{
    (void)arg;
    char reason[128];
    snprintf(reason, sizeof reason, "exited with status %d before MPI_Finalize on rank %d", status,
             iotame_core_rank());
    iotame_core_write_partial(reason, 0);
}

void iotame_partial_arm(void)
{
    /* An alternate stack, unless the application set one: a SIGSEGV from a stack overflow needs it. */
    stack_t old;
    if (sigaltstack(NULL, &old) == 0 && (old.ss_flags & SS_DISABLE)) {
        size_t size = 256 * 1024; /* building the JSON (modules' report hooks, jansson) runs on it */
        stack_t st = {.ss_sp = malloc(size), .ss_size = size, .ss_flags = 0};
        if (st.ss_sp && sigaltstack(&st, NULL) != 0) free(st.ss_sp);
    }
    for (size_t i = 0; i < PARTIAL_NSIGNALS; i++) {
        struct sigaction cur;
        if (sigaction(partial_signals[i], NULL, &cur) != 0) continue;
        int app_default = partial_snapshot_taken ? partial_app_default[i]
                                                 : (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL) ||
                                                       partial_library_handler(&cur);
        if (!app_default) continue; /* the application's handler (or ignore): kept */
        partial_saved[i] = cur; /* the default, or a handler the MPI library installed in MPI_Init (UCX's) */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = partial_on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
        partial_installed[i] = sigaction(partial_signals[i], &sa, NULL) == 0;
    }
    static int registered; /* on_exit handlers cannot be removed: one for the process's life */
    if (!registered) registered = on_exit(partial_on_exit, NULL) == 0;
}

void iotame_partial_disarm(void)
{
    for (size_t i = 0; i < PARTIAL_NSIGNALS; i++) {
        struct sigaction cur;
        if (!partial_installed[i] || sigaction(partial_signals[i], NULL, &cur) != 0) continue;
        if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == partial_on_signal)
            sigaction(partial_signals[i], &partial_saved[i], NULL);
        partial_installed[i] = 0;
    }
}
