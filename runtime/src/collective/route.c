/* Routing of the blocking collective data calls (MPI_File_write_all, read_all, write_at_all, read_at_all and their
 * _c forms) through the strategies, with MPI-IO's semantics kept: the data stream is the application's buffer
 * packed with its datatype (PMPI_Pack; a contiguous buffer is used as it is), the file side is the handle's view
 * flattened (flatten/), strategies do their I/O through a shadow handle (the same file opened MPI_MODE_RDWR on a
 * duplicate of the communicator, default view), the individual file pointer is advanced with PMPI_File_seek, the
 * status carries the bytes moved, and an error on any rank is returned on every rank through the file's error
 * handler. Whatever the engine cannot take goes to the library unchanged, with its reason counted.
 *
 * A handle's state is its view (here), its environment (env.c: file system, nodes, hints, shadow handle) and, under
 * strategy auto, its window state (select/window.c: which calls the selector measures and which it serves in
 * windows). Only handles whose "collective.strategy" is not passthrough are tracked (iotame_collective_open); the
 * other handles, and every independent call, never reach this file. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "select/select.h"
#include "strategy.h"

#define AUTO (-1)

int iotame__collective_handles;

struct iotame_coll_file {
    MPI_File fh;
    iotame_file_stats_t *fs;
    char *path;
    int amode, atomic, written;
    int strategy;    /* registry index, or AUTO */
    unsigned ready;  /* the strategies set up (bit s: iotame_strategies[s]->setup ran) */
    const char *off; /* why every call now goes to the library (the engine could not be set up), or NULL */
    iotame_coll_view_t view;
    iotame_coll_env_t env;
    iotame_window_t *window; /* strategy auto */
    /* the call under way: this rank's extents, packed data, and every rank's row of facts */
    iotame_extents_t ext;
    char *pack;
    size_t pack_cap;
    int64_t *info;
    /* calls served without a collective of ours (a fixed library strategy, or steady windows): this rank's calls,
     * bytes and seconds per strategy, into the statistics at close (merged over the ranks at the end) */
    int64_t own_calls[IOTAME_STRATEGY_MAX], own_bytes[IOTAME_STRATEGY_MAX];
    double own_seconds[IOTAME_STRATEGY_MAX];
};

/* ---- the handles we route ---- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static iotame_coll_file_t **files;
static size_t nfiles, files_cap;

static iotame_coll_file_t *find(MPI_File fh)
{
    iotame_coll_file_t *f = NULL;
    if (iotame__threaded) pthread_mutex_lock(&lock);
    for (size_t i = nfiles; i-- > 0;)
        if (files[i]->fh == fh) {
            f = files[i];
            break;
        }
    if (iotame__threaded) pthread_mutex_unlock(&lock);
    return f;
}

int iotame_collective_routed(MPI_File fh) { return find(fh) != NULL; }

static int add_file(iotame_coll_file_t *f)
{
    int rc = 0;
    if (iotame__threaded) pthread_mutex_lock(&lock);
    if (nfiles == files_cap) {
        size_t grow = files_cap ? 2 * files_cap : 8;
        iotame_coll_file_t **grown = realloc(files, grow * sizeof *grown);
        if (grown) files = grown, files_cap = grow;
        else rc = -ENOMEM;
    }
    if (!rc) {
        files[nfiles++] = f;
        __atomic_add_fetch(&iotame__collective_handles, 1, __ATOMIC_RELAXED);
    }
    if (iotame__threaded) pthread_mutex_unlock(&lock);
    return rc;
}

static void remove_file(iotame_coll_file_t *f)
{
    if (iotame__threaded) pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nfiles; i++)
        if (files[i] == f) {
            files[i] = files[--nfiles];
            __atomic_sub_fetch(&iotame__collective_handles, 1, __ATOMIC_RELAXED);
            break;
        }
    if (iotame__threaded) pthread_mutex_unlock(&lock);
}

/* ---- the view, atomicity and hints ---- */

void iotame_collective_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                                const char *datarep)
{
    iotame_coll_file_t *f = find(fh);
    if (f) iotame__coll_view_set(&f->view, disp, etype, filetype, datarep && strcmp(datarep, "native") == 0);
}

