/* corrections: the model keeps learning from the jobs it serves (docs/design/fitted-model.md, "Every job corrects it").
 * Every mean a strategy measured under auto against its prediction is a measurement of the model's error for that
 * strategy on that class of signature (operation, processes, nodes, piece size to a power of two, interleaved or
 * not). The knowledge file keeps, per machine profile (its hash) and class, each strategy's correction (the log
 * ratio of measured to predicted time, a recursive mean) and its spread; the next job on the machine multiplies its
 * predictions by exp(correction) and takes its error from the spread. Once a few measurements agree an observation
 * moves the correction by at most log 2 / (weight + 1) and twice the spread (corrections_observe), and the weight
 * stops at CORRECTIONS_WEIGHT_MAX, so that one slow call cannot swing it and the machine's later behaviour still
 * counts. Jobs at once each apply their own observations to the file's corrections as they are at their save (the
 * store's lock), so none is lost.
 *
 * In the knowledge file's "collective" section: "model": {"<profile hash>": {"<class>": {"<strategy>":
 * {"correction": c, "spread": s, "weight": w, "measurements": n}}}}. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "strategy.h"

#define CORRECTIONS_STEP_MAX 0.6931471805599453  /* log 2: the most one observation counts for once trusted */
#define CORRECTIONS_FIRST_MAX 2.0794415416798357 /* log 8: before, while the error stays the fit's or wider */
#define CORRECTIONS_WEIGHT_MAX 16.0              /* an observation weighs at least 1 / 17 */
#define CORRECTIONS_TRUSTED 3                    /* measurements before the spread replaces the fit's error */
#define CORRECTIONS_ERROR_MIN 0.02               /* the least error the spread gives */
#define CORRECTIONS_BOUND_MIN 0.05               /* the least bound of an observation's step once trusted (log) */

void iotame__coll_correction_class(char *out, size_t size, const iotame_sig_t *sig, int64_t nodes, int interleaved)
{
    const double piece = sig->requests > 0 ? (double)sig->bytes / (double)sig->requests : (double)sig->bytes;
    snprintf(out, size, "%s procs=%lld nodes=%lld piece=2^%d %s", sig->write ? "write" : "read",
             (long long)sig->nprocs, (long long)nodes, (int)lround(log2(piece > 1 ? piece : 1)),
             interleaved ? "interleaved" : "contiguous");
}

void iotame__coll_correction_key(char *out, size_t size, int profile_hash)
{
    snprintf(out, size, "%08x", (unsigned)profile_hash);
}

iotame_coll_correction_t iotame__coll_correction(const json_t *profile_model, const char *cls, const char *strategy)
{
    const json_t *c = json_object_get(json_object_get(profile_model, cls), strategy);
    iotame_coll_correction_t out = {0};
    if (!json_is_object(c)) return out;
    out.correction = json_number_value(json_object_get(c, "correction"));
    out.spread = json_number_value(json_object_get(c, "spread"));
    out.measurements = json_integer_value(json_object_get(c, "measurements"));
    /* a file edited by hand: nothing beyond what an observation could have made of it */
    if (!isfinite(out.correction) || fabs(out.correction) > 20 || !isfinite(out.spread) || out.spread < 0 ||
        out.measurements < 0)
        return (iotame_coll_correction_t){0};
    return out;
}

double iotame__coll_correction_error(const iotame_coll_correction_t *c, double fitted)
{
    if (c->measurements <= 0) return fitted;
    const double spread = fmax(CORRECTIONS_ERROR_MIN, expm1(2 * c->spread)); /* twice the mean deviation */
    if (c->measurements >= CORRECTIONS_TRUSTED) return spread;
    return fmax(spread, fitted); /* a few measurements: never narrower than the fit says */
}

/* The object at parent[key], created empty when missing (a non-object is replaced: it was not ours). */
static json_t *corrections_child(json_t *parent, const char *key)
{
    json_t *o = json_object_get(parent, key);
    if (json_is_object(o)) return o;
    return json_object_set_new(parent, key, json_object()) == 0 ? json_object_get(parent, key) : NULL;
}

void iotame__coll_corrections_sig_key(char *out, size_t size, const iotame_sig_t *sig)
{
    snprintf(out, size, "%d %lld %lld %lld %lld", sig->write, (long long)sig->nprocs, (long long)sig->bytes,
             (long long)sig->requests, (long long)sig->gap);
}

