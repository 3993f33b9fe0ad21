/* The adaptive controller: the future work of Seelam, Kerstens and Teller ("Throttling I/O Streams to Accelerate
 * File-I/O Performance"), choosing the number of concurrent streams by measurement. A search measures the target's
 * aggregate throughput for one window per level, the unthrottled level first (it is the default, so measuring it
 * loses nothing), then every power of two below it, highest first (a disk's curve is flat down to two readers and
 * jumps at one: no level can be skipped on the way), then refines between the best level and its measured
 * neighbours; the best is kept, the highest of those within `tolerance` of it (fewer waits, less load imbalance at
 * the next barrier). A level is examined only while what the search lost against the best so far is under `budget`
 * of the I/O time seen, as the collective selector does; meanwhile the best serves. Once steady, two windows in a
 * row that deviate from the reference by more than `threshold` start a new search. With a level predicted from the
 * machine profile's streams curve (throttle_predict_level), a search starts at that level instead and climbs: it
 * measures the kept level's neighbours among the plan's levels and moves on only while a neighbour becomes the kept
 * level, so a right prediction costs two windows and a wrong one is still corrected; a neighbour the curve expects to
 * lose waits until the budget affords that loss. No MPI, no time source of its
 * own: the gate (gate.c) calls it with each finished window, under the gate's lock. */
#include <math.h>
#include <string.h>

#include "throttle.h"

#define REFINE_ROUNDS 1

static int ctl_find(const throttle_ctl_t *c, int level)
{
    for (int i = 0; i < c->ncand; i++)
        if (c->level_cand[i] == level) return i;
    return -1;
}

static void ctl_add(throttle_ctl_t *c, int level)
{
    if (level >= 1 && level <= c->nmax && ctl_find(c, level) < 0 && c->ncand < THROTTLE_CANDIDATES)
        c->level_cand[c->ncand++] = level;
}

/* The search's plan: nmax, then the powers of two below it, highest first: the levels nearest the default are the
 * cheapest to try when the default is good, and a device that wants few streams shows it level after level. A
 * predicted level joins them: the search starts there and climbs over these levels. */
static void ctl_plan(throttle_ctl_t *c)
{
    c->ncand = 0;
    if (c->predicted) ctl_add(c, c->predicted);
    ctl_add(c, c->nmax);
    int top = 1;
    while (top * 2 < c->nmax) top *= 2;
    for (int l = top; l >= 1; l /= 2) ctl_add(c, l);
    memset(c->mbs, 0, sizeof c->mbs);
    c->refined = 0;
    c->loss_ns = 0;
    c->busy_ns = 0;
    c->state = THROTTLE_SEARCH;
    c->searches++;
}

/* The best measured candidate: the highest level within tolerance of the fastest; -1 when none is measured. */
static int ctl_best_index(const throttle_ctl_t *c, double tolerance)
{
    double top = 0;
    for (int i = 0; i < c->ncand; i++)
        if (c->mbs[i] > top) top = c->mbs[i];
    int best = -1;
    for (int i = 0; i < c->ncand; i++)
        if (c->mbs[i] > 0 && c->mbs[i] >= top * (1 - tolerance) && (best < 0 || c->level_cand[i] > c->level_cand[best]))
            best = i;
    return best;
}

int throttle_ctl_best(const throttle_ctl_t *c)
{
    int b = ctl_best_index(c, 0);
    return b >= 0 ? c->level_cand[b] : 0;
}

/* Adds the midpoints between the best level and its closest measured neighbours; 0 when there is none new. */
static int ctl_refine(throttle_ctl_t *c, double tolerance)
{
    if (c->refined >= REFINE_ROUNDS) return 0;
    c->refined++;
    int b = c->level_cand[ctl_best_index(c, tolerance)], lo = 0, hi = 0, before = c->ncand;
    for (int i = 0; i < c->ncand; i++) {
        int l = c->level_cand[i];
        if (c->mbs[i] <= 0) continue;
        if (l < b && l > lo) lo = l;
        if (l > b && (!hi || l < hi)) hi = l;
    }
    if (lo) ctl_add(c, (lo + b) / 2);
    if (hi) ctl_add(c, (b + hi) / 2);
    return c->ncand > before;
}

/* The next unmeasured candidate, -1 when none. */
static int ctl_next_unmeasured(const throttle_ctl_t *c)
{
    for (int i = 0; i < c->ncand; i++)
        if (c->mbs[i] <= 0) return i;
    return -1;
}

/* The climb's next candidate: the kept level's next higher candidate, else its next lower, while unmeasured; -1
 * when both are measured (or absent): the kept level beats its neighbours. */
static int ctl_next_neighbour(const throttle_ctl_t *c, double tolerance)
{
    int b = c->level_cand[ctl_best_index(c, tolerance)], hi = -1, lo = -1;
    for (int i = 0; i < c->ncand; i++) {
        int l = c->level_cand[i];
        if (l > b && (hi < 0 || l < c->level_cand[hi])) hi = i;
        if (l < b && (lo < 0 || l > c->level_cand[lo])) lo = i;
    }
    if (hi >= 0 && c->mbs[hi] <= 0) return hi;
    if (lo >= 0 && c->mbs[lo] <= 0) return lo;
    return -1;
}

/* Where a search starts: the predicted level, else the unthrottled one. */
static int ctl_first_level(const throttle_ctl_t *c) { return c->predicted ? c->predicted : c->nmax; }

/* A relative streams curve at `level`: a power law between its points (straight in log-log), as the cost model
 * reads its curves. */
