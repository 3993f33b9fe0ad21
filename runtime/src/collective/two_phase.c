/* two_phase: ROMIO's collective buffering (Thakur, Gropp and Lusk, "Data sieving and collective I/O in ROMIO",
 * 1999): the accessed range [first byte, last byte) of all ranks is divided into cb_nodes even file domains,
 * aligned to the striping unit when the file has one, each served by one aggregator in rounds of cb_buffer_size
 * bytes, with read-modify-write only for groups of pieces that leave holes. Aggregators are spread over the nodes
 * (the first rank of every node, then the second, ...), as ROMIO's default cb_config_list "*:1" places them. */
#include <errno.h>
#include <stdlib.h>

#include "strategy.h"

static int64_t two_phase_clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static int two_phase_run(iotame_coll_call_t *c)
{
    const iotame_coll_env_t *e = c->env;
    int nagg = (int)two_phase_clamp(e->cb_nodes, 1, e->nprocs);
    int64_t *bounds = malloc(((size_t)nagg + 1) * sizeof *bounds);
    if (!bounds) return iotame_coll_engine(c, NULL); /* joins the other ranks' agreement, and fails it */
    int64_t span = c->gmax - c->gmin, align = e->striping_unit > 0 ? e->striping_unit : 1;
    int64_t size = (span + nagg - 1) / nagg;
    size = (size + align - 1) / align * align;
    int64_t base = c->gmin / align * align;
    bounds[0] = c->gmin;
    for (int a = 1; a < nagg; a++) bounds[a] = two_phase_clamp(base + a * size, c->gmin, c->gmax);
    bounds[nagg] = c->gmax;
    iotame_plan_t plan = {
        .nagg = nagg,
        .agg_rank = e->spread,
        .kind = IOTAME_DOMAINS_EVEN,
        .bounds = bounds,
        .window = two_phase_clamp(e->cb_buffer_size, 4096, (int64_t)1 << 30),
        .fill_holes = 1,
    };
    int rc = iotame_coll_engine(c, &plan);
    free(bounds);
    return rc;
}

const iotame_strategy_t iotame_strategy_two_phase = {
    .name = "two_phase",
    .summary = "even, stripe-aligned file domains among cb_nodes aggregators, rounds of cb_buffer_size",
    .number = 1,
    .model = IOTAME_MODEL_TWO_PHASE,
    .setup = iotame_coll_engine_setup,
    .teardown = iotame_coll_engine_teardown,
    .write_all = two_phase_run,
    .read_all = two_phase_run,
    .write_at_all = two_phase_run,
    .read_at_all = two_phase_run,
};
