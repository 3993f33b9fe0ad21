/* The POSIX wrappers: open/openat/creat, close, read/write, pread/pwrite, readv/writev, preadv/pwritev(2), lseek,
 * fsync/fdatasync and ftruncate (and their 64 and fortified forms), interposed by symbol in front of the C library
 * (the technique of Darshan's POSIX module under LD_PRELOAD). Each one looks up the descriptor in one array; a
 * descriptor that is not recorded goes straight to the real function, found with dlsym(RTLD_NEXT) at first use.
 * Contract: errno is what the real call set; the call is made exactly once, with the caller's arguments. */
#undef _FORTIFY_SOURCE
#undef _FILE_OFFSET_BITS /* our open must be open, not a redirection to open64 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "intercept/intercept.h"
#include "posix.h"

/* The fortified forms' prototypes (their headers declare them only under _FORTIFY_SOURCE). */
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen);

_Thread_local int iotame__posix_quiet __attribute__((tls_model("initial-exec")));
_Thread_local unsigned long iotame__posix_failed __attribute__((tls_model("initial-exec")));

/* ---- the real functions ---- */

#define REAL_FUNCTIONS(X)                                                                                      \
    X(open, int, (const char *, int, ...))                                                                     \
    X(open64, int, (const char *, int, ...))                                                                   \
    X(openat, int, (int, const char *, int, ...))                                                              \
    X(openat64, int, (int, const char *, int, ...))                                                            \
    X(creat, int, (const char *, mode_t))                                                                      \
    X(creat64, int, (const char *, mode_t))                                                                    \
    X(__open_2, int, (const char *, int))                                                                      \
    X(__open64_2, int, (const char *, int))                                                                    \
    X(__openat_2, int, (int, const char *, int))                                                               \
    X(__openat64_2, int, (int, const char *, int))                                                             \
    X(close, int, (int))                                                                                       \
    X(read, ssize_t, (int, void *, size_t))                                                                    \
    X(write, ssize_t, (int, const void *, size_t))                                                             \
    X(__read_chk, ssize_t, (int, void *, size_t, size_t))                                                      \
    X(pread, ssize_t, (int, void *, size_t, off_t))                                                            \
    X(pread64, ssize_t, (int, void *, size_t, off64_t))                                                        \
    X(__pread_chk, ssize_t, (int, void *, size_t, off_t, size_t))                                              \
    X(__pread64_chk, ssize_t, (int, void *, size_t, off64_t, size_t))                                          \
    X(pwrite, ssize_t, (int, const void *, size_t, off_t))                                                     \
    X(pwrite64, ssize_t, (int, const void *, size_t, off64_t))                                                 \
    X(readv, ssize_t, (int, const struct iovec *, int))                                                        \
    X(writev, ssize_t, (int, const struct iovec *, int))                                                       \
    X(preadv, ssize_t, (int, const struct iovec *, int, off_t))                                                \
    X(preadv64, ssize_t, (int, const struct iovec *, int, off64_t))                                           \
    X(pwritev, ssize_t, (int, const struct iovec *, int, off_t))                                               \
    X(pwritev64, ssize_t, (int, const struct iovec *, int, off64_t))                                          \
    X(preadv2, ssize_t, (int, const struct iovec *, int, off_t, int))                                          \
    X(preadv64v2, ssize_t, (int, const struct iovec *, int, off64_t, int))                                     \
    X(pwritev2, ssize_t, (int, const struct iovec *, int, off_t, int))                                         \
    X(pwritev64v2, ssize_t, (int, const struct iovec *, int, off64_t, int))                                    \
    X(lseek, off_t, (int, off_t, int))                                                                         \
    X(lseek64, off64_t, (int, off64_t, int))                                                                   \
    X(fsync, int, (int))                                                                                       \
    X(fdatasync, int, (int))                                                                                   \
    X(ftruncate, int, (int, off_t))                                                                            \
    X(ftruncate64, int, (int, off64_t))

#define REAL_FIELD(name, ret, params) ret(*name) params;
static struct {
    REAL_FUNCTIONS(REAL_FIELD)
} real;

/* Nonzero on a thread that is resolving: dlsym may allocate, and an allocator or dlsym itself may open or read a
 * file; such a call reaches the kernel directly (the bootstrap path) instead of recursing into the resolution. */
static _Thread_local int resolving __attribute__((tls_model("initial-exec")));
static pthread_once_t resolved = PTHREAD_ONCE_INIT;

