/* The flattener (runtime/src/flatten: type.c, view.c) on chosen datatypes and views, one rank (MPI_Init for the
 * datatypes only). Each type's runs are checked against hand-computed ones where the shape is the point (a vector
 * stays one run, touching blocks merge, zero-length blocks vanish, typemap order is kept), and always against MPI's
 * own typemap, read by packing marked memory (PMPI_Pack lays the bytes out in typemap order). Views are checked
 * against the typemap tiled by hand. tests/mpi/programs/flatten_check draws random types; this one names the cases. */
#include <errno.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flatten/flatten.h"

typedef struct {
    int64_t off, len, count, stride;
} run_t;

/* MPI's typemap of one item of t: the source offset of every packed byte (relative to the buffer). */
static int64_t *typemap(MPI_Datatype t, int *n)
{
    MPI_Aint tlb, text;
    MPI_Type_get_true_extent(t, &tlb, &text);
    MPI_Type_size(t, n);
    int64_t *off = calloc((size_t)*n + 1, sizeof *off);
    unsigned char *mem = malloc((size_t)text + 1), *out = malloc((size_t)*n + 1);
    for (int pass = 0; pass < 3 && *n > 0; pass++) { /* one byte of each offset per pass */
        for (MPI_Aint i = 0; i < text; i++) mem[i] = (unsigned char)((uint64_t)(i + (1 << 20)) >> (8 * pass));
        int pos = 0;
        PMPI_Pack(mem - tlb, 1, t, out, *n, &pos, MPI_COMM_SELF);
        for (int i = 0; i < *n; i++) off[i] |= (int64_t)out[i] << (8 * pass);
    }
    for (int i = 0; i < *n; i++) off[i] += tlb - (1 << 20);
    free(mem);
    free(out);
    return off;
}

/* Flattens t and checks it: size, lb, extent and true bounds as MPI says; the runs expand to MPI's typemap;
 * `sorted` as the typemap says; and, when `want` is given, exactly the runs want[0..nwant). Returns the flat type. */
static iotame_flat_t *flat_check(const char *name, MPI_Datatype t, const run_t *want, size_t nwant)
{
    iotame_flat_t *f = NULL;
    int rc = iotame_flatten_type(t, &f);
    if (rc != 0 || !f) {
        fprintf(stderr, "%s: iotame_flatten_type returned %d\n", name, rc);
        failures++;
        return NULL;
    }
    int n;
    int64_t *map = typemap(t, &n);
    MPI_Aint lb, ext, tlb, text;
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_get_true_extent(t, &tlb, &text);
    int ok = f->size == n && f->lb == lb && f->extent == ext;
    if (n > 0) ok &= f->true_lb == tlb && f->true_ub == tlb + text;
    int64_t k = 0;
    int sorted = 1;
    for (size_t r = 0; r < f->nruns; r++) {
        const iotame_run_t *x = &f->runs[r];
        ok &= f->cum[r] == k;
        for (int64_t j = 0; j < x->count; j++)
            for (int64_t b = 0; b < x->len; b++, k++) ok &= k < n && map[k] == x->off + j * x->stride + b;
    }
    ok &= k == n && f->cum[f->nruns] == n;
    for (int i = 1; i < n; i++) sorted &= map[i] > map[i - 1];
    ok &= f->sorted == sorted;
    if (want) {
        ok &= f->nruns == nwant;
        for (size_t r = 0; r < nwant && r < f->nruns; r++)
            ok &= f->runs[r].off == want[r].off && f->runs[r].len == want[r].len && f->runs[r].count == want[r].count &&
                  f->runs[r].stride == want[r].stride;
    }
    if (!ok) {
        fprintf(stderr, "%s: size %ld lb %ld extent %ld sorted %d, %zu runs:", name, (long)f->size, (long)f->lb,
                (long)f->extent, f->sorted, f->nruns);
        for (size_t r = 0; r < f->nruns; r++)
            fprintf(stderr, " {%ld %ld %ld %ld}", (long)f->runs[r].off, (long)f->runs[r].len, (long)f->runs[r].count,
                    (long)f->runs[r].stride);
        fprintf(stderr, "; MPI: size %d lb %ld extent %ld\n", n, (long)lb, (long)ext);
        failures++;
    }
    free(map);
    return f;
}