json_t *iotame__coll_corrections_observed(const iotame_selector_t *s, json_t *used, const char *profile_key)
{
    json_t *list = json_array();
    iotame_select_learned_t l;
    char key[160];
    for (const iotame_sel_entry_t *e = iotame_select_first(s); list && e; e = iotame_select_next(e)) {
        if (!iotame_select_learned(e, &l) || !l.modeled) continue;
        iotame__coll_corrections_sig_key(key, sizeof key, &l.sig);
        json_t *rec = json_object_get(used, key), *seen = rec ? corrections_child(rec, "seen") : NULL;
        const json_t *applied = json_object_get(rec, "corrections");
        for (int i = 0; seen && i < iotame_nstrategies && i < IOTAME_SELECT_MAX; i++) {
            const char *name = iotame_strategies[i]->name;
            const double pred = l.predicted[i], measured = l.measured_s[i];
            /* a mean reported at an earlier save of this run is not a new measurement */
            if (!(pred > 0 && measured > 0) || json_number_value(json_object_get(seen, name)) == measured) continue;
            const double r = log(measured / pred) + json_number_value(json_object_get(applied, name));
            json_array_append_new(list, json_pack("{s:O,s:s,s:f}", "class", json_object_get(rec, "class"),
                                                  "strategy", name, "r", r));
            json_object_set_new(seen, name, json_real(measured));
        }
    }
    if (json_array_size(list)) return json_pack("{s:s,s:o}", "profile", profile_key, "observations", list);
    json_decref(list);
    return NULL;
}

/* One observation (log of measured over the uncorrected prediction) applied to a class's entry of a strategy: the
 * correction moves towards it by 1 / (weight + 1) of the way, the way bounded by log 8 while the entry rests on
 * fewer than CORRECTIONS_TRUSTED measurements (its error is then never below the fit's: a large first step cannot
 * make a pick trusted), and after that by log 2 and twice its spread (an observation that far off counts as that
 * far); the spread follows the observation's distance from the correction, bounded alike. */
static int corrections_observe(json_t *entry, double r)
{
    const double c = json_number_value(json_object_get(entry, "correction"));
    const double s = json_number_value(json_object_get(entry, "spread"));
    const double w = json_number_value(json_object_get(entry, "weight"));
    const json_int_t n = json_integer_value(json_object_get(entry, "measurements"));
    const double trusted = fmin(CORRECTIONS_STEP_MAX, fmax(2 * s, CORRECTIONS_BOUND_MIN));
    const double bound = n >= CORRECTIONS_TRUSTED ? trusted : CORRECTIONS_FIRST_MAX;
    const double moved = c + fmax(-bound, fmin(bound, r - c)) / (w + 1);
    /* until trusted the spread is how far the observations were from the correction before them: a correction that
     * had to jump stays uncertain until measurements confirm it */
    const double away = fmin(bound, fabs(r - (n >= CORRECTIONS_TRUSTED ? moved : c)));
    int rc = json_object_set_new(entry, "correction", json_real(moved));
    rc |= json_object_set_new(entry, "spread", json_real(s + (away - s) / (w + 1)));
    rc |= json_object_set_new(entry, "weight", json_real(fmin(w + 1, CORRECTIONS_WEIGHT_MAX)));
    rc |= json_object_set_new(entry, "measurements", json_integer(n + 1));
    return rc ? -ENOMEM : 0;
}

int iotame__coll_corrections_merge(json_t *section, const json_t *observed)
{
    const char *profile = json_string_value(json_object_get(observed, "profile"));
    const json_t *list = json_object_get(observed, "observations");
    if (!profile || !json_array_size(list)) return 0;
    json_t *model = corrections_child(section, "model");
    json_t *mine = model ? corrections_child(model, profile) : NULL;
    if (!mine) return -ENOMEM;
    size_t i;
    const json_t *o;
    json_array_foreach(list, i, o) {
        const char *cls = json_string_value(json_object_get(o, "class"));
        const char *strategy = json_string_value(json_object_get(o, "strategy"));
        json_t *by_class = cls && strategy ? corrections_child(mine, cls) : NULL;
        json_t *entry = by_class ? corrections_child(by_class, strategy) : NULL;
        if (!entry || corrections_observe(entry, json_number_value(json_object_get(o, "r"))) != 0) return -ENOMEM;
    }
    return 0;
}

void iotame__coll_corrections_count(const json_t *profile_model, int64_t *classes, int64_t *measurements)
{
    *classes = *measurements = 0;
    const char *cls;
    const json_t *by_class;
    json_object_foreach((json_t *)profile_model, cls, by_class) {
        const char *strategy;
        const json_t *entry;
        (*classes)++;
        json_object_foreach((json_t *)by_class, strategy, entry)
            *measurements += json_integer_value(json_object_get(entry, "measurements"));
    }
}
