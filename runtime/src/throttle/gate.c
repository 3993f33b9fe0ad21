/* The gate: at most `level` of the node's processes inside a request on one target and direction, in arrival
 * order. A ticket lock generalized to k holders: each request takes the next ticket and enters once fewer than its
 * level of the tickets before it are still inside (t - done < level), so the count inside never exceeds the level
 * and nobody is overtaken. Waiters sleep on a process-shared condition variable (no spinning); the robust mutex is
 * held only to update the counters, never across a request, so a process that dies outside a request leaves the
 * gate usable. A process that dies inside one would block the others: after stall_seconds without any process
 * leaving, a waiter goes ahead and the statistics count it. */
#include <errno.h>
#include <time.h>

#include "throttle.h"

int throttle_gate_init(throttle_gate_t *g)
{
    pthread_mutexattr_t ma;
    pthread_condattr_t ca;
    int rc = pthread_mutexattr_init(&ma);
    if (!rc) rc = pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    if (!rc) rc = pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    if (!rc) rc = pthread_mutex_init(&g->lock, &ma);
    pthread_mutexattr_destroy(&ma);
    if (rc) return rc;
    rc = pthread_condattr_init(&ca);
    if (!rc) rc = pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
    if (!rc) rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (!rc) rc = pthread_cond_init(&g->turn, &ca);
    pthread_condattr_destroy(&ca);
    if (rc) return rc;
    __atomic_store_n(&g->ready, 1, __ATOMIC_RELEASE);
    return 0;
}

static void lock(throttle_gate_t *g)
{
    if (pthread_mutex_lock(&g->lock) == EOWNERDEAD) pthread_mutex_consistent(&g->lock);
}

/* The target is busy while a process waits for or is inside a request: the controller's time base. */
static void busy_begin(throttle_gate_t *g, uint64_t now)
{
    if (g->active++ == 0) g->busy_since = now;
}

static void busy_end(throttle_gate_t *g, uint64_t now)
{
    if (--g->active == 0 && now > g->busy_since) g->busy_ns += now - g->busy_since;
}

uint64_t throttle_gate_enter(throttle_gate_t *g, int level, uint64_t stall_ns)
{
    lock(g);
    uint64_t t0 = iotame_monotonic_ns();
    busy_begin(g, t0);
    uint32_t ticket = g->ticket++;
    uint32_t seen = g->done;
    uint64_t progress = t0;
    for (;;) {
        int k = level > 0 ? level : g->ctl.level;
        if (k < 1) k = 1;
        if ((int32_t)(ticket - g->done) < k) break;
        uint64_t now = iotame_monotonic_ns();
        if (g->done != seen) {
            seen = g->done;
            progress = now;
        } else if (now - progress >= stall_ns) {
            g->bypassed++;
            g->done++; /* the missing leave: the queue moves on */
            pthread_cond_broadcast(&g->turn);
            break;
        }
        uint64_t until = (now - progress + 100000000ull < stall_ns ? now + 100000000ull : progress + stall_ns);
        struct timespec ts = {(time_t)(until / 1000000000ull), (long)(until % 1000000000ull)};
        g->waiting++;
        int rc = pthread_cond_timedwait(&g->turn, &g->lock, &ts);
        if (rc == EOWNERDEAD) pthread_mutex_consistent(&g->lock);
        g->waiting--;
    }
    if (++g->inside > g->max_inside) g->max_inside = g->inside;
    if (level > g->static_level) g->static_level = level;
    if (level <= 0) g->used_auto = 1;
    uint64_t waited = iotame_monotonic_ns() - t0;
    pthread_mutex_unlock(&g->lock);
    return waited;
}

void throttle_gate_leave(throttle_gate_t *g, uint64_t bytes, int is_auto, const throttle_knobs_t *k)
{
    lock(g);
    uint64_t now = iotame_monotonic_ns();
    g->done++;
    g->inside--;
    g->bytes += bytes;
    g->requests++;
    busy_end(g, now);
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
    if (g->waiting) pthread_cond_broadcast(&g->turn);
    pthread_mutex_unlock(&g->lock);
}

void throttle_gate_start_auto(throttle_gate_t *g, int nmax, int known)
{
    lock(g);
    if (!g->ctl_started) {
        throttle_ctl_init(&g->ctl, nmax, known);
        g->ctl_started = 1;
    }
    pthread_mutex_unlock(&g->lock);
}
