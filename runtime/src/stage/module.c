/* The stage module at the MPI-IO layer: which calls are staged, MPI-IO's semantics around them, and the statistics.
 *
 * A blocking write (independent or collective, explicit offset or individual file pointer) of a file with
 * staging.enabled is mapped through the handle's view to strided file runs, copied into the node's ring and
 * returned: no exchange between ranks, no synchronization; or, where staging cannot pay, written through within the
 * call (stage_through_reason). What keeps the semantics:
 *  - a process reads what it wrote: a read that meets its own staged data of the file waits for it to be written;
 *  - a call written through never meets the process's staged data not yet written (it is staged after it then);
 *  - a write that is not staged (atomic mode, shared pointers, split and nonblocking calls, a view that cannot be
 *    mapped) first waits for the process's staged data of the file, so the two reach the file in program order;
 *  - sync, close (with sync_on_close) and MPI_Finalize write everything staged before them; get_size, set_size and
 *    preallocate see the staged data written; an open of a file with data pending waits for it;
 *  - a collective write is staged on every rank or on none: the reasons that decide are the same on every rank
 *    (the configuration, the open mode, atomicity, and whether every rank's view maps, agreed at set_view);
 *  - a background write's error is kept for the processes whose data it was and returned by their next sync or
 *    close of the file (through the file's error handler); what is never returned is reported at MPI_Finalize.
 * Prefetch serves independent blocking reads only (a collective read served on some ranks only would leave the
 * others waiting in the library's collective). */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/module.h"
#include "posix/posix.h"
#include "profile/profile.h"
#include "stage.h"

extern const iotame_module_t iotame_module_stage;

/* The module's state of one handle (its slot in the core's record). */
typedef struct stage_handle {
    MPI_File fh;
    MPI_Comm comm; /* a duplicate of the file's communicator: set_view's agreement */
    iotame_file_stats_t *fs;
    int file; /* index in the area's file table */
    int amode, atomic, sync_on_close, prefetch;
    /* aggregator caching (staging.collective "aggregators", docs/design/aggregator-caching.md): the collective
     * writes view_based serves are cached at its aggregators; agg_dirty and agg_unreported are the same on every
     * rank of the file (set by every cached call; dirty cleared by a collective drain, unreported by the error
     * reduction of a sync or close) */
    int aggregators, agg_dirty, agg_unreported, nprocs, me;
    int agg_undecided; /* staging.collective auto: the first call that could be cached decides (the model) */
    int *world_of;        /* the world rank of every rank of the file's communicator */
    uint64_t *agg_end;    /* per rank of the file: the ring position after its cached records this rank may need
                             written (0: none) */
    int32_t *agg_errs;    /* per rank of the file: the sync's error reduction */
    int64_t agg_lo, agg_hi; /* the file range of this rank's own cached data (lo > hi: none) */
    uint64_t agg_own_end;   /* as an aggregator: the ring position after its last cached record of the file */
    int writes; /* staging.enabled: writes are staged (else only prefetch) */
    int view_ok, view_ok_all, native;
    int64_t disp, etype_size;
    iotame_flat_t *flat;
    uint64_t last_end;  /* ring position after this process's last record of the file (0: none) */
    int64_t pend_lo, pend_hi; /* the file range of this process's staged data not known written (lo > hi: none) */
    int wfd;            /* write-through: this handle's own descriptor of the file (-1: not opened yet) */
    char *path;
    /* the machine profile of the file's file system, when one says that it absorbs writes (a page cache): a write
     * call's cost there, and staging's (0: no such profile) */
    double absorb_call_s, copy_rate, piece_s;
    int64_t next_read;  /* prefetch: where this process's next sequential read would start (-1: none yet) */
    int slot[2];        /* prefetch: this handle's read-ahead buffers (-1: none) */
} handle_t;

static stage_area_t *area;
static int node_rank;
static double threshold;
static stage_flush_knobs_t flush_knobs;
static int flusher_lazy; /* only staging "auto": the node's flusher starts with the first file staged */
static int app_threaded; /* the application runs MPI_THREAD_MULTIPLE: the data path locks */
static pthread_mutex_t stage_serve_lock = PTHREAD_MUTEX_INITIALIZER; /* the runs and packing buffer below */
static iotame_runs_t runs; /* the call's file runs */
static char *pack;
static size_t pack_cap;

/* this process's counters, updated with stage_count from any thread */
static struct {
    uint64_t calls, bytes, blocked_ns, drain_ns, close_ns, reads_waited, reads_not_waited, bypassed, errors_returned,
        prefetch_hits, prefetch_misses, prefetch_bytes, through_full, through_absorbed, written_through_bytes,
        agg_calls, agg_records, agg_bytes, agg_waits, agg_wait_ns, agg_drains;
} mine;

static void stage_count(uint64_t *counter, uint64_t n) { __atomic_fetch_add(counter, n, __ATOMIC_RELAXED); }

/* The module's state of a handle, or NULL when the handle is not staged. */
static handle_t *stage_handle(iotame_file_t *f) { return *iotame_file_slot(f, &iotame_module_stage); }

static int stage_error_class(int err)
{
    switch (err) {
    case ENOSPC: return MPI_ERR_NO_SPACE;
    case EDQUOT: return MPI_ERR_QUOTA;
    case EACCES:
    case EPERM: return MPI_ERR_ACCESS;
    case ENOENT:
    case ESTALE: return MPI_ERR_NO_SUCH_FILE;
    case EROFS: return MPI_ERR_READ_ONLY;
    default: return MPI_ERR_IO;
    }
}

/* This process's pending background error of h's file, through the file's error handler; MPI_SUCCESS when none. */
static int stage_return_error(handle_t *h)
{
    int err = stage_take_error(area, h->file, node_rank);
    if (!err) return MPI_SUCCESS;
    stage_count(&mine.errors_returned, 1);
    int code = stage_error_class(err);
    PMPI_File_call_errhandler(h->fh, code);
    return code;
}

static void stage_module_drain(uint64_t upto) { stage_count(&mine.drain_ns, stage_drain(area, upto)); }

/* Whether this process has staged data of h's file not yet written; forgets the range once it is. */
static int stage_own_pending(handle_t *h)
{
    if (h->last_end && __atomic_load_n(&area->tail, __ATOMIC_ACQUIRE) < h->last_end) return 1;
    h->pend_lo = INT64_MAX;
    h->pend_hi = INT64_MIN;
    return 0;
}

/* Whether [lo, end) meets this process's staged data of h's file not yet written. */
static int stage_own_overlap(handle_t *h, int64_t lo, int64_t end)
{
    return stage_own_pending(h) && lo < h->pend_hi && h->pend_lo < end;
}

/* This process's staged data of h's file is written (a read or an unstaged write comes next). */
static void stage_own_data_written(handle_t *h)
{
    if (stage_own_pending(h)) stage_module_drain(h->last_end);
}

/* ---- views ---- */

static void stage_view_free(handle_t *h)
{
    iotame_flatten_free(h->flat);
    h->flat = NULL;
}

/* This rank's view as set (default: bytes from 0); agreed over the file's ranks: every view maps, or collective
 * writes are not staged anywhere. */
