/* The watchdog's no-progress rule and records (core/watch.c): the rule on made-up looks, the wording of each kind
 * of wait, and two real threads (one that keeps stepping, one that stops inside a call) read by a watcher thread as
 * the watchdog reads them (relaxed loads; labelled `threads`, so the tsan layer runs it too). */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/watch.h"

#define MS 1000000ull

static void test_rule(void)
{
    iotame_watch_seen_t s = {0};
    const uint64_t hang = 1000 * MS;
    CHECK(!iotame_watch_stuck(&s, 0, 5, 0, hang));            /* outside any call: never */
    CHECK(!iotame_watch_stuck(&s, 0, 5, 5000 * MS, hang));
    CHECK(!iotame_watch_stuck(&s, 1, 5, 6000 * MS, hang));     /* first seen inside: the clock starts here */
    CHECK(!iotame_watch_stuck(&s, 1, 5, 6999 * MS, hang));
    CHECK(iotame_watch_stuck(&s, 1, 5, 7000 * MS, hang));      /* hang_seconds without a step */
    CHECK(!iotame_watch_stuck(&s, 1, 6, 7100 * MS, hang));     /* a step: the clock starts again */
    CHECK(!iotame_watch_stuck(&s, 1, 6, 8000 * MS, hang));
    CHECK(iotame_watch_stuck(&s, 1, 6, 8100 * MS, hang));
    CHECK(!iotame_watch_stuck(&s, 0, 6, 8200 * MS, hang));     /* left the call */
    CHECK(!iotame_watch_stuck(&s, 1, 6, 9300 * MS, hang));     /* a new call with the same counter: starts again */
    CHECK(!iotame_watch_stuck(&s, 1, 6, 99000 * MS, 0));       /* hang 0: off */
}

static void test_words(void)
{
    char buf[512];
    iotame_where_t w = {.wait = IOTAME_WAIT_GATE, .what = "writes", .a = 4242, .b = 1};
    CHECK(strstr(iotame_watch_describe_wait(&w, buf, sizeof buf), "throttle gate token (writes, level 1) held by "
                                                                    "process 4242") != NULL);
    w = (iotame_where_t){.wait = IOTAME_WAIT_RING, .a = 100, .b = 100, .c = 1};
    CHECK(strstr(iotame_watch_describe_wait(&w, buf, sizeof buf), "full staging ring") != NULL);
    CHECK(strstr(buf, "flusher writing a batch") != NULL);
    w = (iotame_where_t){.wait = IOTAME_WAIT_REMOTE, .a = 3, .b = 10, .c = 2};
    CHECK(strstr(iotame_watch_describe_wait(&w, buf, sizeof buf), "world rank 3's node") != NULL);
    w = (iotame_where_t){.wait = IOTAME_WAIT_COLL, .what = "MPI_Allreduce", .a = 4, .b = 0xa};
    CHECK(strstr(iotame_watch_describe_wait(&w, buf, sizeof buf), "not arrived: ranks 1, 3") != NULL);
    w.b = 0;
    CHECK(strstr(iotame_watch_describe_wait(&w, buf, sizeof buf), "cannot be known") != NULL);
    w = (iotame_where_t){.wait = IOTAME_WAIT_SYSCALL, .what = "pwrite64", .a = 7, .b = 4096, .c = 0};
    CHECK(strstr(iotame_watch_describe_wait(&w, buf, sizeof buf), "system call pwrite64") != NULL);
    w = (iotame_where_t){.wait = IOTAME_WAIT_NONE};
    CHECK(iotame_watch_describe_wait(&w, buf, sizeof buf)[0] == '\0');
}

static int stop_all;

