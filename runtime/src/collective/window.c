/* The window protocol: how one handle under strategy auto feeds the selector's policy (select/).
 *
 * A measured call costs two collectives of ours (the router gathers the call's signature and reduces its time), and
 * with a library strategy that does none of its own (independent) they hold the ranks in lockstep: a job of small
 * calls ran at half the speed of the same strategy fixed. So once a signature runs with a library strategy, its calls
 * are served in steady windows, without any collective of ours: every rank checks that its own part of each call
 * keeps the shape of the call that started the window (operation, bytes, extents, span, the same step between
 * starts), and one gather at the window's end confirms that every rank saw the same and gives the policy the window's
 * throughput. A window whose calls changed shape is not measured, and the next call is measured on its own. The
 * strategy is the same on every rank for the whole window, whatever the calls are, so nothing can diverge.
 *
 * Windows are of three kinds: the opening window (a handle's first calls, served by the strategy every known
 * signature of the operation would run, else the first candidate; its end gives the signature), monitoring windows of
 * a settled choice, and examination windows of a library candidate (it is examined as it would run if it won).
 *
 * A blocking gather at every window's end makes the ranks wait for each other; so the gather is posted without
 * waiting, tested at every call and completed at the next window's end: the policy learns of a window one window
 * late, and the next window's strategy is decided from the windows before, alike on every rank. The gather itself is
 * the caller's (w->gather; auto.c posts it on the handle's communicator), so this file has no MPI in it. */
#include <limits.h>
#include <string.h>

#include "window.h"

iotame_select_conf_t iotame_window_conf(const iotame_window_t *w, int write)
{
    iotame_select_conf_t c = w->set.conf;
    c.candidates = w->set.order[write];
    c.ncandidates = w->set.norder[write];
    return c;
}

int iotame_window_opening(const iotame_window_t *w, int write)
{
    const iotame_select_conf_t conf = iotame_window_conf(w, write);
    const int s = conf.budget < 1 ? iotame_select_opening(w->sel, &w->set.knowledge, &conf, write, w->nprocs) : -1;
    return s >= 0 && s < IOTAME_SELECT_MAX && w->set.library[s] ? s : -1;
}

iotame_sel_entry_t *iotame_window_entry(iotame_window_t *w, const iotame_sig_t *sig, int interleaved)
{
    const iotame_select_conf_t conf = iotame_window_conf(w, sig->write);
    iotame_select_model_t model;
    /* predicted only when new: a known signature's entry is found without the model's arithmetic */
    const int predicted = w->predict.fn && !iotame_select_find(w->sel, sig) &&
                          w->predict.fn(w->predict.arg, sig, interleaved, &model);
    return iotame_select_entry(w->sel, sig, &conf, &w->set.knowledge, predicted ? &model : NULL);
}

/* This rank's part of a call as a window compares it: bytes, extents, span; and its first byte. */
static void window_shape(int64_t nbytes, const iotame_extents_t *x, int64_t row[3], int64_t *start)
{
    *start = x->n ? x->v[0].off : 0;
    row[0] = nbytes;
    row[1] = (int64_t)x->n;
    row[2] = x->n ? x->v[x->n - 1].off + x->v[x->n - 1].len - *start : 0;
}

/* A window of strategy s. entry NULL: the opening window, or a window that goes on from it, whose entry its
 * gathered signature gives. The opening window's first call sets the shape; other windows go on with it. */
static void window_start(iotame_window_t *w, iotame_sel_entry_t *entry, int s, int write, int kind)
{
    iotame_window_run_t *r = &w->run;
    r->entry = entry;
    r->strategy = s;
    r->write = write;
    r->kind = kind;
    r->generation = iotame_select_generation(w->sel);
    r->left = r->calls = kind == IOTAME_WINDOW_EXAM ? iotame_select_exam_left(entry)
                         : entry                    ? w->tally.next_calls
                                                    : w->set.shortest;
    r->changed = 0;
    r->delta = INT64_MIN; /* the step between starts: set by the window's second call */
    r->seconds = r->warm = 0;
    r->fresh = kind == IOTAME_WINDOW_OPENING;
}

