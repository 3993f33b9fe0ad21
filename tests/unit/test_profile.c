/* Unit tests of the machine profile's reader (runtime/src/profile/load.c): a profile shaped as `iotame
 * calibrate` writes it (tests/unit/data/profile_sample.json) becomes the cost model's iotame_profile_t in its units
 * (MB/s to bytes per second, the absolute streams curves to one relative curve, microseconds and nanoseconds to
 * seconds, the values taken for what it leaves out); each kind of bad input is refused with the file and the key
 * named, every problem listed. No MPI call is made (mpi.h only for the types strategy.h names). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "profile/profile.h"

#include "check.h"

#define NEAR(a, b) (fabs((a) - (b)) <= 1e-9 * fabs(b))

/* The sample profile, parsed (the caller decrefs). */
static json_t *sample(void)
{
    json_error_t jerr;
    json_t *root = json_load_file(IOTAME_PROFILE_SAMPLE, 0, &jerr);
    if (!root) fprintf(stderr, "%s: %s\n", IOTAME_PROFILE_SAMPLE, jerr.text);
    return root;
}

/* The value at a dotted path of objects ("storage.write"), or NULL. */
static json_t *at(json_t *root, const char *path)
{
    char buf[256], *save = NULL;
    snprintf(buf, sizeof buf, "%s", path);
    for (char *key = strtok_r(buf, ".", &save); key && root; key = strtok_r(NULL, ".", &save))
        root = json_object_get(root, key);
    return root;
}

/* Loads `root` (decref'd here) as the text of "bad.json"; its errors into *errors (the caller frees them). */
static int load(json_t *root, iotame_profile_t *p, char **errors)
{
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    int rc = iotame_profile_load("bad.json", text, strlen(text), p, errors);
    free(text);
    return rc;
}

static int lines(const char *text)
{
    int n = 0;
    for (; text && *text; text++) n += *text == '\n';
    return n;
}

/* root refused, with exactly `count` problem lines, one of them `line`. */
static void check_refused(json_t *root, const char *line, int count)
{
    iotame_profile_t p;
    char *errors = NULL;
    int rc = load(root, &p, &errors);
    CHECK(rc == -EINVAL);
    CHECK(errors && strstr(errors, line));
    CHECK(lines(errors) == count);
    if (!errors || !strstr(errors, line) || lines(errors) != count)
        fprintf(stderr, "expected %d line(s) with \"%s\", got:\n%s", count, line, errors ? errors : "(none)\n");
    free(errors);
}

static void test_sample_converts(void)
{
    iotame_profile_t p;
    char *errors = NULL;
    CHECK(iotame_profile_load(IOTAME_PROFILE_SAMPLE, NULL, 0, &p, &errors) == 0);
    CHECK(errors == NULL);
    free(errors);
    /* curves: sizes as they are, MB/s (10^6 bytes) to bytes per second */
    CHECK(p.write_seq.n == 4 && p.write_seq.x[0] == 4096 && p.write_seq.x[3] == 16777216);
    CHECK(NEAR(p.write_seq.y[1], 801.2e6));
    CHECK(NEAR(p.write_scattered.y[0], 12.1e6));
    CHECK(NEAR(p.read_seq.y[3], 1420.0e6));
    CHECK(p.read_scattered.n == 4 && NEAR(p.read_scattered.y[2], 1010.4e6));
    /* streams: each direction relative to its one-stream figure, the geometric mean of the two */
    CHECK(p.streams.n == 3 && p.streams.x[0] == 1 && p.streams.x[1] == 2 && p.streams.x[2] == 4);
    CHECK(NEAR(p.streams.y[0], 1.0));
    CHECK(NEAR(p.streams.y[1], sqrt(1650.2 / 1180.0 * (2100.5 / 1400.2))));
    CHECK(NEAR(p.streams.y[2], sqrt(1702.9 / 1180.0 * (2240.0 / 1400.2))));
    CHECK(p.targets == 6 && p.stripe_unit == 65536);
    CHECK(p.writeback_bytes == 3629666918.0);
    CHECK(NEAR(p.copy_rate, 8014.5e6));
    /* absent keys: the documented defaults; network null: shared memory at half the copy rate, 1 Gbit/s between */
    CHECK(NEAR(p.syscall_seconds, 1e-6) && NEAR(p.piece_seconds, 20e-9));
    CHECK(NEAR(p.intra_rate, 8014.5e6 / 2) && NEAR(p.intra_latency, 1e-6));
    CHECK(NEAR(p.inter_rate, 125e6) && NEAR(p.inter_latency, 50e-6));
    CHECK(iotame_model_profile_problem(&p) == NULL);
    iotame_model_call_t call = {.write = 1, .nprocs = 4, .nodes = 1, .bytes = 64 << 20, .pieces = 1};
    CHECK(iotame_model_predict(&p, &call, IOTAME_MODEL_TWO_PHASE) > 0);
}

