/* Routing of the blocking collective data calls (MPI_File_write_all, read_all, write_at_all, read_at_all and their
 * _c forms) through the strategies, with MPI-IO's semantics kept: the data stream is the application's buffer
 * packed with its datatype (PMPI_Pack; a contiguous buffer is used as it is), the file side is the handle's view
 * flattened (flatten/), strategies do their I/O through a shadow handle (the same file opened MPI_MODE_RDWR on a
 * duplicate of the communicator, default view), the individual file pointer is advanced with PMPI_File_seek, the
 * status carries the bytes moved, and an error on any rank is returned on every rank through the file's error
 * handler. Whatever the engine cannot take goes to the library unchanged, with its reason counted.
 *
 * A handle's state is its view (here), its environment (env.c: file system, nodes, hints, shadow handle), every
 * strategy's own state of it (one opaque slot per strategy), and its strategy: one of the registry's, fixed, or a
 * chooser that picks among them call by call (auto.c), which this file serves alike through the chooser interface
 * (strategy.h). The state is the module's slot of the core's record of
 * the handle, set only for handles whose "collective.strategy" is not passthrough (iotame__coll_open); the other
 * handles, and every independent call, leave this file at once. */
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

/* The end of the last of sorted extents (0: none). */
static int64_t route_extents_end(const iotame_extents_t *ext)
{
    return ext->n ? ext->v[ext->n - 1].off + ext->v[ext->n - 1].len : 0;
}

/* The handle's state, or NULL: a handle not routed (or the shared record of handles opened outside the runtime). */
static iotame_coll_file_t *route_of(iotame_file_t *f) { return *iotame_file_slot(f, &iotame_module_collective); }

/* ---- the view, atomicity and hints ---- */

void iotame__coll_set_view(iotame_file_t *file, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                           const char *datarep)
{
    iotame_coll_file_t *f = route_of(file);
    if (f) iotame__coll_view_set(&f->view, disp, etype, filetype, datarep && strcmp(datarep, "native") == 0);
}

void iotame__coll_set_atomicity(iotame_file_t *file, int flag)
{
    iotame_coll_file_t *f = route_of(file);
    if (f) f->atomic = flag;
}

void iotame__coll_set_info(iotame_file_t *file)
{
    iotame_coll_file_t *f = route_of(file);
    if (f) f->env.hints_stale = 1;
}

/* ---- a call's jobs ---- */

static int route_is_write(iotame_coll_op_t op) { return op == IOTAME_COLL_WRITE_ALL || op == IOTAME_COLL_WRITE_AT_ALL; }
static int route_is_at(iotame_coll_op_t op) { return op == IOTAME_COLL_WRITE_AT_ALL || op == IOTAME_COLL_READ_AT_ALL; }

static iotame_coll_fn route_function(const iotame_strategy_t *st, iotame_coll_op_t op)
{
    return op == IOTAME_COLL_WRITE_ALL      ? st->write_all
           : op == IOTAME_COLL_READ_ALL     ? st->read_all
           : op == IOTAME_COLL_WRITE_AT_ALL ? st->write_at_all
                                            : st->read_at_all;
}

/* The consumer's contract (core/module.h): a call whose blocks are not handed to the handle's consumer reaches the file
 * after every block the consumer holds (collective: every rank of the file takes the same path). */
static void route_consumer_flush(iotame_coll_file_t *f)
{
    if (f->consumer) f->consumer->flush(f->consumer_arg);
}

/* Whether the call's blocks are handed to the handle's consumer: asked, with the call's facts, where its strategy
 * hands blocks (collective, every rank alike); else what the consumer holds is written first. */
static int route_consumer_take(iotame_coll_file_t *f, const iotame_strategy_t *st, const void *state,
                               const iotame_coll_facts_t *g)
{
    int handed = 0;
    if (f->consumer && st->blocks) {
        iotame_block_call_t call = {.write = g->write,
                                    .nprocs = f->env.nprocs,
                                    .nodes = f->env.nnodes,
                                    .bytes = g->gbytes,
                                    .pieces = (g->requests + f->env.nprocs - 1) / f->env.nprocs,
                                    .interleaved = iotame__coll_interleaved(g),
                                    .model_error = f->model_error};
        st->blocks(&f->env, state, &call.block_size, &call.aggregators);
        handed = f->consumer->take(f->consumer_arg, &call);
    }
    if (!handed) route_consumer_flush(f);
    return handed;
}

