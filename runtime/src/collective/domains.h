/* The domains of an aggregation plan (iotame_plan_t): which aggregator and round (window) a file byte belongs to,
 * and where it lies in the aggregator's domain. Pure arithmetic, internal to collective/ (engine.c and
 * tests/unit/test_domains.c); inline, since the engine asks for every piece of a call. */
#ifndef IOTAME_COLLECTIVE_DOMAINS_H
#define IOTAME_COLLECTIVE_DOMAINS_H

#include <stdint.h>

#include "strategy.h"

static inline int64_t domain_min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Position of file offset o in aggregator a's domain: windows are ranges of positions. */
static inline int64_t domain_pos(const iotame_plan_t *p, int a, int64_t o)
{
    switch (p->kind) {
    case IOTAME_DOMAINS_EVEN: return o - p->bounds[a];
    case IOTAME_DOMAINS_STRIPED:
        if (p->nagg == 1) return o;
        return (o / (p->unit * p->nagg)) * p->unit + o % p->unit;
    default: return o;
    }
}

/* The aggregator and window of byte o of rank `src`, and how many bytes from o stay in them. */
static inline int64_t domain_cut(const iotame_plan_t *p, int src, int64_t o, int *agg, int64_t *win)
{
    const int64_t B = p->window;
    switch (p->kind) {
    case IOTAME_DOMAINS_EVEN: {
        int lo = 0, hi = p->nagg; /* the last a with bounds[a] <= o */
        while (hi - lo > 1) {
            int mid = (lo + hi) / 2;
            if (p->bounds[mid] <= o) lo = mid;
            else hi = mid;
        }
        int64_t pos = o - p->bounds[lo];
        *agg = lo;
        *win = pos / B;
        return domain_min64(p->bounds[lo + 1], p->bounds[lo] + (*win + 1) * B) - o;
    }
    case IOTAME_DOMAINS_STRIPED:
        if (p->nagg > 1) {
            int64_t stripe = o / p->unit, pos = domain_pos(p, 0, o);
            *agg = (int)(stripe % p->nagg);
            *win = pos / B;
            return domain_min64((stripe + 1) * p->unit - o, (*win + 1) * B - pos);
        }
        *agg = 0;
        break;
    default:
        *agg = p->agg_of_rank[src];
    }
    *win = o / B;
    return (*win + 1) * B - o;
}

/* domain_cut() for runs of small extents: the last answer holds for every offset up to the boundary it found (the
 * same aggregator and window), so most extents of a small-piece pattern need no division. One per source. */
typedef struct {
    int64_t lo, hi, win;
    int agg;
} domain_cache_t;

static inline int64_t domain_cut_cached(const iotame_plan_t *p, int src, int64_t o, int *agg, int64_t *win,
                                        domain_cache_t *k)
{
    if (o < k->lo || o >= k->hi) {
        int64_t n = domain_cut(p, src, o, &k->agg, &k->win);
        k->lo = o;
        k->hi = o + n;
    }
    *agg = k->agg;
    *win = k->win;
    return k->hi - o;
}

/* Where the aggregator's positions stop running on from file offset g (striped domains: the next stripe of an
 * aggregator is elsewhere in the file); a group that starts at g ends there at the latest. */
static inline int64_t domain_run_end(const iotame_plan_t *p, int64_t g)
{
    return p->kind == IOTAME_DOMAINS_STRIPED && p->nagg > 1 ? (g / p->unit + 1) * p->unit : INT64_MAX;
}

#endif
