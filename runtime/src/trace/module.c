/* The trace module (trace.h): records the application's MPI-IO calls per process and path record, up to the file's
 * trace.requests, and puts them in the file's statistics section at MPI_Finalize.
 *
 * A data call is seen twice: `before` maps it to its file extents (the file pointer has not moved yet), `after`
 * appends it with its duration. The two hooks of one call run on one thread with nothing of ours between them, so
 * the mapped call waits in a thread-local slot. Metadata calls (open, close, sync, set_size, set_view) come through
 * `meta`, which names the path record only: the recorded calls live in one record per path (trace_file_t), found
 * from a handle's slot on the data path and by its path record in `meta`.
 *
 * Threads: trace_lock protects the list of path records and everything in them (calls, runs, counts). A handle's
 * slot (its view) is the handle's own: set at open and set_view, freed at close (core/module.h). Out of memory, a
 * path record stops recording and counts the calls it could not keep; the job goes on. */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

/* One recorded call; its runs are runs[first .. first + nruns) of its path record. */
typedef struct {
    uint64_t t, d;     /* iotame_now() ticks: start since MPI_Init, duration */
    uint64_t bytes;    /* requested */
    size_t first;
    uint32_t nruns;
    uint16_t op;       /* iotame_op_t */
    uint8_t at_null;   /* the library's offset (shared or ordered file pointer), or a view that cannot be mapped */
    uint8_t truncated; /* more than IOTAME_TRACE_MAX_RUNS runs: the first ones kept */
} trace_call_t;

/* The trace of one path record on this process. */
typedef struct trace_file {
    iotame_file_stats_t *fs;
    uint64_t limit;
    uint64_t dropped; /* calls past the limit */
    uint64_t lost;    /* calls not recorded for lack of memory (recording stopped at the first) */
    trace_call_t *calls;
    size_t ncalls, calls_cap;
    iotame_run_t *runs;
    size_t nruns, runs_cap;
    struct trace_file *next;
} trace_file_t;

/* A handle's state (its slot): its path record's trace and its file view. */
typedef struct {
    trace_file_t *tf;
    int64_t disp, etype_size;
    iotame_flat_t *flat; /* NULL: the default view (bytes from displacement 0) */
    int view_ok;
} trace_handle_t;

/* A data call between its `before` and `after` hooks. */
typedef struct {
    const iotame_io_t *io; /* NULL: none pending */
    trace_file_t *tf;
    uint64_t bytes;
    int at_null, truncated;
    iotame_run_t one; /* a call of the default view: one run, no allocation */
    iotame_runs_t runs;
    const iotame_run_t *v;
    size_t n;
} trace_pending_t;

static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static trace_file_t *trace_files; /* newest first */
static uint64_t trace_start;      /* iotame_now() at MPI_Init */
static _Thread_local trace_pending_t trace_pending;

#define TRACE_OP_NAME(name, cat) #name,
static const char *const trace_op_name[] = {IOTAME_OPS(TRACE_OP_NAME)};
#undef TRACE_OP_NAME

static int trace_is_on(const json_t *v) { return json_is_integer(v) && json_integer_value(v) > 0; }

static int trace_start_hook(const iotame_config_t *cfg)
{
    trace_start = iotame_now();
    return iotame_config_any(cfg, "trace", "requests", trace_is_on);
}

/* The path record's trace (created with the file's limit at its first traced open); NULL when not traced. Under the
 * lock. */
static trace_file_t *trace_file_find(const iotame_file_stats_t *fs)
{
    trace_file_t *tf = trace_files;
    while (tf && tf->fs != fs) tf = tf->next;
    return tf;
}

/* Whether the path record may take one more call; counts it as dropped or lost when not. Under the lock. */
static int trace_file_admits(trace_file_t *tf)
{
    if (tf->lost) tf->lost++;
    else if (tf->ncalls >= tf->limit) tf->dropped++;
    else return 1;
    return 0;
}

/* Room for one more call and n more runs; 0 (and recording stopped) on ENOMEM. Under the lock. */
static int trace_file_reserve(trace_file_t *tf, size_t n)
{
    if (tf->ncalls == tf->calls_cap) {
        size_t cap = tf->calls_cap ? 2 * tf->calls_cap : 64;
        if (cap > tf->limit) cap = (size_t)tf->limit;
        void *grown = realloc(tf->calls, cap * sizeof *tf->calls);
        if (!grown) goto enomem;
        tf->calls = grown;
        tf->calls_cap = cap;
    }
    if (tf->nruns + n > tf->runs_cap) {
        size_t cap = 2 * (tf->nruns + n) + 64;
        void *grown = realloc(tf->runs, cap * sizeof *tf->runs);
        if (!grown) goto enomem;
        tf->runs = grown;
        tf->runs_cap = cap;
    }
    return 1;
enomem:
    tf->lost++;
    return 0;
}