static double ctl_curve_at(const throttle_curve_t *cv, double level)
{
    const double *x = cv->x, *y = cv->y;
    if (level <= x[0]) return y[0];
    for (int i = 1; i < cv->n; i++)
        if (level <= x[i]) return y[i - 1] * pow(y[i] / y[i - 1], log(level / x[i - 1]) / log(x[i] / x[i - 1]));
    return y[cv->n - 1];
}

/* The I/O time a window at candidate `next` is expected to lose against candidate `keep`, from the curve (0
 * without one, or when it expects no loss). */
static double ctl_expected_loss(const throttle_ctl_t *c, int next, int keep, double window_ns)
{
    if (c->curve.n < 2) return 0;
    double ratio = ctl_curve_at(&c->curve, c->level_cand[next]) / ctl_curve_at(&c->curve, c->level_cand[keep]);
    return ratio < 1 ? window_ns * (1 - ratio) : 0;
}

int throttle_predict_level(const throttle_curve_t *curve, int nmax, double tolerance)
{
    int n = curve ? curve->n : 0;
    if (n < 2 || nmax < 1) return 0; /* one point says nothing of concurrency */
    if (n > THROTTLE_CURVE_POINTS) n = THROTTLE_CURVE_POINTS;
    double top = 0, at[THROTTLE_CURVE_POINTS + 1];
    int level[THROTTLE_CURVE_POINTS + 1], m = 0;
    for (int i = 0; i < n && curve->x[i] <= nmax; i++) level[m++] = (int)curve->x[i];
    if (nmax < curve->x[n - 1] && (m == 0 || level[m - 1] < nmax)) level[m++] = nmax;
    int best = 0;
    for (int i = 0; i < m; i++) {
        at[i] = ctl_curve_at(curve, level[i]);
        if (at[i] > top) top = at[i];
    }
    for (int i = 0; i < m; i++)
        if (at[i] >= top * (1 - tolerance)) best = level[i];
    return best;
}

static void ctl_log_phase(throttle_ctl_t *c, uint64_t bytes, uint64_t busy_ns, uint64_t now_ns)
{
    throttle_phase_t *p = c->nphases ? &c->phase[c->nphases - 1] : NULL;
    int searching = c->state == THROTTLE_SEARCH;
    if (!p || p->level != c->level || p->searching != searching) {
        if (c->nphases >= THROTTLE_PHASES) return;
        p = &c->phase[c->nphases++];
        memset(p, 0, sizeof *p);
        p->level = c->level;
        p->searching = searching;
        p->start_ns = now_ns;
    }
    p->windows++;
    p->bytes += bytes;
    p->busy_ns += busy_ns;
}

void throttle_ctl_init(throttle_ctl_t *c, int nmax, int known, int predicted, const throttle_curve_t *curve)
{
    memset(c, 0, sizeof *c);
    c->nmax = nmax > 0 ? nmax : 1;
    if (curve && curve->n >= 2 && curve->n <= THROTTLE_CURVE_POINTS) c->curve = *curve;
    c->predicted = predicted > 0 ? (predicted < c->nmax ? predicted : c->nmax) : 0;
    ctl_plan(c);
    c->level = ctl_first_level(c);
    if (known > 0) {
        c->level = known < c->nmax ? known : c->nmax;
        c->state = THROTTLE_STEADY;
        c->known = 1;
    } else if (c->nmax == 1) {
        c->state = THROTTLE_STEADY;
    }
}

int throttle_ctl_window(throttle_ctl_t *c, const throttle_knobs_t *k, uint64_t bytes, uint64_t busy_ns, uint64_t now_ns)
{
    if (!busy_ns || !bytes) return c->level;
    double mbs = (double)bytes / (double)busy_ns * 1e3;
    ctl_log_phase(c, bytes, busy_ns, now_ns);
    c->busy_ns += busy_ns;
    if (c->state == THROTTLE_STEADY) {
        if (c->reference <= 0) { /* the first window at a remembered level, or after a search of one level */
            c->reference = mbs;
            return c->level;
        }
        if (fabs(mbs - c->reference) > k->threshold * c->reference) {
            if (++c->deviations < 2) return c->level;
            ctl_plan(c); /* the workload or the device changed: search again, from where the first search did */
            c->level = ctl_first_level(c);
            c->deviations = 0;
            return c->level;
        }
        c->deviations = 0;
        return c->level;
    }
    int i = ctl_find(c, c->level);
    if (i < 0) { /* a level outside the candidates (cannot happen): measure from the plan */
        c->level = ctl_first_level(c);
        return c->level;
    }
    c->mbs[i] = c->mbs[i] > 0 ? (c->mbs[i] + mbs) / 2 : mbs;
    int best = ctl_best_index(c, 0);
    if (c->mbs[best] > mbs) c->loss_ns += (uint64_t)((double)busy_ns * (1 - mbs / c->mbs[best]));
    int next;
    if (c->predicted) { /* the climb: the kept level's neighbours only, no refinement */
        next = ctl_next_neighbour(c, k->tolerance);
    } else {
        next = ctl_next_unmeasured(c);
        if (next < 0 && ctl_refine(c, k->tolerance)) next = ctl_next_unmeasured(c);
    }
    int keep = ctl_best_index(c, k->tolerance);
    if (next < 0) { /* the search is over */
        c->level = c->found = c->level_cand[keep];
        c->reference = c->found_mbs = c->mbs[keep];
        c->state = THROTTLE_STEADY;
        return c->level;
    }
    /* Examine the next level only while the loss so far, and what the profile's curve expects the examination to
     * lose, are within budget; meanwhile the best serves. */
    double loss = (double)c->loss_ns + ctl_expected_loss(c, next, keep, k->window_ns);
    c->level = loss <= k->budget * (double)c->busy_ns ? c->level_cand[next] : c->level_cand[keep];
    return c->level;
}