static int route_pass(iotame_coll_file_t *f, const iotame_coll_args_t *a, const char *reason)
{
    route_consumer_flush(f);
    iotame_stats_passthrough(f->fs, reason);
    return iotame_coll_library(a, 0);
}

/* 1. Why no call of the handle can be routed now: reasons every rank sees alike (they follow collective calls), so
 * no rank needs to ask the others. NULL: it can. */
static const char *route_reasons(const iotame_coll_file_t *f, int write)
{
    if (f->off) return f->off;
    if (f->atomic) return "atomic mode";
    if (f->amode & MPI_MODE_SEQUENTIAL) return "MPI_MODE_SEQUENTIAL";
    if (!f->view.native_rep) return "data representation other than native";
    if (write && (f->amode & MPI_MODE_RDONLY)) return "write to a file opened read-only";
    if (!write && (f->amode & MPI_MODE_WRONLY)) return "read from a file opened write-only";
    return NULL;
}

/* 2. Why this rank cannot route the call (NULL: it can); fills the call's extents and stream position. */
static const char *route_prepare(iotame_coll_file_t *f, const iotame_coll_args_t *a, int64_t *pos, int64_t *nbytes)
{
    const int64_t etype_size = f->view.etype_size;
    MPI_Count tsize = 0;
    if (PMPI_Type_size_x(a->datatype, &tsize) != MPI_SUCCESS || tsize < 0 || a->count < 0) return "invalid datatype";
    *nbytes = (int64_t)tsize * (int64_t)a->count;
    if (etype_size <= 0 || *nbytes % etype_size) return "request not a whole number of etypes";
    MPI_Offset etypes = a->offset;
    if (!route_is_at(a->op) && PMPI_File_get_position(a->fh, &etypes) != MPI_SUCCESS) return "no file pointer";
    *pos = (int64_t)etypes;
    return iotame__coll_view_map(&f->view, (int64_t)etypes * etype_size, *nbytes, &f->call.ext);
}

/* A call served by a library strategy (passthrough, independent) without a collective of ours: no global view of
 * the call, no exchange. Its statistics are reduced once, at close. Returns the call's seconds on this rank. */
static double route_own_call(iotame_coll_file_t *f, const iotame_coll_args_t *a, int s, int *mpi_error)
{
    MPI_Count tsize = 0;
    PMPI_Type_size_x(a->datatype, &tsize);
    iotame_coll_call_t c = {.env = &f->env, .state = f->state[s], .args = a, .write = route_is_write(a->op)};
    uint64_t t0 = iotame_monotonic_ns();
    route_function(iotame_strategies[s], a->op)(&c);
    double seconds = (double)(iotame_monotonic_ns() - t0) * 1e-9;
    f->own.seconds[s] += seconds;
    f->own.bytes[s] += (int64_t)tsize * (int64_t)a->count;
    f->own.calls[s]++;
    *mpi_error = c.mpi_error;
    return seconds;
}

/* The strategy that serves the call without the router's gather, else -1 (strategy.h, "direct"): a native strategy
 * fixed for the file serves all its calls so. */
static int route_direct(iotame_coll_file_t *f, int write)
{
    if (f->ch) return f->ch->direct ? f->ch->direct(f->choice, write) : -1;
    return f->st->native ? f->fixed : -1;
}

/* A call served so; a chooser that follows such calls (served) is told this rank's part of it. */
static int route_serve_direct(iotame_coll_file_t *f, const iotame_coll_args_t *a, int s)
{
    int64_t pos = 0, nbytes = 0;
    iotame_coll_part_t part = {0, &f->call.ext}, *mine = NULL;
    const int follows = f->ch && f->ch->served;
    if (follows && route_prepare(f, a, &pos, &nbytes) == NULL) part.nbytes = nbytes, mine = &part;
    int mpi_error;
    route_consumer_flush(f);
    const double seconds = route_own_call(f, a, s, &mpi_error);
    if (follows) f->ch->served(f->choice, route_is_write(a->op), mine, seconds);
    return mpi_error;
}

