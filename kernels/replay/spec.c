/* Replay spec parsing and validation: every key checked, errors naming the spec, the key path and what was
 * expected. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/spec.h"

typedef struct {
    const char *what; /* the spec file, for messages */
    int nprocs, rank;
} replay_spec_ctx_t;

/* Prints "SPEC: KEYPATH: message" (rank 0) and returns IOTAME_EXIT_USAGE. */
static int replay_spec_fail(const replay_spec_ctx_t *c, const char *key, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return iotame_usage_error("replay spec %s: %s%s%s", c->what, key, *key ? ": " : "", msg);
}

static const char *replay_spec_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number with a fraction";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* An integer in [min, max] at key. */
static int replay_spec_uint(const replay_spec_ctx_t *c, const char *key, const json_t *v, uint64_t min, uint64_t max,
                            uint64_t *out)
{
    if (!json_is_integer(v))
        return replay_spec_fail(c, key, "expected an integer >= %llu, got %s", (unsigned long long)min,
                                replay_spec_kind(v));
    json_int_t x = json_integer_value(v);
    if (x < 0 || (uint64_t)x < min || (uint64_t)x > max)
        return replay_spec_fail(c, key, "expected an integer from %llu to %llu, got %lld", (unsigned long long)min,
                                (unsigned long long)max, (long long)x);
    *out = (uint64_t)x;
    return 0;
}

/* Fails on a key of obj not in the NULL-terminated list. */
static int replay_spec_known_keys(const replay_spec_ctx_t *c, const char *key, json_t *obj, const char *const *known)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        bool ok = false;
        for (size_t i = 0; known[i] && !ok; i++) ok = strcmp(known[i], k) == 0;
        if (!ok) {
            char list[256] = "";
            for (size_t i = 0; known[i]; i++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"", i ? ", " : "", known[i]);
            return replay_spec_fail(c, key, "unknown key \"%s\" (expected keys: %s)", k, list);
        }
    }
    return 0;
}

/* One run [offset, length, count, stride]; prev_end: the end of the previous run of the call (file order). */
static int replay_spec_extent(const replay_spec_ctx_t *c, const char *key, const json_t *v, uint64_t prev_end,
                              replay_extent_t *e)
{
    if (!json_is_array(v) || json_array_size(v) != 4)
        return replay_spec_fail(c, key, "expected a run [offset, length, count, stride], got %s%s",
                                replay_spec_kind(v), json_is_array(v) ? " of another size" : "");
    static const char *const names[] = {"offset", "length", "count", "stride"};
    uint64_t x[4];
    for (int i = 0; i < 4; i++) {
        char k[700];
        snprintf(k, sizeof k, "%s[%d] (%s)", key, i, names[i]);
        uint64_t min = i == 2 ? 1 : 0, max = i == 1 ? REPLAY_MAX_CALL_BYTES : REPLAY_MAX_OFFSET;
        if (replay_spec_uint(c, k, json_array_get(v, (size_t)i), min, max, &x[i])) return IOTAME_EXIT_USAGE;
    }
    *e = (replay_extent_t){.offset = x[0], .length = x[1], .count = x[2], .stride = x[3]};
    if (e->length == 0 && e->count != 1)
        return replay_spec_fail(c, key, "a run of length 0 (a call of no bytes) has count 1, got %llu",
                                (unsigned long long)e->count);
    if (e->count > 1 && e->stride < e->length)
        return replay_spec_fail(c, key, "stride %llu is less than length %llu: the pieces overlap",
                                (unsigned long long)e->stride, (unsigned long long)e->length);
    if (e->count > 1 && e->stride > (REPLAY_MAX_OFFSET - e->offset) / (e->count - 1))
        return replay_spec_fail(c, key, "the run ends past offset 2^60");
    if (e->offset < prev_end)
        return replay_spec_fail(c, key, "starts at %llu, before the end of the previous run (%llu): runs must be "
                                "in file order and not overlap", (unsigned long long)e->offset,
                                (unsigned long long)prev_end);
    return 0;
}

