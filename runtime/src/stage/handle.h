/* The stage module's state of a handle and of the process, shared by the files of stage/ only (stage.h is the part's
 * interface to the others). A handle is composed of one part per concern, each owned by its file, which alone
 * changes it: the settings (settings.c), the view and this process's staged data (node.c: node staging), the
 * handle's own descriptor (through.c: write-through), aggregator caching (aggregators.c) and prefetch (prefetch.c);
 * module.c holds the module's hooks, which call the concerns in turn. */
#ifndef IOTAME_STAGE_HANDLE_H
#define IOTAME_STAGE_HANDLE_H

#include <jansson.h>

#include "core/module.h"
#include "profile/profile.h"
#include "stage.h"

extern const iotame_module_t iotame_module_stage;

/* ---- the settings (settings.c): read once, staging.enabled and staging.collective decoded once ---- */

typedef enum { STAGE_ENABLED_OFF, STAGE_ENABLED_ON, STAGE_ENABLED_AUTO } stage_enabled_t;
typedef enum { STAGE_COLLECTIVE_NODE, STAGE_COLLECTIVE_AGGREGATORS, STAGE_COLLECTIVE_AUTO } stage_collective_t;

/* A file's staging settings, read at its open (its value, else runtime/settings.json's default). */
typedef struct {
    stage_enabled_t enabled;
    stage_collective_t collective;
    int prefetch, sync_on_close;
} stage_settings_t;

/* What MPI_Init needs of the whole configuration (every file's rules, the process's values). */
typedef struct {
    int any_on;          /* some file has staging.enabled true or "auto" */
    int any_true;        /* some file has staging.enabled true */
    int any_prefetch;    /* some file has staging.prefetch */
    int any_aggregators; /* some file has staging.collective "aggregators" or "auto" */
    double threshold, flush_delay_ms;
    uint64_t cache_bytes, prefetch_bytes;
} stage_job_settings_t;

/* The file's settings (fc NULL: every one off). */
void stage_settings_read(const iotame_file_config_t *fc, stage_settings_t *set);
/* The job's (cfg not NULL). */
void stage_settings_job(const iotame_config_t *cfg, stage_job_settings_t *job);
/* staging.enabled as the statistics show it: true, "auto" or false (new reference). */
json_t *stage_settings_enabled_json(stage_enabled_t e);

/* ---- the process (module.c: set at MPI_Init, read-only afterwards) ---- */

typedef struct {
    stage_area_t *area; /* the node's; NULL: nothing is staged (staging "auto" alone, and no profile anywhere) */
    int node_rank;
    int app_threaded;   /* the application runs MPI_THREAD_MULTIPLE: the data path takes turns (module.c) */
    int flusher_lazy;   /* only staging "auto": the node's flusher starts with the first file staged */
    stage_flush_knobs_t flush;
} stage_process_t;
extern stage_process_t stage_process;

/* ---- a handle ---- */

/* The handle's view (node.c): set at open and at every set_view, agreed over the file's ranks. */
typedef struct {
    int ok, ok_all, native; /* this rank's view maps; every rank's does; the representation is native */
    int64_t disp, etype_size;
    iotame_flat_t *flat;
} stage_view_t;

/* This process's staged data of the file (node.c). */
typedef struct {
    int writes;               /* writes are staged (else only prefetch) */
    uint64_t last_end;        /* ring position after its last record of the file (0: none) */
    int64_t pend_lo, pend_hi; /* the file range of its staged data not known written (lo > hi: none) */
} stage_own_t;

/* Write-through (through.c): the handle's own descriptor of the file, and the per-call costs of a file system that
 * absorbs writes (its machine profile says so: a page cache; 0: no such profile). */
typedef struct {
    int fd;     /* -1: not opened yet */
    char *path; /* NULL: not to be opened (again) */
    double absorb_call_s, copy_rate, piece_s;
} stage_through_t;

/* Aggregator caching (aggregators.c; docs/design/aggregator-caching.md): the handle as the block consumer of its
 * collective calls (core/module.h). dirty and unreported are the same on every rank of the file (set by every call
 * handed over; dirty cleared by a collective flush, unreported by the error reduction of a sync or close). */
typedef struct {
    int on;             /* the collective engine hands the handle's blocks (bound; counted in the node's agg_users) */
    int undecided;      /* staging.collective auto: the first call that could be cached decides (the model) */
    int dirty, unreported, nprocs, me;
    const char *refused; /* staging's own reason not to cache found at open, told at the bind (NULL: none) */
    int *world_of;      /* the world rank of every rank of the file's communicator */
    uint64_t *end;      /* per rank of the file: the ring position after its cached records this rank may need
                           written (0: none) */
    int32_t *errs;      /* per rank of the file: the sync's error reduction */
    int64_t lo, hi;     /* the file range of this rank's own cached data (lo > hi: none) */
    uint64_t own_end;   /* as an aggregator: the ring position after its last cached record of the file */
    int64_t unit, nagg; /* the block map of the calls handed so far (0: none yet) */
    const iotame_file_profile_t *profile; /* the file record's machine profile (staging.collective auto's model) */
} stage_agg_t;

/* Prefetch (prefetch.c). */
typedef struct {
    int64_t next_read; /* where this process's next sequential read would start (-1: none yet) */
    int slot[2];       /* this handle's read-ahead buffers (-1: none) */
} stage_ahead_t;

/* The module's state of one handle (its slot in the core's record). */
typedef struct stage_handle {
    MPI_File fh;
    MPI_Comm comm; /* a duplicate of the file's communicator: set_view's agreement, the collective flushes */
    iotame_file_stats_t *fs;
    int file; /* index in the area's file table */
    int amode, atomic;
    stage_settings_t set;
    stage_view_t view;
    stage_own_t own;
    stage_through_t through;
    stage_agg_t agg;
    stage_ahead_t ahead;
} stage_handle_t;