enum { FLAG_CANNOT = 1 };

/* 3. What every rank asks for, gathered everywhere (collective over the handle's communicator), and reduced. Returns
 * why the call passes through on every rank, or NULL. */
static const char *route_gather(iotame_coll_file_t *f, const iotame_coll_args_t *a, iotame_coll_facts_t *g,
                                int64_t *pos)
{
    const iotame_coll_env_t *e = &f->env;
    int64_t nbytes = 0;
    *pos = 0;
    const char *why = f->lost ? f->lost : route_prepare(f, a, pos, &nbytes);
    int64_t row[IOTAME_INFO_FIELDS] = {INT64_MAX, INT64_MIN, 0, 0, 0, f->ch && f->ch->tag ? f->ch->tag(f->choice) : 0};
    row[IOTAME_INFO_STREAM] = *pos * f->view.etype_size;
    row[IOTAME_INFO_VIEW] = f->view.generation;
    if (why) row[IOTAME_INFO_FLAGS] = FLAG_CANNOT;
    else if (f->call.ext.n) {
        row[IOTAME_INFO_START] = f->call.ext.v[0].off;
        row[IOTAME_INFO_END] = f->call.ext.v[f->call.ext.n - 1].off + f->call.ext.v[f->call.ext.n - 1].len;
        row[IOTAME_INFO_BYTES] = nbytes;
        row[IOTAME_INFO_EXTENTS] = (int64_t)f->call.ext.n;
    }
    PMPI_Allgather(row, IOTAME_INFO_FIELDS, MPI_INT64_T, f->call.info, IOTAME_INFO_FIELDS, MPI_INT64_T, e->comm);
    *g = (iotame_coll_facts_t){.write = route_is_write(a->op), .nprocs = e->nprocs, .info = f->call.info,
                               .gmin = INT64_MAX, .gmax = INT64_MIN, .nbytes = nbytes, .ext = &f->call.ext};
    int64_t flags = 0;
    uint64_t tmin = UINT64_MAX, tmax = 0;
    for (int r = 0; r < e->nprocs; r++) {
        const int64_t *x = f->call.info + (size_t)r * IOTAME_INFO_FIELDS;
        if (x[IOTAME_INFO_START] < g->gmin) g->gmin = x[IOTAME_INFO_START];
        if (x[IOTAME_INFO_END] > g->gmax) g->gmax = x[IOTAME_INFO_END];
        g->gbytes += x[IOTAME_INFO_BYTES];
        g->requests += x[IOTAME_INFO_EXTENTS];
        flags |= x[IOTAME_INFO_FLAGS];
        uint64_t t = (uint64_t)x[IOTAME_INFO_TAG];
        if (t < tmin) tmin = t;
        if (t > tmax) tmax = t;
    }
    g->tags_differ = tmin != tmax;
    if (flags & FLAG_CANNOT) return why ? why : "another rank's request cannot be represented";
    return NULL;
}

/* 4. The strategy of the call: the file's, or the one its chooser picks from the gathered facts. */
static int route_choose(iotame_coll_file_t *f, const iotame_coll_facts_t *g)
{
    return f->ch ? (f->ch->choose ? f->ch->choose(f->choice, g) : 0) : f->fixed;
}

/* 5. The strategy's setup before it first serves the handle (collective: every rank chose s alike). Returns why
 * every call of the handle passes through from now on, or NULL. */
static const char *route_setup(iotame_coll_file_t *f, int s)
{
    const iotame_strategy_t *st = iotame_strategies[s];
    if (!st->setup || (f->ready & 1u << s)) return NULL;
    iotame_coll_env_t *e = &f->env;
    int rc = st->setup(e, f->state[s]);
    if (rc) return f->off = rc == -ENOMEM   ? "out of memory (collective routing)"
                            : rc == -EPROTO ? iotame_msg_setup_reason(e->lost)
                                            : "the file cannot be opened for reading and writing (shadow handle)";
    f->ready |= 1u << s;
    json_t *coll = e->node_of ? iotame_stats_collective(f->fs) : NULL; /* the engine's nodes (env.c) */
    if (coll) json_object_set_new(coll, "nodes", json_integer(e->nnodes));
    return NULL;
}

