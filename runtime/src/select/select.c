/* The selector's policy: the Orthrus selector (Zhang, Ou, Davis and Jiang, "Orthrus: a framework for implementing
 * efficient collective I/O in multi-core clusters", ISC 2014, section 2.1): performance examination instead of
 * modelling. A new call signature starts an examination in which every candidate serves exam_calls calls; the best
 * mean throughput wins and serves every later call of the signature while its throughput is monitored; a deviation
 * beyond threshold starts a new examination.
 *
 * Deterministic and MPI-free: the window protocol (window.c) and the router feed it reduced measurements, the same
 * on every rank, and it decides. Beyond the paper (docs/collective.md lists them; docs/design/ says why), each
 * governed by a knob of the collective section:
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
 *   turn may lose (turn_loss); meanwhile the best so far serves. A winner from the knowledge file serves at once,
 *   and an undecided signature's credit carries over to the next run.
 *
 * Decisions are kept live in the selector's "decisions" list, which window.c links into the statistics. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collective/strategy.h"
#include "select.h"


enum { EXAMINING, RUNNING };

struct iotame_sel_entry {
    iotame_sig_t sig;
    int state;
    int cand[IOTAME_STRATEGY_MAX], ncand;
    int cur, served;                           /* EXAMINING: cand[cur] has served `served` calls */
    double inv[IOTAME_STRATEGY_MAX];           /* this examination: the sum of 1 / MB/s, by registry index */
    int n[IOTAME_STRATEGY_MAX];
    int skip[IOTAME_STRATEGY_MAX];             /* not examined this time (clearly losing the last time) */
    double last[IOTAME_STRATEGY_MAX];          /* mean of the last examination a strategy took part in */
    int winner;                                /* RUNNING; during a re-examination, the last winner */
    int decided;                               /* a winner is known (examined, or from the knowledge file) */
    double ref;                                /* the winner's reference MB/s; 0 until measured */
    int exam_calls;
    iotame_select_knobs_t k;
    /* the monitoring window under way (at least exam_calls calls and window_seconds of them): the strategy whose
     * calls it sums (the winner, or the best so far while an examination waits), their count and sum of 1 / MB/s */
    double window_seconds, win_inv;
    int win_of, win_n;
    double steady; /* the last full window's mean, of strategy win_of (0: none) */
    int fallback;  /* the strategy that ran before the winner (-1: none): back to it if the winner runs slower */
    double fallback_mbs;
    uint64_t handed_back;
    int deviated; /* the last window deviated from the reference */
    double threshold, thr; /* configured; in effect (widened after false alarms) */
    uint64_t calls, reexams, examined;
    int prev, run; /* the strategy that served the signature's last call (-1: none), and its calls in a row */
    int settle;    /* a strategy's first calls after another's that are transition calls (settle_calls) */
    int t_n;       /* EXAMINING: cand[cur]'s transition calls after its first, and their sum of 1 / MB/s */
    double t_inv;
    int from_knowledge;
    int64_t trace; /* calls still to record in the decision's "trace" */
    double budget, spent, debt; /* examination budget; seconds of every call; seconds examinations lost */
    int waiting;                /* EXAMINING: cand[cur] waits for credit, the best so far serves */
    uint64_t deferred;          /* calls the best served while an examination waited */
    json_t *json; /* the decision in the statistics (borrowed from the file's "decisions" list) */
    iotame_sel_entry_t *next;
};

struct iotame_selector {
    uint64_t digest, generation;
    iotame_sel_entry_t *entries;
    json_t *decisions; /* one object per entry, in the statistics' "decisions" list */
};

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 29);
}

iotame_selector_t *iotame_select_new(void)
{
    iotame_selector_t *s = calloc(1, sizeof *s);
    if (s) s->digest = 1;
    return s;
}

json_t *iotame_select_decisions(const iotame_selector_t *s) { return s->decisions; }

uint64_t iotame_select_digest(const iotame_selector_t *s) { return s->digest; }