void iotame_collective_set_atomicity(MPI_File fh, int flag)
{
    iotame_coll_file_t *f = find(fh);
    if (f) f->atomic = flag;
}

void iotame_collective_set_info(MPI_File fh)
{
    iotame_coll_file_t *f = find(fh);
    if (f) f->env.hints_stale = 1;
}

/* ---- open (collective): the configuration, one agreement ---- */

/* The file's value of a collective setting, else its default in runtime/settings.json (one source of truth). */
static const json_t *setting(const iotame_file_config_t *fc, const char *key)
{
    return iotame_config_setting(fc, "collective", key);
}

static int strategy_of(const iotame_file_config_t *fc)
{
    const char *name = json_string_value(setting(fc, "strategy"));
    if (!name) return 0; /* passthrough */
    return strcmp(name, "auto") == 0 ? AUTO : iotame_strategy_find(name);
}

static void free_file(iotame_coll_file_t *f)
{
    iotame__coll_env_free(&f->env);
    iotame__coll_view_release(&f->view);
    iotame_extents_free(&f->ext);
    free(f->info);
    free(f->pack);
    free(f->path);
    free(f);
}

/* The handle's state and settings; NULL when something could not be allocated. fixed: a library strategy serves
 * every call, so no per-call buffers. */
static iotame_coll_file_t *new_file(MPI_File fh, MPI_Comm comm, int amode, int strategy, int fixed,
                                    iotame_file_stats_t *fs, const iotame_file_config_t *fc)
{
    iotame_coll_file_t *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->fh = fh;
    f->fs = fs;
    f->amode = amode;
    f->strategy = strategy;
    iotame_coll_env_t *e = &f->env;
    e->comm = MPI_COMM_NULL;
    e->shadow = MPI_FILE_NULL;
    PMPI_Comm_rank(comm, &e->rank);
    PMPI_Comm_size(comm, &e->nprocs);
    f->view.etype = f->view.filetype = MPI_DATATYPE_NULL;
    iotame__coll_view_set(&f->view, 0, MPI_BYTE, MPI_BYTE, 1);
    const json_t *v;
    e->virtual_node_size = json_integer_value(setting(fc, "virtual_node_size"));
    e->conf_targets = (v = setting(fc, "targets")) ? json_integer_value(v) : 0;
    e->conf_target_unit = (v = setting(fc, "target_unit")) ? json_integer_value(v) : 0;
    e->conf_block_size = (v = setting(fc, "block_size")) ? json_integer_value(v) : 0;
    e->fh = fh;
    e->amode = amode;
    e->path = f->path = strdup(iotame_stats_path(fs));
    int ok = f->path != NULL;
    if (!fixed) ok &= (f->info = malloc((size_t)e->nprocs * IOTAME_INFO_FIELDS * sizeof *f->info)) != NULL;
    if (!ok) {
        free_file(f);
        return NULL;
    }
    return f;
}

/* The open agrees on everything in one reduction, inside the application's collective open (docs/design/
 * open-agreement.md): whether every rank could set the handle up, rank 0's file system, and under auto the window's
 * part. A rank that cannot route says so, and then no rank routes the handle. A fixed library strategy needs no
 * communicator of ours; the others duplicate it without blocking, to complete during the reduction. */
