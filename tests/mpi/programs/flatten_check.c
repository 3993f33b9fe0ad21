/* The flattener (runtime/src/flatten) against MPI's own typemaps: usage `flatten_check SEED CASES` (one rank).
 *
 * MPI's typemap of a type is found by packing marked memory (the library packs in typemap order, so the packed
 * bytes name their source offsets). For random nested types of every constructor (zero-length blocks, holes,
 * out-of-order blocks, negative lower bounds, darrays, named pair types) the flattened runs must expand to exactly
 * those offsets, with MPI's size, lb and extent, and `sorted` exactly when the offsets increase. For sorted types
 * the view mapping of random byte ranges must give the extents the typemap tiled by the extent gives. Large
 * regular types must stay a few runs. Prints {"cases": N, "failures": F}; exit 1 on a failure. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flatten/flatten.h"
#include "type_helpers.h"

static int failures;

#define FAIL(...)                                                                                              \
    do {                                                                                                       \
        if (failures++ < 20) {                                                                                 \
            fprintf(stderr, "case %d: ", cur_case);                                                            \
            fprintf(stderr, __VA_ARGS__);                                                                      \
            fprintf(stderr, "\n");                                                                             \
        }                                                                                                      \
    } while (0)

static int cur_case;

/* Random types of every constructor; `sorted` keeps the typemap increasing (file types), else anything goes
 * (memory types: blocks out of order, negative displacements). */