static json_t *decisions(iotame_selector_t *s)
{
    if (!s->decisions) s->decisions = json_array();
    return s->decisions;
}

void iotame_select_reset(iotame_selector_t *s)
{
    while (s->entries) {
        iotame_sel_entry_t *e = s->entries;
        s->entries = e->next;
        free(e);
    }
    if (s->decisions) json_array_clear(s->decisions);
    s->digest = 1;
    s->generation++;
}

uint64_t iotame_select_generation(const iotame_selector_t *s) { return s->generation; }

static const char *sname(int i) { return i >= 0 && i < iotame_nstrategies ? iotame_strategies[i]->name : "?"; }

/* The harmonic mean: a signature's calls move the same bytes, so what several calls achieved is their bytes over
 * their summed time; the mean of their throughputs would weigh a fast call as much as a slow one
 * (docs/design/harmonic-means.md). A call measured in no time (mbs 0) adds no time. */
static double harmonic(int n, double inv) { return n && inv > 0 ? n / inv : 0.0; }
static double inverse(double mbs) { return mbs > 0 ? 1 / mbs : 0.0; }
static double mean(const iotame_sel_entry_t *e, int i) { return harmonic(e->n[i], e->inv[i]); }

/* The transition calls the strategy has still to serve before its calls are measured. */
static int transition_left(const iotame_sel_entry_t *e, int strategy)
{
    return strategy != e->prev ? e->settle : e->run < e->settle ? e->settle - e->run : 0;
}

/* Whether the strategy's next call is a transition call, served but not measured: the strategy did not serve the
 * signature's call before, or not yet its transition's calls in a row (settle_calls). The first call of a strategy
 * after another's runs slowly whatever the strategies are, and so does the first of a signature (cold buffers):
 * docs/design/transition-calls.md, bench/switch_cost.c. */
static int fresh(const iotame_sel_entry_t *e, int strategy) { return transition_left(e, strategy) > 0; }

/* How many calls a strategy's transition spans: one; for a read, the file system's readahead's worth. A candidate
 * examined after another reads what that one's sequential calls left read ahead: measured after that many calls, a
 * read candidate pays for its own reads, and measured over as many, for its stalls on the disk too. */
static int settle_calls(const iotame_sig_t *g, int64_t readahead)
{
    if (g->write || g->bytes <= 0 || readahead <= g->bytes) return 1;
    const int64_t n = (readahead + g->bytes - 1) / g->bytes;
    return n < 1 << 20 ? (int)n : 1 << 20;
}

/* The best examined strategy so far (-1: none). */
static int best(const iotame_sel_entry_t *e)
{
    int b = -1;
    for (int k = 0; k < e->ncand; k++) {
        int i = e->cand[k];
        if (e->n[i] && (b < 0 || mean(e, i) > mean(e, b))) b = i;
    }
    return b;
}

static json_t *sig_json(const iotame_sig_t *g)
{
    return json_pack("{s:s,s:I,s:I,s:I,s:I}", "op", g->write ? "write" : "read", "nprocs", (json_int_t)g->nprocs,
                     "bytes", (json_int_t)g->bytes, "requests", (json_int_t)g->requests, "gap", (json_int_t)g->gap);
}