static uint64_t replay_extent_end(const replay_extent_t *e)
{
    return e->offset + (e->count - 1) * e->stride + e->length;
}

/* One call object of files[fi].calls[pi]; api of the file. */
static int replay_spec_call(const replay_spec_ctx_t *c, const char *key, json_t *v, iotame_api_t api,
                            replay_call_t *call)
{
    static const char *const known[] = {"op", "at", "repeat", "advance", "gap", NULL};
    memset(call, 0, sizeof *call);
    if (!json_is_object(v)) return replay_spec_fail(c, key, "expected a call object, got %s", replay_spec_kind(v));
    if (replay_spec_known_keys(c, key, v, known)) return IOTAME_EXIT_USAGE;
    char k[512];
    snprintf(k, sizeof k, "%s.op", key);
    const char *op = json_string_value(json_object_get(v, "op"));
    if (!op || strlen(op) != 1 || !strchr("wrWRso", op[0]))
        return replay_spec_fail(c, k, "expected one of \"w\", \"r\", \"W\", \"R\", \"s\", \"o\", got %s",
                                op ? op : json_object_get(v, "op") ? replay_spec_kind(json_object_get(v, "op"))
                                                                   : "nothing");
    call->op = op[0];
    if (api == IOTAME_API_POSIX && replay_op_collective(call->op))
        return replay_spec_fail(c, k, "\"%s\" is collective: it needs api \"MPIIO\", the file is \"POSIX\"", op);
    call->repeat = 1;
    json_t *x;
    if ((x = json_object_get(v, "repeat"))) {
        snprintf(k, sizeof k, "%s.repeat", key);
        if (replay_spec_uint(c, k, x, 1, REPLAY_MAX_OFFSET, &call->repeat)) return IOTAME_EXIT_USAGE;
    }
    call->spec_repeat = call->repeat;
    if ((x = json_object_get(v, "advance"))) {
        snprintf(k, sizeof k, "%s.advance", key);
        if (replay_spec_uint(c, k, x, 0, REPLAY_MAX_OFFSET, &call->advance)) return IOTAME_EXIT_USAGE;
    }
    if ((x = json_object_get(v, "gap"))) {
        snprintf(k, sizeof k, "%s.gap", key);
        if (!json_is_number(x) || json_number_value(x) < 0 || !isfinite(json_number_value(x)))
            return replay_spec_fail(c, k, "expected seconds (a number >= 0), got %s", replay_spec_kind(x));
        call->gap = json_number_value(x);
    }
    json_t *at = json_object_get(v, "at");
    snprintf(k, sizeof k, "%s.at", key);
    if (!replay_op_data(call->op)) {
        if (at && !(json_is_array(at) && json_array_size(at) == 0))
            return replay_spec_fail(c, k, "a %s accesses no data: expected [] or no \"at\"",
                                    call->op == 's' ? "sync" : "reopen");
        return 0;
    }
    if (!at || !json_is_array(at))
        return replay_spec_fail(c, k, "expected an array of runs [offset, length, count, stride], got %s",
                                at ? replay_spec_kind(at) : "nothing");
    if (json_array_size(at) == 0 && !replay_op_collective(call->op))
        return replay_spec_fail(c, k, "an independent call needs at least one run");
    call->nat = json_array_size(at);
    call->at = call->nat ? calloc(call->nat, sizeof *call->at) : NULL;
    uint64_t end = 0;
    for (size_t i = 0; i < call->nat; i++) {
        char ki[640];
        snprintf(ki, sizeof ki, "%s[%zu]", k, i);
        replay_extent_t *e = &call->at[i];
        if (replay_spec_extent(c, ki, json_array_get(at, i), end, e)) return IOTAME_EXIT_USAGE;
        if (e->length == 0 && call->nat > 1)   /* a call of 0 bytes: a read at the end of a file, say */
            return replay_spec_fail(c, ki, "a run of length 0 is a call of no bytes: expected it alone in \"at\"");
        end = replay_extent_end(e);
        call->pieces += e->count;
        if (e->length * e->count > REPLAY_MAX_CALL_BYTES - call->bytes)
            return replay_spec_fail(c, k, "a call moves more than %llu bytes",
                                    (unsigned long long)REPLAY_MAX_CALL_BYTES);
        call->bytes += e->length * e->count;
    }
    if (call->nat && call->repeat > 1 &&
        call->advance > (REPLAY_MAX_OFFSET - end) / (call->repeat - 1))
        return replay_spec_fail(c, key, "repeat x advance goes past offset 2^60");
    return 0;
}

