/* Unit tests of the configuration (no MPI): validation messages, rule matching, hint merging, and the shared
 * corpus of configurations (tests/python/config_cases.json) through the library and through the iotame-config
 * program, the validator of `iotame config check` and the tuner. */
#define _GNU_SOURCE /* getline, popen, mkdtemp */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/config.h"

#include "check.h"

static iotame_config_t *parse_ok(const char *text)
{
    iotame_config_t *cfg = NULL;
    char *errors = NULL;
    int rc = iotame_config_parse("t.json", text, strlen(text), &cfg, &errors);
    if (rc != 0) fprintf(stderr, "unexpected errors:\n%s", errors ? errors : "(none)\n");
    CHECK(rc == 0 && cfg);
    free(errors);
    return cfg;
}

/* Parses text that must fail and checks that `expected` is one of the error lines. */
static void parse_fails(const char *text, const char *expected)
{
    iotame_config_t *cfg = NULL;
    char *errors = NULL;
    int rc = iotame_config_parse("t.json", text, strlen(text), &cfg, &errors);
    CHECK(rc == -EINVAL && !cfg && errors);
    if (errors && !strstr(errors, expected)) {
        fprintf(stderr, "expected \"%s\" among:\n%s", expected, errors);
        failures++;
    }
    free(errors);
}

static const char *hint(const iotame_file_config_t *fc, const char *key)
{
    for (size_t i = 0; i < fc->nhints; i++)
        if (strcmp(fc->hints[i]->key, key) == 0) return fc->hints[i]->value;
    return NULL;
}

static void test_messages(void)
{
    parse_fails("[1]", "iotame: config t.json: expected an object at the top level, got array");
    parse_fails("{}", "iotame: config t.json: version: missing required key");
    parse_fails("{\"version\": 1.0}", "version: expected 1, got 1.0");
    parse_fails("{\"version\": 1, \"files\": {}}", "files: expected an array, got object");
    parse_fails("{\"version\": 1, \"files\": [3]}", "files[0]: expected an object, got integer");
    parse_fails("{\"version\": 1, \"defaults\": {\"match\": \"*\"}}",
                "defaults.match: unknown key (expected one of: collective, emulate, hdf5, memory, mpiio_hints, "
                "mpiio_hints_extra, override, posix, runtime, staging, throttle, trace)");
    parse_fails("{\"version\": 1, \"files\": [{\"match\": \"*\", \"memory\": {}}]}",
                "files[0].memory: the section sets the whole process: allowed in defaults only");
    parse_fails("{\"version\": 1, \"defaults\": {\"memory\": {\"malloc_threshold\": 33554432}}}",
                "defaults.memory.malloc_threshold: expected an integer from 0 to 33550336, got 33554432");
    parse_fails("{\"version\": 1, \"files\": [{\"match\": \"\"}]}",
                "files[0].match: expected a non-empty string (a glob), got \"\"");
    parse_fails("{\"version\": 1, \"defaults\": {\"override\": 1}}", "defaults.override: expected true or false, got 1");
    parse_fails("{\"version\": 1, \"defaults\": {\"mpiio_hints\": {\"cb_nodes\": true}}}",
                "defaults.mpiio_hints.cb_nodes: expected an integer >= 1, got true");
    parse_fails("{\"version\": 1, \"defaults\": {\"mpiio_hints\": {\"cb_config_list\": 4}}}",
                "defaults.mpiio_hints.cb_config_list: expected a string, got 4");
    parse_fails("{\"version\": 1, \"defaults\": {\"mpiio_hints\": []}}", "defaults.mpiio_hints: expected an object, got array");
    parse_fails("{\"version\": 1, \"files\": [{\"match\": \"*\", \"staging\": {\"cache_mb\": 8}}]}",
                "files[0].staging.cache_mb: the setting is for the whole process: allowed in defaults only");
    parse_fails("{\"version\": 1, \"defaults\": {\"throttle\": {\"readers\": \"all\"}}}",
                "defaults.throttle.readers: expected an integer >= 1 or auto, got \"all\"");
    parse_fails("{\"version\": 1, \"meta\": 3}", "meta: expected an object, got integer");
    parse_fails("{\"version\": 1, \"version\": 1}", "line 1, column");
    /* Every problem is reported, not only the first. */
    iotame_config_t *cfg = NULL;
    char *errors = NULL;
    const char *two = "{\"version\": 1, \"defaults\": {\"mpiio_hints\": {\"cb_nodes\": 0, \"cb_buffer_size\": 10}}}";
    iotame_config_parse("t.json", two, strlen(two), &cfg, &errors);
    int lines = 0;
    for (const char *p = errors; p && *p; p++) lines += *p == '\n';
    CHECK(lines == 2);
    free(errors);
}