/* The decision as the statistics show it. */
static void publish(iotame_sel_entry_t *e)
{
    if (!e->json) return;
    int w = e->decided ? e->winner : best(e);
    json_t *tp = json_object();
    for (int k = 0; k < e->ncand; k++) {
        int i = e->cand[k];
        if (e->n[i]) json_object_set_new(tp, sname(i), json_real(round(mean(e, i) * 10) / 10));
    }
    json_object_set_new(e->json, "strategy", w >= 0 ? json_string(sname(w)) : json_null());
    json_object_set_new(e->json, "state", json_string(e->state == RUNNING ? "running" : "examining"));
    json_object_set_new(e->json, "throughputs", tp);
    json_object_set_new(e->json, "reference_mbs", json_real(round(e->ref * 10) / 10));
    json_object_set_new(e->json, "calls", json_integer((json_int_t)e->calls));
    json_object_set_new(e->json, "examination_calls", json_integer((json_int_t)e->examined));
    json_object_set_new(e->json, "reexaminations", json_integer((json_int_t)e->reexams));
    json_object_set_new(e->json, "deferred_calls", json_integer((json_int_t)e->deferred));
    json_object_set_new(e->json, "handed_back", json_integer((json_int_t)e->handed_back));
    json_object_set_new(e->json, "threshold", json_real(e->thr));
    json_object_set_new(e->json, "transition_calls", json_integer(e->settle));
    json_object_set_new(e->json, "from_knowledge", json_boolean(e->from_knowledge));
}

static int same_sig(const iotame_sig_t *a, const iotame_sig_t *b)
{
    return a->write == b->write && a->nprocs == b->nprocs && a->bytes == b->bytes && a->requests == b->requests &&
           a->gap == b->gap;
}

/* The signature of a knowledge entry; 0 when it has no operation. */
static int knowledge_sig(const json_t *item, iotame_sig_t *k)
{
    const json_t *g = json_object_get(item, "signature");
    const char *op = json_string_value(json_object_get(g, "op"));
    *k = (iotame_sig_t){op && strcmp(op, "write") == 0, json_integer_value(json_object_get(g, "nprocs")),
                        json_integer_value(json_object_get(g, "bytes")),
                        json_integer_value(json_object_get(g, "requests")),
                        json_integer_value(json_object_get(g, "gap"))};
    return op != NULL;
}

/* The knowledge's entry of a signature, or NULL. */
static const json_t *known_entry(const json_t *knowledge, const iotame_sig_t *sig)
{
    size_t i;
    json_t *item;
    iotame_sig_t k;
    json_array_foreach(json_object_get(knowledge, "entries"), i, item)
        if (knowledge_sig(item, &k) && same_sig(&k, sig)) return item;
    return NULL;
}

/* The strategy a knowledge value names when it is one of the candidates (registry index), else -1. */
static int known_candidate(const json_t *name, const iotame_select_conf_t *conf)
{
    int w = iotame_strategy_find(json_string_value(name));
    for (int c = 0; w >= 0 && c < conf->ncandidates; c++)
        if (conf->candidates[c] == w) return w;
    return -1;
}

/* The winner of a knowledge entry, else -1. */
static int known_winner(const json_t *item, const iotame_select_conf_t *conf)
{
    return known_candidate(json_object_get(item, "strategy"), conf);
}

/* The candidate an undecided knowledge entry's examination starts with (lead_of), else the first candidate. */
static int known_first(const json_t *item, const iotame_select_conf_t *conf)
{
    int c = known_candidate(json_object_get(json_object_get(item, "examination"), "first"), conf);
    return c >= 0 ? c : conf->candidates[0];
}

/* Whether the credit (budget x spent - debt, in seconds) pays for `calls` calls of bytes at mbs. */
static int affords(double budget, double spent, double debt, int64_t bytes, double mbs, double calls)
{
    return budget * spent - debt >= calls * (double)bytes / (mbs * 1e6);
}

/* The calls of the best so far the credit must pay for before a candidate's turn: gate_calls, or the turn's length
 * when longer (a read's transition and measured calls span the readahead, settle_calls). */
static double turn_calls(double gate, int settle, int exam_calls) { return fmax(gate, settle + exam_calls); }

/* The calls a candidate's examination measures: exam_calls, and for a read at least its transition's length. */
static int exam_calls_of(const iotame_select_conf_t *conf, int settle)
{
    const int n = conf->exam_calls < 1 ? 1 : conf->exam_calls; /* settings.json bounds it */
    return settle > n ? settle : n;
}

/* Seconds an undecided knowledge entry's examination carries over ("spent", "debt"); none below 0 (a debt below 0,
 * a faster candidate's calls, is credit earned in a run measured otherwise). */
