/* throttle: stream throttling on the POSIX layer (Seelam, Kerstens, Teller, "Throttling I/O Streams to Accelerate
 * File-I/O Performance", UTEP-CS-07-22; docs/design/throttle.md). At most `level` processes of the node are inside
 * a synchronous read (and, separately, a write) on one storage target at once; the others wait in arrival order.
 * The level is the file's static setting (the node's share of the job-wide limit) or, with "auto", the one the
 * controller keeps after measuring the node's aggregate throughput per level. No MPI call on the I/O path: the
 * gate and the controller live in the node's shared segment (posix/). The only interface of runtime/src/throttle/. */
#ifndef IOTAME_THROTTLE_H
#define IOTAME_THROTTLE_H

#include <pthread.h>
#include <stdint.h>

#include "core/module.h"

/* ---- the controller (control.c): MPI-free, one per target and direction ---- */

#define THROTTLE_CANDIDATES 24 /* levels a search may measure: powers of two up to 2^20 and refinements */
#define THROTTLE_PHASES 48     /* the phases a target and direction keeps for the statistics (the first ones) */

typedef enum { THROTTLE_SEARCH, THROTTLE_STEADY } throttle_state_t;

#define THROTTLE_CURVE_POINTS 16 /* points of a streams curve at most (the machine profile's) */

/* A target's streams curve for one direction, from the machine profile: x stream counts ascending from 1, y the
 * target's throughput relative to one stream; n 0: none. */
typedef struct {
    int32_t n, pad;
    double x[THROTTLE_CURVE_POINTS], y[THROTTLE_CURVE_POINTS];
} throttle_curve_t;

typedef struct {
    double window_ns, threshold, tolerance, budget;
} throttle_knobs_t;

/* A phase: a run of windows at one level (the statistics' "level in force per phase"). */
typedef struct {
    int32_t level, searching;
    uint32_t windows, pad;
    uint64_t start_ns, bytes, busy_ns;
} throttle_phase_t;

typedef struct {
    int32_t nmax;      /* the highest level: the node's processes (unthrottled) */
    int32_t predicted; /* the level the machine profile predicts, where a search starts (0: none, the full search) */
    throttle_curve_t curve; /* the profile's curve it was predicted from: an examination's expected loss */
    int32_t level; /* in force */
    int32_t state;
    int32_t ncand, refined, deviations;
    int32_t level_cand[THROTTLE_CANDIDATES];
    double mbs[THROTTLE_CANDIDATES]; /* measured throughput (0: not yet) */
    double reference;                /* steady: the throughput measured for the level in force */
    uint64_t busy_ns, loss_ns;       /* I/O time seen, and what the search lost against the best so far */
    uint32_t searches, known;        /* searches started; 1 when the level came from the knowledge file */
    uint32_t nphases;
    int32_t found;    /* the level the last finished search kept (0: none finished), what the knowledge file keeps */
    double found_mbs; /* and its throughput */
    throttle_phase_t phase[THROTTLE_PHASES];
} throttle_ctl_t;

/* Starts a controller: at a remembered level when known > 0 (steady, no search); else searching, from the
 * predicted level when predicted > 0 (clamped to nmax; a climb over its neighbours), else from nmax (the full
 * search). curve (NULL: none) is what predicted came from: a level is examined only once the loss so far plus the
 * loss the curve expects of its window stays within the budget. */
void throttle_ctl_init(throttle_ctl_t *c, int nmax, int known, int predicted, const throttle_curve_t *curve);
/* One finished window: bytes moved in busy_ns of I/O time. Returns the level in force from now on. */
int throttle_ctl_window(throttle_ctl_t *c, const throttle_knobs_t *k, uint64_t bytes, uint64_t busy_ns, uint64_t now_ns);
/* The best level measured in the last search, 0 when none finished. */
int throttle_ctl_best(const throttle_ctl_t *c);
/* The level among 1..nmax a streams curve predicts best: the highest within `tolerance` of the best, as the
 * controller keeps measured levels. Only the curve's own counts up to nmax are candidates, and nmax when it lies
 * inside the curve (between points a power law is a guess: a device's cliff past its prefetched streams falls
 * between them); a curve that ends below nmax predicts at most its last count, and the climb examines the levels
 * above. 0 when the curve has fewer than two points. */
int throttle_predict_level(const throttle_curve_t *curve, int nmax, double tolerance);

/* ---- the gate (gate.c): one per target and direction, in the node's segment ---- */

#define THROTTLE_HOLDERS 256 /* tickets out (waiting or inside) a gate tells apart: a bypass gives one back */

/* A ticket out: the process that took it (0: a free entry), whether it is inside, and whether a bypass gave it
 * back already. */
typedef struct {
    int32_t pid;
    uint32_t ticket;
    uint16_t inside, given;
} throttle_holder_t;

/* One direction of a target's gate in the node's shared segment. Over 20 fields: a layout in shared memory that
 * every process of the node maps, with the counters the gate's few locked instructions update together. */
typedef struct {
    pthread_mutex_t lock; /* process-shared, robust: held for a few instructions, never across a request */
    uint32_t turn;        /* a futex: changes when waiters should look at the counters again */
    int32_t ready;        /* the lock is initialized */
    uint32_t ticket, done; /* tickets taken / given back: ticket t enters when t - done < its level */
    int32_t waiting, inside, max_inside;
    int32_t active;   /* processes waiting for or inside a request: the target is busy while > 0 */
    int32_t bypassed; /* tickets given back by a waiter after stall_seconds without progress */
    uint64_t busy_since, busy_ns, bytes, requests;
    int32_t static_level, used_auto; /* the highest static level a request came with; whether one came with auto */
    int32_t sig_size_log2;           /* auto: the workload signature's request size class (the first request's) */
    uint64_t sig_fs_type;            /* and its file system */
    throttle_ctl_t ctl;              /* auto only */
    int32_t ctl_started;
    throttle_holder_t holder[THROTTLE_HOLDERS];
} throttle_gate_t;

typedef struct {
    throttle_gate_t dir[2]; /* read, write */
} throttle_target_t;

/* A request's place in the gate, from enter to leave. */
typedef struct {
    int32_t holder; /* its entry in the gate's holders, -1 when they were all taken */
    uint32_t ticket;
} throttle_pass_t;

/* Initializes a zeroed gate (the node's first process, at MPI_Init). Returns 0 or an errno. */
int throttle_gate_init(throttle_gate_t *g);
/* Waits for a turn under `level` (level <= 0: auto, the controller's level) and enters; *pass is what leave takes.
 * Returns the nanoseconds waited. stall_ns: after this long without any ticket given back, the waiter gives back
 * one stuck ticket (a process's that is gone, else the oldest holder's; counted in bypassed) and waits for its turn
 * as before; a holder that was only slow gives back nothing when it leaves. */
uint64_t throttle_gate_enter(throttle_gate_t *g, int level, uint64_t stall_ns, throttle_pass_t *pass);
/* Starts the gate's controller (auto) once: at a remembered level when known > 0, else from the predicted level
 * when predicted > 0 (throttle_ctl_init; curve may be NULL). */
void throttle_gate_start_auto(throttle_gate_t *g, int nmax, int known, int predicted, const throttle_curve_t *curve);
/* Leaves after a request that moved `bytes`; with auto, closes a measurement window when one is full. */
void throttle_gate_leave(throttle_gate_t *g, const throttle_pass_t *pass, uint64_t bytes, int is_auto,
                         const throttle_knobs_t *k);

/* This part's module table (core/modules.c registers it). */
extern const iotame_module_t iotame_module_throttle;

#endif
