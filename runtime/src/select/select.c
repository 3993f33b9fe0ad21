/* The selector's policy: the Orthrus selector (Zhang, Ou, Davis and Jiang, "Orthrus: a framework for implementing
 * efficient collective I/O in multi-core clusters", ISC 2014, section 2.1): performance examination instead of
 * modelling. A new call signature starts an examination in which every candidate serves exam_calls calls; the best
 * mean throughput wins and serves every later call of the signature while its throughput is monitored; a deviation
 * beyond threshold starts a new examination.
 *
 * Deterministic and free of MPI, JSON and the strategy registry: the auto strategy (collective/auto.c) feeds it
 * reduced measurements, the same on every rank, and it decides. Beyond the paper (docs/collective.md lists them;
 * docs/design/ says why), each governed by a knob of the collective section:
 * - a candidate whose first measured call is below drop x the best mean so far stops its turn (clearly losing), and
 *   a re-examination skips such candidates of the last one, except every retry_every-th;
 * - a strategy's first call after another's is a transition call, served but not measured (transition-calls.md);
 *   for reads the transition spans the file system's readahead (settle_calls);
 * - means are harmonic (harmonic-means.md); monitoring compares windows of at least exam_calls calls and
 *   window_seconds with the reference, and two deviating windows in a row start a re-examination; one that keeps the
 *   winner doubles the signature's threshold (up to threshold_max); a new winner whose first window runs clearly
 *   slower than the strategy before it hands back to that one;
 * - examinations are paid from a budget (select-budget.md, select-policy.md): a candidate's turn starts when the
 *   credit, exam_budget x the signature's I/O time minus what turns lost against the best so far, covers what the
 *   turn may lose (budget_turn_loss); meanwhile the best so far serves. A winner from the knowledge file serves at
 *   once, and an undecided signature's credit carries over to the next run.
 *
 * An entry's state is split by concern: its settings, the examination, the monitoring of its winner, the budget, and
 * the calls it served; each has its functions below, named after it. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "select.h"

enum { EXAMINING, RUNNING };

/* What the entry was created with (the handle's agreed settings, its signature's transition). */
typedef struct {
    int exam_calls;        /* calls a candidate's examination measures (a read's: at least its transition) */
    int settle;            /* a strategy's first calls after another's that are transition calls (settle_calls) */
    double threshold;      /* configured; the one in effect is the monitor's */
    double window_seconds; /* the least time of a monitoring window */
    double budget;         /* exam_budget */
    iotame_select_knobs_t k;
} sel_settings_t;

/* The examination under way, or the last one: the candidates' turns and their sums. */
typedef struct {
    int cand[IOTAME_SELECT_MAX], ncand;
    int cur, served;                 /* EXAMINING: cand[cur] has served `served` measured calls */
    double inv[IOTAME_SELECT_MAX];   /* this examination: the sum of 1 / MB/s, by strategy id */
    int n[IOTAME_SELECT_MAX];
    int skip[IOTAME_SELECT_MAX];     /* not examined this time (clearly losing the last time) */
    double last[IOTAME_SELECT_MAX];  /* mean of the last examination a strategy took part in */
    int t_n;                         /* cand[cur]'s transition calls after its first, and their sum of 1 / MB/s */
    double t_inv;
    uint64_t examined, reexams;      /* measured examination calls; re-examinations */
} sel_exam_t;

/* Monitoring the winner: its reference, the window under way, the threshold in effect, hand back. */
typedef struct {
    int winner;  /* RUNNING; during a re-examination, the last winner */
    int decided; /* a winner is known (examined, or from the knowledge file) */
    double ref;  /* the winner's reference MB/s; 0 until measured */
    double thr;  /* the threshold in effect (widened after false alarms) */
    /* the window under way (at least exam_calls calls and window_seconds of them): the strategy whose calls it sums
     * (the winner, or the best so far while an examination waits), their count and sum of 1 / MB/s */
    int win_of, win_n;
    double win_inv;
    double steady; /* the last full window's mean, of strategy win_of (0: none) */
    int deviated;  /* the last window deviated from the reference */
    int fallback;  /* the strategy that ran before the winner (-1: none): back to it if the winner runs slower */
    double fallback_mbs;
    uint64_t handed_back;
} sel_monitor_t;

/* The examination budget: credit earned by the signature's calls, debt of what examinations lost. */
typedef struct {
    double spent, debt; /* seconds of every call; seconds examination calls lost against the best so far */
    /* the part of spent and debt a knowledge file holds already (loaded from it, or saved by this run): a save adds
     * only the rest to the file's, so that jobs at once that started from the same credit each add their own */
    double spent_saved, debt_saved;
    int waiting;        /* EXAMINING: cand[cur] waits for credit, the best so far serves */
    uint64_t deferred;  /* calls the best served while an examination waited */
} sel_budget_t;

/* The cost model's part (docs/design/cost-model.md, "How the selector uses it"): the prediction, the candidates its
 * error keeps out of examinations, and what the signature's calls measured of each strategy, against which the
 * prediction is checked and from which the selector returns to a faster strategy once conditions recover. */
