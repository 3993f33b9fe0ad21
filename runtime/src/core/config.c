/* Configuration: JSON (jansson) validated against the embedded runtime/settings.json. This is the only
 * validator: `iotame config check` and the tuner run it through the iotame-config program
 * (runtime/tools/iotame_config.c), so they accept exactly the files the runtime accepts. Error texts are
 * documented in docs/formats.md. */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const unsigned char iotame__settings_json[];
extern const size_t iotame__settings_json_len;

#define EXPECTED_VERSION 1

/* ---- error text accumulated over the whole validation ---- */

typedef struct {
    const char *file;
    char *text;
    size_t len;
    int count;
} errors_t;

static void add_error(errors_t *e, const char *key, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char line[2048];
    int n = key && *key ? snprintf(line, sizeof line, "iotame: config %s: %s: %s\n", e->file, key, msg)
                        : snprintf(line, sizeof line, "iotame: config %s: %s\n", e->file, msg);
    if (n < 0) return;
    if ((size_t)n >= sizeof line) n = sizeof line - 1;
    char *grown = realloc(e->text, e->len + (size_t)n + 1);
    if (!grown) return;
    memcpy(grown + e->len, line, (size_t)n + 1);
    e->text = grown;
    e->len += (size_t)n;
    e->count++;
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    default: return "null";
    }
}

/* A value as messages show it: scalars as JSON, containers by their type name. */
static void render(const json_t *v, char *buf, size_t n)
{
    if (json_is_object(v) || json_is_array(v)) {
        snprintf(buf, n, "%s", type_name(v));
        return;
    }
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    snprintf(buf, n, "%s", s ? s : "?");
    free(s);
}

/* ---- the schema: runtime/settings.json, parsed once ---- */

static json_t *settings_override; /* iotame_config_use_settings() */

