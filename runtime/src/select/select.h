/* select: the online selector's policy (Orthrus, Zhang et al., ISC 2014, section 2.1). The only interface of
 * runtime/src/select/.
 *
 * Pure: strategy ids and measurements in, decisions out; no MPI, no JSON, no strategy registry. A strategy is an id
 * 0 <= id < IOTAME_SELECT_MAX that the caller gives a meaning (collective/: the registry index), and id 0 serves a
 * signature that has no candidates. Every input is a value reduced over the file's communicator (signature,
 * throughput) and every rank makes the same sequence of calls, so every rank holds the same state and decides
 * alike. What the policy reports (decisions, traces, what it learned) it gives as plain structs: the caller turns
 * them into the statistics and the knowledge file (collective/decisions.c). */
#ifndef IOTAME_SELECT_H
#define IOTAME_SELECT_H

#include <stddef.h>
#include <stdint.h>

#define IOTAME_SELECT_MAX 8 /* strategy ids are below this */

/* A call's signature: Orthrus' characterization of one collective call. gap is the mean distance between
 * consecutive requests in file order (the paper's relative offset), from the reduced first and end offsets. */
typedef struct {
    int write;
    int64_t nprocs, bytes, requests, gap;
} iotame_sig_t;

/* The signature of a call from its reduced facts: total bytes and requests, first and end offset. */
iotame_sig_t iotame_select_sig(int write, int64_t nprocs, int64_t bytes, int64_t requests, int64_t first,
                               int64_t end);

/* The policy's knobs: the collective settings of the same names (runtime/settings.json gives their defaults and
 * docs/design/select-policy.md the reasons). */
typedef struct {
    double drop;               /* drop: a first measured examination call below drop x the best mean stops the turn */
    int retry_every;           /* retry_every: every this-many-th re-examination gives every candidate its chance */
    double threshold_max;      /* threshold_max: the most a false alarm's backoff widens the threshold to */
    double gate_calls;         /* gate_calls: the least credit a candidate's turn needs, in calls of the best */
    double window_max_seconds; /* window_max_seconds: the longest steady window, in seconds of calls */
} iotame_select_knobs_t;

typedef struct {
    const int *candidates; /* strategy ids, in examination order */
    int ncandidates;
    int exam_calls;   /* calls each candidate serves in an examination */
    double threshold; /* relative deviation of the winner's throughput that starts a new examination */
    int64_t trace;    /* calls per signature recorded in its trace (iotame_select_trace) */
    double budget;    /* the most of the signature's I/O time examinations may lose against the best so far (>= 1:
                         no limit, the paper's examination at once) */
    double window_seconds; /* a monitoring window spans at least exam_calls calls and this many seconds of them (the
                              window_seconds setting under a budget, else 0: the paper's windows of exam_calls calls) */
    int64_t readahead;     /* bytes the file system reads ahead of a sequential reader (0: none known) */
    const iotame_select_knobs_t *knobs;
    int predicts; /* the cost model predicts new signatures (a machine profile): a signature known of nothing is
                     measured on its own from its first call, so that its prediction chooses */
} iotame_select_conf_t;

/* What the cost model predicts of a signature's candidates (model.c, from the machine profile). A prediction is
 * trusted only as far as its error goes: the fastest predicted serves from the first call where it beats beyond both
 * one's errors what would serve without a profile (the configured first candidate) and the library's own call; it
 * serves alone where it so beats every candidate. Otherwise the candidates keep the configured order, as without a
 * profile (do no harm). Either way a candidate is examined only where its prediction is within the errors of the
 * incumbent's. Each error starts at `errors` (else `error`) and grows with what the signature's calls measure
 * (docs/design/cost-model.md, "How the selector uses it"; docs/design/fitted-model.md). In a class of signatures
 * earlier jobs measured (`measured`), what serves first follows what they measured: a pick without a lead serves
 * on its corrected prediction, and a candidate none of them measured is explored first unless what would serve
 * first measured as fast as predicted. */
typedef struct {
    double seconds[IOTAME_SELECT_MAX]; /* one call by strategy id; 0: not predicted (never examined) */
    double error;                      /* relative: 0.2 is a factor 1.2 either way */
    double errors[IOTAME_SELECT_MAX];  /* each strategy's own where known (its fit's near the call), else 0: error */
    int library;                       /* the strategy id of the library's own collective call (-1: none) */
    double setup[IOTAME_SELECT_MAX];   /* seconds a strategy's first call adds to its steady one where the handle has
                                          not paid it yet (the engine's set-up); 0: none */
    int measured[IOTAME_SELECT_MAX];   /* the measurements the knowledge's corrections of a strategy rest on for the
                                          signature's class (earlier jobs'; 0: none) */
    double correction[IOTAME_SELECT_MAX]; /* and the correction they applied to `seconds` (log of measured over the
                                             fit's prediction; above 0: measured slower) */
} iotame_select_model_t;