/* Posts this rank's row of the window of n calls that just ended (the gather completes while the next window
 * runs) and keeps what the window was, for window_finish. */
static void window_post(iotame_window_t *w, int n)
{
    const iotame_window_run_t *r = &w->run;
    iotame_window_posted_t *p = &w->posted;
    int64_t *m = p->row;
    m[IOTAME_WROW_CHANGED] = r->changed || r->generation != iotame_select_generation(w->sel);
    m[IOTAME_WROW_DELTA] = r->delta;
    m[IOTAME_WROW_START] = r->first;
    m[IOTAME_WROW_END] = r->first + r->row[2];
    m[IOTAME_WROW_BYTES] = r->row[0];
    m[IOTAME_WROW_EXTENTS] = r->row[1];
    m[IOTAME_WROW_WARM_NS] = (int64_t)(r->warm * 1e9);
    m[IOTAME_WROW_NS] = (int64_t)(r->seconds * 1e9);
    m[IOTAME_WROW_COST_NS] = w->tally.cost_ns;
    p->entry = r->entry;
    p->generation = r->generation;
    p->strategy = r->strategy;
    p->write = r->write;
    p->kind = r->kind;
    p->calls = n;
    w->run.left = 0;
    w->gather.post(w->gather.arg, m);
    p->pending = 1;
}

/* Every rank's rows of a window reduced: whether any saw its calls change shape or move otherwise than the others,
 * the window's signature facts, its first call's and all its calls' time on the slowest rank, and the least cost. */
typedef struct {
    int changed;
    int64_t gmin, gmax, gbytes, greq, warm, all, cost;
    int64_t spans; /* the ranks' ranges summed: more than gmax - gmin when they overlap (interleaved) */
} window_sum_t;

static window_sum_t window_sum(const int64_t *rows, int nprocs)
{
    window_sum_t s = {0, INT64_MAX, INT64_MIN, 0, 0, 0, 0, INT64_MAX, 0};
    int moving = 0;
    int64_t delta = 0;
    for (int r = 0; r < nprocs; r++) {
        const int64_t *x = rows + (size_t)r * IOTAME_WINDOW_FIELDS;
        s.changed |= x[IOTAME_WROW_CHANGED] != 0;
        if (x[IOTAME_WROW_EXTENTS] > 0) { /* ranks with data move by one step (the signature's span stays the same) */
            s.changed |= moving && x[IOTAME_WROW_DELTA] != delta;
            delta = x[IOTAME_WROW_DELTA];
            moving = 1;
            s.gmin = x[IOTAME_WROW_START] < s.gmin ? x[IOTAME_WROW_START] : s.gmin;
            s.gmax = x[IOTAME_WROW_END] > s.gmax ? x[IOTAME_WROW_END] : s.gmax;
            s.spans += x[IOTAME_WROW_END] - x[IOTAME_WROW_START];
        }
        s.gbytes += x[IOTAME_WROW_BYTES];
        s.greq += x[IOTAME_WROW_EXTENTS];
        s.warm = x[IOTAME_WROW_WARM_NS] > s.warm ? x[IOTAME_WROW_WARM_NS] : s.warm;
        s.all = x[IOTAME_WROW_NS] > s.all ? x[IOTAME_WROW_NS] : s.all;
        s.cost = x[IOTAME_WROW_COST_NS] < s.cost ? x[IOTAME_WROW_COST_NS] : s.cost;
    }
    return s;
}

/* A measured window's calls to the policy: the opening window's first call as a transition call, then an
 * examination window as one, the others call by call as long as the choice stands (a monitoring window stops where an
 * examination starts; the opening window's calls are the first candidate's examination); the rest is served, not
 * measured. Returns the calls' total time less the opening window's first call. */