static double carried(const json_t *item, const char *key)
{
    return fmax(0, json_number_value(json_object_get(json_object_get(item, "examination"), key)));
}

/* Whether a signature not decided yet (a knowledge entry) has the credit to examine another candidate than its
 * first in this run: the credit carried over against a turn's calls at the first candidate's throughput of the earlier
 * run (which only tells what a call may cost; it is not a mean the examination compares). */
static int affordable(const json_t *item, const iotame_select_conf_t *conf, const iotame_sig_t *k)
{
    const json_t *tp = json_object_get(item, "throughputs");
    double mbs = json_number_value(json_object_get(tp, sname(known_first(item, conf))));
    const int settle = settle_calls(k, conf->readahead);
    return conf->budget >= 1 ||
           (mbs > 0 && affords(conf->budget, carried(item, "spent"), carried(item, "debt"), k->bytes, mbs,
                               turn_calls(conf->knobs->gate_calls, settle, exam_calls_of(conf, settle))));
}

int iotame_select_opening(const iotame_selector_t *s, const json_t *knowledge, const iotame_select_conf_t *conf,
                          int write, int64_t nprocs)
{
    int agreed = -2; /* -2: no signature known yet */
    for (const iotame_sel_entry_t *e = s->entries; e; e = e->next)
        if (e->sig.write == write && e->sig.nprocs == nprocs) {
            int c = iotame_select_settled(e) ? iotame_select_choose(e) : -1; /* an examination runs call by call */
            if (c < 0 || (agreed != -2 && agreed != c)) return -1;
            agreed = c;
        }
    size_t i;
    json_t *item;
    iotame_sig_t k;
    json_array_foreach(json_object_get(knowledge, "entries"), i, item) {
        if (!knowledge_sig(item, &k) || k.write != write || k.nprocs != nprocs) continue;
        const iotame_sel_entry_t *e = s->entries;
        while (e && !same_sig(&e->sig, &k)) e = e->next;
        if (e) continue; /* the selector's entry stands for it */
        int w = known_winner(item, conf);
        /* undecided: its first candidate serves, unless this run can afford to examine the others (call by call) */
        int c = w >= 0 ? w : affordable(item, conf, &k) ? -1 : known_first(item, conf);
        if (c < 0 || (agreed != -2 && agreed != c)) return -1;
        agreed = c;
    }
    return agreed == -2 ? conf->candidates[0] : agreed;
}

static void finish_examination(iotame_sel_entry_t *e);

/* Moves cur past the candidates this examination skips; finishes it after the last. */
static void next_candidate(iotame_sel_entry_t *e)
{
    while (e->cur < e->ncand && e->skip[e->cand[e->cur]]) e->cur++;
    if (e->cur >= e->ncand) finish_examination(e);
}

static void start_examination(iotame_sel_entry_t *e, int first)
{
    memset(e->skip, 0, sizeof e->skip);
    /* A re-examination: the clear losers of their last examination sit it out, except every retry_every-th. */
    if (first >= 0 && (e->k.retry_every <= 1 || e->reexams % e->k.retry_every != 0))
        for (int k = 0; k < e->ncand; k++) {
            int i = e->cand[k];
            e->skip[i] = i != first && e->last[i] > 0 && e->last[i] < e->k.drop * e->last[first];
        }
    e->state = EXAMINING;
    e->cur = e->served = e->t_n = 0;
    e->t_inv = 0;
    memset(e->inv, 0, sizeof e->inv);
    memset(e->n, 0, sizeof e->n);
    /* The previous winner first: it is measured under the new conditions before the others. */
    for (int k = 1; first >= 0 && k < e->ncand; k++)
        if (e->cand[k] == first) {
            memmove(&e->cand[1], &e->cand[0], (size_t)k * sizeof e->cand[0]);
            e->cand[0] = first;
        }
}

