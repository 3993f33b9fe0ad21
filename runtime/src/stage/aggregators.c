/* Aggregator caching (staging.collective "aggregators" or "auto"; docs/design/aggregator-caching.md): the handle is
 * the block consumer of its collective calls (core/module.h, docs/design/block-consumer.md). Where the collective
 * module binds it (its strategy hands blocks), the aggregators of a collective write put the finished blocks into
 * their node's ring instead of the file, as records of every source rank (its origin), and the call returns; the
 * node's flusher writes them behind. What is decided here: whether a call's blocks are taken (staging.collective
 * auto: the cost model, at the first call that could be cached), who waits for whom (a collective flush, a remote
 * wait for another node's ring), and how the error of a cached block reaches the rank whose data it was (one
 * reduction at sync and close). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handle.h"

/* this process's counters, updated with stage_count from any thread */
static struct {
    uint64_t calls, records, bytes, waits, wait_ns, drains;
} agg_counts;

/* ---- staging's own reasons, and the handle's tables ---- */

const char *stage_agg_early(const stage_settings_t *set, int writes)
{
    if (set->collective == STAGE_COLLECTIVE_NODE) return "staging.collective is node";
    if (!writes) return "writes not staged";
    return NULL;
}

/* After the collective module's reason (the remote waits are set up at MPI_Init on every process or none; `alone`
 * is agreed at the open). */
const char *stage_agg_late(int alone)
{
    if (!stage_remote_ready()) return "no window on the nodes' rings (MPI one-sided communication)";
    if (!alone) return "another open of the file caches its collective writes";
    return NULL;
}

int stage_agg_setup(stage_handle_t *h, MPI_Comm comm)
{
    stage_agg_t *a = &h->agg;
    PMPI_Comm_size(comm, &a->nprocs);
    PMPI_Comm_rank(comm, &a->me);
    a->world_of = malloc((size_t)a->nprocs * sizeof *a->world_of);
    a->end = calloc((size_t)a->nprocs, sizeof *a->end);
    a->errs = malloc((size_t)a->nprocs * sizeof *a->errs);
    int *ranks = malloc((size_t)a->nprocs * sizeof *ranks);
    MPI_Group mine, world;
    int ok = a->world_of && a->end && a->errs && ranks;
    if (ok) {
        for (int r = 0; r < a->nprocs; r++) ranks[r] = r;
        PMPI_Comm_group(comm, &mine);
        PMPI_Comm_group(MPI_COMM_WORLD, &world);
        ok = PMPI_Group_translate_ranks(mine, a->nprocs, ranks, world, a->world_of) == MPI_SUCCESS;
        PMPI_Group_free(&mine);
        PMPI_Group_free(&world);
    }
    free(ranks);
    a->lo = INT64_MAX;
    a->hi = INT64_MIN;
    return ok ? 0 : -1;
}

void stage_agg_free(stage_handle_t *h)
{
    free(h->agg.world_of);
    free(h->agg.end);
    free(h->agg.errs);
}

/* ---- waits ---- */

/* Clears what this rank had to wait for: the ends of the cached records it learnt of (they are written). */
static void stage_agg_waits_clear(stage_handle_t *h)
{
    for (int r = 0; r < h->agg.nprocs; r++) h->agg.end[r] = 0;
    h->agg.lo = INT64_MAX;
    h->agg.hi = INT64_MIN;
}

/* Waits (this rank alone) until every cached record of the handle it learnt of is written: its own node's by a
 * drain, another node's through the tail that node exposes. */