static int64_t window_feed(iotame_window_t *w, iotame_sel_entry_t *en, const window_sum_t *g, int s, int kind, int *n)
{
    int64_t all = g->all;
    if (kind == IOTAME_WINDOW_OPENING) { /* the handle's first call is a transition call */
        const double first = g->warm > 0 ? g->gbytes * 1e3 / g->warm : 0;
        if (iotame_select_choose(en) == s) iotame_select_update(w->sel, en, s, first);
        else iotame_select_served(w->sel, en, s, 1, first);
        (*n)--;
        all -= g->warm;
    }
    if (kind == IOTAME_WINDOW_EXAM) {
        iotame_select_exam_window(w->sel, en, s, *n, g->warm, all);
        return all;
    }
    const double mbs = all > 0 ? (double)iotame_select_bytes(en) * *n * 1e3 / all : 0;
    int k = 0;
    for (; k < *n && iotame_select_choose(en) == s && (kind != IOTAME_WINDOW_MONITOR || iotame_select_settled(en)); k++)
        iotame_select_update(w->sel, en, s, mbs);
    iotame_select_served(w->sel, en, s, *n - k, mbs);
    return all;
}

/* Completes the posted window (collective): when every rank saw calls of one shape, moving alike, the policy gets
 * the window at the slowest rank's time. `unseen`: calls served since, in a window not posted yet (the next window's
 * length counts them as served when it waits for credit). Returns the window's entry; NULL when it was not
 * measured. */
static iotame_sel_entry_t *window_finish(iotame_window_t *w, int unseen)
{
    int64_t took = 0;
    const int64_t *rows = w->gather.wait(w->gather.arg, &took);
    w->tally.cost_ns = took < w->tally.cost_ns ? took : w->tally.cost_ns; /* noise only adds to a collective's time */
    iotame_window_posted_t *p = &w->posted;
    p->pending = 0;
    const window_sum_t g = window_sum(rows, w->nprocs);
    iotame_sel_entry_t *en = p->entry;
    /* an entry of a generation the selector has left (another handle of the file reset it) is gone */
    const int stale = en && p->generation != iotame_select_generation(w->sel);
    if (g.changed || stale || (!en && g.gbytes <= 0)) {
        w->tally.unmeasured++;
        return NULL;
    }
    if (!en) { /* the signature, the same for every call of the window */
        const iotame_sig_t sig = iotame_select_sig(p->write, w->nprocs, g.gbytes, g.greq, g.gmin, g.gmax);
        if (!(en = iotame_window_entry(w, &sig, g.spans > g.gmax - g.gmin))) return NULL;
    }
    w->tally.measured++;
    int n = p->calls;
    const int64_t all = window_feed(w, en, &g, p->strategy, p->kind, &n);
    const int wait = iotame_select_wait_calls(en);
    if (n > 0) /* the next window's length, from the gather's cost and the calls' mean time, both agreed */
        w->tally.next_calls = iotame_select_window_calls(&w->set.conf, w->set.shortest, g.cost, (double)all / n,
                                                         iotame_select_running(en), wait > unseen ? wait - unseen : 0);
    return en;
}

/* After the policy moved on: a window of the library strategy it chose next, if any (an examined library
 * candidate's calls are a window of their own; a settled library choice is monitored in windows), going on with the
 * shape of the calls before. Returns whether one started. A library candidate is examined as it runs when it wins:
 * measured call by call, in lockstep with our reductions, its ranks cannot drift apart as they do unsynchronized. */
