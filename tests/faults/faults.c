/* libiotame_faults.so: a test-only fault injector, preloaded AFTER libiotame.so (LD_PRELOAD=libiotame.so:this) so
 * that it sits under the runtime's POSIX layer and under the MPI library's own calls: the runtime's wrappers reach it
 * through dlsym(RTLD_NEXT), as they would reach the C library. Alone, it injects the same faults under the plain
 * MPI library (the oracle's run). docs/design/fault-injection.md says why it is ours and not libfiu.
 *
 * One rule, from IOTAME_FAULT: comma-separated key=value pairs.
 *   op=open|write|read|sync|truncate  the calls it concerns (write: write, pwrite, writev, pwritev and their 64 and
 *                                     v2 forms; read likewise; sync: fsync, fdatasync; truncate: ftruncate)
 *   file=GLOB     only descriptors opened on a path whose last component matches GLOB (fnmatch)
 *   fail=ERRNO|short|kill|stop  fail with that errno (EIO, ENOSPC, EDQUOT, EINTR, EACCES, EFBIG, EROFS), move half
 *                 the bytes (data calls), SIGKILL the process before the call, or stop it with SIGSTOP before the
 *                 call (the call goes on, unharmed, once the process gets SIGCONT: the watchdog's tests)
 *   nth=N         the first matching call that fails (default 1), counted per process
 *   count=K       how many calls fail from the nth (default 1; 0: every one after it, a device that stays broken)
 *   prob=P,seed=S each matching call fails with probability P instead (a generator seeded with S and the rank)
 *   rank=R        only in the process of this rank (PMI_RANK, OMPI_COMM_WORLD_RANK); default every process
 *   thread=main|other  only calls of the thread that loaded the library, or of the others (the flusher)
 *   arm=program   matching calls are counted only after the program called iotame_fault_arm() (found with dlsym)
 *   log=PATH      every injection appends one line to PATH.RANK: "op=... fd=... offset=... bytes=... fail=... n=..."
 * Without IOTAME_FAULT every call passes straight through. A malformed rule stops the process with exit status 2
 * and a message naming the key. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define FAULTS_EXPORT __attribute__((visibility("default")))
#define FAULTS_MAX_FD 65536
#define FAULTS_MAX_IOV 1024

typedef enum { OP_OPEN, OP_WRITE, OP_READ, OP_SYNC, OP_TRUNCATE, OP_NONE } faults_op_t;
enum { FAIL_SHORT = -1, FAIL_KILL = -2, FAIL_STOP = -3 };
enum { THREAD_ANY, THREAD_MAIN, THREAD_OTHER };

static struct {
    faults_op_t op;
    char file[256];
    int fail; /* an errno, FAIL_SHORT or FAIL_KILL */
    long nth, count;
    double prob;
    unsigned seed;
    int rank, thread, armed;
    int log_fd;
} rule = {.op = OP_NONE, .nth = 1, .count = 1, .rank = -1, .armed = 1, .log_fd = -1};

static pthread_once_t faults_once = PTHREAD_ONCE_INIT;
static pthread_t faults_main_thread;
static pthread_mutex_t faults_lock = PTHREAD_MUTEX_INITIALIZER;
static long faults_seen;            /* matching calls counted so far (under the lock) */
static unsigned char faults_fd[FAULTS_MAX_FD]; /* 1: the descriptor's path matches `file` */
static int faults_my_rank = -1;

static const struct { const char *name; int value; } faults_errnos[] = {
    {"EIO", EIO}, {"ENOSPC", ENOSPC}, {"EDQUOT", EDQUOT}, {"EINTR", EINTR}, {"EACCES", EACCES}, {"EFBIG", EFBIG},
    {"EROFS", EROFS}};

static void faults_die(const char *key, const char *value, const char *expected)
{
    fprintf(stderr, "libiotame_faults: IOTAME_FAULT: %s=%s: expected %s\n", key, value, expected);
    _exit(2);
}