static int route_grow_pack(iotame_coll_file_t *f, int64_t n)
{
    if ((size_t)n <= f->call.pack_cap) return 0;
    char *p = malloc((size_t)n);
    if (!p) return -ENOMEM;
    free(f->call.pack);
    f->call.pack = p;
    f->call.pack_cap = (size_t)n;
    return 0;
}

/* 6. The data stream: the buffer itself when the datatype is contiguous, else packed (NULL when this rank cannot
 * give its data: the engine then has no plan, and every rank passes). Returns whether it is packed. */
static int route_pack(iotame_coll_file_t *f, const iotame_coll_args_t *a, iotame_coll_call_t *c)
{
    int64_t first = 0;
    if (iotame_flatten_is_contiguous(a->datatype, (int64_t)a->count, &first)) {
        c->data = (char *)a->buf + first;
        return 0;
    }
    if (route_grow_pack(f, c->nbytes) != 0) return 0;
    c->data = f->call.pack;
    MPI_Count at = 0;
    const MPI_Count room = (MPI_Count)c->nbytes;
    if (c->write && PMPI_Pack_c(a->buf, a->count, a->datatype, f->call.pack, room, &at, MPI_COMM_SELF) != MPI_SUCCESS)
        c->data = NULL;
    return 1;
}

/* 7. Runs the call through strategy st: a native one on the application's call, another on the data stream. */
static int route_run(iotame_coll_file_t *f, const iotame_coll_args_t *a, const iotame_strategy_t *st,
                     iotame_coll_call_t *c, int *packed)
{
    iotame_coll_fn fn = route_function(st, a->op);
    *packed = 0;
    if (st->native) return fn(c);
    if (c->gbytes <= 0) return 0;
    *packed = route_pack(f, a, c);
    return c->data || c->nbytes == 0 ? fn(c) : iotame_coll_engine(c, NULL);
}

/* 8. Every rank learns whether any failed, and how long the slowest took from the call's entry (collective). */
static int route_agree(const iotame_coll_file_t *f, int rc, uint64_t called, double *slowest)
{
    int64_t mine[2] = {rc == -EIO, (int64_t)(iotame_monotonic_ns() - called)}, worst[2] = {0, 0};
    PMPI_Allreduce(mine, worst, 2, MPI_INT64_T, MPI_MAX, f->env.comm);
    *slowest = (double)worst[1] * 1e-9;
    return worst[0] != 0;
}

/* 8, for a write whose blocks were handed to the consumer: the same agreement, which also gives every rank every
 * aggregator's position after the call (the consumer's `staged`). */
static int route_agree_handed(const iotame_coll_file_t *f, const iotame_coll_call_t *c, int rc, uint64_t called,
                              double *slowest)
{
    const int np = f->env.nprocs;
    for (int r = 0; r < np; r++) f->ends[2 + r] = 0;
    f->ends[0] = rc == -EIO;
    f->ends[1] = (int64_t)(iotame_monotonic_ns() - called);
    f->ends[2 + f->env.rank] = c->handed_end;
    PMPI_Allreduce(MPI_IN_PLACE, f->ends, np + 2, MPI_INT64_T, MPI_MAX, f->env.comm);
    *slowest = (double)f->ends[1] * 1e-9;
    if (rc == 0 && c->gbytes > 0) /* every rank alike */
        f->consumer->staged(f->consumer_arg, f->ends + 2, f->call.ext.n ? f->call.ext.v[0].off : 0,
                            route_extents_end(&f->call.ext));
    return f->ends[0] != 0;
}

/* 8, after a call a library strategy served for the chooser: the library gave every rank its own outcome, so the
 * agreement only tells the chooser the slowest rank's time. Posted now and waited for at the handle's next routed
 * call, its close or MPI_Finalize (route_agree_finish, on every rank alike, before any other collective of ours on the
 * handle): the rank done first goes on, e.g. to its fsync, as without the runtime, instead of waiting for the slowest
 * at the end of the call. */
