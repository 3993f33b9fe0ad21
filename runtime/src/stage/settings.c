/* The stage module's settings, read in one place: a file's at its open, the job's at MPI_Init. Each is the file's
 * value, else its default in runtime/settings.json (one source of truth), through the core's iotame_config_setting;
 * staging.enabled (true, false or "auto") and staging.collective are decoded here only. */
#include <string.h>

#include "handle.h"

static stage_enabled_t stage_settings_decode_enabled(const json_t *v)
{
    if (json_is_true(v)) return STAGE_ENABLED_ON;
    if (json_is_string(v) && strcmp(json_string_value(v), "auto") == 0) return STAGE_ENABLED_AUTO;
    return STAGE_ENABLED_OFF;
}

static stage_collective_t stage_settings_decode_collective(const json_t *v)
{
    const char *s = json_string_value(v);
    if (s && strcmp(s, "aggregators") == 0) return STAGE_COLLECTIVE_AGGREGATORS;
    if (s && strcmp(s, "auto") == 0) return STAGE_COLLECTIVE_AUTO;
    return STAGE_COLLECTIVE_NODE;
}

static const json_t *stage_settings_value(const iotame_file_config_t *fc, const char *key)
{
    return iotame_config_setting(fc, "staging", key);
}

void stage_settings_read(const iotame_file_config_t *fc, stage_settings_t *set)
{
    *set = (stage_settings_t){0};
    if (!fc) return;
    set->enabled = stage_settings_decode_enabled(stage_settings_value(fc, "enabled"));
    set->collective = stage_settings_decode_collective(stage_settings_value(fc, "collective"));
    set->prefetch = json_is_true(stage_settings_value(fc, "prefetch"));
    set->sync_on_close = json_is_true(stage_settings_value(fc, "sync_on_close"));
}

json_t *stage_settings_enabled_json(stage_enabled_t e)
{
    return e == STAGE_ENABLED_AUTO ? json_string("auto") : json_boolean(e == STAGE_ENABLED_ON);
}

/* The predicates iotame_config_any asks of every rule's value. */
static int stage_settings_is_on(const json_t *v) { return stage_settings_decode_enabled(v) != STAGE_ENABLED_OFF; }
static int stage_settings_is_enabled(const json_t *v) { return stage_settings_decode_enabled(v) == STAGE_ENABLED_ON; }
static int stage_settings_is_true(const json_t *v) { return json_is_true(v); }
static int stage_settings_is_aggregators(const json_t *v)
{
    return stage_settings_decode_collective(v) != STAGE_COLLECTIVE_NODE;
}

void stage_settings_job(const iotame_config_t *cfg, stage_job_settings_t *job)
{
    const iotame_file_config_t process = {.defaults = &cfg->defaults};
    *job = (stage_job_settings_t){
        .any_on = iotame_config_any(cfg, "staging", "enabled", stage_settings_is_on),
        .any_true = iotame_config_any(cfg, "staging", "enabled", stage_settings_is_enabled),
        .any_prefetch = iotame_config_any(cfg, "staging", "prefetch", stage_settings_is_true),
        .any_aggregators = iotame_config_any(cfg, "staging", "collective", stage_settings_is_aggregators),
        .threshold = json_number_value(stage_settings_value(&process, "flush_threshold")),
        .flush_delay_ms = json_number_value(stage_settings_value(&process, "flush_delay_ms")),
        .cache_bytes = (uint64_t)json_number_value(stage_settings_value(&process, "cache_mb")) << 20,
        .prefetch_bytes = (uint64_t)json_number_value(stage_settings_value(&process, "prefetch_kb")) << 10,
    };
}
