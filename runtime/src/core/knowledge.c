/* The knowledge store (knowledge.h): one file, a section per module, read by rank 0 and broadcast, saved under a
 * lock by read-merge-write and an atomic rename. docs/design/knowledge.md gives the format and the reasons. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "knowledge.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core.h"

long long iotame__knowledge_lock_ns = 10000000000LL;

/* ---- the format ---- */

/* The modules object of a parsed file (a new reference), converting the version-1 files of the selector
 * ("entries") and of the throttle ("throttle"); NULL when root is not a knowledge file this runtime understands
 * (a newer version included: never downgraded by a save). */
static json_t *knowledge_modules(json_t *root)
{
    if (!json_is_object(root)) return NULL;
    const json_t *v = json_object_get(root, "version");
    if (json_is_integer(v) && json_integer_value(v) == IOTAME_KNOWLEDGE_VERSION) {
        json_t *modules = json_object_get(root, "modules");
        if (!json_is_object(modules)) return NULL;
        const char *name;
        json_t *section;
        json_object_foreach(modules, name, section)
            if (!json_is_object(section)) return NULL;
        return json_incref(modules);
    }
    if (v && !(json_is_integer(v) && json_integer_value(v) == 1)) return NULL;
    json_t *entries = json_object_get(root, "entries"), *throttle = json_object_get(root, "throttle");
    if (!json_is_array(entries) && !json_is_object(throttle)) return NULL;
    json_t *modules = json_object();
    int rc = modules ? 0 : -1;
    if (!rc && json_is_array(entries))
        rc = json_object_set_new(modules, "collective", json_pack("{s:O}", "entries", entries));
    if (!rc && json_is_object(throttle)) rc = json_object_set(modules, "throttle", throttle);
    if (rc) {
        json_decref(modules);
        return NULL;
    }
    return modules;
}

/* A file's text parsed into a version-2 root (a new reference): 0; -EINVAL not a knowledge file; -ENOMEM. An empty
 * text is a file without knowledge (created beforehand, say with touch). */
static int knowledge_parse_root(const char *text, size_t len, json_t **root)
{
    *root = NULL;
    json_t *modules = NULL;
    if (len > 0) {
        json_error_t err;
        json_t *parsed = json_loadb(text, len, 0, &err);
        if (!parsed) return json_error_code(&err) == json_error_out_of_memory ? -ENOMEM : -EINVAL;
        modules = knowledge_modules(parsed);
        json_decref(parsed);
        if (!modules) return -EINVAL;
    } else if (!(modules = json_object())) {
        return -ENOMEM;
    }
    *root = json_pack("{s:i,s:o}", "version", IOTAME_KNOWLEDGE_VERSION, "modules", modules);
    return *root ? 0 : -ENOMEM;
}

int iotame_knowledge_section(const char *text, size_t len, const char *module, json_t **section)
{
    json_t *root;
    *section = NULL;
    int rc = knowledge_parse_root(text, len, &root);
    if (rc) return rc;
    json_t *s = json_object_get(json_object_get(root, "modules"), module);
    *section = s ? json_incref(s) : json_object();
    json_decref(root);
    return *section ? 0 : -ENOMEM;
}

/* ---- reading ---- */

/* The whole file at path in *text (malloc'd, *len bytes): 0, -ENOENT, or -errno. */
static int knowledge_slurp(const char *path, char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    struct stat st;
    size_t cap = fstat(fd, &st) == 0 && st.st_size > 0 ? (size_t)st.st_size + 1 : 4096;
    char *buf = malloc(cap);
    int rc = buf ? 0 : -ENOMEM;
    size_t n = 0;
    while (!rc) {
        if (n == cap) {
            char *grown = realloc(buf, cap *= 2);
            if (!grown) {
                rc = -ENOMEM;
                break;
            }
            buf = grown;
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) rc = -errno;
        else if (got == 0) break;
        else n += (size_t)got;
    }
    if (close(fd) != 0 && !rc) rc = -errno;
    if (rc) {
        free(buf);
        return rc;
    }
    *text = buf;
    *len = n;
    return 0;
}