/* Checks that every proc of an MPIIO file has the same collective sequence as its first proc. */
static int replay_spec_sequences(const replay_spec_ctx_t *c, size_t fi, const replay_file_t *f, json_t *calls)
{
    json_t *first = json_array_get(calls, 0);
    for (size_t p = 1; p < f->nprocs; p++) {
        json_t *mine = json_array_get(calls, p);
        size_t a = 0, b = 0, n = 0;
        for (;; a++, b++, n++) {
            const char *opa = NULL, *opb = NULL;
            json_t *ea = NULL, *eb = NULL;
            for (; a < json_array_size(first); a++) {
                ea = json_array_get(first, a);
                opa = json_string_value(json_object_get(ea, "op"));
                if (replay_op_in_sequence(f, opa[0])) break;
            }
            for (; b < json_array_size(mine); b++) {
                eb = json_array_get(mine, b);
                opb = json_string_value(json_object_get(eb, "op"));
                if (replay_op_in_sequence(f, opb[0])) break;
            }
            bool enda = a >= json_array_size(first), endb = b >= json_array_size(mine);
            if (enda && endb) break;
            json_int_t ra = 1, rb = 1;
            if (!enda && json_object_get(ea, "repeat")) ra = json_integer_value(json_object_get(ea, "repeat"));
            if (!endb && json_object_get(eb, "repeat")) rb = json_integer_value(json_object_get(eb, "repeat"));
            if (enda || endb || opa[0] != opb[0] || ra != rb) {
                char desc_a[96], desc_b[96];
                if (enda) snprintf(desc_a, sizeof desc_a, "none");
                else snprintf(desc_a, sizeof desc_a, "\"%s\" repeat %lld (calls[0][%zu])", opa, (long long)ra, a);
                if (endb) snprintf(desc_b, sizeof desc_b, "none");
                else snprintf(desc_b, sizeof desc_b, "\"%s\" repeat %lld (calls[%zu][%zu])", opb, (long long)rb, p, b);
                char key[64];
                snprintf(key, sizeof key, "files[%zu]", fi);
                return replay_spec_fail(c, key, "file \"%s\": the collective calls (W, R, s) differ between proc %d "
                                        "and proc %d at collective entry %zu: %s against %s; every proc of an MPIIO "
                                        "file makes the same collective calls in the same order",
                                        f->name, f->procs[0], f->procs[p], n, desc_a, desc_b);
            }
        }
    }
    return 0;
}

/* Which independent entries of an MPIIO file are made under a file view, as the job made them: where every proc has
 * the same entries (ops and repeats, so --scale cuts them alike; proc 0's list is the reference), at entry j some
 * proc's call is noncontiguous, and no proc's calls there repeat closer than their span (one view holds every call of
 * the entry). Gathered while the calls are parsed; every proc reads the whole spec, so all of them set the
 * (collective) view at the same entries. */
typedef struct {
    size_t n;
    char *op;
    uint64_t *repeat;
    bool *several, *fits, same;
} replay_views_t;