static MPI_Datatype gen(rng_t *g, int depth, int sorted)
{
    static const MPI_Datatype bases[] = {MPI_BYTE, MPI_INT, MPI_DOUBLE, MPI_SHORT_INT, MPI_DOUBLE_INT, MPI_2INT,
                                         MPI_LONG_DOUBLE_INT, MPI_FLOAT_INT};
    if (depth == 0 || rnd(g, 0, 5) == 0) return bases[rnd(g, 0, sorted ? 2 : 7)];
    MPI_Datatype c = gen(g, depth - 1, sorted), t;
    MPI_Aint ext = extent_of(c, NULL);
    int k = rnd(g, 0, 11);
    int n = rnd(g, 0, 4), bl[4], d[4];
    MPI_Aint hd[4];
    switch (k) {
    case 0: MPI_Type_contiguous(rnd(g, 0, 3), c, &t); break;
    case 1: {
        int b = rnd(g, 0, 3);
        MPI_Type_vector(rnd(g, 0, 4), b, sorted ? b + rnd(g, 0, 3) : rnd(g, -3, 4), c, &t);
        break;
    }
    case 2: {
        int b = rnd(g, 0, 3);
        MPI_Type_create_hvector(rnd(g, 0, 4), b, sorted ? b * ext + rnd(g, 0, 9) : rnd(g, -40, 40), c, &t);
        break;
    }
    case 3:
    case 4: {
        int at = rnd(g, 0, 2);
        for (int i = 0; i < n; i++) {
            bl[i] = rnd(g, 0, 3);
            d[i] = sorted ? at : rnd(g, -4, 8);
            hd[i] = sorted ? (MPI_Aint)at * ext + (bl[i] ? rnd(g, 0, 1) : 0) : rnd(g, -50, 80);
            at += bl[i] + rnd(g, 0, 2) + 1;
        }
        if (k == 3) MPI_Type_indexed(n, bl, d, c, &t);
        else MPI_Type_create_hindexed(n, bl, hd, c, &t);
        break;
    }
    case 5:
    case 6: {
        int b = rnd(g, 0, 3), at = rnd(g, 0, 2);
        for (int i = 0; i < n; i++) {
            d[i] = sorted ? at : rnd(g, -4, 8);
            hd[i] = (MPI_Aint)d[i] * ext;
            at += b + rnd(g, 0, 2);
        }
        if (k == 5) MPI_Type_create_indexed_block(n, b, d, c, &t);
        else MPI_Type_create_hindexed_block(n, b, hd, c, &t);
        break;
    }
    case 7: {
        MPI_Datatype ch[4];
        MPI_Aint at = 0;
        for (int i = 0; i < n; i++) {
            ch[i] = i ? gen(g, depth - 1, sorted) : c;
            bl[i] = rnd(g, 0, 2);
            hd[i] = sorted ? at + rnd(g, 0, 3) : rnd(g, -60, 60);
            at = hd[i] + bl[i] * extent_of(ch[i], NULL);
        }
        if (n == 0) MPI_Type_contiguous(1, c, &t);
        else MPI_Type_create_struct(n, bl, hd, ch, &t);
        for (int i = 1; i < n; i++) drop(&ch[i]);
        break;
    }
    case 8: {
        int nd = rnd(g, 1, 3), sz[3], sub[3], st[3];
        for (int i = 0; i < nd; i++) {
            sz[i] = rnd(g, 1, 5);
            sub[i] = rnd(g, 0, sz[i]);
            st[i] = rnd(g, 0, sz[i] - sub[i]);
        }
        MPI_Type_create_subarray(nd, sz, sub, st, rnd(g, 0, 1) ? MPI_ORDER_C : MPI_ORDER_FORTRAN, c, &t);
        break;
    }
    case 9: {
        int nd = rnd(g, 1, 3), gs[3], dist[3], darg[3], ps[3], size = 1;
        for (int i = 0; i < nd; i++) {
            gs[i] = rnd(g, 1, 7);
            ps[i] = rnd(g, 1, 3);
            size *= ps[i];
            int kk = rnd(g, 0, 2);
            dist[i] = kk == 0 && ps[i] == 1 ? MPI_DISTRIBUTE_NONE : kk == 1 ? MPI_DISTRIBUTE_BLOCK : MPI_DISTRIBUTE_CYCLIC;
            darg[i] = MPI_DISTRIBUTE_DFLT_DARG;
            if (dist[i] == MPI_DISTRIBUTE_CYCLIC && rnd(g, 0, 1)) darg[i] = rnd(g, 1, 3);
            if (dist[i] == MPI_DISTRIBUTE_BLOCK && rnd(g, 0, 1)) darg[i] = (gs[i] + ps[i] - 1) / ps[i] + rnd(g, 0, 2);
        }
        MPI_Type_create_darray(size, rnd(g, 0, size - 1), nd, gs, dist, darg, ps,
                               rnd(g, 0, 1) ? MPI_ORDER_C : MPI_ORDER_FORTRAN, c, &t);
        break;
    }
    case 10: {
        MPI_Aint lb;
        MPI_Aint e = extent_of(c, &lb);
        if (sorted) MPI_Type_create_resized(c, lb, e + rnd(g, 0, 9), &t);
        else MPI_Type_create_resized(c, lb - rnd(g, 0, 20), e + rnd(g, 0, 40), &t);
        break;
    }
    default: MPI_Type_dup(c, &t);
    }
    drop(&c);
    int size;
    MPI_Type_size(t, &size);
    if (size == 0 || extent_of(t, NULL) == 0) { /* RATIONALE: MPICH 4.0.2's MPI_Pack divides by zero on empty children */
        drop(&t);
        return MPI_BYTE;
    }
    return t;
}

/* MPI's typemap as byte offsets (typemap order), by packing marked memory: 3 passes of one byte each. */
static int64_t *probe(MPI_Datatype t, int *n)
{
    MPI_Aint tlb, text;
    MPI_Type_get_true_extent(t, &tlb, &text);
    int size;
    MPI_Type_size(t, &size);
    *n = size;
    int64_t *off = calloc((size_t)size + 1, sizeof *off);
    if (size == 0) return off;
    unsigned char *mem = malloc((size_t)text + 1), *out = malloc((size_t)size + 1);
    for (int p = 0; p < 3; p++) {
        for (MPI_Aint i = 0; i < text; i++) mem[i] = (unsigned char)((uint64_t)(i + tlb + (1 << 20)) >> (8 * p));
        int pos = 0;
        MPI_Pack(mem - tlb, 1, t, out, size, &pos, MPI_COMM_SELF);
        for (int i = 0; i < size; i++) off[i] |= (int64_t)out[i] << (8 * p);
    }
    for (int i = 0; i < size; i++) off[i] -= 1 << 20;
    free(mem);
    free(out);
    return off;
}

