/* Datatype flattening through the MPI introspection calls (MPI_Type_get_envelope / get_contents), the technique
 * of ROMIO's flatten.c (Thakur, Gropp, Lusk: "Optimizing noncontiguous accesses in MPI-IO", 2002), with one level
 * of regularity kept: a run is `count` blocks of `len` bytes `stride` apart, so a vector, a subarray row or the
 * blocks of an indexed_block with equal spacing stay one run instead of millions of (offset, length) pairs.
 *
 * RATIONALE: runs are appended in typemap order and merged with the previous one when they continue it (same
 * length and spacing, or touching blocks); a child type is replicated by re-appending its runs, which collapses
 * back into single runs whenever the replication is regular. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "flatten.h"

typedef struct {
    iotame_run_t *r;
    size_t n, cap;
    int err;
} list_t;

static void list_free(list_t *l)
{
    free(l->r);
    memset(l, 0, sizeof *l);
}

static void push(list_t *l, iotame_run_t run)
{
    if (l->err) return;
    if (l->n == l->cap) {
        if (l->cap >= IOTAME_FLATTEN_MAX_RUNS) {
            l->err = -E2BIG;
            return;
        }
        size_t cap = l->cap ? 2 * l->cap : 8;
        iotame_run_t *grown = realloc(l->r, cap * sizeof *grown);
        if (!grown) {
            l->err = -ENOMEM;
            return;
        }
        l->r = grown;
        l->cap = cap;
    }
    l->r[l->n++] = run;
}

/* Appends count blocks of len bytes at off, off + stride, ..., merged into the last run when they continue it. */
static void flatten_append(list_t *l, int64_t off, int64_t len, int64_t count, int64_t stride)
{
    if (len <= 0 || count <= 0 || l->err) return;
    if (count == 1) stride = len;
    if (count > 1 && stride == len) {
        len *= count;
        count = 1;
        stride = len;
    }
    if (l->n) {
        iotame_run_t *last = &l->r[l->n - 1];
        if (last->count == 1 && count == 1 && last->off + last->len == off) {
            last->len += len;
            last->stride = last->len;
            return;
        }
        if (last->len == len) {
            if (last->count == 1) {
                int64_t s = off - last->off;
                if (s > len && (count == 1 || stride == s)) {
                    last->count += count;
                    last->stride = s;
                    return;
                }
            } else if (off == last->off + last->count * last->stride && (count == 1 || stride == last->stride)) {
                last->count += count;
                return;
            }
        }
    }
    push(l, (iotame_run_t){off, len, count, stride});
}

/* Appends `count` copies of the runs t[0..nt) shifted by base, base + stride, ... */
static void replicate(list_t *l, const iotame_run_t *t, size_t nt, int64_t base, int64_t count, int64_t stride)
{
    if (count <= 0 || nt == 0) return;
    if (nt == 1 && t[0].count == 1) {
        flatten_append(l, base + t[0].off, t[0].len, count, stride);
        return;
    }
    for (int64_t j = 0; j < count && !l->err; j++)
        for (size_t i = 0; i < nt; i++)
            flatten_append(l, base + j * stride + t[i].off, t[i].len, t[i].count, t[i].stride);
}

static int64_t type_extent(MPI_Datatype t, int64_t *lb)
{
    MPI_Count l = 0, e = 0;
    PMPI_Type_get_extent_x(t, &l, &e);
    if (lb) *lb = (int64_t)l;
    return (int64_t)e;
}

/* The named types whose size is not their extent: the MINLOC/MAXLOC pairs. */
#define PAIR(T1, T2) {offsetof(struct { T1 a; T2 b; }, b), sizeof(T1), sizeof(T2)}
static int named_pair(MPI_Datatype t, list_t *l, int64_t base)
{
    static const struct {
        size_t off_b, len_a, len_b;
    } pairs[] = {PAIR(float, int), PAIR(double, int), PAIR(long, int), PAIR(short, int), PAIR(long double, int),
                 PAIR(int, int)};
    const MPI_Datatype types[] = {MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_SHORT_INT, MPI_LONG_DOUBLE_INT,
                                  MPI_2INT};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (t != types[i]) continue;
        flatten_append(l, base, (int64_t)pairs[i].len_a, 1, 0);
        flatten_append(l, base + (int64_t)pairs[i].off_b, (int64_t)pairs[i].len_b, 1, 0);
        return 0;
    }
    return -ENOTSUP;
}