static void stage_view_set(handle_t *h, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, const char *datarep)
{
    stage_view_free(h);
    MPI_Count esize = 0;
    PMPI_Type_size_x(etype, &esize);
    h->disp = disp;
    h->etype_size = (int64_t)esize;
    h->native = datarep && strcmp(datarep, "native") == 0;
    iotame_view_t v = {disp, h->etype_size, NULL};
    h->view_ok = h->native && esize > 0 && iotame_flatten_type(filetype, &h->flat) == 0 &&
                 (v.filetype = h->flat, iotame_flatten_view_ok(&v));
    PMPI_Allreduce(&h->view_ok, &h->view_ok_all, 1, MPI_INT, MPI_MIN, h->comm);
}

/* ---- the call's file runs and data ---- */

/* The call's data stream and file runs (into `runs`); NULL, or why they cannot be had. */
static const char *stage_map_call(handle_t *h, const iotame_io_t *io, int64_t *nbytes, MPI_Offset *pos)
{
    MPI_Count tsize = 0;
    if (PMPI_Type_size_x(io->datatype, &tsize) != MPI_SUCCESS || tsize < 0 || io->count < 0) return "invalid datatype";
    *nbytes = (int64_t)tsize * (int64_t)io->count;
    if (*nbytes % h->etype_size) return "request not a whole number of etypes";
    *pos = io->offset;
    if (!io->at && PMPI_File_get_position(io->fh, pos) != MPI_SUCCESS) return "no file pointer";
    iotame_view_t v = {h->disp, h->etype_size, h->flat};
    if (iotame_flatten_view_runs(&v, (int64_t)*pos * h->etype_size, *nbytes, &runs) != 0)
        return "out of memory (staging)";
    return NULL;
}

/* The file range [*lo, *end) of the call's runs, and its pieces. */
static uint64_t stage_runs_range(int64_t *lo, int64_t *end)
{
    uint64_t pieces = 0;
    *lo = runs.n ? runs.v[0].off : 0; /* ascending */
    *end = *lo;
    for (size_t i = 0; i < runs.n; i++) {
        const iotame_run_t *x = &runs.v[i];
        if (x->off + (x->count - 1) * x->stride + x->len > *end) *end = x->off + (x->count - 1) * x->stride + x->len;
        pieces += (uint64_t)x->count;
    }
    return pieces;
}

/* The call's data, as staging takes it: its memory when that is contiguous, else packed by MPI, straight into the
 * ring when the call is one record (packed here first otherwise). */
typedef struct {
    const iotame_io_t *io;
    const char *mem; /* the contiguous data, or NULL */
    int64_t nbytes;
} stage_data_t;

static int stage_fill(void *arg, char *dst, uint64_t from, uint64_t n)
{
    const stage_data_t *d = arg;
    if (d->mem) {
        memcpy(dst, d->mem + from, n);
        return 0;
    }
    MPI_Count at = 0; /* the whole call in one record (stage_write packed it first otherwise) */
    if (from != 0 || n != (uint64_t)d->nbytes) return -1;
    return PMPI_Pack_c(d->io->buf, d->io->count, d->io->datatype, dst, (MPI_Count)n, &at, MPI_COMM_SELF) ==
                   MPI_SUCCESS ? 0 : -1;
}

/* ---- aggregator caching (docs/design/aggregator-caching.md) ---- */

/* The per-rank tables of a cached handle: 0, or -1 when they cannot be had. */
static int stage_agg_setup(handle_t *h, MPI_Comm comm)
{
    PMPI_Comm_size(comm, &h->nprocs);
    PMPI_Comm_rank(comm, &h->me);
    h->world_of = malloc((size_t)h->nprocs * sizeof *h->world_of);
    h->agg_end = calloc((size_t)h->nprocs, sizeof *h->agg_end);
    h->agg_errs = malloc((size_t)h->nprocs * sizeof *h->agg_errs);
    int *ranks = malloc((size_t)h->nprocs * sizeof *ranks);
    MPI_Group mine, world;
    int ok = h->world_of && h->agg_end && h->agg_errs && ranks;
    if (ok) {
        for (int r = 0; r < h->nprocs; r++) ranks[r] = r;
        PMPI_Comm_group(comm, &mine);
        PMPI_Comm_group(MPI_COMM_WORLD, &world);
        ok = PMPI_Group_translate_ranks(mine, h->nprocs, ranks, world, h->world_of) == MPI_SUCCESS;
        PMPI_Group_free(&mine);
        PMPI_Group_free(&world);
    }
    free(ranks);
    h->agg_lo = INT64_MAX;
    h->agg_hi = INT64_MIN;
    return ok ? 0 : -1;
}

static void stage_agg_free(handle_t *h)
{
    free(h->world_of);
    free(h->agg_end);
    free(h->agg_errs);
}

/* Clears what this rank had to wait for: the ends of the cached records it learnt of (they are written). */
static void stage_agg_waits_clear(handle_t *h)
{
    for (int r = 0; r < h->nprocs; r++) h->agg_end[r] = 0;
    h->agg_lo = INT64_MAX;
    h->agg_hi = INT64_MIN;
}

/* Waits (this rank alone) until every cached record of the handle it learnt of is written: its own node's by a
 * drain, another node's through the tail that node exposes. MPI_SUCCESS, or MPI_ERR_IO when MPI could not read a
 * remote position. */
static int stage_agg_wait(handle_t *h)
{
    const uint64_t t0 = iotame_monotonic_ns();
    int rc = MPI_SUCCESS, waited = 0;
    for (int r = 0; r < h->nprocs && rc == MPI_SUCCESS; r++) {
        if (!h->agg_end[r]) continue;
        const int w = h->world_of[r];
        if (stage_remote_local(w)) stage_drain(area, h->agg_end[r]);
        else if (stage_remote_wait(w, h->agg_end[r]) != 0) rc = MPI_ERR_IO;
        if (rc == MPI_SUCCESS) h->agg_end[r] = 0;
        waited = 1;
    }
    if (rc == MPI_SUCCESS) stage_agg_waits_clear(h);
    if (waited) {
        stage_count(&mine.agg_waits, 1);
        stage_count(&mine.agg_wait_ns, iotame_monotonic_ns() - t0);
    }
    return rc;
}

/* The sink (core/module.h), offered for the handle's collective writes when they are cached. */
static uint64_t stage_sink_put(void *arg, int origin, const iotame_run_t *runs, size_t nruns, const char *data)
{
    handle_t *h = arg;
    uint64_t bytes = 0;
    for (size_t i = 0; i < nruns; i++) bytes += (uint64_t)(runs[i].len * runs[i].count);
    stage_data_t d = {NULL, data, (int64_t)bytes};
    const stage_source_t src = {stage_fill, &d};
    uint64_t blocked = 0;
    h->agg_own_end = stage_put(area, h->file, node_rank, h->world_of[origin], runs, nruns, &src, threshold, &blocked);
    stage_count(&mine.blocked_ns, blocked);
    stage_count(&mine.agg_records, 1);
    stage_count(&mine.agg_bytes, bytes);
    return h->agg_own_end;
}

static void stage_sink_staged(void *arg, const int64_t *end, int64_t lo, int64_t hi)
{
    handle_t *h = arg;
    h->agg_dirty = h->agg_unreported = 1;
    for (int r = 0; r < h->nprocs; r++)
        if ((uint64_t)end[r] > h->agg_end[r]) h->agg_end[r] = (uint64_t)end[r];
    if (hi > lo) {
        if (lo < h->agg_lo) h->agg_lo = lo;
        if (hi > h->agg_hi) h->agg_hi = hi;
    }
    stage_count(&mine.agg_calls, 1);
}