static void resolve_all(void)
{
    resolving = 1;
#define REAL_LOOKUP(name, ret, params) __atomic_store_n(&real.name, (ret(*) params)dlsym(RTLD_NEXT, #name), __ATOMIC_RELEASE);
    REAL_FUNCTIONS(REAL_LOOKUP)
    resolving = 0;
}

/* Nonzero when the real function is known; 0 on the bootstrap path (or when the C library lacks it). */
#define REAL(name) (__builtin_expect(real.name != NULL, 1) || resolve((void *const *)&real.name))
static int resolve(void *const *slot)
{
    if (resolving) return 0;
    pthread_once(&resolved, resolve_all);
    return __atomic_load_n((void *const *)slot, __ATOMIC_ACQUIRE) != NULL;
}

/* ---- opening and closing ---- */

/* The mode argument exists when the flags create a file. */
#define MODE_ARG(flags)                                                                                        \
    mode_t mode = 0;                                                                                           \
    if ((flags) & O_CREAT || ((flags) & O_TMPFILE) == O_TMPFILE) {                                             \
        va_list ap;                                                                                            \
        va_start(ap, flags);                                                                                   \
        mode = (mode_t)va_arg(ap, int);                                                                        \
        va_end(ap);                                                                                            \
    }

/* An open of any kind: when the layer is on, timed and shown to record.c (which decides whether to record it). */
#define OPEN_BODY(NAME, DIRFD, PATH, FLAGS, CALL, FALLBACK)                                                    \
    if (!REAL(NAME)) return (int)(FALLBACK);                                                                   \
    unsigned on_ = __atomic_load_n(&iotame__posix_nfds, __ATOMIC_RELAXED);                                     \
    if (__builtin_expect(!on_ || iotame__posix_quiet, 1)) return CALL;                                         \
    uint64_t t0 = iotame_now();                                                                                \
    int fd = CALL;                                                                                             \
    uint64_t t = iotame_now() - t0;                                                                            \
    if (fd >= 0) {                                                                                             \
        int e = errno;                                                                                         \
        iotame__posix_quiet++;                                                                                 \
        iotame__posix_opened(DIRFD, PATH, fd, FLAGS, t);                                                       \
        iotame__posix_quiet--;                                                                                 \
        errno = e;                                                                                             \
    }                                                                                                          \
    return fd;

#define SYS_OPEN(dirfd, path, flags, mode) syscall(SYS_openat, dirfd, path, flags, mode)

IOTAME_WRAPPER int open(const char *path, int flags, ...)
{
    MODE_ARG(flags)
    OPEN_BODY(open, AT_FDCWD, path, flags, real.open(path, flags, mode), SYS_OPEN(AT_FDCWD, path, flags, mode))
}
IOTAME_WRAPPER int open64(const char *path, int flags, ...)
{
    MODE_ARG(flags)
    OPEN_BODY(open64, AT_FDCWD, path, flags, real.open64(path, flags, mode),
              SYS_OPEN(AT_FDCWD, path, flags | O_LARGEFILE, mode))
}
IOTAME_WRAPPER int openat(int dirfd, const char *path, int flags, ...)
{
    MODE_ARG(flags)
    OPEN_BODY(openat, dirfd, path, flags, real.openat(dirfd, path, flags, mode), SYS_OPEN(dirfd, path, flags, mode))
}
IOTAME_WRAPPER int openat64(int dirfd, const char *path, int flags, ...)
{
    MODE_ARG(flags)
    OPEN_BODY(openat64, dirfd, path, flags, real.openat64(dirfd, path, flags, mode),
              SYS_OPEN(dirfd, path, flags | O_LARGEFILE, mode))
}
#define CREAT_FLAGS (O_CREAT | O_WRONLY | O_TRUNC)
IOTAME_WRAPPER int creat(const char *path, mode_t mode)
{
    OPEN_BODY(creat, AT_FDCWD, path, CREAT_FLAGS, real.creat(path, mode), SYS_OPEN(AT_FDCWD, path, CREAT_FLAGS, mode))
}
IOTAME_WRAPPER int creat64(const char *path, mode_t mode)
{
    OPEN_BODY(creat64, AT_FDCWD, path, CREAT_FLAGS, real.creat64(path, mode),
              SYS_OPEN(AT_FDCWD, path, CREAT_FLAGS | O_LARGEFILE, mode))
}
/* The fortified forms (_FORTIFY_SOURCE: an open whose flags the compiler cannot see, without a mode). */
IOTAME_WRAPPER int __open_2(const char *path, int flags)
{
    OPEN_BODY(__open_2, AT_FDCWD, path, flags, real.__open_2(path, flags), SYS_OPEN(AT_FDCWD, path, flags, 0))
}
IOTAME_WRAPPER int __open64_2(const char *path, int flags)
{
    OPEN_BODY(__open64_2, AT_FDCWD, path, flags, real.__open64_2(path, flags),
              SYS_OPEN(AT_FDCWD, path, flags | O_LARGEFILE, 0))
}
IOTAME_WRAPPER int __openat_2(int dirfd, const char *path, int flags)
{
    OPEN_BODY(__openat_2, dirfd, path, flags, real.__openat_2(dirfd, path, flags), SYS_OPEN(dirfd, path, flags, 0))
}
IOTAME_WRAPPER int __openat64_2(int dirfd, const char *path, int flags)
{
    OPEN_BODY(__openat64_2, dirfd, path, flags, real.__openat64_2(dirfd, path, flags),
              SYS_OPEN(dirfd, path, flags | O_LARGEFILE, 0))
}

