/* The cost model's prediction as the selector uses it (docs/design/cost-model.md, "How the selector uses it"), an
 * addition to the Orthrus selector (Zhang et al., ISC 2014, section 2.1), whose examination is measurement only: a
 * new entry's candidates in predicted order, the ones the model's error keeps out of examinations, the departures of
 * measured means from their predictions that let them in again, and the probes by which a winner returns to a faster
 * strategy once conditions recover. The model itself is profile/model.c. The entry's other concerns (select.c: its
 * creation, the examination, the monitoring, the decision; known.c) call the functions named
 * iotame__select_prediction_*; entry.h holds the state they share. Pure: no MPI, no JSON. */
#include <math.h>
#include <string.h>

#include "entry.h"
#include "select.h"

/* ---- the prediction (the cost model's, select.h) ---- */

/* How far a measured mean lies from the prediction: a factor f either way is f - 1 (0: nothing to compare). */
static double prediction_miss(const iotame_sel_entry_t *e, int s, double mbs)
{
    const double measured = iotame__select_call_seconds(e, mbs), pred = e->prediction.pred[s];
    return measured > 0 && pred > 0 ? fmax(measured / pred, pred / measured) - 1 : 0;
}

/* The model's error on this signature for strategy s: its prior, or the largest miss the latest means show when
 * larger (a miss of one strategy says the model is off here, for every strategy). */
double iotame__select_prediction_error(const iotame_sel_entry_t *e, int s)
{
    double err = e->prediction.prior[s];
    for (int k = 0; k < e->exam.ncand; k++) {
        const int c = e->exam.cand[k];
        err = fmax(err, prediction_miss(e, c, e->prediction.seen[c]));
    }
    return err;
}

/* Whether candidate c's prediction lies within the errors of the incumbent's: the log of their ratio at most the
 * two log errors added in quadrature (independent errors; 0.2 each: a factor 1.29). What the signature's calls
 * measured widens the incumbent's side only: counted on both, one miss would count twice. */
static int prediction_within(const iotame_sel_entry_t *e, int c, int incumbent)
{
    const sel_prediction_t *md = &e->prediction;
    if (!(md->pred[c] > 0)) return 0;
    const double ec = log1p(md->prior[c]);
    const double ei = log1p(iotame__select_prediction_error(e, incumbent));
    return log(md->pred[c] / md->pred[incumbent]) <= sqrt(ec * ec + ei * ei);
}

/* The latest mean measured of strategy s: of a window or a finished examination, else the one under way, else its
 * first call (MB/s; 0: none). */
double iotame__select_prediction_latest(const iotame_sel_entry_t *e, int s)
{
    const double mean = e->prediction.seen[s] > 0 ? e->prediction.seen[s] : iotame__select_exam_mean(e, s);
    return mean > 0 ? mean : e->prediction.first_call[s];
}

void iotame__select_prediction_first_call(iotame_sel_entry_t *e, int s, double mbs)
{
    if (e->prediction.on && mbs > 0 && !(e->prediction.first_call[s] > 0)) e->prediction.first_call[s] = mbs;
}

void iotame__select_prediction_seen(iotame_sel_entry_t *e, int s, double mbs)
{
    if (!e->prediction.on || mbs <= 0) return;
    e->prediction.seen[s] = mbs;
    e->prediction.top[s] = fmax(e->prediction.top[s], mbs);
}

/* The incumbent: the winner, else the best examined so far, else the fastest predicted. */
static int prediction_incumbent(const iotame_sel_entry_t *e)
{
    const int b = iotame__select_exam_best(e);
    return e->mon.decided ? e->mon.winner : b >= 0 ? b : e->prediction.first;
}

/* Lets into examinations the candidates now predicted within the errors of the incumbent's prediction (an error
 * grows when a measured mean departs from its prediction); a candidate once let in stays in. Returns how many, and
 * marks them in `only` when asked. */
static int prediction_uncut(iotame_sel_entry_t *e, int mark)
{
    sel_prediction_t *md = &e->prediction;
    const int incumbent = prediction_incumbent(e);
    int n = 0;
    for (int k = 0; k < e->exam.ncand; k++) {
        const int c = e->exam.cand[k];
        if (md->cut[c] && prediction_within(e, c, incumbent)) {
            md->cut[c] = 0;
            if (mark) md->only[c] = 1;
            n++;
        }
    }
    return n;
}

