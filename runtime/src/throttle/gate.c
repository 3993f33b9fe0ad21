/* The gate: at most `level` of the node's processes inside a request on one target and direction, in arrival
 * order. A ticket lock generalized to k holders: each request takes the next ticket and enters once fewer than its
 * level of the tickets before it are still out (t - done < level), so the count inside never exceeds the level and
 * nobody is overtaken. The robust mutex is held only to update the counters, never across a request. Waiters sleep
 * on a futex (no spinning), not on a process-shared condition variable: a process killed while waiting on one of
 * those leaves glibc's condition variable waiting for it (its group reference is never dropped), and the next
 * broadcast hangs with the mutex held; a futex keeps no state of its waiters.
 *
 * A process that dies inside a request (or while waiting) never gives its ticket back and would block the others:
 * after stall_seconds without any ticket given back, a waiter gives one back for it (a bypass, counted in the
 * statistics) and the queue moves on. Time alone cannot tell a dead holder from a slow one, so the gate keeps the
 * tickets out in a table, and the bypass marks the one it gave back: a ticket whose process is gone if there is
 * one, else the oldest holder's. A marked holder that leaves after all gives nothing back, so every ticket is given
 * back once: a dead holder's bypass counts for good, a slow holder's only until it leaves. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "throttle.h"

int throttle_gate_init(throttle_gate_t *g)
{
    pthread_mutexattr_t ma;
    int rc = pthread_mutexattr_init(&ma);
    if (!rc) rc = pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    if (!rc) rc = pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    if (!rc) rc = pthread_mutex_init(&g->lock, &ma);
    pthread_mutexattr_destroy(&ma);
    if (rc) return rc;
    __atomic_store_n(&g->ready, 1, __ATOMIC_RELEASE);
    return 0;
}

static void gate_lock(throttle_gate_t *g)
{
    if (pthread_mutex_lock(&g->lock) == EOWNERDEAD) pthread_mutex_consistent(&g->lock);
}

/* Wakes every waiter (the lock held): they look at the counters again. */
static void gate_wake(throttle_gate_t *g)
{
    __atomic_add_fetch(&g->turn, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, &g->turn, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Sleeps until a wake or `ns` have passed, the lock released meanwhile. */
static void gate_sleep(throttle_gate_t *g, uint64_t ns)
{
    uint32_t turn = __atomic_load_n(&g->turn, __ATOMIC_ACQUIRE);
    struct timespec rel = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    g->waiting++;
    pthread_mutex_unlock(&g->lock);
    syscall(SYS_futex, &g->turn, FUTEX_WAIT, turn, &rel, NULL, 0); /* returns at once if a wake came between */
    gate_lock(g);
    g->waiting--;
}

/* The target is busy while a process waits for or is inside a request: the controller's time base. */
static void gate_busy_begin(throttle_gate_t *g, uint64_t now)
{
    if (g->active++ == 0) g->busy_since = now;
}

static void gate_busy_end(throttle_gate_t *g, uint64_t now)
{
    if (--g->active == 0 && now > g->busy_since) g->busy_ns += now - g->busy_since;
}

/* Whether a holder's process still exists (a process of another user, EPERM, does). */
static int gate_alive(int32_t pid) { return kill((pid_t)pid, 0) == 0 || errno != ESRCH; }

/* A bypass by the waiter with ticket `mine`: gives back one stuck ticket before it and marks its entry, so that
 * its holder gives back nothing if it leaves after all: a ticket whose process is gone (a holder's or a waiter's)
 * if there is one, else the oldest holder's; with neither in the table, one no entry holds (a waiter that died, its
 * entry not taken). Marked entries whose process is gone are freed on the way: they will never leave. */
static void gate_bypass(throttle_gate_t *g, uint32_t mine)
{
    int oldest = -1, dead = -1;
    for (int i = 0; i < THROTTLE_HOLDERS; i++) {
        throttle_holder_t *h = &g->holder[i];
        if (!h->pid || (int32_t)(h->ticket - mine) >= 0) continue;
        if (h->given) {
            if (!gate_alive(h->pid)) h->pid = 0;
            continue;
        }
        if (dead < 0 && !gate_alive(h->pid)) dead = i;
        if (h->inside && (oldest < 0 || (int32_t)(h->ticket - g->holder[oldest].ticket) < 0)) oldest = i;
    }
    int pick = dead >= 0 ? dead : oldest;
    if (pick >= 0) g->holder[pick].given = 1;
    g->bypassed++;
    g->done++;
    gate_wake(g);
}

/* Tells the watchdog (core/watch.h) whom the waiter with `ticket` waits for: the oldest process inside. */
static void gate_tell_watchdog(throttle_gate_t *g, uint32_t ticket, int level)
{
    iotame_where_t *w = iotame_where();
    if (!w) return;
    int oldest = -1;
    for (int i = 0; i < THROTTLE_HOLDERS; i++) {
        throttle_holder_t *h = &g->holder[i];
        if (!h->pid || !h->inside || h->given || (int32_t)(h->ticket - ticket) >= 0) continue;
        if (oldest < 0 || (int32_t)(h->ticket - g->holder[oldest].ticket) < 0) oldest = i;
    }
    __atomic_store_n(&w->a, oldest >= 0 ? (int64_t)g->holder[oldest].pid : 0, __ATOMIC_RELAXED);
    __atomic_store_n(&w->b, (int64_t)level, __ATOMIC_RELAXED);
}

/* Waits (the lock held) until the ticket may enter under `level`, giving a stuck ticket back after each stall_ns
 * without progress. */
static void gate_wait(throttle_gate_t *g, uint32_t ticket, int level, uint64_t stall_ns, uint64_t t0)
{
    uint32_t seen = g->done;
    uint64_t progress = t0;
    for (;;) {
        int k = level > 0 ? level : g->ctl.level;
        if (k < 1) k = 1;
        if ((int32_t)(ticket - g->done) < k) return;
        uint64_t now = iotame_monotonic_ns();
        if (g->done != seen || now - progress >= stall_ns) {
            if (g->done == seen) gate_bypass(g, ticket);
            seen = g->done;
            progress = now;
            continue; /* a bypass admits the first waiter in line, which may be another: nobody overtakes */
        }
        gate_tell_watchdog(g, ticket, k);
        uint64_t left = progress + stall_ns - now;
        gate_sleep(g, left < 100000000ull ? left : 100000000ull);
    }
}

/* Takes a free entry of the table for a ticket: -1 when all are taken (THROTTLE_HOLDERS tickets out at once; a
 * bypass cannot mark that ticket then, so it must not be one that is only slow). */
static int32_t gate_hold(throttle_gate_t *g, uint32_t ticket, int32_t pid)
{
    for (int i = 0; i < THROTTLE_HOLDERS; i++) {
        throttle_holder_t *h = &g->holder[(ticket + (uint32_t)i) % THROTTLE_HOLDERS];
        if (h->pid) continue;
        *h = (throttle_holder_t){.pid = pid, .ticket = ticket};
        return (int32_t)(h - g->holder);
    }
    return -1;
}

/* The pass's entry, or NULL when it has none or a bypass freed it (marked, its process seeming gone). */
static throttle_holder_t *gate_entry(throttle_gate_t *g, const throttle_pass_t *pass)
{
    if (pass->holder < 0 || pass->holder >= THROTTLE_HOLDERS) return NULL;
    throttle_holder_t *h = &g->holder[pass->holder];
    return h->pid && h->ticket == pass->ticket ? h : NULL;
}

uint64_t throttle_gate_enter(throttle_gate_t *g, int level, uint64_t stall_ns, throttle_pass_t *pass)
{
    int32_t pid = (int32_t)getpid(); /* a system call: not under the lock */
    gate_lock(g);
    uint64_t t0 = iotame_monotonic_ns();
    gate_busy_begin(g, t0);
    uint32_t ticket = g->ticket++;
    pass->ticket = ticket;
    pass->holder = gate_hold(g, ticket, pid);
    gate_wait(g, ticket, level, stall_ns, t0);
    throttle_holder_t *h = gate_entry(g, pass);
    if (h) h->inside = 1;
    if (++g->inside > g->max_inside) g->max_inside = g->inside;
    if (level > g->static_level) g->static_level = level;
    if (level <= 0) g->used_auto = 1;
    uint64_t waited = iotame_monotonic_ns() - t0;
    pthread_mutex_unlock(&g->lock);
    return waited;
}

/* Frees the pass's entry; returns whether a bypass gave its ticket back already. */
static int gate_release(throttle_gate_t *g, const throttle_pass_t *pass)
{
    throttle_holder_t *h = gate_entry(g, pass);
    if (!h) return pass->holder >= 0; /* an entry a bypass freed was marked first */
    int given = h->given;
    h->pid = 0;
    return given;
}

void throttle_gate_leave(throttle_gate_t *g, const throttle_pass_t *pass, uint64_t bytes, int is_auto,
                         const throttle_knobs_t *k)
{
    gate_lock(g);
    uint64_t now = iotame_monotonic_ns();
    if (!gate_release(g, pass)) g->done++;
    g->inside--;
    g->bytes += bytes;
    g->requests++;
    gate_busy_end(g, now);
    if (is_auto && g->ctl_started) {
        /* A window closes when the target goes idle after window_ns of busy time (no request in flight, whose time
         * would count without its bytes), or, for I/O that never pauses, after four times that. */
        uint64_t busy = g->busy_ns + (g->active ? now - g->busy_since : 0);
        if ((double)busy >= (g->active ? 4 * k->window_ns : k->window_ns)) {
            throttle_ctl_window(&g->ctl, k, g->bytes, busy, now);
            g->bytes = 0;
            g->busy_ns = 0;
            if (g->active) g->busy_since = now;
        }
    }
    if (g->waiting) gate_wake(g);
    pthread_mutex_unlock(&g->lock);
}

void throttle_gate_start_auto(throttle_gate_t *g, int nmax, int known, int predicted, const throttle_curve_t *curve)
{
    gate_lock(g);
    if (!g->ctl_started) {
        throttle_ctl_init(&g->ctl, nmax, known, predicted, curve);
        g->ctl_started = 1;
    }
    pthread_mutex_unlock(&g->lock);
}
