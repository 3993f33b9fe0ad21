/* fit: the cost model fitted to what `iotame calibrate` measured of the strategies (profile version 2,
 * "strategies.fit"; docs/design/fitted-model.md). The model's equations keep their form (model.c); each kind's
 * prediction is multiplied by exp(coef . features), a correction least squares found on log time over the
 * calibration's synthetic signatures (python/iotame/calibrate/fit.py), and its error near a call is the largest
 * cross-validated residual of the rows measured near it. A call near a measured signature (an anchor) is predicted
 * mostly from that signature's own measurement: a smooth correction cannot follow every bend of a strategy, and
 * where the machine was measured the measurement knows better. As in Behzad et al.'s model-driven tuning (Cluster 2015),
 * a regression fitted to a few measured configurations; here one per strategy, over the model's own prediction, so
 * that what the equations already explain (the device, the network) is not fitted again. Pure arithmetic and the
 * JSON reader of the section; no MPI. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fit.h"
#include "profile.h"

#define FIT_U_CENTRE 14.0 /* log2 of 16 KiB: u 0 */
#define FIT_U_SCALE 8.0   /* 64 B .. 4 MiB: u -1 .. 1 */
#define FIT_V_CENTRE 19.0 /* log2 of 512 KiB per process and call: v 0 */
#define FIT_V_SCALE 5.0   /* 16 KiB .. 16 MiB: v -1 .. 1 */
#define FIT_NEAR 0.5      /* one size step of calibrate's design (64 B, 1 KiB, 16 KiB, 256 KiB, 4 MiB) */
#define FIT_REACH 4.0     /* an anchor's reach, in octaves of piece size and call size: one size step of the design */
#define FIT_COEF_MAX 20.0 /* |coef| beyond this is no correction but a broken fit */

static const char *const fit_feature_names[IOTAME_FIT_FEATURES] = {"one",         "u",     "u2", "write",
                                                                    "interleaved", "first", "v"};
#define FIT_FEATURES_BEFORE_V 6 /* the features of the first version-2 profiles */

static double fit_scaled(double bytes, double centre, double scale)
{
    const double x = (log2(bytes > 1 ? bytes : 1) - centre) / scale;
    return x < -1 ? -1 : x > 1 ? 1 : x;
}

void iotame_model_features(const iotame_model_call_t *c, double f[IOTAME_FIT_FEATURES])
{
    const double pieces = (double)(c->nprocs > 0 ? c->nprocs : 1) * (double)(c->pieces > 0 ? c->pieces : 1);
    const double piece = c->piece_size > 0 ? (double)c->piece_size : (double)c->bytes / pieces;
    const double u = fit_scaled(piece, FIT_U_CENTRE, FIT_U_SCALE);
    f[0] = 1;
    f[1] = u;
    f[2] = u * u;
    f[3] = c->write ? 1 : 0;
    f[4] = c->interleaved ? 1 : 0;
    f[5] = c->first_call ? 1 : 0;
    f[6] = fit_scaled((double)c->bytes / (double)(c->nprocs > 0 ? c->nprocs : 1), FIT_V_CENTRE, FIT_V_SCALE);
}

/* The largest |residual| of the fit's rows near the call (features f: within one size step in u and in v): level 0
 * of the same operation and layout, 1 of the same operation, 2 all of them; -1 when fewer than two are. A row of an
 * earlier profile (no v) is as near in v as the call. */
static double fit_largest(const iotame_model_fit_t *fit, const double f[IOTAME_FIT_FEATURES], int level)
{
    double worst = 0;
    int n = 0;
    for (int i = 0; i < fit->nres; i++) {
        const int same_op = fit->res[i].write == (int)f[3], same_layout = fit->res[i].interleaved == (int)f[4];
        const int near = fabs(fit->res[i].u - f[1]) <= FIT_NEAR + 1e-9 &&
                         (isnan(fit->res[i].v) || fabs(fit->res[i].v - f[6]) <= FIT_NEAR + 1e-9);
        if ((level == 0 && !(same_op && same_layout && near)) || (level == 1 && !(same_op && near))) continue;
        worst = fmax(worst, fabs(fit->res[i].r));
        n++;
    }
    return n >= 2 ? worst : -1;
}