/* Records one call of tf (its runs copied). */
static void trace_file_add(trace_file_t *tf, iotame_op_t op, uint64_t end, uint64_t ticks, uint64_t bytes,
                           const iotame_run_t *runs, size_t n, int at_null, int truncated)
{
    pthread_mutex_lock(&trace_lock);
    if (trace_file_admits(tf) && trace_file_reserve(tf, n)) {
        trace_call_t *c = &tf->calls[tf->ncalls];
        __atomic_store_n(&tf->ncalls, tf->ncalls + 1, __ATOMIC_RELAXED); /* read without the lock in trace_before */
        *c = (trace_call_t){.t = end - ticks - trace_start, .d = ticks, .bytes = bytes, .first = tf->nruns,
                            .nruns = (uint32_t)n, .op = (uint16_t)op, .at_null = (uint8_t)at_null,
                            .truncated = (uint8_t)truncated};
        if (n) memcpy(tf->runs + tf->nruns, runs, n * sizeof *runs);
        tf->nruns += n;
    }
    pthread_mutex_unlock(&trace_lock);
}

/* ---- open, close and the file view ---- */

static void trace_view_free(trace_handle_t *h)
{
    iotame_flatten_free(h->flat);
    h->flat = NULL;
}

static void trace_open(const iotame_open_t *o)
{
    const json_t *v = iotame_config_setting(o->fc, "trace", "requests");
    if (!o->fs || !trace_is_on(v)) return; /* this file is not traced: no state */
    pthread_mutex_lock(&trace_lock);
    trace_file_t *tf = trace_file_find(o->fs);
    if (!tf && (tf = calloc(1, sizeof *tf))) {
        tf->fs = o->fs;
        tf->limit = (uint64_t)json_integer_value(v);
        tf->next = trace_files;
        trace_files = tf;
    }
    pthread_mutex_unlock(&trace_lock);
    if (!tf) return; /* out of memory before the first call: nothing to count it in */
    trace_handle_t *h = o->file ? calloc(1, sizeof *h) : NULL;
    if (!h) {
        pthread_mutex_lock(&trace_lock);
        if (!tf->lost) tf->lost = 1; /* this handle's calls are not seen: recording of the file stops */
        pthread_mutex_unlock(&trace_lock);
        return;
    }
    h->tf = tf;
    h->etype_size = 1;
    h->view_ok = 1;
    *iotame_file_slot(o->file, &iotame_module_trace) = h;
}

static trace_handle_t *trace_handle(iotame_file_t *f) { return *iotame_file_slot(f, &iotame_module_trace); }

static int trace_close(iotame_file_t *f)
{
    trace_handle_t *h = trace_handle(f);
    if (h) {
        trace_view_free(h);
        free(h);
        *iotame_file_slot(f, &iotame_module_trace) = NULL;
    }
    return MPI_SUCCESS;
}

/* The view as the library applies it to native data (another data representation is traced as if native). */
static void trace_set_view(iotame_file_t *f, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                           const char *datarep)
{
    (void)datarep;
    trace_handle_t *h = trace_handle(f);
    if (!h) return;
    trace_view_free(h);
    MPI_Count esize = 0;
    PMPI_Type_size_x(etype, &esize);
    h->disp = (int64_t)disp;
    h->etype_size = (int64_t)esize;
    iotame_view_t v = {h->disp, h->etype_size, NULL};
    h->view_ok = esize > 0 && iotame_flatten_type(filetype, &h->flat) == 0 &&
                 (v.filetype = h->flat, iotame_flatten_view_ok(&v));
}

/* ---- the data path ---- */

/* Maps the call to its file extents into p (p->io set: `after` records it). */
static void trace_map(trace_pending_t *p, const trace_handle_t *h, const iotame_io_t *io)
{
    MPI_Count tsize = 0;
    if (PMPI_Type_size_x(io->datatype, &tsize) != MPI_SUCCESS || tsize < 0) tsize = 0;
    p->bytes = io->count > 0 ? (uint64_t)io->count * (uint64_t)tsize : 0;
    MPI_Offset pos = io->offset; /* in etypes of the view */
    p->at_null = io->kind == IOTAME_IO_SHARED || !h->view_ok ||
                 (!io->at && PMPI_File_get_position(io->fh, &pos) != MPI_SUCCESS) || pos < 0;
    if (p->at_null || !p->bytes) return;
    const int64_t start = (int64_t)pos * h->etype_size, len = (int64_t)p->bytes;
    if (!h->flat) { /* the default view */
        p->one = (iotame_run_t){h->disp + start, len, 1, len};
        p->v = &p->one;
        p->n = 1;
        return;
    }
    iotame_view_t view = {h->disp, h->etype_size, h->flat};
    int rc = iotame_flatten_view_runs(&view, start, len, &p->runs);
    if (rc == -ENOMEM) { /* counted as lost in `after` */
        p->tf = NULL;
        return;
    }
    if (rc != 0) {
        p->at_null = 1;
        return;
    }
    p->v = p->runs.v;
    p->n = p->runs.n;
    if (p->n > IOTAME_TRACE_MAX_RUNS) {
        p->n = IOTAME_TRACE_MAX_RUNS;
        p->truncated = 1;
    }
}

