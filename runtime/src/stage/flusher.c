/* The flusher: a thread of the node's first process that writes the ring behind, in batches (batch.c), when a
 * flush is due: more than flush_threshold of the ring dirty, flush_delay since the node's last write, or a drain
 * asked for. It also fills the read-ahead buffers. It makes no MPI call: the application's thread level does not
 * matter. Its writes go through the POSIX layer like the library's (throttle and emulate see them). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "stage.h"

#define DRAIN_GRACE 2000000ull /* ns */
/* The quiet a batch with small holes waits for before it is written as it is: as long as its pieces would take to
 * write one by one (HOLE_PIECE_NS each; so a drain, which a process waits for, loses at most that), and in the
 * background at least HOLES_WAIT. */
#define HOLES_WAIT 100000000ull
#define HOLE_PIECE_NS 1000ull

static pthread_t thread;
static int running;
static stage_flush_knobs_t knobs;
/* this process's descriptors of the staged files (-1: none once fds_ready), with the identity they were opened for */
static struct {
    int wfd, rfd;
    uint64_t dev, ino;
} fds[STAGE_FILES];
static int fds_ready;

static void flusher_fds_init(void)
{
    for (int i = 0; i < STAGE_FILES; i++) fds[i].wfd = fds[i].rfd = -1;
    fds_ready = 1;
}

static void flusher_close_fds(int i)
{
    if (fds[i].wfd >= 0) close(fds[i].wfd);
    if (fds[i].rfd >= 0) close(fds[i].rfd);
    fds[i].wfd = fds[i].rfd = -1;
}

