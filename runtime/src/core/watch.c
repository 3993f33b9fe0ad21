/* The watchdog's MPI-free parts (core/watch.h): the records and their claim, the no-progress rule and the wording
 * of what a step waits for. */
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "watch.h"

/* Here, not in watchdog.c, so that the unit tests of instrumented parts link them without MPI. */
int iotame__watch;
_Thread_local iotame_where_t *iotame__where;
_Thread_local int iotame__msg_error; /* core.h: the first failed message of the runtime's own in this thread */

iotame_where_t iotame__watch_slots[IOTAME_WATCH_SLOTS];
#define watch_slots iotame__watch_slots
static pthread_key_t watch_key;     /* releases a thread's slot when it exits */
static pthread_once_t watch_key_once = PTHREAD_ONCE_INIT;
static int watch_key_ok;

static void watch_release(void *slot)
{
    iotame_where_t *w = slot;
    __atomic_store_n(&w->call, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&w->used, 0, __ATOMIC_RELEASE);
}

static void watch_key_make(void) { watch_key_ok = pthread_key_create(&watch_key, watch_release) == 0; }

iotame_where_t *iotame__where_claim(void)
{
    static _Thread_local int refused; /* every slot was taken: the thread goes unwatched, without a search per call */
    if (refused) return NULL;
    pthread_once(&watch_key_once, watch_key_make);
    for (int i = 0; i < IOTAME_WATCH_SLOTS; i++) {
        int32_t free_slot = 0;
        if (__atomic_load_n(&watch_slots[i].used, __ATOMIC_RELAXED) ||
            !__atomic_compare_exchange_n(&watch_slots[i].used, &free_slot, 1, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_RELAXED))
            continue;
        iotame_where_t *w = &watch_slots[i];
        __atomic_store_n(&w->tid, (int32_t)syscall(SYS_gettid), __ATOMIC_RELAXED);
        __atomic_store_n(&w->call, NULL, __ATOMIC_RELAXED);
        if (watch_key_ok) pthread_setspecific(watch_key, w);
        iotame__where = w;
        return w;
    }
    refused = 1;
    return NULL;
}


int iotame_watch_stuck(iotame_watch_seen_t *seen, int inside, uint64_t progress, uint64_t now_ns, uint64_t hang_ns)
{
    if (!inside) {
        seen->inside = 0;
        return 0;
    }
    if (!seen->inside || seen->progress != progress) {
        seen->inside = 1;
        seen->progress = progress;
        seen->since_ns = now_ns;
        return 0;
    }
    return hang_ns > 0 && now_ns - seen->since_ns >= hang_ns;
}

/* The ranks set in a mask of the first 64, as "1, 3" (empty when none). */
static void watch_ranks(uint64_t mask, char *buf, unsigned long size)
{
    unsigned long n = 0;
    buf[0] = '\0';
    for (int r = 0; r < 64 && n < size; r++)
        if (mask & (1ull << r)) n += (unsigned long)snprintf(buf + n, size - n, "%s%d", n ? ", " : "", r);
}

char *iotame_watch_describe_wait(const iotame_where_t *w, char *buf, unsigned long size)
{
    const char *what = w->what ? w->what : "?";
    static const char *const flusher[] = {"idle", "writing a batch"};
    const char *fl = flusher[w->c == 1];
    char ranks[256];
    switch (w->wait) {
    case IOTAME_WAIT_GATE:
        if (w->a > 0)
            snprintf(buf, size, "a throttle gate token (%s, level %lld) held by process %lld", what,
                     (long long)w->b, (long long)w->a);
        else
            snprintf(buf, size, "a throttle gate token (%s, level %lld), holder not known", what, (long long)w->b);
        break;
    case IOTAME_WAIT_RING:
        snprintf(buf, size, "room in the node's full staging ring (%lld of %lld bytes not yet written); flusher %s",
                 (long long)w->a, (long long)w->b, fl);
        break;
    case IOTAME_WAIT_DRAIN:
        snprintf(buf, size, "the node's flusher to write the staged data up to %lld (written up to %lld); flusher %s",
                 (long long)w->a, (long long)w->b, fl);
        break;
    case IOTAME_WAIT_REMOTE:
        snprintf(buf, size,
                 "aggregator caching: the staging ring of world rank %lld's node to be written up to %lld (tail %lld)",
                 (long long)w->a, (long long)w->b, (long long)w->c);
        break;
    case IOTAME_WAIT_COLL:
        watch_ranks((uint64_t)w->b, ranks, sizeof ranks);
        if (w->a <= 0)
            snprintf(buf, size, "the runtime's own %s (requests of its own to complete)", what);
        else if (w->b)
            snprintf(buf, size, "the runtime's own %s on a communicator of %lld ranks; not arrived: ranks %s", what,
                     (long long)w->a, ranks);
        else
            snprintf(buf, size, "the runtime's own %s on a communicator of %lld ranks (the ranks not arrived cannot "
                     "be known)", what, (long long)w->a);
        break;
    case IOTAME_WAIT_SYSCALL:
        snprintf(buf, size, "the system call %s on the file system (fd %lld, %lld bytes at offset %lld)", what,
                 (long long)w->a, (long long)w->b, (long long)w->c);
        break;
    default:
        buf[0] = '\0';
    }
    return buf;
}