/* Checks the extents of stream bytes [start, start + len) of the view (disp, filetype t) against t's typemap tiled
 * by its extent, touching extents merged. */
static void view_check(const char *name, MPI_Datatype t, const iotame_flat_t *f, int64_t disp, int64_t start, int64_t len)
{
    int n;
    int64_t *map = typemap(t, &n);
    iotame_extents_t want = {0}, got = {0};
    want.v = malloc((size_t)(len + 1) * sizeof *want.v);
    for (int64_t p = start; p < start + len; p++) {
        int64_t at = disp + p / n * f->extent + map[p % n];
        if (want.n && want.v[want.n - 1].off + want.v[want.n - 1].len == at) want.v[want.n - 1].len++;
        else want.v[want.n++] = (iotame_extent_t){at, 1};
    }
    iotame_view_t v = {disp, 1, f};
    int rc = iotame_flatten_view_map(&v, start, len, &got);
    int ok = rc == 0 && got.n == want.n;
    for (size_t i = 0; ok && i < got.n; i++) ok = got.v[i].off == want.v[i].off && got.v[i].len == want.v[i].len;
    if (!ok) {
        fprintf(stderr, "%s: view of [%ld, +%ld) from %ld: rc %d, %zu extents, expected %zu\n", name, (long)start,
                (long)len, (long)disp, rc, got.n, want.n);
        failures++;
    }
    /* the runs: the same extents once their pieces are listed and touching ones merged, and never more runs */
    iotame_runs_t runs = {0};
    rc = iotame_flatten_view_runs(&v, start, len, &runs);
    size_t k = 0;
    int64_t at = -1, run_len = 0;
    ok = rc == 0 && runs.n <= want.n;
    for (size_t r = 0; ok && r <= runs.n; r++) {
        int64_t count = r < runs.n ? runs.v[r].count : 1;
        for (int64_t j = 0; ok && j < count; j++) {
            int64_t off = r < runs.n ? runs.v[r].off + j * runs.v[r].stride : -2, n = r < runs.n ? runs.v[r].len : 0;
            ok = r == runs.n || (n > 0 && off >= at + run_len);
            if (ok && off == at + run_len && r < runs.n) { /* touches the extent being assembled */
                run_len += n;
                continue;
            }
            if (at >= 0) ok = k < want.n && want.v[k].off == at && want.v[k].len == run_len, k++;
            at = off, run_len = n;
        }
    }
    if (!ok || k != want.n) {
        fprintf(stderr, "%s: runs of [%ld, +%ld) from %ld: rc %d, %zu runs, %zu of %zu extents matched\n", name,
                (long)start, (long)len, (long)disp, rc, runs.n, k, want.n);
        failures++;
    }
    iotame_runs_free(&runs);
    free(want.v);
    iotame_extents_free(&got);
    free(map);
}

static void type_free(MPI_Datatype *t)
{
    int ni, na, nd, comb;
    MPI_Type_get_envelope(*t, &ni, &na, &nd, &comb);
    if (comb != MPI_COMBINER_NAMED) MPI_Type_free(t);
}

static MPI_Datatype committed(MPI_Datatype t)
{
    MPI_Type_commit(&t);
    return t;
}

/* ---- datatypes ---- */