int stage_agg_wait(stage_handle_t *h)
{
    stage_agg_t *a = &h->agg;
    const uint64_t t0 = iotame_monotonic_ns();
    int rc = MPI_SUCCESS, waited = 0;
    for (int r = 0; r < a->nprocs && rc == MPI_SUCCESS; r++) {
        if (!a->end[r]) continue;
        const int w = a->world_of[r];
        if (stage_remote_local(w)) stage_drain_step(stage_process.area, a->end[r], STAGE_AGG_STEP);
        else if (stage_remote_wait(w, a->end[r]) != 0) rc = MPI_ERR_IO;
        if (rc == MPI_SUCCESS) a->end[r] = 0;
        waited = 1;
    }
    if (rc == MPI_SUCCESS) stage_agg_waits_clear(h);
    if (waited) {
        stage_count(&agg_counts.waits, 1);
        stage_count(&agg_counts.wait_ns, iotame_monotonic_ns() - t0);
    }
    return rc;
}

/* Each rank waits for its own node's flusher, which holds the records of the node's aggregators; the barrier then
 * tells every rank that every node's are written. */
void stage_agg_flush(stage_handle_t *h)
{
    if (!h->agg.dirty) return;
    stage_drain_counted_step(stage_head(stage_process.area), STAGE_AGG_STEP);
    PMPI_Barrier(h->comm);
    h->agg.dirty = 0;
    stage_agg_waits_clear(h);
    stage_count(&agg_counts.drains, 1);
}

/* ---- the statistics of the decision ---- */

/* The file's "stage" statistics: whether its collective writes are cached at the aggregators, and why not. */
void stage_agg_note(iotame_file_stats_t *fs, const char *why)
{
    json_t *s = iotame_stats_section(fs, &iotame_module_stage);
    if (!s) return;
    json_object_set_new(s, "collective", json_string(why ? "node" : "aggregators"));
    if (why) json_object_set_new(s, "collective_reason", json_string(why));
    else json_object_del(s, "collective_reason");
}

/* ---- staging.collective auto ---- */

/* The cost model's decision at the handle's first call that could be cached (docs/design/aggregator-caching.md,
 * section 6): from the call's facts and the machine profile of the file's file system, cached where the time in the
 * end (what the application sees and the flushers' device time behind it) is below node staging's by more than the
 * model's error. The profile is the file record's, which every rank found, and the facts are every rank's alike, so
 * every rank decides alike without a collective. Without a profile the writes stay with node staging. */
static void stage_agg_decide(stage_handle_t *h, const iotame_block_call_t *call)
{
    const iotame_profile_found_t *found = h->agg.profile ? h->agg.profile->found : NULL; /* agreed at the open */
    double node = 0, cached = 0;
    int pays = 0;
    if (found) {
        const iotame_model_call_t mc = {.write = 1,
                                        .nprocs = call->nprocs,
                                        .nodes = call->nodes,
                                        .bytes = call->bytes,
                                        .pieces = call->pieces,
                                        .interleaved = call->interleaved,
                                        .block_size = call->block_size};
        pays = iotame_model_cache_pays(&found->profile, &mc, call->model_error, &node, &cached);
    }
    const int decision = found && pays;
    char why[160];
    if (!found)
        snprintf(why, sizeof why, "%s", h->agg.profile && h->agg.profile->differs
                                            ? "the ranks found different machine profiles"
                                            : "no machine profile");
    else
        snprintf(why, sizeof why, "the model: %.3g s cached, %.3g s node staging (application and device)", cached,
                 node);
    h->agg.undecided = 0;
    if (h->agg.on && !decision) /* no longer caching: another open of the file on the node may */
        __atomic_sub_fetch(&stage_process.area->file[h->file].agg_users, 1, __ATOMIC_ACQ_REL);
    h->agg.on = decision; /* not cached: the handle's collective writes are staged per node from the next call on */
    json_t *s = iotame_stats_section(h->fs, &iotame_module_stage);
    if (!s) return;
    json_object_set_new(s, "collective", json_string(decision ? "aggregators" : "node"));
    json_object_set_new(s, "collective_reason", json_string(why));
}

/* ---- the block consumer (core/module.h) ---- */