static void test_optional_keys_and_network(void)
{
    json_t *root = sample();
    json_object_set_new(at(root, "storage"), "syscall_us", json_real(2.5));
    json_object_set_new(at(root, "memory"), "piece_ns", json_integer(50));
    json_object_set_new(at(root, "filesystem"), "targets", json_integer(1));
    json_object_set_new(at(root, "filesystem"), "stripe_unit", json_integer(0));
    json_object_set_new(at(root, "nodes"), "count", json_integer(2)); /* a pair across nodes was measured */
    json_object_set_new(root, "network",
                        json_pack("{s:{s:f,s:f},s:{s:f,s:f},s:[[i,i,f]],s:[[i,i,f]]}", "intra", "latency_us", 0.5,
                                  "mbs", 5000.0, "inter", "latency_us", 20.0, "mbs", 1100.0, "allgather", 2, 1024,
                                  5.5, "alltoallv", 2, 4096, 9.0));
    iotame_profile_t p;
    char *errors = NULL;
    CHECK(load(root, &p, &errors) == 0);
    if (errors) fputs(errors, stderr);
    free(errors);
    CHECK(NEAR(p.syscall_seconds, 2.5e-6) && NEAR(p.piece_seconds, 50e-9));
    CHECK(p.targets == 1 && p.stripe_unit == 1048576); /* not striped: one target, a unit that only rounds */
    CHECK(NEAR(p.intra_latency, 0.5e-6) && NEAR(p.intra_rate, 5000e6));
    CHECK(NEAR(p.inter_latency, 20e-6) && NEAR(p.inter_rate, 1100e6));

    root = sample(); /* one node measured: inter null keeps the assumed link */
    json_object_set_new(root, "network", json_pack("{s:{s:i,s:i},s:n}", "intra", "latency_us", 1, "mbs", 3000,
                                                   "inter"));
    CHECK(load(root, &p, &errors) == 0);
    free(errors);
    CHECK(NEAR(p.intra_rate, 3000e6) && NEAR(p.inter_rate, 125e6));

    root = sample(); /* two hosts x one rank (the testbed): no pair within a node, intra keeps the assumed copy */
    json_object_set_new(at(root, "nodes"), "count", json_integer(2));
    json_object_set_new(root, "network", json_pack("{s:n,s:{s:i,s:i}}", "intra", "inter", "latency_us", 30, "mbs",
                                                   900));
    errors = NULL;
    CHECK(load(root, &p, &errors) == 0);
    free(errors);
    CHECK(NEAR(p.intra_rate, 8014.5e6 / 2) && NEAR(p.inter_rate, 900e6) && NEAR(p.inter_latency, 30e-6));

    root = sample(); /* the same with two processes per node: the pair within a node is missing */
    json_object_set_new(at(root, "nodes"), "count", json_integer(2));
    json_object_set_new(at(root, "nodes"), "processes_per_node", json_integer(2));
    json_object_set_new(root, "network", json_pack("{s:n,s:{s:i,s:i}}", "intra", "inter", "latency_us", 30, "mbs",
                                                   900));
    check_refused(root, "network.intra: expected an object {latency_us, mbs} (null only with 1 process per node), "
                        "got null\n", 1);
}

