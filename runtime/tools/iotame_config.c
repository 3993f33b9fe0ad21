/* iotame-config: the runtime's configuration validator (core/config.c) as a program, without MPI, so that
 * `iotame config check`, `iotame run/bench --config` and the tuner accept exactly what the runtime accepts.
 *
 *   iotame-config check [--settings S] FILE...       every problem on stderr, one per line, as the runtime prints
 *                                                    it ("iotame: config FILE: KEY: message"); "FILE: ok" on
 *                                                    stdout for a valid file. "-" reads stdin (named --name N).
 *   iotame-config batch [--settings S]               many documents in one process: one JSON request per input
 *                                                    line, {"name": N, "text": T} or {"name": N, "path": P}; one
 *                                                    line out per request, {"errors": [...]} ([] when valid), or
 *                                                    {"request_error": "..."} for a malformed request.
 *   iotame-config profile FILE...                    machine profiles (`iotame calibrate`) through the runtime's
 *                                                    reader (profile/load.c): every problem on stderr
 *                                                    ("iotame: profile FILE: KEY: expected ..., got ..."), "FILE:
 *                                                    ok" on stdout for a valid one.
 *   iotame-config predict PROFILE                    the cost model (profile/model.c) on calls: one JSON call per
 *                                                    input line, {"op": "write"|"read", "nprocs", "nodes", "ppn",
 *                                                    "bytes", "pieces", "piece", "interleaved", "gap", "targets",
 *                                                    "unit", "sieves", "setup_seconds", "first_call"} (missing: 0,
 *                                                    the model's
 *                                                    defaults); one line out per call, {"raw": {KIND: seconds, ...}}
 *                                                    for every kind, and when the profile has a fit "fitted" and
 *                                                    "error" (relative; null: unknown) for each fitted kind. A bad
 *                                                    line: "iotame-config: predict: line N: KEY: expected ..., got
 *                                                    ..." on stderr, nothing more is read.
 *
 * --settings S validates against the settings description S instead of the embedded runtime/settings.json (the
 * tuner's tests use modified descriptions). Exit status: 0 all valid (check, profile) or input consumed (batch,
 * predict), 1 a configuration or profile is invalid or unreadable or a call is malformed, 2 a usage error. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "profile/profile.h"
#include "core/config.h"

static const char usage[] = "usage: iotame-config check [--settings FILE] [--name NAME] FILE|-...\n"
                            "       iotame-config batch [--settings FILE]\n"
                            "       iotame-config profile FILE...\n"
                            "       iotame-config predict PROFILE   (JSON calls on stdin, one a line)\n";

/* Every error of one document: NULL when valid, else the runtime's message lines (free it). */
static char *validate_text(const char *name, const char *text, size_t len)
{
    iotame_config_t *cfg = NULL;
    char *errors = NULL;
    int rc = iotame_config_parse(name, text, len, &cfg, &errors);
    iotame_config_free(cfg);
    if (rc == 0) return NULL;
    if (!errors) {
        char line[512];
        snprintf(line, sizeof line, "iotame: config %s: %s\n", name, strerror(-rc));
        errors = strdup(line);
    }
    return errors;
}

static char *validate_path(const char *name, const char *path)
{
    char *text = NULL, *errors = NULL;
    size_t len = 0;
    int rc = iotame_config_read_file(path, &text, &len, &errors);
    if (rc != 0) {
        if (strcmp(name, path) == 0 && errors) return errors;
        /* the message names `name`, as when the text is given */
        free(errors);
        char line[1024];
        snprintf(line, sizeof line, "iotame: config %s: cannot read: %s\n", name, strerror(-rc));
        return strdup(line);
    }
    errors = validate_text(name, text, len);
    free(text);
    return errors;
}

static char *read_stream(FILE *f, size_t *len)
{
    size_t cap = 8192, n = 0, got;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *grown = realloc(buf, cap *= 2);
            if (!grown) {
                free(buf);
                return NULL;
            }
            buf = grown;
        }
    }
    *len = n;
    return buf;
}

static int use_settings(const char *path)
{
    char *text = NULL, *errors = NULL;
    size_t len = 0;
    int rc = iotame_config_read_file(path, &text, &len, &errors);
    if (rc == 0) {
        rc = iotame_config_use_settings(text, len, &errors);
        free(text);
        if (rc == 0) return 0;
        fprintf(stderr, "iotame-config: settings %s: %s\n", path, errors ? errors : "invalid");
    } else {
        fprintf(stderr, "iotame-config: settings %s: cannot read: %s\n", path, strerror(-rc));
    }
    free(errors);
    return -1;
}

