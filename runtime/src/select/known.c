/* The selector's knowledge of an earlier run (Orthrus, Zhang et al., ISC 2014, section 2.1, carried across runs:
 * docs/design/knowledge.md): a signature's entry in the knowledge file, as the caller read it, gives a new entry its
 * winner at once, or its examination's credit and lead; the strategy a handle's opening calls will run
 * (iotame_select_opening); the model's error an earlier run measured (iotame_select_known_error); and what an entry
 * carries into the next run (iotame_select_learned). Pure, as the rest of the policy (select.c): no MPI, no JSON.
 * entry.h holds the entry's state. */
#include <math.h>
#include <stdlib.h>

#include "entry.h"
#include "select.h"
/* ---- the knowledge of an earlier run ---- */

int iotame__select_same_sig(const iotame_sig_t *a, const iotame_sig_t *b)
{
    return a->write == b->write && a->nprocs == b->nprocs && a->bytes == b->bytes && a->requests == b->requests &&
           a->gap == b->gap;
}

/* The knowledge's entry of a signature (the file's first), or NULL. */
const iotame_select_known_t *iotame__select_known_entry(const iotame_select_knowledge_t *k,
                                                        const iotame_sig_t *sig)
{
    for (size_t i = 0; k && i < k->n; i++)
        if (iotame__select_same_sig(&k->v[i].sig, sig)) return &k->v[i];
    return NULL;
}

/* The strategy when it is one of the candidates, else -1. */
static int known_candidate(int strategy, const iotame_select_conf_t *conf)
{
    for (int c = 0; strategy >= 0 && c < conf->ncandidates; c++)
        if (conf->candidates[c] == strategy) return strategy;
    return -1;
}

/* The candidate an undecided knowledge entry's examination starts with (learned_lead), else the first candidate. */
static int known_first(const iotame_select_known_t *item, const iotame_select_conf_t *conf)
{
    int c = known_candidate(item->first, conf);
    return c >= 0 ? c : conf->candidates[0];
}

/* Whether a signature not decided yet (a knowledge entry) has the credit to examine another candidate than its
 * first in this run: the credit carried over against a turn's calls at the first candidate's throughput of the earlier
 * run (which only tells what a call may cost; it is not a mean the examination compares). Credit below 0 (a debt
 * below 0, a faster candidate's calls) is credit earned in a run measured otherwise: not carried. */
static int known_affordable(const iotame_select_known_t *item, const iotame_select_conf_t *conf)
{
    const int first = known_first(item, conf);
    const double mbs = first >= 0 && first < IOTAME_SELECT_MAX ? item->mbs[first] : 0;
    const int settle = iotame__select_settle_calls(&item->sig, conf->readahead);
    const double turn = iotame__select_settings_turn_calls(conf->knobs->gate_calls, settle,
                                                           iotame__select_settings_exam_calls(conf, settle));
    return conf->budget >= 1 ||
           (mbs > 0 && iotame__select_budget_affords(conf->budget, fmax(0, item->spent), fmax(0, item->debt),
                                                     item->sig.bytes, mbs, turn));
}

int iotame_select_opening(const iotame_selector_t *s, const iotame_select_knowledge_t *knowledge,
                          const iotame_select_conf_t *conf, int write, int64_t nprocs)
{
    int agreed = -2; /* -2: no signature known yet */
    for (const iotame_sel_entry_t *e = s->entries; e; e = e->next)
        if (e->sig.write == write && e->sig.nprocs == nprocs) {
            int c = iotame_select_settled(e) ? iotame_select_choose(e) : -1; /* an examination runs call by call */
            if (c < 0 || (agreed != -2 && agreed != c)) return -1;
            agreed = c;
        }
    for (size_t i = 0; knowledge && i < knowledge->n; i++) {
        const iotame_select_known_t *item = &knowledge->v[i];
        if (item->sig.write != write || item->sig.nprocs != nprocs) continue;
        const iotame_sel_entry_t *e = s->entries;
        while (e && !iotame__select_same_sig(&e->sig, &item->sig)) e = e->next;
        if (e) continue; /* the selector's entry stands for it */
        int w = known_candidate(item->winner, conf);
        /* undecided: its first candidate serves, unless this run can afford to examine the others (call by call) */
        int c = w >= 0 ? w : known_affordable(item, conf) ? -1 : known_first(item, conf);
        if (c < 0 || (agreed != -2 && agreed != c)) return -1;
        agreed = c;
    }
    return agreed != -2 ? agreed : conf->predicts ? -1 : conf->candidates[0];
}

