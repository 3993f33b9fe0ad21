/* The registry of collective strategies: the index in this table is a strategy's number in the selector, the
 * statistics and the knowledge file. A new strategy is one file with one const table, and one line here. The
 * strategies that choose among these (auto) are listed apart: they serve no call themselves, are no candidates and
 * have no number. */
#include <string.h>

#include "strategy.h"

extern const iotame_strategy_t iotame_strategy_passthrough, iotame_strategy_two_phase, iotame_strategy_node_local,
    iotame_strategy_target_aligned, iotame_strategy_independent, iotame_strategy_view_based;

const iotame_strategy_t *const iotame_strategies[] = {
    &iotame_strategy_passthrough,
    &iotame_strategy_two_phase,
    &iotame_strategy_node_local,
    &iotame_strategy_target_aligned,
    &iotame_strategy_independent,
    &iotame_strategy_view_based,
};
const int iotame_nstrategies = sizeof iotame_strategies / sizeof iotame_strategies[0];

static const iotame_strategy_t *const registry_choosers[] = {&iotame_strategy_auto};
enum { REGISTRY_NCHOOSERS = sizeof registry_choosers / sizeof registry_choosers[0] };

int iotame_strategy_find(const char *name)
{
    for (int i = 0; name && i < iotame_nstrategies; i++)
        if (strcmp(iotame_strategies[i]->name, name) == 0) return i;
    return -1;
}

const iotame_strategy_t *iotame_strategy_named(const char *name)
{
    const int i = iotame_strategy_find(name);
    if (i >= 0) return iotame_strategies[i];
    for (int k = 0; name && k < REGISTRY_NCHOOSERS; k++)
        if (strcmp(registry_choosers[k]->name, name) == 0) return registry_choosers[k];
    return NULL;
}

void iotame__coll_strategies_finalize(void)
{
    for (int i = 0; i < iotame_nstrategies; i++)
        if (iotame_strategies[i]->finalize) iotame_strategies[i]->finalize();
    for (int k = 0; k < REGISTRY_NCHOOSERS; k++)
        if (registry_choosers[k]->finalize) registry_choosers[k]->finalize();
}
