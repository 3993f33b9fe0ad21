/* profile/load.c: the machine profile that `iotame calibrate` writes (JSON, docs/formats.md "Machine profile") read
 * into the cost model's iotame_profile_t (select/select.h), checked key by key and then by the model itself. It is
 * the runtime's one validator of a profile: `iotame-config profile` runs it, so it needs no MPI.
 * docs/design/cost-model.md gives the mapping of keys to fields and the values taken for what the profile leaves
 * out. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fit.h"
#include "profile.h"

#define PROFILE_VERSION 2 /* 2 adds "strategies" (the strategies measured, the fit); 1 still loads */
#define PROFILE_KIND "iotame-machine-profile"
#define PROFILE_MB 1e6 /* MB/s in the JSON: 10^6 bytes */

/* What the profile leaves out (docs/design/cost-model.md, "From the JSON profile"). */
#define PROFILE_SYSCALL_SECONDS 1e-6     /* a call served from the page cache, without its copy */
#define PROFILE_PIECE_SECONDS 20e-9      /* one software pass over a piece: some tens of instructions */
#define PROFILE_UNSTRIPED_UNIT 1048576.0 /* the unit of a file on one target: it only rounds windows then */
#define PROFILE_INTRA_LATENCY 1e-6       /* network null: shared memory */
#define PROFILE_INTER_LATENCY 50e-6      /* network null: 1 Gbit/s Ethernet, the slowest link a cluster has */
#define PROFILE_INTER_RATE 125e6

/* The problems found so far: one "iotame: profile FILE: KEY: expected ..., got ..." line each. */
typedef struct {
    const char *file;
    char *text;
    size_t len, cap;
    int oom;
} profile_errors_t;

static void profile_add(profile_errors_t *e, const char *fmt, ...)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "iotame: profile %s: ", e->file);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < sizeof line) vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    size_t add = strlen(line) + 1;
    if (e->len + add + 1 > e->cap) {
        size_t cap = (e->len + add + 1) * 2;
        char *grown = realloc(e->text, cap);
        if (!grown) {
            e->oom = 1;
            return;
        }
        e->text = grown;
        e->cap = cap;
    }
    memcpy(e->text + e->len, line, add - 1);
    e->len += add;
    e->text[e->len - 1] = '\n';
    e->text[e->len] = '\0';
}

/* A value as the messages show it (as the Python validator does): "missing", "object", "array", or its JSON,
 * cut to 40 characters. */
static void profile_render(const json_t *v, char *out, size_t size)
{
    if (!v) snprintf(out, size, "missing");
    else if (json_is_object(v)) snprintf(out, size, "object");
    else if (json_is_array(v)) snprintf(out, size, "array");
    else {
        char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15));
        if (text && strlen(text) > 40) snprintf(out, size, "%.37s...", text);
        else snprintf(out, size, "%s", text ? text : "?");
        free(text);
    }
}

static void profile_expected(profile_errors_t *e, const char *key, const char *expected, const json_t *got)
{
    char shown[64];
    profile_render(got, shown, sizeof shown);
    if (!got) profile_add(e, "%s: expected %s, missing", key, expected); /* as the Python validator says it */
    else profile_add(e, "%s: expected %s, got %s", key, expected, shown);
}

static int profile_is_number(const json_t *v)
{
    return json_is_integer(v) || (json_is_real(v) && isfinite(json_real_value(v)));
}

/* obj.key as an object, or NULL (the problem added). */
static json_t *profile_section(profile_errors_t *e, const json_t *obj, const char *parent, const char *key)
{
    char name[256];
    snprintf(name, sizeof name, "%s%s%s", parent, *parent ? "." : "", key);
    json_t *v = json_object_get(obj, key);
    if (json_is_object(v)) return v;
    profile_expected(e, name, "an object", v);
    return NULL;
}

/* parent.key as a number >= min (> min when `above`; an integer when `integer`) into *out; -1 (the problem added)
 * when it is not. Absent and `optional`: *out keeps its default. `unit` (may be "") follows the expectation. */