static void stage_agg_bind(void *arg, const char *why)
{
    stage_handle_t *h = arg;
    if (!why) why = h->agg.refused;
    if (!why) {
        h->agg.on = 1;
        h->agg.undecided = h->set.collective == STAGE_COLLECTIVE_AUTO;
        __atomic_add_fetch(&stage_process.area->file[h->file].agg_users, 1, __ATOMIC_ACQ_REL);
    }
    stage_agg_note(h->fs, why);
}

static int stage_agg_take(void *arg, const iotame_block_call_t *call)
{
    stage_handle_t *h = arg;
    if (h->agg.undecided) {
        if (!call->write || call->bytes <= 0) return 0;
        stage_agg_decide(h, call);
    }
    if (!h->agg.on) return 0;
    if (call->bytes > 0) { /* cached blocks stay in their aggregator's ring: a new block map waits for them first */
        if (h->agg.unit && (h->agg.unit != call->block_size || h->agg.nagg != call->aggregators)) stage_agg_flush(h);
        h->agg.unit = call->block_size;
        h->agg.nagg = call->aggregators;
    }
    return 1;
}

static void stage_agg_consumer_flush(void *arg) { stage_agg_flush(arg); }

static uint64_t stage_agg_put(void *arg, int origin, const iotame_run_t *runs, size_t nruns, const char *data)
{
    stage_handle_t *h = arg;
    uint64_t bytes = 0;
    for (size_t i = 0; i < nruns; i++) bytes += (uint64_t)(runs[i].len * runs[i].count);
    stage_data_t d = {NULL, data, (int64_t)bytes};
    const stage_source_t src = {stage_fill, &d};
    uint64_t blocked = 0;
    h->agg.own_end = stage_put(stage_process.area, h->file, stage_process.node_rank, h->agg.world_of[origin], runs,
                               nruns, &src, stage_process.flush.threshold, &blocked);
    stage_node_blocked(blocked);
    stage_count(&agg_counts.records, 1);
    stage_count(&agg_counts.bytes, bytes);
    return h->agg.own_end;
}

static void stage_agg_staged(void *arg, const int64_t *end, int64_t lo, int64_t hi)
{
    stage_agg_t *a = &((stage_handle_t *)arg)->agg;
    a->dirty = a->unreported = 1;
    for (int r = 0; r < a->nprocs; r++)
        if ((uint64_t)end[r] > a->end[r]) a->end[r] = (uint64_t)end[r];
    if (hi > lo) {
        if (lo < a->lo) a->lo = lo;
        if (hi > a->hi) a->hi = hi;
    }
    stage_count(&agg_counts.calls, 1);
}

/* An aggregator reads its own blocks: its cached records are written first (those of the blocks it reads are
 * its own: blocks map to aggregators alike for reads and writes). */
static void stage_agg_read_ready(void *arg, int64_t lo, int64_t hi)
{
    const stage_handle_t *h = arg;
    (void)lo, (void)hi;
    if (h->agg.own_end && __atomic_load_n(&stage_process.area->tail, __ATOMIC_ACQUIRE) < h->agg.own_end)
        stage_drain_counted_step(h->agg.own_end, STAGE_AGG_STEP);
}

static const iotame_block_consumer_t stage_agg_consumer = {
    .bind = stage_agg_bind,
    .take = stage_agg_take,
    .flush = stage_agg_consumer_flush,
    .put = stage_agg_put,
    .staged = stage_agg_staged,
    .read_ready = stage_agg_read_ready,
};

void stage_agg_offer(stage_handle_t *h, iotame_file_t *record)
{
    h->agg.profile = &record->profile;
    record->consumer = &stage_agg_consumer;
    record->consumer_arg = h;
    /* until the collective module binds it (it does not where it routes no file) */
    stage_agg_note(h->fs, h->agg.refused ? h->agg.refused : "no collective strategy hands the file's blocks");
}