typedef struct {
    int on;
    int first;                      /* the fastest predicted */
    double pred[IOTAME_SELECT_MAX]; /* seconds of one call by strategy id (0: not predicted) */
    double prior;                   /* the error assumed before the signature's calls measured any */
    int cut[IOTAME_SELECT_MAX];     /* kept out of examinations: predicted beyond the error of the incumbent's */
    double seen[IOTAME_SELECT_MAX]; /* the latest mean measured of each strategy (MB/s; 0: none) */
    double top[IOTAME_SELECT_MAX];  /* the best mean measured of each (MB/s): what it does when conditions allow */
    double backoff;                 /* a probe waits for this many times its expected loss in credit */
    /* the examination under way is restricted to the incumbent and these (a probe's, or a departure's) */
    int restricted, probing, only[IOTAME_SELECT_MAX];
    uint64_t departures, probes, returns;
} sel_prediction_t;

/* The calls the entry served: how many, which strategy served the last ones in a row, the trace. */
typedef struct {
    uint64_t calls;
    int prev, run; /* the strategy that served the signature's last call (-1: none), and its calls in a row */
    int64_t trace_left;
    iotame_select_traced_t *trace;
    size_t ntrace, trace_cap;
} sel_calls_t;

struct iotame_sel_entry {
    iotame_sig_t sig;
    int state;
    int from_knowledge;
    sel_settings_t set;
    sel_exam_t exam;
    sel_monitor_t mon;
    sel_budget_t budget;
    sel_calls_t calls;
    sel_prediction_t prediction;
    iotame_select_decision_t published; /* the decision as of the last call */
    iotame_sel_entry_t *next;           /* the next younger entry */
};

struct iotame_selector {
    uint64_t digest, generation;
    int started;
    iotame_sel_entry_t *entries, *last; /* oldest first */
};

static uint64_t sel_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 29);
}

iotame_sig_t iotame_select_sig(int write, int64_t nprocs, int64_t bytes, int64_t requests, int64_t first,
                               int64_t end)
{
    const int64_t gap = requests > 1 ? (end - first - bytes) / (requests - 1) : 0;
    return (iotame_sig_t){write, nprocs, bytes, requests, gap > 0 ? gap : 0};
}

iotame_selector_t *iotame_select_new(void)
{
    iotame_selector_t *s = calloc(1, sizeof *s);
    if (s) s->digest = 1;
    return s;
}

uint64_t iotame_select_digest(const iotame_selector_t *s) { return s->digest; }
uint64_t iotame_select_generation(const iotame_selector_t *s) { return s->generation; }
int iotame_select_started(const iotame_selector_t *s) { return s->started; }

void iotame_select_reset(iotame_selector_t *s)
{
    while (s->entries) {
        iotame_sel_entry_t *e = s->entries;
        s->entries = e->next;
        free(e->calls.trace);
        free(e);
    }
    s->last = NULL;
    s->digest = 1;
    s->generation++;
}

void iotame_select_free(iotame_selector_t *s)
{
    if (!s) return;
    iotame_select_reset(s);
    free(s);
}

const iotame_sel_entry_t *iotame_select_first(const iotame_selector_t *s) { return s->entries; }
const iotame_sel_entry_t *iotame_select_next(const iotame_sel_entry_t *e) { return e->next; }

void iotame_select_saved(iotame_selector_t *s)
{
    for (iotame_sel_entry_t *e = s->entries; e; e = e->next) {
        e->budget.spent_saved = e->budget.spent;
        e->budget.debt_saved = e->budget.debt;
    }
}

/* ---- means ---- */

/* The harmonic mean: a signature's calls move the same bytes, so what several calls achieved is their bytes over
 * their summed time; the mean of their throughputs would weigh a fast call as much as a slow one
 * (docs/design/harmonic-means.md). A call measured in no time (mbs 0) adds no time. */
static double sel_harmonic(int n, double inv) { return n && inv > 0 ? n / inv : 0.0; }
static double sel_inverse(double mbs) { return mbs > 0 ? 1 / mbs : 0.0; }

/* Seconds one call of the signature takes at `mbs` (0 when not measured). */
static double sel_call_seconds(const iotame_sel_entry_t *e, double mbs)
{
    return mbs > 0 ? e->sig.bytes / (mbs * 1e6) : 0;
}

/* ---- the settings of an entry ---- */

/* How many calls a strategy's transition spans: one; for a read, the file system's readahead's worth. A candidate
 * examined after another reads what that one's sequential calls left read ahead: measured after that many calls, a
 * read candidate pays for its own reads, and measured over as many, for its stalls on the disk too. */
static int settle_calls(const iotame_sig_t *g, int64_t readahead)
{
    if (g->write || g->bytes <= 0 || readahead <= g->bytes) return 1;
    const int64_t n = (readahead + g->bytes - 1) / g->bytes;
    return n < 1 << 20 ? (int)n : 1 << 20;
}

/* The calls a candidate's examination measures: exam_calls, and for a read at least its transition's length. */
static int settings_exam_calls(const iotame_select_conf_t *conf, int settle)
{
    const int n = conf->exam_calls < 1 ? 1 : conf->exam_calls; /* settings.json bounds it */
    return settle > n ? settle : n;
}

/* The calls of the best so far the credit must pay for before a candidate's turn: gate_calls, or the turn's length
 * when longer (a read's transition and measured calls span the readahead, settle_calls). */
static double settings_turn_calls(double gate, int settle, int exam_calls) { return fmax(gate, settle + exam_calls); }

static void settings_init(sel_settings_t *set, const iotame_sig_t *sig, const iotame_select_conf_t *conf)
{
    set->settle = settle_calls(sig, conf->readahead);
    set->exam_calls = settings_exam_calls(conf, set->settle);
    set->k = *conf->knobs;
    set->threshold = conf->threshold;
    set->window_seconds = conf->window_seconds;
    set->budget = conf->budget;
}