static void route_agree_later(iotame_coll_file_t *f, const iotame_coll_facts_t *g, int s, uint64_t called)
{
    f->later.g = *g; /* its info and extents are the handle's, untouched until the next routed call */
    f->later.s = s;
    f->later.slowest_ns = (int64_t)(iotame_monotonic_ns() - called);
    /* a failed post loses the measurement; a request the library made all the same is still waited for */
    f->later.lost = PMPI_Iallreduce(MPI_IN_PLACE, &f->later.slowest_ns, 1, MPI_INT64_T, MPI_MAX, f->env.comm,
                                    &f->later.req) != MPI_SUCCESS;
}

/* The agreement posted after the handle's last call, completed: the chooser learns the call's time (a lost message
 * loses the measurement only: the call's outcome was the library's). */
static void route_agree_finish(iotame_coll_file_t *f)
{
    if (f->later.req == MPI_REQUEST_NULL) return;
    const int done = PMPI_Wait(&f->later.req, MPI_STATUS_IGNORE) == MPI_SUCCESS;
    f->later.req = MPI_REQUEST_NULL;
    iotame_msg_error_take();
    if (done && !f->later.lost && f->ch && f->ch->measured)
        f->ch->measured(f->choice, &f->later.g, f->later.s, (double)f->later.slowest_ns * 1e-9);
}

/* The bytes of a read that lie before the end of the file, in stream order. */
static int64_t route_before_eof(const iotame_coll_file_t *f, int64_t nbytes)
{
    if (route_extents_end(&f->call.ext) <= 0) return nbytes;
    MPI_Offset size = 0;
    if (PMPI_File_get_size(f->env.shadow, &size) != MPI_SUCCESS) return nbytes;
    int64_t done = 0;
    for (size_t i = 0; i < f->call.ext.n; i++) {
        const iotame_extent_t *x = &f->call.ext.v[i];
        if (x->off + x->len <= size) done += x->len;
        else {
            if (x->off < size) done += size - x->off;
            break;
        }
    }
    return done;
}

/* A message of the runtime's own that failed while the engine served the call (lost: its MPI error code, or
 * MPI_SUCCESS) makes the call an MPI error on this rank (-EIO with c->mpi_error set), which the agreement that
 * follows gives every rank: nothing the message left behind is trusted as a success. Native strategies hand the
 * call to the library and send nothing of their own; a run that could not start (another rc, agreed by every rank)
 * is handed to the library whole, on every rank alike. */
static int route_lost_message(iotame_coll_call_t *c, const iotame_strategy_t *st, int rc, int lost)
{
    if (lost == MPI_SUCCESS || st->native || (rc && rc != -EIO)) return rc;
    if (c->mpi_error == MPI_SUCCESS) c->mpi_error = lost;
    return -EIO;
}

/* 9. What the application sees of a call the engine served: an error on any rank through the file's error
 * handler, a read's data unpacked into its buffer, the status, the individual file pointer. */
static int route_complete(iotame_coll_file_t *f, const iotame_coll_args_t *a, const iotame_coll_call_t *c, int64_t pos,
                          int failed, int packed)
{
    if (failed) {
        int code = c->mpi_error != MPI_SUCCESS ? c->mpi_error : MPI_ERR_IO;
        PMPI_File_call_errhandler(a->fh, code);
        return code;
    }
    if (c->write && c->gbytes > 0) f->written = 1;
    int64_t done = c->nbytes;
    if (!c->write) {
        done = route_before_eof(f, c->nbytes);
        MPI_Count at = 0;
        if (packed && PMPI_Unpack_c(f->call.pack, (MPI_Count)c->nbytes, &at, a->buf, a->count, a->datatype,
                                    MPI_COMM_SELF) != MPI_SUCCESS) { /* the data read cannot reach the buffer */
            PMPI_File_call_errhandler(a->fh, MPI_ERR_INTERN);
            return MPI_ERR_INTERN;
        }
    }
    if (a->status != MPI_STATUS_IGNORE) {
        PMPI_Status_set_elements_x(a->status, MPI_BYTE, (MPI_Count)done);
        PMPI_Status_set_cancelled(a->status, 0);
    }
    if (!route_is_at(a->op) && c->nbytes > 0)
        PMPI_File_seek(a->fh, (MPI_Offset)(pos + c->nbytes / f->view.etype_size), MPI_SEEK_SET);
    return MPI_SUCCESS;
}

