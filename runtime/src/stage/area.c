/* The node's staging area: its layout and set-up (without MPI: map.c maps it in a job), the node's processes, the
 * file table, and the ring the writers append to. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "stage.h"

#define ALIGN 64

static uint64_t round_up(uint64_t n) { return (n + ALIGN - 1) & ~(uint64_t)(ALIGN - 1); }

static size_t header_bytes(void) { return (size_t)round_up(sizeof(stage_area_t)); }

char *stage_prefetch_buffer(stage_area_t *a, int i) { return (char *)a + header_bytes() + (size_t)a->prefetch_bytes * (size_t)i; }

char *stage_ring(stage_area_t *a) { return stage_prefetch_buffer(a, STAGE_PREFETCH_SLOTS); }

size_t stage_area_bytes(uint64_t cap, uint64_t prefetch_bytes)
{
    return header_bytes() + (size_t)round_up(prefetch_bytes) * STAGE_PREFETCH_SLOTS + (size_t)round_up(cap);
}

static void area_mutex_init(pthread_mutex_t *m)
{
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(m, &ma);
    pthread_mutexattr_destroy(&ma);
}

void stage_area_init(void *map, uint64_t cap, uint64_t prefetch_bytes, uint32_t nprocs)
{
    stage_area_t *a = map;
    area_mutex_init(&a->lock);
    for (int i = 0; i < STAGE_PROCS; i++) area_mutex_init(&a->proc[i].alive);
    a->cap = round_up(cap);
    a->prefetch_bytes = round_up(prefetch_bytes);
    a->nprocs = nprocs;
    __atomic_store_n(&a->magic, STAGE_MAGIC, __ATOMIC_RELEASE);
}

int stage_area_join(stage_area_t *a, int node_rank, int world_rank)
{
    if (node_rank < 0 || node_rank >= STAGE_PROCS) return -EINVAL;
    stage_proc_t *p = &a->proc[node_rank];
    int rc = pthread_mutex_trylock(&p->alive);
    if (rc == EOWNERDEAD) rc = pthread_mutex_consistent(&p->alive); /* its last holder died (a test's child) */
    if (rc) return -EBUSY;
    stage_lock(a);
    p->pid = (int32_t)getpid();
    p->world_rank = world_rank;
    p->state = STAGE_PROC_ALIVE;
    stage_unlock(a);
    return 0;
}

void stage_area_leave(stage_area_t *a, int node_rank)
{
    if (node_rank < 0 || node_rank >= STAGE_PROCS) return;
    stage_lock(a);
    a->proc[node_rank].state = STAGE_PROC_FREE;
    stage_unlock(a);
    pthread_mutex_unlock(&a->proc[node_rank].alive);
}

int stage_proc_alive(stage_area_t *a, uint32_t rank)
{
    if (rank >= STAGE_PROCS) return 1; /* cannot be told */
    stage_proc_t *p = &a->proc[rank];
    if (p->state != STAGE_PROC_ALIVE) return p->state != STAGE_PROC_DEAD; /* never joined: cannot be told */
    int rc = pthread_mutex_trylock(&p->alive);
    if (rc == EBUSY) return 1; /* held: the process lives */
    if (rc == EOWNERDEAD) pthread_mutex_consistent(&p->alive);
    if (rc == 0 || rc == EOWNERDEAD) pthread_mutex_unlock(&p->alive);
    p->state = STAGE_PROC_DEAD; /* its holder died (or let it go without leaving) */
    return 0;
}

int stage_lost_records(stage_area_t *a, stage_lost_t *out, int max)
{
    stage_lock(a);
    int n = a->problems.nlost;
    for (int i = 0; i < n && i < max; i++) out[i] = a->problems.lost[i];
    stage_unlock(a);
    return n;
}

void stage_lock(stage_area_t *a)
{
    if (pthread_mutex_lock(&a->lock) == EOWNERDEAD) pthread_mutex_consistent(&a->lock);
}

void stage_unlock(stage_area_t *a)
{
    int wake = a->asked > 0 && __atomic_load_n(&a->wake.sleepers, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&a->lock);
    if (wake) stage_event_notify(&a->wake, 0);
}

/* The area is mapped by several processes: shared futexes (no FUTEX_PRIVATE_FLAG). */
static long area_futex(uint32_t *word, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, word, op, val, ts, NULL, FUTEX_BITSET_MATCH_ANY);
}