static void replay_spec_views_add(replay_views_t *v, size_t p, size_t j, size_t n, const replay_call_t *call)
{
    if (p == 0 && j == 0) {
        *v = (replay_views_t){.n = n, .op = calloc(n, 1), .repeat = calloc(n, sizeof *v->repeat),
                              .several = calloc(n, sizeof *v->several), .fits = calloc(n, sizeof *v->fits),
                              .same = true};
        for (size_t k = 0; k < n; k++) v->fits[k] = true;
    }
    if (p == 0) {
        v->op[j] = call->op;
        v->repeat[j] = call->repeat;
    }
    v->same &= n == v->n && call->op == v->op[j] && call->repeat == v->repeat[j];
    if (!v->same || !(call->op == 'w' || call->op == 'r') || call->nat == 0) return;
    const replay_extent_t *e = &call->at[0];
    v->several[j] |= call->nat > 1 || (e->count > 1 && e->stride != e->length);
    v->fits[j] &= call->repeat == 1 || call->advance >= replay_call_span(call);
}

/* Marks this rank's viewed entries. */
static void replay_spec_views_mark(const replay_views_t *v, replay_file_t *f)
{
    for (size_t j = 0; j < f->ncalls && v->same && v->n == f->ncalls; j++)
        f->calls[j].viewed = v->several[j] && v->fits[j];
}

static void replay_spec_views_free(replay_views_t *v)
{
    free(v->op);
    free(v->repeat);
    free(v->several);
    free(v->fits);
}

/* A relative path without "..", "." or empty components. */
static bool replay_spec_name_ok(const char *name)
{
    if (!*name || name[0] == '/') return false;
    const char *p = name;
    while (*p) {
        size_t n = strcspn(p, "/");
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) return false;
        p += n;
        if (*p == '/') p++;
        if (!*p && p[-1] == '/') return false;
    }
    return true;
}