static int stage_sink_dirty(void *arg) { return ((handle_t *)arg)->agg_dirty; }

static int stage_sink_caching(void *arg)
{
    const handle_t *h = arg;
    return h->agg_undecided ? -1 : h->aggregators;
}

/* staging.collective auto decided (every rank alike, before any write was cached): not cached, the handle's
 * collective writes are staged per node from the next call on. */
static void stage_sink_decided(void *arg, int cached, const char *why)
{
    handle_t *h = arg;
    h->agg_undecided = 0;
    h->aggregators = cached;
    json_t *s = iotame_stats_section(h->fs, &iotame_module_stage);
    if (!s) return;
    json_object_set_new(s, "collective", json_string(cached ? "aggregators" : "node"));
    json_object_set_new(s, "collective_reason", json_string(why));
}

/* Collective over the file's ranks: each waits for its own node's flusher, which holds the records of the node's
 * aggregators; the barrier then tells every rank that every node's are written. */
static void stage_sink_drain_all(void *arg)
{
    handle_t *h = arg;
    if (!h->agg_dirty) return;
    stage_module_drain(stage_head(area));
    PMPI_Barrier(h->comm);
    h->agg_dirty = 0;
    stage_agg_waits_clear(h);
    stage_count(&mine.agg_drains, 1);
}

/* An aggregator reads its own blocks: its cached records are written first (those of the blocks it reads are
 * its own: blocks map to aggregators alike for reads and writes). */
static void stage_sink_read_ready(void *arg, int64_t lo, int64_t hi)
{
    handle_t *h = arg;
    (void)lo, (void)hi;
    if (h->agg_own_end && __atomic_load_n(&area->tail, __ATOMIC_ACQUIRE) < h->agg_own_end)
        stage_module_drain(h->agg_own_end);
}

static const iotame_sink_t stage_sink = {.put = stage_sink_put, .staged = stage_sink_staged, .dirty = stage_sink_dirty,
                                         .caching = stage_sink_caching, .decided = stage_sink_decided,
                                         .drain_all = stage_sink_drain_all, .read_ready = stage_sink_read_ready};

/* At sync and close (collective): the errors of cached records are carried to the ranks whose data they were, in
 * one reduction over the file's ranks (which is also the barrier after the drain). The node's error word is taken
 * by the first of its processes; the others add nothing. Returns this rank's errno, 0 when none. */
static int stage_agg_report(handle_t *h)
{
    if (!h->agg_unreported) return 0;
    uint64_t origins[STAGE_ORIGIN_WORDS];
    int every = 0;
    const int err = stage_take_agg_error(area, h->file, origins, &every);
    for (int r = 0; r < h->nprocs; r++) {
        const int w = h->world_of[r];
        h->agg_errs[r] = err && (every || (w < STAGE_ORIGIN_WORDS * 64 && (origins[w / 64] >> (w % 64) & 1))) ? err : 0;
    }
    PMPI_Allreduce(MPI_IN_PLACE, h->agg_errs, h->nprocs, MPI_INT32_T, MPI_MAX, h->comm);
    h->agg_dirty = h->agg_unreported = 0;
    stage_agg_waits_clear(h);
    stage_count(&mine.agg_drains, 1);
    return h->agg_errs[h->me];
}

/* A sync's or close's return code: rc (the node-level error, already through the error handler), else the error of
 * this rank's cached data (stage_agg_report, collective), through the file's error handler. */
static int stage_agg_returned(handle_t *h, int rc)
{
    const int err = stage_agg_report(h);
    if (rc != MPI_SUCCESS || !err) return rc;
    stage_count(&mine.errors_returned, 1);
    const int code = stage_error_class(err);
    PMPI_File_call_errhandler(h->fh, code);
    return code;
}

/* Before a call of a cached handle that is not a blocking collective one: a collective form (split, nonblocking,
 * ordered) drains every rank's cached data; an independent access that meets this rank's own cached data (or
 * cannot be mapped) waits for it. MPI_SUCCESS, or the error that fails the call. */
static int stage_agg_before(handle_t *h, const iotame_io_t *io)
{
    const int ordered = io->op == IOTAME_OP_write_ordered || io->op == IOTAME_OP_read_ordered ||
                        io->op == IOTAME_OP_write_ordered_begin || io->op == IOTAME_OP_read_ordered_begin;
    if (io->kind == IOTAME_IO_SPLIT || io->kind == IOTAME_IO_NONBLOCKING_COLLECTIVE || ordered) {
        stage_sink_drain_all(h);
        return MPI_SUCCESS;
    }
    if (h->agg_hi <= h->agg_lo) return MPI_SUCCESS;
    int64_t nbytes = 0, lo = 0, end = 0;
    MPI_Offset pos = 0;
    /* a shared file pointer's position is not the individual one stage_map_call reads: such a call waits */
    if (io->kind != IOTAME_IO_SHARED && h->view_ok && !stage_map_call(h, io, &nbytes, &pos)) {
        stage_runs_range(&lo, &end);
        if (end <= h->agg_lo || lo >= h->agg_hi) return MPI_SUCCESS;
    }
    return stage_agg_wait(h);
}

/* ---- open and close ---- */

/* Whether a setting's value is "auto". */
static int stage_is_auto(const json_t *v) { return json_is_string(v) && strcmp(json_string_value(v), "auto") == 0; }

static int stage_enabled(const iotame_file_t *f, const char *key)
{
    return json_is_true(iotame_file_setting(f, "staging", key));
}

static int stage_is_aggregators(const json_t *v)
{
    return json_is_string(v) && (strcmp(json_string_value(v), "aggregators") == 0 ||
                                 strcmp(json_string_value(v), "auto") == 0);
}

/* Whether staging.collective may cache the file's collective writes at the aggregators ("aggregators", or "auto":
 * where the model predicts that it pays). */
static int stage_collective_aggregators(const iotame_file_t *f)
{
    return stage_is_aggregators(iotame_file_setting(f, "staging", "collective"));
}

/* Whether staging.collective leaves the choice to the model ("auto"). */
static int stage_collective_auto(const iotame_file_t *f)
{
    return stage_is_auto(iotame_file_setting(f, "staging", "collective"));
}

/* Why the file's collective writes are not cached at the aggregators, or NULL: they are. The same on every rank (the
 * configuration, and the remote waits set up at MPI_Init on every process or none). */
static const char *stage_agg_reason(const iotame_file_t *f, int writes)
{
    if (!f || !stage_collective_aggregators(f)) return "staging.collective is node";
    if (!writes) return "writes not staged";
    const json_t *st = iotame_file_setting(f, "collective", "strategy");
    if (!json_is_string(st) || strcmp(json_string_value(st), "view_based") != 0)
        return "collective.strategy is not view_based";
    if (!stage_remote_ready()) return "no window on the nodes' rings (MPI one-sided communication)";
    return NULL;
}

/* The file's "stage" statistics: whether its collective writes are cached at the aggregators, and why not. */
static void stage_note_cached(iotame_file_stats_t *fs, const char *why)
{
    json_t *s = iotame_stats_section(fs, &iotame_module_stage);
    if (!s) return;
    json_object_set_new(s, "collective", json_string(why ? "node" : "aggregators"));
    if (why) json_object_set_new(s, "collective_reason", json_string(why));
}