void stage_event_wait(stage_area_t *a, stage_event_t *ev, uint64_t deadline_ns)
{
    /* sleepers before seq here, seq before sleepers in the notifier: one of them sees the other's change */
    __atomic_add_fetch(&ev->sleepers, 1, __ATOMIC_SEQ_CST);
    uint32_t seq = __atomic_load_n(&ev->seq, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&a->lock);
    struct timespec ts = {(time_t)(deadline_ns / 1000000000ull), (long)(deadline_ns % 1000000000ull)};
    area_futex(&ev->seq, FUTEX_WAIT_BITSET, seq, &ts); /* absolute, CLOCK_MONOTONIC */
    stage_lock(a);
    __atomic_sub_fetch(&ev->sleepers, 1, __ATOMIC_SEQ_CST);
}

void stage_event_notify(stage_event_t *ev, int all)
{
    __atomic_add_fetch(&ev->seq, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&ev->sleepers, __ATOMIC_SEQ_CST)) area_futex(&ev->seq, FUTEX_WAKE, all ? INT_MAX : 1, NULL);
}

static uint64_t key_of(uint64_t dev, uint64_t ino)
{
    uint64_t k = (dev * 0x9e3779b97f4a7c15ull) ^ (ino + 0x632be59bd9b4e019ull);
    return k ? k : 1;
}

int stage_file_find(stage_area_t *a, uint64_t dev, uint64_t ino)
{
    uint64_t key = key_of(dev, ino);
    for (int i = 0; i < STAGE_FILES; i++)
        if (a->file[i].key == key && a->file[i].dev == dev && a->file[i].ino == ino) return i;
    return -1;
}

int stage_file_claim(stage_area_t *a, uint64_t dev, uint64_t ino, const char *path)
{
    stage_lock(a);
    int i = stage_file_find(a, dev, ino);
    if (i < 0)
        for (int j = 0; j < STAGE_FILES && i < 0; j++)
            if (!a->file[j].key) i = j;
    if (i >= 0) {
        stage_file_t *f = &a->file[i];
        if (!f->key) {
            memset(f, 0, sizeof *f);
            f->key = key_of(dev, ino);
            f->dev = dev;
            f->ino = ino;
            strncpy(f->path, path, sizeof f->path - 1);
        }
        f->users++;
    }
    stage_unlock(a);
    return i;
}

void stage_file_release(stage_area_t *a, int file)
{
    stage_lock(a);
    stage_file_t *f = &a->file[file];
    if (f->users > 0) f->users--;
    if (!f->users && !f->pending && !f->error && !f->agg_error) f->key = 0;
    stage_unlock(a);
}

int stage_take_error(stage_area_t *a, int file, int rank)
{
    stage_lock(a);
    stage_file_t *f = &a->file[file];
    int err = 0;
    uint64_t bit = 1ull << (rank % 64), *w = &f->error_ranks[(rank / 64) % STAGE_RANK_WORDS];
    if (f->error && (*w & bit)) {
        err = f->error;
        *w &= ~bit;
        int left = 0;
        for (int i = 0; i < STAGE_RANK_WORDS; i++) left |= f->error_ranks[i] != 0;
        if (!left) f->error = 0;
    }
    stage_unlock(a);
    return err;
}

int stage_take_agg_error(stage_area_t *a, int file, uint64_t *origins, int *all)
{
    stage_lock(a);
    stage_file_t *f = &a->file[file];
    int err = f->agg_error;
    memcpy(origins, f->agg_origins, sizeof f->agg_origins);
    *all = f->agg_all;
    f->agg_error = f->agg_all = 0;
    memset(f->agg_origins, 0, sizeof f->agg_origins);
    stage_unlock(a);
    return err;
}

uint64_t stage_head(stage_area_t *a)
{
    stage_lock(a);
    uint64_t h = a->head;
    stage_unlock(a);
    return h;
}

void stage_wait_progress(stage_area_t *a)
{
    a->waiting++;
    stage_event_wait(a, &a->progress, iotame_monotonic_ns() + 100000000ull);
    a->waiting--;
}

uint64_t stage_drain(stage_area_t *a, uint64_t upto) { return stage_drain_step(a, upto, "waiting for the flusher (drain)"); }