static json_t *schema(void)
{
    static json_t *s;
    if (settings_override) return settings_override;
    if (!s) s = json_loadb((const char *)iotame__settings_json, iotame__settings_json_len, 0, NULL);
    return s;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* "a, b, c": the keys of `obj` (plus `extra` when not NULL), sorted. */
static void key_list(const json_t *obj, const char *const *extra, size_t nextra, char *buf, size_t n)
{
    const char *keys[64];
    size_t k = 0;
    const char *key;
    json_t *v;
    for (size_t i = 0; i < nextra && k < 64; i++) keys[k++] = extra[i];
    json_object_foreach((json_t *)obj, key, v) if (k < 64) keys[k++] = key;
    qsort(keys, k, sizeof *keys, cmp_str);
    buf[0] = '\0';
    size_t used = 0;
    for (size_t i = 0; i < k && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", keys[i]);
}

/* ---- validation of one setting ---- */

/* What a setting accepts, as messages say it: "an integer >= 1", "one of enable, disable", "a list of ...". */
static void config_describe(const json_t *desc, char *buf, size_t n)
{
    const char *type = json_string_value(json_object_get(desc, "type"));
    json_t *min = json_object_get(desc, "min"), *max = json_object_get(desc, "max");
    int is_int = strcmp(type, "integer") == 0;
    if (is_int || strcmp(type, "number") == 0) {
        const char *what = is_int ? "an integer" : "a number";
        if (min && max)
            snprintf(buf, n, "%s from %.15g to %.15g", what, json_number_value(min), json_number_value(max));
        else if (min) snprintf(buf, n, "%s >= %.15g", what, json_number_value(min));
        else if (max) snprintf(buf, n, "%s <= %.15g", what, json_number_value(max));
        else snprintf(buf, n, "%s", what);
    } else if (strcmp(type, "enum") == 0) {
        size_t i, used = (size_t)snprintf(buf, n, "one of ");
        json_t *allowed;
        json_array_foreach(json_object_get(desc, "values"), i, allowed) if (used < n) used +=
            (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", json_string_value(allowed));
    } else if (strcmp(type, "list") == 0) {
        char item[256];
        config_describe(json_object_get(desc, "items"), item, sizeof item);
        snprintf(buf, n, "a list of %s", item);
    } else if (strcmp(type, "rules") == 0) {
        snprintf(buf, n, "a list of rules (objects with \"match\")");
    } else if (strcmp(type, "string") == 0) {
        snprintf(buf, n, "a string");
    } else {
        snprintf(buf, n, "true or false");
    }
    size_t i, used = strlen(buf);
    json_t *also;
    json_array_foreach(json_object_get(desc, "also"), i, also) if (used < n) used +=
        (size_t)snprintf(buf + used, n - used, " or %s", json_string_value(also));
}

/* Whether a scalar value fits its description ("also": strings accepted besides the type, a throttle's "auto"). */
static int scalar_ok(const json_t *desc, const json_t *v)
{
    const char *type = json_string_value(json_object_get(desc, "type"));
    size_t i;
    json_t *also;
    json_array_foreach(json_object_get(desc, "also"), i, also) if (json_equal(also, (json_t *)v)) return 1;
    json_t *min = json_object_get(desc, "min"), *max = json_object_get(desc, "max");
    if (strcmp(type, "integer") == 0 || strcmp(type, "number") == 0) {
        if (strcmp(type, "integer") == 0 ? !json_is_integer(v) : !json_is_number(v)) return 0;
        return (!min || json_number_value(v) >= json_number_value(min)) &&
               (!max || json_number_value(v) <= json_number_value(max));
    }
    if (strcmp(type, "enum") == 0) {
        size_t i;
        json_t *allowed;
        json_array_foreach(json_object_get(desc, "values"), i, allowed) if (json_equal(allowed, (json_t *)v)) return 1;
        return 0;
    }
    if (strcmp(type, "string") == 0) return json_is_string(v);
    return json_is_boolean(v);
}

static void expected(errors_t *e, const char *key, const json_t *desc, const json_t *v)
{
    char want[512], got[256];
    config_describe(desc, want, sizeof want);
    render(v, got, sizeof got);
    add_error(e, key, "expected %s, got %s", want, got);
}

/* A hint value as MPI expects it (a new string): integers in decimal, booleans as true/false. */
static char *mpi_string(const json_t *v)
{
    char buf[32];
    if (json_is_integer(v)) {
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        return strdup(buf);
    }
    if (json_is_boolean(v)) return strdup(json_is_true(v) ? "true" : "false");
    return strdup(json_string_value(v));
}

static void check_object(errors_t *e, const char *where, const json_t *settings, const json_t *obj,
                         const char *section_name, int with_match);

/* Validates `v` against the setting description `desc`; on success stores the MPI string form in *out. */
static int check_setting(errors_t *e, const char *key, const json_t *desc, const json_t *v, char **out)
{
    const char *type = json_string_value(json_object_get(desc, "type"));
    int before = e->count;
    if (strcmp(type, "list") == 0 || strcmp(type, "rules") == 0) {
        if (!json_is_array(v)) {
            expected(e, key, desc, v);
            return -1;
        }
        json_t *min = json_object_get(desc, "min_items"), *max = json_object_get(desc, "max_items");
        size_t count = json_array_size(v), i;
        if ((min && (json_int_t)count < json_integer_value(min)) || (max && (json_int_t)count > json_integer_value(max)))
            add_error(e, key, "expected %lld to %lld items, got %zu", min ? (long long)json_integer_value(min) : 0LL,
                      max ? (long long)json_integer_value(max) : (long long)count, count);
        json_t *item;
        json_array_foreach(v, i, item) {
            char sub[1024];
            snprintf(sub, sizeof sub, "%.900s[%zu]", key, i);
            if (strcmp(type, "rules") == 0) check_object(e, sub, json_object_get(desc, "settings"), item, NULL, 1);
            else if (!scalar_ok(json_object_get(desc, "items"), item)) expected(e, sub, json_object_get(desc, "items"), item);
        }
        return e->count == before ? 0 : -1;
    }
    if (!scalar_ok(desc, v)) {
        expected(e, key, desc, v);
        return -1;
    }
    if (!out) return 0;
    *out = mpi_string(v);
    return *out ? 0 : -1;
}

/* The keys of an object checked against `settings`; with_match: a rule of a "rules" setting, which needs
 * "match". section_name names a section for the "no settings yet" message. */
static void check_object(errors_t *e, const char *where, const json_t *settings, const json_t *obj,
                         const char *section_name, int with_match)
{
    if (!json_is_object(obj)) {
        add_error(e, where, "expected an object, got %s", type_name(obj));
        return;
    }
    const char *k;
    json_t *item;
    json_object_foreach((json_t *)obj, k, item) {
        char sub[1024];
        snprintf(sub, sizeof sub, "%.900s.%s", where, k);
        json_t *desc = json_object_get(settings, k);
        if (with_match && strcmp(k, "match") == 0) {
            if (!json_is_string(item) || json_string_length(item) == 0) {
                char got[256];
                render(item, got, sizeof got);
                add_error(e, sub, "expected a non-empty string (a glob), got %s", got);
            }
        } else if (desc) {
            check_setting(e, sub, desc, item, NULL);
        } else if (json_object_size(settings) == 0 && section_name) {
            add_error(e, sub, "unknown key (section %s has no settings yet)", section_name);
        } else {
            static const char *const match[] = {"match"};
            char list[1024];
            key_list(settings, match, with_match ? 1 : 0, list, sizeof list);
            add_error(e, sub, "unknown key (expected one of: %s)", list);
        }
    }
    if (with_match && !json_object_get(obj, "match")) {
        char sub[1024];
        snprintf(sub, sizeof sub, "%.900s.match", where);
        add_error(e, sub, "missing required key");
    }
}

static void add_hint(iotame_rule_t *r, const char *key, char *value)
{
    if (!value) return;
    iotame_kv_t *grown = realloc(r->hints, (r->nhints + 1) * sizeof *grown);
    if (!grown) {
        free(value);
        return;
    }
    r->hints = grown;
    r->hints[r->nhints].key = strdup(key);
    r->hints[r->nhints].value = value;
    r->nhints++;
}

/* ---- sections and rules ---- */

static void check_section(errors_t *e, const char *where, const char *name, const json_t *section,
                          const json_t *v, iotame_rule_t *rule, int is_default)
{
    char key[512];
    snprintf(key, sizeof key, "%s.%s", where, name);
    json_t *settings = json_object_get(section, "settings");
    int free_form = json_is_true(json_object_get(section, "free"));
    if (!free_form) check_object(e, key, settings, v, name, 0);
    else if (!json_is_object(v)) add_error(e, key, "expected an object, got %s", type_name(v));
    /* A setting marked "process" sizes something the whole process (or node) shares: in defaults only. */
    const char *k;
    json_t *item;
    if (!is_default && !free_form && json_is_object(v))
        json_object_foreach((json_t *)v, k, item) {
            if (!json_is_true(json_object_get(json_object_get(settings, k), "process"))) continue;
            char sub[1024];
            snprintf(sub, sizeof sub, "%.900s.%s", key, k);
            add_error(e, sub, "the setting is for the whole process: allowed in defaults only");
        }
    if (strncmp(name, "mpiio_hints", 11) != 0 || !json_is_object(v)) return;
    /* Hints, typed or free, also become the strings merged into MPI_Info. */
    json_object_foreach((json_t *)v, k, item) {
        if (free_form && !json_is_string(item) && !json_is_integer(item)) {
            char sub[1024], got[256];
            snprintf(sub, sizeof sub, "%.900s.%s", key, k);
            render(item, got, sizeof got);
            add_error(e, sub, "expected a string or an integer, got %s", got);
            continue;
        }
        const json_t *desc = json_object_get(settings, k);
        if (free_form || (desc && scalar_ok(desc, item))) add_hint(rule, k, mpi_string(item));
    }
}

static void check_rule(errors_t *e, const char *where, const json_t *obj, iotame_rule_t *rule, int is_default)
{
    rule->override = -1;
    rule->json = (json_t *)obj;
    if (!json_is_object(obj)) {
        add_error(e, where, "expected an object, got %s", type_name(obj));
        return;
    }
    json_t *sections = json_object_get(schema(), "sections");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v) {
        char key[512], got[256];
        snprintf(key, sizeof key, "%s.%s", where, k);
        json_t *section = json_object_get(sections, k);
        if (section && !is_default && json_is_true(json_object_get(section, "process")))
            add_error(e, key, "the section sets the whole process: allowed in defaults only");
        else if (section) check_section(e, where, k, section, v, rule, is_default);
        else if (strcmp(k, "override") == 0) {
            if (json_is_boolean(v)) rule->override = json_is_true(v);
            else {
                render(v, got, sizeof got);
                add_error(e, key, "expected true or false, got %s", got);
            }
        } else if (strcmp(k, "match") == 0 && !is_default) {
            if (json_is_string(v) && json_string_length(v) > 0) rule->match = strdup(json_string_value(v));
            else {
                render(v, got, sizeof got);
                add_error(e, key, "expected a non-empty string (a glob), got %s", got);
            }
        } else {
            static const char *const rule_keys[] = {"override", "match"};
            char list[1024];
            key_list(sections, rule_keys, is_default ? 1 : 2, list, sizeof list);
            add_error(e, key, "unknown key (expected one of: %s)", list);
        }
    }
    if (!is_default && !json_object_get(obj, "match")) {
        char key[512];
        snprintf(key, sizeof key, "%s.match", where);
        add_error(e, key, "missing required key");
    }
}

static void check_top(errors_t *e, json_t *root, iotame_config_t *cfg)
{
    if (!json_is_object(root)) {
        add_error(e, NULL, "expected an object at the top level, got %s", type_name(root));
        return;
    }
    static const char *const top_keys[] = {"defaults", "files", "meta", "version"};
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v) {
        char got[256];
        if (strcmp(k, "version") == 0) {
            if (!json_is_integer(v) || json_integer_value(v) != EXPECTED_VERSION) {
                render(v, got, sizeof got);
                add_error(e, k, "expected %d, got %s", EXPECTED_VERSION, got);
            }
        } else if (strcmp(k, "defaults") == 0) {
            check_rule(e, "defaults", v, &cfg->defaults, 1);
        } else if (strcmp(k, "files") == 0) {
            if (!json_is_array(v)) {
                add_error(e, k, "expected an array, got %s", type_name(v));
                continue;
            }
            cfg->rules = calloc(json_array_size(v) ? json_array_size(v) : 1, sizeof *cfg->rules);
            if (!cfg->rules) return;
            size_t i;
            json_t *item;
            json_array_foreach(v, i, item) {
                char where[64];
                snprintf(where, sizeof where, "files[%zu]", i);
                check_rule(e, where, item, &cfg->rules[i], 0);
                cfg->nrules = i + 1;
            }
        } else if (strcmp(k, "meta") == 0) {
            if (!json_is_object(v)) add_error(e, k, "expected an object, got %s", type_name(v));
        } else {
            char list[256];
            key_list(json_object(), top_keys, 4, list, sizeof list);
            add_error(e, k, "unknown key (expected one of: %s)", list);
        }
    }
    if (!json_object_get(root, "version")) add_error(e, "version", "missing required key");
}

/* ---- public ---- */

int iotame_config_use_settings(const char *text, size_t len, char **errors)
{
    *errors = NULL;
    json_error_t jerr;
    json_t *s = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!s || !json_is_object(json_object_get(s, "sections"))) {
        char msg[512];
        if (s) snprintf(msg, sizeof msg, "expected an object with \"sections\"");
        else snprintf(msg, sizeof msg, "line %d, column %d: invalid JSON (%s)", jerr.line, jerr.column, jerr.text);
        *errors = strdup(msg);
        json_decref(s);
        return -EINVAL;
    }
    json_decref(settings_override);
    settings_override = s;
    return 0;
}

