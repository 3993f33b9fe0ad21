/* The aggregation engine: two-phase collective I/O (del Rosario, Bordawekar and Choudhary, 1993; ROMIO: Thakur,
 * Gropp and Lusk, "Data sieving and collective I/O in ROMIO", 1999) generalized over how the file is divided
 * among aggregators, so that even domains (two_phase), one aggregator per storage target (Orthrus disk-first,
 * target_aligned) and one aggregator per node (Orthrus core-first, node_local) share one implementation.
 *
 * 1. Every rank cuts its sorted file extents into pieces that each fall in one round (window) of one aggregator,
 *    and sends each aggregator the list of its pieces (MPI_Alltoall of counts, MPI_Alltoallv of the lists). With a
 *    plan's extents_of (view-based collective I/O) no list is sent: each aggregator obtains every rank's extents
 *    itself and cuts them as that rank does, so both sides know the same pieces.
 * 2. Each aggregator sorts the pieces of its domain by window and offset, then handles its windows in ascending
 *    order: for a write it receives the window's data from every source, fills the holes it may fill (read-modify-
 *    write, only for groups that have holes), and writes each group with one call; for a read it reads each group
 *    (over small holes) and sends every source its bytes.
 *
 * RATIONALE: the data of one (source, aggregator, window) is one contiguous slice of the source's packed stream
 * whenever the domains are contiguous in file order (even domains, by-source), so sends need no copy; striped
 * domains reorder the stream once. Writes use synchronous sends with a look-ahead of LOOKAHEAD windows per
 * aggregator so that an aggregator never buffers more than a few windows of unexpected data; reads have every
 * receive posted before the first send. Nothing can block forever: the write loop waits on every pending request
 * at once. Every allocation happens before a point where all ranks agree (MPI_Allreduce) to go on, so a rank that
 * runs out of memory makes the whole call pass through instead of leaving the others waiting. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "domains.h"
#include "strategy.h"

/* RATIONALE: MPICH's MPI_STATUSES_IGNORE is the address 1, which GCC takes for an array of size 0. */
#pragma GCC diagnostic ignored "-Wstringop-overflow"

#define HOLE_MAX ((int64_t)64 * 1024) /* largest gap read over (reads) or read-modify-written (writes) */
#define LOOKAHEAD 2                   /* windows in flight per (source, aggregator) for writes */
#define TAG_DATA 7

typedef struct {
    int64_t off, len;
} pair_t;

typedef struct {
    int64_t off, len, spos, win; /* file offset, bytes, position in this rank's stream, window */
    int agg;
} piece_t;

typedef struct {
    int64_t off, len, win;
    int src;
} apiece_t;

typedef struct {
    int agg;
    int64_t win, boff, bytes; /* window, position in the send (or receive) buffer, size */
} msg_t;

typedef struct {
    size_t first, end; /* apieces of the window */
    int64_t lo, hi;    /* positions covered in the aggregator's domain */
} win_t;

/* ---- sorting ---- */

static int cmp_piece(const void *x, const void *y)
{
    const piece_t *a = x, *b = y;
    if (a->agg != b->agg) return a->agg < b->agg ? -1 : 1;
    if (a->win != b->win) return a->win < b->win ? -1 : 1;
    return a->spos < b->spos ? -1 : a->spos > b->spos;
}

static int cmp_apiece(const void *x, const void *y)
{
    const apiece_t *a = x, *b = y;
    if (a->win != b->win) return a->win < b->win ? -1 : 1;
    if (a->off != b->off) return a->off < b->off ? -1 : 1;
    return (a->src > b->src) - (a->src < b->src);
}

/* ---- one call ---- */

/* One call's working state: the sender side, then the aggregator side. Over 20 fields: the engine's arrays of one
 * call and their counts, allocated as the call needs them and freed in one place (ctx_free). */