/* An open of a file whose staged data (of a closed handle, with sync_on_close false) is not written yet waits. */
static void stage_opening(const iotame_open_t *o)
{
    struct stat st;
    if (!area || __atomic_load_n(&area->tail, __ATOMIC_ACQUIRE) == __atomic_load_n(&area->head, __ATOMIC_ACQUIRE))
        return;
    if (stat(iotame_posix_path(o->path), &st) != 0) return;
    stage_lock(area);
    int i = stage_file_find(area, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
    uint64_t head = area->head;
    int pending = i >= 0 && area->file[i].pending;
    stage_unlock(area);
    if (pending) stage_module_drain(head);
}

/* Whether a setting's value turns staging on: true, or for staging.enabled "auto" (decided per file at open). */
static int stage_is_on(const json_t *v)
{
    return json_is_true(v) || stage_is_auto(v);
}

/* staging.enabled "auto" decides per file from the machine profile, and so does staging.collective "auto". */
static int stage_predicts(const iotame_file_config_t *fc)
{
    return stage_is_auto(iotame_config_setting(fc, "staging", "enabled")) ||
           stage_is_auto(iotame_config_setting(fc, "staging", "collective"));
}

/* The profile's per-call costs of a file system that absorbs writes (a page cache): stage_through_reason's. */
static void stage_profile_absorbs(handle_t *h, const iotame_profile_t *p)
{
    if (p->writeback_bytes <= 0) return;
    h->absorb_call_s = p->syscall_seconds;
    h->copy_rate = p->copy_rate;
    h->piece_s = p->piece_seconds;
}

/* staging.enabled "auto": whether the file's writes are staged (1) or not (0), and why (docs/design/staging.md):
 *  - "no profile": nothing predicts that staging pays;
 *  - "synchronous": the profile says the file system writes synchronously (no write-back): every write waits for
 *    the device, which the flusher's writes behind the application hide;
 *  - "overlap" or "absorbed": the write-back absorbs writes at memory speed up to writeback_bytes. A burst that fills
 *    the area (cap bytes) costs the application the copy into the area, cap / copy_rate, instead of the device time
 *    of what the write-back cannot absorb, (cap - writeback_bytes) / the device's best sequential rate; staged when
 *    that device time is the larger ("overlap"), else not ("absorbed": the write-back already writes behind, and
 *    staging would only add a copy). */
static int stage_auto_decide(const iotame_profile_t *p, uint64_t cap, const char **why)
{
    if (!p) return *why = "no profile", 0;
    if (p->writeback_bytes <= 0) return *why = "synchronous", 1;
    double device = 0;
    for (int i = 0; i < p->write_seq.n; i++)
        if (p->write_seq.y[i] > device) device = p->write_seq.y[i];
    double beyond = (double)cap > p->writeback_bytes ? (double)cap - p->writeback_bytes : 0;
    if (device > 0 && p->copy_rate > 0 && beyond / device > (double)cap / p->copy_rate) return *why = "overlap", 1;
    return *why = "absorbed", 0;
}

/* The file's "stage" statistics: the setting, whether its writes are staged and why (open for writing only). */
static void stage_note_decision(iotame_file_stats_t *fs, const json_t *enabled, int on, const char *why,
                                const char *profile)
{
    json_t *s = iotame_stats_section(fs, &iotame_module_stage);
    if (!s) return;
    json_object_set(s, "enabled", (json_t *)enabled);
    json_object_set_new(s, "writes", json_string(on ? "staged" : "not staged"));
    json_object_set_new(s, "reason", json_string(why));
    json_object_set_new(s, "profile", *profile ? json_string(profile) : json_null());
}

/* Staging "auto" alone: the node's flusher starts with the first file a process of the node stages, and that process
 * runs it, so that jobs auto leaves unstaged pay for no thread (a process with a thread of its own updates its
 * statistics atomically). The process marks itself threaded before the thread exists. Another process waits for
 * the start, for a bounded time (the starter may have been killed). Returns whether the flusher runs. */
static int stage_flusher_ensure(void)
{
    int32_t none = STAGE_FLUSHER_NONE;
    if (__atomic_compare_exchange_n(&area->flusher, &none, STAGE_FLUSHER_STARTING, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        iotame_core_threads_started();
        int ok = stage_flusher_start(area, &flush_knobs) == 0;
        __atomic_store_n(&area->flusher, ok ? STAGE_FLUSHER_RUNNING : STAGE_FLUSHER_FAILED, __ATOMIC_RELEASE);
        return ok;
    }
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int32_t state;
    while ((state = __atomic_load_n(&area->flusher, __ATOMIC_ACQUIRE)) == STAGE_FLUSHER_STARTING) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 2) return 0;
        sched_yield();
    }
    return state == STAGE_FLUSHER_RUNNING;
}

static void stage_open(const iotame_open_t *o)
{
    const json_t *enabled = iotame_config_setting(o->fc, "staging", "enabled");
    if (!o->fc || (!stage_is_on(enabled) && !json_is_true(iotame_config_setting(o->fc, "staging", "prefetch"))))
        return; /* the same on every rank (one configuration): no agreement needed */
    if (!area) { /* auto, and no profile anywhere (stage_start) */
        if (!(o->amode & MPI_MODE_RDONLY)) stage_note_decision(o->fs, enabled, 0, "no profile", "");
        return;
    }
    /* Whether this rank can stage the file; every rank of the file must agree (collective writes). */
    const char *why = NULL;
    char real[PATH_MAX];
    struct stat st;
    int file = -1;
    if (!o->file) why = "out of memory (the handle's record)";
    else if (!realpath(iotame_posix_path(o->path), real) || stat(real, &st) != 0)
        why = "the file cannot be found by path (staging)";
    else if ((file = stage_file_claim(area, (uint64_t)st.st_dev, (uint64_t)st.st_ino, real)) < 0)
        why = "the node's staging table is full";
    /* whether the file's writes are staged: staging.enabled true, or "auto" decided from the profile */
    const iotame_profile_found_t *found = file >= 0 ? o->file->profile.found : NULL; /* the core's, agreed */
    const char *profile = found ? found->path : "";
    const char *decided = "enabled";
    int writes = !(o->amode & MPI_MODE_RDONLY) && json_is_true(enabled);
    if (!(o->amode & MPI_MODE_RDONLY) && json_is_string(enabled))
        writes = stage_auto_decide(found ? &found->profile : NULL, area->cap, &decided);
    if (writes && flusher_lazy && !stage_flusher_ensure()) {
        writes = 0;
        decided = "the node's flusher could not be started";
    }
    /* another open of the file caching on this node would share the node's error word of the file (stage.h) */
    const int alone = file < 0 || !__atomic_load_n(&area->file[file].agg_users, __ATOMIC_ACQUIRE);
    int mine[3] = {file >= 0, writes, alone}, all[3] = {0, 0, 0};
    PMPI_Allreduce(mine, all, 3, MPI_INT, MPI_MIN, o->comm);
    if (writes && !all[1]) decided = "another rank decided not to stage";
    const int noted = stage_is_on(enabled) && !(o->amode & MPI_MODE_RDONLY);
    if (all[0] && !all[1] && !json_is_true(iotame_config_setting(o->fc, "staging", "prefetch"))) {
        stage_file_release(area, file); /* nothing to do for the handle: its calls go to the library untouched */
        if (noted) stage_note_decision(o->fs, enabled, 0, decided, profile);
        return;
    }
    const char *cached = stage_agg_reason(o->file, all[1]);
    if (!cached && !all[2]) cached = "another open of the file caches its collective writes";
    handle_t *h = all[0] ? calloc(1, sizeof *h) : NULL;
    if (h && PMPI_Comm_dup(o->comm, &h->comm) != MPI_SUCCESS) {
        free(h);
        h = NULL;
    }
    int have = h != NULL && (cached || stage_agg_setup(h, o->comm) == 0), every = 0;
    PMPI_Allreduce(&have, &every, 1, MPI_INT, MPI_MIN, o->comm);
    if (!every) {
        if (h) stage_agg_free(h), PMPI_Comm_free(&h->comm), free(h);
        if (file >= 0) stage_file_release(area, file);
        iotame_stats_passthrough(o->fs, why        ? why
                                        : all[0] ? "out of memory (staging)"
                                                 : "another rank cannot stage the file");
        return;
    }
    if (noted) stage_note_decision(o->fs, enabled, all[1], decided, profile);
    if (noted && stage_collective_aggregators(o->file)) stage_note_cached(o->fs, cached);
    h->fh = o->fh;
    h->fs = o->fs;
    h->file = file;
    h->amode = o->amode;
    h->writes = all[1];
    h->sync_on_close = stage_enabled(o->file, "sync_on_close");
    h->prefetch = stage_enabled(o->file, "prefetch");
    h->aggregators = !cached;
    h->agg_undecided = !cached && stage_collective_auto(o->file);
    h->next_read = -1;
    h->slot[0] = h->slot[1] = -1;
    h->pend_lo = INT64_MAX;
    h->pend_hi = INT64_MIN;
    h->wfd = -1;
    h->path = strdup(real);
    if (found) stage_profile_absorbs(h, &found->profile);
    stage_view_set(h, 0, MPI_BYTE, MPI_BYTE, "native");
    *iotame_file_slot(o->file, &iotame_module_stage) = h;
    if (h->aggregators) {
        __atomic_add_fetch(&area->file[file].agg_users, 1, __ATOMIC_ACQ_REL);
        o->file->sink = &stage_sink;
        o->file->sink_arg = h;
    }
}

