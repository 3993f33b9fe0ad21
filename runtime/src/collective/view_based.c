/* view_based: view-based collective I/O (Garcia Blas, Isaila, Singh and Carretero, "View-based collective I/O for
 * MPI-IO", CCGrid 2008; Isaila et al., "Latency hiding file I/O for Blue Gene systems", section 4.3). The file is
 * cut into blocks of block_size bytes, mapped round robin to the aggregators (one per node, spread over the nodes
 * like the other engine strategies' aggregators). Every rank's file view (displacement, etype size, the flattened
 * filetype) is sent to the aggregators once after MPI_File_set_view and cached there; a call then moves only each
 * rank's stream position and byte count, which the router's gathered rows already hold, and the contiguous data:
 * each aggregator maps every rank's part of its own blocks from the cached views, so no offset/length list is sent
 * per call. The rounds, the data exchange, read-modify-write and the I/O are the engine's (striped domains whose
 * unit is the block), which obtains the extents through the plan's extents_of (docs/design/view-based.md).
 *
 * RATIONALE: the views are sent at the first call view_based serves after a view was set, not inside
 * MPI_File_set_view: a view that no view_based call uses (HDF5 resets the view after each access; under auto
 * another strategy may serve) then costs nothing, and each view still travels once. Every rank knows alike whether
 * the cache is stale: the gathered rows carry every rank's view generation. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "strategy.h"

#define MIB ((int64_t)1 << 20)
#define HEADER 9 /* int64 fields before a serialized view's runs: disp, etype size, size, lb, extent, true lb and
                    ub, sorted, nruns; then the runs (4 int64 each) and the nruns + 1 prefix sums */

/* The strategy's state of a handle: its option, the file system's block, and the views as the aggregators cache
 * them (on every rank, the generations they were sent with). */
typedef struct {
    int64_t block_size;   /* collective.block_size (0: not set) */
    int set_up;           /* the cache below is allocated (agreed) */
    int valid;            /* the last exchange completed (the same on every rank) */
    int nagg;             /* the aggregators it sent the views to */
    int64_t *generation;  /* nprocs: every rank's view generation when it was sent */
    char *blob;           /* aggregators: every rank's serialized view, as received */
    iotame_flat_t *flat;  /* aggregators: nprocs flattened filetypes pointing into blob */
    iotame_view_t *view;  /* aggregators: nprocs views */
    iotame_extents_t tmp; /* aggregators: one block's extents while mapping */
} view_based_t;

static int64_t view_based_clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static int view_based_agree(MPI_Comm comm, int ok)
{
    int all = 0;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    return all;
}

/* ---- the state and the cache ---- */

static int view_based_open(const iotame_coll_options_t *o, void **state)
{
    view_based_t *cv = calloc(1, sizeof *cv);
    if (!cv) return -ENOMEM;
    cv->block_size = iotame_coll_option_int(o, "block_size", 0);
    *state = cv;
    return 0;
}

static void view_based_cache_free(view_based_t *cv)
{
    free(cv->generation);
    free(cv->blob);
    free(cv->flat);
    free(cv->view);
    iotame_extents_free(&cv->tmp);
    *cv = (view_based_t){.block_size = cv->block_size};
}

static void view_based_close(void *state)
{
    if (!state) return;
    view_based_cache_free(state);
    free(state);
}

/* The engine's setup and the cache, agreed. */
static int view_based_setup(iotame_coll_env_t *e, void *state)
{
    view_based_t *cv = state;
    int rc = iotame_coll_engine_setup(e, NULL);
    if (rc) return rc;
    if (cv->set_up) return 0;
    const size_t np = (size_t)e->nprocs;
    int ok = (cv->generation = calloc(np, sizeof *cv->generation)) && (cv->flat = calloc(np, sizeof *cv->flat)) &&
             (cv->view = calloc(np, sizeof *cv->view));
    int all = 0;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, e->comm);
    if (!all) {
        view_based_cache_free(cv);
        return -ENOMEM;
    }
    cv->set_up = 1;
    return 0;
}

