/* The stage module at the MPI-IO layer: which calls are staged, MPI-IO's semantics around them, and the statistics.
 * The concerns are each in a file of their own (handle.h): node staging (node.c), write-through (through.c),
 * aggregator caching (aggregators.c) and prefetch (prefetch.c); this file holds the module's hooks. What keeps the
 * semantics:
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
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "handle.h"
#include "posix/posix.h"

stage_process_t stage_process;
static pthread_mutex_t stage_serve_lock = PTHREAD_MUTEX_INITIALIZER; /* the data path's turns (stage_serve) */

/* this process's counters, updated with stage_count from any thread */
static struct {
    uint64_t drain_ns, close_ns, errors_returned;
} module_counts;

/* The module's state of a handle, or NULL when the handle is not staged. */
static stage_handle_t *stage_handle(iotame_file_t *f) { return *iotame_file_slot(f, &iotame_module_stage); }

int stage_error_class(int err)
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

int stage_error_raise(stage_handle_t *h, int err)
{
    stage_count(&module_counts.errors_returned, 1);
    const int code = stage_error_class(err);
    PMPI_File_call_errhandler(h->fh, code);
    return code;
}

/* This process's pending background error of h's file, through the file's error handler; MPI_SUCCESS when none. */
static int stage_module_return_error(stage_handle_t *h)
{
    int err = stage_take_error(stage_process.area, h->file, stage_process.node_rank);
    return err ? stage_error_raise(h, err) : MPI_SUCCESS;
}

void stage_drain_counted(uint64_t upto) { stage_count(&module_counts.drain_ns, stage_drain(stage_process.area, upto)); }
void stage_drain_counted_step(uint64_t upto, const char *step)
{
    stage_count(&module_counts.drain_ns, stage_drain_step(stage_process.area, upto, step));
}

/* ---- open and close ---- */

