/* staging.collective "auto": whether a handle's collective writes are cached at view_based's aggregators or staged
 * per node, decided by the cost model at the first call that could be cached (docs/design/aggregator-caching.md,
 * section 6): from that call's gathered facts and the machine profile of the file's file system, caching where the
 * time in the end (what the application sees and the flushers' device time behind it) is below node staging's by
 * more than the model's error. Without a profile agreed by every rank the writes stay with node staging. */
#include <stdio.h>
#include <stdlib.h>

#include "strategy.h"

int iotame__coll_cache_decide(const iotame_coll_env_t *e, const iotame_coll_facts_t *g, int64_t block,
                              const char *profile, double error, const iotame_sink_t *sink, void *sink_arg)
{
    iotame_profile_found_t *found = malloc(sizeof *found);
    char *refused = NULL;
    const int have = found && iotame_profile_find(e->path, profile, found, &refused);
    double node = 0, cached = 0;
    int pays = 0;
    if (have) {
        const iotame_model_call_t call = {.write = 1,
                                          .nprocs = e->nprocs,
                                          .nodes = e->nnodes,
                                          .bytes = g->gbytes,
                                          .pieces = (g->requests + e->nprocs - 1) / e->nprocs,
                                          .interleaved = iotame__coll_interleaved(g),
                                          .block_size = block};
        pays = iotame_model_cache_pays(&found->profile, &call, error, &node, &cached);
    }
    /* the same profile on every rank (its hash: max and -min), and whether any rank's prediction says no */
    int64_t mine[3] = {have ? found->hash : 0, have ? -(int64_t)found->hash : 0, !pays}, all[3];
    PMPI_Allreduce(mine, all, 3, MPI_INT64_T, MPI_MAX, e->comm);
    const int agreed = all[0] != 0 && all[0] == -all[1], decision = agreed && !all[2];
    char why[160];
    if (!agreed)
        snprintf(why, sizeof why, "%s", all[0] == 0 && all[1] == 0 ? "no machine profile"
                                                                    : "the ranks found different machine profiles");
    else
        snprintf(why, sizeof why, "the model: %.3g s cached, %.3g s node staging (application and device)", cached,
                 node);
    sink->decided(sink_arg, decision, why);
    free(found);
    free(refused);
    return decision;
}
