/* Long-option parsing from a declarative table, with range/enum validation and recording into "params". */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "options.h"

int iotame_parse_int(const char *s, int64_t *out)
{
    char *end;
    if (!s || !*s || isspace((unsigned char)*s)) return -1;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

int iotame_parse_size(const char *s, int64_t *out)
{
    char *end;
    if (!s || !isdigit((unsigned char)*s)) return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno) return -1;
    unsigned long long unit = 1;
    switch (*end) {
    case 'k': case 'K': unit = 1ULL << 10; end++; break;
    case 'm': case 'M': unit = 1ULL << 20; end++; break;
    case 'g': case 'G': unit = 1ULL << 30; end++; break;
    default: break;
    }
    if (*end || v > (unsigned long long)INT64_MAX / unit) return -1;
    *out = (int64_t)(v * unit);
    return 0;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    if (!s || !*s || isspace((unsigned char)*s)) return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

/* "an integer >= 1", "one of posix, mpiio", ... for messages and help. */
static void describe(const iotame_option_t *o, char *buf, size_t n)
{
    char range[128] = "";
    if (o->min && o->max) snprintf(range, sizeof range, " from %s to %s", o->min, o->max);
    else if (o->min) snprintf(range, sizeof range, " >= %s", o->min);
    else if (o->max) snprintf(range, sizeof range, " <= %s", o->max);
    switch (o->type) {
    case IOTAME_OPT_FLAG: snprintf(buf, n, "no value"); break;
    case IOTAME_OPT_INT: snprintf(buf, n, "an integer%s", range); break;
    case IOTAME_OPT_SIZE: snprintf(buf, n, "a size%s (bytes, or with a k, m or g suffix: 4096, 64k, 1m, 2g)", range);
        break;
    case IOTAME_OPT_DOUBLE: snprintf(buf, n, "a number%s", range); break;
    case IOTAME_OPT_STRING: snprintf(buf, n, "a string"); break;
    case IOTAME_OPT_ENUM: {
        size_t len = (size_t)snprintf(buf, n, "one of");
        for (int i = 0; o->choices[i] && len < n; i++)
            len += (size_t)snprintf(buf + len, n - len, "%s %s", i ? "," : "", o->choices[i]);
        break;
    }
    }
}

/* Parses text s into o->value; -1 when malformed or out of range. */
static int set_value(const iotame_option_t *o, const char *s)
{
    int (*parse)(const char *, int64_t *) = o->type == IOTAME_OPT_SIZE ? iotame_parse_size : iotame_parse_int;
    switch (o->type) {
    case IOTAME_OPT_FLAG:
        *(bool *)o->value = true;
        return 0;
    case IOTAME_OPT_INT:
    case IOTAME_OPT_SIZE: {
        int64_t v, lo, hi;
        if (parse(s, &v)) return -1;
        if (o->min && (parse(o->min, &lo) || v < lo)) return -1;
        if (o->max && (parse(o->max, &hi) || v > hi)) return -1;
        *(int64_t *)o->value = v;
        return 0;
    }
    case IOTAME_OPT_DOUBLE: {
        double v, lo, hi;
        if (parse_double(s, &v)) return -1;
        if (o->min && (parse_double(o->min, &lo) || v < lo)) return -1;
        if (o->max && (parse_double(o->max, &hi) || v > hi)) return -1;
        *(double *)o->value = v;
        return 0;
    }
    case IOTAME_OPT_STRING:
        *(const char **)o->value = s;
        return 0;
    case IOTAME_OPT_ENUM:
        for (int i = 0; o->choices[i]; i++) {
            if (strcasecmp(s, o->choices[i]) == 0) {
                *(int *)o->value = i;
                return 0;
            }
        }
        return -1;
    }
    return -1;
}

static void set_zero(const iotame_option_t *o)
{
    switch (o->type) {
    case IOTAME_OPT_FLAG: *(bool *)o->value = false; break;
    case IOTAME_OPT_INT:
    case IOTAME_OPT_SIZE: *(int64_t *)o->value = 0; break;
    case IOTAME_OPT_DOUBLE: *(double *)o->value = 0.0; break;
    case IOTAME_OPT_STRING: *(const char **)o->value = NULL; break;
    case IOTAME_OPT_ENUM: *(int *)o->value = 0; break;
    }
}

static void record(iotame_run_t *run, const iotame_option_t *o)
{
    switch (o->type) {
    case IOTAME_OPT_FLAG: iotame_param_bool(run, o->name, *(bool *)o->value); break;
    case IOTAME_OPT_INT:
    case IOTAME_OPT_SIZE: iotame_param_int(run, o->name, *(int64_t *)o->value); break;
    case IOTAME_OPT_DOUBLE: iotame_param_double(run, o->name, *(double *)o->value); break;
    case IOTAME_OPT_STRING: iotame_param_str(run, o->name, *(const char **)o->value); break;
    case IOTAME_OPT_ENUM: iotame_param_str(run, o->name, o->choices[*(int *)o->value]); break;
    }
}

static void print_help(const iotame_run_t *run, const iotame_option_t *opts)
{
    static const char *const metavar[] = {
        [IOTAME_OPT_FLAG] = "", [IOTAME_OPT_INT] = " N", [IOTAME_OPT_SIZE] = " SIZE",
        [IOTAME_OPT_DOUBLE] = " X", [IOTAME_OPT_STRING] = " TEXT", [IOTAME_OPT_ENUM] = " NAME"};
    if (run->rank != 0) return;
    printf("usage: iotame-kernel %s [--option value ...]\n%s\n\noptions:\n", run->kernel,
           run->summary ? run->summary : "");
    for (const iotame_option_t *o = opts; o->name; o++) {
        char left[96], what[512];
        snprintf(left, sizeof left, "--%s%s", o->name, metavar[o->type]);
        describe(o, what, sizeof what);
        printf("  %-24s %s", left, o->help ? o->help : "");
        if (o->type != IOTAME_OPT_FLAG)
            printf("%s[%s; default %s]", o->help ? " " : "", what, o->def ? o->def : "none");
        printf("\n");
    }
    fflush(stdout);
}

/* --describe: the option table as JSON, so `iotame bench` and the tuner know each kernel's options (flags,
 * types, defaults, bounds) from the kernel itself. */
static void print_description(const iotame_run_t *run, const iotame_option_t *opts)
{
    static const char *const type_name[] = {[IOTAME_OPT_FLAG] = "flag", [IOTAME_OPT_INT] = "integer",
                                            [IOTAME_OPT_SIZE] = "size", [IOTAME_OPT_DOUBLE] = "number",
                                            [IOTAME_OPT_STRING] = "string", [IOTAME_OPT_ENUM] = "enum"};
    if (run->rank != 0) return;
    json_t *list = json_array();
    for (const iotame_option_t *o = opts; o->name; o++) {
        json_t *d = json_pack("{s:s,s:s,s:s?,s:s?,s:s?,s:s?}", "name", o->name, "type", type_name[o->type], "default",
                              o->def, "min", o->min, "max", o->max, "help", o->help);
        if (o->choices) {
            json_t *c = json_array();
            for (const char *const *ch = o->choices; *ch; ch++) json_array_append_new(c, json_string(*ch));
            json_object_set_new(d, "choices", c);
        }
        json_array_append_new(list, d);
    }
    json_t *out = json_pack("{s:s,s:s?,s:o}", "kernel", run->kernel, "summary", run->summary, "options", list);
    char *text = json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER);
    printf("%s\n", text);
    free(text);
    json_decref(out);
    fflush(stdout);
}