static void named(void)
{
    const run_t i4[] = {{0, 4, 1, 4}};
    iotame_flatten_free(flat_check("MPI_INT", MPI_INT, i4, 1));
    const run_t pair[] = {{0, 12, 1, 12}}; /* MPI_DOUBLE_INT: a double, then an int touching it; extent 16 */
    iotame_flat_t *f = flat_check("MPI_DOUBLE_INT", MPI_DOUBLE_INT, pair, 1);
    CHECK(f && f->extent == 16);
    iotame_flatten_free(f);
}

static void vector(void)
{
    MPI_Datatype t;
    MPI_Type_vector(3, 2, 5, MPI_INT, &t); /* 3 blocks of 8 bytes, 20 apart: one run */
    t = committed(t);
    const run_t want[] = {{0, 8, 3, 20}};
    iotame_flat_t *f = flat_check("vector", t, want, 1);
    CHECK(f && f->extent == 48 && f->sorted);
    view_check("vector", t, f, 100, 5, 60);
    iotame_flatten_free(f);
    type_free(&t);
    MPI_Type_vector(1 << 20, 1, 2, MPI_INT, &t); /* a million blocks: still one run */
    t = committed(t);
    f = NULL;
    CHECK(iotame_flatten_type(t, &f) == 0 && f->nruns == 1 && f->runs[0].count == 1 << 20);
    iotame_flatten_free(f);
    type_free(&t);
    MPI_Type_vector(4, 3, 3, MPI_BYTE, &t); /* blocks that touch: one block */
    t = committed(t);
    const run_t dense[] = {{0, 12, 1, 12}};
    iotame_flatten_free(flat_check("touching vector", t, dense, 1));
    type_free(&t);
}

static void indexed(void)
{
    MPI_Datatype t;
    int bl[] = {1, 2, 0, 1}, d[] = {0, 3, 6, 8};
    MPI_Type_indexed(4, bl, d, MPI_INT, &t); /* a zero-length block vanishes */
    t = committed(t);
    const run_t want[] = {{0, 4, 1, 4}, {12, 8, 1, 8}, {32, 4, 1, 4}};
    iotame_flat_t *f = flat_check("indexed", t, want, 3);
    view_check("indexed", t, f, 0, 3, 40);
    iotame_flatten_free(f);
    type_free(&t);
    int bl2[] = {2, 1}, d2[] = {4, 0};
    MPI_Type_indexed(2, bl2, d2, MPI_INT, &t); /* out of order: kept in typemap order, not sorted */
    t = committed(t);
    const run_t back[] = {{16, 8, 1, 8}, {0, 4, 1, 4}};
    f = flat_check("indexed out of order", t, back, 2);
    iotame_view_t v = {0, 1, f};
    CHECK(f && !f->sorted && !iotame_flatten_view_ok(&v));
    iotame_flatten_free(f);
    type_free(&t);
    int bl3[] = {0, 0};
    MPI_Aint hd[] = {8, 16};
    MPI_Type_create_hindexed(2, bl3, hd, MPI_INT, &t); /* nothing at all */
    t = committed(t);
    f = flat_check("empty hindexed", t, NULL, 0);
    CHECK(f && f->nruns == 0 && f->size == 0);
    iotame_flatten_free(f);
    type_free(&t);
}

static void subarray(void)
{
    MPI_Datatype t;
    int sizes[] = {4, 6}, sub[] = {2, 3}, st[] = {1, 2};
    MPI_Type_create_subarray(2, sizes, sub, st, MPI_ORDER_C, MPI_BYTE, &t); /* rows of 3 at 8 and 14 */
    t = committed(t);
    const run_t rows[] = {{8, 3, 2, 6}};
    iotame_flat_t *f = flat_check("subarray C", t, rows, 1);
    CHECK(f && f->extent == 24);
    view_check("subarray C", t, f, 7, 1, 20);
    iotame_flatten_free(f);
    type_free(&t);
    MPI_Type_create_subarray(2, sizes, sub, st, MPI_ORDER_FORTRAN, MPI_BYTE, &t); /* columns of 2 at 9, 13, 17 */
    t = committed(t);
    const run_t cols[] = {{9, 2, 3, 4}};
    f = flat_check("subarray Fortran", t, cols, 1);
    view_check("subarray Fortran", t, f, 0, 0, 18);
    iotame_flatten_free(f);
    type_free(&t);
    int s3[] = {8, 8, 8}, u3[] = {2, 3, 4}, t3[] = {1, 2, 3};
    MPI_Type_create_subarray(3, s3, u3, t3, MPI_ORDER_C, MPI_DOUBLE, &t);
    t = committed(t);
    f = flat_check("subarray 3-d", t, NULL, 0);
    CHECK(f && f->nruns == 2); /* one run of 3 rows per plane */
    view_check("subarray 3-d", t, f, 64, 40, 300);
    iotame_flatten_free(f);
    type_free(&t);
}