/* The nearest anchor of the call's operation and layout (features f) and into *weight (1 - its distance / FIT_REACH)
 * (1 - first), 0 beyond; the distance in octaves (twice the piece size or twice the call size is one octave away, u
 * and v unscaled); NULL (weight 0) when the fit has none. An anchor measures the calls after a phase's first: a
 * handle's first call is the fit's alone. */
static const iotame_fit_anchor_t *fit_anchor(const iotame_model_fit_t *fit, const double f[IOTAME_FIT_FEATURES],
                                             double *weight)
{
    int nearest = -1;
    double best = 0;
    for (int i = 0; i < fit->nanchors; i++) {
        if (fit->anchor[i].write != (int)f[3] || fit->anchor[i].interleaved != (int)f[4]) continue;
        const double d = hypot(FIT_U_SCALE * (fit->anchor[i].u - f[1]), FIT_V_SCALE * (fit->anchor[i].v - f[6]));
        if (nearest < 0 || d < best) nearest = i, best = d;
    }
    *weight = nearest < 0 ? 0 : fmax(0, 1 - best / FIT_REACH) * (1 - f[5]);
    return nearest < 0 ? NULL : &fit->anchor[nearest];
}

/* Whether the call's file is striped otherwise than the file the fit's rows were measured on (the profile's layout;
 * c->targets 0: that one; one target is one target whatever its unit). */
static int fit_other_layout(const iotame_profile_t *p, const iotame_model_call_t *c)
{
    const int64_t measured = p->targets > 1 ? p->targets : 1;
    return c->targets > 0 && (c->targets != measured || (measured > 1 && c->unit != p->stripe_unit));
}

double iotame_model_fitted(const iotame_profile_t *p, const iotame_model_call_t *c, int kind, double *error)
{
    const double raw = iotame_model_predict(p, c, kind);
    if (error) *error = -1;
    if (raw <= 0 || kind <= IOTAME_MODEL_NONE || kind >= IOTAME_MODEL_KINDS || p->fit[kind].rows <= 0) return raw;
    const iotame_model_fit_t *fit = &p->fit[kind];
    double f[IOTAME_FIT_FEATURES], x = 0, w;
    iotame_model_features(c, f);
    for (int i = 0; i < IOTAME_FIT_FEATURES; i++) x += fit->coef[i] * f[i];
    /* On another layout the anchors measured other calls, and the error is the fit's largest anywhere: a strategy
     * whose cost turns on the targets is trusted there only beyond all it missed where it was measured. */
    const int elsewhere = fit_other_layout(p, c);
    const iotame_fit_anchor_t *a = elsewhere ? NULL : fit_anchor(fit, f, &w);
    if (a) x += w * a->r;
    if (error) {
        double r = -1;
        for (int level = elsewhere ? 2 : 0; level < 3 && r < 0; level++) r = fit_largest(fit, f, level);
        if (a && w > 0 && (r >= 0 || w >= 1))
            *error = expm1(hypot(a->noise, (1 - w) * fmax(r, 0)));
        else
            *error = r < 0 ? -1 : expm1(r);
    }
    return raw * exp(x);
}

double iotame_model_setup(const iotame_profile_t *p, int kind, int write)
{
    if (kind <= IOTAME_MODEL_NONE || kind >= IOTAME_MODEL_KINDS || p->fit[kind].rows <= 0) return 0;
    return p->fit[kind].setup[write ? 1 : 0];
}

int iotame_model_fits(const iotame_profile_t *p)
{
    int n = 0;
    for (int k = 0; k < IOTAME_MODEL_KINDS; k++) n += p->fit[k].rows > 0;
    return n;
}

/* ---- the JSON section ---- */

static int fit_number(const json_t *v, double *out)
{
    if (!json_is_number(v) || !isfinite(json_number_value(v))) return -1;
    *out = json_number_value(v);
    return 0;
}

/* One residual row [u, v, write, interleaved, r] (with `nfeatures` before v: [u, write, interleaved, r], v unknown,
 * NAN) into *out; -1 when it is not one. */