/* A thread inside a call that keeps stepping (moving = 1) or stops after its first step (moving = 0). */
static void *worker(void *arg)
{
    int moving = *(int *)arg;
    iotame_where_t *w = iotame__where_claim();
    if (!w) return NULL;
    __atomic_store_n(&w->call, "MPI_File_write_all", __ATOMIC_RELAXED);
    __atomic_store_n(&w->progress, 1, __ATOMIC_RELAXED);
    uint64_t p = 1;
    while (!__atomic_load_n(&stop_all, __ATOMIC_RELAXED)) {
        if (moving) __atomic_store_n(&w->progress, ++p, __ATOMIC_RELAXED);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    __atomic_store_n(&w->call, NULL, __ATOMIC_RELAXED);
    return NULL;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void test_threads(void)
{
    int moving = 1, stopped = 0;
    pthread_t t[2];
    pthread_create(&t[0], NULL, worker, &moving);
    pthread_create(&t[1], NULL, worker, &stopped);
    iotame_watch_seen_t seen[IOTAME_WATCH_SLOTS] = {{0}};
    int stuck[2] = {0, 0};
    for (int look = 0; look < 12; look++) {
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
        for (int i = 0; i < IOTAME_WATCH_SLOTS; i++) {
            iotame_where_t *s = &iotame__watch_slots[i];
            if (!__atomic_load_n(&s->used, __ATOMIC_ACQUIRE)) continue;
            const char *call = __atomic_load_n(&s->call, __ATOMIC_RELAXED);
            uint64_t p = __atomic_load_n(&s->progress, __ATOMIC_RELAXED);
            if (iotame_watch_stuck(&seen[i], call != NULL, p, now_ns(), 200 * MS) && i < 2) stuck[i] = 1;
        }
    }
    __atomic_store_n(&stop_all, 1, __ATOMIC_RELAXED);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    /* The slots are claimed in order, but which worker got which is up to the scheduler: exactly one is stuck. */
    CHECK(stuck[0] + stuck[1] == 1);
    /* A thread's exit releases its slot. */
    CHECK(!__atomic_load_n(&iotame__watch_slots[0].used, __ATOMIC_ACQUIRE));
    CHECK(!__atomic_load_n(&iotame__watch_slots[1].used, __ATOMIC_ACQUIRE));
}

/* ---- the kernel's side ---- */

static const char *kernel_fifo;
static int kernel_pipe[2];
static int kernel_tid[2]; /* set by the threads, read by the test: atomics */

static void *kernel_opener(void *arg)
{
    __atomic_store_n(&kernel_tid[0], (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
    int fd = open(kernel_fifo, O_RDONLY); /* sleeps until a writer opens the FIFO */
    if (fd >= 0) close(fd);
    return arg;
}

static void *kernel_reader(void *arg)
{
    __atomic_store_n(&kernel_tid[1], (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
    char c;
    ssize_t n = read(kernel_pipe[0], &c, 1); /* sleeps until a byte comes */
    (void)n;
    return arg;
}

/* What procfs says of a thread, waited for until it sleeps where expected (at most 5 s). */
static int kernel_says(int tid, const char *want, char *buf, size_t size)
{
    for (int i = 0; i < 500; i++) {
        if (strstr(iotame_watch_kernel(tid, buf, size), want)) return 1;
        nanosleep(&(struct timespec){0, 10 * MS}, NULL);
    }
    return 0;
}

/* Threads blocked in the kernel (opening a FIFO nobody writes, reading an empty pipe) are named by their system call,
 * the descriptor's file and the kernel function they sleep in; a thread that does not exist says nothing. */
static void test_kernel(void)
{
    char dir[] = "/tmp/iotame-watch-XXXXXX", fifo[64], buf[4400];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(fifo, sizeof fifo, "%s/f", dir);
    CHECK(mkfifo(fifo, 0600) == 0 && pipe(kernel_pipe) == 0);
    kernel_fifo = fifo;
    pthread_t t[2];
    pthread_create(&t[0], NULL, kernel_opener, NULL);
    pthread_create(&t[1], NULL, kernel_reader, NULL);
    while (!__atomic_load_n(&kernel_tid[0], __ATOMIC_ACQUIRE) || !__atomic_load_n(&kernel_tid[1], __ATOMIC_ACQUIRE))
        nanosleep(&(struct timespec){0, MS}, NULL);
    CHECK(kernel_says(kernel_tid[0], "the system call openat, waiting in the kernel's wait_for_partner", buf,
                      sizeof buf));
    char want[64];
    snprintf(want, sizeof want, "the system call read on fd %d (pipe:[", kernel_pipe[0]);
    CHECK(kernel_says(kernel_tid[1], "pipe_read", buf, sizeof buf)); /* anon_pipe_read on newer kernels */
    CHECK(strstr(buf, want) && strstr(buf, "waiting in the kernel's "));
    int w = open(fifo, O_WRONLY);
    CHECK(w >= 0 && write(kernel_pipe[1], "x", 1) == 1);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    CHECK(iotame_watch_kernel(1 << 30, buf, sizeof buf)[0] == '\0');
    close(w), close(kernel_pipe[0]), close(kernel_pipe[1]), unlink(fifo), rmdir(dir);
}

int main(void)
{
    test_rule();
    test_words();
    test_threads();
    test_kernel();
    return failures != 0;
}
