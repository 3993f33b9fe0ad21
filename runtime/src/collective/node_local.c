/* node_local: Orthrus "core-first" (Zhang, Ou, Davis and Jiang, "Orthrus: a framework for implementing efficient
 * collective I/O in multi-core clusters", ISC 2014): one aggregator per node, the node's rank with the most data,
 * takes every request of its node, sorts them by offset and does the I/O, so that no data crosses nodes. Its
 * domain interleaves with the other nodes', so it never writes a byte it was not given: holes between its pieces
 * are skipped, never read-modify-written (reads may read over them). Nodes are MPI_COMM_TYPE_SHARED groups, or
 * virtual nodes of collective.virtual_node_size ranks (the engine's option: it places every engine strategy's
 * aggregators). */
#include <errno.h>
#include <stdlib.h>

#include "strategy.h"

static int node_local_run(iotame_coll_call_t *c)
{
    const iotame_coll_env_t *e = c->env;
    int *agg_rank = malloc((size_t)e->nnodes * sizeof *agg_rank);
    int64_t *most = malloc((size_t)e->nnodes * sizeof *most);
    if (!agg_rank || !most) {
        free(agg_rank);
        free(most);
        return iotame_coll_engine(c, NULL); /* joins the other ranks' agreement, and fails it */
    }
    for (int n = 0; n < e->nnodes; n++) {
        agg_rank[n] = -1;
        most[n] = -1;
    }
    /* Every rank decides from the same gathered byte counts, so every rank picks the same aggregators. */
    for (int r = 0; r < e->nprocs; r++) {
        int n = e->node_of[r];
        int64_t bytes = c->info[(size_t)r * IOTAME_INFO_FIELDS + IOTAME_INFO_BYTES];
        if (bytes > most[n]) {
            most[n] = bytes;
            agg_rank[n] = r;
        }
    }
    iotame_plan_t plan = {
        .nagg = e->nnodes,
        .agg_rank = agg_rank,
        .kind = IOTAME_DOMAINS_BY_SOURCE,
        .agg_of_rank = e->node_of,
        .window = e->cb_buffer_size < 4096 ? 4096 : e->cb_buffer_size > ((int64_t)1 << 30) ? (int64_t)1 << 30 : e->cb_buffer_size,
        .fill_holes = 0,
    };
    int rc = iotame_coll_engine(c, &plan);
    free(agg_rank);
    free(most);
    return rc;
}

const iotame_strategy_t iotame_strategy_node_local = {
    .name = "node_local",
    .summary = "Orthrus core-first: one aggregator per node (the rank with the most data), no inter-node exchange",
    .number = 2,
    .model = IOTAME_MODEL_NODE_LOCAL,
    .setup = iotame_coll_engine_setup,
    .teardown = iotame_coll_engine_teardown,
    .write_all = node_local_run,
    .read_all = node_local_run,
    .write_at_all = node_local_run,
    .read_at_all = node_local_run,
};