static int profile_number(profile_errors_t *e, const json_t *obj, const char *parent, const char *key, double min,
                          int above, int integer, int optional, const char *unit, double *out)
{
    char name[256], expected[128];
    snprintf(name, sizeof name, "%s.%s", parent, key);
    snprintf(expected, sizeof expected, "%s %s %g%s", integer ? "an integer" : "a number", above ? ">" : ">=", min,
             unit);
    json_t *v = json_object_get(obj, key);
    if (!v && optional) return 0;
    double d = json_is_integer(v) ? (double)json_integer_value(v) : json_is_real(v) ? json_real_value(v) : NAN;
    if (!v || (integer && !json_is_integer(v)) || !profile_is_number(v) || (above ? !(d > min) : !(d >= min))) {
        profile_expected(e, name, expected, v);
        return -1;
    }
    *out = d;
    return 0;
}

/* parent.key as a non-empty string satisfying ok (NULL: any). */
static void profile_string(profile_errors_t *e, const json_t *obj, const char *parent, const char *key,
                           int (*ok)(const char *), const char *expected)
{
    char name[256];
    snprintf(name, sizeof name, "%s.%s", parent, key);
    json_t *v = json_object_get(obj, key);
    const char *s = json_string_value(v);
    if (!s || !*s || (ok && !ok(s))) profile_expected(e, name, expected, v);
}

/* parent.key as a curve of [x, MB/s] pairs: x an integer >= x_min, strictly increasing, MB/s > 0, at most
 * IOTAME_MODEL_POINTS points; y converted to bytes per second. -1 (the problem added) when it is not. */
static int profile_curve(profile_errors_t *e, const json_t *obj, const char *parent, const char *key, int64_t x_min,
                         const char *x_expected, iotame_model_curve_t *out)
{
    char name[256], sub[300], expected[160];
    snprintf(name, sizeof name, "%s.%s", parent, key);
    json_t *points = json_object_get(obj, key);
    if (!json_is_array(points) || json_array_size(points) == 0) {
        snprintf(expected, sizeof expected, "a non-empty array of [%s, MB/s > 0] pairs", x_expected);
        profile_expected(e, name, expected, points);
        return -1;
    }
    if (json_array_size(points) > IOTAME_MODEL_POINTS) {
        profile_add(e, "%s: expected at most %d points, got %zu", name, IOTAME_MODEL_POINTS, json_array_size(points));
        return -1;
    }
    out->n = (int)json_array_size(points);
    for (int i = 0; i < out->n; i++) {
        json_t *pt = json_array_get(points, (size_t)i), *x = json_array_get(pt, 0), *y = json_array_get(pt, 1);
        snprintf(sub, sizeof sub, "%s[%d]", name, i);
        if (!json_is_array(pt) || json_array_size(pt) != 2 || !json_is_integer(x) || json_integer_value(x) < x_min ||
            !profile_is_number(y) || !(json_number_value(y) > 0)) {
            snprintf(expected, sizeof expected, "[%s, MB/s > 0]", x_expected);
            profile_expected(e, sub, expected, pt);
            return -1;
        }
        out->x[i] = (double)json_integer_value(x);
        out->y[i] = json_number_value(y) * PROFILE_MB;
        if (i > 0 && !(out->x[i] > out->x[i - 1])) {
            snprintf(sub, sizeof sub, "%s[%d][0]", name, i);
            snprintf(expected, sizeof expected, "more than %.0f (increasing)", out->x[i - 1]);
            profile_expected(e, sub, expected, x);
            return -1;
        }
    }
    return 0;
}

static int profile_is_hex(const char *s)
{
    return s[0] == '0' && s[1] == 'x' && s[2] && strspn(s + 2, "0123456789abcdefABCDEF") == strlen(s + 2);
}

static int profile_is_device(const char *s)
{
    size_t major = strspn(s, "0123456789");
    return major > 0 && s[major] == ':' && s[major + 1] && strspn(s + major + 1, "0123456789") == strlen(s + major + 1);
}