static int check(int nfiles, char **files, const char *name)
{
    int status = 0;
    for (int i = 0; i < nfiles; i++) {
        char *errors;
        const char *shown = files[i];
        if (strcmp(files[i], "-") == 0) {
            size_t len = 0;
            char *text = read_stream(stdin, &len);
            shown = name ? name : "-";
            if (!text) {
                fprintf(stderr, "iotame: config %s: cannot read: %s\n", shown, strerror(errno ? errno : EIO));
                status = 1;
                continue;
            }
            errors = validate_text(shown, text, len);
            free(text);
        } else {
            errors = validate_path(files[i], files[i]);
        }
        if (errors) {
            fputs(errors, stderr);
            status = 1;
        } else {
            printf("%s: ok\n", shown);
        }
        free(errors);
    }
    return status;
}

/* {"errors": ["line", ...]} from the runtime's newline-separated message lines. */
static json_t *result(const char *errors)
{
    json_t *list = json_array();
    for (const char *p = errors; p && *p;) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        json_array_append_new(list, json_stringn(p, n));
        p += n + (end ? 1 : 0);
    }
    return json_pack("{s:o}", "errors", list);
}

static void answer(json_t *out)
{
    char *line = json_dumps(out, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(out);
    puts(line ? line : "{\"request_error\": \"out of memory\"}");
    free(line);
}

static int batch(void)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        if (n == 0 || line[0] == '\n') continue;
        json_error_t jerr;
        json_t *req = json_loadb(line, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
        json_t *name = json_object_get(req, "name"), *text = json_object_get(req, "text"),
               *path = json_object_get(req, "path");
        if (!json_is_string(name) || json_is_string(text) == json_is_string(path)) {
            char why[512];
            snprintf(why, sizeof why, "%s", req ? "expected {\"name\": N, \"text\": T} or {\"name\": N, \"path\": P}"
                                                : jerr.text);
            answer(json_pack("{s:s}", "request_error", why));
        } else {
            const char *n = json_string_value(name);
            char *errors = text ? validate_text(n, json_string_value(text), json_string_length(text))
                                : validate_path(n, json_string_value(path));
            answer(result(errors));
            free(errors);
        }
        json_decref(req);
    }
    free(line);
    return 0;
}

/* Each machine profile through the runtime's reader; 1 when one is invalid or unreadable. */
static int check_profiles(int nfiles, char **files)
{
    int status = 0;
    for (int i = 0; i < nfiles; i++) {
        iotame_profile_t profile;
        char *errors = NULL;
        int rc = iotame_profile_load(files[i], NULL, 0, &profile, &errors);
        if (rc == 0) {
            printf("%s: ok\n", files[i]);
        } else {
            if (errors) fputs(errors, stderr);
            else fprintf(stderr, "iotame: profile %s: %s\n", files[i], strerror(-rc));
            status = 1;
        }
        free(errors);
    }
    return status;
}

/* A JSON value as a message shows it: compact, at most 40 characters. */
static void predict_shown(const json_t *v, char *out, size_t size)
{
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
    if (text && strlen(text) > 40) strcpy(text + 37, "...");
    snprintf(out, size, "%s", text ? text : "?");
    free(text);
}

static void predict_problem(long line, const char *key, const char *expected, const json_t *got)
{
    char shown[64];
    predict_shown(got, shown, sizeof shown);
    fprintf(stderr, "iotame-config: predict: line %ld: %s: expected %s, got %s\n", line, key, expected, shown);
}

/* A prediction as JSON: null when there is none (negative, or not finite). */
static json_t *predict_seconds(double s)
{
    return s >= 0 && isfinite(s) ? json_real(s) : json_null();
}

/* One input line's call into *c; the number of problems, each on stderr naming the line and the key. */
static int predict_call(json_t *req, long line, iotame_model_call_t *c)
{
    static const struct {
        const char *key;
        size_t offset;
    } counts[] = {
        {"nprocs", offsetof(iotame_model_call_t, nprocs)},     {"nodes", offsetof(iotame_model_call_t, nodes)},
        {"ppn", offsetof(iotame_model_call_t, ppn)},           {"bytes", offsetof(iotame_model_call_t, bytes)},
        {"pieces", offsetof(iotame_model_call_t, pieces)},     {"piece", offsetof(iotame_model_call_t, piece_size)},
        {"gap", offsetof(iotame_model_call_t, gap)},           {"targets", offsetof(iotame_model_call_t, targets)},
        {"unit", offsetof(iotame_model_call_t, unit)}};
    int problems = 0;
    memset(c, 0, sizeof *c);
    const char *key;
    json_t *v;
    json_object_foreach(req, key, v) {
        size_t i = 0;
        while (i < sizeof counts / sizeof *counts && strcmp(key, counts[i].key) != 0) i++;
        if (i < sizeof counts / sizeof *counts) {
            if (json_is_integer(v) && json_integer_value(v) >= 0)
                *(int64_t *)((char *)c + counts[i].offset) = (int64_t)json_integer_value(v);
            else problems++, predict_problem(line, key, "an integer >= 0", v);
        } else if (strcmp(key, "op") == 0) {
            const char *op = json_string_value(v);
            if (op && (strcmp(op, "write") == 0 || strcmp(op, "read") == 0)) c->write = strcmp(op, "write") == 0;
            else problems++, predict_problem(line, key, "\"write\" or \"read\"", v);
        } else if (strcmp(key, "interleaved") == 0 || strcmp(key, "sieves") == 0 || strcmp(key, "first_call") == 0) {
            int *flag = key[0] == 'i' ? &c->interleaved : key[0] == 's' ? &c->sieves : &c->first_call;
            if (json_is_boolean(v)) *flag = json_is_true(v);
            else if (json_is_integer(v) && (json_integer_value(v) == 0 || json_integer_value(v) == 1))
                *flag = (int)json_integer_value(v);
            else problems++, predict_problem(line, key, "true, false, 0 or 1", v);
        } else if (strcmp(key, "setup_seconds") == 0) {
            if (json_is_number(v) && json_number_value(v) >= 0 && json_number_value(v) < 1e300)
                c->setup_seconds = json_number_value(v);
            else problems++, predict_problem(line, key, "a number of seconds >= 0", v);
        } else {
            problems++;
            fprintf(stderr, "iotame-config: predict: line %ld: %s: unknown key (a call has op, nprocs, nodes, ppn, "
                            "bytes, pieces, piece, interleaved, gap, targets, unit, sieves, setup_seconds, "
                            "first_call)\n",
                    line, key);
        }
    }
    return problems;
}