typedef struct {
    iotame_coll_call_t *c;
    const iotame_plan_t *p;
    int me, np, my_agg; /* my_agg: my aggregator index, or -1 */
    /* sender side */
    piece_t *pc;
    size_t npc;
    char *sbuf; /* stream order, or aggregator order when reordered */
    int reorder;
    msg_t *msg;
    size_t nmsg;
    size_t *mfirst; /* nagg + 1: messages per aggregator */
    /* aggregator side */
    apiece_t *ap;
    size_t nap;
    win_t *win;
    size_t nwin;
    char *wbuf, *stage; /* window image, received (write) or packed (read) data */
    int64_t *srcbytes, *srcoff, *cursor; /* per source, within the current window */
    msg_t *selfmsg;                      /* my own messages to myself, by window */
    size_t nself;
    const msg_t *cur_self;               /* the current window's message to myself */
    iotame_run_t *runs;                  /* a handed write: the current window's pieces as runs, by source */
    int64_t *srcfirst;                   /* nprocs + 1: where each source's runs start in `runs` */
} ctx_t;

static void ctx_free(ctx_t *x)
{
    free(x->pc);
    if (x->reorder) free(x->sbuf);
    free(x->msg);
    free(x->mfirst);
    free(x->ap);
    free(x->win);
    free(x->wbuf);
    free(x->stage);
    free(x->srcbytes);
    free(x->srcoff);
    free(x->cursor);
    free(x->runs);
    free(x->srcfirst);
}

static int engine_agree(MPI_Comm comm, int ok)
{
    int all = 0;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    return all;
}

/* Step 1 (local): this rank's pieces and messages. */
static int make_pieces(ctx_t *x)
{
    const iotame_coll_call_t *c = x->c;
    size_t cap = c->next + 16;
    x->pc = malloc(cap * sizeof *x->pc);
    if (!x->pc) return -ENOMEM;
    int64_t spos = 0;
    domain_cache_t k = {0, 0, 0, 0};
    for (size_t i = 0; i < c->next; i++) {
        int64_t o = c->ext[i].off, rem = c->ext[i].len;
        while (rem > 0) {
            int agg;
            int64_t win, n = domain_min64(rem, domain_cut_cached(x->p, x->me, o, &agg, &win, &k));
            if (x->npc == cap) {
                piece_t *grown = realloc(x->pc, (cap *= 2) * sizeof *grown);
                if (!grown) return -ENOMEM;
                x->pc = grown;
            }
            x->pc[x->npc++] = (piece_t){o, n, spos, win, agg};
            o += n;
            spos += n;
            rem -= n;
        }
    }
    for (size_t i = 1; i < x->npc && !x->reorder; i++)
        if (cmp_piece(&x->pc[i - 1], &x->pc[i]) > 0) x->reorder = 1;
    x->sbuf = c->data;
    if (x->reorder) {
        qsort(x->pc, x->npc, sizeof *x->pc, cmp_piece);
        x->sbuf = malloc(c->nbytes ? (size_t)c->nbytes : 1);
        if (!x->sbuf) {
            x->reorder = 0;
            return -ENOMEM;
        }
    }
    /* Messages: runs of pieces with the same (aggregator, window); their buffer positions. */
    x->msg = malloc((x->npc ? x->npc : 1) * sizeof *x->msg);
    x->mfirst = calloc((size_t)x->p->nagg + 1, sizeof *x->mfirst);
    if (!x->msg || !x->mfirst) return -ENOMEM;
    int64_t boff = 0;
    for (size_t i = 0; i < x->npc; i++) {
        piece_t *q = &x->pc[i];
        int64_t at = x->reorder ? boff : q->spos;
        if (x->nmsg && x->msg[x->nmsg - 1].agg == q->agg && x->msg[x->nmsg - 1].win == q->win) {
            x->msg[x->nmsg - 1].bytes += q->len;
        } else {
            x->msg[x->nmsg++] = (msg_t){q->agg, q->win, at, q->len};
            x->mfirst[q->agg + 1]++;
        }
        boff += q->len;
    }
    for (int a = 0; a < x->p->nagg; a++) x->mfirst[a + 1] += x->mfirst[a];
    return 0;
}