/* A signature an earlier run could not afford to examine (the knowledge entry's "examination"): the seconds the
 * budget is counted from carry over, so that a job too short to examine within one run does so in a later one. Only
 * the credit, not the candidates' means: candidates measured in different runs were measured under different
 * conditions (a read from the page cache in one run, from the disk in the next). */
static void resume_credit(iotame_sel_entry_t *e, const json_t *item)
{
    e->spent = carried(item, "spent");
    e->debt = carried(item, "debt");
}

iotame_sel_entry_t *iotame_select_entry(iotame_selector_t *s, const iotame_sig_t *sig, const iotame_select_conf_t *conf,
                                        const json_t *knowledge)
{
    iotame_sel_entry_t *e;
    for (e = s->entries; e; e = e->next)
        if (same_sig(&e->sig, sig)) return e;
    if (!(e = calloc(1, sizeof *e))) return NULL;
    e->sig = *sig;
    e->settle = settle_calls(sig, conf->readahead);
    e->exam_calls = exam_calls_of(conf, e->settle);
    e->k = *conf->knobs;
    e->threshold = e->thr = conf->threshold;
    e->window_seconds = conf->window_seconds;
    e->fallback = e->win_of = e->prev = -1;
    e->trace = conf->trace;
    e->budget = conf->budget;
    for (int c = 0; c < conf->ncandidates && e->ncand < IOTAME_STRATEGY_MAX; c++)
        if (conf->candidates[c] >= 0 && conf->candidates[c] < iotame_nstrategies) e->cand[e->ncand++] = conf->candidates[c];
    if (e->ncand == 0) e->cand[e->ncand++] = 0;
    const json_t *item = known_entry(knowledge, sig);
    int known = item ? known_winner(item, conf) : -1;
    if (known >= 0) {
        e->state = RUNNING;
        e->winner = known;
        e->decided = 1;
        e->from_knowledge = 1;
    } else if (!item) {
        start_examination(e, -1);
    } else {
        start_examination(e, known_first(item, conf));
        if (json_is_object(json_object_get(item, "examination"))) {
            resume_credit(e, item);
            e->from_knowledge = 1;
        }
        /* the earlier run's means price the turns (turn_loss); the examination compares this run's own */
        for (int k = 0; k < e->ncand; k++)
            e->last[e->cand[k]] = json_number_value(json_object_get(json_object_get(item, "throughputs"), sname(e->cand[k])));
    }
    e->next = s->entries;
    s->entries = e;
    json_t *d = decisions(s);
    if (d) {
        e->json = json_pack("{s:o}", "signature", sig_json(sig));
        json_array_append_new(d, e->json);
        publish(e);
    }
    s->digest = mix(mix(mix(s->digest, (uint64_t)sig->bytes), (uint64_t)sig->requests), (uint64_t)known + 2);
    return e;
}

int iotame_select_settled(const iotame_sel_entry_t *e) { return e->state == RUNNING || e->waiting; }
int iotame_select_running(const iotame_sel_entry_t *e) { return e->state == RUNNING; }
int iotame_select_exam_left(const iotame_sel_entry_t *e)
{
    if (e->state != EXAMINING || e->waiting) return 0;
    /* a long transition (a read's) is a window of its own: the measured calls' window is not averaged with it */
    const int t = transition_left(e, e->cand[e->cur]);
    return t > 1 ? t : e->exam_calls - e->served + t;
}

void iotame_select_rebase(iotame_sel_entry_t *e)
{
    if (e->state != RUNNING) return;
    e->ref = 0;
    e->win_n = e->deviated = 0;
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
    return e->state == RUNNING ? e->winner : e->waiting ? best(e) : e->cand[e->cur];
}

/* Seconds one call of the signature takes at `mbs` (0 when not measured). */
static double call_seconds(const iotame_sel_entry_t *e, double mbs) { return mbs > 0 ? e->sig.bytes / (mbs * 1e6) : 0; }