/* ---- the calls served ---- */

/* The transition calls the strategy has still to serve before its calls are measured. */
static int calls_transition_left(const iotame_sel_entry_t *e, int strategy)
{
    const sel_calls_t *c = &e->calls;
    return strategy != c->prev ? e->set.settle : c->run < e->set.settle ? e->set.settle - c->run : 0;
}

/* Whether the strategy's next call is a transition call, served but not measured: the strategy did not serve the
 * signature's call before, or not yet its transition's calls in a row (settle_calls). The first call of a strategy
 * after another's runs slowly whatever the strategies are, and so does the first of a signature (cold buffers):
 * docs/design/transition-calls.md, bench/switch_cost.c. */
static int calls_fresh(const iotame_sel_entry_t *e, int strategy) { return calls_transition_left(e, strategy) > 0; }

static void calls_trace(sel_calls_t *c, int strategy, double mbs)
{
    if (c->trace_left <= 0) return;
    c->trace_left--;
    if (c->ntrace == c->trace_cap) {
        size_t cap = c->trace_cap ? 2 * c->trace_cap : 16;
        iotame_select_traced_t *grown = realloc(c->trace, cap * sizeof *grown);
        if (!grown) return; /* this call goes untraced */
        c->trace = grown;
        c->trace_cap = cap;
    }
    c->trace[c->ntrace++] = (iotame_select_traced_t){strategy, mbs};
}

/* ---- the examination ---- */

static double exam_mean(const iotame_sel_entry_t *e, int i) { return sel_harmonic(e->exam.n[i], e->exam.inv[i]); }

/* The best examined strategy so far (-1: none). */
static int exam_best(const iotame_sel_entry_t *e)
{
    int b = -1;
    for (int k = 0; k < e->exam.ncand; k++) {
        int i = e->exam.cand[k];
        if (e->exam.n[i] && (b < 0 || exam_mean(e, i) > exam_mean(e, b))) b = i;
    }
    return b;
}

static void exam_finish(iotame_sel_entry_t *e);

/* Moves cur past the candidates this examination skips; finishes it after the last. */
static void exam_next_candidate(iotame_sel_entry_t *e)
{
    sel_exam_t *x = &e->exam;
    while (x->cur < x->ncand && x->skip[x->cand[x->cur]]) x->cur++;
    if (x->cur >= x->ncand) exam_finish(e);
}

static void prediction_skip(iotame_sel_entry_t *e, int first);

static void exam_start(iotame_sel_entry_t *e, int first)
{
    sel_exam_t *x = &e->exam;
    memset(x->skip, 0, sizeof x->skip);
    /* A re-examination: the clear losers of their last examination sit it out, except every retry_every-th. */
    if (first >= 0 && (e->set.k.retry_every <= 1 || x->reexams % e->set.k.retry_every != 0))
        for (int k = 0; k < x->ncand; k++) {
            int i = x->cand[k];
            x->skip[i] = i != first && x->last[i] > 0 && x->last[i] < e->set.k.drop * x->last[first];
        }
    prediction_skip(e, first);
    e->state = EXAMINING;
    x->cur = x->served = x->t_n = 0;
    x->t_inv = 0;
    memset(x->inv, 0, sizeof x->inv);
    memset(x->n, 0, sizeof x->n);
    /* The previous winner first: it is measured under the new conditions before the others. */
    for (int k = 1; first >= 0 && k < x->ncand; k++)
        if (x->cand[k] == first) {
            memmove(&x->cand[1], &x->cand[0], (size_t)k * sizeof x->cand[0]);
            x->cand[0] = first;
        }
}

/* The candidate under examination has had its turn (served its calls, or is clearly losing): the next one's. */
static void exam_next_turn(iotame_sel_entry_t *e)
{
    e->exam.served = e->exam.t_n = 0;
    e->exam.t_inv = 0;
    e->exam.cur++;
    exam_next_candidate(e);
}

static void prediction_seen(iotame_sel_entry_t *e, int s, double mbs);
static void prediction_finish(iotame_sel_entry_t *e, int previous);

static void exam_finish(iotame_sel_entry_t *e)
{
    sel_exam_t *x = &e->exam;
    sel_monitor_t *m = &e->mon;
    int previous = m->decided ? m->winner : -1;
    m->winner = exam_best(e);
    if (m->winner < 0) m->winner = x->cand[0];
    /* A re-examination that keeps the winner was a false alarm: the noise is wider than the threshold, so widen
     * it (doubling, up to threshold_max); a new winner means conditions changed: back to the configured one. A
     * probe is no alarm: it leaves the threshold as it was. */
    if (previous >= 0 && !e->prediction.probing)
        m->thr = m->winner == previous ? fmin(2 * m->thr, e->set.k.threshold_max) : e->set.threshold;
    m->ref = 0; /* its first full window, as it runs */
    for (int k = 0; k < x->ncand; k++)
        if (x->n[x->cand[k]]) {
            x->last[x->cand[k]] = exam_mean(e, x->cand[k]);
            prediction_seen(e, x->cand[k], x->last[x->cand[k]]);
        }
    m->fallback = m->steady > 0 && m->win_of != m->winner ? m->win_of : -1;
    m->fallback_mbs = m->steady;
    e->state = RUNNING;
    m->decided = 1;
    m->win_n = m->deviated = 0;
    prediction_finish(e, previous);
}

