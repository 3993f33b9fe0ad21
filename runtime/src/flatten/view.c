/* File views: the byte range of one call's data stream mapped to the sorted file extents it covers (MPI-4.0
 * section 14.3: the filetype tiled by its extent from the displacement; only its data bytes are accessed). */
#include <errno.h>
#include <stdlib.h>

#include "flatten.h"

void iotame_extents_free(iotame_extents_t *x)
{
    free(x->v);
    x->v = NULL;
    x->n = x->cap = 0;
}

static int add(iotame_extents_t *x, int64_t off, int64_t len)
{
    if (x->n && x->v[x->n - 1].off + x->v[x->n - 1].len == off) {
        x->v[x->n - 1].len += len;
        return 0;
    }
    if (x->n == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 64;
        iotame_extent_t *grown = realloc(x->v, cap * sizeof *grown);
        if (!grown) return -ENOMEM;
        x->v = grown;
        x->cap = cap;
    }
    x->v[x->n++] = (iotame_extent_t){off, len};
    return 0;
}

int iotame_flatten_view_ok(const iotame_view_t *v)
{
    const iotame_flat_t *f = v->filetype;
    if (!f || !f->sorted || f->size <= 0 || f->nruns == 0 || f->extent <= 0 || v->disp < 0) return 0;
    /* Data bytes must lie at non-negative offsets and each tile must end before the next begins. */
    const iotame_run_t *first = &f->runs[0], *last = &f->runs[f->nruns - 1];
    int64_t end = last->off + (last->count - 1) * last->stride + last->len;
    return first->off >= 0 && end <= first->off + f->extent;
}

/* Where byte `start` of the data stream lies: its tile, and the run (returned) of the filetype, the piece *j of
 * that run and the byte *b of that piece. */
static size_t view_locate(const iotame_flat_t *f, int64_t start, int64_t *tile, int64_t *j, int64_t *b)
{
    const int64_t within = start % f->size;
    *tile = start / f->size;
    size_t lo = 0, hi = f->nruns; /* the last run whose prefix is <= within */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (f->cum[mid] <= within) lo = mid;
        else hi = mid;
    }
    const int64_t in_run = within - f->cum[lo];
    *j = in_run / f->runs[lo].len;
    *b = in_run % f->runs[lo].len;
    return lo;
}

int iotame_flatten_view_map(const iotame_view_t *v, int64_t start, int64_t len, iotame_extents_t *out)
{
    out->n = 0;
    if (len <= 0) return 0;
    if (!iotame_flatten_view_ok(v) || start < 0) return -EINVAL;
    const iotame_flat_t *f = v->filetype;
    const int64_t S = f->size, E = f->extent;
    if (f->nruns == 1 && f->runs[0].count == 1 && S == E) /* dense tiles: one extent */
        return add(out, v->disp + f->runs[0].off + start, len);
    int64_t tile, j, b;
    size_t r = view_locate(f, start, &tile, &j, &b);
    while (len > 0) {
        const iotame_run_t *run = &f->runs[r];
        int64_t base = v->disp + tile * E + run->off;
        for (; j < run->count && len > 0; j++, b = 0) {
            int64_t n = run->len - b < len ? run->len - b : len;
            if (add(out, base + j * run->stride + b, n)) return -ENOMEM;
            len -= n;
        }
        j = 0;
        if (++r == f->nruns) {
            r = 0;
            tile++;
        }
    }
    return 0;
}

void iotame_runs_free(iotame_runs_t *x)
{
    free(x->v);
    x->v = NULL;
    x->n = x->cap = 0;
}

/* Appends count pieces of len bytes at off, off + stride, ... to x, merged into the last run where they continue
 * it. */
static int view_runs_add(iotame_runs_t *x, int64_t off, int64_t len, int64_t count, int64_t stride)
{
    if (count == 1 || stride == len) { /* contiguous: one piece */
        len *= count;
        count = 1;
        stride = len;
    }
    if (x->n) {
        iotame_run_t *p = &x->v[x->n - 1];
        if (p->count == 1 && count == 1 && p->off + p->len == off) { /* touching pieces */
            p->len += len;
            p->stride = p->len;
            return 0;
        }
        int64_t s = p->count > 1 ? p->stride : count > 1 ? stride : off - p->off;
        if (p->len == len && s > len && off == p->off + p->count * s && (count == 1 || stride == s)) {
            p->count += count;
            p->stride = s;
            return 0;
        }
    }
    if (x->n == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 64;
        iotame_run_t *grown = realloc(x->v, cap * sizeof *grown);
        if (!grown) return -ENOMEM;
        x->v = grown;
        x->cap = cap;
    }
    x->v[x->n++] = (iotame_run_t){off, len, count, stride};
    return 0;
}

int iotame_flatten_view_runs(const iotame_view_t *v, int64_t start, int64_t len, iotame_runs_t *out)
{
    out->n = 0;
    if (len <= 0) return 0;
    if (!iotame_flatten_view_ok(v) || start < 0) return -EINVAL;
    const iotame_flat_t *f = v->filetype;
    const int64_t E = f->extent;
    const iotame_run_t *one = &f->runs[0];
    if (f->nruns == 1 && E == one->count * one->stride) { /* tiles continue the run: pieces at one stride */
        const int64_t L = one->len, first = start / L, b = start % L, end = start + len;
        const int64_t at = v->disp + one->off;
        if (b) { /* the rest of a piece begun before start */
            int64_t n = L - b < len ? L - b : len;
            if (view_runs_add(out, at + first * one->stride + b, n, 1, n)) return -ENOMEM;
        }
        int64_t p = b ? first + 1 : first, whole = end / L - p;
        if (whole > 0 && view_runs_add(out, at + p * one->stride, L, whole, one->stride)) return -ENOMEM;
        if (end % L && end / L >= p && view_runs_add(out, at + (end / L) * one->stride, end % L, 1, end % L))
            return -ENOMEM; /* the call ends inside a piece (not the one begun before start) */
        return 0;
    }
    int64_t tile, j, b;
    size_t r = view_locate(f, start, &tile, &j, &b);
    while (len > 0) {
        const iotame_run_t *run = &f->runs[r];
        const int64_t base = v->disp + tile * E + run->off;
        if (b) { /* the rest of a piece begun before start */
            int64_t n = run->len - b < len ? run->len - b : len;
            if (view_runs_add(out, base + j * run->stride + b, n, 1, n)) return -ENOMEM;
            len -= n;
            j++;
            b = 0;
        }
        int64_t whole = run->count - j < len / run->len ? run->count - j : len / run->len;
        if (whole > 0 && view_runs_add(out, base + j * run->stride, run->len, whole, run->stride)) return -ENOMEM;
        len -= whole * run->len;
        j += whole;
        if (j < run->count && len > 0) { /* the call ends inside this piece */
            if (view_runs_add(out, base + j * run->stride, len, 1, len)) return -ENOMEM;
            len = 0;
        }
        j = 0;
        if (++r == f->nruns) {
            r = 0;
            tile++;
        }
    }
    return 0;
}