static int replay_spec_file(const replay_spec_ctx_t *c, size_t fi, json_t *v, const char *dir, replay_file_t *f)
{
    static const char *const known[] = {"name", "path", "api", "procs", "preload", "calls", NULL};
    char key[64], k[128];
    snprintf(key, sizeof key, "files[%zu]", fi);
    f->me = -1;
    if (!json_is_object(v)) return replay_spec_fail(c, key, "expected a file object, got %s", replay_spec_kind(v));
    if (replay_spec_known_keys(c, key, v, known)) return IOTAME_EXIT_USAGE;
    snprintf(k, sizeof k, "%s.name", key);
    const char *name = json_string_value(json_object_get(v, "name"));
    if (!name) return replay_spec_fail(c, k, "expected a file name (a string)");
    if (!replay_spec_name_ok(name))
        return replay_spec_fail(c, k, "\"%s\": expected a relative path without \"..\", \".\" or empty parts", name);
    f->name = strdup(name);
    f->path = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(f->path, "%s/%s", dir, name);
    snprintf(k, sizeof k, "%s.api", key);
    const char *api = json_string_value(json_object_get(v, "api"));
    if (!api || (strcmp(api, "MPIIO") != 0 && strcmp(api, "POSIX") != 0))
        return replay_spec_fail(c, k, "expected \"MPIIO\" or \"POSIX\"");
    f->api = strcmp(api, "MPIIO") == 0 ? IOTAME_API_MPIIO : IOTAME_API_POSIX;

    snprintf(k, sizeof k, "%s.procs", key);
    json_t *procs = json_object_get(v, "procs");
    if (!json_is_array(procs) || json_array_size(procs) == 0)
        return replay_spec_fail(c, k, "expected a non-empty array of ranks");
    f->nprocs = json_array_size(procs);
    f->procs = calloc(f->nprocs, sizeof *f->procs);
    for (size_t i = 0; i < f->nprocs; i++) {
        char ki[160];
        uint64_t r;
        snprintf(ki, sizeof ki, "%s[%zu]", k, i);
        if (replay_spec_uint(c, ki, json_array_get(procs, i), 0, (uint64_t)c->nprocs - 1, &r)) return IOTAME_EXIT_USAGE;
        if (i > 0 && (int)r <= f->procs[i - 1])
            return replay_spec_fail(c, ki, "expected ranks in increasing order without repeats");
        f->procs[i] = (int)r;
        if ((int)r == c->rank) f->me = (int)i;
    }

    json_t *pre = json_object_get(v, "preload");
    snprintf(k, sizeof k, "%s.preload", key);
    if (pre && !json_is_array(pre)) return replay_spec_fail(c, k, "expected an array of [offset, length]");
    f->npreload = pre ? json_array_size(pre) : 0;
    f->preload = f->npreload ? calloc(f->npreload, sizeof *f->preload) : NULL;
    for (size_t i = 0; i < f->npreload; i++) {
        char ki[160], kj[180];
        json_t *r = json_array_get(pre, i);
        snprintf(ki, sizeof ki, "%s[%zu]", k, i);
        if (!json_is_array(r) || json_array_size(r) != 2)
            return replay_spec_fail(c, ki, "expected a range [offset, length], got %s", replay_spec_kind(r));
        for (size_t j = 0; j < 2; j++) {
            snprintf(kj, sizeof kj, "%s[%zu]", ki, j);
            if (replay_spec_uint(c, kj, json_array_get(r, j), 0, REPLAY_MAX_OFFSET, &f->preload[i][j]))
                return IOTAME_EXIT_USAGE;
        }
        if (f->preload[i][1] > REPLAY_MAX_OFFSET - f->preload[i][0])
            return replay_spec_fail(c, ki, "the range ends past offset 2^60");
    }

    snprintf(k, sizeof k, "%s.calls", key);
    json_t *calls = json_object_get(v, "calls");
    if (!json_is_array(calls) || json_array_size(calls) != f->nprocs)
        return replay_spec_fail(c, k, "expected an array of %zu call lists (one per entry of procs), got %s%s",
                                f->nprocs, calls ? replay_spec_kind(calls) : "nothing",
                                json_is_array(calls) ? " of another size" : "");
    replay_views_t views = {.same = true};
    int rc = 0;
    for (size_t p = 0; p < f->nprocs && !rc; p++) {
        char kp[160];
        json_t *list = json_array_get(calls, p);
        snprintf(kp, sizeof kp, "%s[%zu]", k, p);
        if (!json_is_array(list)) {
            rc = replay_spec_fail(c, kp, "expected an array of calls, got %s", replay_spec_kind(list));
            break;
        }
        bool mine = (int)p == f->me;
        if (mine) {
            f->ncalls = json_array_size(list);
            f->calls = f->ncalls ? calloc(f->ncalls, sizeof *f->calls) : NULL;
        }
        for (size_t i = 0; i < json_array_size(list) && !rc; i++) {
            char kc[200];
            replay_call_t tmp, *call = mine ? &f->calls[i] : &tmp;
            snprintf(kc, sizeof kc, "%s[%zu]", kp, i);
            rc = replay_spec_call(c, kc, json_array_get(list, i), f->api, call);
            if (!rc) replay_spec_views_add(&views, p, i, json_array_size(list), call);
            if (!mine) free(tmp.at);
        }
    }
    if (!rc && f->api == IOTAME_API_MPIIO) rc = replay_spec_sequences(c, fi, f, calls);
    if (!rc && f->api == IOTAME_API_MPIIO) replay_spec_views_mark(&views, f);
    replay_spec_views_free(&views);
    return rc;
}

