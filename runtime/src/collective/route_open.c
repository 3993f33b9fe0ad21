/* The collective module's open (route.h's record of a handle): the settings, and one agreement inside the
 * application's collective open (docs/design/open-agreement.md). route.c serves the handle's calls. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "posix/posix.h"
#include "route.h"

/* ---- open (collective): the settings, one agreement ---- */

void iotame__coll_route_free(iotame_coll_file_t *f)
{
    for (int s = 0; s < iotame_nstrategies; s++)
        if (f->state[s] && iotame_strategies[s]->close) iotame_strategies[s]->close(f->state[s]);
    iotame__coll_env_free(&f->env);
    iotame__coll_view_release(&f->view);
    iotame_extents_free(&f->call.ext);
    free(f->call.info);
    free(f->ends);
    free(f->call.pack);
    free(f->path);
    free(f);
}

/* The engine's set-up tells every strategy of the handle the shared facts it found (strategy.h, "environment"). */
static void route_environment(const iotame_coll_env_t *e, void *arg)
{
    iotame_coll_file_t *f = arg;
    for (int s = 0; s < iotame_nstrategies; s++)
        if (iotame_strategies[s]->environment) iotame_strategies[s]->environment(e, f->state[s]);
}

/* Every strategy's state of the handle, from its own options; 0, or why the handle cannot be routed. */
static const char *route_open_strategies(iotame_coll_file_t *f, const iotame_file_config_t *fc)
{
    for (int s = 0; s < iotame_nstrategies; s++) {
        const iotame_strategy_t *st = iotame_strategies[s];
        const iotame_coll_options_t o = {fc, st->options};
        const int rc = st->open ? st->open(&o, &f->state[s]) : 0;
        if (rc) return rc == -EINVAL ? "a strategy refused its options" : "out of memory (collective routing)";
    }
    return NULL;
}

/* The handle's state; NULL when something could not be allocated (*why: the reason, when another than that). A
 * native strategy fixed for the file serves every call itself: no per-call buffers. */
static iotame_coll_file_t *route_new(MPI_File fh, MPI_Comm comm, int amode, const iotame_coll_settings_t *set,
                                     const iotame_file_config_t *fc, iotame_file_stats_t *fs,
                                     const iotame_file_t *file, const char **why)
{
    iotame_coll_file_t *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->fh = fh;
    f->fs = fs;
    f->amode = amode;
    f->st = set->strategy;
    f->ch = set->chooser;
    f->fixed = f->st ? f->st->number : -1;
    iotame_coll_env_t *e = &f->env;
    e->comm = MPI_COMM_NULL;
    e->shadow = MPI_FILE_NULL;
    f->later.req = MPI_REQUEST_NULL;
    PMPI_Comm_rank(comm, &e->rank);
    PMPI_Comm_size(comm, &e->nprocs);
    f->view.etype = f->view.filetype = MPI_DATATYPE_NULL;
    iotame__coll_view_set(&f->view, 0, MPI_BYTE, MPI_BYTE, 1);
    iotame__coll_env_options(e, fc);
    e->set_up = route_environment;
    e->set_up_arg = f;
    e->fh = fh;
    e->amode = amode;
    e->path = f->path = strdup(iotame_stats_path(fs));
    int ok = f->path != NULL;
    const char *refused = ok ? route_open_strategies(f, fc) : NULL;
    ok &= refused == NULL;
    if (!f->st || !f->st->native)
        ok &= (f->call.info = malloc((size_t)e->nprocs * IOTAME_INFO_FIELDS * sizeof *f->call.info)) != NULL;
    f->model_error = set->model_error;
    if (file->consumer && set->strategy && set->strategy->blocks) /* bound once the open agreed (route_bind) */
        ok &= (f->ends = malloc(((size_t)e->nprocs + 2) * sizeof *f->ends)) != NULL;
    if (!ok) {
        *why = refused;
        iotame__coll_route_free(f);
        return NULL;
    }
    return f;
}