/* The cost model's seconds under every kind (raw; fitted, with its error, where the profile has a fit) for each call
 * on stdin, one JSON line in, one out; 1 at the first bad line (after its problems) or when the profile cannot be
 * used. */
static int predict(const char *path)
{
    iotame_profile_t profile;
    char *errors = NULL;
    int rc = iotame_profile_load(path, NULL, 0, &profile, &errors);
    if (rc != 0) {
        if (errors) fputs(errors, stderr);
        else fprintf(stderr, "iotame: profile %s: %s\n", path, strerror(-rc));
        free(errors);
        return 1;
    }
    char *text = NULL;
    size_t cap = 0;
    ssize_t n;
    long line = 0;
    int status = 0;
    while (status == 0 && (n = getline(&text, &cap, stdin)) >= 0) {
        line++;
        if (strspn(text, " \t\r\n") == (size_t)n) continue;
        json_error_t jerr;
        json_t *req = json_loadb(text, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
        iotame_model_call_t call;
        if (!req) {
            fprintf(stderr, "iotame-config: predict: line %ld: not JSON: %s (column %d)\n", line, jerr.text,
                    jerr.column);
            status = 1;
        } else if (!json_is_object(req)) {
            predict_problem(line, "(the line)", "an object, one call", req);
            status = 1;
        } else if (predict_call(req, line, &call) != 0) {
            status = 1;
        } else {
            json_t *raw = json_object(), *fitted = json_object(), *error = json_object();
            for (int kind = IOTAME_MODEL_PASSTHROUGH; kind < IOTAME_MODEL_KINDS; kind++) {
                const char *name = iotame_model_kind_name(kind);
                json_object_set_new(raw, name, predict_seconds(iotame_model_predict(&profile, &call, kind)));
                if (profile.fit[kind].rows <= 0) continue;
                double e;
                json_object_set_new(fitted, name, predict_seconds(iotame_model_fitted(&profile, &call, kind, &e)));
                json_object_set_new(error, name, predict_seconds(e));
            }
            json_t *out = json_pack("{s:o}", "raw", raw);
            if (iotame_model_fits(&profile) > 0) {
                json_object_set_new(out, "fitted", fitted);
                json_object_set_new(out, "error", error);
            } else {
                json_decref(fitted);
                json_decref(error);
            }
            answer(out);
            fflush(stdout);
        }
        json_decref(req);
    }
    free(text);
    return status;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "predict") == 0) {
        if (argc != 3) {
            fputs(usage, stderr);
            return 2;
        }
        return predict(argv[2]);
    }
    if (argc >= 2 && strcmp(argv[1], "profile") == 0) {
        int first = argc > 2 && strcmp(argv[2], "--") == 0 ? 3 : 2;
        if (first == argc) {
            fputs(usage, stderr);
            return 2;
        }
        return check_profiles(argc - first, argv + first);
    }
    if (argc < 2 || (strcmp(argv[1], "check") != 0 && strcmp(argv[1], "batch") != 0)) {
        fputs(usage, stderr);
        return 2;
    }
    const char *name = NULL, *settings = NULL;
    int i = 2;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if (i + 1 >= argc || (strcmp(argv[i], "--name") != 0 && strcmp(argv[i], "--settings") != 0)) {
            fputs(usage, stderr);
            return 2;
        }
        if (strcmp(argv[i], "--name") == 0) name = argv[++i];
        else settings = argv[++i];
    }
    if (settings && use_settings(settings) != 0) return 2;
    if (strcmp(argv[1], "batch") == 0) {
        if (i != argc) {
            fputs(usage, stderr);
            return 2;
        }
        return batch();
    }
    if (i == argc) {
        fputs(usage, stderr);
        return 2;
    }
    return check(argc - i, argv + i, name);
}