/* What an examination leaves out besides the clear losers: in a restricted one every candidate but the incumbent
 * (`first`) and the ones it is for; else the candidates the model's error keeps out. */
void iotame__select_prediction_skip(iotame_sel_entry_t *e, int first)
{
    sel_prediction_t *md = &e->prediction;
    if (!md->on) return;
    if (!md->restricted) prediction_uncut(e, 0);
    for (int k = 0; k < e->exam.ncand; k++) {
        const int c = e->exam.cand[k];
        if (c == first) continue;
        if (md->restricted) e->exam.skip[c] = !md->only[c];
        else e->exam.skip[c] |= md->cut[c];
    }
}

/* Whether a measured mean departed from its prediction beyond the model's error, so that candidates it kept out
 * are now within the error: an examination of those and the incumbent follows. */
int iotame__select_prediction_departed(iotame_sel_entry_t *e)
{
    sel_prediction_t *md = &e->prediction;
    if (!md->on || !prediction_uncut(e, 1)) return 0;
    md->departures++;
    md->restricted = 1;
    return 1;
}

/* After an examination: a probe that kept the incumbent doubles the credit the next probe waits for; one that
 * found the probed strategy faster returns to it. A winner that misses its prediction lets more candidates in. */
void iotame__select_prediction_finish(iotame_sel_entry_t *e, int previous)
{
    sel_prediction_t *md = &e->prediction;
    if (!md->on) return;
    if (md->probing) {
        if (e->mon.winner == previous) md->backoff = fmin(2 * md->backoff, 1 << 20);
        else md->returns++, md->backoff = 1;
    }
    md->restricted = md->probing = 0;
    memset(md->only, 0, sizeof md->only);
    if (iotame__select_prediction_departed(e)) iotame__select_exam_start(e, e->mon.winner);
}

/* The candidate a probe would check while the winner runs at `mean` MB/s: the one expected fastest (its best mean
 * measured, else its prediction less the error), when it beats the winner by more than the threshold; else -1. A
 * strategy left under a load is so measured again once the load may be gone: the way back. */
static int prediction_probe_candidate(const iotame_sel_entry_t *e, double mean)
{
    const sel_prediction_t *md = &e->prediction;
    int best = -1;
    double best_mbs = (1 + e->mon.thr) * mean;
    for (int k = 0; k < e->exam.ncand; k++) {
        const int c = e->exam.cand[k];
        const double err = iotame__select_prediction_error(e, c);
        const double predicted = md->pred[c] > 0 ? e->sig.bytes / (md->pred[c] * (1 + err) * 1e6) : 0;
        const double expected = md->top[c] > 0 ? md->top[c] : md->cut[c] ? 0 : predicted;
        if (c != e->mon.winner && expected > best_mbs) best = c, best_mbs = expected;
    }
    return best;
}

/* While the winner runs: a probe of a strategy expected faster, once the budget's credit holds `backoff` times
 * what the probe's turn may lose (from the probed strategy's latest mean, else a call of the winner per call). */
void iotame__select_prediction_probe(iotame_sel_entry_t *e, double mean)
{
    sel_prediction_t *md = &e->prediction;
    if (!md->on || e->state != RUNNING || e->set.budget <= 0) return;
    const int c = prediction_probe_candidate(e, mean);
    if (c < 0) return;
    const double tw = iotame__select_call_seconds(e, mean), tc = iotame__select_call_seconds(e, md->seen[c]);
    const double loss = iotame__select_settings_turn_calls(e->set.k.gate_calls, e->set.settle, e->set.exam_calls) *
                        (md->seen[c] > 0 ? fmax(0, tc - tw) : tw);
    if (e->set.budget * e->budget.spent - e->budget.debt < md->backoff * loss) return;
    md->probes++;
    md->probing = md->restricted = 1;
    md->only[c] = 1;
    iotame__select_exam_start(e, e->mon.winner);
}

/* Orders x's candidates by key (stable: ties keep the configured order; keys <= 0 last). */
static void prediction_sort(sel_exam_t *x, const double *key)
{
    for (int k = 1; k < x->ncand; k++)
        for (int j = k; j > 0; j--) {
            const double a = key[x->cand[j - 1]], b = key[x->cand[j]];
            if (!(b > 0 && (a <= 0 || b < a))) break;
            const int t = x->cand[j];
            x->cand[j] = x->cand[j - 1];
            x->cand[j - 1] = t;
        }
}