uint64_t stage_drain_step(stage_area_t *a, uint64_t upto, const char *step)
{
    uint64_t t0 = iotame_monotonic_ns();
    stage_lock(a);
    if (a->tail < upto) {
        if (a->want < upto) __atomic_store_n(&a->want, upto, __ATOMIC_RELAXED); /* read by area_commit */
        stage_event_notify(&a->wake, 0);
        iotame_where_mark_t mark = iotame_where_push("stage", step);
        while (a->tail < upto) {
            iotame_where_wait(IOTAME_WAIT_DRAIN, NULL, (int64_t)upto, (int64_t)a->tail,
                              __atomic_load_n(&a->writing, __ATOMIC_RELAXED));
            stage_wait_progress(a);
        }
        iotame_where_pop(mark);
    }
    stage_unlock(a);
    return iotame_monotonic_ns() - t0;
}

/* Reserves room for the record `head` at the head, at one place in the ring (padding to the ring's end first if it
 * would wrap), writes its header there (not committed) and counts its bytes pending; waits for room. The lock is
 * held. Returns the record's position. The header is written before the lock is released: the flusher, which reads
 * the records up to the head under the lock, must never take the previous lap's bytes at that place for a header.
 * The head moves last, so that a writer dying here leaves either no record or a whole one (the lock is robust). */
static uint64_t area_reserve(stage_area_t *a, const stage_record_t *head, uint64_t *blocked_ns)
{
    const uint64_t n = head->size;
    iotame_where_mark_t mark = {0};
    int waited = 0;
    for (;;) {
        uint64_t at = a->head % a->cap, pad = a->cap - at < n ? a->cap - at : 0;
        if (a->head + pad + n - a->tail <= a->cap) {
            if (pad) {
                stage_record_t *r = (stage_record_t *)(stage_ring(a) + at);
                *r = (stage_record_t){.committed = 1, .file = -1, .size = pad};
            }
            uint64_t pos = a->head + pad;
            *(stage_record_t *)(stage_ring(a) + pos % a->cap) = *head;
            stage_file_t *f = &a->file[head->file];
            __atomic_add_fetch(&f->pending, head->bytes, __ATOMIC_RELAXED); /* the flusher subtracts without the lock */
            f->generation++;
            __atomic_store_n(&a->head, pos + n, __ATOMIC_RELEASE); /* read without the lock by module.c */
            if (pos + n - a->tail > a->count.max_dirty) a->count.max_dirty = pos + n - a->tail;
            /* a write under way is activity: the flusher's quiet time counts from here too */
            __atomic_store_n(&a->last_put_ns, iotame_monotonic_ns(), __ATOMIC_RELAXED);
            if (waited) iotame_where_pop(mark);
            return pos;
        }
        uint64_t t0 = iotame_monotonic_ns();
        stage_event_notify(&a->wake, 0); /* full: the flusher must run whatever its threshold */
        if (a->want < a->head) __atomic_store_n(&a->want, a->head, __ATOMIC_RELAXED);
        a->blocked++;
        if (!waited) mark = iotame_where_push("stage", "waiting for room in the staging ring"); /* once: a step */
        waited = 1;
        iotame_where_wait(IOTAME_WAIT_RING, NULL, (int64_t)(a->head - a->tail), (int64_t)a->cap,
                          __atomic_load_n(&a->writing, __ATOMIC_RELAXED));
        stage_wait_progress(a);
        a->blocked--;
        *blocked_ns += iotame_monotonic_ns() - t0;
    }
}

/* Where a write's runs are taken from, record by record: run i, from its piece `done` and byte `skip` of it. */
typedef struct {
    const iotame_run_t *runs;
    size_t n, i;
    int64_t done, skip;
} area_cursor_t;

/* Takes from the cursor the runs of one record of at most `room` bytes of runs and data: whole pieces of a run
 * while they fit, a piece cut where it does not. Writes them to out (NULL: only measures) and the record's bytes,
 * pieces and range to *r; returns how many. */