/* Step 2 (collective): request lists to the aggregators; the aggregator's windows. */
static int exchange_requests(ctx_t *x)
{
    iotame_coll_call_t *c = x->c;
    MPI_Comm comm = c->env->comm;
    int np = x->np, ok = 1;
    int64_t *scount = calloc((size_t)np, sizeof *scount), *rcount = calloc((size_t)np, sizeof *rcount);
    int *sc = calloc((size_t)np, sizeof *sc), *sd = calloc((size_t)np, sizeof *sd);
    int *rc = calloc((size_t)np, sizeof *rc), *rd = calloc((size_t)np, sizeof *rd);
    pair_t *smeta = malloc((x->npc ? x->npc : 1) * sizeof *smeta), *rmeta = NULL;
    if (!scount || !rcount || !sc || !sd || !rc || !rd || !smeta) ok = 0;
    size_t first = 0;
    for (int a = 0; ok && a < x->p->nagg; a++) { /* pieces are grouped by aggregator */
        size_t end = first;
        while (end < x->npc && x->pc[end].agg == a) end++;
        scount[x->p->agg_rank[a]] = (int64_t)(end - first);
        sd[x->p->agg_rank[a]] = (int)first;
        first = end;
    }
    for (size_t i = 0; ok && i < x->npc; i++) smeta[i] = (pair_t){x->pc[i].off, x->pc[i].len};
    if (!engine_agree(comm, ok)) goto fail; /* nothing sent yet: every rank gives up */
    PMPI_Alltoall(scount, 1, MPI_INT64_T, rcount, 1, MPI_INT64_T, comm);
    int64_t total = 0;
    for (int s = 0; s < np; s++) {
        /* pairs travel as two MPI_INT64_T each: counts and displacements in int64 units must fit an int */
        if (2 * scount[s] > INT32_MAX || 2 * rcount[s] > INT32_MAX || 2 * total > INT32_MAX) ok = 0;
        sc[s] = (int)(2 * scount[s]);
        rc[s] = (int)(2 * rcount[s]);
        rd[s] = (int)(2 * total);
        sd[s] *= 2;
        total += rcount[s];
    }
    if (ok && 2 * total > INT32_MAX) ok = 0;
    if (ok) {
        rmeta = malloc((size_t)(total ? total : 1) * sizeof *rmeta);
        x->ap = malloc((size_t)(total ? total : 1) * sizeof *x->ap);
        if (!rmeta || !x->ap) ok = 0;
    }
    if (!engine_agree(comm, ok)) goto fail;
    PMPI_Alltoallv(smeta, sc, sd, MPI_INT64_T, rmeta, rc, rd, MPI_INT64_T, comm);
    for (int s = 0; s < np; s++)
        if (s != x->me) x->c->list_bytes += scount[s] * (int64_t)sizeof(pair_t);
    x->nap = (size_t)total;
    for (int s = 0; s < np; s++)
        for (int64_t i = 0; i < rcount[s]; i++) {
            pair_t m = rmeta[rd[s] / 2 + i];
            x->ap[rd[s] / 2 + i] = (apiece_t){m.off, m.len, domain_pos(x->p, x->my_agg, m.off) / x->p->window, s};
        }
    free(scount);
    free(rcount);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(smeta);
    free(rmeta);
    return 0;
fail:
    free(scount);
    free(rcount);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(smeta);
    free(rmeta);
    return -ENOMEM;
}

static int add_apiece(ctx_t *x, size_t *cap, apiece_t a)
{
    if (x->nap == *cap) {
        size_t grow = *cap ? 2 * *cap : 256;
        apiece_t *grown = realloc(x->ap, grow * sizeof *grown);
        if (!grown) return -ENOMEM;
        x->ap = grown;
        *cap = grow;
    }
    x->ap[x->nap++] = a;
    return 0;
}

/* Step 2 without lists (plan->extents_of, local): the aggregator cuts every other rank's extents as that rank does
 * and keeps the pieces of its own domain; its own are cut already (step 1). Returns 0 or -ENOMEM (agreed in
 * step 3). */
