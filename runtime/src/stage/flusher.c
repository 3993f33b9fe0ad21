/* The flusher: a thread of the node's first process that writes the ring behind, in batches. A batch is every
 * committed record from the tail; its extents, from all the node's processes, are sorted by file and offset and
 * adjacent ones written with one pwritev. Where two extents of a file in a batch overlap, that file's extents are
 * written one by one in the order they were staged, so the later write wins as it would have without staging.
 * It makes no MPI call: the application's thread level does not matter. Its writes go through the POSIX layer like
 * the library's (throttle and emulate see them). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/uio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "stage.h"

typedef struct {
    int32_t file;
    uint32_t rank;
    int64_t off, len;
    const char *data;
    uint64_t seq;
} piece_t;

static pthread_t thread;
static int running;
static stage_flush_knobs_t knobs;
/* this process's descriptors of the staged files, with the identity they were opened for */
static struct {
    int wfd, rfd;
    uint64_t dev, ino;
} fds[STAGE_FILES];
static piece_t *pieces;
static size_t npieces, pieces_cap;
#ifndef IOV_MAX
#define IOV_MAX 1024
#endif
static struct iovec iov[IOV_MAX];

static char *ring(stage_area_t *a) { return stage_ring(a); }

static void close_fds(int i)
{
    if (fds[i].wfd >= 0) close(fds[i].wfd);
    if (fds[i].rfd >= 0) close(fds[i].rfd);
    fds[i].wfd = fds[i].rfd = -1;
}

/* A descriptor of file i for writing (or reading), opened on first use; -errno when it cannot be had. The slot's
 * path is checked to still name the file staged for (not one created in its place). */
