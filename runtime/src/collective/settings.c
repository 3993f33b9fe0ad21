/* A file's collective settings, read in one place at its open: the strategy, the strategies' options and the
 * selector's (auto) settings. Each is the file's value, else its default in runtime/settings.json (one source of
 * truth), through the core's iotame_config_setting. */
#include <jansson.h>
#include <string.h>

#include "strategy.h"

static const json_t *settings_value(const iotame_file_config_t *fc, const char *key)
{
    return iotame_config_setting(fc, "collective", key);
}

static int64_t settings_int(const iotame_file_config_t *fc, const char *key, int64_t unset)
{
    const json_t *v = settings_value(fc, key);
    return v ? (int64_t)json_integer_value(v) : unset;
}

static double settings_number(const iotame_file_config_t *fc, const char *key)
{
    return json_number_value(settings_value(fc, key));
}

/* The candidates in the configured order, each once (registry indices); passthrough alone when none is named. */
static void settings_candidates(const iotame_file_config_t *fc, iotame_coll_settings_t *set)
{
    size_t i;
    json_t *item;
    set->ncandidates = 0;
    json_array_foreach((json_t *)settings_value(fc, "candidates"), i, item) {
        int s = iotame_strategy_find(json_string_value(item)), dup = 0;
        for (int k = 0; k < set->ncandidates; k++) dup |= set->candidates[k] == s;
        if (s >= 0 && !dup && set->ncandidates < IOTAME_STRATEGY_MAX) set->candidates[set->ncandidates++] = s;
    }
    if (set->ncandidates == 0) set->candidates[set->ncandidates++] = 0; /* settings.json without a default */
}

int iotame__coll_settings(const iotame_file_config_t *fc, iotame_coll_settings_t *set)
{
    *set = (iotame_coll_settings_t){0};
    const char *name = json_string_value(settings_value(fc, "strategy"));
    set->strategy = iotame_strategy_named(name ? name : "passthrough");
    if (!set->strategy || set->strategy == iotame_strategies[0]) return 0; /* the library's own: nothing more */
    set->virtual_node_size = settings_int(fc, "virtual_node_size", 0);
    set->targets = settings_int(fc, "targets", 0);
    set->target_unit = settings_int(fc, "target_unit", 0);
    set->block_size = settings_int(fc, "block_size", 0);
    settings_candidates(fc, set);
    set->exam_calls = (int)settings_int(fc, "exam_calls", 0);
    set->trace = settings_int(fc, "trace", 0);
    set->threshold = settings_number(fc, "threshold");
    set->exam_budget = settings_number(fc, "exam_budget");
    set->window_seconds = settings_number(fc, "window_seconds");
    set->drop = settings_number(fc, "drop");
    set->retry_every = (int)settings_int(fc, "retry_every", 0);
    set->threshold_max = settings_number(fc, "threshold_max");
    set->gate_calls = settings_number(fc, "gate_calls");
    set->window_max_seconds = settings_number(fc, "window_max_seconds");
    set->steady_windows = (int)settings_int(fc, "steady_windows", 0);
    set->readahead = settings_int(fc, "readahead", -1);
    const char *knowledge = json_string_value(settings_value(fc, "knowledge"));
    set->knowledge = knowledge && *knowledge ? knowledge : NULL;
    set->model_error = settings_number(fc, "model_error");
    return 1;
}