static int fit_residual(const json_t *row, int nfeatures, iotame_model_fit_t *out)
{
    const int with_v = nfeatures > FIT_FEATURES_BEFORE_V, n = with_v ? 5 : 4;
    double x[5];
    if (!json_is_array(row) || json_array_size(row) != (size_t)n) return -1;
    for (int j = 0; j < n; j++)
        if (fit_number(json_array_get(row, (size_t)j), &x[j])) return -1;
    const double u = x[0], v = with_v ? x[1] : NAN, w = x[n - 3], il = x[n - 2], r = x[n - 1];
    if (fabs(u) > 1 + 1e-9 || (with_v && fabs(v) > 1 + 1e-9) || (w != 0 && w != 1) || (il != 0 && il != 1) ||
        fabs(r) > FIT_COEF_MAX)
        return -1;
    if (out->nres == IOTAME_FIT_RESIDUALS) return 0; /* the first ones: enough to say the error near a call */
    out->res[out->nres].u = u;
    out->res[out->nres].v = v;
    out->res[out->nres].r = r;
    out->res[out->nres].write = (int)w;
    out->res[out->nres].interleaved = (int)il;
    out->nres++;
    return 0;
}

/* One anchor [u, v, write, interleaved, r, noise] into *out; -1 when it is not one. */
static int fit_anchor_row(const json_t *row, iotame_model_fit_t *out)
{
    double x[6];
    if (!json_is_array(row) || json_array_size(row) != 6) return -1;
    for (int j = 0; j < 6; j++)
        if (fit_number(json_array_get(row, (size_t)j), &x[j])) return -1;
    if (fabs(x[0]) > 1 + 1e-9 || fabs(x[1]) > 1 + 1e-9 || (x[2] != 0 && x[2] != 1) || (x[3] != 0 && x[3] != 1) ||
        fabs(x[4]) > FIT_COEF_MAX || x[5] < 0 || x[5] > FIT_COEF_MAX)
        return -1;
    if (out->nanchors == IOTAME_FIT_ANCHORS) return 0;
    out->anchor[out->nanchors++] = (iotame_fit_anchor_t){
        .u = x[0], .v = x[1], .r = x[4], .noise = x[5], .write = (int)x[2], .interleaved = (int)x[3]};
    return 0;
}

/* The entry's optional "setup" ({"write": s, "read": s}, each optional) into fit->setup; -1 with the problem. */
static int fit_setup(const json_t *setup, const char *name, iotame_model_fit_t *fit, iotame_fit_problem_t *problem)
{
    if (!setup) return 0; /* an earlier profile: no set-up measured */
    static const char *const ops[2] = {"read", "write"};
    snprintf(problem->key, sizeof problem->key, "strategies.fit.strategies.%s.setup", name);
    problem->got = setup;
    problem->expected = "an object {\"write\": seconds, \"read\": seconds}, each within 0..60";
    if (!json_is_object(setup)) return -1;
    for (int op = 0; op < 2; op++) {
        const json_t *v = json_object_get(setup, ops[op]);
        if (!v) continue;
        snprintf(problem->key, sizeof problem->key, "strategies.fit.strategies.%s.setup.%s", name, ops[op]);
        problem->got = v;
        problem->expected = "seconds within 0..60 (what a handle's first call adds)";
        if (fit_number(v, &fit->setup[op]) || fit->setup[op] < 0 || fit->setup[op] > 60) return -1;
    }
    return 0;
}

