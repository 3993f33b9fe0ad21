/* The selector's policy (select/) in the statistics and the knowledge file: its decisions as the statistics'
 * "decisions" list, what it learned as knowledge-file entries, and a knowledge file's entries as the policy reads
 * them. The policy speaks strategy ids; here they become the registry's names (docs/formats.md, docs/collective.md). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "select/select.h"
#include "strategy.h"

static const char *decision_name(int i) { return i >= 0 && i < iotame_nstrategies ? iotame_strategies[i]->name : "?"; }

/* Throughputs as the statistics and the knowledge file show them: MB/s rounded to one decimal. */
static double decision_round(double mbs) { return round(mbs * 10) / 10; }

static json_t *decision_sig(const iotame_sig_t *g)
{
    return json_pack("{s:s,s:I,s:I,s:I,s:I}", "op", g->write ? "write" : "read", "nprocs", (json_int_t)g->nprocs,
                     "bytes", (json_int_t)g->bytes, "requests", (json_int_t)g->requests, "gap", (json_int_t)g->gap);
}

/* The candidates' means of the latest examination, in its order. */
static json_t *decision_throughputs(int ncand, const int *cand, const int *measured, const double *mbs)
{
    json_t *tp = json_object();
    for (int k = 0; tp && k < ncand; k++)
        if (measured[k]) json_object_set_new(tp, decision_name(cand[k]), json_real(decision_round(mbs[k])));
    return tp;
}

/* Seconds of a call by strategy id as {name: seconds}, the ones above 0. */
static json_t *decision_seconds(const double *seconds)
{
    json_t *o = json_object();
    for (int i = 0; o && i < IOTAME_SELECT_MAX && i < iotame_nstrategies; i++)
        if (seconds[i] > 0) json_object_set_new(o, decision_name(i), json_real(seconds[i]));
    return o;
}

/* The cost model's part of a decision: its fastest and whether it was trusted to serve alone or first, the
 * candidates it let into examinations, its predictions and the latest measured times, the errors in effect, and what
 * departures and probes did. */
static json_t *decision_model(const iotame_select_decision_t *d)
{
    json_t *examined = json_array();
    for (int k = 0; examined && k < d->ncand; k++)
        if (!d->cut[d->cand[k]]) json_array_append_new(examined, json_string(decision_name(d->cand[k])));
    return json_pack("{s:s,s:b,s:b,s:b,s:o,s:b,s:o,s:o,s:o,s:f,s:o,s:I,s:I,s:I}", "first",
                     decision_name(d->model_first), "trusted", d->trusted, "leads", d->leads, "deferred", d->deferred,
                     "explored", d->explored >= 0 ? json_string(decision_name(d->explored)) : json_null(), "learned",
                     d->learned, "examined", examined,
                     "predicted_s",
                     decision_seconds(d->predicted), "measured_s", decision_seconds(d->measured_s), "error",
                     d->model_error, "errors", decision_seconds(d->errors),
                     "departures", (json_int_t)d->departures, "probes", (json_int_t)d->probes, "returns",
                     (json_int_t)d->returns);
}

/* One entry's decision (docs/collective.md, "What the statistics show"). */
static json_t *decision_json(const iotame_sel_entry_t *e)
{
    const iotame_select_decision_t *d = iotame_select_decision(e);
    json_t *o = json_pack("{s:o}", "signature", decision_sig(&d->sig));
    if (!o) return NULL;
    json_object_set_new(o, "strategy", d->strategy >= 0 ? json_string(decision_name(d->strategy)) : json_null());
    json_object_set_new(o, "state", json_string(d->running ? "running" : "examining"));
    json_object_set_new(o, "throughputs", decision_throughputs(d->ncand, d->cand, d->measured, d->mbs));
    json_object_set_new(o, "reference_mbs", json_real(decision_round(d->reference_mbs)));
    json_object_set_new(o, "calls", json_integer((json_int_t)d->calls));
    json_object_set_new(o, "examination_calls", json_integer((json_int_t)d->examination_calls));
    json_object_set_new(o, "reexaminations", json_integer((json_int_t)d->reexaminations));
    json_object_set_new(o, "deferred_calls", json_integer((json_int_t)d->deferred_calls));
    json_object_set_new(o, "handed_back", json_integer((json_int_t)d->handed_back));
    json_object_set_new(o, "threshold", json_real(d->threshold));
    json_object_set_new(o, "transition_calls", json_integer(d->transition_calls));
    json_object_set_new(o, "from_knowledge", json_boolean(d->from_knowledge));
    if (d->modeled) json_object_set_new(o, "model", decision_model(d));
    size_t n;
    const iotame_select_traced_t *t = iotame_select_trace(e, &n);
    if (n) {
        json_t *trace = json_array();
        for (size_t i = 0; trace && i < n; i++)
            json_array_append_new(trace, json_pack("[s,f]", decision_name(t[i].strategy), decision_round(t[i].mbs)));
        json_object_set_new(o, "trace", trace);
    }
    return o;
}