static void test_kind_and_version(void)
{
    json_t *root = sample();
    json_object_set_new(root, "kind", json_string("iotame-config"));
    json_object_del(at(root, "memory"), "copy_mbs"); /* not reported: another kind is refused before the rest */
    check_refused(root, "iotame: profile bad.json: kind: expected \"iotame-machine-profile\", got \"iotame-config\"\n",
                  1);
    root = sample();
    json_object_set_new(root, "version", json_integer(3));
    check_refused(root, "iotame: profile bad.json: version: expected the integer 1 or 2, got 3\n", 1);
    root = sample();
    json_object_set_new(root, "version", json_string("1"));
    check_refused(root, "iotame: profile bad.json: version: expected the integer 1 or 2, got \"1\"\n", 1);
}

static void test_missing_and_wrong_types(void)
{
    json_t *root = sample();
    json_object_del(at(root, "memory"), "copy_mbs");
    check_refused(root, "iotame: profile bad.json: memory.copy_mbs: expected a number > 0 (MB/s), missing\n", 1);
    root = sample();
    json_object_del(root, "network");
    check_refused(root, "iotame: profile bad.json: network: expected null (not measured) or an object, missing",
                  1);
    root = sample();
    json_object_del(at(root, "storage"), "streams");
    check_refused(root, "iotame: profile bad.json: storage.streams: expected an object, missing\n", 1);
    root = sample();
    json_object_set_new(at(root, "filesystem"), "targets", json_string("6"));
    check_refused(root, "iotame: profile bad.json: filesystem.targets: expected an integer >= 1, got \"6\"\n", 1);
    root = sample();
    json_object_set_new(at(root, "storage.write_back"), "absorbed_bytes", json_real(1.5));
    check_refused(root, "storage.write_back.absorbed_bytes: expected an integer >= 0, got 1.5\n", 1);
    root = sample();
    json_object_set_new(at(root, "storage"), "reads_from", json_string("disk"));
    check_refused(root, "storage.reads_from: expected \"storage\" or \"page cache\", got \"disk\"\n", 1);
    root = sample();
    json_object_set_new(root, "network", json_array());
    check_refused(root, "network: expected null (not measured) or an object, got array\n", 1);
    root = sample();
    json_object_set_new(root, "network", json_pack("{s:{s:i,s:i},s:n,s:[[i,i]]}", "intra", "latency_us", 1, "mbs",
                                                   0, "inter", "allgather", 2, 1024));
    check_refused(root, "network.intra.mbs: expected a number > 0 (MB/s), got 0\n", 2);
    root = sample();
    json_object_set_new(root, "network", json_pack("{s:{s:i,s:i},s:n,s:[[i,i]]}", "intra", "latency_us", 1, "mbs",
                                                   0, "inter", "allgather", 2, 1024));
    check_refused(root, "network.allgather[0]: expected [processes >= 1, bytes >= 0, microseconds >= 0], got array\n",
                  2);
}

static void test_bad_curves(void)
{
    json_t *root = sample();
    json_array_set_new(json_array_get(at(root, "storage.write.sequential"), 2), 0, json_integer(4096));
    check_refused(root, "iotame: profile bad.json: storage.write.sequential[2][0]: expected more than 65536 "
                        "(increasing), got 4096\n", 1);
    root = sample();
    json_array_set_new(json_array_get(at(root, "storage.read.scattered"), 1), 1, json_real(-3.0));
    check_refused(root, "iotame: profile bad.json: storage.read.scattered[1]: expected [request bytes > 0, MB/s > 0], "
                        "got array\n", 1);
    root = sample();
    json_object_set_new(at(root, "storage.read"), "sequential", json_array());
    check_refused(root, "storage.read.sequential: expected a non-empty array of [request bytes > 0, MB/s > 0] pairs, "
                        "got array\n", 1);
    root = sample();
    json_t *many = json_array();
    for (int i = 1; i <= IOTAME_MODEL_POINTS + 1; i++) json_array_append_new(many, json_pack("[i,f]", 4096 * i, 100.0));
    json_object_set_new(at(root, "storage.write"), "scattered", many);
    check_refused(root, "storage.write.scattered: expected at most 16 points, got 17\n", 1);
    root = sample();
    json_array_remove(at(root, "storage.streams.read"), 0);
    check_refused(root, "storage.streams.read[0][0]: expected 1 (the one-stream figure the curve is relative to), "
                        "got 2\n", 1);
}

