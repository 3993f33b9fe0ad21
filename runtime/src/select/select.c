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
 * An entry's state (entry.h) is split by concern: its settings, the examination, the monitoring of its winner, the
 * budget, and the calls it served; each has its functions below, named after it. The cost model's prediction
 * (prediction.c) and the knowledge of an earlier run, with what an entry carries into the next (known.c), have files
 * of their own; a function the files share is named iotame__select_<concern>_... and declared in entry.h. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "entry.h"
#include "select.h"

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
double iotame__select_call_seconds(const iotame_sel_entry_t *e, double mbs)
{
    return mbs > 0 ? e->sig.bytes / (mbs * 1e6) : 0;
}

/* ---- the settings of an entry ---- */

/* How many calls a strategy's transition spans: one; for a read, the file system's readahead's worth. A candidate
 * examined after another reads what that one's sequential calls left read ahead: measured after that many calls, a
 * read candidate pays for its own reads, and measured over as many, for its stalls on the disk too. */
int iotame__select_settle_calls(const iotame_sig_t *g, int64_t readahead)
{
    if (g->write || g->bytes <= 0 || readahead <= g->bytes) return 1;
    const int64_t n = (readahead + g->bytes - 1) / g->bytes;
    return n < 1 << 20 ? (int)n : 1 << 20;
}

/* The calls a candidate's examination measures: exam_calls, and for a read at least its transition's length. */
int iotame__select_settings_exam_calls(const iotame_select_conf_t *conf, int settle)
{
    const int n = conf->exam_calls < 1 ? 1 : conf->exam_calls; /* settings.json bounds it */
    return settle > n ? settle : n;
}

/* The calls of the best so far the credit must pay for before a candidate's turn: gate_calls, or the turn's length
 * when longer (a read's transition and measured calls span the readahead, settle_calls). */
double iotame__select_settings_turn_calls(double gate, int settle, int exam_calls)
{
    return fmax(gate, settle + exam_calls);
}