/* filesystem: the profile's key; targets and stripe_unit are the model's. A stripe unit of 0 (not striped) is
 * taken as PROFILE_UNSTRIPED_UNIT on one target; striped over several targets it needs a unit. */
static void profile_filesystem(profile_errors_t *e, const json_t *fs, iotame_profile_t *out)
{
    double targets = 1, unit = 0;
    profile_string(e, fs, "filesystem", "path", NULL, "a path");
    profile_string(e, fs, "filesystem", "type", NULL, "a file-system type name");
    profile_string(e, fs, "filesystem", "magic", profile_is_hex, "the statfs magic as \"0x...\" hexadecimal");
    profile_string(e, fs, "filesystem", "device", profile_is_device, "\"major:minor\"");
    int ok = profile_number(e, fs, "filesystem", "targets", 1, 0, 1, 0, "", &targets) == 0;
    ok &= profile_number(e, fs, "filesystem", "stripe_unit", 0, 0, 1, 0, " (bytes; 0: no striping)", &unit) == 0;
    if (ok && unit == 0 && targets > 1)
        profile_add(e, "filesystem.stripe_unit: expected bytes >= 1 for a file striped over %.0f targets, got 0",
                    targets);
    out->targets = (int64_t)targets;
    out->stripe_unit = unit > 0 ? (int64_t)unit : (int64_t)PROFILE_UNSTRIPED_UNIT;
}

/* Each direction's relative streams curve (its absolute one divided by its own one-stream figure; the throttle's),
 * and the model's one streams curve from them: at every stream count both directions measured the geometric mean
 * of the two (the model uses one curve for reads and writes: the geometric mean leaves each direction the same
 * relative error, the smallest the larger of the two can be). */
static void profile_streams(profile_errors_t *e, const json_t *st, iotame_profile_t *out)
{
    static const char *dirs[2] = {"write", "read"};
    iotame_model_curve_t absolute[2];
    int ok = 1;
    json_t *streams = profile_section(e, st, "storage", "streams");
    if (!streams) return;
    for (int d = 0; d < 2; d++) {
        if (profile_curve(e, streams, "storage.streams", dirs[d], 1, "streams >= 1", &absolute[d]) != 0) {
            ok = 0;
        } else if (absolute[d].x[0] != 1) {
            profile_add(e, "storage.streams.%s[0][0]: expected 1 (the one-stream figure the curve is relative to), "
                           "got %.0f", dirs[d], absolute[d].x[0]);
            ok = 0;
        }
    }
    if (!ok) return;
    iotame_model_curve_t *relative[2] = {&out->streams_write, &out->streams_read};
    for (int d = 0; d < 2; d++) {
        *relative[d] = absolute[d];
        for (int i = 0; i < absolute[d].n; i++) relative[d]->y[i] = absolute[d].y[i] / absolute[d].y[0];
    }
    out->streams.n = 0;
    const iotame_model_curve_t *w = &absolute[0], *r = &absolute[1];
    for (int i = 0; i < w->n; i++)
        for (int j = 0; j < r->n; j++)
            if (r->x[j] == w->x[i]) {
                out->streams.x[out->streams.n] = w->x[i];
                out->streams.y[out->streams.n++] = sqrt(w->y[i] / w->y[0] * (r->y[j] / r->y[0]));
            }
}

