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

/* What the cost model predicts of a signature's candidates (model.c, from the machine profile): the first
 * candidate is the fastest predicted, and a candidate is examined only where its prediction is within the model's
 * error of the incumbent's. The error starts at `error` and grows with what the signature's calls measure
 * (docs/design/cost-model.md, "How the selector uses it"). */
typedef struct {
    double seconds[IOTAME_SELECT_MAX]; /* one call by strategy id; 0: not predicted (never examined) */
    double error;                      /* relative: 0.2 is a factor 1.2 either way */
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

/* An entry's decision as of its last call (or its creation): what the statistics show of it. */
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
    int modeled, model_first;
    double predicted[IOTAME_SELECT_MAX], measured_s[IOTAME_SELECT_MAX];
    int cut[IOTAME_SELECT_MAX];
    double model_error;
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

/* ---- the cost model (model.c) ----
 * The predicted time of one collective call under each strategy, from a machine profile (what `iotame calibrate`
 * measures once per machine and file system) and the call's signature; docs/design/cost-model.md gives the
 * equations, their assumptions and what they leave out. Pure arithmetic like the policy: the strategies are the
 * model's own kinds (iotame_model_kind_t), which the collective side maps to its registry ids. Units: bytes, seconds,
 * bytes per second. */

#define IOTAME_MODEL_POINTS 16 /* points of a curve at most */

/* A measured curve: y against x at n points, x ascending and > 0, y > 0. Between points y follows a power law of x
 * (straight in log x, log y); outside them y is clamped to the end point's. */
typedef struct {
    int n;
    double x[IOTAME_MODEL_POINTS];
    double y[IOTAME_MODEL_POINTS];
} iotame_model_curve_t;

/* A machine profile: storage per target, network, memory. A field 0 where a rate or size is expected is invalid
 * (iotame_model_profile_problem says which); latencies, writeback_bytes and the per-operation costs may be 0. */
typedef struct {
    /* storage: one target, one stream of requests of one size (x: request size in bytes, 4 KiB..16 MiB; y: bytes
     * per second), measured durable (writes through sync, reads from the device). Sequential: each request starts
     * where the last ended; scattered: each request positions (random offsets in a large file). */
    iotame_model_curve_t write_seq, write_scattered, read_seq, read_scattered;
    /* one target under concurrent streams (x: streams, 1 first; y: the target's aggregate throughput relative to one
     * stream: 1 at one stream, below 1 when streams make it position, above when it needs parallelism) */
    iotame_model_curve_t streams;
    /* each direction's own curve of the same kind, relative to its own one-stream figure, at every count that
     * direction measured (the throttle predicts each direction's level from its own) */
    iotame_model_curve_t streams_write, streams_read;
    double writeback_bytes;   /* bytes a node's writes may leave in memory (the page cache) before the device's speed
                                 applies; 0: writes are synchronous */
    double writeback_rate;    /* bytes per second of one stream's writes the page cache absorbs (0: copy_rate): a new
                                 file's pages are allocated and a file system's bookkeeping done as they are written */
    double syscall_seconds;   /* one read or write call served from memory (absorbed), without the copy */
    int64_t targets;          /* storage targets the file system stripes a file over (1: a local disk) */
    int64_t stripe_unit;      /* bytes of a stripe on one target */
    /* network: one message's latency (seconds) and a node's bandwidth (bytes per second), between the processes of
     * one node (shared memory) and between nodes (a node's link, shared by its processes) */
    double intra_latency, intra_rate;
    double inter_latency, inter_rate;
    /* a node's bytes per second to the other nodes while every node exchanges at once (x: bytes per pair of
     * processes, y: bytes per second a node sends), from the alltoallv rows at the calibrated layout; n 0: not
     * measured (inter_rate alone). Below inter_rate where the nodes' links or their hosts cannot carry every
     * exchange at once. */
    iotame_model_curve_t exchange;
    /* memory */
    double copy_rate;     /* bytes per second of one process's large memcpy */
    double piece_seconds; /* one pass of software over one piece (cut, list, sort step, copy call), without its bytes */
} iotame_profile_t;

/* Why a profile cannot be used: "field: what was expected" (its key in the JSON profile), or NULL when it can. */
const char *iotame_model_profile_problem(const iotame_profile_t *p);

/* The strategies the model knows (the collective side maps its registry ids to these). */
typedef enum {
    IOTAME_MODEL_PASSTHROUGH,    /* the library's collective call: ROMIO's two-phase with its hints */
    IOTAME_MODEL_INDEPENDENT,    /* each process's part as the library's independent call (data sieving) */
    IOTAME_MODEL_TWO_PHASE,      /* even stripe-aligned domains, cb_nodes aggregators, lookahead rounds */
    IOTAME_MODEL_NODE_LOCAL,     /* one aggregator per node, no inter-node exchange */
    IOTAME_MODEL_TARGET_ALIGNED, /* one aggregator per storage target */
    IOTAME_MODEL_VIEW_BASED,     /* one aggregator per node, file blocks round robin, no offset lists */
    IOTAME_MODEL_KINDS
} iotame_model_kind_t;

/* One call as the model sees it: every value the same on every rank (reduced). Processes are placed on nodes in
 * blocks of ppn consecutive ranks. Interleaved: the pieces of all processes alternate through the file (piece j of
 * rank r before piece j of rank r + 1), so every process's pieces span the whole accessed range; otherwise each
 * process's pieces follow one another in one region, in rank order. */
typedef struct {
    int write;
    int64_t nprocs, nodes, ppn;  /* ppn 0: nprocs / nodes */
    int64_t bytes;               /* of the call, all processes */
    int64_t pieces;              /* file pieces per process (contiguous runs of its view) */
    int64_t piece_size;          /* their mean size (0: bytes / (nprocs * pieces)) */
    int interleaved;
    int64_t gap;                 /* mean hole between consecutive pieces in file order, bytes (0: dense) */
    int64_t targets, unit;       /* the file's layout (0: the profile's) */
    int64_t cb_nodes, cb_buffer_size; /* the file's hints (0: one per node, 16 MiB: ROMIO's defaults) */
    int64_t block_size;          /* view_based's block (0: 1 MiB, the runtime's without a striping_unit hint) */
    int sieves;                  /* the library's writes sieve small pieces (ROMIO), not one by one (OMPIO) */
    double setup_seconds;        /* what the engine strategies' first call on a handle adds (the shadow handle's open
                                    and close); 0: set up already */
} iotame_model_call_t;

/* Seconds of one call under strategy `kind` (an iotame_model_kind_t); a negative value for an unknown kind. The
 * profile must pass iotame_model_profile_problem. */
double iotame_model_predict(const iotame_profile_t *p, const iotame_model_call_t *c, int kind);
/* A collective write staged (cached 0: node staging, each process's part in its node's area; 1: aggregator caching,
 * view_based's blocks cached at their aggregators): the seconds the application sees, and in *behind the flushers'
 * device seconds after it. The call's fields as for iotame_model_predict (block_size: view_based's block). */
double iotame_model_staged(const iotame_profile_t *p, const iotame_model_call_t *c, int cached, double *behind);
/* Whether caching at the aggregators pays for the call: its time in the end (what the application sees and the
 * flushers' device time, which the close pays unless computation hid it) below node staging's by more than the
 * model's relative error; *node and *cached receive both. */
int iotame_model_cache_pays(const iotame_profile_t *p, const iotame_model_call_t *c, double error, double *node,
                            double *cached);
/* The kinds[0..n) ordered by predicted time, fastest first (ties keep the given order), into order[] (n entries)
 * and their seconds into seconds[] (may be NULL). Returns n, or -1 when a kind is unknown or n is not in
 * 0..4 * IOTAME_MODEL_KINDS. */
int iotame_model_rank(const iotame_profile_t *p, const iotame_model_call_t *c, const int *kinds, int n, int *order,
                      double *seconds);
/* The name of a kind ("two_phase", ...), or NULL. */
const char *iotame_model_kind_name(int kind);

#endif