static void test_every_problem_listed_and_layout(void)
{
    json_t *root = sample();
    json_object_del(at(root, "memory"), "copy_mbs");
    json_array_set_new(json_array_get(at(root, "storage.read.scattered"), 1), 1, json_integer(-3));
    json_object_set_new(at(root, "nodes"), "count", json_integer(0));
    check_refused(root, "iotame: profile bad.json: memory.copy_mbs: expected a number > 0 (MB/s), missing\n", 3);
    root = sample();
    json_object_set_new(at(root, "filesystem"), "stripe_unit", json_integer(0));
    check_refused(root, "filesystem.stripe_unit: expected bytes >= 1 for a file striped over 6 targets, got 0\n", 1);
    root = sample();
    json_object_set_new(at(root, "filesystem"), "device", json_string("254"));
    check_refused(root, "filesystem.device: expected \"major:minor\", got \"254\"\n", 1);
}

static void test_unreadable_and_not_json(void)
{
    iotame_profile_t p;
    char *errors = NULL;
    CHECK(iotame_profile_load("/nonexistent/p.json", NULL, 0, &p, &errors) == -ENOENT);
    CHECK(errors && strstr(errors, "iotame: profile /nonexistent/p.json: cannot read: "));
    free(errors);
    errors = NULL;
    CHECK(iotame_profile_load("p.json", "{\"version\": 1,", 14, &p, &errors) == -EINVAL);
    CHECK(errors && strstr(errors, "iotame: profile p.json: not JSON: "));
    free(errors);
    errors = NULL;
    CHECK(iotame_profile_load("p.json", "[1]", 3, &p, &errors) == -EINVAL);
    CHECK(errors && strstr(errors, "iotame: profile p.json: (top level): expected an object, got array\n"));
    free(errors);
}

/* A fit of two kinds: view_based corrected by exp(0.5 + 0.25 u + 0.1 write + 0.3 first - 0.2 v), its error from
 * the residuals near the call; a kind without a fit predicted as the equations say. */
static json_t *fitted(void)
{
    json_t *root = sample();
    json_object_set_new(root, "version", json_integer(2));
    /* residuals [u, v, write, interleaved, r]: for a read of 64-byte interleaved pieces at 512 KiB per process (u -1,
     * v 0) the first and the last are near, the second is of the other operation, the third far in u, the fourth of
     * the other layout and far in v */
    json_t *vb = json_pack("{s:[f,f,f,f,f,f,f],s:i,s:[[f,f,i,i,f],[f,f,i,i,f],[f,f,i,i,f],[f,f,i,i,f],[f,f,i,i,f]]}",
                           "coef", 0.5, 0.25, 0.0, 0.1, 0.0, 0.3, -0.2, "rows", 5, "residuals", -1.0, 0.0, 0, 1, 0.1,
                           -1.0, 0.0, 1, 1, 0.5, 1.0, 0.0, 0, 1, 1.0, -1.0, 1.0, 0, 0, 0.3, -0.5, 0.2, 0, 1, -0.2);
    json_t *pt = json_pack("{s:[f,f,f,f,f,f,f],s:i,s:[]}", "coef", -0.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, "rows", 3,
                           "residuals");
    json_object_set_new(root, "strategies",
                        json_pack("{s:[],s:{s:[s,s,s,s,s,s,s],s:{s:o,s:o}}}", "measured", "fit", "features", "one",
                                  "u", "u2", "write", "interleaved", "first", "v", "strategies", "view_based", vb,
                                  "passthrough", pt));
    return root;
}