static void stage_set_view(iotame_file_t *f, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                           const char *datarep)
{
    handle_t *h = stage_handle(f);
    if (h) stage_view_set(h, disp, etype, filetype, datarep);
}

static void stage_set_atomicity(iotame_file_t *f, int flag)
{
    handle_t *h = stage_handle(f);
    if (!h) return;
    h->atomic = flag;
    if (flag) stage_own_data_written(h);
    if (flag && h->aggregators) stage_sink_drain_all(h); /* collective, as MPI_File_set_atomicity */
}

static void stage_prefetch_release(handle_t *h);

static int stage_sync(iotame_file_t *f)
{
    handle_t *h = stage_handle(f);
    if (!h) return MPI_SUCCESS;
    stage_module_drain(stage_head(area));
    stage_prefetch_release(h); /* after a sync, other processes' writes may have changed what was read ahead */
    int rc = stage_return_error(h);
    return stage_agg_returned(h, rc);
}

static int stage_close(iotame_file_t *f)
{
    handle_t *h = stage_handle(f);
    if (!h) return MPI_SUCCESS;
    uint64_t t0 = iotame_monotonic_ns();
    /* cached data never outlives the handle: another rank could not be told of its failure */
    if (h->sync_on_close || h->agg_unreported) stage_module_drain(stage_head(area));
    int rc = stage_agg_returned(h, stage_return_error(h));
    stage_count(&mine.close_ns, iotame_monotonic_ns() - t0);
    stage_prefetch_release(h);
    if (h->aggregators) __atomic_sub_fetch(&area->file[h->file].agg_users, 1, __ATOMIC_ACQ_REL);
    stage_file_release(area, h->file);
    *iotame_file_slot(f, &iotame_module_stage) = NULL;
    f->sink = NULL;
    f->sink_arg = NULL;
    stage_view_free(h);
    PMPI_Comm_free(&h->comm);
    stage_agg_free(h);
    if (h->wfd >= 0) close(h->wfd);
    free(h->path);
    free(h);
    return rc;
}

static void stage_sizing(iotame_file_t *f)
{
    handle_t *h = stage_handle(f);
    if (!h) return;
    stage_module_drain(stage_head(area));
    if (h->aggregators) stage_agg_wait(h); /* MPI's own failure shows in the size call that follows */
}

/* ---- the data path ---- */

/* Why a write of h cannot be staged, or NULL. */
static const char *stage_write_reason(const handle_t *h, const iotame_io_t *io)
{
    switch (io->kind) {
    case IOTAME_IO_SPLIT: return "split collective (staging)";
    case IOTAME_IO_NONBLOCKING:
    case IOTAME_IO_NONBLOCKING_COLLECTIVE: return "nonblocking (staging)";
    case IOTAME_IO_SHARED: return "shared file pointer (staging)";
    default: break;
    }
    if (h->atomic) return "atomic mode (staging)";
    if (h->amode & MPI_MODE_SEQUENTIAL) return "MPI_MODE_SEQUENTIAL (staging)";
    if (!h->native) return "data representation other than native (staging)";
    if (!(io->kind == IOTAME_IO_COLLECTIVE ? h->view_ok_all : h->view_ok)) return "file view cannot be mapped (staging)";
    return NULL;
}

/* Packs the whole call into the process's packing buffer; NULL, or why it cannot be. */
static const char *stage_pack(stage_data_t *d)
{
    if ((size_t)d->nbytes > pack_cap) {
        char *p = malloc((size_t)d->nbytes);
        if (!p) return "out of memory (staging)";
        free(pack);
        pack = p;
        pack_cap = (size_t)d->nbytes;
    }
    MPI_Count at = 0;
    if (PMPI_Pack_c(d->io->buf, d->io->count, d->io->datatype, pack, (MPI_Count)d->nbytes, &at, MPI_COMM_SELF) !=
        MPI_SUCCESS)
        return "the buffer cannot be packed (staging)";
    d->mem = pack;
    return NULL;
}

static void stage_complete(const iotame_io_t *io, const handle_t *h, MPI_Offset pos, int64_t nbytes, int64_t done)
{
    if (io->status != MPI_STATUS_IGNORE) {
        PMPI_Status_set_elements_x(io->status, MPI_BYTE, (MPI_Count)done);
        PMPI_Status_set_cancelled(io->status, 0);
    }
    if (!io->at && nbytes > 0) PMPI_File_seek(io->fh, pos + nbytes / h->etype_size, MPI_SEEK_SET);
}

static void stage_bypass(handle_t *h, const char *why)
{
    stage_count(&mine.bypassed, 1);
    iotame_stats_passthrough(h->fs, why);
    stage_own_data_written(h);
}

/* Whether the handle has its own descriptor of the file for writing through (opened on first use; the file found by
 * its path must still be the one staged for). */