static void check_type(MPI_Datatype t)
{
    if (getenv("FLATTEN_CHECK_VERBOSE")) {
        fprintf(stderr, "case %d:\n", cur_case);
        dump_type(t, 2);
    }
    int n;
    int64_t *want = probe(t, &n);
    iotame_flat_t *f;
    int rc = iotame_flatten_type(t, &f);
    if (rc) {
        FAIL("iotame_flatten_type returned %d", rc);
        free(want);
        return;
    }
    MPI_Aint lb, ext = extent_of(t, &lb);
    if (f->size != n || f->lb != lb || f->extent != ext) FAIL("size/lb/extent %ld/%ld/%ld, MPI says %d/%ld/%ld",
                                                              (long)f->size, (long)f->lb, (long)f->extent, n, (long)lb, (long)ext);
    int k = 0, sorted = 1, ok = 1;
    for (size_t r = 0; r < f->nruns && ok; r++) {
        const iotame_run_t *x = &f->runs[r];
        if (f->cum[r] != k) ok = 0;
        for (int64_t j = 0; j < x->count && ok; j++)
            for (int64_t b = 0; b < x->len && ok; b++, k++)
                if (k >= n || want[k] != x->off + j * x->stride + b) ok = 0;
    }
    if (!ok || k != n) FAIL("runs do not expand to MPI's typemap (byte %d)", k);
    for (int i = 1; i < n; i++) sorted &= want[i] > want[i - 1];
    if (f->sorted != sorted) FAIL("sorted %d, typemap says %d", f->sorted, sorted);
    /* contiguity of count items */
    for (int count = 1; count <= 3; count++) {
        int64_t first;
        int dense = n > 0;
        for (int c = 0; c < count && dense; c++)
            for (int i = 0; i < n; i++) dense &= want[i] + c * ext == want[0] + (int64_t)c * n + i;
        if (n == 0) dense = 1;
        int got = iotame_flatten_is_contiguous(t, count, &first);
        MPI_Aint tl, te;
        MPI_Type_get_true_extent(t, &tl, &te);
        /* A "no" is allowed when MPI's true extent counts zero-length blocks (the cheap test then says no). */
        if ((got != dense && !(got == 0 && te != n)) || (got && dense && n && first != want[0])) {
            MPI_Aint tlb, text;
            MPI_Type_get_true_extent(t, &tlb, &text);
            FAIL("is_contiguous(%d) %d, expected %d (size %d lb %ld extent %ld true lb %ld true extent %ld, %zu runs)",
                 count, got, dense, n, (long)lb, (long)ext, (long)tlb, (long)text, f->nruns);
        }
    }
    /* View mapping of sorted types with data: tile the typemap, compare random ranges. */
    iotame_view_t v = {.disp = rnd(&(rng_t){(uint64_t)cur_case}, 0, 100), .etype_size = 1, .filetype = f};
    if (sorted && n > 0 && want[0] >= 0 && iotame_flatten_view_ok(&v)) {
        rng_t g = {(uint64_t)cur_case * 77u};
        iotame_extents_t x = {0};
        iotame_runs_t runs = {0};
        for (int trial = 0; trial < 5; trial++) {
            int64_t start = rnd(&g, 0, 4 * n), len = rnd(&g, 0, 5 * n);
            if (iotame_flatten_view_map(&v, start, len, &x) != 0) {
                FAIL("view_map failed");
                break;
            }
            int64_t p = start;
            for (size_t e = 0; e < x.n; e++) {
                if (e && x.v[e - 1].off + x.v[e - 1].len >= x.v[e].off) FAIL("extents not sorted and merged");
                for (int64_t b = 0; b < x.v[e].len; b++, p++) {
                    int64_t expect = v.disp + (p / n) * ext + want[p % n];
                    if (x.v[e].off + b != expect) {
                        FAIL("view byte %ld at %ld, expected %ld", (long)p, (long)(x.v[e].off + b), (long)expect);
                        e = x.n;
                        break;
                    }
                }
            }
            if (p != start + len && !failures) FAIL("view mapped %ld bytes, not %ld", (long)(p - start), (long)len);
            /* the runs: the same bytes in the same order */
            if (iotame_flatten_view_runs(&v, start, len, &runs) != 0) {
                FAIL("view_runs failed");
                break;
            }
            p = start;
            for (size_t r = 0; r < runs.n && p >= 0; r++)
                for (int64_t j = 0; j < runs.v[r].count && p >= 0; j++)
                    for (int64_t b = 0; b < runs.v[r].len; b++, p++)
                        if (runs.v[r].off + j * runs.v[r].stride + b != v.disp + (p / n) * ext + want[p % n]) {
                            FAIL("runs: view byte %ld misplaced", (long)p);
                            p = -1;
                            break;
                        }
            if (p >= 0 && p != start + len) FAIL("runs mapped %ld bytes, not %ld", (long)(p - start), (long)len);
        }
        iotame_extents_free(&x);
        iotame_runs_free(&runs);
    }
    iotame_flatten_free(f);
    free(want);
}