static void test_a_fit_corrects_its_kind_and_says_its_error(void)
{
    iotame_profile_t p;
    char *errors = NULL;
    CHECK(load(fitted(), &p, &errors) == 0 && !errors);
    CHECK(iotame_model_fits(&p) == 2 && p.fit[IOTAME_MODEL_VIEW_BASED].nres == 5);
    /* a read of 64-byte pieces, 512 KiB per process: u -1, v 0 */
    iotame_model_call_t c = {.write = 0, .nprocs = 2, .nodes = 1, .bytes = 1 << 20, .pieces = 8192, .interleaved = 1};
    double err;
    const double raw = iotame_model_predict(&p, &c, IOTAME_MODEL_VIEW_BASED);
    CHECK(NEAR(iotame_model_fitted(&p, &c, IOTAME_MODEL_VIEW_BASED, &err), raw * exp(0.5 - 0.25)));
    CHECK(NEAR(err, expm1(0.2))); /* the largest of the two near it, of the same operation and layout */
    c.bytes = 32 << 20; /* 16 MiB per process in 64-byte pieces: u -1, v 1; the correction's v term */
    c.pieces = 262144;
    CHECK(NEAR(iotame_model_fitted(&p, &c, IOTAME_MODEL_VIEW_BASED, &err),
               iotame_model_predict(&p, &c, IOTAME_MODEL_VIEW_BASED) * exp(0.5 - 0.25 - 0.2)));
    CHECK(NEAR(err, expm1(1.0))); /* one read near it (the fourth): every row's largest */
    c.bytes = 1 << 20;
    c.pieces = 8192;
    c.write = 1;
    CHECK(NEAR(iotame_model_fitted(&p, &c, IOTAME_MODEL_VIEW_BASED, &err),
               iotame_model_predict(&p, &c, IOTAME_MODEL_VIEW_BASED) * exp(0.5 - 0.25 + 0.1)));
    c.first_call = 1; /* the handle's first call: the feature `first` */
    CHECK(NEAR(iotame_model_fitted(&p, &c, IOTAME_MODEL_VIEW_BASED, NULL),
               iotame_model_predict(&p, &c, IOTAME_MODEL_VIEW_BASED) * exp(0.5 - 0.25 + 0.1 + 0.3)));
    c.first_call = 0;
    /* passthrough: its correction, no residuals (error unknown); two_phase: no fit at all */
    CHECK(NEAR(iotame_model_fitted(&p, &c, IOTAME_MODEL_PASSTHROUGH, &err),
               iotame_model_predict(&p, &c, IOTAME_MODEL_PASSTHROUGH) * exp(-0.2)) && err == -1);
    CHECK(iotame_model_fitted(&p, &c, IOTAME_MODEL_TWO_PHASE, &err) ==
              iotame_model_predict(&p, &c, IOTAME_MODEL_TWO_PHASE) && err == -1);
    /* a version-1 profile: no fit */
    CHECK(load(sample(), &p, &errors) == 0 && iotame_model_fits(&p) == 0);
}

/* A fit of the first version-2 profiles, without the feature v: it loads, v's coefficient 0, its residuals as near
 * in v as any call. */