/* ---- the budget ---- */

/* Whether the credit (budget x spent - debt, in seconds) pays for `calls` calls of bytes at mbs. */
static int budget_affords(double budget, double spent, double debt, int64_t bytes, double mbs, double calls)
{
    return budget * spent - debt >= calls * (double)bytes / (mbs * 1e6);
}

/* Seconds a turn of candidate c may lose against the best so far b, what the budget's credit must hold before the
 * turn starts: from c's mean in the last examination it took part in (nothing when it ran faster than b: examining
 * it while the incumbent is the slow one costs nothing), else as if each of the turn's calls lost one call of b (a
 * candidate below drop x b stops after its first measured call). What the turn does lose is charged to the debt. */
static double budget_turn_loss(const iotame_sel_entry_t *e, int c, int b)
{
    const double tb = sel_call_seconds(e, exam_mean(e, b));
    const double per_call = e->exam.last[c] > 0 ? fmax(0, sel_call_seconds(e, e->exam.last[c]) - tb) : tb;
    return settings_turn_calls(e->set.k.gate_calls, e->set.settle, e->set.exam_calls) * per_call;
}

/* Whether the next examination call must wait for credit: not with an unlimited budget, nor when the candidate is
 * the best so far, has started its run, or nothing has been measured yet. */
static void budget_gate(iotame_sel_entry_t *e)
{
    sel_budget_t *g = &e->budget;
    g->waiting = 0;
    if (e->state != EXAMINING || e->set.budget >= 1) return;
    const int c = e->exam.cand[e->exam.cur];
    if (e->calls.prev == c) return;
    int b = exam_best(e);
    if (b < 0 || b == c || exam_mean(e, b) <= 0) return;
    g->waiting = e->set.budget * g->spent - g->debt < budget_turn_loss(e, c, b);
}

/* Charges an examination call of `mbs` with what it took beyond a call of the best so far, of mean b_mean (a faster
 * call earns credit). */
static void budget_charge(iotame_sel_entry_t *e, double b_mean, double mbs)
{
    e->budget.debt += sel_call_seconds(e, mbs) - sel_call_seconds(e, b_mean);
}

/* ---- monitoring ---- */

/* Adds a call of the winner (or of the best so far while an examination waits) to the monitoring window; returns
 * the window's mean when it is full, else 0. */
static double monitor_add(iotame_sel_entry_t *e, int strategy, double mbs)
{
    sel_monitor_t *m = &e->mon;
    if (strategy != m->win_of) { /* another strategy's calls: a new window */
        m->win_of = strategy;
        m->win_n = 0;
    }
    if (m->win_n++ == 0) m->win_inv = 0;
    m->win_inv += sel_inverse(mbs);
    if (m->win_n < e->set.exam_calls || e->sig.bytes * m->win_inv * 1e-6 < e->set.window_seconds) return 0;
    m->steady = sel_harmonic(m->win_n, m->win_inv);
    m->win_n = 0;
    return m->steady;
}

/* An examination measures each candidate right after another, and reads inherit what the one before left in the
 * page cache: a candidate can win an examination it would not win running. So a new winner whose first window runs
 * clearly slower (by the threshold) than the strategy before it ran hands back to it. Returns whether it did. */
static int monitor_hand_back(iotame_sel_entry_t *e, double mean)
{
    sel_monitor_t *m = &e->mon;
    const int back = m->fallback >= 0 && mean < (1 - m->thr) * m->fallback_mbs;
    if (back) {
        e->exam.last[m->winner] = mean;
        m->winner = m->fallback;
        m->ref = m->fallback_mbs;
        m->handed_back++;
    }
    m->fallback = -1;
    return back;
}

/* A call of the running winner: its window, and when the window is full, the comparison with the reference (two
 * deviating windows in a row start a re-examination, the winner first). */
static int prediction_departed(iotame_sel_entry_t *e);
static void prediction_probe(iotame_sel_entry_t *e, double mean);

static void monitor_call(iotame_sel_entry_t *e, int strategy, double mbs)
{
    sel_monitor_t *m = &e->mon;
    double mean = monitor_add(e, strategy, mbs);
    if (mean <= 0 || monitor_hand_back(e, mean)) return;
    prediction_seen(e, strategy, mean);
    if (m->ref <= 0) { /* the winner's first window sets the reference, and checks the prediction */
        m->ref = mean;
        if (prediction_departed(e)) exam_start(e, m->winner);
    } else if (fabs(mean - m->ref) <= m->thr * m->ref || e->exam.ncand < 2) {
        m->deviated = 0;
    } else if (!m->deviated) {
        m->deviated = 1;
        e->prediction.backoff = 1; /* conditions changed: a probe may pay again soon */
    } else {
        e->exam.reexams++;
        exam_start(e, m->winner);
        return;
    }
    if (!m->deviated) prediction_probe(e, mean);
}

/* ---- the prediction (the cost model's, select.h) ---- */

/* How far a measured mean lies from the prediction: a factor f either way is f - 1 (0: nothing to compare). */
static double prediction_miss(const iotame_sel_entry_t *e, int s, double mbs)
{
    const double measured = sel_call_seconds(e, mbs), pred = e->prediction.pred[s];
    return measured > 0 && pred > 0 ? fmax(measured / pred, pred / measured) - 1 : 0;
}

