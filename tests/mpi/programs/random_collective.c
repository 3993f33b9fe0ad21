/* Randomized collective I/O: usage `random_collective DIR SEED CASES [FIRST]`.
 *
 * Every case draws (from SEED and the case number, identically on every rank) a random file view per rank (nested
 * contiguous, vector, hvector, indexed, hindexed, indexed_block, hindexed_block, struct, subarray, darray, resized
 * and dup types over an etype of 1 or 4 bytes, zero-length blocks and holes, a random displacement; the ranks'
 * views interleave without overlapping), a random memory datatype (the same constructors over other basic types,
 * blocks out of order, negative lower bounds) and count, then writes collectively (write_at_all, or write_all after
 * a seek; int or large-count form) the same data to DIR/ref.dat and DIR/test.dat, and reads back with another
 * random access (its own view, a neighbour's, or a byte range) from both. A read-back through its own view keeps
 * the view the write set (no MPI_File_set_view between the two calls: a strategy that caches views must reuse them),
 * the others set their own. The runtime's configuration routes
 * test.dat through the strategy under test and leaves ref.dat to the MPI library, so every difference between
 * the two (read buffers with their holes, status counts, file pointers, the files themselves, compared at the
 * end) is a bug. With RANDOM_COLLECTIVE_BYTES set, test.dat too is accessed with the packed byte stream (int form),
 * for configurations in which the library itself serves some of test.dat's calls (strategy auto): MPICH 4.0.2's
 * ROMIO mishandles some of the memory types drawn here (wrong data, or a hang) and its large-count forms. With
 * RANDOM_COLLECTIVE_SYNC set, every write is followed by sync, barrier, sync on both files before another process
 * touches the bytes: MPI-IO's rule for seeing other processes' writes in nonatomic mode, which the library's
 * write-through does not need but a runtime that writes behind (staging) does. RANDOM_COLLECTIVE_DEPTH=D (1 or 2)
 * nests the drawn types at most D deep (3 by default): the files of many ranks stay small, since every rank's file
 * type takes a slot as wide as the widest type of all ranks in each of the views' repetitions. Rank 0
 * prints {"cases": N, "calls": C, "mismatches": M}; exit 1 on a mismatch. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "type_helpers.h"

static int rank, nprocs, mismatches;
static int bytes_only; /* RANDOM_COLLECTIVE_BYTES set: see the usage */
static int sync_writes; /* RANDOM_COLLECTIVE_SYNC set: see the usage */
static int max_depth = 3; /* RANDOM_COLLECTIVE_DEPTH: see the usage */
static long long calls;

