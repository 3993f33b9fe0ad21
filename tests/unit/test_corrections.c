/* Unit tests of the model's corrections learned from the jobs it served (runtime/src/collective/corrections.c): the
 * observations of a run reach the knowledge file's corrections of its profile and class, bounded; jobs at once each
 * add theirs; one slow call does not flip a decision the corrections made; a selector's measured means become
 * observations once. No MPI call is made (the knowledge file is read and written by rank 0's code alone). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "collective/strategy.h"
#include "select/select.h"

#include "check.h"

/* ---- stand-ins: two named strategies ---- */

const iotame_strategy_t iotame_strategy_passthrough = {.name = "passthrough"},
                        iotame_strategy_view_based = {.name = "view_based"};
const iotame_strategy_t *const iotame_strategies[] = {&iotame_strategy_passthrough, &iotame_strategy_view_based};
const int iotame_nstrategies = 2;
enum { PT, VB };

int iotame_strategy_find(const char *name)
{
    for (int i = 0; name && i < iotame_nstrategies; i++)
        if (strcmp(iotame_strategies[i]->name, name) == 0) return i;
    return -1;
}

void iotame_log_warn(const char *fmt, ...) { (void)fmt; }
_Thread_local int iotame__posix_quiet;

#define CLASS "read procs=2 nodes=1 piece=2^6 interleaved"

/* {"profile": "p1", "observations": [{class, strategy, r} x n]} */
static json_t *observed(const char *strategy, const double *r, int n)
{
    json_t *list = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(list, json_pack("{s:s,s:s,s:f}", "class", CLASS, "strategy", strategy, "r", r[i]));
    return json_pack("{s:s,s:o}", "profile", "p1", "observations", list);
}

static iotame_coll_correction_t correction_in(const json_t *section, const char *strategy)
{
    return iotame__coll_correction(json_object_get(json_object_get(section, "model"), "p1"), CLASS, strategy);
}

static void test_observations_become_a_bounded_correction(void)
{
    json_t *section = json_object();
    const double r[4] = {0.5, 0.5, 0.5, 0.5}; /* measured exp(0.5) x the prediction, four times */
    json_t *o = observed("view_based", r, 4);
    CHECK(iotame__coll_corrections_merge(section, o) == 0);
    iotame_coll_correction_t c = correction_in(section, "view_based");
    CHECK(c.measurements == 4 && fabs(c.correction - 0.5) < 1e-9 && c.spread < 0.5);
    /* the spread replaces the fit's error once there are a few measurements */
    CHECK(iotame__coll_correction_error(&c, 0.9) < 0.9);
    json_decref(o);
    /* a slow call 100 x its prediction moves the correction by at most log 2 / (weight + 1) */
    const double slow = log(100.0);
    o = observed("view_based", &slow, 1);
    CHECK(iotame__coll_corrections_merge(section, o) == 0);
    iotame_coll_correction_t after = correction_in(section, "view_based");
    CHECK(after.measurements == 5 && after.correction > c.correction &&
          after.correction - c.correction <= log(2.0) / 5 + 1e-9);
    json_decref(o);
    /* the first measurement of a strategy never narrows its error below the fit's */
    const double one = 0.0;
    o = observed("passthrough", &one, 1);
    CHECK(iotame__coll_corrections_merge(section, o) == 0);
    iotame_coll_correction_t pt = correction_in(section, "passthrough");
    CHECK(pt.measurements == 1 && iotame__coll_correction_error(&pt, 0.3) >= 0.3);
    /* other profiles and classes untouched; a value edited out of range reads as none */
    CHECK(iotame__coll_correction(json_object_get(section, "model"), "write procs=2 nodes=1 piece=2^6 interleaved",
                                  "view_based").measurements == 0);
    json_object_set_new(json_object_get(json_object_get(json_object_get(json_object_get(section, "model"), "p1"),
                                                        CLASS), "view_based"), "correction", json_real(1e9));
    CHECK(correction_in(section, "view_based").measurements == 0);
    json_decref(o);
    json_decref(section);
}

