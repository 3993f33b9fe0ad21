/* Writing one batch of the ring (the flusher's work): every committed record from the tail, from all the node's
 * processes, file by file. A record's runs are expanded into pieces here, behind the application.
 *  - dense: where a file's small pieces in the batch cover at least half of their range (ranks interleaved at fine
 *    grain, as in Noncontig, together tile the file), their data is copied into a buffer in staging order (a later
 *    write of a byte wins, as without staging), 64 MiB of the range at a time, and each covered run written with
 *    one pwrite;
 *  - sorted: otherwise the pieces are sorted by offset (a stable radix sort) and adjacent ones written together,
 *    small ones copied into one buffer, larger ones as the iovecs of one pwritev; where two overlap, the file's
 *    pieces are written one by one in staging order.
 * An error is attributed by piece: the bytes the kernel accepted before it succeeded, the rest name their
 * processes. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "core/core.h"
#include "stage.h"

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif
#define DENSE_MAX ((int64_t)64 << 20) /* the window of a dense range written from one buffer */
#define GATHER_BYTES (4u << 20)
#define RADIX_BITS 11

typedef struct {
    int32_t file;
    uint32_t rank;
    int32_t origin; /* the record's (aggregator caching), -1: the staging process's own data */
    int64_t off, len;
    const char *data;
    uint64_t seq;
} piece_t;

typedef struct {
    uint64_t key, idx;
} order_t;

/* the flusher's working memory, kept from batch to batch */
static piece_t *pieces, *scratch;
static size_t npieces, pieces_cap, scratch_cap;
static order_t *order, *order_tmp;
static size_t order_cap, order_tmp_cap;
static char *buffer; /* dense ranges, and gathered small pieces */
static size_t buffer_cap;
static uint64_t *covered; /* dense: a bit per byte of the range */
static size_t covered_cap;
static struct iovec iov[IOV_MAX];

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 1024;
    while (n < need) n *= 2;
    void *q = realloc(*p, n * size);
    if (!q) return -ENOMEM;
    *p = q;
    *cap = n;
    return 0;
}

static const stage_record_t *record_at(stage_area_t *a, uint64_t pos)
{
    return (const stage_record_t *)(stage_ring(a) + pos % a->cap);
}

static const iotame_run_t *record_runs(const stage_record_t *r) { return (const iotame_run_t *)(r + 1); }
static const char *record_data(const stage_record_t *r) { return (const char *)(record_runs(r) + r->nruns); }

/* Piece j of run x. */
static int64_t piece_at(const iotame_run_t *x, int64_t j) { return x->off + j * x->stride; }

/* Writes iov[0..n) at off, resuming after short writes. Returns 0 or -errno; *done: the bytes written. */
static int write_all(int fd, int n, int64_t off, int64_t *done)
{
    struct iovec *v = iov;
    int interrupted = 0;
    *done = 0;
    while (n > 0) {
        ssize_t w = pwritev(fd, v, n, (off_t)off);
        if (w < 0) {
            if (errno == EINTR && ++interrupted < STAGE_EINTR_RETRIES) continue;
            return -errno;
        }
        interrupted = 0;
        if (w == 0) return -EIO;
        off += w;
        *done += w;
        while (n > 0 && (size_t)w >= v->iov_len) w -= (ssize_t)v->iov_len, v++, n--;
        if (n > 0) v->iov_base = (char *)v->iov_base + w, v->iov_len -= (size_t)w;
    }
    return 0;
}

/* A failure of `failed` bytes of file f (kept for the processes by blame) logged. */
static void failed_write(stage_area_t *a, stage_file_t *f, int err, uint64_t failed)
{
    stage_lock(a);
    f->failed_bytes += failed;
    stage_failure_t *log = a->problems.nfailures ? &a->problems.failure[a->problems.nfailures - 1] : NULL;
    if (!log || log->error != -err || strncmp(log->path, f->path, sizeof log->path - 1) != 0) {
        log = a->problems.nfailures < STAGE_FAILURES ? &a->problems.failure[a->problems.nfailures++] : NULL;
        if (log) { /* the path as far as it fits */
            *log = (stage_failure_t){.error = -err};
            memcpy(log->path, f->path, strnlen(f->path, sizeof log->path - 1));
        }
    }
    if (log) log->bytes += failed;
    stage_unlock(a);
}