static void profile_storage(profile_errors_t *e, const json_t *st, iotame_profile_t *out)
{
    static const char *dirs[2] = {"write", "read"}, *patterns[2] = {"sequential", "scattered"};
    iotame_model_curve_t *curves[2][2] = {{&out->write_seq, &out->write_scattered},
                                          {&out->read_seq, &out->read_scattered}};
    char parent[64];
    for (int d = 0; d < 2; d++) {
        json_t *sec = profile_section(e, st, "storage", dirs[d]);
        snprintf(parent, sizeof parent, "storage.%s", dirs[d]);
        for (int p = 0; sec && p < 2; p++)
            profile_curve(e, sec, parent, patterns[p], 1, "request bytes > 0", curves[d][p]);
    }
    profile_streams(e, st, out);
    json_t *wb = profile_section(e, st, "storage", "write_back");
    double mbs = 0;
    if (wb) {
        profile_number(e, wb, "storage.write_back", "absorbed_bytes", 0, 0, 1, 0, "", &out->writeback_bytes);
        profile_number(e, wb, "storage.write_back", "absorbed_mbs", 0, 0, 0, 0, "", &mbs);
    }
    out->writeback_rate = out->writeback_bytes > 0 ? mbs * PROFILE_MB : 0;
    const char *from = json_string_value(json_object_get(st, "reads_from"));
    if (!from || (strcmp(from, "storage") != 0 && strcmp(from, "page cache") != 0))
        profile_expected(e, "storage.reads_from", "\"storage\" or \"page cache\"", json_object_get(st, "reads_from"));
    double us = PROFILE_SYSCALL_SECONDS * 1e6;
    profile_number(e, st, "storage", "syscall_us", 0, 0, 0, 1, " (microseconds)", &us);
    out->syscall_seconds = us * 1e-6;
}

/* network.intra or .inter: {"latency_us": >= 0, "mbs": > 0}. */
static void profile_link(profile_errors_t *e, const json_t *link, const char *name, double *latency, double *rate)
{
    double us = 0, mbs = 0;
    if (profile_number(e, link, name, "latency_us", 0, 0, 0, 0, " (microseconds)", &us) == 0) *latency = us * 1e-6;
    if (profile_number(e, link, name, "mbs", 0, 1, 0, 0, " (MB/s)", &mbs) == 0) *rate = mbs * PROFILE_MB;
}

/* network.allgather or .alltoallv, when present: [[processes >= 1, bytes >= 0, microseconds >= 0], ...]; 0 when
 * present and valid. alltoallv over several nodes gives the model its exchange curve (profile_exchange); the
 * allgather rows are checked so that a profile the runtime accepts is whole. */
static int profile_collective(profile_errors_t *e, const json_t *net, const char *key)
{
    json_t *rows = json_object_get(net, key), *row;
    char name[64];
    size_t i;
    if (!rows) return -1;
    snprintf(name, sizeof name, "network.%s", key);
    if (!json_is_array(rows)) {
        profile_expected(e, name, "an array of [processes, bytes, microseconds] rows", rows);
        return -1;
    }
    json_array_foreach(rows, i, row) {
        json_t *p = json_array_get(row, 0), *b = json_array_get(row, 1), *t = json_array_get(row, 2);
        if (!json_is_array(row) || json_array_size(row) != 3 || !json_is_integer(p) || json_integer_value(p) < 1 ||
            !json_is_integer(b) || json_integer_value(b) < 0 || !profile_is_number(t) || json_number_value(t) < 0) {
            snprintf(name, sizeof name, "network.%s[%zu]", key, i);
            profile_expected(e, name, "[processes >= 1, bytes >= 0, microseconds >= 0]", row);
            return -1;
        }
    }
    return 0;
}

/* The model's exchange curve from checked alltoallv rows over several nodes: at each size per pair (ascending, the
 * rows of the most processes), a node sends ppn x (processes - ppn) x bytes to the other nodes in the row's time. Rows of no bytes or no
 * time say nothing of a rate and are left out; a curve of fewer than two points is none. */