static void faults_parse_pair(char *key, char *value, char *log)
{
    char *end;
    if (!strcmp(key, "op")) {
        static const char *const ops[] = {"open", "write", "read", "sync", "truncate"};
        for (int i = 0; i < 5; i++)
            if (!strcmp(value, ops[i])) rule.op = (faults_op_t)i;
        if (rule.op == OP_NONE) faults_die(key, value, "open, write, read, sync or truncate");
    } else if (!strcmp(key, "file")) {
        snprintf(rule.file, sizeof rule.file, "%s", value);
    } else if (!strcmp(key, "fail")) {
        rule.fail = !strcmp(value, "short") ? FAIL_SHORT : !strcmp(value, "kill") ? FAIL_KILL
                    : !strcmp(value, "stop")  ? FAIL_STOP
                                              : 0;
        for (size_t i = 0; i < sizeof faults_errnos / sizeof *faults_errnos; i++)
            if (!strcmp(value, faults_errnos[i].name)) rule.fail = faults_errnos[i].value;
        if (!rule.fail)
            faults_die(key, value, "an errno name (EIO, ENOSPC, EDQUOT, EINTR, EACCES, EFBIG, EROFS), short, kill or stop");
    } else if (!strcmp(key, "nth") || !strcmp(key, "count") || !strcmp(key, "rank") || !strcmp(key, "seed")) {
        long v = strtol(value, &end, 10);
        if (*end || v < 0) faults_die(key, value, "a whole number >= 0");
        if (key[0] == 'n') rule.nth = v ? v : 1;
        else if (key[0] == 'c') rule.count = v;
        else if (key[0] == 'r') rule.rank = (int)v;
        else rule.seed = (unsigned)v;
    } else if (!strcmp(key, "prob")) {
        rule.prob = strtod(value, &end);
        if (*end || rule.prob < 0 || rule.prob > 1) faults_die(key, value, "a probability between 0 and 1");
    } else if (!strcmp(key, "thread")) {
        if (strcmp(value, "main") && strcmp(value, "other")) faults_die(key, value, "main or other");
        rule.thread = value[0] == 'm' ? THREAD_MAIN : THREAD_OTHER;
    } else if (!strcmp(key, "arm")) {
        if (strcmp(value, "program")) faults_die(key, value, "program");
        rule.armed = 0;
    } else if (!strcmp(key, "log")) {
        snprintf(log, 4096, "%s", value);
    } else {
        faults_die(key, value, "one of op, file, fail, nth, count, prob, seed, rank, thread, arm, log");
    }
}

static void faults_init(void)
{
    faults_main_thread = pthread_self();
    const char *r = getenv("PMI_RANK");
    if (!r) r = getenv("OMPI_COMM_WORLD_RANK");
    faults_my_rank = r ? atoi(r) : 0;
    const char *spec = getenv("IOTAME_FAULT");
    if (!spec || !*spec) return;
    char buf[4096], log[4096] = "";
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *pair = strtok_r(buf, ",", &save); pair; pair = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(pair, '=');
        if (!eq) faults_die(pair, "", "key=value");
        *eq = '\0';
        faults_parse_pair(pair, eq + 1, log);
    }
    if (rule.op == OP_NONE || !rule.fail) faults_die("op/fail", spec, "both op and fail");
    rule.seed ^= 0x9e3779b9u * (unsigned)(faults_my_rank + 1);
    if (*log) {
        char path[4200];
        snprintf(path, sizeof path, "%s.%d", log, faults_my_rank);
        rule.log_fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }
}

__attribute__((constructor)) static void faults_constructor(void) { pthread_once(&faults_once, faults_init); }

/* Called by a test program (through dlsym) when the faults may start: what it wrote before stays untouched. */
FAULTS_EXPORT void iotame_fault_arm(void) { __atomic_store_n(&rule.armed, 1, __ATOMIC_RELEASE); }

/* Whether this call fails, and how (0: it does not). Counts it when it matches. */
static void faults_log(faults_op_t op, int fd, long long offset, size_t bytes, int fail);