/* Seconds a turn of candidate c may lose against the best so far b, what the budget's credit must hold before the
 * turn starts: from c's mean in the last examination it took part in (nothing when it ran faster than b: examining
 * it while the incumbent is the slow one costs nothing), else as if each of the turn's calls lost one call of b (a
 * candidate below drop x b stops after its first measured call). What the turn does lose is charged to the debt. */
static double turn_loss(const iotame_sel_entry_t *e, int c, int b)
{
    const double tb = call_seconds(e, mean(e, b));
    const double per_call = e->last[c] > 0 ? fmax(0, call_seconds(e, e->last[c]) - tb) : tb;
    return turn_calls(e->k.gate_calls, e->settle, e->exam_calls) * per_call;
}

int iotame_select_wait_calls(const iotame_sel_entry_t *e)
{
    if (e->state != EXAMINING || !e->waiting) return 0;
    const double call = call_seconds(e, mean(e, best(e))); /* waiting: the best so far was measured */
    const double need = turn_loss(e, e->cand[e->cur], best(e)) + e->debt - e->budget * e->spent;
    const double n = e->budget > 0 && call > 0 ? ceil(need / (e->budget * call)) : 1 << 20;
    return n <= 0 ? 0 : n < 1 << 20 ? (int)n : 1 << 20;
}

/* Whether the next examination call must wait for credit: not with an unlimited budget, nor when the candidate is
 * the best so far, has started its run, or nothing has been measured yet. */
static void gate(iotame_sel_entry_t *e)
{
    e->waiting = 0;
    if (e->state != EXAMINING || e->budget >= 1 || e->prev == e->cand[e->cur]) return;
    int b = best(e);
    if (b < 0 || b == e->cand[e->cur] || mean(e, b) <= 0) return;
    e->waiting = e->budget * e->spent - e->debt < turn_loss(e, e->cand[e->cur], b);
}

/* The candidate under examination has had its turn (served its calls, or is clearly losing): the next one's. */
static void next_turn(iotame_sel_entry_t *e)
{
    e->served = e->t_n = 0;
    e->t_inv = 0;
    e->cur++;
    next_candidate(e);
}

/* Whether the candidate's transition calls so far, its first but one, took longer than the best so far would have
 * taken for them and for a whole turn on top: it has lost what the gate's credit was for, and runs below DROP x
 * the best on average over the turn (the first call after a switch is slow whatever the strategy: not counted). */
static int transition_losing(iotame_sel_entry_t *e, int strategy, double mbs)
{
    int b = best(e);
    if (e->state != EXAMINING || e->waiting || strategy != e->cand[e->cur] || e->run < 2 || b < 0 || b == strategy)
        return 0;
    e->t_n++;
    e->t_inv += inverse(mbs);
    return e->t_inv * mean(e, b) > e->t_n + turn_calls(e->k.gate_calls, e->settle, e->exam_calls);
}

static void finish_examination(iotame_sel_entry_t *e)
{
    int previous = e->decided ? e->winner : -1;
    e->winner = best(e);
    if (e->winner < 0) e->winner = e->cand[0];
    /* A re-examination that keeps the winner was a false alarm: the noise is wider than the threshold, so widen
     * it (doubling, up to threshold_max); a new winner means conditions changed: back to the configured one. */
    if (previous >= 0) e->thr = e->winner == previous ? fmin(2 * e->thr, e->k.threshold_max) : e->threshold;
    e->ref = 0; /* its first full window, as it runs */
    for (int k = 0; k < e->ncand; k++)
        if (e->n[e->cand[k]]) e->last[e->cand[k]] = mean(e, e->cand[k]);
    e->fallback = e->steady > 0 && e->win_of != e->winner ? e->win_of : -1;
    e->fallback_mbs = e->steady;
    e->state = RUNNING;
    e->decided = 1;
    e->win_n = e->deviated = 0;
}

/* Adds a call of the winner (or of the best so far while an examination waits) to the monitoring window; returns
 * the window's mean when it is full, else 0. */