/* One strategy's entry of a fit of `nfeatures` features into *fit; -1 with the problem in *problem. */
static int fit_entry(const json_t *entry, const char *name, int nfeatures, iotame_model_fit_t *fit,
                     iotame_fit_problem_t *problem)
{
    const json_t *coef = json_object_get(entry, "coef"), *rows = json_object_get(entry, "rows");
    const json_t *res = json_object_get(entry, "residuals");
    snprintf(problem->key, sizeof problem->key, "strategies.fit.strategies.%s", name);
    problem->expected = "an object {coef, rows, residuals}";
    problem->got = entry;
    if (!json_is_object(entry)) return -1;
    snprintf(problem->key, sizeof problem->key, "strategies.fit.strategies.%s.coef", name);
    problem->got = coef;
    problem->expected = nfeatures > FIT_FEATURES_BEFORE_V ? "an array of 7 numbers within -20..20 (one per feature)"
                                                          : "an array of 6 numbers within -20..20 (one per feature)";
    if (!json_is_array(coef) || json_array_size(coef) != (size_t)nfeatures) return -1;
    for (int i = 0; i < nfeatures; i++)
        if (fit_number(json_array_get(coef, (size_t)i), &fit->coef[i]) || fabs(fit->coef[i]) > FIT_COEF_MAX) return -1;
    snprintf(problem->key, sizeof problem->key, "strategies.fit.strategies.%s.rows", name);
    problem->got = rows;
    problem->expected = "an integer >= 1 (the measured rows fitted)";
    if (!json_is_integer(rows) || json_integer_value(rows) < 1) return -1;
    fit->rows = json_integer_value(rows) > 1 << 30 ? 1 << 30 : (int)json_integer_value(rows);
    snprintf(problem->key, sizeof problem->key, "strategies.fit.strategies.%s.residuals", name);
    problem->got = res;
    problem->expected = nfeatures > FIT_FEATURES_BEFORE_V
                            ? "an array of [u (-1..1), v (-1..1), write (0/1), interleaved (0/1), log residual] rows"
                            : "an array of [u (-1..1), write (0/1), interleaved (0/1), log residual] rows";
    if (!json_is_array(res)) return -1;
    size_t i;
    const json_t *row;
    json_array_foreach(res, i, row) {
        if (fit_residual(row, nfeatures, fit) != 0) {
            problem->got = row;
            return -1;
        }
    }
    if (fit_setup(json_object_get(entry, "setup"), name, fit, problem) != 0) return -1;
    const json_t *anchors = json_object_get(entry, "anchors");
    if (!anchors) return 0; /* an earlier profile: the fit alone */
    snprintf(problem->key, sizeof problem->key, "strategies.fit.strategies.%s.anchors", name);
    problem->got = anchors;
    problem->expected = "an array of [u (-1..1), v (-1..1), write (0/1), interleaved (0/1), log residual, noise "
                        "(>= 0)] rows (with the feature v only)";
    if (!json_is_array(anchors) || (json_array_size(anchors) > 0 && nfeatures <= FIT_FEATURES_BEFORE_V)) return -1;
    json_array_foreach(anchors, i, row) {
        if (fit_anchor_row(row, fit) != 0) {
            problem->got = row;
            return -1;
        }
    }
    return 0;
}

int iotame__profile_fit_read(const json_t *strategies, iotame_profile_t *out, iotame_fit_problem_t *problem)
{
    const json_t *fit = json_object_get(strategies, "fit");
    memset(problem, 0, sizeof *problem);
    if (!fit) return 0; /* measured, not fitted: the derived model alone */
    snprintf(problem->key, sizeof problem->key, "strategies.fit");
    problem->got = fit;
    problem->expected = "an object {features, strategies}";
    if (!json_is_object(fit)) return -1;
    const json_t *features = json_object_get(fit, "features"), *by = json_object_get(fit, "strategies");
    snprintf(problem->key, sizeof problem->key, "strategies.fit.features");
    problem->got = features;
    problem->expected = "[\"one\", \"u\", \"u2\", \"write\", \"interleaved\", \"first\", \"v\"] (without \"v\": an "
                        "earlier profile)";
    const size_t nfeatures = json_is_array(features) ? json_array_size(features) : 0;
    if (nfeatures != IOTAME_FIT_FEATURES && nfeatures != FIT_FEATURES_BEFORE_V) return -1;
    for (size_t i = 0; i < nfeatures; i++) {
        const char *name = json_string_value(json_array_get(features, (size_t)i));
        if (!name || strcmp(name, fit_feature_names[i]) != 0) return -1;
    }
    snprintf(problem->key, sizeof problem->key, "strategies.fit.strategies");
    problem->got = by;
    problem->expected = "an object of the strategies' fits";
    if (!json_is_object(by)) return -1;
    for (int k = IOTAME_MODEL_NONE + 1; k < IOTAME_MODEL_KINDS; k++) {
        const char *name = iotame_model_kind_name(k);
        const json_t *entry = json_object_get(by, name);
        if (entry && fit_entry(entry, name, (int)nfeatures, &out->fit[k], problem) != 0) {
            memset(&out->fit[k], 0, sizeof out->fit[k]);
            return -1;
        }
    }
    return 0;
}
