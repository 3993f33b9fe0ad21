/* The registry's look-ups. The strategies' table itself (iotame_strategies, each at its .number) is generated at
 * build time from the strategy files (cmake/strategy_registry.cmake): a new strategy is one file, and no line here.
 * The choosers (auto) are listed apart: they serve no call themselves, are no candidates and have no number. */
#include <string.h>

#include "strategy.h"

static const iotame_chooser_t *const registry_choosers[] = {&iotame_chooser_auto};
enum { REGISTRY_NCHOOSERS = sizeof registry_choosers / sizeof registry_choosers[0] };

int iotame_strategy_find(const char *name)
{
    for (int i = 0; name && i < iotame_nstrategies; i++)
        if (strcmp(iotame_strategies[i]->name, name) == 0) return i;
    return -1;
}

const iotame_chooser_t *iotame_chooser_named(const char *name)
{
    for (int k = 0; name && k < REGISTRY_NCHOOSERS; k++)
        if (strcmp(registry_choosers[k]->name, name) == 0) return registry_choosers[k];
    return NULL;
}

void iotame__coll_choosers_finalize(void)
{
    for (int k = 0; k < REGISTRY_NCHOOSERS; k++)
        if (registry_choosers[k]->finalize) registry_choosers[k]->finalize();
}