/* Whether the fastest predicted leads what a job would run without the profile: the configured first candidate
 * (auto's first call without a profile) and the library's own collective call are both kept out by its errors. */
static int prediction_leads(const iotame_sel_entry_t *e, int library)
{
    const sel_exam_t *x = &e->exam;
    const int first = e->prediction.first;
    int lib_candidate = 0;
    for (int k = 0; k < x->ncand; k++) lib_candidate |= x->cand[k] == library;
    return (x->cand[0] == first || e->prediction.cut[x->cand[0]]) &&
           (!lib_candidate || library == first || e->prediction.cut[library]);
}

/* Seconds of candidate c's first call on the handle: its predicted call and the set-up it has not paid there. */
static double prediction_first_call(const sel_prediction_t *md, const iotame_select_model_t *model, int c)
{
    return md->pred[c] + fmax(0, model->setup[c]);
}

/* The quicker first call of what would serve a phase of one call without the profile: the configured first candidate
 * and the library's call, where they are candidates with a prediction (INFINITY: neither). */
static double prediction_reference_call(const iotame_sel_entry_t *e, const iotame_select_model_t *model, int configured)
{
    const int refs[2] = {configured, model->library};
    double least = INFINITY;
    for (int i = 0; i < 2; i++) {
        int candidate = 0;
        for (int k = 0; k < e->exam.ncand; k++) candidate |= e->exam.cand[k] == refs[i];
        if (candidate && e->prediction.pred[refs[i]] > 0)
            least = fmin(least, prediction_first_call(&e->prediction, model, refs[i]));
    }
    return least;
}

/* Whether the fastest predicted would make a phase of one call slower than the configured first candidate (what
 * serves without the profile) or the library's call: its first call, the set-up it has not paid on this handle
 * included, predicted slower than theirs. Its lead is in the calls after; a phase may not have any. */
static int prediction_setup_defers(const iotame_sel_entry_t *e, const iotame_select_model_t *model, int configured)
{
    return prediction_first_call(&e->prediction, model, e->prediction.first) >
           prediction_reference_call(e, model, configured);
}

/* Whether candidate c may serve first in a class earlier jobs measured: within the errors of the fastest predicted
 * (or a reference where the pick does not lead) and its first call predicted no slower than `bound`, the
 * references' (prediction_reference_call). */
static int prediction_eligible(const sel_prediction_t *md, const iotame_select_model_t *model, int c, int configured,
                               double bound)
{
    const int within = !md->cut[c] || (!md->leads && (c == configured || c == model->library));
    return within && md->pred[c] > 0 && prediction_first_call(md, model, c) <= bound;
}

/* What serves first in a class earlier jobs measured (the knowledge's corrections of some strategy rest on a
 * measurement); -1: the order stands (no such class, or a trusted or deferred pick). What serves first is measured
 * and corrected in every job, while a candidate within the errors is examined only after it, in phases long enough
 * to pay for a turn: a candidate the fit predicted slow would never be measured, and so never corrected. So:
 * - without a lead, the fastest predicted serves first where it is eligible (prediction_eligible): the predictions
 *   are now corrected by what the class's jobs measured (`learned`), else the configured first;
 * - unless what so serves first measured as fast as the fit predicted or faster (its correction at most 0), the
 *   fastest eligible candidate that no job of the class measured serves first instead (`explored`): each serves
 *   first in at most one job of the class, predicted no worse than the job without the profile.
 * The others follow as the budget allows (docs/design/fitted-model.md, "Exploring"). */
static int prediction_known_front(iotame_sel_entry_t *e, const iotame_select_model_t *model, int configured)
{
    sel_prediction_t *md = &e->prediction;
    const sel_exam_t *x = &e->exam;
    int known = 0;
    for (int k = 0; k < x->ncand; k++) known |= model->measured[x->cand[k]] > 0;
    if (md->trusted || md->deferred || !known) return -1;
    const double bound = prediction_reference_call(e, model, configured);
    const int usual = md->leads ? md->first : configured;
    int front = md->leads || prediction_eligible(md, model, md->first, configured, bound) ? md->first : configured;
    if (!(model->measured[front] > 0 && model->correction[front] <= 0)) {
        int c = -1;
        for (int k = 0; k < x->ncand; k++) {
            const int o = x->cand[k];
            if (model->measured[o] <= 0 && prediction_eligible(md, model, o, configured, bound) &&
                (c < 0 || md->pred[o] < md->pred[c]))
                c = o;
        }
        if (c >= 0) front = c;
        if (c >= 0 && c != usual) md->explored = c;
    }
    md->learned = front != usual && md->explored < 0;
    return front;
}