/* An open of a file whose staged data (of a closed handle, with sync_on_close false) is not written yet waits. */
static void stage_opening(const iotame_open_t *o)
{
    stage_area_t *area = stage_process.area;
    struct stat st;
    if (!area || __atomic_load_n(&area->tail, __ATOMIC_ACQUIRE) == __atomic_load_n(&area->head, __ATOMIC_ACQUIRE))
        return;
    if (stat(iotame_posix_path(o->path), &st) != 0) return;
    stage_lock(area);
    int i = stage_file_find(area, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
    uint64_t head = area->head;
    int pending = i >= 0 && area->file[i].pending;
    stage_unlock(area);
    if (pending) stage_drain_counted(head);
}

/* staging.enabled "auto" decides per file from the machine profile, and so does staging.collective "auto". */
static int stage_predicts(const iotame_file_config_t *fc)
{
    stage_settings_t set;
    stage_settings_read(fc, &set);
    return set.enabled == STAGE_ENABLED_AUTO || set.collective == STAGE_COLLECTIVE_AUTO;
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
static void stage_module_note(iotame_file_stats_t *fs, stage_enabled_t enabled, int on, const char *why,
                              const char *profile)
{
    json_t *s = iotame_stats_section(fs, &iotame_module_stage);
    if (!s) return;
    json_object_set_new(s, "enabled", stage_settings_enabled_json(enabled));
    json_object_set_new(s, "writes", json_string(on ? "staged" : "not staged"));
    json_object_set_new(s, "reason", json_string(why));
    json_object_set_new(s, "profile", *profile ? json_string(profile) : json_null());
}

/* Staging "auto" alone: the node's flusher starts with the first file a process of the node stages, and that process
 * runs it, so that jobs auto leaves unstaged pay for no thread (a process with a thread of its own updates its
 * statistics atomically). The process marks itself threaded before the thread exists. Another process waits for
 * the start, for a bounded time (the starter may have been killed). Returns whether the flusher runs. */
static int stage_module_flusher_ensure(void)
{
    int32_t none = STAGE_FLUSHER_NONE;
    if (__atomic_compare_exchange_n(&stage_process.area->flusher, &none, STAGE_FLUSHER_STARTING, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        iotame_core_threads_started();
        int ok = stage_flusher_start(stage_process.area, &stage_process.flush) == 0;
        __atomic_store_n(&stage_process.area->flusher, ok ? STAGE_FLUSHER_RUNNING : STAGE_FLUSHER_FAILED,
                         __ATOMIC_RELEASE);
        return ok;
    }
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int32_t state;
    while ((state = __atomic_load_n(&stage_process.area->flusher, __ATOMIC_ACQUIRE)) == STAGE_FLUSHER_STARTING) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 2) return 0;
        sched_yield();
    }
    return state == STAGE_FLUSHER_RUNNING;
}

/* The handle's state, with its own communicator and, when its collective writes may be cached, aggregator caching's
 * tables; NULL when they cannot be had. */
static stage_handle_t *stage_module_new(MPI_Comm comm, int cached)
{
    stage_handle_t *h = calloc(1, sizeof *h);
    if (h && PMPI_Comm_dup(comm, &h->comm) != MPI_SUCCESS) {
        free(h);
        return NULL;
    }
    if (h && cached && stage_agg_setup(h, comm) != 0) {
        stage_agg_free(h);
        PMPI_Comm_free(&h->comm);
        free(h);
        return NULL;
    }
    return h;
}

/* Whether a message of the runtime's own failed in this open so far (core.h), and then its reason into *why when
 * none is there: the file's set-up folds it into its next agreement, and every rank passes the file through. The
 * last agreement's own failure on one rank only cannot be learnt by the others without another message: that rank
 * trusts the values it received (the collective module's agreement, next, still passes its routing through). */
static int stage_lost_message(const char **why)
{
    const int cls = iotame_msg_error_class(iotame_msg_error_peek());
    if (cls && !*why) *why = iotame_msg_setup_reason(cls);
    return cls;
}

static void stage_open(const iotame_open_t *o)
{
    stage_settings_t set;
    stage_settings_read(o->fc, &set);
    if (!o->fc || (set.enabled == STAGE_ENABLED_OFF && !set.prefetch))
        return; /* the same on every rank (one configuration): no agreement needed */
    stage_area_t *area = stage_process.area;
    const int writing = !(o->amode & MPI_MODE_RDONLY);
    if (!area) { /* auto, and no profile anywhere (stage_start) */
        if (writing) stage_module_note(o->fs, set.enabled, 0, "no profile", "");
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
    int writes = writing && set.enabled == STAGE_ENABLED_ON;
    if (writing && set.enabled == STAGE_ENABLED_AUTO)
        writes = stage_auto_decide(found ? &found->profile : NULL, area->cap, &decided);
    if (writes && stage_process.flusher_lazy && !stage_module_flusher_ensure()) {
        writes = 0;
        decided = "the node's flusher could not be started";
    }
    /* another open of the file caching on this node would share the node's error word of the file (stage.h) */
    const int alone = file < 0 || !__atomic_load_n(&area->file[file].agg_users, __ATOMIC_ACQUIRE);
    int lost = stage_lost_message(&why);
    int mine[3] = {file >= 0 && !lost, writes, alone}, all[3] = {0, 0, 0};
    PMPI_Allreduce(mine, all, 3, MPI_INT, MPI_MIN, o->comm);
    lost = stage_lost_message(&why); /* this agreement's own message too: folded into the next one */
    if (writes && !all[1]) decided = "another rank decided not to stage";
    const int noted = set.enabled != STAGE_ENABLED_OFF && writing;
    if (all[0] && !all[1] && !set.prefetch) {
        stage_file_release(area, file); /* nothing to do for the handle: its calls go to the library untouched */
        if (noted) stage_module_note(o->fs, set.enabled, 0, decided, profile);
        if (lost) iotame_stats_passthrough(o->fs, why);
        return;
    }
    /* aggregator caching: staging's own reasons not to cache, before and after the collective module's (bind) */
    const char *early = stage_agg_early(&set, all[1]), *late = early ? NULL : stage_agg_late(all[2]);
    stage_handle_t *h = all[0] ? stage_module_new(o->comm, !early && !late) : NULL;
    lost = stage_lost_message(&why);
    int have = h != NULL && !lost, every = 0;
    PMPI_Allreduce(&have, &every, 1, MPI_INT, MPI_MIN, o->comm);
    if (!every) {
        if (h) stage_agg_free(h), PMPI_Comm_free(&h->comm), free(h);
        if (file >= 0) stage_file_release(area, file);
        iotame_stats_passthrough(o->fs, why        ? why
                                        : all[0] ? "out of memory (staging)"
                                                 : "another rank cannot stage the file");
        return;
    }
    if (noted) stage_module_note(o->fs, set.enabled, all[1], decided, profile);
    h->fh = o->fh;
    h->fs = o->fs;
    h->file = file;
    h->amode = o->amode;
    h->set = set;
    h->own.writes = all[1];
    h->own.pend_lo = INT64_MAX;
    h->own.pend_hi = INT64_MIN;
    h->ahead.next_read = -1;
    h->ahead.slot[0] = h->ahead.slot[1] = -1;
    h->agg.refused = late;
    stage_through_open(h, real, found ? &found->profile : NULL);
    stage_view_set(h, 0, MPI_BYTE, MPI_BYTE, "native");
    *iotame_file_slot(o->file, &iotame_module_stage) = h;
    if (!early) stage_agg_offer(h, o->file); /* bound by the collective module */
    else if (noted && set.collective != STAGE_COLLECTIVE_NODE) stage_agg_note(o->fs, early);
}

static void stage_set_view(iotame_file_t *f, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                           const char *datarep)
{
    stage_handle_t *h = stage_handle(f);
    if (h) stage_view_set(h, disp, etype, filetype, datarep);
}

static void stage_set_atomicity(iotame_file_t *f, int flag)
{
    stage_handle_t *h = stage_handle(f);
    if (!h) return;
    h->atomic = flag;
    if (flag) stage_own_data_written(h);
    if (flag && h->agg.on) stage_agg_flush(h); /* collective, as MPI_File_set_atomicity */
}

/* MPI_File_sync makes the process's writes durable. Its staged data reached the file through the flusher's own
 * descriptors, which the library's sync does not cover (ROMIO syncs only a handle it wrote through), so a writable
 * handle syncs the file itself; a failed fsync is the sync's error (the errno's class, through the handler). */
static int stage_sync_durable(stage_handle_t *h)
{
    if (h->amode & MPI_MODE_RDONLY) return MPI_SUCCESS;
    int fd = open(stage_process.area->file[h->file].path, O_WRONLY | O_CLOEXEC), err = fd < 0 ? errno : 0;
    if (fd >= 0 && fsync(fd) != 0) err = errno;
    if (fd >= 0) close(fd);
    return err ? stage_error_raise(h, err) : MPI_SUCCESS;
}

static int stage_sync(iotame_file_t *f)
{
    stage_handle_t *h = stage_handle(f);
    if (!h) return MPI_SUCCESS;
    if (h->agg.on) stage_drain_counted_step(stage_head(stage_process.area), STAGE_AGG_STEP);
    else stage_drain_counted(stage_head(stage_process.area));
    stage_prefetch_release(h); /* after a sync, other processes' writes may have changed what was read ahead */
    int rc = stage_module_return_error(h);
    if (rc == MPI_SUCCESS) rc = stage_sync_durable(h);
    return stage_agg_returned(h, rc);
}

static int stage_close(iotame_file_t *f)
{
    stage_handle_t *h = stage_handle(f);
    if (!h) return MPI_SUCCESS;
    uint64_t t0 = iotame_monotonic_ns();
    /* cached data never outlives the handle: another rank could not be told of its failure */
    if (h->set.sync_on_close || h->agg.unreported)
        stage_drain_counted_step(stage_head(stage_process.area),
                                 h->agg.on ? STAGE_AGG_STEP : "waiting for the flusher (drain)");
    int rc = stage_agg_returned(h, stage_module_return_error(h));
    stage_count(&module_counts.close_ns, iotame_monotonic_ns() - t0);
    stage_prefetch_release(h);
    stage_agg_close(h, f);
    stage_file_release(stage_process.area, h->file);
    *iotame_file_slot(f, &iotame_module_stage) = NULL;
    stage_view_free(h);
    PMPI_Comm_free(&h->comm);
    stage_through_close(h);
    free(h);
    return rc;
}

static void stage_sizing(iotame_file_t *f)
{
    stage_handle_t *h = stage_handle(f);
    if (!h) return;
    stage_drain_counted(stage_head(stage_process.area));
    if (h->agg.on) stage_agg_wait(h); /* MPI's own failure shows in the size call that follows */
}

/* ---- the data path ---- */

static int stage_serve_call(stage_handle_t *h, const iotame_io_t *io, int *rc)
{
    if (h->agg.on && io->kind == IOTAME_IO_COLLECTIVE && io->write) {
        /* the collective module hands its blocks (aggregators.c): this process's staged data first, as for a write
         * that is not staged */
        stage_own_data_written(h);
        return 0;
    }
    if (h->agg.on && io->kind != IOTAME_IO_COLLECTIVE && (*rc = stage_agg_before(h, io)) != MPI_SUCCESS) {
        PMPI_File_call_errhandler(h->fh, *rc);
        return 1;
    }
    if (io->write && h->own.writes) return stage_node_write(h, io, rc);
    if (io->write) { /* the library writes: what this process read ahead may be stale */
        if (stage_prefetch_held(h)) stage_prefetch_release(h);
        return 0;
    }
    stage_node_read(h, io); /* a read sees this process's writes: those it meets are written first */
    return h->set.prefetch && !h->atomic ? stage_prefetch_read(h, io, rc) : 0;
}

/* Under MPI_THREAD_MULTIPLE the application's threads take turns here (the call's runs and the packing buffer are
 * the process's: node.c); a thread waiting for room in the ring holds the others back, as a full cache would. */
static int stage_serve(const iotame_io_t *io, int *rc)
{
    stage_handle_t *h = stage_handle(io->file);
    if (!h) return 0;
    if (!stage_process.app_threaded) return stage_serve_call(h, io, rc);
    pthread_mutex_lock(&stage_serve_lock);
    int served = stage_serve_call(h, io, rc);
    pthread_mutex_unlock(&stage_serve_lock);
    return served;
}

/* ---- start and finalize ---- */

static int stage_start(const iotame_config_t *cfg)
{
    if (!cfg) return 0;
    /* whether some file stages writes or prefetches: the same on every rank (one configuration) */
    stage_job_settings_t js;
    stage_settings_job(cfg, &js);
    if (!js.any_on && !js.any_prefetch) return 0;
    if (!js.any_true && !js.any_prefetch) {
        /* only "auto": without any profile to find, no file will stage, and the area is not set up (each file's
         * open still records its decision); the ranks agree, since the area's mapping is collective */
        int may = iotame_profile_may_exist(cfg);
        int all = 0;
        PMPI_Allreduce(&may, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (!all) return 1;
    }
    stage_process_t *p = &stage_process;
    p->app_threaded = iotame_core_app_threaded();
    uint64_t cap = js.cache_bytes;
    uint64_t ahead = js.any_prefetch ? js.prefetch_bytes : 0;
    if (ahead > cap / 4 / STAGE_PREFETCH_SLOTS) ahead = cap / 4 / STAGE_PREFETCH_SLOTS; /* within the cap */
    p->area = stage_area_map(cap - ahead * STAGE_PREFETCH_SLOTS, ahead, &p->node_rank);
    int ok = p->area != NULL;
    p->flush = (stage_flush_knobs_t){js.threshold, (uint64_t)(js.flush_delay_ms * 1e6)};
    p->flusher_lazy = !js.any_true && !js.any_prefetch;
    if (p->area && !p->flusher_lazy) {
        iotame_core_threads_started(); /* the flusher's POSIX requests run beside the application's */
        if (p->node_rank == 0) {
            ok = stage_flusher_start(p->area, &p->flush) == 0;
            p->area->flusher = ok ? STAGE_FLUSHER_RUNNING : STAGE_FLUSHER_FAILED;
        }
    }
    int all = 0;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        if (p->area) stage_flusher_stop(p->area); /* the process that runs it (none with auto alone) */
        iotame_stats_passthrough(NULL, "staging: the node's area or its flusher could not be set up; not staged");
        p->area = NULL;
        return 0;
    }
    /* aggregator caching somewhere: the remote waits (collective; files then stay with node staging when it fails) */
    if (js.any_aggregators && stage_remote_start(p->area, p->node_rank))
        iotame_stats_passthrough(NULL, "staging: no window on the nodes' rings; collective writes not cached at the "
                                       "aggregators");
    return 1;
}

/* The node's flusher: its counters, the background writes that failed, and the records lost with a writer that died
 * inside its write call (warned about: the data the call was copying never reached the file). */
static json_t *stage_module_flusher_report(stage_area_t *a)
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
    stage_area_t *area = stage_process.area;
    if (!area) return; /* auto without a profile: nothing was staged */
    stage_drain_counted(stage_head(area));
    PMPI_Barrier(MPI_COMM_WORLD); /* every process of the node has staged its last write */
    if (stage_remote_ready()) stage_remote_stop();
    json_t *s = iotame_stats_job_section(&iotame_module_stage);
    stage_flusher_stop(area); /* in the process that runs it: the node's first, or with auto alone the first to stage */
    if (!s) return;
    stage_node_report(s);
    json_t *counts = json_pack("{s:f,s:f,s:I}", "drain_seconds", stage_seconds(module_counts.drain_ns),
                               "close_seconds", stage_seconds(module_counts.close_ns), "errors_returned",
                               (json_int_t)module_counts.errors_returned);
    json_object_update(s, counts);
    json_decref(counts);
    stage_through_report(s);
    stage_prefetch_report(s);
    stage_agg_report(s);
    if (stage_process.node_rank == 0) json_object_set_new(s, "node", stage_module_flusher_report(area));
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