static int local_requests(ctx_t *x)
{
    if (x->my_agg < 0) return 0;
    const iotame_coll_call_t *c = x->c;
    const iotame_plan_t *p = x->p;
    iotame_extents_t theirs = {0};
    /* Sized from the gathered extent counts (a piece per extent unless one crosses a block or window), so that the
     * lists rarely grow while they fill. */
    size_t cap = x->npc, most = 0;
    for (int s = 0; s < x->np; s++) {
        const int64_t n = c->info[(size_t)s * IOTAME_INFO_FIELDS + IOTAME_INFO_EXTENTS];
        if (s == x->me || n <= 0) continue;
        cap += (size_t)n;
        if ((size_t)n > most) most = (size_t)n;
    }
    x->ap = malloc((cap ? cap : 1) * sizeof *x->ap);
    theirs.v = malloc((most + 16) * sizeof *theirs.v);
    if (!x->ap || !theirs.v) {
        free(theirs.v);
        return -ENOMEM;
    }
    theirs.cap = most + 16;
    int rc = 0;
    for (size_t i = 0; i < x->npc && rc == 0; i++)
        if (x->pc[i].agg == x->my_agg)
            rc = add_apiece(x, &cap, (apiece_t){x->pc[i].off, x->pc[i].len, x->pc[i].win, x->me});
    for (int s = 0; s < x->np && rc == 0; s++) {
        if (s == x->me || c->info[(size_t)s * IOTAME_INFO_FIELDS + IOTAME_INFO_BYTES] <= 0) continue;
        if ((rc = p->extents_of(p->arg, x->my_agg, s, &theirs)) != 0) break;
        domain_cache_t k = {0, 0, 0, 0};
        for (size_t i = 0; i < theirs.n && rc == 0; i++) {
            int64_t o = theirs.v[i].off, rem = theirs.v[i].len;
            while (rem > 0 && rc == 0) {
                int agg;
                int64_t win, len = domain_min64(rem, domain_cut_cached(p, s, o, &agg, &win, &k));
                if (agg == x->my_agg) rc = add_apiece(x, &cap, (apiece_t){o, len, win, s});
                o += len;
                rem -= len;
            }
        }
    }
    iotame_extents_free(&theirs);
    return rc ? -ENOMEM : 0;
}

/* Step 3 (local, then agreed with this rank's ok so far): the aggregator's windows and buffers. */
static int prepare_windows(ctx_t *x, int ok)
{
    if (ok && x->nap) {
        qsort(x->ap, x->nap, sizeof *x->ap, cmp_apiece);
        x->win = malloc(x->nap * sizeof *x->win);
        x->srcbytes = calloc((size_t)x->np, sizeof *x->srcbytes);
        x->srcoff = calloc((size_t)x->np, sizeof *x->srcoff);
        x->cursor = calloc((size_t)x->np, sizeof *x->cursor);
        if (!x->win || !x->srcbytes || !x->srcoff || !x->cursor) ok = 0;
    }
    int64_t span_max = 0, stage_max = 0;
    size_t pieces_max = 0;
    for (size_t i = 0; ok && i < x->nap;) {
        /* positions grow with file offsets in a domain: the window's first piece and its last byte bound it */
        win_t w = {i, i, domain_pos(x->p, x->my_agg, x->ap[i].off), 0};
        int64_t others = 0, last = x->ap[i].off;
        for (; w.end < x->nap && x->ap[w.end].win == x->ap[i].win; w.end++) {
            const apiece_t *q = &x->ap[w.end];
            if (q->off + q->len - 1 > last) last = q->off + q->len - 1;
            if (q->src != x->me) others += q->len;
        }
        w.hi = domain_pos(x->p, x->my_agg, last) + 1;
        if (w.hi - w.lo > span_max) span_max = w.hi - w.lo;
        if (others > stage_max) stage_max = others;
        if (w.end - w.first > pieces_max) pieces_max = w.end - w.first;
        x->win[x->nwin++] = w;
        i = w.end;
    }
    if (ok && x->nap) {
        x->wbuf = malloc((size_t)(span_max ? span_max : 1));
        x->stage = malloc((size_t)(stage_max ? stage_max : 1));
        if (!x->wbuf || !x->stage) ok = 0;
    }
    if (ok && x->nap && x->c->consumer && x->c->write) {
        x->runs = malloc(pieces_max * sizeof *x->runs);
        x->srcfirst = malloc(((size_t)x->np + 1) * sizeof *x->srcfirst);
        if (!x->runs || !x->srcfirst) ok = 0;
    }
    /* My messages to myself, in window order (they are consecutive: messages are sorted by aggregator). */
    if (ok && x->my_agg >= 0) {
        x->selfmsg = x->msg + x->mfirst[x->my_agg];
        x->nself = x->mfirst[x->my_agg + 1] - x->mfirst[x->my_agg];
    }
    if (ok && x->reorder && x->c->write) { /* gather the stream into aggregator order */
        int64_t boff = 0;
        for (size_t i = 0; i < x->npc; i++) {
            memcpy(x->sbuf + boff, x->c->data + x->pc[i].spos, (size_t)x->pc[i].len);
            boff += x->pc[i].len;
        }
    }
    return engine_agree(x->c->env->comm, ok) ? 0 : -ENOMEM;
}