IOTAME_WRAPPER int close(int fd)
{
    if (!REAL(close)) return (int)syscall(SYS_close, fd);
    iotame__posix_fd_t *d = iotame__posix_fd(fd);
    if (__builtin_expect(!d, 1)) return real.close(fd);
    int durable = iotame_core_sync_at_close() && d->written && REAL(fsync);
    iotame_posix_file_t *f = iotame__posix_closing(fd);
    uint64_t t0 = iotame_now();
    int synced = durable ? real.fsync(fd) : 0, sync_errno = errno; /* its time is the close's */
    if (durable && f) iotame__posix_meta(f, IOTAME_POSIX_N_SYNC, IOTAME_POSIX_T_SYNC, iotame_now() - t0);
    int rc = real.close(fd);
    if (synced != 0 && rc == 0) { /* the data did not reach the storage: the close reports it */
        rc = -1;
        errno = sync_errno;
    }
    uint64_t t = iotame_now() - t0;
    int e = errno;
    if (f) iotame__posix_meta(f, IOTAME_POSIX_N_CLOSE, IOTAME_POSIX_T_META, t);
    errno = e;
    return rc;
}

/* ---- data ---- */

static inline void hooks_before(const iotame_posix_io_t *io)
{
    if (!iotame__hooks_posix_before.n) return;
    iotame__posix_quiet++;
    iotame_modules_posix_before(io);
    iotame__posix_quiet--;
}

static inline void hooks_after(const iotame_posix_io_t *io, ssize_t rc, uint64_t ticks)
{
    if (!iotame__hooks_posix_after.n) return;
    iotame__posix_quiet++;
    iotame_modules_posix_after(io, rc, iotame__posix_ns(ticks));
    iotame__posix_quiet--;
}

static size_t iov_bytes(const struct iovec *iov, int n)
{
    size_t b = 0;
    for (int i = 0; i < n; i++) b += iov[i].iov_len;
    return b;
}

/* A request on a recorded descriptor: the hooks before it, the real call (inside the file's in-flight count), the
 * accounting, the hooks after. POSITIONAL: the call reads or moves the descriptor's file position. errno is saved
 * only where something after the call may change it (a hook, the lseek of an O_APPEND write): the accounting
 * itself is arithmetic. */
