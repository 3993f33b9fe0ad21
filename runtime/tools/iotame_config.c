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
 *
 * --settings S validates against the settings description S instead of the embedded runtime/settings.json (the
 * tuner's tests use modified descriptions). Exit status: 0 all valid (check, profile) or input consumed (batch),
 * 1 a configuration or profile is invalid or unreadable, 2 a usage error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "profile/profile.h"
#include "core/config.h"

static const char usage[] = "usage: iotame-config check [--settings FILE] [--name NAME] FILE|-...\n"
                            "       iotame-config batch [--settings FILE]\n"
                            "       iotame-config profile FILE...\n";

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

int main(int argc, char **argv)
{
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