static int window_next(iotame_window_t *w, iotame_sel_entry_t *en, int write)
{
    int s = iotame_select_choose(en);
    if (s < 0 || s >= IOTAME_SELECT_MAX || !w->set.library[s]) return 0;
    if (iotame_select_settled(en)) {
        iotame_select_rebase(en); /* windows are measured otherwise than single calls */
        window_start(w, en, s, write, IOTAME_WINDOW_MONITOR);
    } else if (iotame_select_exam_left(en) > 0) {
        window_start(w, en, s, write, IOTAME_WINDOW_EXAM);
    } else {
        return 0;
    }
    return 1;
}

/* The end of a steady window: the window before it is finished, this one posted, and the next one starts while the
 * choice stands (every rank alike: it rests on finished windows only). Else this one is finished too, and the next
 * call is measured on its own. */
static void window_end(iotame_window_t *w)
{
    iotame_window_run_t *r = &w->run;
    iotame_sel_entry_t *en = r->entry;
    /* a window whose entry another handle's reset took away is not measured, and nothing goes on from it */
    int stop = en && r->generation != iotame_select_generation(w->sel);
    if (w->posted.pending) {
        iotame_sel_entry_t *before = window_finish(w, r->calls);
        stop |= before == NULL; /* the calls changed shape */
        if (!en) en = before;   /* a window going on from the opening one: its signature's entry */
    }
    const int s = r->strategy, write = r->write, kind = r->kind;
    window_post(w, r->calls);
    if (!stop && (en ? kind == IOTAME_WINDOW_MONITOR && iotame_select_settled(en) && iotame_select_choose(en) == s
                     : kind == IOTAME_WINDOW_OPENING)) {
        window_start(w, en, s, write, IOTAME_WINDOW_MONITOR); /* the shape goes on */
        return;
    }
    /* no gather stays posted while the policy decides on this window, or calls are measured one by one */
    iotame_sel_entry_t *now = window_finish(w, 0);
    if (!stop && now) window_next(w, now, write);
}

int iotame_window_serving(iotame_window_t *w, int write)
{
    if (!w->started) { /* the opening window, when nothing is known of the operation (agreed at open) */
        w->started = 1;
        if (w->set.opening[write] >= 0) window_start(w, NULL, w->set.opening[write], write, IOTAME_WINDOW_OPENING);
    }
    return w->run.left > 0 ? w->run.strategy : -1;
}

void iotame_window_served(iotame_window_t *w, int write, int shaped, int64_t nbytes, const iotame_extents_t *ext,
                          double seconds)
{
    iotame_window_run_t *r = &w->run;
    int64_t row[3], at = 0;
    if (!shaped || write != r->write) {
        r->changed = 1;
    } else if (r->fresh) {
        window_shape(nbytes, ext, r->row, &r->start);
        r->first = r->start;
        r->fresh = 0;
    } else {
        window_shape(nbytes, ext, row, &at);
        if (r->delta == INT64_MIN) r->delta = at - r->start;
        r->changed |= memcmp(row, r->row, sizeof row) != 0 || at - r->start != r->delta;
        r->start = at;
    }
    if (r->left == r->calls) r->warm = seconds;
    r->seconds += seconds;
    w->tally.served++;
    if (w->posted.pending) w->gather.test(w->gather.arg); /* the last window's gather moves on */
    if (--r->left == 0) window_end(w);
}

void iotame_window_measured(iotame_window_t *w, iotame_sel_entry_t *e, int strategy, double mbs, int write,
                            int64_t nbytes, const iotame_extents_t *ext)
{
    iotame_select_update(w->sel, e, strategy, mbs);
    if (window_next(w, e, write)) { /* the window's shape is this call's */
        window_shape(nbytes, ext, w->run.row, &w->run.start);
        w->run.first = w->run.start;
    }
}

void iotame_window_post_last(iotame_window_t *w)
{
    if (w->run.left > 0 && w->run.left < w->run.calls) {
        if (w->posted.pending) window_finish(w, 0);
        window_post(w, w->run.calls - w->run.left);
    }
}

void iotame_window_complete(iotame_window_t *w)
{
    if (w->posted.pending) window_finish(w, 0);
}