static int stage_through_fd(handle_t *h)
{
    if (h->wfd >= 0 || !h->path) return h->wfd >= 0;
    struct stat st;
    const stage_file_t *f = &area->file[h->file];
    h->wfd = open(h->path, O_WRONLY | O_CLOEXEC);
    if (h->wfd >= 0 && (fstat(h->wfd, &st) != 0 || (uint64_t)st.st_dev != f->dev || (uint64_t)st.st_ino != f->ino)) {
        close(h->wfd);
        h->wfd = -1;
        free(h->path); /* not tried again: the handle stages every call */
        h->path = NULL;
    }
    return h->wfd >= 0;
}

/* Writes the call's pieces from `data` (its bytes in run order) with the handle's own descriptor, within the call
 * (through the POSIX layer: throttle and emulate see them). Returns 0 or an errno; *done: the bytes written before
 * an error. */
static int stage_write_through(handle_t *h, const char *data, int64_t *done)
{
    int interrupted = 0;
    *done = 0;
    for (size_t i = 0; i < runs.n; i++)
        for (int64_t j = 0; j < runs.v[i].count; j++) {
            const int64_t off = runs.v[i].off + j * runs.v[i].stride;
            for (int64_t b = 0; b < runs.v[i].len;) {
                ssize_t w = pwrite(h->wfd, data + *done, (size_t)(runs.v[i].len - b), (off_t)(off + b));
                if (w < 0 && errno == EINTR && ++interrupted < STAGE_EINTR_RETRIES) continue;
                if (w <= 0) return w < 0 ? errno : EIO;
                interrupted = 0;
                b += w;
                *done += w;
            }
        }
    return 0;
}

/* Why the call is better written through than staged, or NULL:
 *  - "full": staged, it would fill the ring past the flush threshold (the flusher is then behind the writers) and
 *    its pieces are large enough to be written as they are (small ones wait for room: merged, they become large
 *    writes);
 *  - "absorbed": the file system absorbs writes (its profile says so: a page cache) and the call's write calls cost
 *    no more than staging's copy and bookkeeping: pieces of some KiB or more (the copy into the page cache is paid
 *    either way, by the flusher's merged writes after staging; their calls are shared by many staged calls).
 * Never when it meets this process's staged data not yet written (the two must reach the file in order), nor when
 * the file cannot be opened again by its path. */
static const char *stage_through_reason(handle_t *h, int64_t nbytes, uint64_t pieces, int64_t lo, int64_t end)
{
    const char *why = NULL;
    if (!stage_room_for(area, stage_record_bytes(runs.n, (uint64_t)nbytes), threshold) &&
        (uint64_t)nbytes >= pieces * STAGE_SMALL_PIECE)
        why = "full";
    else if (h->absorb_call_s > 0 &&
             (double)pieces * h->absorb_call_s <= (double)nbytes / h->copy_rate + (double)pieces * h->piece_s)
        why = "absorbed";
    return why && !stage_own_overlap(h, lo, end) && stage_through_fd(h) ? why : NULL;
}

static int stage_write(handle_t *h, const iotame_io_t *io, int *rc)
{
    const char *why = stage_write_reason(h, io);
    int64_t nbytes = 0, lo = 0, end = 0;
    MPI_Offset pos = 0;
    if (!why) why = stage_map_call(h, io, &nbytes, &pos);
    int64_t first = 0;
    stage_data_t d = {io, NULL, nbytes};
    if (!why && iotame_flatten_is_contiguous(io->datatype, (int64_t)io->count, &first))
        d.mem = (const char *)io->buf + first;
    uint64_t pieces = why ? 0 : stage_runs_range(&lo, &end);
    const char *through = why ? NULL : stage_through_reason(h, nbytes, pieces, lo, end);
    /* a call of several records, or written through, is packed first: no record waits for a failed pack */
    if (!why && !d.mem && (through || !stage_one_record(area, runs.n, (uint64_t)nbytes)))
        why = stage_pack(&d);
    if (why) {
        stage_bypass(h, why);
        return 0;
    }
    int64_t done = nbytes;
    if (through) {
        if (h->slot[0] >= 0 || h->slot[1] >= 0) stage_prefetch_release(h); /* what it read ahead may be stale */
        int err = stage_write_through(h, d.mem, &done);
        stage_count(through[0] == 'f' ? &mine.through_full : &mine.through_absorbed, 1);
        stage_count(&mine.written_through_bytes, (uint64_t)done);
        *rc = MPI_SUCCESS;
        if (err) {
            *rc = stage_error_class(err);
            PMPI_File_call_errhandler(h->fh, *rc);
        }
    } else {
        stage_own_pending(h); /* forgets a written range */
        if (runs.n) {
            const stage_source_t src = {stage_fill, &d};
            uint64_t last = stage_put(area, h->file, node_rank, -1, runs.v, runs.n, &src, threshold, &mine.blocked_ns);
            if (!last) { /* MPI could not pack the buffer into the ring: nothing was staged */
                stage_bypass(h, "the buffer cannot be packed (staging)");
                return 0;
            }
            h->last_end = last;
            if (lo < h->pend_lo) h->pend_lo = lo;
            if (end > h->pend_hi) h->pend_hi = end;
        }
        stage_count(&mine.calls, 1);
        stage_count(&mine.bytes, (uint64_t)nbytes);
        *rc = MPI_SUCCESS;
    }
    stage_complete(io, h, pos, done, done);
    return 1;
}

/* ---- prefetch ---- */

static void stage_prefetch_release(handle_t *h)
{
    stage_lock(area);
    for (int k = 0; k < 2; k++) {
        if (h->slot[k] < 0) continue;
        stage_prefetch_t *p = &area->prefetch[h->slot[k]];
        if (p->state == PREFETCH_ASKED) area->asked--; /* not read yet: the flusher skips it */
        p->state = PREFETCH_FREE;
        h->slot[k] = -1;
    }
    stage_unlock(area);
    h->next_read = -1;
}

/* Asks the flusher to read [off, off + prefetch_bytes) into one of h's buffers not covering the read at `keep`.
 * The lock is held. */
static void stage_prefetch_ask(handle_t *h, int64_t off, int64_t keep)
{
    for (int k = 0; k < 2; k++) {
        int s = h->slot[k];
        if (s >= 0) {
            stage_prefetch_t *p = &area->prefetch[s];
            if (p->state == PREFETCH_ASKED || (keep >= p->off && keep < p->off + (int64_t)area->prefetch_bytes)) continue;
        } else {
            for (int i = 0; i < STAGE_PREFETCH_SLOTS && s < 0; i++)
                if (area->prefetch[i].state == PREFETCH_FREE) s = i;
            if (s < 0) return; /* every buffer of the node is in use */
            h->slot[k] = s;
        }
        area->prefetch[s] = (stage_prefetch_t){PREFETCH_ASKED, h->file, node_rank, 0, off,
                                               (int64_t)area->prefetch_bytes, area->file[h->file].generation};
        area->asked++; /* stage_unlock wakes the flusher */
        return;
    }
}

/* Serves an independent read of one contiguous extent from h's read-ahead buffers when they hold it, and keeps
 * the read-ahead going for a sequential reader. Returns 1 when served. */