static void profile_exchange(const json_t *net, double ppn, iotame_model_curve_t *out)
{
    const json_t *rows = json_object_get(net, "alltoallv"), *row;
    json_int_t most = 0;
    size_t i;
    json_array_foreach(rows, i, row) {
        const json_int_t procs = json_integer_value(json_array_get(row, 0));
        most = procs > most ? procs : most;
    }
    out->n = 0;
    json_array_foreach(rows, i, row) {
        const double procs = (double)json_integer_value(json_array_get(row, 0));
        const double bytes = (double)json_integer_value(json_array_get(row, 1));
        const double us = json_number_value(json_array_get(row, 2));
        if (procs != (double)most || procs <= ppn || bytes <= 0 || us <= 0 || out->n == IOTAME_MODEL_POINTS ||
            (out->n && bytes <= out->x[out->n - 1]))
            continue;
        out->x[out->n] = bytes;
        out->y[out->n++] = ppn * (procs - ppn) * bytes / (us * 1e-6);
    }
    if (out->n < 2) out->n = 0;
}

/* network.intra or .inter (`kind`) as the layout allows it: an object, or null where the layout has no such pair
 * (allowed_null; why_null says when that is). The expectations read as the Python validator's. */
static void profile_pair(profile_errors_t *e, const json_t *net, const char *kind, int allowed_null,
                         const char *why_null, double *latency, double *rate)
{
    char name[32], expected[128];
    snprintf(name, sizeof name, "network.%s", kind);
    snprintf(expected, sizeof expected, allowed_null ? "an object {latency_us, mbs} or null (%s)"
                                                     : "an object {latency_us, mbs} (null only with %s)", why_null);
    json_t *v = json_object_get(net, kind);
    if (json_is_object(v)) profile_link(e, v, name, latency, rate);
    else if (!v || !json_is_null(v) || !allowed_null) profile_expected(e, name, expected, v);
}

/* network: null (not measured) takes shared memory at half the copy rate (a byte is copied into a shared buffer
 * and out of it) and 1 Gbit/s Ethernet between nodes; a pair the layout did not have (intra with one process per
 * node, inter on one node) keeps its default. */
static void profile_network(profile_errors_t *e, const json_t *root, double count, double ppn, iotame_profile_t *out)
{
    json_t *net = json_object_get(root, "network");
    out->intra_latency = PROFILE_INTRA_LATENCY;
    out->intra_rate = out->copy_rate / 2;
    out->inter_latency = PROFILE_INTER_LATENCY;
    out->inter_rate = PROFILE_INTER_RATE;
    if (json_is_null(net)) return;
    if (!json_is_object(net)) {
        profile_expected(e, "network", "null (not measured) or an object", net);
        return;
    }
    profile_pair(e, net, "intra", ppn == 1, "1 process per node", &out->intra_latency, &out->intra_rate);
    if (count == 1) {
        json_t *inter = json_object_get(net, "inter");
        if (!json_is_null(inter))
            profile_expected(e, "network.inter", "null (nodes.count is 1: no pair across nodes)", inter);
    } else {
        profile_pair(e, net, "inter", 0, "nodes.count 1", &out->inter_latency, &out->inter_rate);
    }
    profile_collective(e, net, "allgather");
    if (profile_collective(e, net, "alltoallv") == 0 && count > 1) profile_exchange(net, ppn, &out->exchange);
}

/* strategies (version 2, optional): the runtime reads only its fit (fit.c); the measured rows are calibrate's. */
static void profile_strategies(profile_errors_t *e, const json_t *root, iotame_profile_t *out)
{
    const json_t *st = json_object_get(root, "strategies");
    if (!st || json_is_null(st)) return;
    if (!json_is_object(st)) {
        profile_expected(e, "strategies", "an object (what calibrate measured of the strategies) or null", st);
        return;
    }
    iotame_fit_problem_t problem;
    if (iotame__profile_fit_read(st, out, &problem) != 0)
        profile_expected(e, problem.key, problem.expected, problem.got);
}

