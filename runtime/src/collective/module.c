/* The collective part as a module (core/module.h): routing of the blocking collective data calls of files whose
 * collective.strategy is not passthrough (route.c holds the hooks of a handle, whose state is the module's slot of
 * the core's record), and the "collective" statistics section (decisions, strategies). */
#include <jansson.h>
#include <string.h>

#include "core/module.h"
#include "strategy.h"

/* Whether a collective.strategy value routes the file's collective calls (not the library's own). */
static int collective_routes(const json_t *strategy)
{
    const char *name = json_string_value(strategy);
    return name && strcmp(name, "passthrough") != 0;
}

/* Active when some rule of the configuration, or the settings' default, routes a file: otherwise every collective
 * call is the library's and the data path does not even ask. */
/* auto predicts a new signature's strategy from the machine profile. */
static int collective_predicts(const iotame_file_config_t *fc)
{
    const char *name = json_string_value(iotame_config_setting(fc, "collective", "strategy"));
    return name && strcmp(name, "auto") == 0;
}

static int collective_start(const iotame_config_t *cfg)
{
    return iotame_config_any(cfg, "collective", "strategy", collective_routes);
}

static void collective_add_int(json_t *o, const char *key, int64_t n)
{
    json_object_set_new(o, key, json_integer(json_integer_value(json_object_get(o, key)) + n));
}

void iotame__coll_count(iotame_file_stats_t *fs, int s, int64_t calls, int64_t bytes, double seconds,
                        int64_t list_bytes, int64_t view_bytes)
{
    json_t *coll = iotame_stats_collective(fs), *all, *o;
    if (!coll) return;
    if (!(all = json_object_get(coll, "strategies"))) json_object_set_new(coll, "strategies", all = json_object());
    const char *name = iotame_strategies[s]->name;
    if (!(o = json_object_get(all, name)))
        json_object_set_new(all, name, o = json_pack("{s:I,s:I,s:f}", "calls", (json_int_t)0, "bytes", (json_int_t)0,
                                                     "seconds", 0.0));
    collective_add_int(o, "calls", calls);
    collective_add_int(o, "bytes", bytes);
    json_object_set_new(o, "seconds", json_real(json_real_value(json_object_get(o, "seconds")) + seconds));
    if (list_bytes >= 0) collective_add_int(o, "offset_list_bytes", list_bytes); /* an engine strategy's metadata */
    if (view_bytes >= 0) collective_add_int(o, "view_bytes", view_bytes);
}

/* Decisions and windows are the first rank's (the selector decides alike on every rank); per strategy every rank
 * counted its own part: the bytes (data, offset lists, views) add up, the calls (every rank makes each) and the
 * seconds are the largest rank's. */
static void collective_merge(json_t *into, const json_t *rank)
{
    json_t *from = json_object_get(rank, "strategies"), *all, *o, *mine;
    const char *name;
    if (!from) return;
    if (!(all = json_object_get(into, "strategies"))) json_object_set_new(into, "strategies", all = json_object());
    json_object_foreach(from, name, o) {
        if (!(mine = json_object_get(all, name))) {
            json_object_set(all, name, o);
            continue;
        }
        json_int_t calls = json_integer_value(json_object_get(o, "calls"));
        double seconds = json_number_value(json_object_get(o, "seconds"));
        if (calls > json_integer_value(json_object_get(mine, "calls")))
            json_object_set_new(mine, "calls", json_integer(calls));
        if (seconds > json_number_value(json_object_get(mine, "seconds")))
            json_object_set_new(mine, "seconds", json_real(seconds));
        static const char *const sums[] = {"bytes", "offset_list_bytes", "view_bytes"};
        for (size_t k = 0; k < sizeof sums / sizeof sums[0]; k++)
            if (json_object_get(o, sums[k]))
                collective_add_int(mine, sums[k], json_integer_value(json_object_get(o, sums[k])));
    }
}

/* The section's keys (decisions, strategies, steady windows) are the file's own (docs/formats.md). */
static void collective_report(json_t *file, json_t *merged) { json_object_update(file, merged); }

static json_t *collective_options_json(const char *const *own)
{
    json_t *options = json_array();
    for (const char *const *o = own; o && *o; o++) json_array_append_new(options, json_string(*o));
    return options;
}

/* The strategies of the registry, in its order (each's number, and the cost model's term it declares: null when
 * none), the chooser among them (auto), apart: it is no candidate and has no number, and the engine's options. */
static void collective_describe(json_t *entry)
{
    json_t *list = json_array();
    for (int s = 0; s < iotame_nstrategies; s++) {
        const iotame_strategy_t *st = iotame_strategies[s];
        const char *model = iotame_model_kind_name(st->model);
        json_array_append_new(list, json_pack("{s:s,s:i,s:o,s:o}", "name", st->name, "number", st->number, "model",
                                              model ? json_string(model) : json_null(), "options",
                                              collective_options_json(st->options)));
    }
    json_object_set_new(entry, "strategies", list);
    json_object_set_new(entry, "chooser", json_pack("{s:s,s:o}", "name", iotame_chooser_auto.name, "options",
                                                    collective_options_json(iotame_chooser_auto.options)));
    json_object_set_new(entry, "engine",
                        json_pack("{s:o}", "options", collective_options_json(iotame_coll_engine_options)));
}

const iotame_module_t iotame_module_collective = {
    .name = "collective",
    .settings = "collective",
    .start = collective_start,
    .predicts = collective_predicts,
    .open = iotame__coll_open,
    .set_view = iotame__coll_set_view,
    .set_info = iotame__coll_set_info,
    .set_atomicity = iotame__coll_set_atomicity,
    .serve = iotame__coll_serve,
    .sync = iotame__coll_sync,
    .close = iotame__coll_close,
    .finalize = iotame__coll_finalize,
    .merge = collective_merge,
    .report = collective_report,
    .describe = collective_describe,
};