static void test_rules(void)
{
    iotame_config_t *cfg = parse_ok(
        "{\"version\": 1, \"meta\": {\"from\": \"test\"},"
        " \"defaults\": {\"mpiio_hints\": {\"cb_buffer_size\": 1048576, \"romio_cb_read\": \"disable\"}},"
        " \"files\": ["
        "  {\"match\": \"/scratch/*.h5\", \"mpiio_hints\": {\"cb_buffer_size\": 4194304}, \"override\": true},"
        "  {\"match\": \"chk_*\", \"mpiio_hints\": {\"cb_nodes\": 2}, \"mpiio_hints_extra\": {\"vendor_x\": 7}},"
        "  {\"match\": \"*\", \"override\": false}]}");
    if (!cfg) return;
    iotame_file_config_t fc;

    CHECK(iotame_config_for_file(cfg, "ufs:/scratch/run1/out.h5", &fc) == 0);
    CHECK(fc.rule == &cfg->rules[0] && fc.override == 1);
    CHECK(fc.nhints == 2);
    CHECK(strcmp(hint(&fc, "cb_buffer_size"), "4194304") == 0); /* the rule replaces the default */
    CHECK(strcmp(hint(&fc, "romio_cb_read"), "disable") == 0);
    iotame_config_file_release(&fc);

    CHECK(iotame_config_for_file(cfg, "/home/u/chk_0001", &fc) == 0); /* matched on the basename */
    CHECK(fc.rule == &cfg->rules[1] && fc.override == 0);
    CHECK(strcmp(hint(&fc, "cb_nodes"), "2") == 0 && strcmp(hint(&fc, "vendor_x"), "7") == 0);
    CHECK(strcmp(hint(&fc, "cb_buffer_size"), "1048576") == 0);
    iotame_config_file_release(&fc);

    CHECK(iotame_config_for_file(cfg, "other.dat", &fc) == 0);
    CHECK(fc.rule == &cfg->rules[2] && fc.nhints == 2);
    iotame_config_file_release(&fc);

    CHECK(iotame_config_for_file(NULL, "x", &fc) == 0 && fc.nhints == 0 && !fc.rule);
    iotame_config_file_release(&fc);
    iotame_config_free(cfg);

    /* No rule matches: only the defaults, and none at all without defaults. */
    cfg = parse_ok("{\"version\": 1, \"files\": [{\"match\": \"*.h5\", \"mpiio_hints\": {\"cb_nodes\": 1}}]}");
    CHECK(iotame_config_for_file(cfg, "/tmp/a.dat", &fc) == 0 && !fc.rule && fc.nhints == 0);
    iotame_config_file_release(&fc);
    iotame_config_free(cfg);
}