static double window_add(iotame_sel_entry_t *e, int strategy, double mbs)
{
    if (strategy != e->win_of) { /* another strategy's calls: a new window */
        e->win_of = strategy;
        e->win_n = 0;
    }
    if (e->win_n++ == 0) e->win_inv = 0;
    e->win_inv += inverse(mbs);
    if (e->win_n < e->exam_calls || e->sig.bytes * e->win_inv * 1e-6 < e->window_seconds) return 0;
    e->steady = harmonic(e->win_n, e->win_inv);
    e->win_n = 0;
    return e->steady;
}

/* An examination measures each candidate right after another, and reads inherit what the one before left in the
 * page cache: a candidate can win an examination it would not win running. So a new winner whose first window runs
 * clearly slower (by the threshold) than the strategy before it ran hands back to it. Returns whether it did. */
static int hand_back(iotame_sel_entry_t *e, double m)
{
    const int back = e->fallback >= 0 && m < (1 - e->thr) * e->fallback_mbs;
    if (back) {
        e->last[e->winner] = m;
        e->winner = e->fallback;
        e->ref = e->fallback_mbs;
        e->handed_back++;
    }
    e->fallback = -1;
    return back;
}

/* One call served: counted, traced and charged. Returns whether it was a transition call. */
static int count_call(iotame_selector_t *s, iotame_sel_entry_t *e, int strategy, double mbs)
{
    e->calls++;
    s->digest = mix(mix(s->digest, (uint64_t)strategy), e->calls);
    if (e->trace > 0 && e->json) {
        e->trace--;
        json_t *t = json_object_get(e->json, "trace");
        if (!t) json_object_set_new(e->json, "trace", t = json_array());
        json_array_append_new(t, json_pack("[s,f]", sname(strategy), round(mbs * 10) / 10));
    }
    e->spent += call_seconds(e, mbs);
    const int transition = fresh(e, strategy);
    e->run = strategy != e->prev ? 1 : e->run < INT_MAX ? e->run + 1 : e->run;
    e->prev = strategy;
    return transition;
}

/* One call; `gated`: whether the examination's budget gate is checked after it (not within a window). */
static void update(iotame_selector_t *s, iotame_sel_entry_t *e, int strategy, double mbs, int gated)
{
    const int transition = count_call(s, e, strategy, mbs);
    if (transition || (e->state == EXAMINING && strategy != iotame_select_choose(e))) {
        /* a transition call (a winner's from the knowledge file too), or the rest of a window whose candidate
         * stopped early (clearly losing): served and charged, not measured */
        int b = best(e);
        if (e->state == EXAMINING && b >= 0 && b != strategy && mean(e, b) > 0)
            e->debt += call_seconds(e, mbs) - call_seconds(e, mean(e, b));
        if (transition && transition_losing(e, strategy, mbs)) next_turn(e);
    } else if (e->state == EXAMINING && e->waiting) {
        /* the best so far, while the examination waits for credit: the call earns credit, and is not part of the
         * examination's means (tried: each full window of them as the best's mean, run 16 in
         * docs/reproductions/orthrus.md: no gain); its windows tell how it runs (hand_back) */
        e->deferred++;
        window_add(e, strategy, mbs);
    } else if (e->state == EXAMINING) {
        int b = best(e);
        double b_mean = b >= 0 ? mean(e, b) : 0.0;
        if (b >= 0 && b != strategy && b_mean > 0) e->debt += call_seconds(e, mbs) - call_seconds(e, b_mean);
        e->inv[strategy] += inverse(mbs);
        e->n[strategy]++;
        e->served++;
        e->examined++;
        int clearly_losing = e->served == 1 && b >= 0 && b != strategy && mbs < e->k.drop * b_mean;
        if (clearly_losing || e->served >= e->exam_calls) next_turn(e);
    } else if (strategy == e->winner) {
        double m = window_add(e, strategy, mbs);
        if (m > 0 && !hand_back(e, m)) {
            if (e->ref <= 0) { /* the winner's first window sets the reference */
                e->ref = m;
            } else if (fabs(m - e->ref) <= e->thr * e->ref || e->ncand < 2) {
                e->deviated = 0;
            } else if (!e->deviated) {
                e->deviated = 1;
            } else {
                e->reexams++;
                start_examination(e, e->winner);
            }
        }
    }
    if (gated) gate(e);
    publish(e);
}