/* Large regular types stay a few runs, and map without expanding the type. */
static void check_regular(void)
{
    MPI_Datatype v, s, t;
    iotame_flat_t *f;
    cur_case = -1;
    MPI_Type_vector(1 << 20, 1, 2, MPI_INT, &v);
    if (iotame_flatten_type(v, &f) != 0 || f->nruns != 1) FAIL("vector of 2^20 blocks: %zu runs", f ? f->nruns : 0);
    iotame_flatten_free(f);
    int sizes[2] = {4096, 4096}, sub[2] = {1024, 1024}, st[2] = {1024, 2048};
    MPI_Type_create_subarray(2, sizes, sub, st, MPI_ORDER_C, MPI_DOUBLE, &s);
    if (iotame_flatten_type(s, &f) != 0 || f->nruns != 1) FAIL("2-d subarray: %zu runs", f ? f->nruns : 0);
    iotame_flatten_free(f);
    int sizes3[3] = {256, 256, 256}, sub3[3] = {64, 64, 64}, st3[3] = {0, 64, 128};
    MPI_Type_create_subarray(3, sizes3, sub3, st3, MPI_ORDER_FORTRAN, MPI_FLOAT, &t);
    if (iotame_flatten_type(t, &f) != 0 || f->nruns != 64) FAIL("3-d subarray: %zu runs", f ? f->nruns : 0);
    iotame_flatten_free(f);
    MPI_Type_free(&v);
    MPI_Type_free(&s);
    MPI_Type_free(&t);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
    int cases = argc > 2 ? atoi(argv[2]) : 1000;
    int first = argc > 3 ? atoi(argv[3]) : 0;
    for (cur_case = first; cur_case < first + cases; cur_case++) {
        rng_t g = {seed * 7919u + (uint64_t)cur_case};
        MPI_Datatype t = gen(&g, rnd(&g, 1, 4), rnd(&g, 0, 1));
        if (!is_named(t)) MPI_Type_commit(&t);
        check_type(t);
        drop(&t);
    }
    check_regular();
    printf("{\"cases\": %d, \"failures\": %d}\n", cases, failures);
    MPI_Finalize();
    return failures ? 1 : 0;
}