static void test_hdf5(void)
{
    parse_fails("{\"version\": 1, \"defaults\": {\"hdf5\": {\"alignment\": 0}}}",
                "defaults.hdf5.alignment: expected an integer >= 1, got 0");
    parse_fails("{\"version\": 1, \"defaults\": {\"hdf5\": {\"chunk\": []}}}",
                "defaults.hdf5.chunk: expected 1 to 32 items, got 0");
    parse_fails("{\"version\": 1, \"defaults\": {\"hdf5\": {\"transfer\": \"coll\"}}}",
                "defaults.hdf5.transfer: expected one of collective, independent, got \"coll\"");
    parse_fails("{\"version\": 1, \"files\": [{\"match\": \"*\", \"hdf5\": {\"datasets\": [{\"chunk\": [4, 0]}]}}]}",
                "files[0].hdf5.datasets[0].chunk[1]: expected an integer >= 1, got 0");
    parse_fails("{\"version\": 1, \"defaults\": {\"hdf5\": {\"datasets\": [{\"match\": \"x\", \"alignment\": 1}]}}}",
                "defaults.hdf5.datasets[0].alignment: unknown key (expected one of: alloc_time, chunk, chunk_bytes, "
                "match, transfer)");
    parse_fails("{\"version\": 1, \"defaults\": {\"hdf5\": {\"datasets\": [{\"chunk_bytes\": 1}]}}}",
                "defaults.hdf5.datasets[0].match: missing required key");

    /* iotame_config_value: the matching rule's value, else the defaults', else NULL. */
    iotame_config_t *cfg = parse_ok(
        "{\"version\": 1, \"defaults\": {\"hdf5\": {\"alignment\": 4096, \"chunk_bytes\": 1048576}},"
        " \"files\": [{\"match\": \"*.h5\", \"hdf5\": {\"alignment\": 65536, \"datasets\": [{\"match\": \"/a\"}]}},"
        "            {\"match\": \"*.dat\", \"mpiio_hints\": {\"cb_nodes\": 1}}]}");
    if (!cfg) return;
    iotame_file_config_t fc;
    CHECK(iotame_config_for_file(cfg, "/x/run.h5", &fc) == 0);
    CHECK(json_integer_value(iotame_config_value(&fc, "hdf5", "alignment")) == 65536);
    CHECK(json_integer_value(iotame_config_value(&fc, "hdf5", "chunk_bytes")) == 1048576);
    CHECK(json_array_size(iotame_config_value(&fc, "hdf5", "datasets")) == 1);
    CHECK(iotame_config_value(&fc, "hdf5", "transfer") == NULL);
    CHECK(iotame_config_value(&fc, "collective", "strategy") == NULL);
    iotame_config_file_release(&fc);
    CHECK(iotame_config_for_file(cfg, "/x/run.dat", &fc) == 0); /* a rule without an hdf5 section */
    CHECK(json_integer_value(iotame_config_value(&fc, "hdf5", "alignment")) == 4096);
    iotame_config_file_release(&fc);
    iotame_config_free(cfg);
    cfg = parse_ok("{\"version\": 1, \"files\": [{\"match\": \"*.h5\", \"hdf5\": {\"alignment\": 8}}]}");
    CHECK(iotame_config_for_file(cfg, "a.dat", &fc) == 0); /* no rule, no defaults */
    CHECK(iotame_config_value(&fc, "hdf5", "alignment") == NULL);
    iotame_config_file_release(&fc);
    iotame_config_free(cfg);
    CHECK(iotame_config_for_file(NULL, "a.h5", &fc) == 0); /* no configuration */
    CHECK(iotame_config_value(&fc, "hdf5", "alignment") == NULL);
    iotame_config_file_release(&fc);
}

static void test_read_file(void)
{
    char *text, *errors;
    size_t len;
    CHECK(iotame_config_read_file("/nonexistent/iotame.json", &text, &len, &errors) == -ENOENT);
    CHECK(errors && strstr(errors, "iotame: config /nonexistent/iotame.json: cannot read: No such file or directory"));
    free(errors);
}

/* ---- the corpus: every case's expected lines, through the library and through iotame-config ---- */

/* Whether `got` (the runtime's text, one "iotame: config NAME: message" per line) holds exactly the case's
 * lines: "errors" in full, or "errors_prefix" up to where the JSON parser's own words start. */
static int corpus_matches(const json_t *c, const char *name, const json_t *got_lines)
{
    json_t *want = json_object_get(c, "errors");
    int prefix = !want;
    if (prefix) want = json_object_get(c, "errors_prefix");
    if (json_array_size(want) != json_array_size(got_lines)) return 0;
    size_t i;
    json_t *w;
    json_array_foreach(want, i, w) {
        char line[4096];
        snprintf(line, sizeof line, "iotame: config %s: %s", name, json_string_value(w));
        const char *got = json_string_value(json_array_get(got_lines, i));
        if (!got || (prefix ? strncmp(got, line, strlen(line)) : strcmp(got, line)) != 0) return 0;
    }
    return 1;
}