static int flatten_into(MPI_Datatype type, list_t *l, int64_t base, int depth);

/* The runs of a child type in a list of their own. */
static int child_runs(MPI_Datatype t, list_t *out, int depth)
{
    memset(out, 0, sizeof *out);
    int rc = flatten_into(t, out, 0, depth + 1);
    if (!rc) rc = out->err;
    if (rc) list_free(out);
    return rc;
}

/* One dimension of an array type: the blocks of indices it holds, as (start, length) in elements. */
typedef struct {
    int64_t *start, *len;
    size_t n;
    int64_t stride; /* elements between neighbouring indices of this dimension */
} dim_t;

/* A subarray or darray: dims[0] slowest, dims[nd-1] fastest, elements of the child type (extent ext). */
static int array_into(list_t *l, int64_t base, const list_t *child, int64_t ext, const dim_t *dims, int nd)
{
    list_t cur = {0}, next = {0};
    for (size_t b = 0; b < dims[nd - 1].n; b++)
        replicate(&cur, child->r, child->n, dims[nd - 1].start[b] * ext, dims[nd - 1].len[b], ext);
    for (int d = nd - 2; d >= 0 && !cur.err; d--) {
        memset(&next, 0, sizeof next);
        int64_t step = dims[d].stride * ext;
        for (size_t b = 0; b < dims[d].n && !next.err; b++)
            replicate(&next, cur.r, cur.n, dims[d].start[b] * step, dims[d].len[b], step);
        list_free(&cur);
        cur = next;
    }
    int rc = cur.err;
    if (!rc) replicate(l, cur.r, cur.n, base, 1, 0);
    list_free(&cur);
    return rc;
}

static void dims_free(dim_t *dims, int nd)
{
    for (int d = 0; d < nd; d++) {
        free(dims[d].start);
        free(dims[d].len);
    }
    free(dims);
}

/* Fills dims[] for a subarray (darray == 0) or a darray from the constructor's integers, in C order. */
static int array_dims(const int *ints, int darray, dim_t **out, int *ndims)
{
    int nd = darray ? ints[2] : ints[0];
    if (nd <= 0) return -EINVAL;
    dim_t *dims = calloc((size_t)nd, sizeof *dims);
    if (!dims) return -ENOMEM;
    const int *gsizes = darray ? ints + 3 : ints + 1;
    int order = darray ? ints[3 + 4 * nd] : ints[1 + 3 * nd];
    int coords_left = darray ? ints[1] : 0;
    int rc = 0;
    for (int i = nd - 1; i >= 0 && !rc; i--) { /* row-major process grid: the last dimension varies fastest */
        int64_t gsize = gsizes[i], first = 0, bl = gsize, period = gsize;
        size_t nblocks = 1;
        if (darray) {
            int distrib = ints[3 + nd + i], darg = ints[3 + 2 * nd + i], psize = ints[3 + 3 * nd + i];
            int coord = coords_left % psize;
            coords_left /= psize;
            if (distrib == MPI_DISTRIBUTE_BLOCK) {
                bl = darg == MPI_DISTRIBUTE_DFLT_DARG ? (gsize + psize - 1) / psize : darg;
                first = (int64_t)coord * bl;
                nblocks = first < gsize ? 1 : 0;
            } else if (distrib == MPI_DISTRIBUTE_CYCLIC) {
                bl = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
                first = (int64_t)coord * bl;
                period = bl * psize;
                nblocks = first < gsize ? (size_t)((gsize - first + period - 1) / period) : 0;
            }
        } else {
            first = ints[1 + 2 * nd + i];
            bl = ints[1 + nd + i];
        }
        /* Fortran order stores the first dimension fastest: reverse the dimensions. */
        dim_t *d = &dims[order == MPI_ORDER_FORTRAN ? nd - 1 - i : i];
        d->start = malloc((nblocks ? nblocks : 1) * sizeof *d->start);
        d->len = malloc((nblocks ? nblocks : 1) * sizeof *d->len);
        if (!d->start || !d->len) rc = -ENOMEM;
        for (size_t b = 0; b < nblocks && !rc; b++) {
            int64_t s = first + (int64_t)b * period;
            d->start[d->n] = s;
            d->len[d->n] = (darray && s + bl > gsize) ? gsize - s : bl;
            d->n++;
        }
    }
    /* Strides in elements, fastest dimension last. */
    int64_t stride = 1;
    for (int k = nd - 1; k >= 0 && !rc; k--) {
        dims[k].stride = stride;
        int orig = order == MPI_ORDER_FORTRAN ? nd - 1 - k : k;
        stride *= gsizes[orig];
    }
    if (rc) {
        dims_free(dims, nd);
        return rc;
    }
    *out = dims;
    *ndims = nd;
    return 0;
}