/* What an earlier run learned of one signature (an entry of the knowledge file, as the caller read it). */
typedef struct {
    iotame_sig_t sig;
    int winner;      /* its winner, -1 when undecided (or a strategy the caller does not know) */
    int examination; /* an undecided signature's examination carries over: spent, debt, first */
    double spent, debt; /* the examination budget's seconds (values below 0 count as 0) */
    int first;          /* the candidate the examination starts with, -1: none */
    double mbs[IOTAME_SELECT_MAX]; /* the earlier run's means by strategy id (0: not measured) */
    /* the model's predicted and the measured seconds of a call by strategy id (0: none) */
    double predicted[IOTAME_SELECT_MAX], measured_s[IOTAME_SELECT_MAX];
} iotame_select_known_t;

/* An earlier run's knowledge: its entries in the file's order (v may be NULL when n is 0). */
typedef struct {
    const iotame_select_known_t *v;
    size_t n;
} iotame_select_knowledge_t;

typedef struct iotame_selector iotame_selector_t;
typedef struct iotame_sel_entry iotame_sel_entry_t;

/* A new selector (collective/auto.c keeps one per file record, shared by the file's handles). NULL on ENOMEM. */
iotame_selector_t *iotame_select_new(void);
void iotame_select_free(iotame_selector_t *s);
/* A digest of everything the selector saw: ranks whose digests differ have diverged (the path was used by
 * different communicators) and must reset. */
uint64_t iotame_select_digest(const iotame_selector_t *s);
void iotame_select_reset(iotame_selector_t *s);
/* Counts the resets: an entry held across calls is valid only while the generation it was taken in lasts. */
uint64_t iotame_select_generation(const iotame_selector_t *s);
/* Whether the selector ever had an entry (its decisions belong in the statistics, even when a reset emptied them). */
int iotame_select_started(const iotame_selector_t *s);
/* The strategy the next calls of this operation and process count will run, whatever their signature: the one
 * every signature the selector or the knowledge (NULL: none) knows of them would run next, the first candidate when
 * none is known; -1 when known signatures would run different ones, or one would be examined call by call (an
 * examination under way, or one the knowledge's credit affords now). */
int iotame_select_opening(const iotame_selector_t *s, const iotame_select_knowledge_t *knowledge,
                          const iotame_select_conf_t *conf, int write, int64_t nprocs);

/* The entry of a signature: created on first sight, from the knowledge (NULL: none) when it knows the signature, with
 * the model's prediction (NULL: no profile; read only when the entry is created). NULL on ENOMEM. */
iotame_sel_entry_t *iotame_select_entry(iotame_selector_t *s, const iotame_sig_t *sig, const iotame_select_conf_t *conf,
                                        const iotame_select_knowledge_t *knowledge, const iotame_select_model_t *model);
/* The model's error an earlier run measured: the median over the knowledge's entries and strategies with both a
 * prediction and a measured mean of how far they were apart (a factor f either way is f - 1); `fallback` when fewer
 * than three were measured. */
double iotame_select_known_error(const iotame_select_knowledge_t *knowledge, double fallback);
/* The entry of a signature when the selector has one, else NULL. */
iotame_sel_entry_t *iotame_select_find(iotame_selector_t *s, const iotame_sig_t *sig);
/* The strategy of the entry's next call. */
int iotame_select_choose(const iotame_sel_entry_t *e);
/* Whether the entry's choice stays the same until something is measured differently: it runs its winner, or an
 * examination waits for its budget and the best so far serves. */
int iotame_select_settled(const iotame_sel_entry_t *e);
/* Whether the entry runs its winner (no examination under way). */
int iotame_select_running(const iotame_sel_entry_t *e);
/* The calls the candidate under examination still has to serve (0 when the entry runs its winner or waits). */
int iotame_select_exam_left(const iotame_sel_entry_t *e);
/* A running entry's next full monitoring window sets its reference anew (the calls are about to be measured in
 * another way). */
void iotame_select_rebase(iotame_sel_entry_t *e);
/* The bytes of one call of the entry's signature. */
int64_t iotame_select_bytes(const iotame_sel_entry_t *e);
/* The measured throughput (MB/s, reduced) of a call the entry's choice served. */
void iotame_select_update(iotame_selector_t *s, iotame_sel_entry_t *e, int strategy, double mbs);
/* n calls `strategy` served that are not measured (a window's rest after its choice changed, as an examination
 * started): counted and charged at mbs, so that the entry's calls are every call it served. */
void iotame_select_served(iotame_selector_t *s, iotame_sel_entry_t *e, int strategy, int n, double mbs);
/* An examination window of n calls of `strategy` (a library candidate's, exam_left calls) that took all_ns, its first
 * call first_ns (the slowest rank's): the first is a transition call when the strategy did not serve the call
 * before. */
void iotame_select_exam_window(iotame_selector_t *s, iotame_sel_entry_t *e, int strategy, int n, int64_t first_ns,
                               int64_t all_ns);