/* Two jobs that read the same file save in turn: both jobs' observations are in it. */
static void test_jobs_at_once_each_add_their_observations(void)
{
    char path[] = "/tmp/iotame-corrections-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    unlink(path);
    iotame_selector_t *s = iotame_select_new();
    const double a[2] = {0.2, 0.2}, b[3] = {0.2, 0.2, 0.2};
    json_t *oa = observed("view_based", a, 2), *ob = observed("view_based", b, 3);
    CHECK(iotame__coll_knowledge_save(s, path, oa) == 0);
    CHECK(iotame__coll_knowledge_save(s, path, ob) == 0);
    FILE *f = fopen(path, "r");
    char text[8192] = {0};
    const size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    json_t *section = iotame__coll_knowledge_parse(text, n);
    CHECK(section && correction_in(section, "view_based").measurements == 5);
    CHECK(section && fabs(correction_in(section, "view_based").correction - 0.2) < 1e-9);
    json_decref(section);
    json_decref(oa);
    json_decref(ob);
    iotame_select_free(s);
    unlink(path);
    char lock[64];
    snprintf(lock, sizeof lock, "%s.lock", path);
    unlink(lock);
}

/* The selector's choice from predictions corrected as auto_predict corrects them. */
static int choice_with(const json_t *section, const double *base_seconds)
{
    static const iotame_select_knobs_t knobs = {0.5, 4, 1.0, 10, 1.0};
    static const int all[] = {PT, VB};
    const iotame_select_conf_t conf = {all, 2, 3, 0.15, 0, 0.05, 0, 0, &knobs, 1};
    iotame_select_model_t m = {.error = 0.2};
    for (int i = 0; i < 2; i++) {
        const iotame_coll_correction_t c = correction_in(section, iotame_strategies[i]->name);
        m.seconds[i] = base_seconds[i] * exp(c.correction);
        m.errors[i] = iotame__coll_correction_error(&c, 0.2);
    }
    iotame_selector_t *s = iotame_select_new();
    const iotame_sig_t sig = {0, 2, 1 << 20, 1 << 14, 0};
    iotame_sel_entry_t *e = iotame_select_entry(s, &sig, &conf, NULL, &m);
    const int running = iotame_select_running(e), chosen = iotame_select_choose(e);
    iotame_select_free(s);
    return running ? chosen : -1;
}

static void test_one_slow_call_does_not_flip_a_decision(void)
{
    /* the model predicts passthrough 1.5 x faster; six jobs measured view_based 2.5 x faster than predicted and
     * passthrough as predicted: view_based serves from the first call */
    const double base[2] = {1.0, 1.5};
    json_t *section = json_object();
    const double vb[6] = {-0.9, -0.9, -0.9, -0.9, -0.9, -0.9}, pt[6] = {0, 0, 0, 0, 0, 0};
    json_t *ov = observed("view_based", vb, 6), *op = observed("passthrough", pt, 6);
    CHECK(iotame__coll_corrections_merge(section, ov) == 0 && iotame__coll_corrections_merge(section, op) == 0);
    CHECK(choice_with(section, base) == VB);
    /* one call of view_based 20 x slower than it ran in those jobs */
    const double slow = -0.9 + log(20.0);
    json_t *os = observed("view_based", &slow, 1);
    CHECK(iotame__coll_corrections_merge(section, os) == 0);
    CHECK(choice_with(section, base) == VB);
    /* as a plain mean of the seven, that call would have left view_based no clear lead (within a factor 1.1) */
    CHECK(fabs((6 * -0.9 + slow) / 7 + log(base[VB]) - log(base[PT])) < log(1.1));
    json_decref(ov);
    json_decref(op);
    json_decref(os);
    json_decref(section);
}

int main(void)
{
    test_observations_become_a_bounded_correction();
    test_jobs_at_once_each_add_their_observations();
    test_one_slow_call_does_not_flip_a_decision();
    if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
    return failures != 0;
}