/* The model's error on this signature: the prior, or the largest miss the latest means show when larger. */
static double prediction_error(const iotame_sel_entry_t *e)
{
    double err = e->prediction.prior;
    for (int k = 0; k < e->exam.ncand; k++) {
        const int c = e->exam.cand[k];
        err = fmax(err, prediction_miss(e, c, e->prediction.seen[c]));
    }
    return err;
}

/* The latest mean measured of strategy s: of a window or a finished examination, else the one under way (MB/s). */
static double prediction_latest(const iotame_sel_entry_t *e, int s)
{
    return e->prediction.seen[s] > 0 ? e->prediction.seen[s] : exam_mean(e, s);
}

static void prediction_seen(iotame_sel_entry_t *e, int s, double mbs)
{
    if (!e->prediction.on || mbs <= 0) return;
    e->prediction.seen[s] = mbs;
    e->prediction.top[s] = fmax(e->prediction.top[s], mbs);
}

/* The incumbent: the winner, else the best examined so far, else the fastest predicted. */
static int prediction_incumbent(const iotame_sel_entry_t *e)
{
    const int b = exam_best(e);
    return e->mon.decided ? e->mon.winner : b >= 0 ? b : e->prediction.first;
}

/* Lets into examinations the candidates now predicted within the error of the incumbent's prediction (the error
 * grows when a measured mean departs from its prediction); a candidate once let in stays in. Returns how many, and
 * marks them in `only` when asked. */
static int prediction_uncut(iotame_sel_entry_t *e, int mark)
{
    sel_prediction_t *md = &e->prediction;
    const double bound = md->pred[prediction_incumbent(e)] * (1 + prediction_error(e));
    int n = 0;
    for (int k = 0; k < e->exam.ncand; k++) {
        const int c = e->exam.cand[k];
        if (md->cut[c] && md->pred[c] > 0 && md->pred[c] <= bound) {
            md->cut[c] = 0;
            if (mark) md->only[c] = 1;
            n++;
        }
    }
    return n;
}

/* What an examination leaves out besides the clear losers: in a restricted one every candidate but the incumbent
 * (`first`) and the ones it is for; else the candidates the model's error keeps out. */
static void prediction_skip(iotame_sel_entry_t *e, int first)
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
static int prediction_departed(iotame_sel_entry_t *e)
{
    sel_prediction_t *md = &e->prediction;
    if (!md->on || !prediction_uncut(e, 1)) return 0;
    md->departures++;
    md->restricted = 1;
    return 1;
}

/* After an examination: a probe that kept the incumbent doubles the credit the next probe waits for; one that
 * found the probed strategy faster returns to it. A winner that misses its prediction lets more candidates in. */
static void prediction_finish(iotame_sel_entry_t *e, int previous)
{
    sel_prediction_t *md = &e->prediction;
    if (!md->on) return;
    if (md->probing) {
        if (e->mon.winner == previous) md->backoff = fmin(2 * md->backoff, 1 << 20);
        else md->returns++, md->backoff = 1;
    }
    md->restricted = md->probing = 0;
    memset(md->only, 0, sizeof md->only);
    if (prediction_departed(e)) exam_start(e, e->mon.winner);
}

/* The candidate a probe would check while the winner runs at `mean` MB/s: the one expected fastest (its best mean
 * measured, else its prediction less the error), when it beats the winner by more than the threshold; else -1. A
 * strategy left under a load is so measured again once the load may be gone: the way back. */
static int prediction_probe_target(const iotame_sel_entry_t *e, double mean)
{
    const sel_prediction_t *md = &e->prediction;
    const double err = prediction_error(e);
    int best = -1;
    double best_mbs = (1 + e->mon.thr) * mean;
    for (int k = 0; k < e->exam.ncand; k++) {
        const int c = e->exam.cand[k];
        const double predicted = md->pred[c] > 0 ? e->sig.bytes / (md->pred[c] * (1 + err) * 1e6) : 0;
        const double expected = md->top[c] > 0 ? md->top[c] : md->cut[c] ? 0 : predicted;
        if (c != e->mon.winner && expected > best_mbs) best = c, best_mbs = expected;
    }
    return best;
}

/* While the winner runs: a probe of a strategy expected faster, once the budget's credit holds `backoff` times
 * what the probe's turn may lose (from the probed strategy's latest mean, else a call of the winner per call). */
static void prediction_probe(iotame_sel_entry_t *e, double mean)
{
    sel_prediction_t *md = &e->prediction;
    if (!md->on || e->state != RUNNING || e->set.budget <= 0) return;
    const int c = prediction_probe_target(e, mean);
    if (c < 0) return;
    const double tw = sel_call_seconds(e, mean), tc = sel_call_seconds(e, md->seen[c]);
    const double loss = settings_turn_calls(e->set.k.gate_calls, e->set.settle, e->set.exam_calls) *
                        (md->seen[c] > 0 ? fmax(0, tc - tw) : tw);
    if (e->set.budget * e->budget.spent - e->budget.debt < md->backoff * loss) return;
    md->probes++;
    md->probing = md->restricted = 1;
    md->only[c] = 1;
    exam_start(e, e->mon.winner);
}

/* A new entry's prediction: the candidates in predicted order, the model's error keeping out those predicted beyond
 * it of the fastest. */