static void test_a_fit_without_v_still_loads(void)
{
    json_t *root = sample();
    json_object_set_new(root, "version", json_integer(2));
    json_t *vb = json_pack("{s:[f,f,f,f,f,f],s:i,s:[[f,i,i,f],[f,i,i,f]]}", "coef", 0.5, 0.0, 0.0, 0.0, 0.0, 0.0,
                           "rows", 2, "residuals", -1.0, 0, 1, 0.2, -1.0, 0, 1, -0.2);
    json_object_set_new(root, "strategies",
                        json_pack("{s:[],s:{s:[s,s,s,s,s,s],s:{s:o}}}", "measured", "fit", "features", "one", "u",
                                  "u2", "write", "interleaved", "first", "strategies", "view_based", vb));
    iotame_profile_t p;
    char *errors = NULL;
    CHECK(load(root, &p, &errors) == 0 && !errors && iotame_model_fits(&p) == 1);
    double err;
    iotame_model_call_t c = {.write = 0, .nprocs = 2, .nodes = 1, .bytes = 64 << 20, .pieces = 1 << 20, .interleaved = 1};
    CHECK(NEAR(iotame_model_fitted(&p, &c, IOTAME_MODEL_VIEW_BASED, &err),
               iotame_model_predict(&p, &c, IOTAME_MODEL_VIEW_BASED) * exp(0.5)));
    CHECK(NEAR(err, expm1(0.2)));
}

/* Anchors: a call at a measured signature takes that signature's residual whole and its error is the signature's
 * noise; two octaves away (half the reach) half the residual, and the noise and half the fit's error in quadrature;
 * four octaves away, or of the other layout, the fit alone. */
static void test_an_anchor_corrects_the_calls_near_it(void)
{
    json_t *root = fitted();
    json_object_set_new(at(root, "strategies.fit.strategies.view_based"), "anchors", json_pack("[[f,f,i,i,f,f],[f,f,i,i,f,f]]", -1.0, 0.0, 0, 1, 0.4, 0.05,
                                             1.0, 1.0, 0, 0, -2.0, 0.1));
    iotame_profile_t p;
    char *errors = NULL;
    CHECK(load(root, &p, &errors) == 0 && !errors && p.fit[IOTAME_MODEL_VIEW_BASED].nanchors == 2);
    /* a read of 64-byte interleaved pieces, 512 KiB per process (u -1, v 0): at the first anchor */
    iotame_model_call_t c = {.write = 0, .nprocs = 2, .nodes = 1, .bytes = 1 << 20, .pieces = 8192, .interleaved = 1};
    double err;
    const double fit = exp(0.5 - 0.25);
    CHECK(NEAR(iotame_model_fitted(&p, &c, IOTAME_MODEL_VIEW_BASED, &err),
               iotame_model_predict(&p, &c, IOTAME_MODEL_VIEW_BASED) * fit * exp(0.4)));
    CHECK(NEAR(err, expm1(0.05)));
    c.first_call = 1; /* a handle's first call: the fit's alone (an anchor measures the calls after it) */
    CHECK(NEAR(iotame_model_fitted(&p, &c, IOTAME_MODEL_VIEW_BASED, NULL),
               iotame_model_predict(&p, &c, IOTAME_MODEL_VIEW_BASED) * fit * exp(0.3)));
    c.first_call = 0;
    c.bytes = 4 << 20; /* 2 MiB per process: two octaves in call size (v 0.4), the fit's v term too */
    c.pieces = 32768;
    CHECK(NEAR(iotame_model_fitted(&p, &c, IOTAME_MODEL_VIEW_BASED, &err),
               iotame_model_predict(&p, &c, IOTAME_MODEL_VIEW_BASED) * fit * exp(-0.2 * 0.4 + 0.5 * 0.4)));
    CHECK(NEAR(err, expm1(hypot(0.05, 0.5 * 0.2)))); /* the fit's: the largest of the two residuals near it */
    c.bytes = 16 << 20; /* 8 MiB per process: six octaves away, the fit alone */
    c.pieces = 131072;
    CHECK(NEAR(iotame_model_fitted(&p, &c, IOTAME_MODEL_VIEW_BASED, NULL),
               iotame_model_predict(&p, &c, IOTAME_MODEL_VIEW_BASED) * fit * exp(-0.2 * 0.8)));
    c.bytes = 1 << 20; /* the profile's own layout named: the anchor as before */
    c.pieces = 8192;
    c.targets = 6;
    c.unit = 65536;
    CHECK(NEAR(iotame_model_fitted(&p, &c, IOTAME_MODEL_VIEW_BASED, &err),
               iotame_model_predict(&p, &c, IOTAME_MODEL_VIEW_BASED) * fit * exp(0.4)));
    c.unit = 1 << 20; /* a file striped otherwise than the profile's: no anchor, the fit's largest residual */
    CHECK(NEAR(iotame_model_fitted(&p, &c, IOTAME_MODEL_VIEW_BASED, &err),
               iotame_model_predict(&p, &c, IOTAME_MODEL_VIEW_BASED) * fit));
    CHECK(NEAR(err, expm1(1.0))); /* the largest of all its rows (the third) */
    c.targets = 1; /* a file on one target (a striping file system said so): another layout than the profile's 6 */
    c.unit = 0;
    CHECK(NEAR(iotame_model_fitted(&p, &c, IOTAME_MODEL_VIEW_BASED, &err),
               iotame_model_predict(&p, &c, IOTAME_MODEL_VIEW_BASED) * fit));
    CHECK(NEAR(err, expm1(1.0)));
    c.targets = c.unit = 0;
    c.bytes = 1 << 20; /* the contiguous layout: the second anchor is far; the first is not its layout */
    c.pieces = 8192;
    c.interleaved = 0;
    CHECK(NEAR(iotame_model_fitted(&p, &c, IOTAME_MODEL_VIEW_BASED, NULL),
               iotame_model_predict(&p, &c, IOTAME_MODEL_VIEW_BASED) * exp(0.5 - 0.25)));
    /* refused by key: a noise below 0, and anchors of a fit without v */
    root = fitted();
    json_object_set_new(at(root, "strategies.fit.strategies.view_based"), "anchors",
                        json_pack("[[f,f,i,i,f,f]]", 0.0, 0.0, 1, 1, 0.1, -0.1));
    check_refused(root, "strategies.fit.strategies.view_based.anchors: expected an array of [u (-1..1), v (-1..1), "
                        "write (0/1), interleaved (0/1), log residual, noise (>= 0)] rows (with the feature v only), "
                        "got array\n", 1);
}