/* The names of the strategies that hand blocks, as the reason a consumer is refused otherwise. */
static const char *route_blocks_refusal(char *why, size_t size)
{
    size_t n = (size_t)snprintf(why, size, "collective.strategy is not");
    for (int s = 0, first = 1; s < iotame_nstrategies && n < size; s++)
        if (iotame_strategies[s]->blocks) {
            n += (size_t)snprintf(why + n, size - n, "%s %s", first ? "" : " or", iotame_strategies[s]->name);
            first = 0;
        }
    return why;
}

/* The block consumer the handle's record names (core/module.h) is told, every rank alike, whether its blocks will be
 * handed (f: the handle is routed, NULL: it is not, `why`). */
static void route_bind(const iotame_open_t *o, iotame_coll_file_t *f, const char *why)
{
    const iotame_block_consumer_t *consumer = o->file ? o->file->consumer : NULL;
    if (!consumer) return;
    char refusal[160];
    if (f && !(f->st && f->st->blocks)) why = route_blocks_refusal(refusal, sizeof refusal);
    if (f && !why) {
        f->consumer = consumer;
        f->consumer_arg = o->file->consumer_arg;
    }
    consumer->bind(o->file->consumer_arg, f && !why ? NULL : why);
}

/* The reason every rank counts when the open passes the handle through: a lost set-up message's, else this rank's. */
static const char *route_open_refusal(int lost, const char *refused)
{
    if (lost) return iotame_msg_setup_reason(lost);
    return refused ? refused : "a rank could not set up collective routing (out of memory, or no communicator)";
}

/* A message of the runtime's own lost on this rank after the open's agreement (the agreement itself, the duplicate,
 * a chooser's `agreed`): the other ranks, which may have agreed on routing, cannot learn it without another message,
 * and a rank that went to the library alone would leave them waiting in the router's gather. So the rank stays in
 * step and declines every gathered call (FLAG_CANNOT): every rank then hands each of them to the library. */
static void route_open_unsure(iotame_coll_file_t *f)
{
    const int cls = iotame_msg_error_class(iotame_msg_error_peek());
    if (!cls || f->lost) return;
    f->lost = iotame_msg_setup_reason(cls);
    iotame_stats_passthrough(f->fs, f->lost);
}

/* The fields of the open's one reduction (MPI_MAX over the ranks): LOCAL to FROM are rank 0's facts of the file, the
 * others give zeros; a choosing strategy's part follows CHOICE. */
enum route_open_field { FAILED, LOST, LOCAL, UFS, READAHEAD_KB, BLOCK, TARGETS, UNIT, FROM, CHOICE,
                        FIELDS = CHOICE + IOTAME_COLL_AGREE };

/* Rank 0's facts of the file into its fields of the agreement. A stripe unit beyond an int: one target. */
static void route_open_facts(const char *path, int romio, int mine[FIELDS])
{
    iotame_coll_file_facts_t x;
    iotame_coll_file_facts(path, romio, &x);
    const int carried = x.unit <= INT_MAX;
    mine[LOCAL] = x.local_fs;
    mine[UFS] = x.shadow_ufs;
    mine[READAHEAD_KB] = x.readahead >> 10 <= INT_MAX ? (int)(x.readahead >> 10) : 0;
    mine[BLOCK] = x.block <= INT_MAX ? (int)x.block : 0;
    mine[TARGETS] = carried ? (int)x.targets : 1;
    mine[UNIT] = carried ? (int)x.unit : 0;
    mine[FROM] = carried ? x.from : 0;
}

/* The open agrees on everything in one reduction, inside the application's collective open (docs/design/
 * open-agreement.md): whether every rank could set the handle up (its core record included), whether a message of
 * the runtime's own failed in the open so far (core.h: the profile's, staging's), what rank 0 read of the file
 * (iotame_coll_file_facts; the others give zeros to the maximum), and a choosing strategy's part. A rank that
 * cannot route says so, and then no rank routes the handle. A native strategy fixed for the file needs no
 * communicator of ours; the others duplicate it without blocking, to complete during the reduction. The settings come from o->fc, which every rank has (its record, maybe not). */