#define REQUEST(NAME, W, OFF, BYTES, CALL, POSITIONAL)                                                          \
    iotame__posix_fd_t *d = &iotame__posix_fds[fd];                                                            \
    iotame_posix_io_t io = {fd, W, (off_t)(OFF), (size_t)(BYTES), __atomic_load_n(&d->file, __ATOMIC_ACQUIRE)}; \
    iotame_where_mark_t wmark = iotame_where_push("posix", #NAME);                                             \
    hooks_before(&io);                                                                                         \
    iotame__posix_request_begin(io.file);                                                                      \
    iotame_where_wait(IOTAME_WAIT_SYSCALL, #NAME, fd, (int64_t)(BYTES), (int64_t)(OFF));                       \
    uint64_t t0 = iotame_now();                                                                                \
    ssize_t rc = CALL;                                                                                         \
    uint64_t t = iotame_now() - t0;                                                                            \
    iotame_where_pop(wmark);                                                                                   \
    int careful = iotame__hooks_posix_after.n || (W && d->append), e = careful ? errno : 0;                    \
    if (W && rc > 0) d->written = 1;                                                                           \
    if (rc < 0) iotame__posix_failed++;                                                                        \
    if (POSITIONAL && rc > 0) {                                                                                \
        if (W && d->append) {                                                                                  \
            off_t end = real.lseek ? real.lseek(fd, 0, SEEK_CUR) : -1;                                         \
            if (end >= rc) io.offset = end - rc;                                                               \
        }                                                                                                      \
        d->pos = io.offset + rc;                                                                               \
    }                                                                                                          \
    iotame__posix_request_end(io.file, W, io.offset, rc, t);                                                   \
    hooks_after(&io, rc, t);                                                                                   \
    if (careful) errno = e;                                                                                    \
    return rc;

/* A data call: pass-through unless the descriptor is recorded. RATIONALE: the recorded path is a function of its
 * own, so that the pass-through path saves no registers and tail-calls the real function. */
#define DATA(NAME, PARAMS, ARGS, W, OFF, BYTES, FALLBACK, POSITIONAL)                                           \
    static __attribute__((noinline)) ssize_t NAME##_recorded PARAMS { REQUEST(NAME, W, OFF, BYTES, real.NAME ARGS, POSITIONAL) } \
    static __attribute__((noinline, cold)) ssize_t NAME##_unresolved PARAMS                                    \
    {                                                                                                          \
        return REAL(NAME) ? NAME ARGS : FALLBACK;                                                              \
    }                                                                                                          \
    IOTAME_WRAPPER ssize_t NAME PARAMS                                                                         \
    {                                                                                                          \
        if (__builtin_expect(!real.NAME, 0)) return NAME##_unresolved ARGS;                                    \
        if (__builtin_expect(!iotame__posix_fd(fd), 1)) return real.NAME ARGS;                                 \
        return NAME##_recorded ARGS;                                                                           \
    }

#define SYS(...) syscall(__VA_ARGS__)
/* Offsets of the vectored system calls are passed as two longs (low, high). */
#define LO(o) ((unsigned long)(o))
#define HI(o) ((unsigned long)((uint64_t)(o) >> 32 >> 32))
#define IOV const struct iovec *iov, int cnt

DATA(read, (int fd, void *buf, size_t n), (fd, buf, n), 0, d->pos, n, SYS(SYS_read, fd, buf, n), 1)
DATA(write, (int fd, const void *buf, size_t n), (fd, buf, n), 1, d->pos, n, SYS(SYS_write, fd, buf, n), 1)
DATA(__read_chk, (int fd, void *buf, size_t n, size_t buflen), (fd, buf, n, buflen), 0, d->pos, n,
     SYS(SYS_read, fd, buf, n), 1)
DATA(pread, (int fd, void *buf, size_t n, off_t off), (fd, buf, n, off), 0, off, n,
     SYS(SYS_pread64, fd, buf, n, off), 0)
DATA(pread64, (int fd, void *buf, size_t n, off64_t off), (fd, buf, n, off), 0, off, n,
     SYS(SYS_pread64, fd, buf, n, off), 0)
DATA(__pread_chk, (int fd, void *buf, size_t n, off_t off, size_t buflen), (fd, buf, n, off, buflen), 0, off, n,
     SYS(SYS_pread64, fd, buf, n, off), 0)
DATA(__pread64_chk, (int fd, void *buf, size_t n, off64_t off, size_t buflen), (fd, buf, n, off, buflen), 0, off,
     n, SYS(SYS_pread64, fd, buf, n, off), 0)
DATA(pwrite, (int fd, const void *buf, size_t n, off_t off), (fd, buf, n, off), 1, off, n,
     SYS(SYS_pwrite64, fd, buf, n, off), 0)
DATA(pwrite64, (int fd, const void *buf, size_t n, off64_t off), (fd, buf, n, off), 1, off, n,
     SYS(SYS_pwrite64, fd, buf, n, off), 0)
DATA(readv, (int fd, IOV), (fd, iov, cnt), 0, d->pos, iov_bytes(iov, cnt), SYS(SYS_readv, fd, iov, cnt), 1)
DATA(writev, (int fd, IOV), (fd, iov, cnt), 1, d->pos, iov_bytes(iov, cnt), SYS(SYS_writev, fd, iov, cnt), 1)
DATA(preadv, (int fd, IOV, off_t off), (fd, iov, cnt, off), 0, off, iov_bytes(iov, cnt),
     SYS(SYS_preadv, fd, iov, cnt, LO(off), HI(off)), 0)
DATA(preadv64, (int fd, IOV, off64_t off), (fd, iov, cnt, off), 0, off, iov_bytes(iov, cnt),
     SYS(SYS_preadv, fd, iov, cnt, LO(off), HI(off)), 0)
DATA(pwritev, (int fd, IOV, off_t off), (fd, iov, cnt, off), 1, off, iov_bytes(iov, cnt),
     SYS(SYS_pwritev, fd, iov, cnt, LO(off), HI(off)), 0)
DATA(pwritev64, (int fd, IOV, off64_t off), (fd, iov, cnt, off), 1, off, iov_bytes(iov, cnt),
     SYS(SYS_pwritev, fd, iov, cnt, LO(off), HI(off)), 0)
/* preadv2/pwritev2 with offset -1 use and move the file position. */
DATA(preadv2, (int fd, IOV, off_t off, int flags), (fd, iov, cnt, off, flags), 0, off == -1 ? d->pos : off,
     iov_bytes(iov, cnt), SYS(SYS_preadv2, fd, iov, cnt, LO(off), HI(off), flags), off == -1)
DATA(preadv64v2, (int fd, IOV, off64_t off, int flags), (fd, iov, cnt, off, flags), 0, off == -1 ? d->pos : off,
     iov_bytes(iov, cnt), SYS(SYS_preadv2, fd, iov, cnt, LO(off), HI(off), flags), off == -1)
DATA(pwritev2, (int fd, IOV, off_t off, int flags), (fd, iov, cnt, off, flags), 1, off == -1 ? d->pos : off,
     iov_bytes(iov, cnt), SYS(SYS_pwritev2, fd, iov, cnt, LO(off), HI(off), flags), off == -1)
DATA(pwritev64v2, (int fd, IOV, off64_t off, int flags), (fd, iov, cnt, off, flags), 1, off == -1 ? d->pos : off,
     iov_bytes(iov, cnt), SYS(SYS_pwritev2, fd, iov, cnt, LO(off), HI(off), flags), off == -1)

/* ---- metadata and sync ---- */

/* A call that moves no data on a recorded descriptor: timed and counted (the recorded path out of line, as DATA's). */
#define META(NAME, RET, PARAMS, ARGS, WHAT, CAT, FALLBACK, AFTER)                                               \
    static __attribute__((noinline)) RET NAME##_recorded PARAMS                                                \
    {                                                                                                          \
        iotame__posix_fd_t *d = &iotame__posix_fds[fd];                                                        \
        iotame_posix_file_t *file = __atomic_load_n(&d->file, __ATOMIC_ACQUIRE); /* a closed fd is reused */  \
        uint64_t t0 = iotame_now();                                                                            \
        RET rc = real.NAME ARGS;                                                                               \
        uint64_t t = iotame_now() - t0;                                                                        \
        AFTER;                                                                                                 \
        iotame__posix_meta(file, WHAT, CAT, t);                                                                \
        return rc;                                                                                             \
    }                                                                                                          \
    static __attribute__((noinline, cold)) RET NAME##_unresolved PARAMS                                        \
    {                                                                                                          \
        return REAL(NAME) ? NAME ARGS : (RET)(FALLBACK);                                                       \
    }                                                                                                          \
    IOTAME_WRAPPER RET NAME PARAMS                                                                             \
    {                                                                                                          \
        if (__builtin_expect(!real.NAME, 0)) return NAME##_unresolved ARGS;                                    \
        if (__builtin_expect(!iotame__posix_fd(fd), 1)) return real.NAME ARGS;                                 \
        return NAME##_recorded ARGS;                                                                           \
    }

META(lseek, off_t, (int fd, off_t off, int whence), (fd, off, whence), IOTAME_POSIX_N_SEEK, IOTAME_POSIX_T_META,
     SYS(SYS_lseek, fd, off, whence), if (rc >= 0) d->pos = rc)
META(lseek64, off64_t, (int fd, off64_t off, int whence), (fd, off, whence), IOTAME_POSIX_N_SEEK,
     IOTAME_POSIX_T_META, SYS(SYS_lseek, fd, off, whence), if (rc >= 0) d->pos = rc)
META(fsync, int, (int fd), (fd), IOTAME_POSIX_N_SYNC, IOTAME_POSIX_T_SYNC, SYS(SYS_fsync, fd), (void)0)
META(fdatasync, int, (int fd), (fd), IOTAME_POSIX_N_SYNC, IOTAME_POSIX_T_SYNC, SYS(SYS_fdatasync, fd), (void)0)
META(ftruncate, int, (int fd, off_t len), (fd, len), IOTAME_POSIX_N_TRUNCATE, IOTAME_POSIX_T_META,
     SYS(SYS_ftruncate, fd, len), (void)0)
META(ftruncate64, int, (int fd, off64_t len), (fd, len), IOTAME_POSIX_N_TRUNCATE, IOTAME_POSIX_T_META,
     SYS(SYS_ftruncate, fd, len), (void)0)