/* A call the router gathers: its facts, the strategy, the run, the agreement, the outcome. */
static int route_serve(iotame_coll_file_t *f, const iotame_coll_args_t *a)
{
    const uint64_t called = iotame_monotonic_ns();
    iotame_msg_error_take(); /* the messages of this call from here on */
    iotame_coll_facts_t g;
    int64_t pos;
    const char *why = route_gather(f, a, &g, &pos);
    if (why) return route_pass(f, a, why);
    const int s = route_choose(f, &g);
    const iotame_strategy_t *st = iotame_strategies[s];
    if ((why = route_setup(f, s))) return route_pass(f, a, why);
    const int handed = route_consumer_take(f, st, f->state[s], &g);
    iotame_coll_call_t c = {.env = &f->env, .state = f->state[s], .args = a, .write = g.write,
                            .ext = f->call.ext.v, .next = f->call.ext.n, .nbytes = g.nbytes, .info = f->call.info,
                            .gmin = g.gmin, .gmax = g.gmax, .gbytes = g.gbytes, .view = &f->view,
                            .consumer = handed ? f->consumer : NULL, .consumer_arg = f->consumer_arg};
    int packed;
    const uint64_t t0 = iotame_monotonic_ns();
    int rc = route_run(f, a, st, &c, &packed);
    rc = route_lost_message(&c, st, rc, iotame_msg_error_take());
    const double seconds = (double)(iotame_monotonic_ns() - t0) * 1e-9;
    if (st->native) {
        iotame__coll_count(f->fs, s, 1, g.nbytes, seconds, -1, -1);
        if (f->ch && f->ch->measured) route_agree_later(f, &g, s, called);
        return c.mpi_error;
    }
    double slowest;
    int failed = handed && g.write ? route_agree_handed(f, &c, rc, called, &slowest)
                                   : route_agree(f, rc, called, &slowest);
    /* The agreement's own message failed here: this rank cannot trust what it learned, and fails the call (the
     * others, which may have agreed on success, cannot learn it without another message). */
    failed |= route_lost_message(&c, st, 0, iotame_msg_error_take()) != 0;
    if (rc && rc != -EIO) /* could not run, nothing done, on every rank alike */
        return route_pass(f, a, rc == -ENOMEM ? "out of memory (collective engine)" : "strategy could not run");
    if (f->ch && f->ch->measured) f->ch->measured(f->choice, &g, s, slowest);
    iotame__coll_count(f->fs, s, 1, g.nbytes, seconds, c.list_bytes, c.view_bytes);
    return route_complete(f, a, &c, pos, failed, packed);
}

/* One routed call: the reasons that pass it through, then the strategy's own call or the router's. */
static int route_call(iotame_coll_file_t *f, const iotame_coll_args_t *a)
{
    route_agree_finish(f);
    const char *why = route_reasons(f, route_is_write(a->op));
    if (why) return route_pass(f, a, why);
    iotame_coll_env_t *e = &f->env;
    if (e->hints_stale && e->shadow != MPI_FILE_NULL) iotame__coll_env_hints(e, f->fh);
    const int direct = route_direct(f, route_is_write(a->op));
    return direct >= 0 ? route_serve_direct(f, a, direct) : route_serve(f, a);
}

static const iotame_coll_op_t route_ops[2][2] = {{IOTAME_COLL_READ_ALL, IOTAME_COLL_READ_AT_ALL},
                                                 {IOTAME_COLL_WRITE_ALL, IOTAME_COLL_WRITE_AT_ALL}};