static int stage_prefetch_read(handle_t *h, const iotame_io_t *io, int *rc)
{
    int64_t nbytes = 0;
    MPI_Offset pos = 0;
    if (io->kind != IOTAME_IO_INDEPENDENT || !h->view_ok || stage_map_call(h, io, &nbytes, &pos) || runs.n != 1 ||
        runs.v[0].count != 1)
        return 0;
    const int64_t off = runs.v[0].off, len = runs.v[0].len;
    int served = 0, sequential = off == h->next_read;
    h->next_read = off + len;
    stage_lock(area);
    for (int k = 0; k < 2 && !served; k++) {
        if (h->slot[k] < 0) continue;
        stage_prefetch_t *p = &area->prefetch[h->slot[k]];
        if (off < p->off || off + len > p->off + (int64_t)area->prefetch_bytes) continue;
        if (p->generation != area->file[h->file].generation) continue; /* stale whatever it holds: not waited for */
        while (p->state == PREFETCH_ASKED) stage_wait_progress(area); /* the flusher reads it: no second read */
        if (p->state != PREFETCH_READY || p->generation != area->file[h->file].generation || off + len > p->off + p->len)
            continue; /* stale (written since), or past the end of the file when it was read */
        stage_unlock(area);
        const char *from = stage_prefetch_buffer(area, h->slot[k]) + (off - p->off);
        MPI_Count at = 0;
        served = PMPI_Unpack_c(from, (MPI_Count)len, &at, io->buf, io->count, io->datatype, MPI_COMM_SELF) == MPI_SUCCESS;
        stage_lock(area);
    }
    if (sequential) {
        /* keep one buffer ahead of the reader: from the end of what its buffers already cover */
        int64_t ahead = off + len;
        for (int pass = 0; pass < 2; pass++)
            for (int k = 0; k < 2; k++) {
                const stage_prefetch_t *p = h->slot[k] >= 0 ? &area->prefetch[h->slot[k]] : NULL;
                if (p && p->state != PREFETCH_FREE && p->off <= ahead && ahead < p->off + (int64_t)area->prefetch_bytes)
                    ahead = p->off + (int64_t)area->prefetch_bytes;
            }
        if (ahead - (off + len) < (int64_t)area->prefetch_bytes) stage_prefetch_ask(h, ahead, off);
    }
    stage_unlock(area);
    if (!served) {
        stage_count(&mine.prefetch_misses, 1);
        return 0;
    }
    stage_count(&mine.prefetch_hits, 1);
    stage_count(&mine.prefetch_bytes, (uint64_t)len);
    stage_complete(io, h, pos, nbytes, nbytes);
    *rc = MPI_SUCCESS;
    return 1;
}

static int stage_serve_call(handle_t *h, const iotame_io_t *io, int *rc)
{
    if (h->aggregators && io->kind == IOTAME_IO_COLLECTIVE && io->write) {
        /* the collective module serves it through the sink: this process's staged data first, as for a write that
         * is not staged */
        stage_own_data_written(h);
        return 0;
    }
    if (h->aggregators && io->kind != IOTAME_IO_COLLECTIVE && (*rc = stage_agg_before(h, io)) != MPI_SUCCESS) {
        PMPI_File_call_errhandler(h->fh, *rc);
        return 1;
    }
    if (io->write && h->writes) return stage_write(h, io, rc);
    if (io->write) { /* the library writes: what this process read ahead may be stale */
        if (h->slot[0] >= 0 || h->slot[1] >= 0) stage_prefetch_release(h);
        return 0;
    }
    if (stage_own_pending(h)) { /* a read sees this process's writes: those it meets are written first */
        int64_t nbytes = 0, lo = 0, end = 0;
        MPI_Offset pos = 0;
        int mapped = h->view_ok && !stage_map_call(h, io, &nbytes, &pos);
        if (mapped) stage_runs_range(&lo, &end);
        if (!mapped || stage_own_overlap(h, lo, end)) {
            stage_count(&mine.reads_waited, 1);
            stage_own_data_written(h);
        } else {
            stage_count(&mine.reads_not_waited, 1);
        }
    }
    return h->prefetch && !h->atomic ? stage_prefetch_read(h, io, rc) : 0;
}

/* Under MPI_THREAD_MULTIPLE the application's threads take turns here (the runs and the packing buffer are the
 * process's); a thread waiting for room in the ring holds the others back, as a full cache would. */
static int stage_serve(const iotame_io_t *io, int *rc)
{
    handle_t *h = stage_handle(io->file);
    if (!h) return 0;
    if (!app_threaded) return stage_serve_call(h, io, rc);
    pthread_mutex_lock(&stage_serve_lock);
    int served = stage_serve_call(h, io, rc);
    pthread_mutex_unlock(&stage_serve_lock);
    return served;
}

/* ---- start and finalize ---- */

static int stage_is_true(const json_t *v) { return json_is_true(v); }

static double stage_number(const iotame_file_config_t *process, const char *key)
{
    return json_number_value(iotame_config_setting(process, "staging", key));
}

static int stage_start(const iotame_config_t *cfg)
{
    if (!cfg) return 0;
    /* whether some file stages writes (1) or prefetches (2): the same on every rank (one configuration) */
    int any = iotame_config_any(cfg, "staging", "enabled", stage_is_on) |
              iotame_config_any(cfg, "staging", "prefetch", stage_is_true) << 1;
    if (!any) return 0;
    if (!iotame_config_any(cfg, "staging", "enabled", stage_is_true) && !(any & 2)) {
        /* only "auto": without any profile to find, no file will stage, and the area is not set up (each file's
         * open still records its decision); the ranks agree, since the area's mapping is collective */
        int may = iotame_profile_may_exist(cfg);
        int all = 0;
        PMPI_Allreduce(&may, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (!all) return 1;
    }
    const iotame_file_config_t process = {.defaults = &cfg->defaults};
    app_threaded = iotame_core_app_threaded();
    threshold = stage_number(&process, "flush_threshold");
    uint64_t cap = (uint64_t)stage_number(&process, "cache_mb") << 20;
    uint64_t ahead = any & 2 ? (uint64_t)stage_number(&process, "prefetch_kb") << 10 : 0;
    if (ahead > cap / 4 / STAGE_PREFETCH_SLOTS) ahead = cap / 4 / STAGE_PREFETCH_SLOTS; /* within the cap */
    area = stage_area_map(cap - ahead * STAGE_PREFETCH_SLOTS, ahead, &node_rank);
    int ok = area != NULL;
    flush_knobs = (stage_flush_knobs_t){threshold, (uint64_t)(stage_number(&process, "flush_delay_ms") * 1e6)};
    flusher_lazy = !iotame_config_any(cfg, "staging", "enabled", stage_is_true) && !(any & 2);
    if (area && !flusher_lazy) {
        iotame_core_threads_started(); /* the flusher's POSIX requests run beside the application's */
        if (node_rank == 0) {
            ok = stage_flusher_start(area, &flush_knobs) == 0;
            area->flusher = ok ? STAGE_FLUSHER_RUNNING : STAGE_FLUSHER_FAILED;
        }
    }
    int all = 0;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        if (area) stage_flusher_stop(area); /* the process that runs it (none with auto alone) */
        iotame_stats_passthrough(NULL, "staging: the node's area or its flusher could not be set up; not staged");
        area = NULL;
        return 0;
    }
    /* aggregator caching somewhere: the remote waits (collective; files then stay with node staging when it fails) */
    if (iotame_config_any(cfg, "staging", "collective", stage_is_aggregators) && stage_remote_start(area, node_rank))
        iotame_stats_passthrough(NULL, "staging: no window on the nodes' rings; collective writes not cached at the "
                                       "aggregators");
    return 1;
}