/* The file's length (or -ENOENT, -EIO) heads the first piece, and the pieces are of a fixed size, so a file of up
 * to 16 KiB costs one broadcast, and every rank takes part in every broadcast even when it cannot allocate the
 * text. */
int iotame_knowledge_read(const char *path, const char *module, MPI_Comm comm, json_t **section)
{
    enum { PIECE = 16384, HEAD = sizeof(long long) };
    char *text = NULL, piece[PIECE];
    long long n = 0;
    int rank;
    *section = NULL;
    PMPI_Comm_rank(comm, &rank);
    if (rank == 0) {
        size_t len;
        int rc = knowledge_slurp(path, &text, &len);
        n = rc == 0 ? (long long)len : rc == -ENOENT ? -ENOENT : -EIO;
        if (rc && rc != -ENOENT)
            iotame_log_warn("knowledge file %s cannot be read (%s): not used\n", path, strerror(-rc));
    }
    const long long first = PIECE - HEAD; /* the text's bytes in the first piece */
    if (rank == 0) {
        memcpy(piece, &n, HEAD);
        if (n > 0) memcpy(piece + HEAD, text, (size_t)(n < first ? n : first));
    }
    PMPI_Bcast(piece, PIECE, MPI_BYTE, 0, comm);
    memcpy(&n, piece, HEAD);
    int mine = 0; /* this rank's own failure */
    if (rank != 0 && n >= 0) {
        if ((text = malloc((size_t)n + 1))) memcpy(text, piece + HEAD, (size_t)(n < first ? n : first));
        else mine = -ENOMEM;
    }
    for (long long at = first; at < n; at += PIECE) {
        int len = (int)(n - at < PIECE ? n - at : PIECE);
        PMPI_Bcast(rank == 0 ? text + at : piece, len, MPI_BYTE, 0, comm);
        if (rank != 0 && text) memcpy(text + at, piece, (size_t)len);
    }
    int rc = n < 0 ? (int)n : mine ? mine : iotame_knowledge_section(text, (size_t)n, module, section);
    free(text);
    if (rank == 0 && rc == -EINVAL)
        iotame_log_warn("knowledge file %s is not a knowledge file (expected {\"version\": %d, \"modules\": {...}}, "
                        "or a file of version 1): not used, and left as it is\n", path, IOTAME_KNOWLEDGE_VERSION);
    return rc;
}

/* ---- saving ---- */

/* Saves of one process are serialized here as well: a lock of the file system may be per process (flock on NFS is
 * emulated by a POSIX lock, which two threads of one process both hold). */
static pthread_mutex_t knowledge_mutex = PTHREAD_MUTEX_INITIALIZER;

/* Takes the lock file's exclusive lock, waiting at most iotame__knowledge_lock_ns: the fd, or -ETIMEDOUT, -errno
 * (a file system without locks: ENOLCK, ENOSYS, EOPNOTSUPP). Never blocks in the kernel: a holder that hangs
 * (a job stopped by a debugger, a file system that stalls) costs this save, not the job. */
static int knowledge_lock(const char *lockpath)
{
    int fd = open(lockpath, O_CREAT | O_RDWR | O_CLOEXEC, 0666);
    if (fd < 0) return -errno;
    const uint64_t t0 = iotame_monotonic_ns();
    long sleep_ns = 1000000;
    for (;;) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) return fd;
        int e = errno;
        if (e == EINTR) continue;
        if (e != EWOULDBLOCK || (long long)(iotame_monotonic_ns() - t0) >= iotame__knowledge_lock_ns) {
            close(fd); /* nothing was written through it: its error cannot matter */
            return e == EWOULDBLOCK ? -ETIMEDOUT : -e;
        }
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL); /* an early wake-up (a signal) only polls sooner */
        if (sleep_ns < 64000000) sleep_ns *= 2;
    }
}

/* After the save: its outcome stands whatever the unlock says (closing the descriptor releases the lock anyway). */
static void knowledge_unlock(const char *lockpath, int fd)
{
    int rc = flock(fd, LOCK_UN) == 0 ? 0 : -errno;
    if (close(fd) != 0 && !rc) rc = -errno;
    if (rc) iotame_log_warn("knowledge file lock %s: cannot release it (%s)\n", lockpath, strerror(-rc));
}

