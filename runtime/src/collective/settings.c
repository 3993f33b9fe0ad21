/* A file's collective settings, read at its open: what the router reads itself (the strategy, and staging.collective
 * auto's model error), and the accessors through which each strategy, the chooser and the engine read their own
 * options.
 * Each is the file's value, else its default in runtime/settings.json (one source of truth), through the core's
 * iotame_config_setting. */
#include <jansson.h>
#include <string.h>

#include "strategy.h"

static const json_t *settings_value(const iotame_file_config_t *fc, const char *key)
{
    return iotame_config_setting(fc, "collective", key);
}

const json_t *iotame_coll_option(const iotame_coll_options_t *o, const char *key)
{
    for (const char *const *k = o->own; k && *k; k++)
        if (strcmp(*k, key) == 0) return settings_value(o->fc, key);
    return NULL; /* not the reader's own */
}

int64_t iotame_coll_option_int(const iotame_coll_options_t *o, const char *key, int64_t unset)
{
    const json_t *v = iotame_coll_option(o, key);
    return v ? (int64_t)json_integer_value(v) : unset;
}

double iotame_coll_option_number(const iotame_coll_options_t *o, const char *key)
{
    return json_number_value(iotame_coll_option(o, key));
}

const char *iotame_coll_option_string(const iotame_coll_options_t *o, const char *key)
{
    const char *s = json_string_value(iotame_coll_option(o, key));
    return s && *s ? s : NULL;
}

int iotame__coll_settings(const iotame_file_config_t *fc, iotame_coll_settings_t *set)
{
    *set = (iotame_coll_settings_t){0};
    const char *name = json_string_value(settings_value(fc, "strategy"));
    if (!name) name = "passthrough";
    const int s = iotame_strategy_find(name);
    set->strategy = s >= 0 ? iotame_strategies[s] : NULL;
    set->chooser = s >= 0 ? NULL : iotame_chooser_named(name);
    if (s <= 0 && !set->chooser) return 0; /* the library's own (or no strategy of that name): nothing more */
    set->model_error = json_number_value(settings_value(fc, "model_error"));
    return 1;
}
