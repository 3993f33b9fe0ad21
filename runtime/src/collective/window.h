/* The window protocol of the auto strategy (window.c): how one handle's calls feed the selector's policy. Internal
 * to collective/ (auto.c, and tests/unit/test_window.c); free of MPI: the gather at a window's end is the caller's
 * (iotame_window_gather_t), so that the protocol can be tested without it. */
#ifndef IOTAME_COLLECTIVE_WINDOW_H
#define IOTAME_COLLECTIVE_WINDOW_H

#include <stdint.h>

#include "flatten/flatten.h"
#include "select/select.h"

/* What every rank tells at the end of a steady window: the window's shape and times on this rank, and the least
 * time it spent in a collective of ours so far. */
enum {
    IOTAME_WROW_CHANGED,
    IOTAME_WROW_DELTA,
    IOTAME_WROW_START,
    IOTAME_WROW_END,
    IOTAME_WROW_BYTES,
    IOTAME_WROW_EXTENTS,
    IOTAME_WROW_WARM_NS,
    IOTAME_WROW_NS,
    IOTAME_WROW_COST_NS,
    IOTAME_WINDOW_FIELDS
};

/* A steady window monitors a settled choice, opens a handle, or examines a library candidate. */
enum { IOTAME_WINDOW_MONITOR, IOTAME_WINDOW_OPENING, IOTAME_WINDOW_EXAM };

/* How a window's rows travel: post this rank's row (it stays valid until the wait), wait for every rank's (nprocs
 * rows; took_ns: what posting and waiting took on this rank), let a posted gather progress. auto.c: a posted
 * MPI_Iallgather on the handle's communicator; tests: in memory. */
typedef struct {
    void (*post)(void *arg, const int64_t *row);
    const int64_t *(*wait)(void *arg, int64_t *took_ns);
    void (*test)(void *arg);
    void *arg;
} iotame_window_gather_t;

/* What the ranks agreed at the open (the same on every rank): the policy's settings, the candidates of each
 * operation in examination order (reads [0], writes [1]), the window lengths, the opening windows, the knowledge. */
typedef struct {
    iotame_select_conf_t conf; /* its candidates: order[op], set per call */
    iotame_select_knobs_t knobs;
    int order[2][IOTAME_SELECT_MAX], norder[2];
    int library[IOTAME_SELECT_MAX]; /* library strategies (the MPI library serves them: no collective of ours) */
    int shortest;   /* the opening window's length, and the shortest steady window's: steady_windows x exam_calls */
    int opening[2]; /* the strategy of the opening window of reads [0], writes [1]; -1: none */
    iotame_select_knowledge_t knowledge;
} iotame_window_settings_t;

/* The window under way (left > 0), as this rank saw its calls. */
typedef struct {
    int left, calls; /* calls still to serve, of the window's */
    int strategy, write, kind;
    iotame_sel_entry_t *entry; /* NULL: the opening window, or one going on from it (its gathered signature tells) */
    uint64_t generation;       /* the selector's, when the entry was taken */
    int changed, fresh;        /* a call changed shape; the next call sets the shape */
    int64_t row[3];            /* this rank's bytes, extents, span of a call */
    int64_t first, start, delta; /* the window's first start; the last call's; the step between starts */
    double seconds, warm;        /* the window's calls; its first call */
} iotame_window_run_t;

/* The window that ended last, its rows gathered without waiting until the next one ends. */
typedef struct {
    int pending;
    int strategy, write, calls, kind;
    iotame_sel_entry_t *entry;
    uint64_t generation;
    int64_t row[IOTAME_WINDOW_FIELDS];
} iotame_window_posted_t;

/* What the handle's windows cost and counted. */
typedef struct {
    int next_calls;  /* the next steady window's length (agreed at every window's end) */
    int64_t cost_ns; /* this rank's least time in a collective of ours */
    int64_t served, measured, unmeasured; /* calls served in windows; windows ended, every rank alike */
} iotame_window_tally_t;

/* The cost model's prediction of a new signature (auto.c, from the machine profile): fills *out and returns 1, or 0
 * when there is none. interleaved: the ranks' ranges of the call overlap. */
typedef struct {
    int (*fn)(void *arg, const iotame_sig_t *sig, int interleaved, iotame_select_model_t *out);
    void *arg;
} iotame_window_predict_t;

typedef struct {
    iotame_selector_t *sel; /* the file record's (shared by its handles) */
    int nprocs;
    int started; /* the first call came (the opening window starts there) */
    iotame_window_settings_t set;
    iotame_window_run_t run;
    iotame_window_posted_t posted;
    iotame_window_tally_t tally;
    iotame_window_gather_t gather;
    iotame_window_predict_t predict; /* fn NULL: no profile */
} iotame_window_t;

/* The policy's settings of an operation's calls (reads 0, writes 1). */
iotame_select_conf_t iotame_window_conf(const iotame_window_t *w, int write);
/* The strategy of the opening window of an operation as this rank sees it (set.order of the operation filled): a
 * library strategy that every signature known of the operation would run, or, none known, the first candidate; else
 * -1 (the first call is measured on its own). Never under the paper's examination at once (budget >= 1). */
int iotame_window_opening(const iotame_window_t *w, int write);
/* The strategy that serves this call without a collective of ours (a steady window under way, or the opening
 * window at the handle's first call), else -1: the router measures the call. */
int iotame_window_serving(iotame_window_t *w, int write);
/* After a call served in a window: whether this rank could map it (shaped), its bytes and extents, its seconds. */
void iotame_window_served(iotame_window_t *w, int write, int shaped, int64_t nbytes, const iotame_extents_t *ext,
                          double seconds);
/* The entry of a measured call's signature (NULL on ENOMEM), predicted when new (interleaved: the ranks' ranges
 * overlap); after the call, its throughput (reduced) and this rank's part of it (the shape a window that starts now
 * goes on with). */
iotame_sel_entry_t *iotame_window_entry(iotame_window_t *w, const iotame_sig_t *sig, int interleaved);
void iotame_window_measured(iotame_window_t *w, iotame_sel_entry_t *e, int strategy, double mbs, int write,
                            int64_t nbytes, const iotame_extents_t *ext);
/* At the close, or at MPI_Finalize for a handle still open: a window under way is posted as far as it went (every
 * rank made the same calls). */
void iotame_window_post_last(iotame_window_t *w);
/* Completes a posted gather, if any (collective). */
void iotame_window_complete(iotame_window_t *w);

#endif