static double stage_seconds(uint64_t ns) { return (double)ns * 1e-9; }

/* The node's flusher: its counters, the background writes that failed, and the records lost with a writer that died
 * inside its write call (warned about: the data the call was copying never reached the file). */
static json_t *stage_node_report(stage_area_t *a)
{
    const stage_counts_t *c = &a->count;
    const stage_problems_t *pr = &a->problems;
    json_t *failed = json_array(), *lost = json_array();
    for (int i = 0; i < pr->nfailures; i++)
        json_array_append_new(failed, json_pack("{s:s,s:s,s:I}", "path", pr->failure[i].path, "error",
                                                strerror(pr->failure[i].error), "bytes",
                                                (json_int_t)pr->failure[i].bytes));
    for (int i = 0; i < STAGE_FILES; i++)
        if (a->file[i].key && a->file[i].error)
            iotame_log_warn("staging: writing %s failed (%s) and no sync or close returned it\n", a->file[i].path,
                            strerror(a->file[i].error));
    for (int i = 0; i < STAGE_FILES; i++)
        if (a->file[i].key && a->file[i].agg_error)
            iotame_log_warn("staging: writing %s failed (%s) at an aggregator and no sync or close returned it\n",
                            a->file[i].path, strerror(a->file[i].agg_error));
    stage_lost_t log[STAGE_LOST];
    int nlost = stage_lost_records(a, log, STAGE_LOST);
    for (int i = 0; i < nlost && i < STAGE_LOST; i++)
        json_array_append_new(lost, json_pack("{s:s,s:I,s:I,s:i,s:i,s:i}", "path", log[i].path, "bytes",
                                              (json_int_t)log[i].bytes, "records", (json_int_t)log[i].records, "rank",
                                              log[i].world_rank, "node_rank", log[i].node_rank, "pid", log[i].pid));
    int started = __atomic_load_n(&a->flusher, __ATOMIC_ACQUIRE) == STAGE_FLUSHER_RUNNING; /* summed: nodes */
    return json_pack("{s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:I,s:I,s:I,s:I,s:o,s:o}", "started", started,
                     "cache_bytes", (json_int_t)a->cap,
                     "records", (json_int_t)c->records, "runs_in", (json_int_t)c->runs_in, "extents_in",
                     (json_int_t)c->extents_in, "writes_out",
                     (json_int_t)c->writes_out, "bytes_written", (json_int_t)c->bytes_out, "max_dirty_bytes",
                     (json_int_t)c->max_dirty, "flush_seconds", stage_seconds(c->flush_ns), "overlapped_seconds",
                     stage_seconds(c->overlapped_ns), "overlap_batches", (json_int_t)c->overlap_batches,
                     "prefetch_reads", (json_int_t)c->prefetch_reads, "prefetch_bytes_read",
                     (json_int_t)c->prefetch_bytes_read, "lost_bytes", (json_int_t)c->lost_bytes, "failed", failed,
                     "lost", lost);
}

static void stage_finalize(void)
{
    if (!area) return; /* auto without a profile: nothing was staged */
    stage_module_drain(stage_head(area));
    PMPI_Barrier(MPI_COMM_WORLD); /* every process of the node has staged its last write */
    if (stage_remote_ready()) stage_remote_stop();
    json_t *s = iotame_stats_job_section(&iotame_module_stage);
    stage_flusher_stop(area); /* in the process that runs it: the node's first, or with auto alone the first to stage */
    if (!s) return;
    json_t *counts = json_pack("{s:I,s:I,s:f,s:f,s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "calls",
                               (json_int_t)mine.calls, "bytes", (json_int_t)mine.bytes, "blocked_seconds",
                               stage_seconds(mine.blocked_ns), "drain_seconds", stage_seconds(mine.drain_ns),
                               "close_seconds", stage_seconds(mine.close_ns), "reads_waited",
                               (json_int_t)mine.reads_waited, "reads_not_waited", (json_int_t)mine.reads_not_waited,
                               "bypassed", (json_int_t)mine.bypassed, "written_through",
                               (json_int_t)(mine.through_full + mine.through_absorbed), "written_through_full",
                               (json_int_t)mine.through_full, "written_through_absorbed",
                               (json_int_t)mine.through_absorbed, "written_through_bytes",
                               (json_int_t)mine.written_through_bytes, "errors_returned",
                               (json_int_t)mine.errors_returned, "prefetch_hits", (json_int_t)mine.prefetch_hits,
                               "prefetch_misses", (json_int_t)mine.prefetch_misses, "prefetch_bytes",
                               (json_int_t)mine.prefetch_bytes);
    json_object_update(s, counts);
    json_decref(counts);
    if (mine.agg_calls || mine.agg_records || mine.agg_drains) {
        counts = json_pack("{s:I,s:I,s:I,s:I,s:f,s:I}", "aggregated_calls", (json_int_t)mine.agg_calls,
                           "aggregated_records", (json_int_t)mine.agg_records, "aggregated_bytes",
                           (json_int_t)mine.agg_bytes, "agg_waits", (json_int_t)mine.agg_waits, "agg_wait_seconds",
                           stage_seconds(mine.agg_wait_ns), "agg_drains", (json_int_t)mine.agg_drains);
        json_object_update(s, counts);
        json_decref(counts);
    }
    if (node_rank == 0) json_object_set_new(s, "node", stage_node_report(area));
}

/* into[key] += v, for integers and reals alike. */
static void stage_add(json_t *into, const char *key, const json_t *v)
{
    const json_t *was = json_object_get(into, key);
    json_object_set_new(into, key, json_is_integer(v) ? json_integer(json_integer_value(was) + json_integer_value(v))
                                                      : json_real(json_number_value(was) + json_number_value(v)));
}

/* Sums over the ranks, and over the nodes for the flushers' counters; the failed writes and lost records of every
 * node. */
static json_t *stage_job_report(const json_t *ranks)
{
    json_t *out = json_object(), *flusher = json_object(), *failed = json_array(), *lost = json_array(), *r, *v;
    size_t i;
    const char *k;
    json_array_foreach(ranks, i, r) {
        json_object_foreach((json_t *)r, k, v)
            if (json_is_number(v)) stage_add(out, k, v);
        json_object_foreach(json_object_get(r, "node"), k, v) {
            if (json_is_array(v)) json_array_extend(strcmp(k, "lost") == 0 ? lost : failed, v);
            else if (strcmp(k, "cache_bytes") == 0) json_object_set(flusher, k, v); /* per node */
            else stage_add(flusher, k, v);
        }
    }
    json_object_set_new(flusher, "failed", failed);
    json_object_set_new(flusher, "lost", lost);
    json_object_set_new(out, "flusher", flusher);
    return out;
}

const iotame_module_t iotame_module_stage = {
    .name = "stage",
    .settings = "staging",
    .start = stage_start,
    .predicts = stage_predicts,
    .opening = stage_opening,
    .open = stage_open,
    .set_view = stage_set_view,
    .set_atomicity = stage_set_atomicity,
    .serve = stage_serve,
    .sync = stage_sync,
    .close = stage_close,
    .sizing = stage_sizing,
    .finalize = stage_finalize,
    .job_report = stage_job_report,
};