static void structs(void)
{
    MPI_Datatype t, parts[] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
    int bl[] = {1, 1, 3};
    MPI_Aint d[] = {0, 8, 16};
    MPI_Type_create_struct(3, bl, d, parts, &t); /* the double and the chars touch: one run */
    t = committed(t);
    const run_t want[] = {{0, 4, 1, 4}, {8, 11, 1, 11}};
    iotame_flat_t *f = flat_check("struct", t, want, 2);
    view_check("struct", t, f, 3, 2, 50);
    iotame_flatten_free(f);
    type_free(&t);
    MPI_Aint swapped[] = {8, 0};
    int one[] = {1, 1};
    MPI_Datatype two[] = {MPI_INT, MPI_DOUBLE};
    MPI_Type_create_struct(2, one, swapped, two, &t); /* members out of order: dense, not contiguous */
    t = committed(t);
    f = flat_check("struct swapped", t, NULL, 0);
    int64_t first = -1;
    CHECK(f && !f->sorted && !iotame_flatten_is_contiguous(t, 1, &first));
    iotame_flatten_free(f);
    type_free(&t);
}

static void resized(void)
{
    MPI_Datatype t;
    MPI_Type_create_resized(MPI_INT, 0, 12, &t); /* an int every 12 bytes */
    t = committed(t);
    const run_t want[] = {{0, 4, 1, 4}};
    iotame_flat_t *f = flat_check("resized", t, want, 1);
    CHECK(f && f->extent == 12);
    view_check("resized", t, f, 5, 3, 30);
    /* an int every 12 bytes over 1000 tiles: one strided run, not a run per tile */
    iotame_view_t tiles = {5, 1, f};
    iotame_runs_t runs = {0};
    CHECK(iotame_flatten_view_runs(&tiles, 0, 4000, &runs) == 0 && runs.n == 1 && runs.v[0].off == 5 &&
          runs.v[0].len == 4 && runs.v[0].count == 1000 && runs.v[0].stride == 12);
    CHECK(iotame_flatten_view_runs(&tiles, 2, 3998, &runs) == 0 && runs.n == 2 && runs.v[0].len == 2 &&
          runs.v[1].count == 999); /* a piece begun before the call's start, then the rest as one run */
    iotame_runs_free(&runs);
    iotame_flatten_free(f);
    type_free(&t);
    /* tiles that continue the vector's stride (a vector of 16 ints resized to 16 strides), and plain bytes: any
     * byte range maps to at most three runs */
    MPI_Datatype vec;
    MPI_Type_vector(16, 1, 2, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, 16 * 8, &t);
    type_free(&vec);
    t = committed(t);
    f = flat_check("continued vector", t, (const run_t[]){{0, 4, 16, 8}}, 1);
    const int64_t ranges[][2] = {{0, 4}, {0, 3}, {1, 2}, {2, 4}, {3, 200}, {0, 640}, {8, 1000}, {5, 0}, {63, 65}};
    for (size_t i = 0; f && i < sizeof ranges / sizeof *ranges; i++) {
        view_check("continued vector", t, f, 7, ranges[i][0], ranges[i][1]);
        tiles = (iotame_view_t){7, 1, f};
        CHECK(iotame_flatten_view_runs(&tiles, ranges[i][0], ranges[i][1], &runs) == 0 && runs.n <= 3);
    }
    iotame_runs_free(&runs);
    iotame_flatten_free(f);
    f = flat_check("bytes", MPI_BYTE, (const run_t[]){{0, 1, 1, 1}}, 1);
    tiles = (iotame_view_t){3, 1, f};
    CHECK(f && iotame_flatten_view_runs(&tiles, 10, 1 << 20, &runs) == 0 && runs.n == 1 && runs.v[0].off == 13 &&
          runs.v[0].len == 1 << 20 && runs.v[0].count == 1);
    iotame_runs_free(&runs);
    iotame_flatten_free(f);
    type_free(&t);
    MPI_Type_create_resized(MPI_DOUBLE, 0, 4, &t); /* tiles that overlap: no view */
    t = committed(t);
    f = flat_check("resized smaller", t, NULL, 0);
    iotame_view_t v = {0, 1, f};
    CHECK(f && !iotame_flatten_view_ok(&v));
    iotame_flatten_free(f);
    type_free(&t);
}