static json_t *split_lines(const char *text)
{
    json_t *lines = json_array();
    for (const char *p = text; p && *p;) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        json_array_append_new(lines, json_stringn(p, n));
        p += n + (end ? 1 : 0);
    }
    return lines;
}

static void report(const json_t *c, const char *how, const json_t *got)
{
    char *g = json_dumps(got, JSON_INDENT(1));
    fprintf(stderr, "corpus case %s (%s): got %s\n", json_string_value(json_object_get(c, "name")), how, g);
    free(g);
    failures++;
}

static void test_corpus_library(const json_t *cases)
{
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) {
        const char *text = json_string_value(json_object_get(c, "text"));
        iotame_config_t *cfg = NULL;
        char *errors = NULL;
        int rc = iotame_config_parse("case.json", text, json_string_length(json_object_get(c, "text")), &cfg, &errors);
        json_t *got = split_lines(errors);
        CHECK((rc == 0) == (json_array_size(got) == 0) && (rc == 0) == (cfg != NULL));
        if (!corpus_matches(c, "case.json", got)) report(c, "library", got);
        json_decref(got);
        free(errors);
        iotame_config_free(cfg);
    }
}

/* The same cases through `iotame-config batch`, one process for all, half given as text, half as files. */
static void test_corpus_program(const json_t *cases, const char *program)
{
    char dir[] = "/tmp/iotame-test-config-XXXXXX", reqs[512], cmd[2048];
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    snprintf(reqs, sizeof reqs, "%s/requests", dir);
    FILE *f = fopen(reqs, "w");
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) {
        char name[512];
        snprintf(name, sizeof name, "%s/%s.json", dir, json_string_value(json_object_get(c, "name")));
        json_t *req = json_pack("{s:s}", "name", name);
        if (i % 2) {
            FILE *cf = fopen(name, "w");
            fputs(json_string_value(json_object_get(c, "text")), cf);
            fclose(cf);
            json_object_set_new(req, "path", json_string(name));
        } else {
            json_object_set(req, "text", json_object_get(c, "text"));
        }
        char *line = json_dumps(req, JSON_COMPACT);
        fprintf(f, "%s\n", line);
        free(line);
        json_decref(req);
    }
    fclose(f);
    snprintf(cmd, sizeof cmd, "'%s' batch < '%s'", program, reqs);
    FILE *out = popen(cmd, "r");
    CHECK(out != NULL);
    char *line = NULL;
    size_t cap = 0, answered = 0;
    while (out && getline(&line, &cap, out) > 0) {
        json_t *answer = json_loads(line, 0, NULL), *got = json_object_get(answer, "errors");
        c = json_array_get(cases, answered++);
        char name[512];
        snprintf(name, sizeof name, "%s/%s.json", dir, json_string_value(json_object_get(c, "name")));
        if (!c || !json_is_array(got) || !corpus_matches(c, name, got)) report(c, "iotame-config", answer);
        json_decref(answer);
    }
    free(line);
    CHECK(out && pclose(out) == 0);
    CHECK(answered == json_array_size(cases));
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

static void test_corpus(void)
{
    json_error_t jerr;
    json_t *cases = json_load_file(IOTAME_CONFIG_CASES, 0, &jerr);
    if (!json_is_array(cases) || json_array_size(cases) < 40) {
        fprintf(stderr, "%s: %s\n", IOTAME_CONFIG_CASES, cases ? "expected the array of cases" : jerr.text);
        failures++;
        json_decref(cases);
        return;
    }
    test_corpus_library(cases);
    test_corpus_program(cases, IOTAME_CONFIG_PROGRAM);
    json_decref(cases);
}

int main(void)
{
    test_messages();
    test_rules();
    test_hdf5();
    test_read_file();
    test_corpus();
    if (failures) fprintf(stderr, "test_config: %d check(s) failed\n", failures);
    else printf("test_config: ok\n");
    return failures ? 1 : 0;
}