/* The groups of window w: maximal runs of pieces written (or read) with one call. `fill`: gaps up to HOLE_MAX
 * join a group. Calls fn(x, w, first, end, gstart, gend, holes) for each. */
typedef void (*group_fn)(ctx_t *x, const win_t *w, size_t first, size_t end, int64_t gs, int64_t ge, int holes);

static void for_groups(ctx_t *x, const win_t *w, int fill, group_fn fn)
{
    size_t i = w->first;
    while (i < w->end) {
        size_t j = i + 1;
        int64_t gs = x->ap[i].off, ge = gs + x->ap[i].len, covered = x->ap[i].len, limit = domain_run_end(x->p, gs);
        for (; j < w->end; j++) {
            const apiece_t *q = &x->ap[j];
            if (q->off > ge + (fill ? HOLE_MAX : 0) || q->off >= limit) break;
            int64_t qe = q->off + q->len;
            if (qe > ge) {
                covered += qe - (q->off > ge ? q->off : ge);
                ge = qe;
            }
        }
        fn(x, w, i, j, gs, ge, covered < ge - gs);
        i = j;
    }
}

/* Where the data of piece k of the current window comes from (writes) or goes to (reads). */
static char *piece_data(ctx_t *x, size_t k, const msg_t *self)
{
    const apiece_t *q = &x->ap[k];
    char *base = q->src == x->me ? x->sbuf + self->boff : x->stage + x->srcoff[q->src];
    char *at = base + x->cursor[q->src];
    x->cursor[q->src] += q->len;
    return at;
}

static const msg_t *self_msg(ctx_t *x, const win_t *w)
{
    static const msg_t none = {0, 0, 0, 0};
    int64_t win = x->ap[w->first].win;
    for (size_t i = 0; i < x->nself; i++)
        if (x->selfmsg[i].win == win) return &x->selfmsg[i];
    return &none;
}

static void write_group(ctx_t *x, const win_t *w, size_t first, size_t end, int64_t gs, int64_t ge, int holes)
{
    if (end - first == 1) { /* one piece: written from where it is */
        iotame__coll_shadow_io(x->c, 1, gs, piece_data(x, first, x->cur_self), ge - gs);
        return;
    }
    char *img = x->wbuf + (domain_pos(x->p, x->my_agg, gs) - w->lo);
    if (holes) iotame__coll_shadow_io(x->c, 0, gs, img, ge - gs); /* read-modify-write: only groups with holes */
    for (size_t k = first; k < end; k++)
        memcpy(img + (x->ap[k].off - gs), piece_data(x, k, x->cur_self), (size_t)x->ap[k].len);
    iotame__coll_shadow_io(x->c, 1, gs, img, ge - gs);
}