int iotame_config_read_file(const char *path, char **text, size_t *len, char **errors)
{
    *text = NULL;
    *len = 0;
    *errors = NULL;
    FILE *f = fopen(path, "rb");
    int err = 0;
    if (f) {
        char *buf = NULL;
        size_t cap = 0, n = 0, got;
        do {
            if (n + 4096 > cap) {
                char *grown = realloc(buf, cap = cap * 2 + 8192);
                if (!grown) {
                    err = ENOMEM;
                    break;
                }
                buf = grown;
            }
            got = fread(buf + n, 1, cap - n - 1, f);
            n += got;
        } while (got > 0);
        if (!err && ferror(f)) err = EIO;
        fclose(f);
        if (!err) {
            buf[n] = '\0';
            *text = buf;
            *len = n;
            return 0;
        }
        free(buf);
    } else
        err = errno;
    errors_t e = {.file = path};
    add_error(&e, NULL, "cannot read: %s", strerror(err));
    *errors = e.text;
    return -err;
}

int iotame_config_parse(const char *path, const char *text, size_t len, iotame_config_t **out, char **errors)
{
    *out = NULL;
    *errors = NULL;
    errors_t e = {.file = path};
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        add_error(&e, NULL, "line %d, column %d: invalid JSON (%s)", jerr.line, jerr.column, jerr.text);
        *errors = e.text;
        return -EINVAL;
    }
    iotame_config_t *cfg = calloc(1, sizeof *cfg);
    if (!cfg) {
        json_decref(root);
        return -ENOMEM;
    }
    cfg->path = strdup(path);
    cfg->root = root;
    cfg->defaults.override = -1;
    check_top(&e, root, cfg);
    if (e.count) {
        iotame_config_free(cfg);
        *errors = e.text;
        return -EINVAL;
    }
    *out = cfg;
    return 0;
}