void iotame_collective_open(MPI_File fh, MPI_Comm comm, int amode, iotame_file_stats_t *fs,
                            const iotame_file_config_t *fc)
{
    const int strategy = strategy_of(fc);
    if (strategy == 0 || strategy < AUTO) return; /* the library's own collective I/O: nothing to track */
    const int fixed = strategy != AUTO && iotame_strategies[strategy]->native;
    int rank;
    PMPI_Comm_rank(comm, &rank);
    MPI_Comm own = MPI_COMM_NULL; /* ours: the application may free its own after the open */
    MPI_Request dup = MPI_REQUEST_NULL;
    int ok = fixed || PMPI_Comm_idup(comm, &own, &dup) == MPI_SUCCESS;
    enum { FAILED, LOCAL, WINDOW, FIELDS = WINDOW + IOTAME_WINDOW_AGREE };
    int mine[FIELDS] = {0}, all[FIELDS];
    iotame_window_t *w = strategy == AUTO ? iotame_window_open(fs, fc, comm, mine + WINDOW) : NULL;
    iotame_coll_file_t *f = ok && fs && (w || strategy != AUTO) ? new_file(fh, comm, amode, strategy, fixed, fs, fc) : NULL;
    if (f && add_file(f) != 0) {
        free_file(f);
        f = NULL;
    }
    mine[FAILED] = !f;
    mine[LOCAL] = rank == 0 && f && iotame_coll_local_fs(f->path);
    uint64_t t0 = iotame_monotonic_ns();
    PMPI_Allreduce(mine, all, FIELDS, MPI_INT, MPI_MAX, comm);
    const int64_t cost_ns = (int64_t)(iotame_monotonic_ns() - t0);
    /* The duplicate's context id is agreed over the ranks by the library (MPICH, Open MPI), so a duplicate that
     * started on every rank completes, or fails, on every rank alike. */
    if (dup != MPI_REQUEST_NULL && PMPI_Wait(&dup, MPI_STATUS_IGNORE) != MPI_SUCCESS) own = MPI_COMM_NULL;
    if (all[FAILED] || (!fixed && own == MPI_COMM_NULL)) {
        if (f) {
            remove_file(f);
            free_file(f);
        }
        if (w) iotame_window_close(w, &own);
        if (own != MPI_COMM_NULL) PMPI_Comm_free(&own);
        if (fs) iotame_stats_passthrough(fs, "a rank could not set up collective routing (out of memory, or no communicator)");
        return;
    }
    f->env.comm = own;
    f->env.local_fs = all[LOCAL];
    f->env.write_sieving = iotame_coll_write_sieving();
    if ((f->window = w)) iotame_window_agreed(w, &f->env, all + WINDOW, cost_ns);
}

/* ---- the call ---- */

static int is_write(iotame_coll_op_t op) { return op == IOTAME_COLL_WRITE_ALL || op == IOTAME_COLL_WRITE_AT_ALL; }
static int is_at(iotame_coll_op_t op) { return op == IOTAME_COLL_WRITE_AT_ALL || op == IOTAME_COLL_READ_AT_ALL; }

static iotame_coll_fn function_of(const iotame_strategy_t *st, iotame_coll_op_t op)
{
    return op == IOTAME_COLL_WRITE_ALL      ? st->write_all
           : op == IOTAME_COLL_READ_ALL     ? st->read_all
           : op == IOTAME_COLL_WRITE_AT_ALL ? st->write_at_all
                                            : st->read_at_all;
}

/* A call served by a library strategy (passthrough, independent) without a collective of ours: no global view of
 * the call, no exchange. Its statistics are reduced once, at close. Returns the call's seconds on this rank. */
static double own_call(iotame_coll_file_t *f, const iotame_coll_args_t *a, int s, int *mpi_error)
{
    MPI_Count tsize = 0;
    PMPI_Type_size_x(a->datatype, &tsize);
    iotame_coll_call_t c = {.env = &f->env, .args = a, .write = is_write(a->op)};
    uint64_t t0 = iotame_monotonic_ns();
    function_of(iotame_strategies[s], a->op)(&c);
    double seconds = (double)(iotame_monotonic_ns() - t0) * 1e-9;
    f->own_seconds[s] += seconds;
    f->own_bytes[s] += (int64_t)tsize * (int64_t)a->count;
    f->own_calls[s]++;
    *mpi_error = c.mpi_error;
    return seconds;
}

static int pass(iotame_coll_file_t *f, const iotame_coll_args_t *a, const char *reason)
{
    iotame_stats_passthrough(f->fs, reason);
    return iotame_coll_library(a, 0);
}

/* Why this rank cannot route the call (NULL: it can); fills the call's extents and stream position. */
static const char *prepare(iotame_coll_file_t *f, const iotame_coll_args_t *a, int64_t *pos, int64_t *nbytes)
{
    const int64_t etype_size = f->view.etype_size;
    MPI_Count tsize = 0;
    if (PMPI_Type_size_x(a->datatype, &tsize) != MPI_SUCCESS || tsize < 0 || a->count < 0) return "invalid datatype";
    *nbytes = (int64_t)tsize * (int64_t)a->count;
    if (etype_size <= 0 || *nbytes % etype_size) return "request not a whole number of etypes";
    MPI_Offset etypes = a->offset;
    if (!is_at(a->op) && PMPI_File_get_position(a->fh, &etypes) != MPI_SUCCESS) return "no file pointer";
    *pos = (int64_t)etypes;
    return iotame__coll_view_map(&f->view, (int64_t)etypes * etype_size, *nbytes, &f->ext);
}