static void view_based_teardown(iotame_coll_env_t *e, void *state)
{
    view_based_cache_free(state);
    iotame_coll_engine_teardown(e, NULL);
}

/* ---- sending the views ---- */

/* This rank's view as int64s (HEADER, runs, prefix sums); NULL when it has none (not flattened) or on ENOMEM. */
static int64_t *view_based_serialize(const iotame_coll_view_t *v, int64_t *bytes)
{
    const iotame_flat_t *f = v->flat;
    if (v->flat_rc != 0 || !f) return NULL;
    const size_t n = f->nruns, words = HEADER + 4 * n + n + 1;
    if (words > (size_t)INT_MAX / sizeof(int64_t)) return NULL;
    int64_t *w = malloc(words * sizeof *w);
    if (!w) return NULL;
    int64_t head[HEADER] = {v->disp, v->etype_size, f->size, f->lb, f->extent, f->true_lb, f->true_ub, f->sorted,
                            (int64_t)n};
    memcpy(w, head, sizeof head);
    for (size_t i = 0; i < n; i++) {
        w[HEADER + 4 * i] = f->runs[i].off;
        w[HEADER + 4 * i + 1] = f->runs[i].len;
        w[HEADER + 4 * i + 2] = f->runs[i].count;
        w[HEADER + 4 * i + 3] = f->runs[i].stride;
    }
    memcpy(w + HEADER + 4 * n, f->cum, (n + 1) * sizeof *w);
    *bytes = (int64_t)(words * sizeof *w);
    return w;
}

/* Rank r's cached view, pointing into the received blob (no allocation after the exchange). */
static void view_based_deserialize(view_based_t *cv, int r, const int64_t *w)
{
    const size_t n = (size_t)w[8];
    iotame_flat_t *f = &cv->flat[r];
    *f = (iotame_flat_t){.runs = (iotame_run_t *)(w + HEADER), .nruns = n, .cum = (int64_t *)(w + HEADER + 4 * n),
                         .size = w[2], .lb = w[3], .extent = w[4], .true_lb = w[5], .true_ub = w[6], .sorted = (int)w[7]};
    cv->view[r] = (iotame_view_t){.disp = w[0], .etype_size = w[1], .filetype = f};
}

/* Every rank's view to every aggregator (collective; every rank alike decided that the cache is stale). Its first
 * collective is an agreement, as the engine's, which a rank that has no plan joins. Returns 0 or -ENOMEM, on every
 * rank alike. */
static int send_views(iotame_coll_call_t *c, view_based_t *cv, int nagg)
{
    const iotame_coll_env_t *e = c->env;
    const int np = e->nprocs, me = e->rank;
    int my_agg = -1;
    for (int a = 0; a < nagg; a++)
        if (e->spread[a] == me) my_agg = a;
    cv->valid = 0;
    free(cv->blob);
    cv->blob = NULL;
    int64_t mine = 0, *view = view_based_serialize(c->view, &mine);
    int64_t *sizes = malloc((size_t)np * sizeof *sizes);
    int *sc = calloc((size_t)np, sizeof *sc), *sd = calloc((size_t)np, sizeof *sd);
    int *rc = calloc((size_t)np, sizeof *rc), *rd = calloc((size_t)np, sizeof *rd);
    int ok = view && sizes && sc && sd && rc && rd, err = -ENOMEM;
    if (!view_based_agree(e->comm, ok)) goto done;
    PMPI_Allgather(&mine, 1, MPI_INT64_T, sizes, 1, MPI_INT64_T, e->comm);
    int64_t total = 0;
    for (int r = 0; r < np; r++) {
        rd[r] = (int)view_based_clamp(total, 0, INT_MAX);
        rc[r] = my_agg >= 0 ? (int)sizes[r] : 0;
        total += sizes[r];
    }
    ok = total <= INT_MAX; /* every rank computes the same */
    if (ok && my_agg >= 0) ok = (cv->blob = malloc((size_t)total)) != NULL;
    if (!view_based_agree(e->comm, ok)) goto done;
    for (int a = 0; a < nagg; a++) sc[e->spread[a]] = (int)mine;
    PMPI_Alltoallv(view, sc, sd, MPI_BYTE, cv->blob, rc, rd, MPI_BYTE, e->comm);
    c->view_bytes += mine * (nagg - (my_agg >= 0));
    if (my_agg >= 0)
        for (int r = 0; r < np; r++) view_based_deserialize(cv, r, (const int64_t *)(cv->blob + rd[r]));
    for (int r = 0; r < np; r++) cv->generation[r] = c->info[(size_t)r * IOTAME_INFO_FIELDS + IOTAME_INFO_VIEW];
    cv->nagg = nagg;
    cv->valid = 1;
    err = 0;
done:
    if (err) {
        free(cv->blob);
        cv->blob = NULL;
    }
    free(view);
    free(sizes);
    free(sc), free(sd), free(rc), free(rd);
    return err;
}