static void rule_free(iotame_rule_t *r)
{
    for (size_t i = 0; i < r->nhints; i++) {
        free(r->hints[i].key);
        free(r->hints[i].value);
    }
    free(r->hints);
    free(r->match);
}

void iotame_config_free(iotame_config_t *cfg)
{
    if (!cfg) return;
    rule_free(&cfg->defaults);
    for (size_t i = 0; i < cfg->nrules; i++) rule_free(&cfg->rules[i]);
    free(cfg->rules);
    json_decref(cfg->root);
    free(cfg->path);
    free(cfg);
}

/* ROMIO accepts "ufs:/path", "lustre:/path", ...: match on the path itself. */
static const char *strip_fs_prefix(const char *path)
{
    const char *colon = strchr(path, ':');
    if (!colon || colon - path < 2) return path;
    for (const char *p = path; p < colon; p++)
        if (*p == '/') return path;
    return colon + 1;
}

static int rule_matches(const iotame_rule_t *r, const char *path)
{
    const char *base = strrchr(path, '/');
    return fnmatch(r->match, path, 0) == 0 || (base && fnmatch(r->match, base + 1, 0) == 0);
}

static int merge_hints(iotame_file_config_t *out, const iotame_rule_t *r)
{
    for (size_t i = 0; i < r->nhints; i++) {
        size_t j = 0;
        while (j < out->nhints && strcmp(out->hints[j]->key, r->hints[i].key) != 0) j++;
        if (j == out->nhints) {
            const iotame_kv_t **grown = realloc(out->hints, (out->nhints + 1) * sizeof *grown);
            if (!grown) return -ENOMEM;
            out->hints = grown;
            out->nhints++;
        }
        out->hints[j] = &r->hints[i];
    }
    return 0;
}