/* The bytes of a read that lie before the end of the file, in stream order. */
static int64_t bytes_before_eof(const iotame_coll_file_t *f, int64_t nbytes)
{
    if (!f->ext.n || f->ext.v[f->ext.n - 1].off + f->ext.v[f->ext.n - 1].len <= 0) return nbytes;
    MPI_Offset size = 0;
    if (PMPI_File_get_size(f->env.shadow, &size) != MPI_SUCCESS) return nbytes;
    int64_t done = 0;
    for (size_t i = 0; i < f->ext.n; i++) {
        const iotame_extent_t *x = &f->ext.v[i];
        if (x->off + x->len <= size) done += x->len;
        else {
            if (x->off < size) done += size - x->off;
            break;
        }
    }
    return done;
}

static int grow_pack(iotame_coll_file_t *f, int64_t n)
{
    if ((size_t)n <= f->pack_cap) return 0;
    char *p = malloc((size_t)n);
    if (!p) return -ENOMEM;
    free(f->pack);
    f->pack = p;
    f->pack_cap = (size_t)n;
    return 0;
}

enum { FLAG_CANNOT = 1 };

/* A call of a window (select/window.c): served by the window's library strategy, no collective of ours. */
static int window_call(iotame_coll_file_t *f, const iotame_coll_args_t *a, int s)
{
    int64_t pos = 0, nbytes = 0;
    const int shaped = prepare(f, a, &pos, &nbytes) == NULL;
    int mpi_error;
    double seconds = own_call(f, a, s, &mpi_error);
    iotame_window_served(f->window, is_write(a->op), shaped, nbytes, &f->ext, seconds);
    return mpi_error;
}