static void test_a_fits_set_up_is_read_and_checked(void)
{
    json_t *root = fitted();
    json_object_set_new(at(root, "strategies.fit.strategies.view_based"), "setup", json_pack("{s:f}", "write", 0.008));
    iotame_profile_t p;
    char *errors = NULL;
    CHECK(load(root, &p, &errors) == 0 && !errors);
    CHECK(NEAR(iotame_model_setup(&p, IOTAME_MODEL_VIEW_BASED, 1), 0.008));
    CHECK(iotame_model_setup(&p, IOTAME_MODEL_VIEW_BASED, 0) == 0); /* the reads' not measured */
    CHECK(iotame_model_setup(&p, IOTAME_MODEL_PASSTHROUGH, 1) == 0); /* a fit without it: an earlier profile */
    root = fitted();
    json_object_set_new(at(root, "strategies.fit.strategies.view_based"), "setup", json_pack("{s:f}", "read", -0.5));
    check_refused(root, "iotame: profile bad.json: strategies.fit.strategies.view_based.setup.read: expected seconds "
                        "within 0..60 (what a handle's first call adds), got -0.5\n", 1);
    root = fitted();
    json_object_set_new(at(root, "strategies.fit.strategies.view_based"), "setup", json_real(0.008));
    check_refused(root, "iotame: profile bad.json: strategies.fit.strategies.view_based.setup: expected an object "
                        "{\"write\": seconds, \"read\": seconds}, each within 0..60, got 0.008\n", 1);
}

