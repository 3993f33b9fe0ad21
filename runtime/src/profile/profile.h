/* profile: the machine profile that `iotame calibrate` writes (JSON, docs/formats.md "Machine profile"), the cost
 * model that predicts from it (model.c), the profile read into iotame_profile_t (load.c) and found for a data file's
 * file system without being named each time (find.c). The decisions that predict from the machine use it: the
 * collective strategy, staging's write-through and aggregator caching, the throttle's first level.
 * docs/design/cost-model.md says how its keys map to the fields and what is taken for what it leaves out. load.c and
 * model.c need no MPI, so that the MPI-free validator (`iotame-config profile`) links them. The only interface of
 * runtime/src/profile/. */
#ifndef IOTAME_PROFILE_H
#define IOTAME_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/config.h"

/* ---- the cost model (model.c) ----
 * The predicted time of one collective call under each strategy, from a machine profile (what `iotame calibrate`
 * measures once per machine and file system) and the call's signature; docs/design/cost-model.md gives the
 * equations, their assumptions and what they leave out. Pure arithmetic: the strategies are the
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

/* The strategies the model knows: the term a collective strategy declares (its table's .model), or none (0: the
 * strategy is never predicted). */
typedef enum {
    IOTAME_MODEL_NONE,           /* no term: never predicted */
    IOTAME_MODEL_PASSTHROUGH,    /* the library's collective call: ROMIO's two-phase with its hints */
    IOTAME_MODEL_INDEPENDENT,    /* each process's part as the library's independent call (data sieving) */
    IOTAME_MODEL_TWO_PHASE,      /* even stripe-aligned domains, cb_nodes aggregators, lookahead rounds */
    IOTAME_MODEL_NODE_LOCAL,     /* one aggregator per node, no inter-node exchange */
    IOTAME_MODEL_TARGET_ALIGNED, /* one aggregator per storage target */
    IOTAME_MODEL_VIEW_BASED,     /* one aggregator per node, file blocks round robin, no offset lists */
    IOTAME_MODEL_KINDS
} iotame_model_kind_t;

/* The features of a call its fit corrects by (fit.c): one, u, u^2, write, interleaved, first, v; u being the log2
 * of the piece size less 14 over 8, within -1..1 (64 B: -1, 16 KiB: 0, 4 MiB: 1), first 1 for the handle's first
 * call of the kind (calibrate's rows: 1 / the phase's calls), v the log2 of the bytes per process and call less 19
 * over 5, within -1..1 (16 KiB: -1, 512 KiB: 0, 16 MiB: 1). A fit of fewer features (an earlier profile) has the
 * others' coefficients 0. */
#define IOTAME_FIT_FEATURES 7
#define IOTAME_FIT_RESIDUALS 128 /* cross-validated residuals kept per strategy */
#define IOTAME_FIT_ANCHORS 128   /* anchors kept per strategy */

/* A measured signature of several calls: where it was measured (features u, v, write, interleaved), its residual
 * log(measured / fitted) and the log error of its median over the repeats (its noise). */
typedef struct {
    double u, v, r, noise;
    int write, interleaved;
} iotame_fit_anchor_t;

/* A strategy's fit to what `iotame calibrate` measured of it (profile version 2, "strategies.fit"): the model's
 * seconds times exp(coef . features), the fit's cross-validated log residuals by where they were measured, and its
 * anchors: measured signatures whose own residual corrects a call near them (fit.c). */
typedef struct {
    int rows; /* the measured rows it was fitted to; 0: no fit (the derived model alone) */
    double coef[IOTAME_FIT_FEATURES];
    int nres;
    struct {
        double u, v, r; /* the row's features u and v, and its residual log(measured / fitted) */
        int write, interleaved;
    } res[IOTAME_FIT_RESIDUALS];
    int nanchors;
    iotame_fit_anchor_t anchor[IOTAME_FIT_ANCHORS];
    double setup[2]; /* seconds a handle's first call adds to a steady one, [0] read, [1] write (0: not measured) */
} iotame_model_fit_t;

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
    /* the fit of each kind to the strategies' measured calls (all rows 0: a profile without them, version 1) */
    iotame_model_fit_t fit[IOTAME_MODEL_KINDS];
} iotame_profile_t;

/* Why a profile cannot be used: "field: what was expected" (its key in the JSON profile), or NULL when it can. */
const char *iotame_model_profile_problem(const iotame_profile_t *p);


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
    int first_call;              /* the handle's first call of the kind (the fit's feature `first`; the selector
                                    predicts later calls, what its means measure: 0) */
} iotame_model_call_t;