/* An entry the knowledge knows: its winner serves at once; an undecided one starts its examination with the
 * earlier run's lead, with the credit its budget is counted from (only the credit and the order, not the
 * candidates' means: candidates measured in different runs were measured under different conditions, a read from the
 * page cache in one run, from the disk in the next). Returns the winner, else -1. */
int iotame__select_known_start(iotame_sel_entry_t *e, const iotame_select_known_t *item,
                               const iotame_select_conf_t *conf)
{
    int known = item ? known_candidate(item->winner, conf) : -1;
    if (known >= 0) {
        e->state = RUNNING;
        e->mon.winner = known;
        e->mon.decided = 1;
        e->from_knowledge = 1;
    } else if (!item) {
        iotame__select_exam_start(e, -1);
    } else {
        iotame__select_exam_start(e, known_first(item, conf));
        if (item->examination) {
            e->budget.spent = e->budget.spent_saved = fmax(0, item->spent);
            e->budget.debt = e->budget.debt_saved = fmax(0, item->debt);
            e->from_knowledge = 1;
        }
        /* the earlier run's means price the turns (budget_turn_loss); the examination compares this run's own */
        for (int k = 0; k < e->exam.ncand; k++) e->exam.last[e->exam.cand[k]] = item->mbs[e->exam.cand[k]];
    }
    return known;
}

double iotame_select_known_error(const iotame_select_knowledge_t *knowledge, double fallback)
{
    size_t n = 0, cap = knowledge ? knowledge->n * IOTAME_SELECT_MAX : 0;
    double *miss = cap ? malloc(cap * sizeof *miss) : NULL;
    for (size_t i = 0; miss && i < knowledge->n; i++) {
        const iotame_select_known_t *k = &knowledge->v[i];
        for (int s = 0; s < IOTAME_SELECT_MAX; s++) {
            const double measured = k->measured_s[s], pred = k->predicted[s];
            if (measured > 0 && pred > 0) miss[n++] = fmax(measured / pred, pred / measured) - 1;
        }
    }
    for (size_t i = 1; i < n; i++) /* insertion sort: a knowledge file holds tens of entries */
        for (size_t j = i; j > 0 && miss[j - 1] > miss[j]; j--) {
            const double t = miss[j];
            miss[j] = miss[j - 1];
            miss[j - 1] = t;
        }
    const double err = n >= 3 ? (n % 2 ? miss[n / 2] : (miss[n / 2 - 1] + miss[n / 2]) / 2) : fallback;
    free(miss);
    return err;
}

/* ---- what an entry carries into the next run ---- */

/* The candidate the next run of an undecided signature starts with: the best this run measured when it compared
 * two or more, else the one this run started with. A job too short to finish an examination would otherwise serve
 * its first candidate run after run. Only the order carries over, and candidates compared within one run: the next
 * run measures the lead anew, and whether it wins is decided from that run's own means (known_start). */
static int learned_lead(const iotame_sel_entry_t *e)
{
    int measured = 0;
    for (int k = 0; k < e->exam.ncand; k++) measured += e->exam.n[e->exam.cand[k]] > 0;
    return measured >= 2 ? iotame__select_exam_best(e) : e->exam.cand[0];
}

int iotame_select_learned(const iotame_sel_entry_t *e, iotame_select_learned_t *out)
{
    if (!e->mon.decided && !(e->budget.spent > 0)) return 0; /* nothing decided, nothing spent */
    const sel_exam_t *x = &e->exam;
    *out = (iotame_select_learned_t){.sig = e->sig, .winner = e->mon.decided ? e->mon.winner : -1,
                                     .spent = e->budget.spent, .debt = e->budget.debt,
                                     .spent_added = e->budget.spent - e->budget.spent_saved,
                                     .debt_added = e->budget.debt - e->budget.debt_saved, .lead = -1,
                                     .ncand = x->ncand};
    if (!e->mon.decided) out->lead = learned_lead(e);
    out->modeled = e->prediction.on;
    for (int i = 0; i < IOTAME_SELECT_MAX && e->prediction.on; i++) {
        out->predicted[i] = e->prediction.pred[i];
        out->measured_s[i] = iotame__select_call_seconds(e, iotame__select_prediction_latest(e, i));
    }
    for (int k = 0; k < x->ncand; k++) {
        out->cand[k] = x->cand[k];
        out->measured[k] = x->n[x->cand[k]] != 0;
        out->mbs[k] = out->measured[k] ? iotame__select_exam_mean(e, x->cand[k]) : 0;
    }
    return 1;
}