int iotame_options_parse(iotame_run_t *run, const iotame_option_t *opts, int argc, char **argv)
{
    char what[512];
    for (const iotame_option_t *o = opts; o->name; o++) {
        set_zero(o);
        if (o->def && set_value(o, o->def) != 0)
            return iotame_usage_error("internal error: bad default \"%s\" for option --%s", o->def, o->name);
    }
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            print_help(run, opts);
            return IOTAME_EXIT_HELP;
        }
        if (strcmp(arg, "--describe") == 0) {
            print_description(run, opts);
            return IOTAME_EXIT_HELP;
        }
        if (strncmp(arg, "--", 2) != 0 || !arg[2])
            return iotame_usage_error("unexpected argument \"%s\" (options are --name value; see --help)", arg);
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const iotame_option_t *o = opts;
        while (o->name && !(strlen(o->name) == len && strncmp(o->name, name, len) == 0)) o++;
        if (!o->name) return iotame_usage_error("unknown option --%.*s (see --help)", (int)len, name);
        describe(o, what, sizeof what);
        if (o->type == IOTAME_OPT_FLAG) {
            if (eq) return iotame_usage_error("option --%s takes no value, got \"%s\"", o->name, eq + 1);
            set_value(o, NULL);
            continue;
        }
        const char *value = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
        if (!value) return iotame_usage_error("option --%s: expected %s, got nothing", o->name, what);
        if (set_value(o, value) != 0)
            return iotame_usage_error("option --%s: expected %s, got \"%s\"", o->name, what, value);
    }
    for (const iotame_option_t *o = opts; o->name; o++) record(run, o);
    return 0;
}
