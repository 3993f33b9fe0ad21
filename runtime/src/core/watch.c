/* The watchdog's MPI-free parts (core/watch.h): the records and their claim, the no-progress rule, the wording
 * of what a step waits for, and what the kernel says a thread waits in. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
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

/* ---- the kernel's side: what a thread waits in (procfs) ---- */

/* The system calls a hang on a file system is met in, by x86-64 number (the others, and every call on other
 * machines, are named by number). fd: the first argument is a descriptor, named by its link. */
static const struct {
    long nr;
    const char *name;
    int fd;
} watch_syscalls[] = {
#if defined(__x86_64__)
                      {0, "read", 1},       {1, "write", 1},       {2, "open", 0},       {3, "close", 1},
                      {4, "stat", 0},       {5, "fstat", 1},       {6, "lstat", 0},      {7, "poll", 0},
                      {8, "lseek", 1},      {17, "pread64", 1},    {18, "pwrite64", 1},  {19, "readv", 1},
                      {20, "writev", 1},    {23, "select", 0},     {35, "nanosleep", 0}, {72, "fcntl", 1},
                      {73, "flock", 1},     {74, "fsync", 1},      {75, "fdatasync", 1}, {77, "ftruncate", 1},
                      {87, "unlink", 0},    {202, "futex", 0},     {232, "epoll_wait", 0}, {257, "openat", 0},
                      {262, "newfstatat", 0}, {285, "fallocate", 1}, {295, "preadv", 1}, {296, "pwritev", 1},
                      {332, "statx", 0},
#endif
                      {-1, "", 0}};

static int watch_read_line(const char *path, char *buf, size_t size)
{
    FILE *in = fopen(path, "r");
    if (!in) return -1;
    const int ok = fgets(buf, (int)size, in) != NULL;
    fclose(in);
    if (!ok) return -1;
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

char *iotame_watch_kernel(int tid, char *buf, unsigned long size)
{
    char path[64], wchan[128] = "", line[256] = "";
    buf[0] = '\0';
    snprintf(path, sizeof path, "/proc/self/task/%d/wchan", tid);
    if (watch_read_line(path, wchan, sizeof wchan) != 0 || strcmp(wchan, "0") == 0) wchan[0] = '\0';
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    long nr = -1;
    unsigned long arg = 0;
    if (watch_read_line(path, line, sizeof line) == 0 && sscanf(line, "%ld %lx", &nr, &arg) < 1) nr = -1;
    char call[PATH_MAX + 96] = "";
    if (nr >= 0) {
        size_t k = 0;
        while (k < sizeof watch_syscalls / sizeof watch_syscalls[0] && watch_syscalls[k].nr != nr) k++;
        const int known = k < sizeof watch_syscalls / sizeof watch_syscalls[0];
        char target[PATH_MAX] = "";
        if (known && watch_syscalls[k].fd) {
            snprintf(path, sizeof path, "/proc/self/fd/%lu", arg);
            const ssize_t n = readlink(path, target, sizeof target - 1);
            target[n > 0 ? n : 0] = '\0';
        }
        if (known && watch_syscalls[k].fd)
            snprintf(call, sizeof call, "the system call %s on fd %lu%s%s%s", watch_syscalls[k].name, arg,
                     target[0] ? " (" : "", target, target[0] ? ")" : "");
        else if (known)
            snprintf(call, sizeof call, "the system call %s", watch_syscalls[k].name);
        else
            snprintf(call, sizeof call, "the system call number %ld", nr);
    } else if (strncmp(line, "running", 7) == 0) {
        snprintf(call, sizeof call, "running, not in a system call");
    }
    if (call[0] && wchan[0]) snprintf(buf, size, "%s, waiting in the kernel's %s", call, wchan);
    else if (call[0]) snprintf(buf, size, "%s", call);
    else if (wchan[0]) snprintf(buf, size, "waiting in the kernel's %s", wchan);
    return buf;
}