/* count > 1 of a small derived type: two bytes of every four, as a type and as the filetype of a view. */
static void small_repeated(void)
{
    MPI_Datatype pair, t;
    MPI_Type_vector(2, 1, 2, MPI_BYTE, &pair);
    MPI_Type_create_resized(pair, 0, 4, &t);
    type_free(&pair);
    t = committed(t);
    const run_t one[] = {{0, 1, 2, 2}};
    iotame_flat_t *f = flat_check("pair", t, one, 1);
    int64_t first = -1;
    CHECK(!iotame_flatten_is_contiguous(t, 3, &first));
    view_check("pair", t, f, 10, 1, 9); /* a tile begun in the middle, and ended in one */
    MPI_Datatype many;
    MPI_Type_contiguous(6, t, &many); /* the tiles are regular: still one run */
    many = committed(many);
    const run_t six[] = {{0, 1, 12, 2}};
    iotame_flatten_free(flat_check("6 x pair", many, six, 1));
    iotame_extents_t x = {0};
    iotame_view_t v = {10, 1, f};
    CHECK(iotame_flatten_view_map(&v, 0, 0, &x) == 0 && x.n == 0); /* zero bytes: no extent */
    v.disp = -1;
    CHECK(iotame_flatten_view_map(&v, 0, 4, &x) == -EINVAL); /* a negative displacement */
    iotame_extents_free(&x);
    iotame_flatten_free(f);
    type_free(&many);
    type_free(&t);
    MPI_Datatype ints;
    MPI_Type_contiguous(2, MPI_INT, &ints);
    ints = committed(ints);
    CHECK(iotame_flatten_is_contiguous(ints, 5, &first) && first == 0);
    CHECK(iotame_flatten_is_contiguous(MPI_DOUBLE, 7, &first) && first == 0);
    type_free(&ints);
}

static void darray(void)
{
    MPI_Datatype t;
    int gs[] = {6, 5}, dist[] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC}, darg[] = {MPI_DISTRIBUTE_DFLT_DARG, 2},
        ps[] = {2, 2};
    MPI_Type_create_darray(4, 3, 2, gs, dist, darg, ps, MPI_ORDER_C, MPI_FLOAT, &t);
    t = committed(t);
    iotame_flat_t *f = flat_check("darray", t, NULL, 0);
    if (f && f->sorted) view_check("darray", t, f, 0, 2, 40);
    iotame_flatten_free(f);
    type_free(&t);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    named();
    vector();
    indexed();
    subarray();
    structs();
    resized();
    small_repeated();
    darray();
    if (failures) fprintf(stderr, "test_flatten: %d failed\n", failures);
    MPI_Finalize();
    return failures != 0;
}