static uint32_t area_take(area_cursor_t *c, uint64_t room, iotame_run_t *out, stage_record_t *r)
{
    uint32_t n = 0;
    uint64_t used = 0;
    r->bytes = r->pieces = 0;
    r->lo = INT64_MAX;
    r->end = 0;
    while (c->i < c->n && used + sizeof *out < room) {
        const iotame_run_t *x = &c->runs[c->i];
        const int64_t fits = (int64_t)(room - used - sizeof *out);
        iotame_run_t t;
        if (c->skip || x->len > fits) { /* a piece cut: the rest of it, or what fits */
            int64_t left = x->len - c->skip, take = left < fits ? left : fits;
            if (n && take < left && take < 64) break; /* the next record takes it */
            t = (iotame_run_t){x->off + c->done * x->stride + c->skip, take, 1, take};
            c->skip += take;
            if (c->skip == x->len) c->done++, c->skip = 0;
        } else {
            int64_t k = x->count - c->done < fits / x->len ? x->count - c->done : fits / x->len;
            t = (iotame_run_t){x->off + c->done * x->stride, x->len, k, k > 1 ? x->stride : x->len};
            c->done += k;
        }
        if (c->done == x->count) c->i++, c->done = 0;
        if (out) out[n] = t;
        n++;
        used += sizeof t + (uint64_t)(t.len * t.count);
        r->bytes += (uint64_t)(t.len * t.count);
        r->pieces += (uint64_t)t.count;
        if (t.off < r->lo) r->lo = t.off;
        if (t.off + (t.count - 1) * t.stride + t.len > r->end) r->end = t.off + (t.count - 1) * t.stride + t.len;
    }
    return n;
}

uint64_t stage_record_bytes(size_t nruns, uint64_t bytes)
{
    return round_up(sizeof(stage_record_t) + nruns * sizeof(iotame_run_t) + bytes);
}

int stage_room_for(stage_area_t *a, uint64_t record_bytes, double fill)
{
    uint64_t used = __atomic_load_n(&a->head, __ATOMIC_ACQUIRE) - __atomic_load_n(&a->tail, __ATOMIC_ACQUIRE);
    return record_bytes <= a->cap / 2 && (double)(used + record_bytes) <= fill * (double)a->cap;
}

/* The record is committed, without the lock: the flusher is woken only when it sleeps idle, the threshold is
 * passed or a drain waits (its own deadline brings it otherwise). */
static void area_commit(stage_area_t *a, stage_record_t *r, double threshold)
{
    __atomic_store_n(&r->committed, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&a->last_put_ns, iotame_monotonic_ns(), __ATOMIC_RELAXED);
    uint64_t tail = __atomic_load_n(&a->tail, __ATOMIC_ACQUIRE);
    uint64_t dirty = __atomic_load_n(&a->head, __ATOMIC_ACQUIRE) - tail;
    if (__atomic_load_n(&a->idle, __ATOMIC_ACQUIRE) || (double)dirty > threshold * (double)a->cap ||
        __atomic_load_n(&a->want, __ATOMIC_RELAXED) > tail)
        stage_event_notify(&a->wake, 0);
}

/* Records of at most half the ring, so that one always fits once the flusher has caught up: the room of its runs
 * and data. */
static uint64_t area_record_room(const stage_area_t *a) { return a->cap / 2 - sizeof(stage_record_t) - ALIGN; }

int stage_one_record(const stage_area_t *a, size_t nruns, uint64_t bytes)
{
    return (nruns + 1) * sizeof(iotame_run_t) + bytes < area_record_room(a);
}

uint64_t stage_put(stage_area_t *a, int file, int rank, int origin, const iotame_run_t *runs, size_t nruns,
                   const stage_source_t *src, double threshold, uint64_t *blocked_ns)
{
    const uint64_t room = area_record_room(a);
    area_cursor_t c = {runs, nruns, 0, 0, 0};
    uint64_t end = 0, from = 0;
    while (c.i < c.n) {
        area_cursor_t plan = c;
        stage_record_t head = {.file = file, .rank = (uint32_t)rank, .origin = origin};
        head.nruns = area_take(&plan, room, NULL, &head);
        head.size = stage_record_bytes(head.nruns, head.bytes);
        stage_lock(a);
        uint64_t pos = area_reserve(a, &head, blocked_ns);
        stage_unlock(a);
        stage_record_t *r = (stage_record_t *)(stage_ring(a) + pos % a->cap);
        iotame_run_t *x = (iotame_run_t *)(r + 1);
        area_take(&c, room, x, &head); /* the same runs as planned */
        if (src->fill(src->arg, (char *)(x + head.nruns), from, head.bytes) != 0) { /* the record is padding */
            __atomic_sub_fetch(&a->file[file].pending, head.bytes, __ATOMIC_RELAXED);
            r->file = -1;
            area_commit(a, r, threshold);
            return 0;
        }
        from += head.bytes;
        area_commit(a, r, threshold);
        end = pos + head.size;
    }
    return end;
}