int iotame__coll_serve(const iotame_io_t *io, int *rc)
{
    iotame_coll_file_t *f = route_of(io->file);
    if (!f || io->kind == IOTAME_IO_INDEPENDENT || io->kind == IOTAME_IO_NONBLOCKING) return 0;
    if (io->kind != IOTAME_IO_COLLECTIVE) { /* the library's own: the engine runs a whole blocking call at once */
        iotame_stats_passthrough(f->fs, io->kind == IOTAME_IO_SPLIT    ? "split collective"
                                        : io->kind == IOTAME_IO_SHARED ? "shared file pointer"
                                                                       : "nonblocking collective");
        return 0;
    }
    const iotame_coll_args_t a = {route_ops[io->write][io->at], io->large, io->fh, io->offset, io->buf,
                                  io->count, io->datatype, io->status};
    *rc = route_call(f, &a);
    return 1;
}

/* ---- sync and close ---- */

int iotame__coll_sync(iotame_file_t *file)
{
    iotame_coll_file_t *f = route_of(file);
    if (!f || !f->written) return MPI_SUCCESS;
    /* Writes went through the shadow handle: flushing the application's handle alone may not cover them. */
    f->written = 0;
    int rc = PMPI_File_sync(f->env.shadow);
    /* ROMIO syncs the shadow only on the ranks that wrote through it (the aggregators), where under the library
     * every rank of a collective write syncs its own handle and gets a failure: so every rank syncs the file itself
     * too. No message: HDF5's error paths reach a sync on some ranks only, which the library does not wait for. */
    int fd = rc == MPI_SUCCESS ? open(iotame_posix_path(f->path), O_WRONLY | O_CLOEXEC) : -1;
    if (fd >= 0 && fsync(fd) != 0) {
        rc = MPI_ERR_IO; /* the class ROMIO gives a failed fsync */
        PMPI_File_call_errhandler(f->fh, rc);
    }
    if (fd >= 0) close(fd);
    return rc;
}

/* The statistics of a handle's calls served without a collective of ours; then it is freed. */
static void route_retire(iotame_coll_file_t *f)
{
    for (int s = 0; s < iotame_nstrategies && s < IOTAME_STRATEGY_MAX; s++)
        if (f->own.calls[s]) iotame__coll_count(f->fs, s, f->own.calls[s], f->own.bytes[s], f->own.seconds[s], -1, -1);
    iotame__coll_route_free(f);
}

int iotame__coll_close(iotame_file_t *file)
{
    iotame_coll_file_t *f = route_of(file);
    if (!f) return MPI_SUCCESS;
    *iotame_file_slot(file, &iotame_module_collective) = NULL;
    route_agree_finish(f);
    if (f->ch && f->ch->close) f->ch->close(f->choice, &f->env, 0); /* may keep the communicator for its last gather */
    f->choice = NULL;
    for (int s = 0; s < iotame_nstrategies; s++)
        if ((f->ready & 1u << s) && iotame_strategies[s]->teardown)
            iotame_strategies[s]->teardown(&f->env, f->state[s]);
    route_retire(f);
    return MPI_SUCCESS;
}

/* A handle still open at MPI_Finalize: its chooser posts what is under way (completed by the chooser's finalize). */
static void route_finalize_post(iotame_file_t *file, void *arg)
{
    iotame_coll_file_t *f = route_of(file);
    if (f) route_agree_finish(f);
    if (f && f->ch && f->ch->close) f->ch->close(f->choice, &f->env, 1);
    if (f) f->choice = NULL;
}

/* Then its statistics; its slot is cleared. */
static void route_finalize_retire(iotame_file_t *file, void *arg)
{
    iotame_coll_file_t *f = route_of(file);
    if (!f) return;
    *iotame_file_slot(file, &iotame_module_collective) = NULL;
    route_retire(f);
}

/* A handle still open here is closed inside MPI_Finalize (HDF5 closes its files there), after the runtime has
 * stopped: its chooser's state and statistics are taken now. Its shadow handle stays open: closing it is a blocking
 * collective, and the ranks may hold their open handles in different orders. */
void iotame__coll_finalize(void)
{
    iotame_file_each(route_finalize_post, NULL);
    iotame__coll_choosers_finalize();
    iotame_file_each(route_finalize_retire, NULL);
}