/* Pieces of one source in offset order (each a run of one piece) collapsed in place: adjacent ones joined, equal ones
 * at an equal stride made one strided run, so that a record grows with the view, not with its pieces. Returns the
 * runs left. */
static size_t engine_runs_collapse(iotame_run_t *r, size_t n)
{
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        iotame_run_t *t = out ? &r[out - 1] : NULL;
        const iotame_run_t q = r[i];
        if (t && t->count == 1 && q.off == t->off + t->len) {
            t->len += q.len;
            t->stride = t->len;
        } else if (t && q.len == t->len &&
                   (t->count == 1 ? q.off - t->off > t->len : q.off == t->off + t->count * t->stride)) {
            if (t->count == 1) t->stride = q.off - t->off;
            t->count++;
        } else {
            r[out++] = q;
        }
    }
    return out;
}

/* A complete window handed to the block consumer instead of the file (core/module.h): every source's pieces as runs,
 * with its bytes as they arrived (in offset order). No read-modify-write: the consumer writes the pieces only. */
static void engine_window_to_consumer(ctx_t *x, const win_t *w)
{
    int64_t *first = x->srcfirst, *at = x->cursor; /* the cursors serve write_group only, which a consumer replaces */
    for (int s = 0; s <= x->np; s++) first[s] = 0;
    for (size_t k = w->first; k < w->end; k++) first[x->ap[k].src + 1]++;
    for (int s = 0; s < x->np; s++) first[s + 1] += first[s];
    for (int s = 0; s < x->np; s++) at[s] = first[s];
    for (size_t k = w->first; k < w->end; k++) {
        const apiece_t *q = &x->ap[k];
        x->runs[at[q->src]++] = (iotame_run_t){q->off, q->len, 1, q->len};
    }
    for (int s = 0; s < x->np; s++) {
        const size_t n = engine_runs_collapse(x->runs + first[s], (size_t)(first[s + 1] - first[s]));
        if (!n) continue;
        const char *data = s == x->me ? x->sbuf + x->cur_self->boff : x->stage + x->srcoff[s];
        x->c->handed_end = (int64_t)x->c->consumer->put(x->c->consumer_arg, s, x->runs + first[s], n, data);
    }
}

static void read_group(ctx_t *x, const win_t *w, size_t first, size_t end, int64_t gs, int64_t ge, int holes)
{
    char *img = x->wbuf + (domain_pos(x->p, x->my_agg, gs) - w->lo);
    iotame__coll_shadow_io(x->c, 0, gs, img, ge - gs);
    for (size_t k = first; k < end; k++)
        memcpy(piece_data(x, k, x->cur_self), img + (x->ap[k].off - gs), (size_t)x->ap[k].len);
}

/* The byte count of every source in window w, and where its data sits in the stage buffer. */
static void engine_window_sources(ctx_t *x, const win_t *w)
{
    for (size_t k = w->first; k < w->end; k++) x->srcbytes[x->ap[k].src] += x->ap[k].len;
    int64_t off = 0;
    for (int s = 0; s < x->np; s++) {
        x->cursor[s] = 0;
        x->srcoff[s] = off;
        if (s != x->me) off += x->srcbytes[s];
    }
}

static void engine_window_done(ctx_t *x)
{
    for (int s = 0; s < x->np; s++) x->srcbytes[s] = 0;
}