int iotame_collective_call(const iotame_coll_args_t *a)
{
    iotame_coll_file_t *f = find(a->fh);
    if (!f) return iotame_coll_library(a, 0);
    const int write = is_write(a->op);
    /* Reasons every rank sees alike (they follow collective calls), so no rank needs to ask the others. */
    if (f->off) return pass(f, a, f->off);
    if (f->atomic) return pass(f, a, "atomic mode");
    if (f->amode & MPI_MODE_SEQUENTIAL) return pass(f, a, "MPI_MODE_SEQUENTIAL");
    if (!f->view.native_rep) return pass(f, a, "data representation other than native");
    if (write && (f->amode & MPI_MODE_RDONLY)) return pass(f, a, "write to a file opened read-only");
    if (!write && (f->amode & MPI_MODE_WRONLY)) return pass(f, a, "read from a file opened write-only");
    const int serving = f->window ? iotame_window_serving(f->window, write) : -1;
    iotame_coll_env_t *e = &f->env;
    if (e->hints_stale && e->shadow != MPI_FILE_NULL) iotame__coll_env_hints(e, f->fh);
    int mpi_error;
    if (f->strategy != AUTO && iotame_strategies[f->strategy]->native) return own_call(f, a, f->strategy, &mpi_error), mpi_error;
    if (serving >= 0) return window_call(f, a, serving);
    const uint64_t called = iotame_monotonic_ns();

    /* This rank's request; then what every rank asks for, gathered everywhere. */
    int64_t pos = 0, nbytes = 0;
    const char *why = prepare(f, a, &pos, &nbytes);
    int64_t row[IOTAME_INFO_FIELDS] = {INT64_MAX, INT64_MIN, 0, 0, 0, f->window ? (int64_t)iotame_window_digest(f->window) : 0};
    row[IOTAME_INFO_STREAM] = pos * f->view.etype_size;
    row[IOTAME_INFO_VIEW] = f->view.generation;
    if (why) row[IOTAME_INFO_FLAGS] = FLAG_CANNOT;
    else if (f->ext.n) {
        row[IOTAME_INFO_START] = f->ext.v[0].off;
        row[IOTAME_INFO_END] = f->ext.v[f->ext.n - 1].off + f->ext.v[f->ext.n - 1].len;
        row[IOTAME_INFO_BYTES] = nbytes;
        row[IOTAME_INFO_EXTENTS] = (int64_t)f->ext.n;
    }
    PMPI_Allgather(row, IOTAME_INFO_FIELDS, MPI_INT64_T, f->info, IOTAME_INFO_FIELDS, MPI_INT64_T, e->comm);
    int64_t gmin = INT64_MAX, gmax = INT64_MIN, gbytes = 0, greq = 0, flags = 0;
    uint64_t dmin = UINT64_MAX, dmax = 0;
    for (int r = 0; r < e->nprocs; r++) {
        const int64_t *x = f->info + (size_t)r * IOTAME_INFO_FIELDS;
        if (x[IOTAME_INFO_START] < gmin) gmin = x[IOTAME_INFO_START];
        if (x[IOTAME_INFO_END] > gmax) gmax = x[IOTAME_INFO_END];
        gbytes += x[IOTAME_INFO_BYTES];
        greq += x[IOTAME_INFO_EXTENTS];
        flags |= x[IOTAME_INFO_FLAGS];
        uint64_t d = (uint64_t)x[IOTAME_INFO_DIGEST];
        if (d < dmin) dmin = d;
        if (d > dmax) dmax = d;
    }
    if (flags & FLAG_CANNOT) return pass(f, a, why ? why : "another rank's request cannot be represented");

    /* The strategy: fixed, or the selector's choice for this signature. */
    int s = f->strategy;
    iotame_sel_entry_t *entry = NULL;
    if (s == AUTO && gbytes > 0) {
        int64_t gap = greq > 1 ? (gmax - gmin - gbytes) / (greq - 1) : 0;
        iotame_sig_t sig = {write, e->nprocs, gbytes, greq, gap > 0 ? gap : 0};
        entry = iotame_window_entry(f->window, &sig, dmin != dmax);
        s = entry ? iotame_select_choose(entry) : 0;
    } else if (s == AUTO) {
        s = 0; /* nothing to move: the library's call is the cheapest collective no-op */
    }
    const iotame_strategy_t *st = iotame_strategies[s];
    if (st->setup && !(f->ready & 1u << s)) { /* collective: every rank chose s alike */
        int rc = st->setup(e);
        if (rc) return pass(f, a, f->off = rc == -ENOMEM ? "out of memory (collective routing)"
                                                        : "the file cannot be opened for reading and writing (shadow handle)");
        f->ready |= 1u << s;
        json_t *coll = e->node_of ? iotame_stats_collective(f->fs) : NULL; /* the engine's nodes (env.c) */
        if (coll) json_object_set_new(coll, "nodes", json_integer(e->nnodes));
    }
    iotame_coll_fn fn = function_of(st, a->op);
    iotame_coll_call_t c = {.env = e, .args = a, .write = write, .ext = f->ext.v, .next = f->ext.n,
                            .nbytes = nbytes, .info = f->info, .gmin = gmin, .gmax = gmax, .gbytes = gbytes,
                            .view = &f->view};
    int64_t first = 0;
    int packed = 0, rc = 0;
    uint64_t t0 = iotame_monotonic_ns();
    if (st->native) {
        rc = fn(&c);
    } else if (gbytes > 0) {
        /* The data stream: the buffer itself when the datatype is contiguous, else packed. */
        if (iotame_flatten_is_contiguous(a->datatype, (int64_t)a->count, &first)) {
            c.data = (char *)a->buf + first;
        } else if (grow_pack(f, nbytes) == 0) {
            c.data = f->pack;
            packed = 1;
            MPI_Count at = 0;
            if (write && PMPI_Pack_c(a->buf, a->count, a->datatype, f->pack, (MPI_Count)nbytes, &at,
                                     MPI_COMM_SELF) != MPI_SUCCESS)
                c.data = NULL; /* this rank cannot give its data: the engine has no plan, every rank passes */
        }
        rc = c.data || nbytes == 0 ? fn(&c) : iotame_coll_engine(&c, NULL);
    }
    double seconds = (double)(iotame_monotonic_ns() - t0) * 1e-9;

    /* Every rank learns whether any failed, and how long the slowest took. */
    int64_t mine[2] = {rc == -EIO, (int64_t)(iotame_monotonic_ns() - called)}, worst[2] = {0, 0};
    PMPI_Allreduce(mine, worst, 2, MPI_INT64_T, MPI_MAX, e->comm);
    if (!st->native && rc && rc != -EIO) /* could not run, nothing done, on every rank alike */
        return pass(f, a, rc == -ENOMEM ? "out of memory (collective engine)" : "strategy could not run");
    double slowest = (double)worst[1] * 1e-9;
    if (entry)
        iotame_window_measured(f->window, entry, s, slowest > 0 ? (double)gbytes / slowest / 1e6 : 0.0, write, nbytes,
                               &f->ext);
    iotame__coll_count(f->fs, s, 1, nbytes, seconds, st->native ? -1 : c.list_bytes, st->native ? -1 : c.view_bytes);
    if (st->native) return c.mpi_error;
    if (worst[0]) {
        int code = c.mpi_error != MPI_SUCCESS ? c.mpi_error : MPI_ERR_IO;
        PMPI_File_call_errhandler(a->fh, code);
        return code;
    }
    if (write && gbytes > 0) f->written = 1;
    int64_t done = nbytes;
    if (!write) {
        done = bytes_before_eof(f, nbytes);
        MPI_Count at = 0;
        if (packed && PMPI_Unpack_c(f->pack, (MPI_Count)nbytes, &at, a->buf, a->count, a->datatype,
                                    MPI_COMM_SELF) != MPI_SUCCESS) { /* the data read cannot reach the buffer */
            PMPI_File_call_errhandler(a->fh, MPI_ERR_INTERN);
            return MPI_ERR_INTERN;
        }
    }
    if (a->status != MPI_STATUS_IGNORE) {
        PMPI_Status_set_elements_x(a->status, MPI_BYTE, (MPI_Count)done);
        PMPI_Status_set_cancelled(a->status, 0);
    }
    if (!is_at(a->op) && nbytes > 0) PMPI_File_seek(a->fh, (MPI_Offset)(pos + nbytes / f->view.etype_size), MPI_SEEK_SET);
    return MPI_SUCCESS;
}