static int flatten_into(MPI_Datatype type, list_t *l, int64_t base, int depth)
{
    if (depth > 64) return -ENOTSUP;
    int ni = 0, na = 0, nd = 0, combiner = 0;
    if (PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner) != MPI_SUCCESS) return -ENOTSUP;
    if (combiner == MPI_COMBINER_NAMED || combiner == MPI_COMBINER_F90_REAL ||
        combiner == MPI_COMBINER_F90_COMPLEX || combiner == MPI_COMBINER_F90_INTEGER) {
        MPI_Count size = 0;
        PMPI_Type_size_x(type, &size);
        int64_t lb, ext = type_extent(type, &lb);
        if (size == ext) {
            flatten_append(l, base + lb, size, 1, 0);
            return 0;
        }
        return named_pair(type, l, base);
    }
    int *ints = malloc((size_t)(ni ? ni : 1) * sizeof *ints);
    MPI_Aint *addrs = malloc((size_t)(na ? na : 1) * sizeof *addrs);
    MPI_Datatype *types = malloc((size_t)(nd ? nd : 1) * sizeof *types);
    if (!ints || !addrs || !types) {
        free(ints);
        free(addrs);
        free(types);
        return -ENOMEM;
    }
    int rc = PMPI_Type_get_contents(type, ni, na, nd, ints, addrs, types) == MPI_SUCCESS ? 0 : -ENOTSUP;
    int got_types = rc == 0;
    list_t c = {0};
    if (rc == 0 && combiner != MPI_COMBINER_STRUCT && nd >= 1) rc = child_runs(types[0], &c, depth);
    int64_t ext = (rc == 0 && nd >= 1) ? type_extent(types[0], NULL) : 0;
    if (rc == 0) {
        switch (combiner) {
        case MPI_COMBINER_DUP:
        case MPI_COMBINER_RESIZED: /* the same typemap; only lb and extent change */
            replicate(l, c.r, c.n, base, 1, 0);
            break;
        case MPI_COMBINER_CONTIGUOUS:
            replicate(l, c.r, c.n, base, ints[0], ext);
            break;
        case MPI_COMBINER_VECTOR:
        case MPI_COMBINER_HVECTOR: {
            list_t block = {0};
            replicate(&block, c.r, c.n, 0, ints[1], ext);
            int64_t stride = combiner == MPI_COMBINER_VECTOR ? (int64_t)ints[2] * ext : (int64_t)addrs[0];
            if (!block.err) replicate(l, block.r, block.n, base, ints[0], stride);
            rc = block.err;
            list_free(&block);
            break;
        }
        case MPI_COMBINER_INDEXED:
        case MPI_COMBINER_HINDEXED:
            for (int i = 0; i < ints[0] && !l->err; i++) {
                int64_t d = combiner == MPI_COMBINER_INDEXED ? (int64_t)ints[1 + ints[0] + i] * ext : (int64_t)addrs[i];
                replicate(l, c.r, c.n, base + d, ints[1 + i], ext);
            }
            break;
        case MPI_COMBINER_INDEXED_BLOCK:
        case MPI_COMBINER_HINDEXED_BLOCK:
            for (int i = 0; i < ints[0] && !l->err; i++) {
                int64_t d = combiner == MPI_COMBINER_INDEXED_BLOCK ? (int64_t)ints[2 + i] * ext : (int64_t)addrs[i];
                replicate(l, c.r, c.n, base + d, ints[1], ext);
            }
            break;
        case MPI_COMBINER_STRUCT:
            for (int i = 0; i < ints[0] && !rc && !l->err; i++) {
                list_t ci;
                rc = child_runs(types[i], &ci, depth);
                if (rc) break;
                replicate(l, ci.r, ci.n, base + (int64_t)addrs[i], ints[1 + i], type_extent(types[i], NULL));
                list_free(&ci);
            }
            break;
        case MPI_COMBINER_SUBARRAY:
        case MPI_COMBINER_DARRAY: {
            dim_t *dims = NULL;
            int ndims = 0;
            rc = array_dims(ints, combiner == MPI_COMBINER_DARRAY, &dims, &ndims);
            if (!rc) {
                rc = array_into(l, base, &c, ext, dims, ndims);
                dims_free(dims, ndims);
            }
            break;
        }
        default: /* the MPI-1 *_INTEGER combiners and anything newer */
            rc = -ENOTSUP;
        }
    }
    list_free(&c);
    if (got_types) {
        for (int i = 0; i < nd; i++) {
            int ci, ca, cd, comb;
            if (PMPI_Type_get_envelope(types[i], &ci, &ca, &cd, &comb) == MPI_SUCCESS && comb != MPI_COMBINER_NAMED)
                PMPI_Type_free(&types[i]);
        }
    }
    free(ints);
    free(addrs);
    free(types);
    return rc ? rc : l->err;
}