/* Moves candidate c to the front of the examination's order, the others' order kept. */
static void prediction_to_front(sel_exam_t *x, int c)
{
    int k = 0;
    while (x->cand[k] != c) k++;
    for (; k > 0; k--) x->cand[k] = x->cand[k - 1];
    x->cand[0] = c;
}

/* A new entry's prediction. Where the fastest predicted beats every other candidate beyond both errors it is
 * trusted: it comes first and serves alone (prediction_start), the others kept out until a measured time departs
 * from its prediction. Where it so beats only what would serve without the profile (prediction_leads) it serves
 * first, the candidates within the errors are examined after it in predicted order as the budget allows, and those
 * beyond are kept out: whichever wins, it is predicted faster than the job without the profile beyond the errors.
 * Where its first call, the set-up it has not paid on the handle included, is predicted slower than the configured
 * first's or the library's, it would harm a phase of one call: it is deferred, the configured first serves first and
 * the pick is examined next, the others as when it leads (prediction_setup_defers).
 * Otherwise the prediction chooses nothing (do no harm): the candidates are examined in the configured order, as
 * without a profile, less those it keeps out (the ones predicted beyond the errors of the fastest, but never the
 * configured first or the library's call), and the predictions are checked against what is measured. In a class
 * earlier jobs measured, what serves first follows their measurements (prediction_known_front). */
void iotame__select_prediction_init(iotame_sel_entry_t *e, const iotame_select_model_t *model)
{
    sel_prediction_t *md = &e->prediction;
    md->backoff = 1;
    md->explored = -1;
    if (!model) return;
    sel_exam_t *x = &e->exam;
    int first = -1;
    for (int k = 0; k < x->ncand; k++) {
        const int c = x->cand[k];
        md->pred[c] = fmax(0, model->seconds[c]);
        md->prior[c] = fmax(0, model->errors[c] > 0 ? model->errors[c] : model->error);
        if (md->pred[c] > 0 && (first < 0 || md->pred[c] < md->pred[first])) first = c;
    }
    if (first < 0) return; /* nothing predicted: as without a profile */
    md->on = 1;
    md->first = first;
    for (int k = 0; k < x->ncand; k++) md->cut[x->cand[k]] = x->cand[k] != first;
    prediction_uncut(e, 0);
    md->trusted = 1;
    for (int k = 0; k < x->ncand; k++) md->trusted &= md->cut[x->cand[k]] || x->cand[k] == first;
    md->leads = md->trusted || prediction_leads(e, model->library);
    const int configured = x->cand[0];
    if (md->leads && prediction_setup_defers(e, model, configured)) {
        md->trusted = md->leads = 0;
        md->deferred = 1;
    }
    const int front = prediction_known_front(e, model, configured);
    if (md->leads || md->deferred) {
        prediction_sort(x, md->pred);
        if (md->deferred) { /* the configured first serves first, then the candidates in predicted order */
            prediction_to_front(x, configured);
            md->cut[configured] = 0;
        }
    } else {
        /* As without a profile: the configured order, the configured first candidate and the library's call
         * examined whatever their predictions; only the candidates predicted slower than the fastest beyond both
         * errors stay out, as in a leading pick's examination (the fastest predicted is examined, so whatever wins
         * is predicted no slower than they beyond the errors), until a measured time departs from its prediction. */
        md->cut[configured] = 0;
        if (model->library >= 0 && model->library < IOTAME_SELECT_MAX) md->cut[model->library] = 0;
    }
    if (front >= 0) prediction_to_front(x, front);
}

/* Whether the model leaves a new entry a single candidate: it then runs from the first call. */
int iotame__select_prediction_start(iotame_sel_entry_t *e)
{
    if (!e->prediction.on || !e->prediction.trusted) return 0;
    e->state = RUNNING;
    e->mon.winner = e->prediction.first;
    e->mon.decided = 1;
    return 1;
}