void iotame_collective_note(MPI_File fh, const char *reason)
{
    iotame_coll_file_t *f = find(fh);
    if (f) iotame_stats_passthrough(f->fs, reason);
}

/* ---- sync and close ---- */

int iotame_collective_sync(MPI_File fh)
{
    iotame_coll_file_t *f = find(fh);
    if (!f || !f->written) return MPI_SUCCESS;
    /* Writes went through the shadow handle: flushing the application's handle alone may not cover them. */
    f->written = 0;
    return PMPI_File_sync(f->env.shadow);
}

/* The statistics of a handle's calls served without a collective of ours; then it is freed. */
static void retire(iotame_coll_file_t *f)
{
    for (int s = 0; s < iotame_nstrategies && s < IOTAME_STRATEGY_MAX; s++)
        if (f->own_calls[s]) iotame__coll_count(f->fs, s, f->own_calls[s], f->own_bytes[s], f->own_seconds[s], -1, -1);
    free_file(f);
}

void iotame_collective_close(MPI_File fh)
{
    iotame_coll_file_t *f = find(fh);
    if (!f) return;
    remove_file(f);
    if (f->window) iotame_window_close(f->window, &f->env.comm); /* may keep the communicator for its last gather */
    for (int s = 0; s < iotame_nstrategies; s++)
        if ((f->ready & 1u << s) && iotame_strategies[s]->teardown) iotame_strategies[s]->teardown(&f->env);
    retire(f);
}

/* A handle still open here is closed inside MPI_Finalize (HDF5 closes its files there), after the runtime has
 * stopped: its windows and statistics are taken now. Its shadow handle stays open: closing it is a blocking
 * collective, and the ranks may hold their open handles in different orders. */
void iotame_collective_finalize(void)
{
    iotame_window_finalize();
    for (size_t i = 0; i < nfiles; i++) retire(files[i]);
    __atomic_sub_fetch(&iotame__collective_handles, nfiles, __ATOMIC_RELAXED);
    free(files);
    files = NULL;
    nfiles = files_cap = 0;
}