/* ---- mapping the blocks of an aggregator ---- */

/* The data bytes of view v that lie before file offset o: the position of o in the view's data stream. */
static int64_t stream_before(const iotame_view_t *v, int64_t o)
{
    const iotame_flat_t *f = v->filetype;
    const int64_t first = f->runs[0].off, rel = o - v->disp - first;
    if (rel <= 0) return 0;
    /* a tile's data lies in [first, first + extent) of its frame (iotame_flatten_view_ok) */
    const int64_t tile = rel / f->extent, w = rel % f->extent + first;
    if (w <= first) return tile * f->size;
    size_t lo = 0, hi = f->nruns; /* the last run starting before w */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (f->runs[mid].off < w) lo = mid;
        else hi = mid;
    }
    const iotame_run_t *r = &f->runs[lo];
    const int64_t d = w - r->off, stride = r->count > 1 ? r->stride : r->len;
    const int64_t j = d / stride, b = d - j * stride;
    const int64_t in = j >= r->count ? r->count * r->len : j * r->len + (b < r->len ? b : r->len);
    return tile * f->size + f->cum[lo] + in;
}

static int view_based_append(iotame_extents_t *out, const iotame_extents_t *x)
{
    if (out->n + x->n > out->cap) {
        size_t cap = out->cap ? out->cap : 64;
        while (cap < out->n + x->n) cap *= 2;
        iotame_extent_t *grown = realloc(out->v, cap * sizeof *grown);
        if (!grown) return -ENOMEM;
        out->v = grown;
        out->cap = cap;
    }
    memcpy(out->v + out->n, x->v, x->n * sizeof *x->v);
    out->n += x->n;
    return 0;
}

typedef struct {
    const iotame_coll_call_t *c;
    view_based_t *cv;
    int64_t unit;
    int nagg;
} mapping_t;

/* The engine's extents_of: rank r's extents in aggregator agg's blocks, block by block from r's cached view (the
 * stream range of each block found from the view, then mapped); r's whole part when r's range holds many more of
 * agg's blocks than r has extents (a sparse view: the engine then leaves out the others' blocks). */
static int view_based_extents_of(void *arg, int agg, int r, iotame_extents_t *out)
{
    const mapping_t *m = arg;
    const int64_t *row = m->c->info + (size_t)r * IOTAME_INFO_FIELDS;
    const int64_t start = row[IOTAME_INFO_STREAM], end = start + row[IOTAME_INFO_BYTES];
    const int64_t lo = row[IOTAME_INFO_START], hi = row[IOTAME_INFO_END], unit = m->unit, nagg = m->nagg;
    const iotame_view_t *v = &m->cv->view[r];
    const int64_t k0 = lo / unit, k1 = (hi - 1) / unit;
    const int64_t first = k0 + ((agg - k0 % nagg) % nagg + nagg) % nagg;
    const int64_t blocks = first > k1 ? 0 : (k1 - first) / nagg + 1;
    if (nagg == 1 || blocks > row[IOTAME_INFO_EXTENTS] + 8) return iotame_flatten_view_map(v, start, end - start, out);
    out->n = 0;
    for (int64_t k = first; k <= k1; k += nagg) {
        int64_t s0 = stream_before(v, k * unit > lo ? k * unit : lo);
        int64_t s1 = stream_before(v, (k + 1) * unit < hi ? (k + 1) * unit : hi);
        s0 = view_based_clamp(s0, start, end);
        s1 = view_based_clamp(s1, start, end);
        if (s1 <= s0) continue;
        iotame_extents_t *into = out->n ? &m->cv->tmp : out; /* the first block's straight into out */
        if (iotame_flatten_view_map(v, s0, s1 - s0, into) || (into != out && view_based_append(out, into))) return -ENOMEM;
    }
    return 0;
}

