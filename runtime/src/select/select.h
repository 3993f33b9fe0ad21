/* select: the online selector of collective strategies (Orthrus, Zhang et al., ISC 2014, section 2.1) and the
 * knowledge file that carries what it learned into the next run. The only interface of runtime/src/select/.
 *
 * Every input is a value reduced over the file's communicator (signature, throughput), and every rank makes the
 * same sequence of calls, so every rank holds the same state and takes the same decision without talking. */
#ifndef IOTAME_SELECT_H
#define IOTAME_SELECT_H

#include <stdint.h>

#include "core/core.h"

typedef struct json_t json_t;

/* A call's signature: Orthrus' characterization of one collective call. gap is the mean distance between
 * consecutive requests in file order (the paper's relative offset), from the reduced first and end offsets. */
typedef struct {
    int write;
    int64_t nprocs, bytes, requests, gap;
} iotame_sig_t;

/* The least time a monitoring window spans under a budget (not with exam_budget >= 1: the paper's windows of
 * exam_calls calls). */
#define IOTAME_SELECT_WINDOW_SECONDS 0.01

typedef struct {
    const int *candidates; /* registry indices, in examination order */
    int ncandidates;
    int exam_calls;   /* calls each candidate serves in an examination */
    double threshold; /* relative deviation of the winner's throughput that starts a new examination */
    int64_t trace;    /* calls per signature recorded in the decision's "trace" */
    double budget;    /* the most of the signature's I/O time examinations may lose against the best so far (>= 1:
                         no limit, the paper's examination at once) */
    double window_seconds; /* a monitoring window spans at least exam_calls calls and this many seconds of them */
    int64_t readahead;     /* bytes the file system reads ahead of a sequential reader (0: none known) */
} iotame_select_conf_t;

typedef struct iotame_selector iotame_selector_t;
typedef struct iotame_sel_entry iotame_sel_entry_t;

/* The selector of a file (one per path, shared by its handles; created on first use). NULL on ENOMEM. */
iotame_selector_t *iotame_select_for(iotame_file_stats_t *fs);
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
 * share of the window's calls of call_ns each, the window has at least shortest calls, 10 ms of calls when it
 * monitors a winner, and the calls an examination waits for credit (wait: iotame_select_wait_calls; the examination
 * starts at the window's end), and at most about a second of calls, unless monitoring needs more (shortest when the
 * budget is >= 1, as the paper's monitoring of every call). */
int iotame_select_window_calls(double budget, int shortest, int64_t cost_ns, double call_ns, int monitoring, int wait);

/* The knowledge file: {"version": 1, "entries": [{"signature": {...}, "strategy": name, "throughputs": {...}}]};
 * a signature not decided yet has "strategy": null and "examination": {"spent": s, "debt": s}, the examination
 * budget's seconds, which the next run starts from. Parses text (NULL when it is not a knowledge file). */
json_t *iotame_knowledge_parse(const char *text, size_t len);
/* Merges the winners of s, and the budgets of its undecided signatures, into the file at path (created if missing;
 * entries of other signatures kept; a winner never replaced by an undecided entry; locked against concurrent
 * writers, replaced atomically; an existing file that is not a knowledge file is left alone: -EEXIST). Returns 0
 * or -errno. */
int iotame_knowledge_save(const iotame_selector_t *s, const char *path);

#endif
