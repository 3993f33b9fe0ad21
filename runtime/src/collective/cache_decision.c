/* staging.collective "auto": whether a handle's collective writes are cached at view_based's aggregators or staged
 * per node, decided by the cost model at the first call that could be cached (docs/design/aggregator-caching.md,
 * section 6): from that call's gathered facts and the machine profile of the file's file system, caching where the
 * time in the end (what the application sees and the flushers' device time behind it) is below node staging's by
 * more than the model's error. The profile is the file record's, which every rank found, and the facts are every
 * rank's alike, so every rank decides alike without a collective. Without a profile the writes stay with node
 * staging. */
#include <stdio.h>

#include "strategy.h"

int iotame__coll_cache_decide(const iotame_coll_env_t *e, const iotame_coll_facts_t *g, int64_t block,
                              const iotame_file_profile_t *profile, double error, const iotame_sink_t *sink,
                              void *sink_arg)
{
    const iotame_profile_found_t *found = profile->found; /* agreed by every rank at the open */
    double node = 0, cached = 0;
    int pays = 0;
    if (found) {
        const iotame_model_call_t call = {.write = 1,
                                          .nprocs = e->nprocs,
                                          .nodes = e->nnodes,
                                          .bytes = g->gbytes,
                                          .pieces = (g->requests + e->nprocs - 1) / e->nprocs,
                                          .interleaved = iotame__coll_interleaved(g),
                                          .block_size = block};
        pays = iotame_model_cache_pays(&found->profile, &call, error, &node, &cached);
    }
    const int decision = found && pays;
    char why[160];
    if (!found)
        snprintf(why, sizeof why, "%s", profile->differs ? "the ranks found different machine profiles"
                                                          : "no machine profile");
    else
        snprintf(why, sizeof why, "the model: %.3g s cached, %.3g s node staging (application and device)", cached,
                 node);
    sink->decided(sink_arg, decision, why);
    return decision;
}