static int faults_decide(faults_op_t op, int fd, const char *path)
{
    pthread_once(&faults_once, faults_init);
    if (rule.op != op || !__atomic_load_n(&rule.armed, __ATOMIC_ACQUIRE)) return 0;
    if (rule.rank >= 0 && rule.rank != faults_my_rank) return 0;
    if (rule.thread && (pthread_equal(pthread_self(), faults_main_thread) != 0) != (rule.thread == THREAD_MAIN))
        return 0;
    if (path) {
        const char *base = strrchr(path, '/');
        if (*rule.file && fnmatch(rule.file, base ? base + 1 : path, 0) != 0) return 0;
    } else if (*rule.file && (fd < 0 || fd >= FAULTS_MAX_FD || !faults_fd[fd])) {
        return 0;
    }
    pthread_mutex_lock(&faults_lock);
    long n = ++faults_seen;
    int fire = rule.prob > 0 ? (double)rand_r(&rule.seed) / RAND_MAX < rule.prob
                             : n >= rule.nth && (rule.count == 0 || n < rule.nth + rule.count);
    pthread_mutex_unlock(&faults_lock);
    if (fire && rule.fail == FAIL_STOP) { /* the whole process stops here; the call then goes on */
        faults_log(op, fd, -1, 0, FAIL_STOP);
        raise(SIGSTOP);
        return 0;
    }
    return fire ? rule.fail : 0;
}

static void faults_log(faults_op_t op, int fd, long long offset, size_t bytes, int fail)
{
    static const char *const names[] = {"open", "write", "read", "sync", "truncate"};
    if (rule.log_fd < 0) return;
    const char *how = fail == FAIL_SHORT ? "short" : fail == FAIL_KILL ? "kill" : fail == FAIL_STOP ? "stop" : NULL;
    for (size_t i = 0; !how && i < sizeof faults_errnos / sizeof *faults_errnos; i++)
        if (faults_errnos[i].value == fail) how = faults_errnos[i].name;
    char line[256];
    int len = snprintf(line, sizeof line, "op=%s fd=%d offset=%lld bytes=%zu fail=%s n=%ld thread=%s\n", names[op],
                       fd, offset, bytes, how, __atomic_load_n(&faults_seen, __ATOMIC_RELAXED),
                       pthread_equal(pthread_self(), faults_main_thread) ? "main" : "other");
    if (len > 0 && syscall(SYS_write, rule.log_fd, line, (size_t)len) < 0) { /* the log is best effort */ }
}

/* ---- the wrappers ---- */

