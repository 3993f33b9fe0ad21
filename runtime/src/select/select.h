/* select: the online selector of collective strategies (Orthrus, Zhang et al., ISC 2014, section 2.1). The only
 * interface of runtime/src/select/, in three parts:
 *   - the policy (select.c): deterministic and MPI-free; given a signature's measured calls it decides which strategy
 *     serves the next one. Every input is a value reduced over the file's communicator (signature, throughput), and
 *     every rank makes the same sequence of calls, so every rank holds the same state and decides alike.
 *   - the knowledge file (knowledge.c) that carries what the policy learned into the next run.
 *   - the window protocol (window.c): how a handle under strategy auto feeds the policy, with library strategies'
 *     calls served in windows without a collective of ours and their gathers posted without waiting. */
#ifndef IOTAME_SELECT_H
#define IOTAME_SELECT_H

#include <stdint.h>

#include "collective/strategy.h"
#include "core/core.h"

typedef struct json_t json_t;

/* A call's signature: Orthrus' characterization of one collective call. gap is the mean distance between
 * consecutive requests in file order (the paper's relative offset), from the reduced first and end offsets. */
typedef struct {
    int write;
    int64_t nprocs, bytes, requests, gap;
} iotame_sig_t;

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
    const int *candidates; /* registry indices, in examination order */
    int ncandidates;
    int exam_calls;   /* calls each candidate serves in an examination */
    double threshold; /* relative deviation of the winner's throughput that starts a new examination */
    int64_t trace;    /* calls per signature recorded in the decision's "trace" */
    double budget;    /* the most of the signature's I/O time examinations may lose against the best so far (>= 1:
                         no limit, the paper's examination at once) */
    double window_seconds; /* a monitoring window spans at least exam_calls calls and this many seconds of them (the
                              window_seconds setting under a budget, else 0: the paper's windows of exam_calls calls) */
    int64_t readahead;     /* bytes the file system reads ahead of a sequential reader (0: none known) */
    const iotame_select_knobs_t *knobs;
} iotame_select_conf_t;

typedef struct iotame_selector iotame_selector_t;
typedef struct iotame_sel_entry iotame_sel_entry_t;

/* A new selector (window.c keeps one per file record, shared by the file's handles). NULL on ENOMEM. */
iotame_selector_t *iotame_select_new(void);
/* The selector's decisions, one JSON object per signature kept up to date (borrowed; NULL before the first entry):
 * the "decisions" list of the file's statistics. */
json_t *iotame_select_decisions(const iotame_selector_t *s);
/* A digest of everything the selector saw: ranks whose digests differ have diverged (the path was used by
 * different communicators) and must reset. */
uint64_t iotame_select_digest(const iotame_selector_t *s);
void iotame_select_reset(iotame_selector_t *s);
/* Counts the resets: an entry held across calls is valid only while the generation it was taken in lasts. */
uint64_t iotame_select_generation(const iotame_selector_t *s);
/* The strategy (registry index) the next calls of this operation and process count will run, whatever their
 * signature: the one every signature the selector or the knowledge (a parsed knowledge file, or NULL) knows of them
 * would run next, the first candidate when none is known; -1 when known signatures would run different ones, or
 * one would be examined call by call (an examination under way, or one the knowledge's credit affords now). */
int iotame_select_opening(const iotame_selector_t *s, const json_t *knowledge, const iotame_select_conf_t *conf,
                          int write, int64_t nprocs);

/* The entry of a signature: created on first sight, from the knowledge (a parsed knowledge file, or NULL) when it
 * knows the signature. NULL on ENOMEM. */
iotame_sel_entry_t *iotame_select_entry(iotame_selector_t *s, const iotame_sig_t *sig, const iotame_select_conf_t *conf,
                                        const json_t *knowledge);
/* The strategy (registry index) of the entry's next call. */
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

/* ---- the knowledge file (knowledge.c): the "collective" section of the knowledge store (core/knowledge.h) ----
 * {"entries": [{"signature": {...}, "strategy": name, "throughputs": {...}}]}; a signature not decided yet has
 * "strategy": null and "examination": {"spent": s, "debt": s, "first": name}, the examination budget's seconds and
 * the candidate the next run starts with. The policy's functions take that section as "the knowledge". */

