/* Unit tests of the aggregation engine's domains (runtime/src/collective/domains.h): for even, striped and
 * by-source plans, every byte of a range is cut into pieces that each lie in one round (window) of one aggregator,
 * that aggregator owns the byte, positions run on inside a piece and grow with the offset in a domain, the cached
 * cut answers as the plain one, and a group never runs past the end of an aggregator's stripe. No MPI calls. */
#include <stdio.h>
#include <stdlib.h>

#include "collective/domains.h"

#include "check.h"

/* The aggregator that owns byte o of rank src, from the plan's definition (strategy.h). */
static int owner(const iotame_plan_t *p, int src, int64_t o)
{
    switch (p->kind) {
    case IOTAME_DOMAINS_EVEN:
        for (int a = 0; a < p->nagg; a++)
            if (p->bounds[a] <= o && o < p->bounds[a + 1]) return a;
        return -1;
    case IOTAME_DOMAINS_STRIPED: return (int)(o / p->unit % p->nagg);
    default: return p->agg_of_rank[src];
    }
}

/* Walks [lo, hi) of rank src in cuts: every cut is a run of one aggregator's window, owned by it, whose positions
 * run on; the cached cut gives the same answers. Returns the number of cuts. */
static int walk(const iotame_plan_t *p, int src, int64_t lo, int64_t hi)
{
    domain_cache_t k = {0, 0, 0, 0};
    int cuts = 0, bad = 0;
    int64_t last_pos[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    for (int64_t o = lo; o < hi; cuts++) {
        int agg, cagg;
        int64_t win, cwin;
        const int64_t n = domain_cut(p, src, o, &agg, &win);
        const int64_t cn = domain_cut_cached(p, src, o, &cagg, &cwin, &k);
        bad |= n <= 0 || cn != n || cagg != agg || cwin != win;
        const int64_t end = o + n < hi ? o + n : hi;
        for (int64_t b = o; b < end && !bad; b += (end - o + 7) / 8) { /* a few bytes of the piece */
            bad |= owner(p, src, b) != agg;
            bad |= domain_pos(p, agg, b) != domain_pos(p, agg, o) + (b - o); /* positions run on */
            bad |= domain_pos(p, agg, b) / p->window != win;
        }
        bad |= domain_pos(p, agg, end - 1) / p->window != win;
        bad |= domain_pos(p, agg, o) <= last_pos[agg]; /* positions grow with the offset in a domain */
        bad |= domain_run_end(p, o) < end;             /* a group starting at o may run to the piece's end */
        last_pos[agg] = domain_pos(p, agg, end - 1);
        if (n < hi - o) { /* a piece ends where the aggregator or the window changes */
            int next_agg;
            int64_t next_win;
            domain_cut(p, src, o + n, &next_agg, &next_win);
            bad |= next_agg == agg && next_win == win;
        }
        if (bad) {
            fprintf(stderr, "plan kind %d: cut at %lld (agg %d, window %lld, %lld bytes) is wrong\n", p->kind,
                    (long long)o, agg, (long long)win, (long long)n);
            failures++;
            return cuts;
        }
        o += n;
    }
    return cuts;
}

static void test_even_domains(void)
{
    const int64_t bounds[4] = {100, 5000, 9000, 12345}; /* three aggregators, domains of uneven length */
    const int ranks[3] = {0, 1, 2};
    const iotame_plan_t p = {.nagg = 3, .agg_rank = ranks, .kind = IOTAME_DOMAINS_EVEN, .bounds = bounds,
                             .window = 1024};
    const int cuts = walk(&p, 0, 100, 12345);
    CHECK(cuts == 5 + 4 + 4); /* windows of 1024 bytes from each domain's start */
    int agg;
    int64_t win;
    CHECK(domain_cut(&p, 1, 5000 + 2048 + 7, &agg, &win) == 1024 - 7 && agg == 1 && win == 2);
    CHECK(domain_pos(&p, 2, 9000) == 0 && domain_run_end(&p, 100) == INT64_MAX);
}

static void test_striped_domains(void)
{
    const int ranks[4] = {0, 2, 1, 3};
    for (int nagg = 1; nagg <= 4; nagg++)
        for (int64_t window = 4096; window <= 3 * 4096; window += 4096) {
            const iotame_plan_t p = {.nagg = nagg, .agg_rank = ranks, .kind = IOTAME_DOMAINS_STRIPED, .unit = 4096,
                                     .window = window};
            walk(&p, 1, 333, 17 * 4096 + 5);
        }
    const iotame_plan_t p = {.nagg = 3, .agg_rank = ranks, .kind = IOTAME_DOMAINS_STRIPED, .unit = 1000,
                             .window = 2000};
    int agg;
    int64_t win;
    /* stripe 7 is aggregator 1's third (position 2000..2999): its second window */
    CHECK(domain_cut(&p, 0, 7250, &agg, &win) == 750 && agg == 1 && win == 1);
    CHECK(domain_pos(&p, 1, 7250) == 2250 && domain_run_end(&p, 7250) == 8000);
    CHECK(walk(&p, 0, 0, 12000) == 12); /* one cut per stripe */
}

static void test_domains_by_source(void)
{
    const int node_of[4] = {0, 0, 1, 1}, leaders[2] = {0, 2};
    const iotame_plan_t p = {.nagg = 2, .agg_rank = leaders, .kind = IOTAME_DOMAINS_BY_SOURCE,
                             .agg_of_rank = node_of, .window = 1 << 20};
    for (int src = 0; src < 4; src++) CHECK(walk(&p, src, 12345, 5 << 20) == 5);
    int agg;
    int64_t win;
    CHECK(domain_cut(&p, 3, (3 << 20) + 5, &agg, &win) == (1 << 20) - 5 && agg == 1 && win == 3);
}

static void test_random_plans(void)
{
    srand(20261127);
    for (int trial = 0; trial < 300; trial++) {
        const int nagg = 1 + rand() % 6;
        int64_t bounds[8], span = 1 + rand() % 100000, base = rand() % 5000;
        int ranks[8], node_of[8];
        for (int a = 0; a < 8; a++) ranks[a] = a, node_of[a] = a % nagg;
        bounds[0] = base;
        for (int a = 1; a < nagg; a++) bounds[a] = bounds[a - 1] + rand() % (span / nagg + 1);
        bounds[nagg] = base + span;
        const int64_t unit = 1 + rand() % 3000, window = (1 + rand() % 4) * (rand() % 2 ? unit : 1 + rand() % 5000);
        const iotame_plan_t even = {.nagg = nagg, .agg_rank = ranks, .kind = IOTAME_DOMAINS_EVEN, .bounds = bounds,
                                    .window = window};
        const iotame_plan_t striped = {.nagg = nagg, .agg_rank = ranks, .kind = IOTAME_DOMAINS_STRIPED, .unit = unit,
                                       .window = window / unit * unit > 0 ? window / unit * unit : unit};
        const iotame_plan_t by_source = {.nagg = nagg, .agg_rank = ranks, .kind = IOTAME_DOMAINS_BY_SOURCE,
                                         .agg_of_rank = node_of, .window = window};
        const int64_t lo = base + rand() % (span / 2 + 1), hi = lo + 1 + rand() % (base + span - lo);
        walk(&even, 0, lo, hi);
        walk(&striped, 0, lo, hi);
        walk(&by_source, rand() % 8, lo, hi);
        if (failures) return;
    }
}

int main(void)
{
    test_even_domains();
    test_striped_domains();
    test_domains_by_source();
    test_random_plans();
    if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