#define REAL(type, name, params)                                                                               \
    static type(*real_##name) params;                                                                          \
    if (!real_##name) real_##name = (type(*) params)dlsym(RTLD_NEXT, #name)

/* A failing call: logged, then killed or answered with -1 and the errno. */
#define FAIL_OR_KILL(op, fd, off, bytes, fail)                                                                  \
    do {                                                                                                       \
        faults_log(op, fd, off, bytes, fail);                                                                   \
        if ((fail) == FAIL_KILL) raise(SIGKILL);                                                               \
        errno = (fail);                                                                                        \
        return -1;                                                                                             \
    } while (0)

static void faults_opened(int fd, const char *path)
{
    if (fd < 0 || fd >= FAULTS_MAX_FD || !*rule.file) return;
    const char *base = strrchr(path, '/');
    faults_fd[fd] = fnmatch(rule.file, base ? base + 1 : path, 0) == 0;
}

static int faults_open_mode(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, int) : 0;
}

#define OPEN_WRAPPER(name, PARAMS, ARGS, PATH)                                                                  \
    FAULTS_EXPORT int name PARAMS                                                                              \
    {                                                                                                          \
        va_list ap;                                                                                            \
        va_start(ap, flags);                                                                                   \
        int mode = faults_open_mode(flags, ap);                                                                \
        va_end(ap);                                                                                            \
        int fail = faults_decide(OP_OPEN, -1, PATH);                                                           \
        if (fail > 0 || fail == FAIL_KILL) FAIL_OR_KILL(OP_OPEN, -1, 0, 0, fail);                              \
        REAL(int, name, (OPEN_REAL_PARAMS));                                                                   \
        int fd = real_##name ARGS;                                                                             \
        faults_opened(fd, PATH);                                                                               \
        return fd;                                                                                             \
    }

#define OPEN_REAL_PARAMS const char *, int, ...
OPEN_WRAPPER(open, (const char *path, int flags, ...), (path, flags, mode), path)
OPEN_WRAPPER(open64, (const char *path, int flags, ...), (path, flags, mode), path)
#undef OPEN_REAL_PARAMS
#define OPEN_REAL_PARAMS int, const char *, int, ...
OPEN_WRAPPER(openat, (int dirfd, const char *path, int flags, ...), (dirfd, path, flags, mode), path)
OPEN_WRAPPER(openat64, (int dirfd, const char *path, int flags, ...), (dirfd, path, flags, mode), path)
#undef OPEN_REAL_PARAMS

FAULTS_EXPORT int close(int fd)
{
    if (fd >= 0 && fd < FAULTS_MAX_FD) faults_fd[fd] = 0;
    REAL(int, close, (int));
    return real_close ? real_close(fd) : (int)syscall(SYS_close, fd);
}

/* A data call of n bytes: fails, or (short) moves the first half of the bytes, or passes through. */
#define DATA_WRAPPER(name, OP, PARAMS, TYPES, ARGS, SHORT_ARGS, OFF)                                            \
    FAULTS_EXPORT ssize_t name PARAMS                                                                          \
    {                                                                                                          \
        REAL(ssize_t, name, TYPES);                                                                            \
        int fail = faults_decide(OP, fd, NULL);                                                                \
        if (fail > 0 || fail == FAIL_KILL) FAIL_OR_KILL(OP, fd, OFF, n, fail);                                 \
        if (fail == FAIL_SHORT && n > 1) {                                                                     \
            faults_log(OP, fd, OFF, n, fail);                                                                  \
            n /= 2;                                                                                            \
            return real_##name SHORT_ARGS;                                                                     \
        }                                                                                                      \
        return real_##name ARGS;                                                                               \
    }

DATA_WRAPPER(write, OP_WRITE, (int fd, const void *b, size_t n), (int, const void *, size_t), (fd, b, n), (fd, b, n),
             -1)
DATA_WRAPPER(read, OP_READ, (int fd, void *b, size_t n), (int, void *, size_t), (fd, b, n), (fd, b, n), -1)
DATA_WRAPPER(pwrite, OP_WRITE, (int fd, const void *b, size_t n, off_t o), (int, const void *, size_t, off_t),
             (fd, b, n, o), (fd, b, n, o), (long long)o)
DATA_WRAPPER(pwrite64, OP_WRITE, (int fd, const void *b, size_t n, off_t o), (int, const void *, size_t, off_t),
             (fd, b, n, o), (fd, b, n, o), (long long)o)
DATA_WRAPPER(pread, OP_READ, (int fd, void *b, size_t n, off_t o), (int, void *, size_t, off_t), (fd, b, n, o),
             (fd, b, n, o), (long long)o)
DATA_WRAPPER(pread64, OP_READ, (int fd, void *b, size_t n, off_t o), (int, void *, size_t, off_t), (fd, b, n, o),
             (fd, b, n, o), (long long)o)

/* The first iovecs holding half of the bytes (the last one cut): a short vectored transfer. */
static int faults_half_iov(const struct iovec *iov, int cnt, struct iovec *out)
{
    size_t total = 0, want, k = 0;
    for (int i = 0; i < cnt; i++) total += iov[i].iov_len;
    want = total / 2;
    int m = 0;
    for (; m < cnt && m < FAULTS_MAX_IOV && k < want; m++) {
        out[m] = iov[m];
        if (k + out[m].iov_len > want) out[m].iov_len = want - k;
        k += out[m].iov_len;
    }
    return m;
}

static size_t faults_iov_bytes(const struct iovec *iov, int cnt)
{
    size_t b = 0;
    for (int i = 0; i < cnt; i++) b += iov[i].iov_len;
    return b;
}

#define VEC_WRAPPER(name, OP, PARAMS, TYPES, ARGS, SHORT_ARGS, OFF)                                             \
    FAULTS_EXPORT ssize_t name PARAMS                                                                          \
    {                                                                                                          \
        REAL(ssize_t, name, TYPES);                                                                            \
        int fail = faults_decide(OP, fd, NULL);                                                                \
        size_t n = faults_iov_bytes(iov, cnt);                                                                 \
        if (fail > 0 || fail == FAIL_KILL) FAIL_OR_KILL(OP, fd, OFF, n, fail);                                 \
        if (fail == FAIL_SHORT && n > 1) {                                                                     \
            struct iovec half[FAULTS_MAX_IOV];                                                                 \
            faults_log(OP, fd, OFF, n, fail);                                                                  \
            cnt = faults_half_iov(iov, cnt, half);                                                             \
            return real_##name SHORT_ARGS;                                                                     \
        }                                                                                                      \
        return real_##name ARGS;                                                                               \
    }

#define IOVP const struct iovec *iov, int cnt
VEC_WRAPPER(writev, OP_WRITE, (int fd, IOVP), (int, const struct iovec *, int), (fd, iov, cnt), (fd, half, cnt), -1)
VEC_WRAPPER(readv, OP_READ, (int fd, IOVP), (int, const struct iovec *, int), (fd, iov, cnt), (fd, half, cnt), -1)
VEC_WRAPPER(pwritev, OP_WRITE, (int fd, IOVP, off_t o), (int, const struct iovec *, int, off_t), (fd, iov, cnt, o),
            (fd, half, cnt, o), (long long)o)
VEC_WRAPPER(pwritev64, OP_WRITE, (int fd, IOVP, off_t o), (int, const struct iovec *, int, off_t),
            (fd, iov, cnt, o), (fd, half, cnt, o), (long long)o)
VEC_WRAPPER(preadv, OP_READ, (int fd, IOVP, off_t o), (int, const struct iovec *, int, off_t), (fd, iov, cnt, o),
            (fd, half, cnt, o), (long long)o)
VEC_WRAPPER(preadv64, OP_READ, (int fd, IOVP, off_t o), (int, const struct iovec *, int, off_t), (fd, iov, cnt, o),
            (fd, half, cnt, o), (long long)o)
VEC_WRAPPER(pwritev2, OP_WRITE, (int fd, IOVP, off_t o, int fl), (int, const struct iovec *, int, off_t, int),
            (fd, iov, cnt, o, fl), (fd, half, cnt, o, fl), (long long)o)
VEC_WRAPPER(preadv2, OP_READ, (int fd, IOVP, off_t o, int fl), (int, const struct iovec *, int, off_t, int),
            (fd, iov, cnt, o, fl), (fd, half, cnt, o, fl), (long long)o)

/* A call without data: fails or passes through. */
#define PLAIN_WRAPPER(name, OP, PARAMS, TYPES, ARGS)                                                            \
    FAULTS_EXPORT int name PARAMS                                                                              \
    {                                                                                                          \
        REAL(int, name, TYPES);                                                                                \
        int fail = faults_decide(OP, fd, NULL);                                                                \
        if (fail > 0 || fail == FAIL_KILL) FAIL_OR_KILL(OP, fd, 0, 0, fail);                                   \
        return real_##name ARGS;                                                                               \
    }

PLAIN_WRAPPER(fsync, OP_SYNC, (int fd), (int), (fd))
PLAIN_WRAPPER(fdatasync, OP_SYNC, (int fd), (int), (fd))
PLAIN_WRAPPER(ftruncate, OP_TRUNCATE, (int fd, off_t len), (int, off_t), (fd, len))
PLAIN_WRAPPER(ftruncate64, OP_TRUNCATE, (int fd, off_t len), (int, off_t), (fd, len))