/* The section of a knowledge file's text (a file of version 1 or 2; NULL when it is not a knowledge file). */
json_t *iotame_knowledge_parse(const char *text, size_t len);
/* The knowledge entries of what s learned (winners, and the budgets of undecided signatures); NULL when nothing. */
json_t *iotame_select_learned(const iotame_selector_t *s);
/* Rank 0 reads the file at path and broadcasts it over comm (collective; every rank takes part in every broadcast,
 * also when it cannot allocate: it then knows nothing). The section (an empty one when the file has none), NULL
 * when there is no file yet or this rank cannot hold it; *broken on rank 0 when the file is there but cannot be
 * used (reported; it is then left as it is); *exists when rank 0 could read a file. */
json_t *iotame_knowledge_load(const char *path, MPI_Comm comm, int rank, int *broken, int *exists);
/* Merges the winners of s, and the budgets of its undecided signatures, into the file at path (created if missing;
 * entries of other signatures and other modules' sections kept; a winner never replaced by an undecided entry;
 * locked against concurrent writers, replaced atomically; an existing file that is not a knowledge file is left
 * alone: -EEXIST; a lock not had in time: -ETIMEDOUT; each reported). Returns 0 or -errno. */
int iotame_knowledge_save(const iotame_selector_t *s, const char *path);

/* ---- the window protocol (window.c): one handle under strategy auto ----
 * A handle's calls are served either in a steady window (a library strategy's calls, served without a collective
 * of ours; one gather at the window's end, posted and completed a window later) or measured one by one by the
 * router (whose gather of the call's signature and reduction of its time give the policy its inputs). */
typedef struct iotame_window iotame_window_t;

/* The ints the window adds to the open's one reduction (MPI_MAX). */
enum { IOTAME_WINDOW_AGREE = 11 };

/* At the open (collective over comm): the file's settings, the knowledge file (rank 0 reads it, every rank takes
 * part in its broadcast) and this rank's part of the open's one agreement (agree, reduced with MPI_MAX by the
 * caller). NULL when this rank cannot route the handle (out of memory). */
iotame_window_t *iotame_window_open(iotame_file_stats_t *fs, const iotame_file_config_t *fc, MPI_Comm comm,
                                    int agree[IOTAME_WINDOW_AGREE]);
/* After the agreement: env is the handle's (its communicator, borrowed until iotame_window_close), agree the
 * reduced values, cost_ns what the reduction took (a first estimate of what a collective of ours costs). */
void iotame_window_agreed(iotame_window_t *w, const iotame_coll_env_t *env, const int agree[IOTAME_WINDOW_AGREE],
                          int64_t cost_ns);
/* The strategy that serves this call without a collective of ours (a steady window under way, or the opening
 * window at the handle's first call), else -1: the router measures the call. */
int iotame_window_serving(iotame_window_t *w, int write);
/* After a call served in a window: whether this rank could map it (shaped), its bytes and extents, its seconds. */
void iotame_window_served(iotame_window_t *w, int write, int shaped, int64_t nbytes, const iotame_extents_t *ext,
                          double seconds);
/* A measured call: the digest this rank adds to the call's gather, then the entry of the call's signature (the
 * selector reset first when the ranks' digests differed; NULL on ENOMEM), then, after the call, its throughput
 * (reduced) and this rank's part of it (the shape a window that starts now goes on with). */
uint64_t iotame_window_digest(const iotame_window_t *w);
iotame_sel_entry_t *iotame_window_entry(iotame_window_t *w, const iotame_sig_t *sig, int diverged);
void iotame_window_measured(iotame_window_t *w, iotame_sel_entry_t *e, int strategy, double mbs, int write,
                            int64_t nbytes, const iotame_extents_t *ext);
/* At the handle's close (collective): a window under way is posted as far as it went; its gather completes at
 * iotame_window_finalize, which then takes *comm over (set to MPI_COMM_NULL); else the window's statistics and
 * knowledge are saved and w is freed now. */
void iotame_window_close(iotame_window_t *w, MPI_Comm *comm);
/* At MPI_Finalize (collective): completes every posted gather, of closed handles and of handles still open (whose
 * windows are posted as far as they went), and saves their statistics and knowledge. */
void iotame_window_finalize(void);

#endif