static void test_a_bad_fit_is_refused_by_key(void)
{
    json_t *root = fitted();
    json_array_set_new(at(root, "strategies.fit.strategies.view_based.coef"), 1, json_string("x"));
    check_refused(root, "iotame: profile bad.json: strategies.fit.strategies.view_based.coef: expected an array of 7 "
                        "numbers within -20..20 (one per feature), got array\n", 1);
    root = fitted();
    json_array_set_new(at(root, "strategies.fit.features"), 2, json_string("u3"));
    check_refused(root, "iotame: profile bad.json: strategies.fit.features: expected [\"one\", \"u\", \"u2\", "
                        "\"write\", \"interleaved\", \"first\", \"v\"] (without \"v\": an earlier profile), got array\n", 1);
    root = fitted();
    json_array_set_new(json_array_get(at(root, "strategies.fit.strategies.view_based.residuals"), 0), 2,
                       json_integer(2));
    check_refused(root, "strategies.fit.strategies.view_based.residuals: expected an array of [u (-1..1), v (-1..1), "
                        "write (0/1), interleaved (0/1), log residual] rows, got array\n", 1);
    root = fitted();
    json_object_set_new(root, "strategies", json_string("none"));
    check_refused(root, "strategies: expected an object (what calibrate measured of the strategies) or null, got "
                        "\"none\"\n", 1);
}

/* The runtime's parse leaves out calibrate's measured rows: the rest of the document is what it was, strings with
 * braces, quotes and escapes are followed, and a text the scan does not follow is left whole (NULL). */
static void test_the_measured_rows_are_left_unread(void)
{
    const char *text = "{\"kind\": \"x}\\\"{\", \"strategies\": {\"method\": \"a]\", \"measured\": [{\"s\": \"{[\\\"\", "
                       "\"n\": [1, -2.5e3, true, null]}, {}], \"fit\": {\"k\": 1}}, \"after\": [1]}";
    size_t n = 0;
    char *cut = iotame__profile_unread(text, strlen(text), &n);
    CHECK(cut && n == strlen(cut));
    json_t *full = json_loads(text, 0, NULL), *got = cut ? json_loads(cut, 0, NULL) : NULL;
    CHECK(full && got);
    json_object_set_new(json_object_get(full, "strategies"), "measured", json_null());
    CHECK(json_equal(full, got));
    json_decref(full), json_decref(got), free(cut);
    const char *cases[] = {"{\"strategies\": {\"fit\": {}}}", "{\"strategies\": {\"measured\": [1, 2}",
                           "{\"strategies\": {\"measured\": \"open}}", "[{\"strategies\": {\"measured\": 1}}]",
                           "{\"measured\": [], \"strategies\": null}"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) CHECK(!iotame__profile_unread(cases[i], strlen(cases[i]), &n));
    /* a profile as calibrate writes it loads alike either way */
    json_t *root = fitted();
    json_object_set_new(json_object_get(root, "strategies"), "measured",
                        json_pack("[{s:s,s:[f,f]},{s:s,s:[f]}]", "strategy", "view_based", "seconds", 0.1, 0.2,
                                  "strategy", "two_phase", "seconds", 0.3));
    char *whole = json_dumps(root, 0);
    cut = iotame__profile_unread(whole, strlen(whole), &n);
    CHECK(cut && !strstr(cut, "two_phase") && strstr(whole, "two_phase"));
    iotame_profile_t a, b;
    char *errors = NULL;
    CHECK(iotame_profile_load("a.json", whole, strlen(whole), &a, &errors) == 0);
    free(errors);
    CHECK(iotame_profile_load("b.json", cut, n, &b, &errors) == 0);
    free(errors);
    CHECK(memcmp(&a.fit, &b.fit, sizeof a.fit) == 0);
    free(whole), free(cut), json_decref(root);
}

int main(void)
{
    test_sample_converts();
    test_optional_keys_and_network();
    test_kind_and_version();
    test_missing_and_wrong_types();
    test_bad_curves();
    test_every_problem_listed_and_layout();
    test_unreadable_and_not_json();
    test_the_measured_rows_are_left_unread();
    test_a_fit_corrects_its_kind_and_says_its_error();
    test_a_fit_without_v_still_loads();
    test_an_anchor_corrects_the_calls_near_it();
    test_a_fits_set_up_is_read_and_checked();
    test_a_bad_fit_is_refused_by_key();
    if (failures) fprintf(stderr, "%d checks failed\n", failures);
    return failures != 0;
}