/* Data of node process `rank` (origin -1), or of world rank `origin` cached here, failed with -err: kept for them
 * (the first error of the file stays). */
static void blame(stage_file_t *f, uint32_t rank, int32_t origin, int err)
{
    int none = 0;
    if (origin < 0) {
        __atomic_or_fetch(&f->error_ranks[(rank / 64) % STAGE_RANK_WORDS], 1ull << (rank % 64), __ATOMIC_RELAXED);
        __atomic_compare_exchange_n(&f->error, &none, -err, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
        return;
    }
    if (origin < STAGE_ORIGIN_WORDS * 64)
        __atomic_or_fetch(&f->agg_origins[origin / 64], 1ull << (origin % 64), __ATOMIC_RELAXED);
    else
        __atomic_store_n(&f->agg_all, 1, __ATOMIC_RELAXED);
    __atomic_compare_exchange_n(&f->agg_error, &none, -err, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* ---- dense ranges ---- */

static void cover(int64_t from, int64_t len)
{
    for (int64_t b = from, e = from + len; b < e;) {
        int s = (int)(b & 63);
        int64_t n = e - b < 64 - s ? e - b : 64 - s;
        covered[b >> 6] |= n == 64 ? ~0ull : ((1ull << n) - 1) << s;
        b += n;
    }
}

/* The next run of covered bytes in [at, len): its start (len when none) and *stop its end. */
static int64_t next_run(int64_t at, int64_t len, int64_t *stop)
{
    while (at < len) { /* the first covered byte */
        uint64_t w = covered[at >> 6] >> (at & 63);
        if (w) {
            at += __builtin_ctzll(w);
            break;
        }
        at = (at | 63) + 1;
    }
    if (at >= len) return *stop = len;
    int64_t e = at;
    while (e < len) { /* the first byte not covered after it */
        uint64_t w = ~covered[e >> 6] >> (e & 63);
        if (w) {
            e += __builtin_ctzll(w);
            break;
        }
        e = (e | 63) + 1;
    }
    *stop = e < len ? e : len;
    return at;
}

/* The pieces j0 <= j <= j1 of run x that meet the window [wlo, whi) of the file (j0 > j1: none). */
static void window_pieces(const iotame_run_t *x, int64_t wlo, int64_t whi, int64_t *j0, int64_t *j1)
{
    *j0 = wlo <= x->off ? 0 : (wlo - x->off) / x->stride;
    if (piece_at(x, *j0) + x->len <= wlo) ++*j0;
    *j1 = whi <= x->off ? -1 : (whi - 1 - x->off) / x->stride;
    if (*j1 >= x->count) *j1 = x->count - 1;
}

/* Copies the pieces of run x (its data at d) that meet the window [wlo, whi) to their places in buffer (whose first
 * byte is file offset wlo) and marks them covered; returns d past the whole run. A run inside the window, of small
 * pieces of fixed sizes, gets inlined copies. */
static const char *dense_copy_run(const iotame_run_t *x, const char *d, int64_t wlo, int64_t whi)
{
    const int64_t len = x->len, stride = x->stride, next = x->count * len;
    int64_t j0, j1;
    window_pieces(x, wlo, whi, &j0, &j1);
    if (j0 == 0 && j1 == x->count - 1 && x->off >= wlo && piece_at(x, j1) + len <= whi) {
        char *to = buffer + (x->off - wlo);
        switch (len) {
        case 4:
            for (int64_t j = 0; j < x->count; j++, d += 4, to += stride) memcpy(to, d, 4);
            break;
        case 8:
            for (int64_t j = 0; j < x->count; j++, d += 8, to += stride) memcpy(to, d, 8);
            break;
        case 64:
            for (int64_t j = 0; j < x->count; j++, d += 64, to += stride) memcpy(to, d, 64);
            break;
        default:
            for (int64_t j = 0; j < x->count; j++, d += len, to += stride) memcpy(to, d, (size_t)len);
        }
        for (int64_t j = 0; j < x->count; j++) cover(piece_at(x, j) - wlo, len);
        return d;
    }
    for (int64_t j = j0; j <= j1; j++) { /* clipped to the window */
        const int64_t p = piece_at(x, j), b = p > wlo ? p : wlo, e = p + len < whi ? p + len : whi;
        memcpy(buffer + (b - wlo), d + j * len + (b - p), (size_t)(e - b));
        cover(b - wlo, e - b);
    }
    return d + next;
}

/* The bytes of file f's pieces in [from, to) that the window [wlo, whi) no longer covers (not written), each
 * piece's process named. */
static uint64_t dense_blame(stage_area_t *a, int f, uint64_t from, uint64_t to, int64_t wlo, int64_t whi, int err)
{
    uint64_t failed = 0;
    for (uint64_t pos = from; pos < to; pos += record_at(a, pos)->size) {
        const stage_record_t *r = record_at(a, pos);
        const iotame_run_t *x = record_runs(r);
        for (uint32_t i = 0; r->file == f && i < r->nruns; i++) {
            int64_t missing = 0, j0, j1;
            window_pieces(&x[i], wlo, whi, &j0, &j1);
            for (int64_t j = j0; j <= j1; j++)
                for (int64_t o = piece_at(&x[i], j); o < piece_at(&x[i], j) + x[i].len; o++)
                    if (o >= wlo && o < whi) missing += !(covered[(o - wlo) >> 6] >> ((o - wlo) & 63) & 1);
            if (!missing) continue;
            failed += (uint64_t)missing;
            blame(&a->file[f], r->rank, r->origin, err);
        }
    }
    return failed;
}

/* Writes file f's pieces of [from, to) through a buffer of their range [lo, end), window by window (DENSE_MAX at a
 * time), when they are small and cover at least half of it: each copied to its place in staging order (a later
 * write of a byte wins, as without staging), then every run of covered bytes written with one pwrite. No sorting.
 * Returns 0 when the pieces do not qualify (nothing written: large pieces are written from the ring as they are,
 * without a copy). */
static int write_dense(stage_area_t *a, int f, uint64_t from, uint64_t to, int64_t lo, int64_t end, uint64_t bytes,
                       uint64_t n)
{
    const int64_t win = end - lo < DENSE_MAX ? end - lo : DENSE_MAX;
    if ((uint64_t)(end - lo) > 2 * bytes || bytes >= n * STAGE_SMALL_PIECE) return 0;
    if (grow((void **)&buffer, &buffer_cap, (size_t)win, 1) ||
        grow((void **)&covered, &covered_cap, (size_t)(win + 63) / 64, sizeof *covered))
        return 0;
    stage_file_t *sf = &a->file[f];
    int fd = stage_fd(a, f, 1), first_err = 0;
    uint64_t failed = 0;
    for (int64_t wlo = lo; wlo < end; wlo += win) {
        const int64_t whi = end - wlo < win ? end : wlo + win, len = whi - wlo;
        memset(covered, 0, (size_t)(len + 63) / 64 * sizeof *covered);
        for (uint64_t pos = from; pos < to; pos += record_at(a, pos)->size) {
            const stage_record_t *r = record_at(a, pos);
            if (r->file != f || r->end <= wlo || r->lo >= whi) continue;
            const iotame_run_t *x = record_runs(r);
            const char *d = record_data(r);
            for (uint32_t i = 0; i < r->nruns; i++) d = dense_copy_run(&x[i], d, wlo, whi);
        }
        int window_err = 0;
        for (int64_t stop, at = next_run(0, len, &stop); at < len; at = next_run(stop, len, &stop)) {
            iov[0] = (struct iovec){buffer + at, (size_t)(stop - at)};
            int64_t done = 0;
            int err = fd < 0 ? fd : write_all(fd, 1, wlo + at, &done);
            a->count.writes_out++;
            a->count.bytes_out += (uint64_t)done;
            if (err && !window_err) window_err = err;
            /* bytes not written: uncovered from now on, which names their processes below */
            for (int64_t b = at + done; err && b < stop; b++) covered[b >> 6] &= ~(1ull << (b & 63));
        }
        if (window_err) failed += dense_blame(a, f, from, to, wlo, whi, window_err);
        if (window_err && !first_err) first_err = window_err;
    }
    __atomic_sub_fetch(&sf->pending, bytes, __ATOMIC_RELAXED);
    if (first_err) failed_write(a, sf, first_err, failed);
    return 1;
}

/* ---- sorted extents ---- */

static int by_offset(const void *x, const void *y)
{
    const piece_t *a = x, *b = y;
    if (a->off != b->off) return a->off < b->off ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int by_seq(const void *x, const void *y)
{
    const piece_t *a = x, *b = y;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Sorts the pieces of one file by offset, keeping the staging order of equal offsets: a stable radix sort of
 * (offset - lo) keys, then the pieces copied in that order; qsort when memory is short. */
static void sort_pieces(int64_t lo, int64_t end)
{
    size_t n = npieces, i;
    for (i = 1; i < n && by_offset(&pieces[i - 1], &pieces[i]) <= 0; i++) {}
    if (i >= n) return; /* in order already */
    if (grow((void **)&order, &order_cap, n, sizeof *order) || grow((void **)&order_tmp, &order_tmp_cap, n, sizeof *order) ||
        grow((void **)&scratch, &scratch_cap, n, sizeof *scratch)) {
        qsort(pieces, n, sizeof *pieces, by_offset);
        return;
    }
    const int bits = 64 - __builtin_clzll((uint64_t)(end - lo) | 1);
    for (i = 0; i < n; i++) order[i] = (order_t){(uint64_t)(pieces[i].off - lo), i};
    static size_t count[1u << RADIX_BITS];
    for (int shift = 0; shift < bits; shift += RADIX_BITS) {
        memset(count, 0, sizeof count);
        for (i = 0; i < n; i++) count[order[i].key >> shift & ((1u << RADIX_BITS) - 1)]++;
        for (size_t d = 0, sum = 0; d < (1u << RADIX_BITS); d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (i = 0; i < n; i++) order_tmp[count[order[i].key >> shift & ((1u << RADIX_BITS) - 1)]++] = order[i];
        order_t *t = order;
        order = order_tmp;
        order_tmp = t;
    }
    for (i = 0; i < n; i++) scratch[i] = pieces[order[i].idx];
    piece_t *t = pieces;
    pieces = scratch;
    scratch = t;
    size_t c = pieces_cap;
    pieces_cap = scratch_cap;
    scratch_cap = c;
}

/* The outcome of the run of pieces [p, q) of which the first `done` bytes were written. */
static void settle(stage_area_t *a, const piece_t *p, const piece_t *q, int err, int64_t done)
{
    stage_file_t *f = &a->file[p->file];
    uint64_t bytes = 0, failed = 0;
    for (const piece_t *x = p; x < q; x++) {
        bytes += (uint64_t)x->len;
        if (done >= x->len) {
            done -= x->len;
            continue;
        }
        failed += (uint64_t)(x->len - done);
        done = 0;
        blame(f, x->rank, x->origin, err);
    }
    __atomic_sub_fetch(&f->pending, bytes, __ATOMIC_RELAXED);
    if (err) failed_write(a, f, err, failed);
}

/* Writes n pieces of file f, sorted by offset: adjacent ones together (small ones copied into one buffer, the
 * kernel's cost per iovec being above a copy of a few bytes), or one by one in staging order when any overlap. */
static void write_sorted(stage_area_t *a, int f, piece_t *p, size_t n_pieces)
{
    piece_t *q = p + n_pieces;
    int overlap = 0;
    for (piece_t *x = p + 1; x < q && !overlap; x++) overlap = x->off < x[-1].off + x[-1].len;
    if (overlap) {
        qsort(p, n_pieces, sizeof *p, by_seq);
        a->count.overlap_batches++;
    }
    int gathering = grow((void **)&buffer, &buffer_cap, GATHER_BYTES, 1) == 0;
    int fd = stage_fd(a, f, 1);
    while (p < q) {
        piece_t *run = p;
        int n = 0, small = gathering && p->len < STAGE_SMALL_PIECE;
        int64_t end = p->off;
        do {
            if (small) memcpy(buffer + (end - run->off), p->data, (size_t)p->len);
            else iov[n++] = (struct iovec){(void *)p->data, (size_t)p->len};
            end += p->len;
            p++;
        } while (!overlap && p < q && p->off == end &&
                 (small ? p->len < STAGE_SMALL_PIECE && end - run->off + p->len <= GATHER_BYTES : n < IOV_MAX));
        if (small) iov[n++] = (struct iovec){buffer, (size_t)(end - run->off)};
        int64_t done = 0;
        int err = fd < 0 ? fd : write_all(fd, n, run->off, &done);
        settle(a, run, p, err, done);
        a->count.writes_out++;
        a->count.bytes_out += (uint64_t)done;
    }
}

/* File f's pieces of [from, to), sorted. Without memory for the list, each record's pieces are written as they come
 * (in staging order: the same bytes, fewer merges). */
static void write_extents(stage_area_t *a, int f, uint64_t from, uint64_t to, int64_t lo, int64_t end)
{
    npieces = 0;
    int whole = 1;
    for (uint64_t pos = from; pos < to; pos += record_at(a, pos)->size) {
        const stage_record_t *r = record_at(a, pos);
        if (r->file != f) continue;
        const iotame_run_t *x = record_runs(r);
        const char *d = record_data(r);
        if (grow((void **)&pieces, &pieces_cap, npieces + r->pieces, sizeof *pieces)) {
            if (npieces) { /* what came before, sorted; then this record's pieces one by one */
                qsort(pieces, npieces, sizeof *pieces, by_offset);
                write_sorted(a, f, pieces, npieces);
                npieces = 0;
            }
            whole = 0;
            for (uint32_t i = 0; i < r->nruns; i++)
                for (int64_t j = 0; j < x[i].count; j++, d += x[i].len) {
                    piece_t p = {f, r->rank, r->origin, piece_at(&x[i], j), x[i].len, d, 0};
                    write_sorted(a, f, &p, 1);
                }
            continue;
        }
        for (uint32_t i = 0; i < r->nruns; i++)
            for (int64_t j = 0; j < x[i].count; j++, d += x[i].len, npieces++)
                pieces[npieces] = (piece_t){f, r->rank, r->origin, piece_at(&x[i], j), x[i].len, d, npieces};
    }
    if (!npieces) return;
    if (whole) sort_pieces(lo, end);
    else qsort(pieces, npieces, sizeof *pieces, by_offset);
    write_sorted(a, f, pieces, npieces);
}

void stage_write_batch(stage_area_t *a, uint64_t from, uint64_t to)
{
    /* each file's range and bytes in the batch, files in order of first appearance */
    static struct {
        int64_t lo, end;
        uint64_t bytes, n;
        int seen;
    } span[STAGE_FILES];
    int files[STAGE_FILES], nfiles = 0;
    for (uint64_t pos = from; pos < to; pos += record_at(a, pos)->size) {
        const stage_record_t *r = record_at(a, pos);
        if (r->file < 0) continue;
        if (!span[r->file].seen) {
            span[r->file].seen = 1, span[r->file].lo = INT64_MAX, span[r->file].end = 0;
            span[r->file].bytes = span[r->file].n = 0;
            files[nfiles++] = r->file;
        }
        a->count.records++;
        a->count.runs_in += r->nruns;
        a->count.extents_in += r->pieces;
        if (!r->nruns) continue;
        if (r->lo < span[r->file].lo) span[r->file].lo = r->lo;
        if (r->end > span[r->file].end) span[r->file].end = r->end;
        span[r->file].bytes += r->bytes;
        span[r->file].n += r->pieces;
    }
    for (int i = 0; i < nfiles; i++) {
        int f = files[i];
        span[f].seen = 0;
        if (!span[f].bytes) continue;
        if (!write_dense(a, f, from, to, span[f].lo, span[f].end, span[f].bytes, span[f].n))
            write_extents(a, f, from, to, span[f].lo, span[f].end);
    }
}

void stage_batch_free(void)
{
    free(pieces), free(scratch), free(order), free(order_tmp), free(buffer), free(covered);
    pieces = scratch = NULL;
    order = order_tmp = NULL;
    buffer = NULL;
    covered = NULL;
    npieces = pieces_cap = scratch_cap = order_cap = order_tmp_cap = buffer_cap = covered_cap = 0;
}