static int engine_write(ctx_t *x)
{
    MPI_Comm comm = x->c->env->comm;
    const int nagg = x->p->nagg;
    size_t *next = calloc((size_t)nagg, sizeof *next), *done = calloc((size_t)nagg, sizeof *done);
    MPI_Request *sreq = malloc((x->nmsg ? x->nmsg : 1) * sizeof *sreq);
    MPI_Request *rreq = malloc((size_t)x->np * sizeof *rreq), *all = malloc(((size_t)nagg * LOOKAHEAD + (size_t)x->np + 1) * sizeof *all);
    int *rsrc = malloc((size_t)x->np * sizeof *rsrc), *which = malloc(((size_t)nagg * LOOKAHEAD + (size_t)x->np + 1) * sizeof *which);
    int *idx = malloc(((size_t)nagg * LOOKAHEAD + (size_t)x->np + 1) * sizeof *idx);
    size_t *msg_of = malloc(((size_t)nagg * LOOKAHEAD + 1) * sizeof *msg_of);
    int ok = next && done && sreq && rreq && all && rsrc && which && idx && msg_of;
    if (!engine_agree(comm, ok)) {
        free(next), free(done), free(sreq), free(rreq), free(all), free(rsrc), free(which), free(idx), free(msg_of);
        return -ENOMEM;
    }
    for (size_t m = 0; m < x->nmsg; m++) sreq[m] = MPI_REQUEST_NULL;
    for (int a = 0; a < nagg; a++) next[a] = done[a] = x->mfirst[a];
    size_t cw = 0;
    int nr = 0, posted = 0, rdone = 0;
    for (;;) {
        /* Sends: up to LOOKAHEAD windows per aggregator in flight; to myself nothing is sent. */
        for (int a = 0; a < nagg; a++) {
            while (next[a] < x->mfirst[a + 1] && next[a] - done[a] < LOOKAHEAD) {
                const msg_t *m = &x->msg[next[a]];
                if (a == x->my_agg) done[a]++;
                else
                    PMPI_Issend(x->sbuf + m->boff, (int)m->bytes, MPI_BYTE, x->p->agg_rank[a], TAG_DATA, comm,
                                &sreq[next[a]]);
                next[a]++;
            }
        }
        /* Receives of my current window. */
        if (cw < x->nwin && !posted) {
            engine_window_sources(x, &x->win[cw]);
            nr = rdone = 0;
            for (int s = 0; s < x->np; s++)
                if (s != x->me && x->srcbytes[s]) {
                    PMPI_Irecv(x->stage + x->srcoff[s], (int)x->srcbytes[s], MPI_BYTE, s, TAG_DATA, comm, &rreq[nr]);
                    rsrc[nr++] = s;
                }
            posted = 1;
        }
        if (cw < x->nwin && posted && rdone == nr) { /* every byte of the window is here */
            const win_t *w = &x->win[cw];
            x->cur_self = self_msg(x, w);
            if (x->c->consumer) engine_window_to_consumer(x, w);
            else for_groups(x, w, x->p->fill_holes, write_group);
            engine_window_done(x);
            cw++;
            posted = 0;
            continue;
        }
        /* Wait for anything pending. */
        int n = 0;
        size_t nsend = 0;
        for (int a = 0; a < nagg; a++)
            for (size_t m = done[a]; m < next[a]; m++)
                if (sreq[m] != MPI_REQUEST_NULL) {
                    all[n] = sreq[m];
                    which[n++] = -1 - (int)nsend;
                    msg_of[nsend++] = m;
                }
        for (int r = 0; r < nr; r++)
            if (rreq[r] != MPI_REQUEST_NULL) {
                all[n] = rreq[r];
                which[n++] = r;
            }
        if (n == 0) {
            int sending = 0;
            for (int a = 0; a < nagg; a++) sending |= next[a] < x->mfirst[a + 1];
            if (!sending && cw >= x->nwin) break;
            continue;
        }
        int outcount = 0;
        PMPI_Waitsome(n, all, &outcount, idx, MPI_STATUSES_IGNORE);
        for (int k = 0; k < outcount; k++) {
            int wi = which[idx[k]];
            if (wi >= 0) {
                rreq[wi] = MPI_REQUEST_NULL;
                rdone++;
            } else {
                size_t m = msg_of[-1 - wi];
                sreq[m] = MPI_REQUEST_NULL;
            }
        }
        /* Completed sends of each aggregator, in order. */
        for (int a = 0; a < nagg; a++)
            while (done[a] < next[a] && sreq[done[a]] == MPI_REQUEST_NULL) done[a]++;
    }
    free(next), free(done), free(sreq), free(rreq), free(all), free(rsrc), free(which), free(idx), free(msg_of);
    return 0;
}