/* Every key of a parsed profile into *out (problems added to e). */
static void profile_convert(profile_errors_t *e, const json_t *root, iotame_profile_t *out)
{
    if (!json_is_object(root)) {
        profile_expected(e, "(top level)", "an object", root);
        return;
    }
    const char *kind = json_string_value(json_object_get(root, "kind"));
    if (!kind || strcmp(kind, PROFILE_KIND) != 0) { /* not a profile at all: the rest would be noise */
        profile_expected(e, "kind", "\"" PROFILE_KIND "\"", json_object_get(root, "kind"));
        return;
    }
    json_t *version = json_object_get(root, "version");
    if (!json_is_integer(version) || json_integer_value(version) < 1 || json_integer_value(version) > PROFILE_VERSION) {
        profile_expected(e, "version", "the integer 1 or 2", version);
        return;
    }
    json_t *fs = profile_section(e, root, "", "filesystem"), *nodes = profile_section(e, root, "", "nodes"),
           *st = profile_section(e, root, "", "storage"), *mem = profile_section(e, root, "", "memory");
    if (fs) profile_filesystem(e, fs, out);
    double count = 1, ppn = 1, ns = PROFILE_PIECE_SECONDS * 1e9, mbs = 0;
    if (nodes) { /* the layout measured: part of the profile's key, not of the model */
        profile_number(e, nodes, "nodes", "count", 1, 0, 1, 0, "", &count);
        profile_number(e, nodes, "nodes", "processes_per_node", 1, 0, 1, 0, "", &ppn);
    }
    if (st) profile_storage(e, st, out);
    if (mem && profile_number(e, mem, "memory", "copy_mbs", 0, 1, 0, 0, " (MB/s)", &mbs) == 0)
        out->copy_rate = mbs * PROFILE_MB;
    if (mem) profile_number(e, mem, "memory", "piece_ns", 0, 0, 0, 1, " (nanoseconds)", &ns);
    out->piece_seconds = ns * 1e-9;
    if (!json_object_get(root, "network")) profile_expected(e, "network", "null (not measured) or an object", NULL);
    else profile_network(e, root, count, ppn, out);
    profile_strategies(e, root, out);
}

/* The file's text (malloc'd) into *text; 0 or a negative errno. */
static int profile_read(const char *path, char **text, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -errno;
    size_t cap = 65536, n = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        char *grown = n == cap ? realloc(buf, cap *= 2) : buf;
        if (!grown) free(buf);
        buf = grown;
    }
    int rc = !buf ? -ENOMEM : ferror(f) ? -EIO : 0;
    fclose(f);
    if (rc != 0) free(buf);
    *text = rc == 0 ? buf : NULL;
    *len = n;
    return rc;
}

int iotame_profile_load(const char *path, const char *text, size_t len, iotame_profile_t *out, char **errors)
{
    char *own = NULL;
    int rc = 0;
    *errors = NULL;
    if (!text && (rc = profile_read(path, &own, &len)) != 0) {
        memset(out, 0, sizeof *out);
        profile_errors_t e = {.file = path};
        profile_add(&e, "cannot read: %s", strerror(-rc));
        *errors = e.text;
        return rc;
    }
    json_error_t jerr;
    json_t *root = json_loadb(own ? own : text, len, IOTAME_PROFILE_JSON_FLAGS, &jerr);
    free(own);
    rc = iotame_profile_load_parsed(path, root, &jerr, out, errors);
    json_decref(root);
    return rc;
}

int iotame_profile_load_parsed(const char *path, const json_t *root, const json_error_t *jerr, iotame_profile_t *out,
                               char **errors)
{
    profile_errors_t e = {.file = path};
    memset(out, 0, sizeof *out);
    *errors = NULL;
    if (!root) profile_add(&e, "not JSON: %s (line %d, column %d)", jerr->text, jerr->line, jerr->column);
    else profile_convert(&e, root, out);
    if (e.len == 0) { /* the model's own check: what the keys cannot say (a curve the model cannot use) */
        const char *problem = iotame_model_profile_problem(out);
        const char *colon = problem ? strstr(problem, ": ") : NULL;
        if (colon)
            profile_add(&e, "%.*s: expected %s, got a value the cost model refuses", (int)(colon - problem), problem,
                        colon + 2);
    }
    if (e.oom) {
        free(e.text);
        return -ENOMEM;
    }
    *errors = e.text;
    return e.len ? -EINVAL : 0;
}