void iotame_select_update(iotame_selector_t *s, iotame_sel_entry_t *e, int strategy, double mbs)
{
    update(s, e, strategy, mbs, 1);
}

void iotame_select_served(iotame_selector_t *s, iotame_sel_entry_t *e, int strategy, int n, double mbs)
{
    if (n <= 0) return; /* the usual case: every call of the window was measured */
    for (int k = 0; k < n; k++) count_call(s, e, strategy, mbs);
    publish(e);
}

/* A window's calls are committed when it starts, so the gate is checked at its end only; checked after every call,
 * a candidate's transition call could make the window's other calls wait, served but not measured. */
void iotame_select_exam_window(iotame_selector_t *s, iotame_sel_entry_t *e, int strategy, int n, int64_t first_ns,
                               int64_t all_ns)
{
    const double bytes_ms = (double)e->sig.bytes * 1e3; /* / ns: MB/s */
    int k = 0;
    if (fresh(e, strategy) && n > 0) { /* the window's first call is the strategy's transition call */
        update(s, e, strategy, first_ns > 0 ? bytes_ms / first_ns : 0, 0);
        all_ns -= first_ns;
        k = 1;
    }
    const double mbs = all_ns > 0 ? bytes_ms * (n - k) / all_ns : 0;
    for (; k < n; k++) update(s, e, strategy, mbs, 0);
    gate(e);
    publish(e);
}

/* ---- the knowledge file ---- */

/* The candidate the next run of an undecided signature starts with: the best this run measured when it compared
 * two or more, else the one this run started with. A job too short to finish an examination would otherwise serve
 * its first candidate run after run. Only the order carries over, and candidates compared within one run: the next
 * run measures the lead anew, and whether it wins is decided from that run's own means (resume_credit). */
static int lead_of(const iotame_sel_entry_t *e)
{
    int measured = 0;
    for (int k = 0; k < e->ncand; k++) measured += e->n[e->cand[k]] > 0;
    return measured >= 2 ? best(e) : e->cand[0];
}

/* The knowledge entry of one signature: its winner (the last one while a re-examination runs), or, before the
 * first decision, the budget's seconds so far and the lead (resume_credit, lead_of; the throughputs for the reader
 * and for pricing the lead's calls). */
static json_t *entry_json(const iotame_sel_entry_t *e)
{
    json_t *tp = json_object();
    for (int k = 0; k < e->ncand; k++) {
        int i = e->cand[k];
        if (e->n[i]) json_object_set_new(tp, sname(i), json_real(round(mean(e, i) * 10) / 10));
    }
    json_t *o = json_pack("{s:o,s:o,s:o}", "signature", sig_json(&e->sig), "strategy",
                          e->decided ? json_string(sname(e->winner)) : json_null(), "throughputs", tp);
    if (!e->decided)
        json_object_set_new(o, "examination", json_pack("{s:f,s:f,s:s}", "spent", e->spent, "debt", e->debt, "first",
                                                        sname(lead_of(e))));
    return o;
}

/* Whether an entry has anything to save: a winner, or seconds of I/O that count towards an examination. */
static int learned(const iotame_sel_entry_t *e) { return e->decided || e->spent > 0; }

json_t *iotame_select_learned(const iotame_selector_t *s)
{
    json_t *all = NULL;
    for (const iotame_sel_entry_t *e = s->entries; e; e = e->next)
        if (learned(e) && (all || (all = json_array()))) json_array_append_new(all, entry_json(e));
    return all;
}
