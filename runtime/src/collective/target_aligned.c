/* target_aligned: Orthrus "disk-first" (Zhang, Ou, Davis and Jiang, ISC 2014; a simplified Resonant I/O, Zhang,
 * Jiang and Davis, IPDPS 2009): one aggregator per storage target, so that every request a target receives comes
 * from one process, in ascending file offset. The file is striped round-robin over `targets` targets in units of
 * `target_unit` bytes (collective.targets / target_unit, else the file system's own layout of the file, else the
 * striping_factor / striping_unit hints, else the emulated storage's layout, else one target: a local file system);
 * the aggregator of target t serves stripes t, t + targets, ... in rounds of cb_buffer_size bytes, lowest offset
 * first. With more targets than ranks each aggregator serves whole targets. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>

#include "posix/posix.h"
#include "strategy.h"

/* The strategy's options of a handle (0: not set). */
typedef struct {
    int64_t targets, unit;
} target_aligned_t;

/* The targets aligned to, and where they came from. */
typedef struct {
    int64_t count, unit;
    const char *from; /* configuration, lustre or cephfs (the file system's own layout), hints, layout (the emulated
                         storage's) or default */
} target_aligned_targets_t;

static int target_aligned_open(const iotame_coll_options_t *o, void **state)
{
    target_aligned_t *t = malloc(sizeof *t);
    if (!t) return -ENOMEM;
    t->targets = iotame_coll_option_int(o, "targets", 0);
    t->unit = iotame_coll_option_int(o, "target_unit", 0);
    *state = t;
    return 0;
}

static void target_aligned_close(void *state) { free(state); }

/* targets and target_unit, each on its own: the configuration's, else the file system's own layout (Lustre's,
 * CephFS's: what the file has, whatever the hints asked for), else the striping hints', else the emulated storage's
 * layout, else one target of 1 MiB. */
static target_aligned_targets_t target_aligned_targets(const iotame_coll_env_t *e, const target_aligned_t *t)
{
    target_aligned_targets_t x;
    const int own = e->layout_from == IOTAME_POSIX_FROM_LUSTRE || e->layout_from == IOTAME_POSIX_FROM_CEPHFS;
    if (t->targets > 0) x.count = t->targets, x.from = "configuration";
    else if (own) x.count = e->layout_targets, x.from = iotame_posix_from_name(e->layout_from);
    else if (e->striping_factor > 0) x.count = e->striping_factor, x.from = "hints";
    else if (e->layout_targets > 1) x.count = e->layout_targets, x.from = "layout";
    else x.count = 1, x.from = "default";
    x.unit = t->unit > 0                  ? t->unit
             : own && e->layout_unit > 0  ? e->layout_unit
             : e->striping_unit > 0       ? e->striping_unit
             : e->layout_unit > 0         ? e->layout_unit
                                          : 1048576;
    return x;
}

/* The file's statistics say what target_aligned aligns to and why ("storage_targets"; the same on every rank), once
 * the engine knows the file's hints and layout, whichever engine strategy set it up. */
static void target_aligned_environment(const iotame_coll_env_t *e, void *state)
{
    const target_aligned_targets_t x = target_aligned_targets(e, state);
    json_t *coll = iotame_stats_collective(iotame_stats_file(e->path));
    if (coll)
        json_object_set_new(coll, "storage_targets", json_pack("{s:I,s:I,s:s}", "count", (json_int_t)x.count, "unit",
                                                               (json_int_t)x.unit, "from", x.from));
}

static int64_t largest_divisor_at_most(int64_t n, int64_t most)
{
    for (int64_t d = most; d > 1; d--)
        if (n % d == 0) return d;
    return 1;
}

static int target_aligned_run(iotame_coll_call_t *c)
{
    const iotame_coll_env_t *e = c->env;
    const target_aligned_targets_t x = target_aligned_targets(e, c->state);
    int64_t targets = x.count > 0 ? x.count : 1;
    int64_t unit = x.unit > 0 ? x.unit : (int64_t)1 << 20;
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
    .number = 3,
    .model = IOTAME_MODEL_TARGET_ALIGNED,
    .options = (const char *const[]){"targets", "target_unit", NULL},
    .open = target_aligned_open,
    .close = target_aligned_close,
    .setup = iotame_coll_engine_setup,
    .teardown = iotame_coll_engine_teardown,
    .environment = target_aligned_environment,
    .write_all = target_aligned_run,
    .read_all = target_aligned_run,
    .write_at_all = target_aligned_run,
    .read_at_all = target_aligned_run,
};