/* ---- shared by the concerns (module.c) ---- */

static inline void stage_count(uint64_t *counter, uint64_t n) { __atomic_fetch_add(counter, n, __ATOMIC_RELAXED); }
static inline double stage_seconds(uint64_t ns) { return (double)ns * 1e-9; }
/* Waits for everything staged before `upto` to be written, counting the wait. */
void stage_drain_counted(uint64_t upto);
void stage_drain_counted_step(uint64_t upto, const char *step); /* the wait named for the watchdog */
/* What the watchdog names a wait of aggregator caching for its node's flusher (core/watch.h). */
#define STAGE_AGG_STEP "aggregator caching: waiting for the node's flusher to write the cached blocks"
/* The MPI error class of an errno; err returned through the handle's file error handler (counted). */
int stage_error_class(int err);
int stage_error_raise(stage_handle_t *h, int err);

/* ---- node staging (node.c) ---- */

void stage_view_set(stage_handle_t *h, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                    const char *datarep);
void stage_view_free(stage_handle_t *h);
/* The call's data stream and file runs (into the process's runs: stage_call_runs); NULL, or why they cannot be had.
 * The runs are the process's: callers take turns (module.c). */
const char *stage_map_call(stage_handle_t *h, const iotame_io_t *io, int64_t *nbytes, MPI_Offset *pos);
const iotame_runs_t *stage_call_runs(void);
/* The file range [*lo, *end) of the call's runs, and its pieces. */
uint64_t stage_runs_range(int64_t *lo, int64_t *end);
/* Whether this process has staged data of h's file not yet written (forgets the range once it is); whether
 * [lo, end) meets it; it written first. */
int stage_own_pending(stage_handle_t *h);
int stage_own_overlap(stage_handle_t *h, int64_t lo, int64_t end);
void stage_own_data_written(stage_handle_t *h);
/* The data of a write as staging takes it: its memory when contiguous (mem), else packed by MPI from io. */
typedef struct {
    const iotame_io_t *io;
    const char *mem; /* the contiguous data, or NULL */
    int64_t nbytes;
} stage_data_t;
int stage_fill(void *arg, char *dst, uint64_t from, uint64_t n);
/* A call served here: its status and the individual file pointer. */
void stage_complete(const iotame_io_t *io, const stage_handle_t *h, MPI_Offset pos, int64_t nbytes, int64_t done);
/* A write of h staged, or written through (returns 1, *rc), or left to the library (0). */
int stage_node_write(stage_handle_t *h, const iotame_io_t *io, int *rc);
/* A read of h waits for this process's staged data it meets. */
void stage_node_read(stage_handle_t *h, const iotame_io_t *io);
void stage_node_blocked(uint64_t ns); /* a put's wait for room in the ring */
void stage_node_report(json_t *s);

/* ---- write-through (through.c) ---- */

void stage_through_open(stage_handle_t *h, const char *real, const iotame_profile_t *absorbs);
void stage_through_close(stage_handle_t *h);
/* Why the call is better written through than staged ("full", "absorbed"), or NULL. */
const char *stage_through_reason(stage_handle_t *h, int64_t nbytes, uint64_t pieces, int64_t lo, int64_t end);
/* Writes the call's runs from data within the call; the MPI return code (the error through the handler). */
int stage_through_write(stage_handle_t *h, const char *why, const char *data, int64_t *done);
void stage_through_report(json_t *s);

/* ---- aggregator caching (aggregators.c) ---- */

/* Staging's own reason not to cache the file's collective writes, before (early) and after (late) the collective
 * module's: the configuration and the remote waits, the same on every rank. NULL: none. */
const char *stage_agg_early(const stage_settings_t *set, int writes);
const char *stage_agg_late(int alone);
/* The per-rank tables (0, or -1 when they cannot be had); freed. */
int stage_agg_setup(stage_handle_t *h, MPI_Comm comm);
void stage_agg_free(stage_handle_t *h);
/* Offers the handle as its record's block consumer (core/module.h), with the file's statistics noted until the
 * collective module binds it. */
void stage_agg_offer(stage_handle_t *h, iotame_file_t *record);
void stage_agg_close(stage_handle_t *h, iotame_file_t *record);
/* The file's statistics: its collective writes cached at the aggregators (why NULL), or not and why. */
void stage_agg_note(iotame_file_stats_t *fs, const char *why);
/* Collective over the file's ranks: every cached byte of the handle is written when it returns. */
void stage_agg_flush(stage_handle_t *h);
/* This rank waits for every cached record of the handle it learnt of: MPI_SUCCESS or MPI_ERR_IO. */
int stage_agg_wait(stage_handle_t *h);
/* A sync's or close's return code: rc, else the error of this rank's cached data (collective). */
int stage_agg_returned(stage_handle_t *h, int rc);
/* Before a call of a cached handle that is not a blocking collective one: MPI_SUCCESS or the error that fails it. */
int stage_agg_before(stage_handle_t *h, const iotame_io_t *io);
void stage_agg_report(json_t *s);

/* ---- prefetch (prefetch.c) ---- */

void stage_prefetch_release(stage_handle_t *h);
int stage_prefetch_held(const stage_handle_t *h);
/* Serves an independent read from h's read-ahead buffers (returns 1, *rc) or not (0). */
int stage_prefetch_read(stage_handle_t *h, const iotame_io_t *io, int *rc);
void stage_prefetch_report(json_t *s);

#endif