static void check(int rc, const char *what)
{
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len;
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "rank %d: %s: %s\n", rank, what, msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

/* A type with lb 0 and every byte in [0, extent). */
static MPI_Datatype normalized(MPI_Datatype t)
{
    MPI_Aint lb, ext = extent_of(t, &lb);
    if (lb == 0) return t;
    MPI_Datatype r;
    MPI_Type_create_resized(t, 0, lb + ext, &r);
    drop(&t);
    return r;
}

/* A struct t whose blocks span [lb, ub), with bounds that hold them. RATIONALE: Open MPI keeps the bounds that
 * MPI_Type_create_resized sets as sticky markers (MPI's rules for lb/ub markers): a struct of a resized child and
 * another child then ends at the resized child's ub, before the other child's data, and such a type repeated
 * overlaps itself (OMPIO rejects it as a file view; as a memory type it reads a byte twice). MPICH bounds the
 * struct by its blocks (ub padded for alignment): nothing changes there. */
static MPI_Datatype bounded(MPI_Datatype t, MPI_Aint lb, MPI_Aint ub)
{
    MPI_Aint l, e = extent_of(t, &l);
    if (l <= lb && l + e >= ub) return t;
    MPI_Datatype r;
    MPI_Type_create_resized(t, l < lb ? l : lb, (l + e > ub ? l + e : ub) - (l < lb ? l : lb), &r);
    drop(&t);
    return r;
}

/* ---- file types: sorted typemaps (monotonic, no byte twice), lb 0, over `base` (the etype) ---- */

/* `mem`: for memory, where indexed types get zero-length blocks. RATIONALE: file types have none: ROMIO's
 * flattening keeps them and then rejects valid views as overlapping or decreasing (MPICH 4.0.2); the flattener's
 * own test covers zero-length blocks in file types against MPI_Pack. */
static MPI_Datatype gen_file(rng_t *g, int depth, MPI_Datatype base, int mem)
{
    const int bs = size_of(base);
    if (depth == 0 || rnd(g, 0, 5) == 0) {
        if (rnd(g, 0, 1)) return base;
        MPI_Datatype t;
        MPI_Type_contiguous(rnd(g, 1, 4), base, &t);
        return t;
    }
    MPI_Datatype c = gen_file(g, depth - 1, base, mem), t = MPI_DATATYPE_NULL;
    MPI_Aint ext = extent_of(c, NULL);
    int kind = rnd(g, 0, 10);
    switch (kind) {
    case 0: MPI_Type_contiguous(rnd(g, 0, 3), c, &t); break;
    case 1: {
        int bl = rnd(g, 1, 3);
        MPI_Type_vector(rnd(g, 0, 4), bl, bl + rnd(g, 0, 3), c, &t);
        break;
    }
    case 2: {
        int bl = rnd(g, 1, 3);
        MPI_Type_create_hvector(rnd(g, 0, 4), bl, bl * ext + rnd(g, 0, 3) * bs, c, &t);
        break;
    }
    case 3:
    case 4: {
        int n = rnd(g, 1, 4), bl[4], d[4];
        MPI_Aint hd[4];
        MPI_Aint at = 0; /* RATIONALE: ROMIO checks the order of zero-length blocks too: they sit where data ends */
        for (int i = 0; i < n; i++) {
            bl[i] = rnd(g, mem ? 0 : 1, 3);
            if (bl[i]) at += rnd(g, 0, 2) + (kind == 4);
            d[i] = (int)at;
            MPI_Aint prev_end = i ? hd[i - 1] + bl[i - 1] * ext : 0;
            hd[i] = at * ext - (kind == 4 && bl[i] && at > 0 ? rnd(g, 0, 1) * bs : 0);
            if (hd[i] < prev_end || !bl[i]) hd[i] = bl[i] ? at * ext : prev_end;
            at += bl[i];
        }
        if (kind == 3) MPI_Type_indexed(n, bl, d, c, &t);
        else MPI_Type_create_hindexed(n, bl, hd, c, &t);
        break;
    }
    case 5:
    case 6: {
        int n = rnd(g, 1, 4), bl = rnd(g, 1, 3), d[4];
        MPI_Aint hd[4];
        int at = rnd(g, 0, 2);
        for (int i = 0; i < n; i++) {
            d[i] = at;
            hd[i] = (MPI_Aint)at * ext;
            at += bl + rnd(g, 0, 2);
        }
        if (kind == 5) MPI_Type_create_indexed_block(n, bl, d, c, &t);
        else MPI_Type_create_hindexed_block(n, bl, hd, c, &t);
        break;
    }
    case 7: { /* struct of different children, in order */
        int n = rnd(g, 1, 3), bl[3];
        MPI_Aint d[3], at = 0;
        MPI_Datatype ch[3];
        ch[0] = c;
        for (int i = 1; i < n; i++) ch[i] = gen_file(g, depth - 1, base, mem);
        for (int i = 0; i < n; i++) {
            bl[i] = rnd(g, 1, 2); /* RATIONALE: ROMIO flattens the child of a zero-length struct block as if it had data */
            at += rnd(g, 0, 2) * bs;
            d[i] = at;
            at += bl[i] * extent_of(ch[i], NULL);
        }
        MPI_Type_create_struct(n, bl, d, ch, &t);
        t = bounded(t, d[0], at);
        for (int i = 1; i < n; i++) drop(&ch[i]);
        break;
    }
    case 8: { /* subarray, C or Fortran order */
        int nd = rnd(g, 1, 3), sizes[3], sub[3], starts[3];
        for (int i = 0; i < nd; i++) {
            sizes[i] = rnd(g, 1, 4);
            sub[i] = rnd(g, 0, sizes[i]);
            starts[i] = rnd(g, 0, sizes[i] - sub[i]);
        }
        if (sub[0] == 0) sub[0] = 1, starts[0] = 0;
        int order = rnd(g, 0, 1) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
#if defined(OPEN_MPI) /* Open MPI 4.1 rejects a zero subsize (MPI_ERR_ARG): the same type, no data, full extent */
        MPI_Aint full = ext;
        int empty = 0;
        for (int i = 0; i < nd; i++) full *= sizes[i], empty |= sub[i] == 0;
        if (empty) {
            MPI_Datatype none;
            MPI_Type_contiguous(0, c, &none);
            MPI_Type_create_resized(none, 0, full, &t);
            drop(&none);
            break;
        }
#endif
        MPI_Type_create_subarray(nd, sizes, sub, starts, order, c, &t);
        break;
    }
    case 9: MPI_Type_create_resized(c, 0, ext + rnd(g, 0, 3) * bs, &t); break;
    default: MPI_Type_dup(c, &t);
    }
    drop(&c);
    if (!mem && size_of(t) == 0) { /* RATIONALE: ROMIO mis-flattens empty children of file types (MPICH 4.0.2) */
        drop(&t);
        return base;
    }
    return normalized(t);
}

/* Darrays of the whole job: every rank its own part of one global array. Returns 0 when a part is empty. */
static int gen_darrays(rng_t *g, MPI_Datatype base, MPI_Datatype *ft)
{
    int nd = rnd(g, 1, 2), gs[2], dist[2], darg[2], ps[2] = {1, 1};
    ps[0] = nprocs;
    if (nd == 2 && nprocs == 4 && rnd(g, 0, 1)) ps[0] = ps[1] = 2;
    for (int i = 0; i < nd; i++) {
        gs[i] = rnd(g, 1, 9);
        int k = rnd(g, 0, 2);
        dist[i] = ps[i] == 1 && k == 0 ? MPI_DISTRIBUTE_NONE : k == 1 ? MPI_DISTRIBUTE_BLOCK : MPI_DISTRIBUTE_CYCLIC;
        darg[i] = MPI_DISTRIBUTE_DFLT_DARG;
        if (dist[i] == MPI_DISTRIBUTE_CYCLIC && rnd(g, 0, 1)) darg[i] = rnd(g, 1, 3);
        if (dist[i] == MPI_DISTRIBUTE_BLOCK && rnd(g, 0, 1)) {
            int min = (gs[i] + ps[i] - 1) / ps[i];
            darg[i] = min + rnd(g, 0, 2);
        }
    }
    int order = rnd(g, 0, 1) ? MPI_ORDER_C : MPI_ORDER_FORTRAN, empty = 0;
    for (int r = 0; r < nprocs; r++) {
        MPI_Type_create_darray(nprocs, r, nd, gs, dist, darg, ps, order, base, &ft[r]);
        empty |= size_of(ft[r]) == 0;
    }
    if (empty)
        for (int r = 0; r < nprocs; r++) MPI_Type_free(&ft[r]);
    return !empty;
}

/* ---- memory types: any order, holes, negative lower bounds (no byte twice: reads must be well defined) ---- */

static MPI_Datatype mem_base(rng_t *g, int four)
{
    /* RATIONALE: no MPI_SHORT_INT or MPI_DOUBLE_INT: ROMIO asks MPI_Type_get_contents about them and aborts. */
    static const MPI_Datatype any[] = {MPI_BYTE, MPI_CHAR, MPI_SHORT, MPI_INT, MPI_DOUBLE, MPI_FLOAT_INT, MPI_2INT};
    static const MPI_Datatype quad[] = {MPI_INT, MPI_FLOAT, MPI_DOUBLE, MPI_2INT};
    return four ? quad[rnd(g, 0, 3)] : any[rnd(g, 0, 6)];
}

static MPI_Datatype gen_mem(rng_t *g, int depth, int four)
{
    MPI_Datatype c = gen_file(g, depth, mem_base(g, four), 1); /* sorted, then shuffled by a struct */
    if (rnd(g, 0, 2) == 0) {                                 /* two blocks, the second one first in memory */
        MPI_Datatype d = gen_file(g, depth > 0 ? depth - 1 : 0, mem_base(g, four), 1), ch[2] = {c, d}, t;
        int bl[2] = {1, rnd(g, 0, 2)};
        MPI_Aint disp[2] = {(MPI_Aint)bl[1] * extent_of(d, NULL) + rnd(g, 0, 8), 0};
        MPI_Type_create_struct(2, bl, disp, ch, &t);
        if (bl[1] > 0) t = bounded(t, 0, disp[0] + extent_of(c, NULL));
        drop(&c);
        drop(&d);
        c = t;
    }
    if (rnd(g, 0, 3) == 0) { /* a negative lower bound: the buffer pointer is not the first byte */
        MPI_Datatype t;
        MPI_Aint lb, ext = extent_of(c, &lb);
        MPI_Type_create_resized(c, lb - 16, ext + 16 + rnd(g, 0, 8), &t);
        drop(&c);
        c = t;
    }
    return c;
}

/* ---- one case ---- */

typedef struct {
    MPI_File ref, test;
} files_t;

/* What the processes wrote becomes visible to the others (sync-barrier-sync), with RANDOM_COLLECTIVE_SYNC. */
static void visible(const files_t *f)
{
    if (!sync_writes) return;
    check(MPI_File_sync(f->ref), "sync ref");
    check(MPI_File_sync(f->test), "sync test");
    MPI_Barrier(MPI_COMM_WORLD);
    check(MPI_File_sync(f->ref), "sync ref");
    check(MPI_File_sync(f->test), "sync test");
}

static void fill(unsigned char *p, size_t n, uint64_t seed)
{
    rng_t g = {seed};
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(next(&g) >> 56);
}

/* One collective access of both files: the same call, arguments and buffer contents. */
typedef struct {
    MPI_Offset disp;
    MPI_Datatype etype, filetype, memtype;
    int count;
    MPI_Offset offset;
    int at, large;
} access_t;

/* The typemap's byte offsets in typemap order, found by packing marked memory (the library's own typemap). */
static void dump_offsets(MPI_Datatype t)
{
    MPI_Aint tlb, text;
    MPI_Type_get_true_extent(t, &tlb, &text);
    int size = size_of(t);
    unsigned char *mem = malloc((size_t)text + 1), *out[3];
    for (int p = 0; p < 3; p++) {
        for (MPI_Aint i = 0; i < text; i++) mem[i] = (unsigned char)((i + tlb) >> (8 * p));
        out[p] = malloc((size_t)size + 1);
        int pos = 0;
        MPI_Pack(mem - tlb, 1, t, out[p], size, &pos, MPI_COMM_SELF);
    }
    fprintf(stderr, "offsets:");
    for (int i = 0; i < size; i++) fprintf(stderr, " %d", out[0][i] | out[1][i] << 8 | out[2][i] << 16);
    fprintf(stderr, "\n");
    for (int p = 0; p < 3; p++) free(out[p]);
    free(mem);
}

static void set_views(files_t *f, const access_t *a)
{
    int rc = MPI_File_set_view(f->ref, a->disp, a->etype, a->filetype, "native", MPI_INFO_NULL);
    if (rc != MPI_SUCCESS) {
        dump_type(a->filetype, 0);
        dump_offsets(a->filetype);
    }
    check(rc, "set_view ref");
    check(MPI_File_set_view(f->test, a->disp, a->etype, a->filetype, "native", MPI_INFO_NULL), "set_view test");
}

static int do_access(MPI_File fh, const access_t *a, int write, void *buf, MPI_Status *st)
{
    calls++;
    if (getenv("RANDOM_COLLECTIVE_VERBOSE") && atoi(getenv("RANDOM_COLLECTIVE_VERBOSE")) > 1) {
        fprintf(stderr, "rank %d: %s%s%s count %d offset %lld disp %lld\nfiletype:\n", rank, write ? "write" : "read",
                a->at ? "_at_all" : "_all", a->large ? "_c" : "", a->count, (long long)a->offset, (long long)a->disp);
        dump_type(a->filetype, 2);
        if (atoi(getenv("RANDOM_COLLECTIVE_VERBOSE")) > 2) dump_offsets(a->filetype);
        fprintf(stderr, "memtype:\n");
        dump_type(a->memtype, 2);
    }
    if (!a->at) check(MPI_File_seek(fh, a->offset, MPI_SEEK_SET), "seek");
#if MPI_VERSION >= 4 /* an MPI-3 library (Open MPI 4.1) has no large-count forms: the int form instead */
    if (a->large && !getenv("RANDOM_COLLECTIVE_NO_LARGE")) {
        MPI_Count n = a->count;
        if (write) return a->at ? MPI_File_write_at_all_c(fh, a->offset, buf, n, a->memtype, st)
                                : MPI_File_write_all_c(fh, buf, n, a->memtype, st);
        return a->at ? MPI_File_read_at_all_c(fh, a->offset, buf, n, a->memtype, st)
                     : MPI_File_read_all_c(fh, buf, n, a->memtype, st);
    }
#endif
    if (write) return a->at ? MPI_File_write_at_all(fh, a->offset, buf, a->count, a->memtype, st)
                            : MPI_File_write_all(fh, buf, a->count, a->memtype, st);
    return a->at ? MPI_File_read_at_all(fh, a->offset, buf, a->count, a->memtype, st)
                 : MPI_File_read_all(fh, buf, a->count, a->memtype, st);
}

static void mismatch(int c, const char *what)
{
    if (mismatches < 10) fprintf(stderr, "rank %d: case %d: %s differ between ref.dat and test.dat\n", rank, c, what);
    mismatches++;
}

/* Runs `a` on both files with the same buffer (after setting its view, unless `keep_view`: every rank alike);
 * compares statuses, pointers and (reads) buffers. */
static void both(files_t *f, const access_t *a, int write, int c, uint64_t seed, int keep_view)
{
    MPI_Aint lb, ext = extent_of(a->memtype, &lb), tlb, text;
    MPI_Type_get_true_extent(a->memtype, &tlb, &text);
    MPI_Aint lo = tlb < 0 ? tlb : 0, hi = (a->count > 0 ? (MPI_Aint)(a->count - 1) * ext : 0) + tlb + text;
    size_t margin = (size_t)(-lo) + 32, len = (size_t)(hi > 0 ? hi : 0) + margin + 32;
    unsigned char *b1 = malloc(len), *b2 = malloc(len);
    fill(b1, len, seed);
    memcpy(b2, b1, len);
    /* RATIONALE: the reference moves the data stream as bytes, packed and unpacked by MPI_Pack/MPI_Unpack (the
     * typemap by definition): ROMIO's own handling of complex memory types reads outside the buffer (MPICH 4.0.2),
     * so only its file side is the oracle. */
    int bytes = a->count * size_of(a->memtype), pos = 0;
    unsigned char *packed = malloc((size_t)bytes + 1);
    if (write) MPI_Pack(b1 + margin, a->count, a->memtype, packed, bytes, &pos, MPI_COMM_SELF);
    access_t as_bytes = *a;
    as_bytes.memtype = MPI_BYTE;
    as_bytes.count = bytes;
    as_bytes.large = 0; /* RATIONALE: MPICH 4.0.2's large-count collective calls misplace data through views */
    MPI_Status s1, s2;
    if (!keep_view) set_views(f, a);
    check(do_access(f->ref, &as_bytes, write, packed, &s1), write ? "write ref" : "read ref");
    if (bytes_only) { /* the library may serve test.dat too: it gets the byte stream as well */
        unsigned char *packed2 = malloc((size_t)bytes + 1);
        int pos2 = 0;
        if (write) MPI_Pack(b2 + margin, a->count, a->memtype, packed2, bytes, &pos2, MPI_COMM_SELF);
        check(do_access(f->test, &as_bytes, write, packed2, &s2), write ? "write test" : "read test");
        if (!write) MPI_Unpack(packed2, bytes, &pos2, b2 + margin, a->count, a->memtype, MPI_COMM_SELF);
        free(packed2);
    } else {
        check(do_access(f->test, a, write, b2 + margin, &s2), write ? "write test" : "read test");
    }
    if (!write) MPI_Unpack(packed, bytes, &pos, b1 + margin, a->count, a->memtype, MPI_COMM_SELF);
    MPI_Count e1, e2;
    MPI_Get_elements_x(&s1, MPI_BYTE, &e1);
    MPI_Get_elements_x(&s2, MPI_BYTE, &e2);
    int n1, n2;
    MPI_Get_count(&s1, a->memtype, &n1);
    MPI_Get_count(&s2, a->memtype, &n2);
    if (e1 != e2 || n1 != n2) mismatch(c, "status counts");
    if (!a->at) {
        MPI_Offset p1, p2;
        MPI_File_get_position(f->ref, &p1);
        MPI_File_get_position(f->test, &p2);
        if (p1 != p2) mismatch(c, "file pointers");
    }
    if (!write && memcmp(b1, b2, len) != 0) {
        mismatch(c, "read buffers");
        if (getenv("RANDOM_COLLECTIVE_VERBOSE")) {
            size_t i = 0;
            while (b1[i] == b2[i]) i++;
            fprintf(stderr, "rank %d: first difference at byte %ld of the buffer (%02x vs %02x), %d bytes read\n", rank,
                    (long)i - (long)margin, b1[i], b2[i], bytes);
        }
    }
    free(packed);
    free(b1);
    free(b2);
}

/* The end (bytes) of the file region the view's first `bytes` data bytes reach, from offset etypes. */
static MPI_Offset reach(MPI_Offset disp, MPI_Datatype filetype, MPI_Offset esize, MPI_Offset offset, MPI_Offset bytes)
{
    MPI_Offset s = size_of(filetype), e = extent_of(filetype, NULL), end = offset * esize + bytes;
    return disp + (end + s - 1) / s * e;
}

static void run_case(files_t *f, uint64_t seed, int c, MPI_Offset *base)
{
    rng_t g = {seed * 1000003u + (uint64_t)c};
    int four = rnd(&g, 0, 2) == 0;
    MPI_Datatype etype = four ? MPI_INT : MPI_BYTE;
    const int esize = four ? 4 : 1;
    int depth = rnd(&g, 1, 3);
    if (depth > max_depth) depth = max_depth;
    /* Every rank's file type and memory type, drawn by every rank alike. */
    MPI_Datatype ft[64], mt[64];
    int counts[64], use_darray = rnd(&g, 0, 4) == 0;
    MPI_Aint slot = 0;
    if (use_darray) use_darray = gen_darrays(&g, etype, ft);
    for (int r = 0; r < nprocs && !use_darray; r++) {
        while (size_of(ft[r] = gen_file(&g, depth, etype, 0)) == 0) drop(&ft[r]);
        if (extent_of(ft[r], NULL) > slot) slot = extent_of(ft[r], NULL);
    }
    for (int r = 0; r < nprocs; r++) {
        int mdepth = rnd(&g, 0, 2);
        mt[r] = gen_mem(&g, mdepth < max_depth ? mdepth : max_depth, four);
        counts[r] = rnd(&g, 0, 4) ? rnd(&g, 1, 3) : 0;
        if (size_of(mt[r]) == 0) counts[r] = 0;
    }
    /* Interleave: rank r's type in slot r of nprocs slots (darrays partition the array themselves). */
    if (!use_darray) {
        for (int r = 0; r < nprocs; r++) {
            MPI_Datatype t;
            int one = 1;
            MPI_Aint d = (MPI_Aint)r * slot;
            MPI_Type_create_struct(1, &one, &d, &ft[r], &t);
            MPI_Datatype rs;
            MPI_Type_create_resized(t, 0, (MPI_Aint)nprocs * slot, &rs);
            MPI_Type_free(&t);
            drop(&ft[r]);
            ft[r] = rs;
        }
    }
    for (int r = 0; r < nprocs; r++) {
        if (!is_named(ft[r])) MPI_Type_commit(&ft[r]);
        if (!is_named(mt[r])) MPI_Type_commit(&mt[r]);
    }
    MPI_Offset disp = *base + rnd(&g, 0, 64);
    MPI_Offset offsets[64], end = disp;
    for (int r = 0; r < nprocs; r++) {
        offsets[r] = rnd(&g, 0, 3) ? 0 : rnd(&g, 0, 2 * size_of(ft[r]) / esize);
        MPI_Offset bytes = (MPI_Offset)counts[r] * size_of(mt[r]);
        MPI_Offset e = reach(disp, ft[r], esize, offsets[r], bytes);
        if (e > end) end = e;
    }
    /* A background pattern under the whole region, written independently: read-modify-write must keep it in
     * the holes. RATIONALE: without it the holes would hold whatever ROMIO's buffer held (it writes stale bytes
     * into holes past the end of file), and the files could not be compared. */
    MPI_Offset bg_len = end + 64 - *base;
    if (rank == 0) {
        unsigned char *bg = malloc((size_t)bg_len);
        fill(bg, (size_t)bg_len, seed * 31u + (uint64_t)c);
        access_t plain = {0, MPI_BYTE, MPI_BYTE, MPI_BYTE, 0, 0, 1, 0};
        set_views(f, &plain);
        check(MPI_File_write_at(f->ref, *base, bg, (int)bg_len, MPI_BYTE, MPI_STATUS_IGNORE), "background ref");
        check(MPI_File_write_at(f->test, *base, bg, (int)bg_len, MPI_BYTE, MPI_STATUS_IGNORE), "background test");
        free(bg);
    } else {
        access_t plain = {0, MPI_BYTE, MPI_BYTE, MPI_BYTE, 0, 0, 1, 0};
        set_views(f, &plain);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    visible(f);
    end += 64;
    access_t w = {disp, etype, ft[rank], mt[rank], counts[rank], offsets[rank], rnd(&g, 0, 1), rnd(&g, 0, 3) == 0};
    both(f, &w, 1, c, seed ^ (uint64_t)(c * 7919 + rank), 0);
    visible(f);

    /* Read back: the same access, a neighbour's view with bytes, or a byte range inside what was written. */
    int how = rnd(&g, 0, 3), nb = (rank + 1) % nprocs;
    access_t rd = w;
    if (how == 2) {
        rd.filetype = ft[nb];
        rd.memtype = etype;
        rd.offset = offsets[nb];
        rd.count = (int)((MPI_Offset)counts[nb] * size_of(mt[nb]) / esize);
    } else if (how == 3) { /* RATIONALE: not past the end of file, where ROMIO returns what its buffer held */
        MPI_Offset size = 0;
        MPI_File_get_size(f->ref, &size);
        MPI_Offset len = ((size < end ? size : end) - disp) / esize;
        if (len < 0) len = 0;
        MPI_Offset lo = len ? rnd(&g, 0, (int)len - 1) : 0;
        rd.filetype = etype;
        rd.memtype = etype;
        rd.offset = lo;
        rd.count = len ? rnd(&g, 0, (int)(len - lo)) : 0;
    }
    rd.at = rnd(&g, 0, 1);
    rd.large = rnd(&g, 0, 3) == 0;
    /* how is drawn alike on every rank: all of them keep the write's view, or all set another */
    both(f, &rd, 0, c, seed ^ (uint64_t)(c * 104729 + rank), how <= 1);

    for (int r = 0; r < nprocs; r++) {
        drop(&ft[r]);
        drop(&mt[r]);
    }
    *base = (end + 4095) / 4096 * 4096 + 4096 * rnd(&g, 0, 1);
}

static void compare_files(const char *a, const char *b)
{
    if (rank != 0) return;
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    if (!fa || !fb) {
        fprintf(stderr, "cannot open %s or %s\n", a, b);
        mismatches++;
        if (fa) fclose(fa);
        if (fb) fclose(fb);
        return;
    }
    static unsigned char x[1 << 16], y[1 << 16];
    long long at = 0;
    for (;;) {
        size_t na = fread(x, 1, sizeof x, fa), nb = fread(y, 1, sizeof y, fb);
        if (na != nb || memcmp(x, y, na) != 0) {
            size_t i = 0;
            while (i < na && i < nb && x[i] == y[i]) i++;
            fprintf(stderr, "files differ at byte %lld (sizes so far %zu and %zu)\n", at + (long long)i, na, nb);
            mismatches++;
            break;
        }
        if (na == 0) break;
        at += (long long)na;
    }
    fclose(fa);
    fclose(fb);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 4 || nprocs > 64) {
        if (rank == 0) fprintf(stderr, "usage: random_collective DIR SEED CASES [FIRST] (at most 64 ranks)\n");
        MPI_Finalize();
        return 2;
    }
    char ref[4096], test[4096];
    snprintf(ref, sizeof ref, "%s/ref.dat", argv[1]);
    snprintf(test, sizeof test, "%s/test.dat", argv[1]);
    uint64_t seed = strtoull(argv[2], NULL, 10);
    int cases = atoi(argv[3]), first = argc > 4 ? atoi(argv[4]) : 0;
    files_t f;
    if (rank == 0) {
        MPI_File_delete(ref, MPI_INFO_NULL);
        MPI_File_delete(test, MPI_INFO_NULL);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    check(MPI_File_open(MPI_COMM_WORLD, ref, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &f.ref), "open ref");
    check(MPI_File_open(MPI_COMM_WORLD, test, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &f.test), "open test");
    MPI_Offset base = 0;
    const char *verbose = getenv("RANDOM_COLLECTIVE_VERBOSE");
    bytes_only = getenv("RANDOM_COLLECTIVE_BYTES") != NULL;
    sync_writes = getenv("RANDOM_COLLECTIVE_SYNC") != NULL;
    if (getenv("RANDOM_COLLECTIVE_DEPTH")) max_depth = atoi(getenv("RANDOM_COLLECTIVE_DEPTH"));
    for (int c = first; c < first + cases; c++) {
        if (verbose && rank == 0) fprintf(stderr, "case %d at %lld\n", c, (long long)base);
        run_case(&f, seed, c, &base);
    }
    MPI_File_close(&f.ref);
    MPI_File_close(&f.test);
    MPI_Barrier(MPI_COMM_WORLD);
    compare_files(ref, test);
    int total = 0;
    MPI_Reduce(&mismatches, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    long long all_calls = 0;
    MPI_Reduce(&calls, &all_calls, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("{\"cases\": %d, \"calls\": %lld, \"mismatches\": %d}\n", cases, all_calls, total);
    MPI_Finalize();
    return total ? 1 : 0;
}