static int engine_read(ctx_t *x)
{
    MPI_Comm comm = x->c->env->comm;
    MPI_Request *rreq = malloc((x->nmsg ? x->nmsg : 1) * sizeof *rreq), *sreq = malloc((size_t)x->np * sizeof *sreq);
    if (!engine_agree(comm, rreq && sreq)) {
        free(rreq);
        free(sreq);
        return -ENOMEM;
    }
    int nrecv = 0;
    for (size_t m = 0; m < x->nmsg; m++) {
        const msg_t *g = &x->msg[m];
        if (g->agg == x->my_agg) continue; /* filled by my own aggregator loop */
        PMPI_Irecv(x->sbuf + g->boff, (int)g->bytes, MPI_BYTE, x->p->agg_rank[g->agg], TAG_DATA, comm, &rreq[nrecv++]);
    }
    if (x->c->consumer && x->nap) { /* the blocks this aggregator handed over are written before it reads them */
        int64_t lo = x->ap[0].off, hi = 0;
        for (size_t k = 0; k < x->nap; k++) {
            if (x->ap[k].off < lo) lo = x->ap[k].off;
            if (x->ap[k].off + x->ap[k].len > hi) hi = x->ap[k].off + x->ap[k].len;
        }
        x->c->consumer->read_ready(x->c->consumer_arg, lo, hi);
    }
    int ns = 0;
    for (size_t cw = 0; cw < x->nwin; cw++) {
        const win_t *w = &x->win[cw];
        PMPI_Waitall(ns, sreq, MPI_STATUSES_IGNORE); /* the stage buffer is free again */
        ns = 0;
        engine_window_sources(x, w);
        x->cur_self = self_msg(x, w);
        for_groups(x, w, 1, read_group); /* reading over holes is always safe */
        for (int s = 0; s < x->np; s++)
            if (s != x->me && x->srcbytes[s])
                PMPI_Isend(x->stage + x->srcoff[s], (int)x->srcbytes[s], MPI_BYTE, s, TAG_DATA, comm, &sreq[ns++]);
        engine_window_done(x);
    }
    PMPI_Waitall(ns, sreq, MPI_STATUSES_IGNORE);
    PMPI_Waitall(nrecv, rreq, MPI_STATUSES_IGNORE);
    if (x->reorder) { /* back to stream order */
        int64_t boff = 0;
        for (size_t i = 0; i < x->npc; i++) {
            memcpy(x->c->data + x->pc[i].spos, x->sbuf + boff, (size_t)x->pc[i].len);
            boff += x->pc[i].len;
        }
    }
    free(rreq);
    free(sreq);
    return 0;
}

int iotame_coll_engine(iotame_coll_call_t *c, const iotame_plan_t *p)
{
    c->mpi_error = MPI_SUCCESS;
    if (!p) { /* the strategy could not make its plan on this rank */
        engine_agree(c->env->comm, 0);
        return -ENOMEM;
    }
    ctx_t x = {.c = c, .p = p, .me = c->env->rank, .np = c->env->nprocs, .my_agg = -1};
    for (int a = 0; a < p->nagg; a++)
        if (p->agg_rank[a] == x.me) x.my_agg = a;
    int rc = make_pieces(&x);
    /* A rank that failed here still joins every agreement below with ok = 0. */
    if (p->extents_of) { /* no lists: step 3's agreement is the first */
        rc = prepare_windows(&x, rc == 0 && local_requests(&x) == 0);
    } else {
        if (rc == 0) rc = exchange_requests(&x);
        else {
            engine_agree(c->env->comm, 0);
            rc = -ENOMEM;
        }
        if (rc == 0) rc = prepare_windows(&x, 1);
    }
    if (rc == 0) rc = c->write ? engine_write(&x) : engine_read(&x);
    ctx_free(&x);
    if (rc) return rc;
    return c->mpi_error == MPI_SUCCESS ? 0 : -EIO;
}