int stage_fd(stage_area_t *a, int i, int write)
{
    const stage_file_t *f = &a->file[i];
    if (!fds_ready) flusher_fds_init();
    if ((fds[i].wfd >= 0 || fds[i].rfd >= 0) && (fds[i].dev != f->dev || fds[i].ino != f->ino)) flusher_close_fds(i);
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

/* ---- prefetch ---- */

/* Fills the read-ahead buffers asked for. The lock is held, and released around each read. */
static void fill_prefetch(stage_area_t *a)
{
    for (int i = 0; i < STAGE_PREFETCH_SLOTS && a->asked > 0; i++) {
        stage_prefetch_t *p = &a->prefetch[i];
        if (p->state != PREFETCH_ASKED) continue;
        int fd = stage_fd(a, p->file, 0);
        int64_t off = p->off, want = p->len, got = 0;
        stage_unlock(a);
        char *buf = stage_prefetch_buffer(a, i);
        for (int interrupted = 0; fd >= 0 && got < want;) {
            ssize_t r = pread(fd, buf + got, (size_t)(want - got), (off_t)(off + got));
            if (r < 0 && errno == EINTR && ++interrupted < STAGE_EINTR_RETRIES) continue;
            if (r <= 0) break;
            got += r;
            interrupted = 0;
        }
        stage_lock(a);
        p->len = got;
        p->state = fd >= 0 ? PREFETCH_READY : PREFETCH_FREE;
        a->asked--;
        a->count.prefetch_reads++;
        a->count.prefetch_bytes_read += (uint64_t)got;
        stage_event_notify(&a->progress, 1);
    }
}

/* ---- the thread ---- */

static void flusher_wait(stage_area_t *a, uint64_t until_ns) { stage_event_wait(a, &a->wake, until_ns); }

/* Gives up record r, whose writer died before committing it: its bytes are counted lost (in the file's log entry for
 * that process), a warning names them, and the record becomes padding, which the batches skip. The lock is held. */
static void flusher_lose(stage_area_t *a, stage_record_t *r)
{
    stage_file_t *f = &a->file[r->file];
    const stage_proc_t *p = &a->proc[r->rank];
    __atomic_sub_fetch(&f->pending, r->bytes, __ATOMIC_RELAXED);
    a->count.lost_bytes += r->bytes;
    a->count.lost_records++;
    stage_problems_t *pr = &a->problems;
    stage_lost_t *log = NULL;
    for (int i = 0; i < pr->nlost && !log; i++)
        if (pr->lost[i].pid == p->pid && strncmp(pr->lost[i].path, f->path, sizeof log->path - 1) == 0)
            log = &pr->lost[i];
    if (!log && pr->nlost < STAGE_LOST) {
        log = &pr->lost[pr->nlost++];
        *log = (stage_lost_t){.node_rank = (int32_t)r->rank, .world_rank = p->world_rank, .pid = p->pid};
        memcpy(log->path, f->path, strnlen(f->path, sizeof log->path - 1));
    }
    if (log) log->bytes += r->bytes, log->records++;
    iotame_log_warn("staging: rank %d (pid %d) died while staging a write (the call had not returned): its %llu bytes "
                    "for %s are lost\n", p->world_rank, p->pid, (unsigned long long)r->bytes, f->path);
    r->file = -1;
    __atomic_store_n(&r->committed, 1, __ATOMIC_RELEASE);
}

/* The first position in [from, to) whose record is not committed yet (a writer still copying). A record whose writer
 * died before committing it is skipped (flusher_lose): the records behind it are written. The lock is held. The
 * records found committed stay so until written: the next search starts where this one ended. */
static uint64_t flusher_committed_end(stage_area_t *a, uint64_t from, uint64_t to)
{
    if (a->scanned > from && a->scanned <= to) from = a->scanned;
    while (from < to) {
        stage_record_t *r = (stage_record_t *)(stage_ring(a) + from % a->cap);
        if (!__atomic_load_n(&r->committed, __ATOMIC_ACQUIRE)) {
            if (stage_proc_alive(a, r->rank)) break;
            flusher_lose(a, r);
        }
        from += r->size;
    }
    return a->scanned = from;
}

/* Closes the descriptors of files no process uses and nothing is pending for (and frees their slots). The lock is
 * held. (A written record's room needs no clearing: a writer writes the header of the next record there under the
 * lock before the head passes it.) */
static void flusher_close_unused(stage_area_t *a)
{
    for (int i = 0; i < STAGE_FILES; i++) {
        stage_file_t *f = &a->file[i];
        if (f->key && !f->users && !f->pending) {
            flusher_close_fds(i);
            if (!f->error && !f->agg_error) f->key = 0;
        } else if (!f->key && (fds[i].wfd >= 0 || fds[i].rfd >= 0)) {
            flusher_close_fds(i);
        }
    }
}

/* The quiet (ns) the batch [from, to) waits for: 0 unless a file's records leave small holes between small pieces
 * (one rank's part of an interleaved collective call whose other parts are still to come: written now, it would be
 * one request per piece); then the time its pieces would take written one by one, and at least HOLES_WAIT unless
 * `urgent` (a drain, or the ring past its threshold). The lock is held. */
static uint64_t flusher_holes_wait(stage_area_t *a, uint64_t from, uint64_t to, int urgent)
{
    enum { TRACKED = 16 };
    struct {
        int32_t file;
        uint64_t bytes, pieces;
        int64_t lo, end;
    } f[TRACKED];
    int n = 0;
    for (uint64_t pos = from; pos < to;) {
        const stage_record_t *r = (const stage_record_t *)(stage_ring(a) + pos % a->cap);
        pos += r->size;
        if (r->file < 0 || !r->bytes || r->origin >= 0) continue; /* cached windows: nobody else fills their holes */
        int i = 0;
        while (i < n && f[i].file != r->file) i++;
        if (i == TRACKED) return 0; /* many files: not one call's parts */
        if (i == n) f[n++] = (typeof(f[0])){r->file, 0, 0, r->lo, r->end};
        f[i].bytes += r->bytes;
        f[i].pieces += r->pieces;
        if (r->lo < f[i].lo) f[i].lo = r->lo;
        if (r->end > f[i].end) f[i].end = r->end;
    }
    uint64_t pieces = 0;
    for (int i = 0; i < n; i++)
        if (f[i].bytes < (uint64_t)(f[i].end - f[i].lo) && f[i].bytes < f[i].pieces * STAGE_SMALL_PIECE)
            pieces += f[i].pieces;
    const uint64_t one_by_one = pieces * HOLE_PIECE_NS;
    return urgent || !pieces || one_by_one > HOLES_WAIT ? one_by_one : HOLES_WAIT;
}

static void *flusher_run(void *arg)
{
    stage_area_t *a = arg;
    stage_lock(a);
    for (;;) {
        const uint64_t now = iotame_monotonic_ns(), dirty = a->head - a->tail;
        const uint64_t last = __atomic_load_n(&a->last_put_ns, __ATOMIC_RELAXED);
        const uint64_t since = now > last ? now - last : 0; /* a writer may have stamped a later time */
        const uint64_t grace = knobs.delay_ns < DRAIN_GRACE ? knobs.delay_ns : DRAIN_GRACE;
        /* Forced: a writer waits for room, or the flusher is to stop. A drain waits while other processes of the
         * node are still staging (the node's processes of a collective sync ask one after the other: their last
         * writes then join the same batch and merge), until every process waits or the node has been quiet for a
         * moment (grace). Otherwise the flusher writes once the ring is past its threshold or the node has been
         * quiet for flush_delay; but a batch that would leave small holes, which the node's other processes may
         * still fill (one rank's part of an interleaved collective call), waits longer (flusher_holes_wait). */
        const int forced = dirty && (a->blocked > 0 || a->stop);
        const int draining = a->want > a->tail;
        const int pressed = dirty && (double)dirty > knobs.threshold * (double)a->cap;
        const uint64_t wait = draining ? grace : knobs.delay_ns;
        uint64_t from = a->tail, to = dirty ? flusher_committed_end(a, from, a->head) : from;
        uint64_t wake = last + wait;
        int due = forced || (draining && a->waiting >= (int32_t)a->nprocs);
        if (!due && dirty && (pressed || since >= wait)) {
            const uint64_t holes = flusher_holes_wait(a, from, to, draining || pressed);
            due = since >= holes;
            wake = last + holes;
        }
        if (a->asked > 0) fill_prefetch(a);
        if (!due) {
            if (a->stop && a->head == a->tail) break;
            __atomic_store_n(&a->idle, !dirty, __ATOMIC_RELEASE); /* read by area_commit without the lock */
            flusher_wait(a, dirty ? wake : now + 1000000000ull);
            __atomic_store_n(&a->idle, 0, __ATOMIC_RELEASE);
            continue;
        }
        /* A writer still copying a record: the batch waits for it, unless the ring is under pressure (writers that
         * keep staging would always have one under way) */
        if (to == from || (to < a->head && !forced && !pressed)) {
            flusher_wait(a, now + 200000ull);
            continue;
        }
        int waited = a->waiting;
        stage_unlock(a);
        uint64_t t0 = iotame_monotonic_ns();
        __atomic_store_n(&a->writing, 1, __ATOMIC_RELAXED);
        stage_write_batch(a, from, to);
        __atomic_store_n(&a->writing, 0, __ATOMIC_RELAXED);
        uint64_t ns = iotame_monotonic_ns() - t0;
        stage_lock(a);
        a->count.flush_ns += ns;
        if (!waited && !a->waiting) a->count.overlapped_ns += ns; /* nobody waited for this batch: hidden behind work */
        flusher_close_unused(a);
        __atomic_store_n(&a->tail, to, __ATOMIC_RELEASE); /* read without the lock by module.c */
        stage_event_notify(&a->progress, 1);
    }
    stage_unlock(a);
    for (int i = 0; i < STAGE_FILES; i++) flusher_close_fds(i);
    return NULL;
}

int stage_flusher_start(stage_area_t *a, const stage_flush_knobs_t *k)
{
    knobs = *k;
    if (!fds_ready) flusher_fds_init();
    int rc = pthread_create(&thread, NULL, flusher_run, a);
    running = rc == 0;
    return rc;
}

void stage_flusher_stop(stage_area_t *a)
{
    if (!running) return;
    stage_lock(a);
    a->stop = 1;
    stage_event_notify(&a->wake, 0);
    stage_unlock(a);
    pthread_join(thread, NULL);
    running = 0;
    stage_batch_free();
}