void stage_agg_close(stage_handle_t *h, iotame_file_t *record)
{
    if (h->agg.on) __atomic_sub_fetch(&stage_process.area->file[h->file].agg_users, 1, __ATOMIC_ACQ_REL);
    record->consumer = NULL;
    record->consumer_arg = NULL;
    stage_agg_free(h);
}

/* ---- errors, and the calls that are not handed over ---- */

/* At sync and close (collective): the errors of cached records are carried to the ranks whose data they were, in
 * one reduction over the file's ranks (which is also the barrier after the drain). The node's error word is taken
 * by the first of its processes; the others add nothing. Returns this rank's errno, 0 when none. */
static int stage_agg_errors(stage_handle_t *h)
{
    stage_agg_t *a = &h->agg;
    if (!a->unreported) return 0;
    uint64_t origins[STAGE_ORIGIN_WORDS];
    int every = 0;
    const int err = stage_take_agg_error(stage_process.area, h->file, origins, &every);
    for (int r = 0; r < a->nprocs; r++) {
        const int w = a->world_of[r];
        a->errs[r] = err && (every || (w < STAGE_ORIGIN_WORDS * 64 && (origins[w / 64] >> (w % 64) & 1))) ? err : 0;
    }
    PMPI_Allreduce(MPI_IN_PLACE, a->errs, a->nprocs, MPI_INT32_T, MPI_MAX, h->comm);
    a->dirty = a->unreported = 0;
    stage_agg_waits_clear(h);
    stage_count(&agg_counts.drains, 1);
    return a->errs[a->me];
}

/* rc (the node-level error, already through the error handler), else the error of this rank's cached data, through
 * the file's error handler. */
int stage_agg_returned(stage_handle_t *h, int rc)
{
    const int err = stage_agg_errors(h);
    if (rc != MPI_SUCCESS || !err) return rc;
    return stage_error_raise(h, err);
}

/* A collective form (split, nonblocking, ordered) flushes every rank's cached data; an independent access that meets
 * this rank's own cached data (or cannot be mapped) waits for it. */
int stage_agg_before(stage_handle_t *h, const iotame_io_t *io)
{
    const int ordered = io->op == IOTAME_OP_write_ordered || io->op == IOTAME_OP_read_ordered ||
                        io->op == IOTAME_OP_write_ordered_begin || io->op == IOTAME_OP_read_ordered_begin;
    if (io->kind == IOTAME_IO_SPLIT || io->kind == IOTAME_IO_NONBLOCKING_COLLECTIVE || ordered) {
        stage_agg_flush(h);
        return MPI_SUCCESS;
    }
    if (h->agg.hi <= h->agg.lo) return MPI_SUCCESS;
    int64_t nbytes = 0, lo = 0, end = 0;
    MPI_Offset pos = 0;
    /* a shared file pointer's position is not the individual one stage_map_call reads: such a call waits */
    if (io->kind != IOTAME_IO_SHARED && h->view.ok && !stage_map_call(h, io, &nbytes, &pos)) {
        stage_runs_range(&lo, &end);
        if (end <= h->agg.lo || lo >= h->agg.hi) return MPI_SUCCESS;
    }
    return stage_agg_wait(h);
}

void stage_agg_report(json_t *s)
{
    if (!agg_counts.calls && !agg_counts.records && !agg_counts.drains) return;
    json_t *counts = json_pack("{s:I,s:I,s:I,s:I,s:f,s:I}", "aggregated_calls", (json_int_t)agg_counts.calls,
                               "aggregated_records", (json_int_t)agg_counts.records, "aggregated_bytes",
                               (json_int_t)agg_counts.bytes, "agg_waits", (json_int_t)agg_counts.waits,
                               "agg_wait_seconds", stage_seconds(agg_counts.wait_ns), "agg_drains",
                               (json_int_t)agg_counts.drains);
    json_object_update(s, counts);
    json_decref(counts);
}