/* Writes text to tmp, fsyncs it and renames it over path; tmp is removed when anything fails. */
static int knowledge_replace(const char *path, const char *tmp, const char *text)
{
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return -errno;
    int rc = 0;
    for (size_t left = strlen(text); left > 0 && !rc;) {
        ssize_t put = write(fd, text, left);
        if (put < 0 && errno != EINTR) rc = -errno;
        if (put > 0) {
            text += put;
            left -= (size_t)put;
        }
    }
    if (!rc && fsync(fd) != 0) rc = -errno;
    if (close(fd) != 0 && !rc) rc = -errno;
    if (!rc && rename(tmp, path) != 0) rc = -errno;
    if (rc) unlink(tmp); /* what is left of a failed save; the error reported is the save's */
    return rc;
}

/* The rename reaches the disk with the directory: best effort, since the file is already in place for every reader
 * and some file systems cannot fsync a directory. */
static void knowledge_sync_dir(const char *path)
{
    char *dir = strdup(path);
    if (!dir) return;
    char *slash = strrchr(dir, '/');
    if (slash) slash[slash == dir] = '\0'; /* "/x" -> "/", "a/x" -> "a" */
    int fd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        (void)close(fd);
    }
    free(dir);
}

/* Under the lock: the file as it is now, merged with fresh, written to tmp and renamed over path. */
static int knowledge_merge_locked(const char *path, const char *tmp, const char *module,
                                  iotame_knowledge_merge_fn merge, json_t *fresh)
{
    char *text;
    size_t len;
    json_t *root = NULL;
    int rc = knowledge_slurp(path, &text, &len);
    if (rc == -ENOENT) rc = knowledge_parse_root("", 0, &root);
    else if (rc == 0) {
        rc = knowledge_parse_root(text, len, &root);
        free(text);
        if (rc == -EINVAL) rc = -EEXIST; /* someone else's file, a broken one or a newer one: never overwritten */
    }
    if (rc) return rc;
    json_t *modules = json_object_get(root, "modules"), *section = json_object_get(modules, module);
    if (!section && (!(section = json_object()) || json_object_set_new(modules, module, section) != 0)) rc = -ENOMEM;
    if (!rc) rc = merge(section, fresh);
    char *out = rc ? NULL : json_dumps(root, JSON_INDENT(1));
    if (!rc && !out) rc = -ENOMEM;
    if (!rc) rc = knowledge_replace(path, tmp, out);
    free(out);
    json_decref(root);
    return rc;
}

static void knowledge_report(const char *path, const char *module, int rc)
{
    if (rc == -EEXIST)
        iotame_log_warn("knowledge file %s is not a knowledge file of version %d or 1: left as it is, the %s "
                        "knowledge of this run not saved\n", path, IOTAME_KNOWLEDGE_VERSION, module);
    else if (rc == -ETIMEDOUT)
        iotame_log_warn("knowledge file %s: its lock %s.lock could not be had within %.0f s: the %s knowledge of this "
                        "run not saved\n", path, path, (double)iotame__knowledge_lock_ns * 1e-9, module);
    else
        iotame_log_warn("knowledge file %s: the %s knowledge of this run not saved (%s)\n", path, module,
                        strerror(-rc));
}

int iotame_knowledge_merge(const char *path, const char *module, iotame_knowledge_merge_fn merge, json_t *fresh)
{
    size_t n = strlen(path) + 32;
    char *lockpath = malloc(n), *tmp = malloc(n);
    int rc = lockpath && tmp ? 0 : -ENOMEM;
    if (!rc) {
        snprintf(lockpath, n, "%s.lock", path);
        snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
        pthread_mutex_lock(&knowledge_mutex);
        int fd = knowledge_lock(lockpath);
        rc = fd < 0 ? fd : knowledge_merge_locked(path, tmp, module, merge, fresh);
        if (rc == 0) knowledge_sync_dir(path);
        if (fd >= 0) knowledge_unlock(lockpath, fd);
        pthread_mutex_unlock(&knowledge_mutex);
    }
    if (rc) knowledge_report(path, module, rc);
    free(lockpath);
    free(tmp);
    return rc;
}