static void prediction_init(iotame_sel_entry_t *e, const iotame_select_model_t *model)
{
    sel_prediction_t *md = &e->prediction;
    md->backoff = 1;
    if (!model) return;
    sel_exam_t *x = &e->exam;
    for (int k = 0; k < x->ncand; k++) md->pred[x->cand[k]] = fmax(0, model->seconds[x->cand[k]]);
    for (int k = 1; k < x->ncand; k++) /* stable: ties keep the configured order; unpredicted ones last */
        for (int j = k; j > 0; j--) {
            const double a = md->pred[x->cand[j - 1]], b = md->pred[x->cand[j]];
            if (!(b > 0 && (a <= 0 || b < a))) break;
            const int t = x->cand[j];
            x->cand[j] = x->cand[j - 1];
            x->cand[j - 1] = t;
        }
    if (md->pred[x->cand[0]] <= 0) return; /* nothing predicted: as without a profile */
    md->on = 1;
    md->first = x->cand[0];
    md->prior = fmax(0, model->error);
    for (int k = 0; k < x->ncand; k++) md->cut[x->cand[k]] = 1;
    md->cut[md->first] = 0;
    prediction_uncut(e, 0);
}

/* Whether the model leaves a new entry a single candidate: it then runs from the first call. */
static int prediction_start(iotame_sel_entry_t *e)
{
    if (!e->prediction.on) return 0;
    for (int k = 0; k < e->exam.ncand; k++)
        if (e->exam.cand[k] != e->prediction.first && !e->prediction.cut[e->exam.cand[k]]) return 0;
    e->state = RUNNING;
    e->mon.winner = e->prediction.first;
    e->mon.decided = 1;
    return 1;
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

/* ---- the decision ---- */

/* The decision as the statistics show it, as of now. */
static void sel_publish(iotame_sel_entry_t *e)
{
    iotame_select_decision_t *d = &e->published;
    const sel_exam_t *x = &e->exam;
    d->sig = e->sig;
    d->strategy = e->mon.decided ? e->mon.winner : exam_best(e);
    d->running = e->state == RUNNING;
    d->ncand = x->ncand;
    for (int k = 0; k < x->ncand; k++) {
        d->cand[k] = x->cand[k];
        d->measured[k] = x->n[x->cand[k]] != 0;
        d->mbs[k] = d->measured[k] ? exam_mean(e, x->cand[k]) : 0;
    }
    d->reference_mbs = e->mon.ref;
    d->calls = e->calls.calls;
    d->examination_calls = x->examined;
    d->reexaminations = x->reexams;
    d->deferred_calls = e->budget.deferred;
    d->handed_back = e->mon.handed_back;
    d->threshold = e->mon.thr;
    d->transition_calls = e->set.settle;
    d->from_knowledge = e->from_knowledge;
    const sel_prediction_t *md = &e->prediction;
    d->modeled = md->on;
    if (!md->on) return;
    d->model_first = md->first;
    for (int i = 0; i < IOTAME_SELECT_MAX; i++) {
        d->predicted[i] = md->pred[i];
        d->measured_s[i] = sel_call_seconds(e, prediction_latest(e, i));
        d->cut[i] = md->cut[i];
    }
    d->model_error = prediction_error(e);
    d->departures = md->departures;
    d->probes = md->probes;
    d->returns = md->returns;
}

const iotame_select_decision_t *iotame_select_decision(const iotame_sel_entry_t *e) { return &e->published; }

const iotame_select_traced_t *iotame_select_trace(const iotame_sel_entry_t *e, size_t *n)
{
    *n = e->calls.ntrace;
    return e->calls.trace;
}

/* ---- the knowledge of an earlier run ---- */

static int sel_same_sig(const iotame_sig_t *a, const iotame_sig_t *b)
{
    return a->write == b->write && a->nprocs == b->nprocs && a->bytes == b->bytes && a->requests == b->requests &&
           a->gap == b->gap;
}

/* The knowledge's entry of a signature (the file's first), or NULL. */
static const iotame_select_known_t *known_entry(const iotame_select_knowledge_t *k, const iotame_sig_t *sig)
{
    for (size_t i = 0; k && i < k->n; i++)
        if (sel_same_sig(&k->v[i].sig, sig)) return &k->v[i];
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
    const int settle = settle_calls(&item->sig, conf->readahead);
    return conf->budget >= 1 ||
           (mbs > 0 && budget_affords(conf->budget, fmax(0, item->spent), fmax(0, item->debt), item->sig.bytes, mbs,
                                      settings_turn_calls(conf->knobs->gate_calls, settle,
                                                          settings_exam_calls(conf, settle))));
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
        while (e && !sel_same_sig(&e->sig, &item->sig)) e = e->next;
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
static int known_start(iotame_sel_entry_t *e, const iotame_select_known_t *item, const iotame_select_conf_t *conf)
{
    int known = item ? known_candidate(item->winner, conf) : -1;
    if (known >= 0) {
        e->state = RUNNING;
        e->mon.winner = known;
        e->mon.decided = 1;
        e->from_knowledge = 1;
    } else if (!item) {
        exam_start(e, -1);
    } else {
        exam_start(e, known_first(item, conf));
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

/* ---- entries ---- */

iotame_sel_entry_t *iotame_select_find(iotame_selector_t *s, const iotame_sig_t *sig)
{
    iotame_sel_entry_t *e = s->entries;
    while (e && !sel_same_sig(&e->sig, sig)) e = e->next;
    return e;
}

iotame_sel_entry_t *iotame_select_entry(iotame_selector_t *s, const iotame_sig_t *sig, const iotame_select_conf_t *conf,
                                        const iotame_select_knowledge_t *knowledge, const iotame_select_model_t *model)
{
    iotame_sel_entry_t *e = iotame_select_find(s, sig);
    if (e) return e;
    if (!(e = calloc(1, sizeof *e))) return NULL;
    e->sig = *sig;
    settings_init(&e->set, sig, conf);
    e->mon.thr = conf->threshold;
    e->mon.fallback = e->mon.win_of = e->calls.prev = -1;
    e->calls.trace_left = conf->trace;
    sel_exam_t *x = &e->exam;
    for (int c = 0; c < conf->ncandidates && x->ncand < IOTAME_SELECT_MAX; c++) {
        const int id = conf->candidates[c];
        if (id >= 0 && id < IOTAME_SELECT_MAX) x->cand[x->ncand++] = id;
    }
    if (x->ncand == 0) x->cand[x->ncand++] = 0;
    prediction_init(e, model);
    const iotame_select_known_t *item = known_entry(knowledge, sig);
    const int known = !item && prediction_start(e) ? -1 : known_start(e, item, conf);
    if (s->last) s->last->next = e;
    else s->entries = e;
    s->last = e;
    s->started = 1;
    sel_publish(e);
    s->digest = sel_mix(sel_mix(s->digest, (uint64_t)sig->bytes), (uint64_t)sig->requests);
    s->digest = sel_mix(s->digest, (uint64_t)known + 2);
    return e;
}

int iotame_select_settled(const iotame_sel_entry_t *e) { return e->state == RUNNING || e->budget.waiting; }
int iotame_select_running(const iotame_sel_entry_t *e) { return e->state == RUNNING; }
int iotame_select_exam_left(const iotame_sel_entry_t *e)
{
    if (e->state != EXAMINING || e->budget.waiting) return 0;
    /* a long transition (a read's) is a window of its own: the measured calls' window is not averaged with it */
    const int t = calls_transition_left(e, e->exam.cand[e->exam.cur]);
    return t > 1 ? t : e->set.exam_calls - e->exam.served + t;
}

void iotame_select_rebase(iotame_sel_entry_t *e)
{
    if (e->state != RUNNING) return;
    e->mon.ref = 0;
    e->mon.win_n = e->mon.deviated = 0;
}
int64_t iotame_select_bytes(const iotame_sel_entry_t *e) { return e->sig.bytes; }

/* A window's gather costs what the least gather so far took (a rank's time includes waiting for the others, and
 * noise only adds); the window is long enough for that to be the budget's share of its calls. A monitoring window
 * also spans window_seconds: each gather bounds how far the ranks drift apart (an independent read phase's rank
 * ahead reads the other's pages into the page cache), and windows of a few microseconds of calls measure noise
 * (docs/design/steady-windows.md). */
int iotame_select_window_calls(const iotame_select_conf_t *conf, int shortest, int64_t cost_ns, double call_ns,
                               int monitoring, int wait)
{
    const double budget = conf->budget;
    if (call_ns <= 0 || budget >= 1) return shortest;
    double longest = conf->knobs->window_max_seconds * 1e9 / call_ns;
    double n = budget > 0 ? (double)cost_ns / (budget * call_ns) : longest;
    n = fmin(fmax(n, wait), longest);
    double least = monitoring ? conf->window_seconds * 1e9 / call_ns : 0;
    n = n > least ? n : least;
    return n <= shortest ? shortest : n >= 1 << 20 ? 1 << 20 : (int)n + 1;
}

int iotame_select_choose(const iotame_sel_entry_t *e)
{
    return e->state == RUNNING ? e->mon.winner : e->budget.waiting ? exam_best(e) : e->exam.cand[e->exam.cur];
}

int iotame_select_wait_calls(const iotame_sel_entry_t *e)
{
    if (e->state != EXAMINING || !e->budget.waiting) return 0;
    const int b = exam_best(e);
    const double call = sel_call_seconds(e, exam_mean(e, b)); /* waiting: the best so far was measured */
    const double loss = budget_turn_loss(e, e->exam.cand[e->exam.cur], b);
    const double need = loss + e->budget.debt - e->set.budget * e->budget.spent;
    const double n = e->set.budget > 0 && call > 0 ? ceil(need / (e->set.budget * call)) : 1 << 20;
    return n <= 0 ? 0 : n < 1 << 20 ? (int)n : 1 << 20;
}

/* Whether the candidate's transition calls so far, its first but one, took longer than the best so far would have
 * taken for them and for a whole turn on top: it has lost what the gate's credit was for, and runs below DROP x
 * the best on average over the turn (the first call after a switch is slow whatever the strategy: not counted). */
static int exam_transition_losing(iotame_sel_entry_t *e, int strategy, double mbs)
{
    sel_exam_t *x = &e->exam;
    int b = exam_best(e);
    if (e->state != EXAMINING || e->budget.waiting || strategy != x->cand[x->cur] || e->calls.run < 2 || b < 0 ||
        b == strategy)
        return 0;
    x->t_n++;
    x->t_inv += sel_inverse(mbs);
    const double turn = settings_turn_calls(e->set.k.gate_calls, e->set.settle, e->set.exam_calls);
    return x->t_inv * exam_mean(e, b) > x->t_n + turn;
}

/* One call served: counted, traced and charged. Returns whether it was a transition call. */
static int calls_count(iotame_selector_t *s, iotame_sel_entry_t *e, int strategy, double mbs)
{
    sel_calls_t *c = &e->calls;
    c->calls++;
    s->digest = sel_mix(sel_mix(s->digest, (uint64_t)strategy), c->calls);
    calls_trace(c, strategy, mbs);
    e->budget.spent += sel_call_seconds(e, mbs);
    const int transition = calls_fresh(e, strategy);
    c->run = strategy != c->prev ? 1 : c->run < INT_MAX ? c->run + 1 : c->run;
    c->prev = strategy;
    return transition;
}

/* A measured call of the candidate whose turn it is. */
static void exam_call(iotame_sel_entry_t *e, int strategy, double mbs)
{
    sel_exam_t *x = &e->exam;
    int b = exam_best(e);
    double b_mean = b >= 0 ? exam_mean(e, b) : 0.0;
    if (b >= 0 && b != strategy && b_mean > 0) budget_charge(e, b_mean, mbs);
    x->inv[strategy] += sel_inverse(mbs);
    x->n[strategy]++;
    x->served++;
    x->examined++;
    int clearly_losing = x->served == 1 && b >= 0 && b != strategy && mbs < e->set.k.drop * b_mean;
    if (clearly_losing || x->served >= e->set.exam_calls) exam_next_turn(e);
}

/* One call; `gated`: whether the examination's budget gate is checked after it (not within a window). */
static void sel_update(iotame_selector_t *s, iotame_sel_entry_t *e, int strategy, double mbs, int gated)
{
    const int transition = calls_count(s, e, strategy, mbs);
    if (transition || (e->state == EXAMINING && strategy != iotame_select_choose(e))) {
        /* a transition call (a winner's from the knowledge file too), or the rest of a window whose candidate
         * stopped early (clearly losing): served and charged, not measured */
        int b = exam_best(e);
        if (e->state == EXAMINING && b >= 0 && b != strategy && exam_mean(e, b) > 0)
            budget_charge(e, exam_mean(e, b), mbs);
        if (transition && exam_transition_losing(e, strategy, mbs)) exam_next_turn(e);
    } else if (e->state == EXAMINING && e->budget.waiting) {
        /* the best so far, while the examination waits for credit: the call earns credit, and is not part of the
         * examination's means (tried: each full window of them as the best's mean, run 16 in
         * docs/reproductions/orthrus.md: no gain); its windows tell how it runs (monitor_hand_back) */
        e->budget.deferred++;
        monitor_add(e, strategy, mbs);
    } else if (e->state == EXAMINING) {
        exam_call(e, strategy, mbs);
    } else if (strategy == e->mon.winner) {
        monitor_call(e, strategy, mbs);
    }
    if (gated) budget_gate(e);
    sel_publish(e);
}

void iotame_select_update(iotame_selector_t *s, iotame_sel_entry_t *e, int strategy, double mbs)
{
    sel_update(s, e, strategy, mbs, 1);
}

void iotame_select_served(iotame_selector_t *s, iotame_sel_entry_t *e, int strategy, int n, double mbs)
{
    if (n <= 0) return; /* the usual case: every call of the window was measured */
    for (int k = 0; k < n; k++) calls_count(s, e, strategy, mbs);
    sel_publish(e);
}

/* A window's calls are committed when it starts, so the gate is checked at its end only; checked after every call,
 * a candidate's transition call could make the window's other calls wait, served but not measured. */
void iotame_select_exam_window(iotame_selector_t *s, iotame_sel_entry_t *e, int strategy, int n, int64_t first_ns,
                               int64_t all_ns)
{
    const double bytes_ms = (double)e->sig.bytes * 1e3; /* / ns: MB/s */
    int k = 0;
    if (calls_fresh(e, strategy) && n > 0) { /* the window's first call is the strategy's transition call */
        sel_update(s, e, strategy, first_ns > 0 ? bytes_ms / first_ns : 0, 0);
        all_ns -= first_ns;
        k = 1;
    }
    const double mbs = all_ns > 0 ? bytes_ms * (n - k) / all_ns : 0;
    for (; k < n; k++) sel_update(s, e, strategy, mbs, 0);
    budget_gate(e);
    sel_publish(e);
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
    return measured >= 2 ? exam_best(e) : e->exam.cand[0];
}

int iotame_select_learned(const iotame_sel_entry_t *e, iotame_select_learned_t *out)
{
    if (!e->mon.decided && !(e->budget.spent > 0)) return 0; /* nothing decided, nothing spent */
    const sel_exam_t *x = &e->exam;
    *out = (iotame_select_learned_t){.sig = e->sig, .winner = e->mon.decided ? e->mon.winner : -1,
                                     .spent = e->budget.spent, .debt = e->budget.debt,
                                     .spent_added = e->budget.spent - e->budget.spent_saved,
                                     .debt_added = e->budget.debt - e->budget.debt_saved, .lead = -1, .ncand = x->ncand};
    if (!e->mon.decided) out->lead = learned_lead(e);
    out->modeled = e->prediction.on;
    for (int i = 0; i < IOTAME_SELECT_MAX && e->prediction.on; i++) {
        out->predicted[i] = e->prediction.pred[i];
        out->measured_s[i] = sel_call_seconds(e, prediction_latest(e, i));
    }
    for (int k = 0; k < x->ncand; k++) {
        out->cand[k] = x->cand[k];
        out->measured[k] = x->n[x->cand[k]] != 0;
        out->mbs[k] = out->measured[k] ? exam_mean(e, x->cand[k]) : 0;
    }
    return 1;
}