/* Seconds of one call under strategy `kind` (an iotame_model_kind_t); a negative value for an unknown kind or none. The
 * profile must pass iotame_model_profile_problem. The model's equations alone: iotame_model_fitted corrects them. */
double iotame_model_predict(const iotame_profile_t *p, const iotame_model_call_t *c, int kind);
/* The call's features (IOTAME_FIT_FEATURES, as above): the one definition in C; python/iotame/calibrate/fit.py has
 * the Python one. */
void iotame_model_features(const iotame_model_call_t *c, double f[IOTAME_FIT_FEATURES]);
/* iotame_model_predict corrected by the profile's fit of the kind (as it is without one), and into *error (may be
 * NULL) the relative error of that prediction near the call (a factor f either way is f - 1). Near an anchor of the
 * call's operation and layout (within one size step) the prediction takes the anchor's residual in proportion to
 * its nearness, and the error is the anchor's noise and the rest of the fit's error in quadrature; the fit's error
 * is the largest cross-validated residual of its rows of the call's operation and layout within one size step,
 * else of its operation, else of all; -1 without a fit. */
double iotame_model_fitted(const iotame_profile_t *p, const iotame_model_call_t *c, int kind, double *error);

/* What a handle's first call of strategy `kind` measured beyond a steady call, in seconds (the fit's "setup": the
 * engine's set-up of the handle, the library's own first-call work); 0 where the profile did not measure it. */
double iotame_model_setup(const iotame_profile_t *p, int kind, int write);
/* How many kinds the profile has a fit of (0: a profile without strategy measurements). */
int iotame_model_fits(const iotame_profile_t *p);
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
/* The name of a kind ("two_phase", ...), or NULL (none, or unknown). */
const char *iotame_model_kind_name(int kind);

/* Reads the profile named `path`, from text[0..len) or, when text is NULL, from the file `path`, into *out. Returns 0
 * when it is valid and iotame_model_profile_problem() accepts it; else a negative errno (-EINVAL: invalid, another:
 * unreadable) and *errors (malloc'd, the caller frees it) holds every problem, one line each:
 * "iotame: profile FILE: KEY: expected ..., got ...". *errors is NULL on success. */
int iotame_profile_load(const char *path, const char *text, size_t len, iotame_profile_t *out, char **errors);
/* The same of a document already parsed with IOTAME_PROFILE_JSON_FLAGS (root NULL: the parse failed as jerr says),
 * so that a caller that looked into it first parses it once. */
#define IOTAME_PROFILE_JSON_FLAGS JSON_REJECT_DUPLICATES
int iotame_profile_load_parsed(const char *path, const json_t *root, const json_error_t *jerr, iotame_profile_t *out,
                               char **errors);
/* The profile's text with the value of strategies.measured (calibrate's rows, which the runtime never reads)
 * replaced by null, malloc'd with its length in *out_len; NULL where it has none or its text is not followed
 * (unread.c). */
char *iotame__profile_unread(const char *text, size_t len, size_t *out_len);

/* A machine profile found for a data file (find.c). */
typedef struct iotame_profile_found {
    iotame_profile_t profile;
    char path[4096];
    const char *found_by; /* "setting", "environment" or "directory" */
    int hash;             /* of the profile's text, never 0: ranks that read the same profile agree on it */
} iotame_profile_found_t;
/* The profile of the file system of data_path (as MPI_File_open got it), found as docs/calibrate.md says: named by
 * `setting` (collective.profile; NULL: none) or IOTAME_PROFILE (a file or a directory), else in the user's and the
 * installation's profile directories. Returns it, or NULL when none was found; *refused (NULL: none) holds a line
 * for each profile refused on the way (invalid, or named but of another file system). Both are borrowed: what was
 * found is kept per directory and setting for the job's life, so a second search of a file system reads nothing.
 * Thread-safe. */
const iotame_profile_found_t *iotame_profile_find(const char *data_path, const char *setting, const char **refused);
/* The same for a file with its configuration (fc NULL: none): the one place that reads the collective.profile
 * setting (its default from runtime/settings.json). The core finds a file's profile this way once at MPI_File_open
 * and keeps the agreed one on the file record (core/module.h); the POSIX layer's throttle, which has no record,
 * calls it per file. */
const iotame_profile_found_t *iotame_profile_for(const char *data_path, const iotame_file_config_t *fc,
                                                 const char **refused);
/* Whether a search for some file of the configuration (cfg may be NULL) could find any profile at all: a rule or the
 * defaults name collective.profile, IOTAME_PROFILE is set, or a profile directory holds a *.json file (cheap: no
 * file is read). 0 means that every iotame_profile_for fails. */
int iotame_profile_may_exist(const iotame_config_t *cfg);

#endif