void iotame__coll_decisions(json_t *list, const iotame_selector_t *s)
{
    json_array_clear(list);
    for (const iotame_sel_entry_t *e = iotame_select_first(s); e; e = iotame_select_next(e))
        json_array_append_new(list, decision_json(e));
}

/* The knowledge entry of one signature: its winner, or before the first decision the budget's seconds so far and
 * the lead (the throughputs for the reader and for pricing the lead's calls). */
static json_t *decision_learned_json(const iotame_select_learned_t *l)
{
    json_t *o = json_pack("{s:o,s:o,s:o}", "signature", decision_sig(&l->sig), "strategy",
                          l->winner >= 0 ? json_string(decision_name(l->winner)) : json_null(), "throughputs",
                          decision_throughputs(l->ncand, l->cand, l->measured, l->mbs));
    if (o && l->winner < 0) {
        json_object_set_new(o, "examination", json_pack("{s:f,s:f,s:s}", "spent", l->spent, "debt", l->debt, "first",
                                                        decision_name(l->lead)));
        /* for the save's merge alone (collective/knowledge.c), never in the file: this run's part of the credit */
        json_object_set_new(o, "added", json_pack("{s:f,s:f}", "spent", l->spent_added, "debt", l->debt_added));
    }
    if (o && l->modeled) /* the model's error, for the next run's examinations */
        json_object_set_new(o, "model", json_pack("{s:o,s:o}", "predicted_s", decision_seconds(l->predicted),
                                                  "measured_s", decision_seconds(l->measured_s)));
    return o;
}

json_t *iotame__coll_learned(const iotame_selector_t *s)
{
    json_t *all = NULL;
    iotame_select_learned_t l;
    /* newest first, as the file has always listed them */
    for (const iotame_sel_entry_t *e = iotame_select_first(s); e; e = iotame_select_next(e))
        if (iotame_select_learned(e, &l) && (all || (all = json_array())))
            json_array_insert_new(all, 0, decision_learned_json(&l));
    return all;
}

/* ---- a knowledge file's entries as the policy reads them ---- */

/* One entry; 0 when it has no operation (not an entry the policy can use). */
static int decision_known_of(const json_t *item, iotame_select_known_t *k)
{
    const json_t *g = json_object_get(item, "signature"), *x = json_object_get(item, "examination");
    const json_t *tp = json_object_get(item, "throughputs");
    const char *op = json_string_value(json_object_get(g, "op"));
    if (!op) return 0;
    *k = (iotame_select_known_t){
        .sig = {strcmp(op, "write") == 0, json_integer_value(json_object_get(g, "nprocs")),
                json_integer_value(json_object_get(g, "bytes")), json_integer_value(json_object_get(g, "requests")),
                json_integer_value(json_object_get(g, "gap"))},
        .winner = iotame_strategy_find(json_string_value(json_object_get(item, "strategy"))),
        .examination = json_is_object(x),
        .spent = json_number_value(json_object_get(x, "spent")),
        .debt = json_number_value(json_object_get(x, "debt")),
        .first = iotame_strategy_find(json_string_value(json_object_get(x, "first"))),
    };
    const json_t *model = json_object_get(item, "model");
    const json_t *predicted = json_object_get(model, "predicted_s"), *measured = json_object_get(model, "measured_s");
    for (int i = 0; i < iotame_nstrategies && i < IOTAME_SELECT_MAX; i++) {
        const char *name = iotame_strategies[i]->name;
        k->mbs[i] = json_number_value(json_object_get(tp, name));
        k->predicted[i] = json_number_value(json_object_get(predicted, name));
        k->measured_s[i] = json_number_value(json_object_get(measured, name));
    }
    return 1;
}

int iotame__coll_known(const json_t *knowledge, iotame_select_knowledge_t *out)
{
    const json_t *entries = json_object_get(knowledge, "entries");
    const size_t n = json_array_size(entries);
    *out = (iotame_select_knowledge_t){NULL, 0};
    if (!n) return 0;
    iotame_select_known_t *v = malloc(n * sizeof *v);
    if (!v) return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += decision_known_of(json_array_get(entries, i), &v[k]);
    *out = (iotame_select_knowledge_t){v, k};
    return 0;
}

void iotame__coll_known_free(iotame_select_knowledge_t *k)
{
    free((void *)k->v);
    *k = (iotame_select_knowledge_t){NULL, 0};
}
