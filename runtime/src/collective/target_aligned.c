/* target_aligned: Orthrus "disk-first" (Zhang, Ou, Davis and Jiang, ISC 2014; a simplified Resonant I/O, Zhang,
 * Jiang and Davis, IPDPS 2009): one aggregator per storage target, so that every request a target receives comes
 * from one process, in ascending file offset. The file is striped round-robin over `targets` targets in units of
 * `target_unit` bytes (collective.targets / target_unit, else the striping_factor / striping_unit hints, else one
 * target: a local file system); the aggregator of target t serves stripes t, t + targets, ... in rounds of
 * cb_buffer_size bytes, lowest offset first. With more targets than ranks each aggregator serves whole targets. */
#include "strategy.h"

static int64_t largest_divisor_at_most(int64_t n, int64_t most)
{
    for (int64_t d = most; d > 1; d--)
        if (n % d == 0) return d;
    return 1;
}

static int target_aligned_run(iotame_coll_call_t *c)
{
    const iotame_coll_env_t *e = c->env;
    int64_t targets = e->targets > 0 ? e->targets : 1;
    int64_t unit = e->target_unit > 0 ? e->target_unit : (int64_t)1 << 20;
    /* RATIONALE: each target must belong to one aggregator; with more targets than ranks, the aggregators are the
     * largest divisor of the target count that fits, each serving targets a, a + nagg, ... */
    int nagg = (int)(targets <= e->nprocs ? targets : largest_divisor_at_most(targets, e->nprocs));
    int64_t window = e->cb_buffer_size / unit * unit;
    if (window < unit) window = unit;
    if (window > ((int64_t)1 << 30)) window = ((int64_t)1 << 30) / unit * unit > 0 ? ((int64_t)1 << 30) / unit * unit : unit;
    iotame_plan_t plan = {
        .nagg = nagg,
        .agg_rank = e->spread,
        .kind = IOTAME_DOMAINS_STRIPED,
        .unit = unit,
        .window = window,
        .fill_holes = 1,
    };
    return iotame_coll_engine(c, &plan);
}

const iotame_strategy_t iotame_strategy_target_aligned = {
    .name = "target_aligned",
    .summary = "Orthrus disk-first: one aggregator per storage target, requests in ascending offset",
    .options = (const char *const[]){"targets", "target_unit", NULL},
    .setup = iotame_coll_engine_setup,
    .teardown = iotame_coll_engine_teardown,
    .write_all = target_aligned_run,
    .read_all = target_aligned_run,
    .write_at_all = target_aligned_run,
    .read_at_all = target_aligned_run,
};