int iotame_config_for_file(const iotame_config_t *cfg, const char *path, iotame_file_config_t *out)
{
    memset(out, 0, sizeof *out);
    if (!cfg) return 0;
    path = strip_fs_prefix(path);
    for (size_t i = 0; i < cfg->nrules && !out->rule; i++)
        if (rule_matches(&cfg->rules[i], path)) out->rule = &cfg->rules[i];
    out->defaults = &cfg->defaults;
    out->override = cfg->defaults.override > 0;
    if (out->rule && out->rule->override >= 0) out->override = out->rule->override;
    int rc = merge_hints(out, &cfg->defaults);
    if (rc == 0 && out->rule) rc = merge_hints(out, out->rule);
    if (rc) iotame_config_file_release(out);
    return rc;
}

void iotame_config_file_release(iotame_file_config_t *fc)
{
    free(fc->hints);
    memset(fc, 0, sizeof *fc);
}

static const json_t *rule_value(const iotame_rule_t *r, const char *section, const char *key)
{
    return r && r->json ? json_object_get(json_object_get(r->json, section), key) : NULL;
}

const json_t *iotame_config_value(const iotame_file_config_t *fc, const char *section, const char *key)
{
    const json_t *v = rule_value(fc->rule, section, key);
    return v ? v : rule_value(fc->defaults, section, key);
}

const json_t *iotame_config_default(const char *section, const char *key)
{
    const json_t *sec = json_object_get(json_object_get(schema(), "sections"), section);
    return json_object_get(json_object_get(json_object_get(sec, "settings"), key), "default");
}

const json_t *iotame_config_setting(const iotame_file_config_t *fc, const char *section, const char *key)
{
    const json_t *v = fc ? iotame_config_value(fc, section, key) : NULL;
    return v ? v : iotame_config_default(section, key);
}

int iotame_config_any(const iotame_config_t *cfg, const char *section, const char *key, int (*pred)(const json_t *v))
{
    const iotame_file_config_t process = {.defaults = cfg ? &cfg->defaults : NULL};
    if (pred(iotame_config_setting(cfg ? &process : NULL, section, key))) return 1;
    for (size_t i = 0; cfg && i < cfg->nrules; i++) {
        const json_t *v = rule_value(&cfg->rules[i], section, key);
        if (v && pred(v)) return 1;
    }
    return 0;
}