/* ---- a call ---- */

/* The model's view_based term takes the configured block (0: the model's 1 MiB). */
static void view_based_model_call(const void *state, iotame_model_call_t *call)
{
    const view_based_t *cv = state;
    call->block_size = cv ? cv->block_size : 0;
}

/* The block (bytes) on the handle, from the strategy's state there. */
static int64_t view_based_block(const iotame_coll_env_t *e, const void *state)
{
    const view_based_t *cv = state;
    if (cv && cv->block_size > 0) return cv->block_size;
    if (e->striping_unit > 0) return e->striping_unit;
    /* RATIONALE: local file systems report their page (4 KiB) as st_blksize; blocks that small would cut every
     * larger piece into page-sized writes at alternating aggregators. Parallel file systems report their stripe
     * or block there, usually 1 MiB or more. */
    return e->fs_block > MIB ? e->fs_block : MIB;
}

static int view_based_run(iotame_coll_call_t *c)
{
    const iotame_coll_env_t *e = c->env;
    view_based_t *cv = c->state; /* set up (agreed) before the strategy's first call */
    const int nagg = (int)view_based_clamp(e->nnodes, 1, e->nprocs);
    const int64_t unit = view_based_block(e, cv);
    int64_t window = e->cb_buffer_size / unit * unit;
    if (window < unit) window = unit;
    if (window > ((int64_t)1 << 30)) window = ((int64_t)1 << 30) / unit * unit > 0 ? ((int64_t)1 << 30) / unit * unit : unit;
    int stale = !cv->valid || cv->nagg != nagg;
    for (int r = 0; r < e->nprocs && !stale; r++)
        stale = c->info[(size_t)r * IOTAME_INFO_FIELDS + IOTAME_INFO_VIEW] != cv->generation[r];
    if (stale) {
        int rc = send_views(c, cv, nagg);
        if (rc) return rc;
    }
    mapping_t m = {.c = c, .cv = cv, .unit = unit, .nagg = nagg};
    iotame_plan_t plan = {
        .nagg = nagg,
        .agg_rank = e->spread,
        .kind = IOTAME_DOMAINS_STRIPED,
        .unit = unit,
        .window = window,
        .fill_holes = 1,
        .extents_of = view_based_extents_of,
        .arg = &m,
    };
    return iotame_coll_engine(c, &plan);
}

/* The block map: blocks round robin over one aggregator per node (the same for writes and reads), so the strategy
 * can hand a call's blocks to the handle's block consumer. */
static void view_based_blocks(const iotame_coll_env_t *e, const void *state, int64_t *block_size, int64_t *aggregators)
{
    *block_size = view_based_block(e, state);
    *aggregators = view_based_clamp(e->nnodes, 1, e->nprocs);
}

const iotame_strategy_t iotame_strategy_view_based = {
    .name = "view_based",
    .summary = "view-based collective I/O: file blocks round robin to one aggregator per node, views cached there at "
               "set_view, no offset lists per call",
    .number = 5,
    .model = IOTAME_MODEL_VIEW_BASED,
    .model_call = view_based_model_call,
    .options = (const char *const[]){"block_size", NULL},
    .open = view_based_open,
    .close = view_based_close,
    .setup = view_based_setup,
    .teardown = view_based_teardown,
    .write_all = view_based_run,
    .read_all = view_based_run,
    .write_at_all = view_based_run,
    .read_at_all = view_based_run,
    .blocks = view_based_blocks,
};