int replay_spec_parse(iotame_run_t *run, const char *text, size_t len, const char *what, const char *dir,
                      replay_spec_t *spec)
{
    static const char *const known[] = {"replay", "source", "nprocs", "files", NULL};
    replay_spec_ctx_t c = {.what = what, .nprocs = run->nprocs, .rank = run->rank};
    memset(spec, 0, sizeof *spec);
    json_error_t err;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    if (!root) return replay_spec_fail(&c, "", "not valid JSON: %s (line %d, column %d)", err.text, err.line,
                                       err.column);
    int rc = IOTAME_EXIT_USAGE;
    uint64_t version, nprocs;
    json_t *files = json_object_get(root, "files");
    if (!json_is_object(root)) {
        replay_spec_fail(&c, "", "expected a JSON object, got %s", replay_spec_kind(root));
    } else if (replay_spec_known_keys(&c, "", root, known)) {
    } else if (replay_spec_uint(&c, "replay", json_object_get(root, "replay"), 1, 1, &version)) {
    } else if (replay_spec_uint(&c, "nprocs", json_object_get(root, "nprocs"), 1, INT32_MAX, &nprocs)) {
    } else if ((int)nprocs != run->nprocs) {
        replay_spec_fail(&c, "nprocs", "the spec is for a job of %llu processes, this job has %d: run it with "
                         "%llu", (unsigned long long)nprocs, run->nprocs, (unsigned long long)nprocs);
    } else if (!json_is_array(files)) {
        replay_spec_fail(&c, "files", "expected an array of files, got %s",
                         files ? replay_spec_kind(files) : "nothing");
    } else {
        rc = IOTAME_EXIT_OK;
        spec->nfiles = json_array_size(files);
        spec->files = calloc(spec->nfiles ? spec->nfiles : 1, sizeof *spec->files);
        for (size_t i = 0; i < spec->nfiles && !rc; i++) {
            rc = replay_spec_file(&c, i, json_array_get(files, i), dir, &spec->files[i]);
            for (size_t j = 0; j < i && !rc; j++)
                if (strcmp(spec->files[j].name, spec->files[i].name) == 0) {
                    char key[64];
                    snprintf(key, sizeof key, "files[%zu].name", i);
                    rc = replay_spec_fail(&c, key, "\"%s\" is also files[%zu]: names must be unique",
                                          spec->files[i].name, j);
                }
        }
        json_t *src = json_object_get(root, "source");
        if (src) spec->source = json_incref(src);
    }
    json_decref(root);
    if (rc) replay_spec_free(spec);
    return rc;
}

void replay_spec_scale(replay_spec_t *spec, double f)
{
    for (size_t i = 0; i < spec->nfiles; i++) {
        replay_file_t *file = &spec->files[i];
        uint64_t n[2] = {0, 0}; /* [0] independent, [1] collective calls */
        for (size_t j = 0; j < file->ncalls; j++)
            if (replay_op_data(file->calls[j].op))
                n[replay_op_collective(file->calls[j].op)] += file->calls[j].repeat = file->calls[j].spec_repeat;
        uint64_t left[2] = {(uint64_t)ceil(f * (double)n[0]), (uint64_t)ceil(f * (double)n[1])};
        for (size_t j = 0; j < file->ncalls; j++) {
            replay_call_t *call = &file->calls[j];
            if (!replay_op_data(call->op)) continue;
            uint64_t *l = &left[replay_op_collective(call->op)];
            if (call->repeat > *l) call->repeat = *l;
            *l -= call->repeat;
        }
    }
}

void replay_spec_free(replay_spec_t *spec)
{
    for (size_t i = 0; i < spec->nfiles; i++) {
        replay_file_t *f = &spec->files[i];
        for (size_t j = 0; j < f->ncalls; j++) free(f->calls[j].at);
        free(f->calls);
        free(f->preload);
        free(f->procs);
        free(f->name);
        free(f->path);
    }
    free(spec->files);
    if (spec->source) json_decref(spec->source);
    memset(spec, 0, sizeof *spec);
}

uint64_t replay_call_span(const replay_call_t *c)
{
    const replay_extent_t *e = &c->at[c->nat - 1];
    return e->offset + (e->count - 1) * e->stride + e->length - c->at[0].offset;
}

bool replay_op_collective(char op)
{
    return op == 'W' || op == 'R';
}

bool replay_op_in_sequence(const replay_file_t *f, char op)
{
    return f->api == IOTAME_API_MPIIO && (op == 'W' || op == 'R' || op == 's' || op == 'o');
}

bool replay_op_data(char op)
{
    return op != 's' && op != 'o';
}