/* The calls the best so far serves, while the entry's examination waits for credit, until the credit is there
 * (0 when it does not wait). */
int iotame_select_wait_calls(const iotame_sel_entry_t *e);
/* The length of the next steady window (a library strategy's calls served without a collective of ours, then one
 * gather): the gather's cost_ns (the least time the ranks spent in a collective of ours) is at most the budget's
 * share of the window's calls of call_ns each, the window has at least shortest calls, conf->window_seconds of calls
 * when it monitors a winner, and the calls an examination waits for credit (wait: iotame_select_wait_calls; the
 * examination starts at the window's end), and at most window_max_seconds of calls, unless monitoring needs more
 * (shortest when the budget is >= 1, as the paper's monitoring of every call). */
int iotame_select_window_calls(const iotame_select_conf_t *conf, int shortest, int64_t cost_ns, double call_ns,
                               int monitoring, int wait);

/* ---- what the policy reports ---- */

/* The selector's entries, oldest first: the first (NULL when none), and the one after e (NULL after the last). */
const iotame_sel_entry_t *iotame_select_first(const iotame_selector_t *s);
const iotame_sel_entry_t *iotame_select_next(const iotame_sel_entry_t *e);
/* After a save of what the selector learned: every entry's spent and debt are in the file now. */
void iotame_select_saved(iotame_selector_t *s);

/* An entry's decision as of its last call (or its creation): what the statistics show of it. Over 20 fields: plain
 * data out, one field per figure of the statistics' "decisions" entry (docs/formats.md), filled in one place. */
typedef struct {
    iotame_sig_t sig;
    int strategy; /* the winner; during the first examination the best candidate so far; -1: none measured yet */
    int running;  /* the winner runs (else an examination is under way) */
    int ncand;    /* the candidates of the latest examination, in its order, and their means (MB/s) */
    int cand[IOTAME_SELECT_MAX];
    int measured[IOTAME_SELECT_MAX]; /* cand[k] has a mean in that examination */
    double mbs[IOTAME_SELECT_MAX];
    double reference_mbs; /* the winner's mean in its first monitoring window (0 until then) */
    uint64_t calls, examination_calls, reexaminations, deferred_calls, handed_back;
    double threshold;     /* in effect */
    int transition_calls; /* calls of a strategy's transition */
    int from_knowledge;
    /* the cost model's part (modeled 0: no prediction), by strategy id: predicted and latest measured seconds of a
     * call (0: none), the ones its error kept out of examinations, its fastest, the error in effect, the
     * re-examinations it started because a measured time departed from its prediction, and the probes that checked
     * whether a faster strategy recovered */
    int modeled, model_first, trusted, leads, deferred; /* trusted: the model's fastest served alone from the first
                                                            call; leads: it served first, the candidates within its
                                                            errors after; deferred: it would have, but its set-up
                                                            made its first call slower than the configured first's,
                                                            which served first, the pick examined next */
    int explored; /* in a class earlier jobs measured: a candidate within the errors that none of them measured,
                     served first (-1: none) */
    int learned;  /* and the model's pick served first without a lead beyond the errors, its prediction corrected by
                     what they measured */
    double predicted[IOTAME_SELECT_MAX], measured_s[IOTAME_SELECT_MAX];
    int cut[IOTAME_SELECT_MAX];
    double model_error, errors[IOTAME_SELECT_MAX]; /* the fastest's error in effect, and each one's */
    uint64_t departures, probes, returns;
} iotame_select_decision_t;
const iotame_select_decision_t *iotame_select_decision(const iotame_sel_entry_t *e);

/* The first calls of an entry (at most conf->trace): the strategy that served each and its MB/s. */
typedef struct {
    int strategy;
    double mbs;
} iotame_select_traced_t;
const iotame_select_traced_t *iotame_select_trace(const iotame_sel_entry_t *e, size_t *n);

/* What an entry carries into the next run (a knowledge file's entry): its winner (the last one while a
 * re-examination runs), or before the first decision the examination budget's seconds so far and the candidate
 * the next run starts with; and the means of its latest examination, as in the decision. */
typedef struct {
    iotame_sig_t sig;
    int winner; /* -1: undecided: spent, debt and lead say where its examination stands */
    double spent, debt;
    double spent_added, debt_added; /* the part of spent and debt no knowledge file had when this run started or last
                                       saved (iotame_select_saved) */
    int lead;
    int ncand;
    int cand[IOTAME_SELECT_MAX];
    int measured[IOTAME_SELECT_MAX];
    double mbs[IOTAME_SELECT_MAX];
    int modeled; /* the model's predicted and latest measured seconds of a call by strategy id (0: none) */
    double predicted[IOTAME_SELECT_MAX], measured_s[IOTAME_SELECT_MAX];
} iotame_select_learned_t;
/* Whether the entry learned anything to carry over (a winner, or seconds of I/O that count towards an
 * examination), and then what. */
int iotame_select_learned(const iotame_sel_entry_t *e, iotame_select_learned_t *out);

#endif