void iotame__coll_open(const iotame_open_t *o)
{
    iotame_coll_settings_t set;
    if (!o->fc || !iotame__coll_settings(o->fc, &set)) { /* the library's own collective I/O: nothing to do */
        char refusal[160];
        route_bind(o, NULL, route_blocks_refusal(refusal, sizeof refusal));
        return;
    }
    const MPI_File fh = o->fh;
    const MPI_Comm comm = o->comm;
    iotame_file_stats_t *fs = o->fs;
    const iotame_chooser_t *ch = set.chooser;
    const int native = set.strategy && set.strategy->native;
    int rank, nprocs;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &nprocs);
    MPI_Comm own = MPI_COMM_NULL; /* ours: the application may free its own after the open */
    MPI_Request dup = MPI_REQUEST_NULL;
    int ok = native || PMPI_Comm_idup(comm, &own, &dup) == MPI_SUCCESS;
    int mine[FIELDS] = {0}, all[FIELDS];
    const char *refused = NULL;
    iotame_coll_file_t *f = ok && fs && o->file ? route_new(fh, comm, o->amode, &set, o->fc, fs, o->file, &refused)
                                                : NULL;
    int failed = !f;
    const iotame_coll_open_t co = {.comm = comm, .rank = rank, .nprocs = nprocs, .fs = fs,
                                   .options = {o->fc, ch ? ch->options : NULL}, .states = f ? f->state : NULL,
                                   .open_ns = (int64_t)o->open_ns, .profile = o->file ? &o->file->profile : NULL};
    if (ch && ch->open) /* collective: every rank */
        failed |= ch->open(f ? &f->choice : NULL, &co, mine + CHOICE) != 0;
    mine[FAILED] = failed;
    const int romio = iotame_coll_write_sieving(); /* the library that sieves writes is ROMIO */
    if (rank == 0 && !failed) route_open_facts(f->path, romio, mine);
    mine[LOST] = iotame_msg_error_class(iotame_msg_error_peek());
    uint64_t t0 = iotame_monotonic_ns();
    PMPI_Allreduce(mine, all, FIELDS, MPI_INT, MPI_MAX, comm);
    const int64_t cost_ns = (int64_t)(iotame_monotonic_ns() - t0);
    /* The duplicate's context id is agreed over the ranks by the library (MPICH, Open MPI), so a duplicate that
     * started on every rank completes, or fails, on every rank alike; a wait that reports failure on one rank yet made
     * the duplicate (a lost message) keeps it, and route_open_unsure then declines every gathered call with it. */
    if (dup != MPI_REQUEST_NULL) PMPI_Wait(&dup, MPI_STATUS_IGNORE);
    if (all[FAILED] || all[LOST] || (!native && own == MPI_COMM_NULL)) {
        if (f) {
            if (f->choice && ch->close) ch->close(f->choice, &f->env, 0); /* agreed on nothing: it only frees */
            iotame__coll_route_free(f);
        }
        if (own != MPI_COMM_NULL) PMPI_Comm_free(&own);
        if (fs) iotame_stats_passthrough(fs, route_open_refusal(all[LOST], refused));
        route_bind(o, NULL, "a rank could not set up collective routing");
        return;
    }
    iotame_coll_env_t *e = &f->env;
    e->comm = own;
    e->local_fs = all[LOCAL];
    e->shadow_ufs = all[UFS];
    e->readahead = (int64_t)all[READAHEAD_KB] << 10;
    e->fs_block = all[BLOCK];
    e->layout_targets = all[TARGETS] > 0 ? all[TARGETS] : 1;
    e->layout_unit = all[UNIT];
    e->layout_from = all[FROM];
    e->write_sieving = romio;
    if (ch && ch->agreed) ch->agreed(f->choice, &f->env, all + CHOICE, cost_ns);
    route_open_unsure(f);
    *iotame_file_slot(o->file, &iotame_module_collective) = f;
    route_bind(o, f, NULL);
}