static void trace_before(const iotame_io_t *io)
{
    trace_handle_t *h = iotame_file_known(io->file) ? trace_handle(io->file) : NULL;
    if (!h) return;
    trace_pending_t *p = &trace_pending;
    *p = (trace_pending_t){.io = io, .tf = h->tf};
    /* a call past the limit is only counted: not mapped */
    if (__atomic_load_n(&h->tf->ncalls, __ATOMIC_RELAXED) < h->tf->limit) trace_map(p, h, io);
}

static void trace_after(const iotame_io_t *io, int rc, uint64_t ticks, uint64_t bytes)
{
    (void)rc;
    (void)bytes;
    trace_pending_t *p = &trace_pending;
    if (p->io != io) return;
    uint64_t end = iotame_now();
    if (p->tf) {
        trace_file_add(p->tf, io->op, end, ticks, p->bytes, p->v, p->n, p->at_null, p->truncated);
    } else { /* the mapping ran out of memory: recording of the file stops */
        trace_handle_t *h = trace_handle(io->file);
        pthread_mutex_lock(&trace_lock);
        h->tf->lost++;
        pthread_mutex_unlock(&trace_lock);
    }
    iotame_runs_free(&p->runs);
    p->io = NULL;
}

/* open, close, sync, set_size and set_view: the calls without data of their own the trace shows. */
static void trace_meta(iotame_file_stats_t *fs, iotame_op_t op, uint64_t ticks)
{
    if (!fs || (op != IOTAME_OP_open && op != IOTAME_OP_close && op != IOTAME_OP_sync && op != IOTAME_OP_set_size &&
                op != IOTAME_OP_set_view))
        return;
    uint64_t end = iotame_now();
    pthread_mutex_lock(&trace_lock);
    trace_file_t *tf = trace_file_find(fs);
    pthread_mutex_unlock(&trace_lock);
    if (tf) trace_file_add(tf, op, end, ticks, 0, NULL, 0, 0, 0);
}

/* ---- the statistics ---- */

static json_t *trace_call_json(const trace_file_t *tf, const trace_call_t *c, double s_per_tick)
{
    json_t *at = json_array();
    for (uint32_t i = 0; at && i < c->nruns; i++) {
        const iotame_run_t *r = &tf->runs[c->first + i];
        json_array_append_new(at, json_pack("[I,I,I,I]", (json_int_t)r->off, (json_int_t)r->len,
                                            (json_int_t)r->count, (json_int_t)r->stride));
    }
    json_t *call = json_pack("{s:s,s:f,s:f,s:I,s:o}", "op", trace_op_name[c->op], "t", c->t * s_per_tick, "d",
                             c->d * s_per_tick, "bytes", (json_int_t)c->bytes, "at", c->at_null ? json_null() : at);
    if (c->at_null) json_decref(at);
    if (call && c->truncated) json_object_set_new(call, "at_truncated", json_true());
    return call;
}

/* Every traced path record's section: this rank's calls (rank 0 merges the ranks' sections). */
static void trace_finalize(void)
{
    const double s_per_tick = iotame_ns_per_tick() * 1e-9;
    const int rank = iotame_core_rank();
    pthread_mutex_lock(&trace_lock);
    for (trace_file_t *tf = trace_files, *next; tf; tf = next) {
        next = tf->next;
        json_t *section = tf->ncalls || tf->dropped || tf->lost ? iotame_stats_section(tf->fs, &iotame_module_trace)
                                                                 : NULL;
        json_t *calls = section ? json_array() : NULL;
        for (size_t i = 0; calls && i < tf->ncalls; i++)
            json_array_append_new(calls, trace_call_json(tf, &tf->calls[i], s_per_tick));
        if (calls) {
            json_object_set_new(section, "limit", json_integer((json_int_t)tf->limit));
            json_object_set_new(section, "procs", json_pack("[i]", rank));
            json_object_set_new(section, "dropped", json_pack("[I]", (json_int_t)tf->dropped));
            json_object_set_new(section, "calls", json_pack("[o]", calls));
            if (tf->lost) json_object_set_new(section, "out_of_memory", json_integer((json_int_t)tf->lost));
        }
        free(tf->calls);
        free(tf->runs);
        free(tf);
    }
    trace_files = NULL;
    pthread_mutex_unlock(&trace_lock);
}

/* Rank 0: one rank's section appended to the merged one (ranks come in ascending order). */
static void trace_merge(json_t *into, const json_t *rank)
{
    static const char *const lists[] = {"procs", "dropped", "calls"};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
        json_array_extend(json_object_get(into, lists[i]), json_object_get(rank, lists[i]));
    json_int_t lost = json_integer_value(json_object_get(into, "out_of_memory")) +
                      json_integer_value(json_object_get(rank, "out_of_memory"));
    if (lost) json_object_set_new(into, "out_of_memory", json_integer(lost));
}

const iotame_module_t iotame_module_trace = {
    .name = "trace",
    .settings = "trace",
    .start = trace_start_hook,
    .open = trace_open,
    .set_view = trace_set_view,
    .before = trace_before,
    .after = trace_after,
    .meta = trace_meta,
    .close = trace_close,
    .finalize = trace_finalize,
    .merge = trace_merge,
};