static int fd_of(stage_area_t *a, int i, int write)
{
    const stage_file_t *f = &a->file[i];
    if ((fds[i].wfd >= 0 || fds[i].rfd >= 0) && (fds[i].dev != f->dev || fds[i].ino != f->ino)) close_fds(i);
    int *fd = write ? &fds[i].wfd : &fds[i].rfd;
    if (*fd >= 0) return *fd;
    int d = open(f->path, (write ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
    if (d < 0) return -errno;
    struct stat st;
    if (fstat(d, &st) != 0 || (uint64_t)st.st_dev != f->dev || (uint64_t)st.st_ino != f->ino) {
        close(d);
        return -ESTALE;
    }
    fds[i].dev = f->dev;
    fds[i].ino = f->ino;
    return *fd = d;
}

static int by_file_offset(const void *x, const void *y)
{
    const piece_t *a = x, *b = y;
    if (a->file != b->file) return a->file < b->file ? -1 : 1;
    if (a->off != b->off) return a->off < b->off ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int by_seq(const void *x, const void *y)
{
    const piece_t *a = x, *b = y;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int add_piece(piece_t p)
{
    if (npieces == pieces_cap) {
        size_t cap = pieces_cap ? 2 * pieces_cap : 4096;
        piece_t *grown = realloc(pieces, cap * sizeof *grown);
        if (!grown) return -ENOMEM;
        pieces = grown;
        pieces_cap = cap;
    }
    pieces[npieces++] = p;
    return 0;
}

/* Writes iov[0..n) at off, resuming after short writes. Returns 0 or -errno; *done: the bytes written. */
static int write_all(int fd, int n, int64_t off, int64_t *done)
{
    struct iovec *v = iov;
    *done = 0;
    while (n > 0) {
        ssize_t w = pwritev(fd, v, n, (off_t)off);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        if (w == 0) return -EIO;
        off += w;
        *done += w;
        while (n > 0 && (size_t)w >= v->iov_len) w -= (ssize_t)v->iov_len, v++, n--;
        if (n > 0) v->iov_base = (char *)v->iov_base + w, v->iov_len -= (size_t)w;
    }
    return 0;
}

/* The outcome of a run of pieces [p, q) of which the first `done` bytes were written: bytes off the file's
 * pending count; an error names the processes whose pieces were not (wholly) written, and is logged. */
static void settle(stage_area_t *a, const piece_t *p, const piece_t *q, int err, int64_t done)
{
    stage_file_t *f = &a->file[p->file];
    uint64_t failed = 0;
    for (const piece_t *x = p; x < q; x++) {
        __atomic_sub_fetch(&f->pending, (uint64_t)x->len, __ATOMIC_RELAXED);
        if (done >= x->len) {
            done -= x->len;
            continue;
        }
        failed += (uint64_t)(x->len - done);
        done = 0;
        __atomic_or_fetch(&f->error_ranks[(x->rank / 64) % STAGE_RANK_WORDS], 1ull << (x->rank % 64), __ATOMIC_RELAXED);
    }
    if (!err) return;
    int none = 0;
    __atomic_compare_exchange_n(&f->error, &none, -err, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    stage_lock(a);
    f->failed_bytes += failed;
    stage_failure_t *log = a->nfailures ? &a->failure[a->nfailures - 1] : NULL;
    if (!log || log->error != -err || strcmp(log->path, f->path) != 0) {
        log = a->nfailures < STAGE_FAILURES ? &a->failure[a->nfailures++] : NULL;
        if (log) *log = (stage_failure_t){.error = -err}, strncpy(log->path, f->path, sizeof log->path - 1);
    }
    if (log) log->bytes += failed;
    stage_unlock(a);
}

/* Writes the pieces of one file, [p, q), sorted by offset: adjacent ones merged, or one by one in staging order
 * when any overlap. */
static void write_file(stage_area_t *a, piece_t *p, piece_t *q)
{
    int overlap = 0;
    for (piece_t *x = p + 1; x < q && !overlap; x++) overlap = x->off < x[-1].off + x[-1].len;
    if (overlap) {
        qsort(p, (size_t)(q - p), sizeof *p, by_seq);
        __atomic_add_fetch(&a->overlap_batches, 1, __ATOMIC_RELAXED);
    }
    int fd = fd_of(a, p->file, 1);
    while (p < q) {
        piece_t *run = p;
        int n = 0;
        int64_t end = p->off;
        do {
            iov[n++] = (struct iovec){(void *)p->data, (size_t)p->len};
            end += p->len;
            p++;
        } while (!overlap && p < q && p->off == end && n < IOV_MAX);
        int64_t done = 0;
        int err = fd < 0 ? fd : write_all(fd, n, run->off, &done);
        settle(a, run, p, err, done);
        a->writes_out++;
        a->bytes_out += (uint64_t)done;
    }
}

/* Writes the pieces gathered so far, by file. */
static void write_pieces(stage_area_t *a)
{
    qsort(pieces, npieces, sizeof *pieces, by_file_offset);
    for (size_t i = 0; i < npieces;) {
        size_t j = i;
        while (j < npieces && pieces[j].file == pieces[i].file) j++;
        write_file(a, pieces + i, pieces + j);
        i = j;
    }
    npieces = 0;
}

/* Writes the committed records in [from, to). Without memory for the whole batch's list, it is written in parts,
 * in staging order: fewer merges, the same bytes. */
static void write_batch(stage_area_t *a, uint64_t from, uint64_t to)
{
    npieces = 0;
    for (uint64_t pos = from; pos < to;) {
        stage_record_t *r = (stage_record_t *)(ring(a) + pos % a->cap);
        if (r->file >= 0) {
            const iotame_extent_t *x = (const iotame_extent_t *)(r + 1);
            const char *data = (const char *)(x + r->nextents);
            a->records++;
            for (uint32_t i = 0; i < r->nextents; i++) {
                piece_t p = {r->file, r->rank, x[i].off, x[i].len, data, a->extents_in++};
                data += x[i].len;
                if (add_piece(p) == 0) continue;
                write_pieces(a);
                if (add_piece(p) != 0) write_file(a, &p, &p + 1);
            }
        }
        pos += r->size;
    }
    write_pieces(a);
}

/* ---- prefetch ---- */

/* Fills the read-ahead buffers asked for. The lock is held, and released around each read. */
static void fill_prefetch(stage_area_t *a)
{
    for (int i = 0; i < STAGE_PREFETCH_SLOTS && a->asked > 0; i++) {
        stage_prefetch_t *p = &a->prefetch[i];
        if (p->state != PREFETCH_ASKED) continue;
        int fd = fd_of(a, p->file, 0);
        int64_t off = p->off, want = p->len, got = 0;
        stage_unlock(a);
        char *buf = stage_prefetch_buffer(a, i);
        while (fd >= 0 && got < want) {
            ssize_t r = pread(fd, buf + got, (size_t)(want - got), (off_t)(off + got));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            got += r;
        }
        stage_lock(a);
        p->len = got;
        p->state = fd >= 0 ? PREFETCH_READY : PREFETCH_FREE;
        a->asked--;
        a->prefetch_reads++;
        a->prefetch_bytes_read += (uint64_t)got;
        pthread_cond_broadcast(&a->room);
    }
}

/* ---- the thread ---- */

static void wait_work(stage_area_t *a, uint64_t until_ns)
{
    struct timespec ts = {(time_t)(until_ns / 1000000000ull), (long)(until_ns % 1000000000ull)};
    if (pthread_cond_timedwait(&a->work, &a->lock, &ts) == EOWNERDEAD) pthread_mutex_consistent(&a->lock);
}

/* The first position in [from, to) whose record is not committed yet (a writer still copying). */
static uint64_t committed_end(stage_area_t *a, uint64_t from, uint64_t to)
{
    while (from < to) {
        stage_record_t *r = (stage_record_t *)(ring(a) + from % a->cap);
        if (!__atomic_load_n(&r->committed, __ATOMIC_ACQUIRE)) break;
        from += r->size;
    }
    return from;
}

/* Forgets the records of [from, to) (their room is reused: a stale "committed" must not be seen there) and closes
 * the descriptors of files no process uses and nothing is pending for. The lock is held. */
static void retire(stage_area_t *a, uint64_t from, uint64_t to)
{
    for (uint64_t pos = from; pos < to;) {
        stage_record_t *r = (stage_record_t *)(ring(a) + pos % a->cap);
        pos += r->size;
        __atomic_store_n(&r->committed, 0, __ATOMIC_RELAXED);
    }
    for (int i = 0; i < STAGE_FILES; i++) {
        stage_file_t *f = &a->file[i];
        if (f->key && !f->users && !f->pending) {
            close_fds(i);
            if (!f->error) f->key = 0;
        } else if (!f->key && (fds[i].wfd >= 0 || fds[i].rfd >= 0)) {
            close_fds(i);
        }
    }
}

static void *run(void *arg)
{
    stage_area_t *a = arg;
    stage_lock(a);
    for (;;) {
        uint64_t now = iotame_monotonic_ns(), dirty = a->head - a->tail;
        int due = dirty && ((double)dirty > knobs.threshold * (double)a->cap || a->want > a->tail || a->stop ||
                            now - a->last_put_ns >= knobs.delay_ns);
        if (a->asked > 0) fill_prefetch(a);
        if (!due) {
            if (a->stop && a->head == a->tail) break;
            a->idle = !dirty;
            wait_work(a, dirty ? a->last_put_ns + knobs.delay_ns : now + 1000000000ull);
            a->idle = 0;
            continue;
        }
        uint64_t from = a->tail, to = committed_end(a, from, a->head);
        if (to == from) { /* a writer is still copying the next record */
            wait_work(a, now + 200000ull);
            continue;
        }
        int waited = a->waiting;
        stage_unlock(a);
        uint64_t t0 = iotame_monotonic_ns();
        write_batch(a, from, to);
        uint64_t ns = iotame_monotonic_ns() - t0;
        stage_lock(a);
        a->flush_ns += ns;
        if (!waited && !a->waiting) a->overlapped_ns += ns; /* nobody waited for this batch: hidden behind work */
        retire(a, from, to);
        a->tail = to;
        pthread_cond_broadcast(&a->room);
    }
    stage_unlock(a);
    for (int i = 0; i < STAGE_FILES; i++) close_fds(i);
    return NULL;
}

int stage_flusher_start(stage_area_t *a, const stage_flush_knobs_t *k)
{
    knobs = *k;
    for (int i = 0; i < STAGE_FILES; i++) fds[i].wfd = fds[i].rfd = -1;
    int rc = pthread_create(&thread, NULL, run, a);
    running = rc == 0;
    return rc;
}

void stage_flusher_stop(stage_area_t *a)
{
    if (!running) return;
    stage_lock(a);
    a->stop = 1;
    pthread_cond_signal(&a->work);
    stage_unlock(a);
    pthread_join(thread, NULL);
    running = 0;
    free(pieces);
    pieces = NULL;
    pieces_cap = 0;
}
