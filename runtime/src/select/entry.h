/* entry: what the files of the selector's policy (Orthrus, Zhang et al., ISC 2014, section 2.1) share, internal to
 * runtime/src/select/ (the part's interface to the others is select.h alone): an entry's state, one struct per
 * concern (its settings, the examination, the monitoring of its winner, the budget, the cost model's prediction, the
 * calls it served), the entry and the selector, and the functions one file of the policy calls in another, each
 * named iotame__select_<concern>_... after the concern it belongs to. select.c holds the entries, their settings,
 * calls, examination, budget, monitoring and decision; prediction.c the cost model's prediction; known.c the
 * knowledge of an earlier run and what an entry carries into the next. */
#ifndef IOTAME_SELECT_ENTRY_H
#define IOTAME_SELECT_ENTRY_H

#include <stdint.h>

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
    double prior[IOTAME_SELECT_MAX]; /* each one's error assumed before the signature's calls measured any */
    int trusted; /* the fastest predicted beat every other candidate beyond both errors: it served from the start */
    int leads;   /* it beat the configured first candidate and the library's call so: it served first */
    int deferred; /* it would have led, but its first call, set-up included, is predicted slower than the configured
                     first's: that serves first, the pick is examined next */
    int explored; /* a candidate no job of the class measured, served first (prediction_known_front; -1: none) */
    int learned;  /* the pick served first without a lead, on what the class's jobs measured */
    int cut[IOTAME_SELECT_MAX];     /* kept out of examinations: predicted beyond the error of the incumbent's */
    double seen[IOTAME_SELECT_MAX]; /* the latest mean measured of each strategy (MB/s; 0: none) */
    double top[IOTAME_SELECT_MAX];  /* the best mean measured of each (MB/s): what it does when conditions allow */
    double first_call[IOTAME_SELECT_MAX]; /* each one's first call on the signature (MB/s; a transition call, not in
                                             any mean): all a one-call phase measures */
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

/* ---- shared between the files of the policy ---- */

/* select.c: means and settings */
double iotame__select_call_seconds(const iotame_sel_entry_t *e, double mbs);
int iotame__select_settle_calls(const iotame_sig_t *g, int64_t readahead);
int iotame__select_settings_exam_calls(const iotame_select_conf_t *conf, int settle);
double iotame__select_settings_turn_calls(double gate, int settle, int exam_calls);
/* select.c: the examination and the budget */
double iotame__select_exam_mean(const iotame_sel_entry_t *e, int i);
int iotame__select_exam_best(const iotame_sel_entry_t *e);
void iotame__select_exam_start(iotame_sel_entry_t *e, int first);
int iotame__select_budget_affords(double budget, double spent, double debt, int64_t bytes, double mbs, double calls);

/* prediction.c: the cost model's prediction */
void iotame__select_prediction_init(iotame_sel_entry_t *e, const iotame_select_model_t *model);
int iotame__select_prediction_start(iotame_sel_entry_t *e);
void iotame__select_prediction_skip(iotame_sel_entry_t *e, int first);
void iotame__select_prediction_seen(iotame_sel_entry_t *e, int s, double mbs);
void iotame__select_prediction_first_call(iotame_sel_entry_t *e, int s, double mbs);
void iotame__select_prediction_finish(iotame_sel_entry_t *e, int previous);
int iotame__select_prediction_departed(iotame_sel_entry_t *e);
void iotame__select_prediction_probe(iotame_sel_entry_t *e, double mean);
double iotame__select_prediction_error(const iotame_sel_entry_t *e, int s);
double iotame__select_prediction_latest(const iotame_sel_entry_t *e, int s);

/* known.c: the knowledge of an earlier run */
int iotame__select_same_sig(const iotame_sig_t *a, const iotame_sig_t *b);
const iotame_select_known_t *iotame__select_known_entry(const iotame_select_knowledge_t *k,
                                                        const iotame_sig_t *sig);
int iotame__select_known_start(iotame_sel_entry_t *e, const iotame_select_known_t *item,
                               const iotame_select_conf_t *conf);

#endif