static void settings_init(sel_settings_t *set, const iotame_sig_t *sig, const iotame_select_conf_t *conf)
{
    set->settle = iotame__select_settle_calls(sig, conf->readahead);
    set->exam_calls = iotame__select_settings_exam_calls(conf, set->settle);
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

double iotame__select_exam_mean(const iotame_sel_entry_t *e, int i)
{
    return sel_harmonic(e->exam.n[i], e->exam.inv[i]);
}

/* The best examined strategy so far (-1: none). */
int iotame__select_exam_best(const iotame_sel_entry_t *e)
{
    int b = -1;
    for (int k = 0; k < e->exam.ncand; k++) {
        int i = e->exam.cand[k];
        if (e->exam.n[i] && (b < 0 || iotame__select_exam_mean(e, i) > iotame__select_exam_mean(e, b))) b = i;
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

void iotame__select_exam_start(iotame_sel_entry_t *e, int first)
{
    sel_exam_t *x = &e->exam;
    memset(x->skip, 0, sizeof x->skip);
    /* A re-examination: the clear losers of their last examination sit it out, except every retry_every-th. */
    if (first >= 0 && (e->set.k.retry_every <= 1 || x->reexams % e->set.k.retry_every != 0))
        for (int k = 0; k < x->ncand; k++) {
            int i = x->cand[k];
            x->skip[i] = i != first && x->last[i] > 0 && x->last[i] < e->set.k.drop * x->last[first];
        }
    iotame__select_prediction_skip(e, first);
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

static void exam_finish(iotame_sel_entry_t *e)
{
    sel_exam_t *x = &e->exam;
    sel_monitor_t *m = &e->mon;
    int previous = m->decided ? m->winner : -1;
    m->winner = iotame__select_exam_best(e);
    if (m->winner < 0) m->winner = x->cand[0];
    /* A re-examination that keeps the winner was a false alarm: the noise is wider than the threshold, so widen
     * it (doubling, up to threshold_max); a new winner means conditions changed: back to the configured one. A
     * probe is no alarm: it leaves the threshold as it was. */
    if (previous >= 0 && !e->prediction.probing)
        m->thr = m->winner == previous ? fmin(2 * m->thr, e->set.k.threshold_max) : e->set.threshold;
    m->ref = 0; /* its first full window, as it runs */
    for (int k = 0; k < x->ncand; k++)
        if (x->n[x->cand[k]]) {
            x->last[x->cand[k]] = iotame__select_exam_mean(e, x->cand[k]);
            iotame__select_prediction_seen(e, x->cand[k], x->last[x->cand[k]]);
        }
    m->fallback = m->steady > 0 && m->win_of != m->winner ? m->win_of : -1;
    m->fallback_mbs = m->steady;
    e->state = RUNNING;
    m->decided = 1;
    m->win_n = m->deviated = 0;
    iotame__select_prediction_finish(e, previous);
}

/* ---- the budget ---- */

/* Whether the credit (budget x spent - debt, in seconds) pays for `calls` calls of bytes at mbs. */
int iotame__select_budget_affords(double budget, double spent, double debt, int64_t bytes, double mbs, double calls)
{
    return budget * spent - debt >= calls * (double)bytes / (mbs * 1e6);
}

/* Seconds a turn of candidate c may lose against the best so far b, what the budget's credit must hold before the
 * turn starts: from c's mean in the last examination it took part in (nothing when it ran faster than b: examining
 * it while the incumbent is the slow one costs nothing), else as if each of the turn's calls lost one call of b (a
 * candidate below drop x b stops after its first measured call). What the turn does lose is charged to the debt. */
static double budget_turn_loss(const iotame_sel_entry_t *e, int c, int b)
{
    const double tb = iotame__select_call_seconds(e, iotame__select_exam_mean(e, b));
    const double per_call = e->exam.last[c] > 0 ? fmax(0, iotame__select_call_seconds(e, e->exam.last[c]) - tb) : tb;
    return iotame__select_settings_turn_calls(e->set.k.gate_calls, e->set.settle, e->set.exam_calls) * per_call;
}

/* Whether the next examination call must wait for credit: not with an unlimited budget, nor when the candidate is
 * the best so far, has started its run, or nothing has been measured yet (a deferred pick's turn: the configured
 * first's one call is not measured, exam_deferring). */
static void budget_gate(iotame_sel_entry_t *e)
{
    sel_budget_t *g = &e->budget;
    g->waiting = 0;
    if (e->state != EXAMINING || e->set.budget >= 1) return;
    const int c = e->exam.cand[e->exam.cur];
    if (e->calls.prev == c) return;
    int b = iotame__select_exam_best(e);
    if (b < 0 || b == c || iotame__select_exam_mean(e, b) <= 0) return;
    g->waiting = e->set.budget * g->spent - g->debt < budget_turn_loss(e, c, b);
}

/* Charges an examination call of `mbs` with what it took beyond a call of the best so far, of mean b_mean (a faster
 * call earns credit). */
static void budget_charge(iotame_sel_entry_t *e, double b_mean, double mbs)
{
    e->budget.debt += iotame__select_call_seconds(e, mbs) - iotame__select_call_seconds(e, b_mean);
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
static void monitor_call(iotame_sel_entry_t *e, int strategy, double mbs)
{
    sel_monitor_t *m = &e->mon;
    double mean = monitor_add(e, strategy, mbs);
    if (mean <= 0 || monitor_hand_back(e, mean)) return;
    iotame__select_prediction_seen(e, strategy, mean);
    if (m->ref <= 0) { /* the winner's first window sets the reference, and checks the prediction */
        m->ref = mean;
        if (iotame__select_prediction_departed(e)) iotame__select_exam_start(e, m->winner);
    } else if (fabs(mean - m->ref) <= m->thr * m->ref || e->exam.ncand < 2) {
        m->deviated = 0;
    } else if (!m->deviated) {
        m->deviated = 1;
        e->prediction.backoff = 1; /* conditions changed: a probe may pay again soon */
    } else {
        e->exam.reexams++;
        iotame__select_exam_start(e, m->winner);
        return;
    }
    if (!m->deviated) iotame__select_prediction_probe(e, mean);
}

/* ---- the decision ---- */

/* The decision as the statistics show it, as of now. */
static void sel_publish(iotame_sel_entry_t *e)
{
    iotame_select_decision_t *d = &e->published;
    const sel_exam_t *x = &e->exam;
    d->sig = e->sig;
    d->strategy = e->mon.decided ? e->mon.winner : iotame__select_exam_best(e);
    d->running = e->state == RUNNING;
    d->ncand = x->ncand;
    for (int k = 0; k < x->ncand; k++) {
        d->cand[k] = x->cand[k];
        d->measured[k] = x->n[x->cand[k]] != 0;
        d->mbs[k] = d->measured[k] ? iotame__select_exam_mean(e, x->cand[k]) : 0;
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
        d->measured_s[i] = iotame__select_call_seconds(e, iotame__select_prediction_latest(e, i));
        d->cut[i] = md->cut[i];
        d->errors[i] = md->pred[i] > 0 ? iotame__select_prediction_error(e, i) : 0;
    }
    d->model_error = iotame__select_prediction_error(e, md->first);
    d->trusted = md->trusted;
    d->leads = md->leads;
    d->deferred = md->deferred;
    d->explored = md->explored;
    d->learned = md->learned;
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

/* ---- entries ---- */

iotame_sel_entry_t *iotame_select_find(iotame_selector_t *s, const iotame_sig_t *sig)
{
    iotame_sel_entry_t *e = s->entries;
    while (e && !iotame__select_same_sig(&e->sig, sig)) e = e->next;
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
    iotame__select_prediction_init(e, model);
    const iotame_select_known_t *item = iotame__select_known_entry(knowledge, sig);
    const int known = !item && iotame__select_prediction_start(e) ? -1 : iotame__select_known_start(e, item, conf);
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
/* Whether the entry's next call is a deferred pick's (prediction.c): the configured first candidate serves the
 * signature's first call alone, what a phase of one call runs, and its turn ends there, measured or not; a read's
 * transition (the readahead's calls) would otherwise keep it the whole phase while the pick waits. */
static int exam_deferring(const iotame_sel_entry_t *e)
{
    return e->state == EXAMINING && e->prediction.deferred && e->exam.cur == 0 && e->calls.calls == 0;
}

int iotame_select_exam_left(const iotame_sel_entry_t *e)
{
    if (exam_deferring(e)) return 1;
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
    return e->state == RUNNING ? e->mon.winner
                               : e->budget.waiting ? iotame__select_exam_best(e) : e->exam.cand[e->exam.cur];
}

int iotame_select_wait_calls(const iotame_sel_entry_t *e)
{
    if (e->state != EXAMINING || !e->budget.waiting) return 0;
    const int b = iotame__select_exam_best(e);
    /* waiting: the best so far was measured */
    const double call = iotame__select_call_seconds(e, iotame__select_exam_mean(e, b));
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
    int b = iotame__select_exam_best(e);
    if (e->state != EXAMINING || e->budget.waiting || strategy != x->cand[x->cur] || e->calls.run < 2 || b < 0 ||
        b == strategy)
        return 0;
    x->t_n++;
    x->t_inv += sel_inverse(mbs);
    const double turn = iotame__select_settings_turn_calls(e->set.k.gate_calls, e->set.settle, e->set.exam_calls);
    return x->t_inv * iotame__select_exam_mean(e, b) > x->t_n + turn;
}

/* One call served: counted, traced and charged. Returns whether it was a transition call. */
static int calls_count(iotame_selector_t *s, iotame_sel_entry_t *e, int strategy, double mbs)
{
    sel_calls_t *c = &e->calls;
    c->calls++;
    s->digest = sel_mix(sel_mix(s->digest, (uint64_t)strategy), c->calls);
    calls_trace(c, strategy, mbs);
    e->budget.spent += iotame__select_call_seconds(e, mbs);
    const int transition = calls_fresh(e, strategy);
    if (transition && strategy != c->prev) iotame__select_prediction_first_call(e, strategy, mbs);
    c->run = strategy != c->prev ? 1 : c->run < INT_MAX ? c->run + 1 : c->run;
    c->prev = strategy;
    return transition;
}

/* A measured call of the candidate whose turn it is. */
static void exam_call(iotame_sel_entry_t *e, int strategy, double mbs)
{
    sel_exam_t *x = &e->exam;
    int b = iotame__select_exam_best(e);
    double b_mean = b >= 0 ? iotame__select_exam_mean(e, b) : 0.0;
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
    const int deferring = exam_deferring(e);
    const int transition = calls_count(s, e, strategy, mbs);
    if (deferring) {
        exam_next_turn(e); /* the configured first's one call: served, not measured; the pick's turn begins */
    } else if (transition || (e->state == EXAMINING && strategy != iotame_select_choose(e))) {
        /* a transition call (a winner's from the knowledge file too), or the rest of a window whose candidate
         * stopped early (clearly losing): served and charged, not measured */
        int b = iotame__select_exam_best(e);
        if (e->state == EXAMINING && b >= 0 && b != strategy && iotame__select_exam_mean(e, b) > 0)
            budget_charge(e, iotame__select_exam_mean(e, b), mbs);
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