int iotame_flatten_type(MPI_Datatype type, iotame_flat_t **out)
{
    *out = NULL;
    list_t l = {0};
    int rc = flatten_into(type, &l, 0, 0);
    if (rc) {
        list_free(&l);
        return rc;
    }
    iotame_flat_t *f = calloc(1, sizeof *f);
    int64_t *cum = malloc((l.n + 1) * sizeof *cum);
    if (!f || !cum) {
        free(f);
        free(cum);
        list_free(&l);
        return -ENOMEM;
    }
    f->runs = l.r;
    f->nruns = l.n;
    f->cum = cum;
    MPI_Count size = 0, tlb = 0, text = 0;
    PMPI_Type_size_x(type, &size);
    PMPI_Type_get_true_extent_x(type, &tlb, &text);
    f->size = (int64_t)size;
    f->extent = type_extent(type, &f->lb);
    f->true_lb = (int64_t)tlb;
    f->true_ub = (int64_t)(tlb + text);
    f->sorted = 1;
    cum[0] = 0;
    int64_t end = INT64_MIN;
    for (size_t i = 0; i < l.n; i++) {
        const iotame_run_t *r = &l.r[i];
        cum[i + 1] = cum[i] + r->len * r->count;
        if (r->off < end || (r->count > 1 && r->stride < r->len)) f->sorted = 0;
        end = r->off + (r->count - 1) * r->stride + r->len;
    }
    if (cum[l.n] != f->size) { /* a typemap we misunderstood: never guess */
        iotame_flatten_free(f);
        return -ENOTSUP;
    }
    *out = f;
    return 0;
}

void iotame_flatten_free(iotame_flat_t *f)
{
    if (!f) return;
    free(f->runs);
    free(f->cum);
    free(f);
}

int iotame_flatten_is_contiguous(MPI_Datatype type, int64_t count, int64_t *first)
{
    MPI_Count size = 0, tlb = 0, text = 0;
    *first = 0;
    if (PMPI_Type_size_x(type, &size) != MPI_SUCCESS) return 0;
    if (size == 0 || count == 0) return 1;
    int64_t lb, ext = type_extent(type, &lb);
    PMPI_Type_get_true_extent_x(type, &tlb, &text);
    if (text != size || (count > 1 && ext != size)) return 0; /* holes inside an item or between items */
    *first = (int64_t)tlb;
    int ni, na, nd, combiner;
    if (PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner) != MPI_SUCCESS) return 0;
    if (combiner == MPI_COMBINER_NAMED) return 1;
    /* Dense, but the typemap may visit the bytes out of order (a struct with swapped members). */
    iotame_flat_t *f;
    if (iotame_flatten_type(type, &f) != 0) return 0;
    int yes = f->nruns == 1 && f->runs[0].count == 1;
    iotame_flatten_free(f);
    return yes;
}
