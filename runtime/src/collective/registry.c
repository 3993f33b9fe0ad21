/* The registry of collective strategies: the index in this table is a strategy's number in the selector, the
 * statistics and the knowledge file. A new strategy is one file with one const table, and one line here. */
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

int iotame_strategy_find(const char *name)
{
    for (int i = 0; name && i < iotame_nstrategies; i++)
        if (strcmp(iotame_strategies[i]->name, name) == 0) return i;
    return -1;
}
