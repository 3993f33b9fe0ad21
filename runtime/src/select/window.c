/* The window protocol: how one handle under strategy auto feeds the selector's policy (select.c).
 *
 * A measured call costs two collectives of ours (the router gathers the call's signature and reduces its time), and
 * with a library strategy that does none of its own (independent) they hold the ranks in lockstep: a job of small
 * calls ran at half the speed of the same strategy fixed. So once a signature runs with a library strategy, its calls
 * are served in steady windows, without any collective of ours: every rank checks that its own part of each call
 * keeps the shape of the call that started the window (operation, bytes, extents, span, the same step between
 * starts), and one gather at the window's end confirms that every rank saw the same and gives the policy the window's
 * throughput. A window whose calls changed shape is not measured, and the next call is measured on its own. The
 * strategy is the same on every rank for the whole window, whatever the calls are, so nothing can diverge.
 *
 * Windows are of three kinds: the opening window (a handle's first calls, served by the strategy every known
 * signature of the operation would run, else the first candidate; its end gives the signature), monitoring windows of
 * a settled choice, and examination windows of a library candidate (it is examined as it would run if it won).
 *
 * A blocking gather at every window's end makes the ranks wait for each other; so the gather is posted without
 * waiting, tested at every call and completed at the next window's end: the policy learns of a window one window
 * late, and the next window's strategy is decided from the windows before, alike on every rank. A handle closed
 * with a gather posted completes it at MPI_Finalize, where the ranks meet anyway (docs/design/select-policy.md). */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "select.h"

/* what every rank tells at the end of a steady window: the window's shape and times on this rank, and the least
 * time it spent in a collective of ours so far */
enum { W_CHANGED, W_DELTA, W_START, W_END, W_BYTES, W_EXTENTS, W_WARM_NS, W_NS, W_COST_NS, WINDOW_FIELDS };
/* A steady window monitors a settled choice, opens a handle, or examines a library candidate. */
enum { WINDOW_MONITOR, WINDOW_OPENING, WINDOW_EXAM };
/* the open's agreement: whether every rank holds the knowledge, the readahead, the opening windows of reads and
 * writes on a local file system [0..3] and elsewhere [4..7], each as (max, -min) over the ranks */
enum { A_HAS, A_HAS_NOT, A_READAHEAD_KB, A_OPENING, A_FIELDS = A_OPENING + 8 };
_Static_assert((int)A_FIELDS == (int)IOTAME_WINDOW_AGREE, "the window's part of the open's agreement");

struct iotame_window {
    iotame_file_stats_t *fs;
    iotame_selector_t *sel;
    MPI_Comm comm; /* the handle's (borrowed), owned after the close of a handle whose gather is still posted */
    int rank, nprocs;
    /* configuration */
    int cand[IOTAME_STRATEGY_MAX], ncand;            /* configured */
    int order[2][IOTAME_STRATEGY_MAX], norder[2]; /* examined, for reads [0] and writes [1] (agreed at open) */
    iotame_select_conf_t conf; /* its candidates: order[op]; its knobs: knobs */
    iotame_select_knobs_t knobs;
    int shortest; /* the opening window's length, and the shortest steady window's: steady_windows x exam_calls */
    char *knowledge_path;
    int knowledge_broken; /* rank 0: the file exists but is not a knowledge file (reported at load) */
    json_t *knowledge;
    int opening[2]; /* the strategy of the opening window of reads [0], writes [1]; -1: none */
    int started;    /* the first call came (the opening window starts there) */
    /* the window under way (left > 0) */
    int left, calls, changed, strategy, write, fresh, kind;
    iotame_sel_entry_t *entry;
    uint64_t generation;                      /* the selector's, when the entry was taken */
    int64_t row[3], first, start, delta;      /* this rank's bytes, extents, span; first start; last start; step */
    double seconds, warm;                     /* the window's calls; its first call */
    int window_calls;                         /* the next steady window's length (agreed at every window's end) */
    int64_t cost_ns;                          /* this rank's least time in a collective of ours */
    int64_t served, measured, unmeasured;     /* calls served in windows; windows ended, every rank alike */
    int64_t *rows;                            /* nprocs x WINDOW_FIELDS, gathered at a window's end */
    /* the window that ended last, its rows gathered without waiting (post) until the next one ends */
    int pending, pend_strategy, pend_write, pend_calls, pend_kind;
    iotame_sel_entry_t *pend_entry;
    MPI_Request pend_req;
    int64_t pend_row[WINDOW_FIELDS], pend_ns;
    int closed;
    iotame_window_t *next;
};

/* ---- the windows of the job, and the selector of each file record (shared by the file's handles) ---- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static iotame_window_t *windows;
static struct selector {
    const iotame_file_stats_t *fs;
    iotame_selector_t *sel;
    struct selector *next;
} *selectors;

static iotame_selector_t *selector_of(const iotame_file_stats_t *fs)
{
    pthread_mutex_lock(&lock);
    struct selector *s;
    for (s = selectors; s && s->fs != fs; s = s->next) {}
    if (!s && (s = calloc(1, sizeof *s))) {
        if ((s->sel = iotame_select_new())) {
            s->fs = fs;
            s->next = selectors;
            selectors = s;
        } else {
            free(s);
            s = NULL;
        }
    }
    pthread_mutex_unlock(&lock);
    return s ? s->sel : NULL;
}

static void unlink_window(iotame_window_t *w)
{
    pthread_mutex_lock(&lock);
    for (iotame_window_t **p = &windows; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    pthread_mutex_unlock(&lock);
}

static void free_window(iotame_window_t *w)
{
    json_decref(w->knowledge);
    free(w->knowledge_path);
    free(w->rows);
    free(w);
}

/* ---- open ---- */

/* The candidates of an operation on the file's file system and library, in examination order: a strategy that does
 * not apply there does the library's collective call, so with passthrough also a candidate it is left out (both
 * would measure one thing); the likely ones first, in the configured order, then the others. */
static int candidates_on(const iotame_window_t *w, const iotame_coll_env_t *env, int op, int *cand)
{
    int has_pt = 0, k = 0;
    for (int i = 0; i < w->ncand; i++) has_pt |= w->cand[i] == iotame_strategy_find("passthrough");
    for (int likely = 1; likely >= 0; likely--)
        for (int i = 0; i < w->ncand; i++) {
            const iotame_strategy_t *st = iotame_strategies[w->cand[i]];
            if ((has_pt && st->applies && !st->applies(env)) || likely != (!st->likely || st->likely(env, op))) continue;
            cand[k++] = w->cand[i];
        }
    return k;
}

static iotame_select_conf_t conf_of(const iotame_window_t *w, int op)
{
    iotame_select_conf_t c = w->conf;
    c.candidates = w->order[op];
    c.ncandidates = w->norder[op];
    return c;
}

/* The strategy of the opening window of each operation ([0] reads, [1] writes) as this rank sees it, on a local
 * file system or not (the file system is agreed with it): a library strategy that every signature known of the
 * operation would run, or, none known, the first candidate; else -1 (the first call is measured on its own). A job
 * that starts from the knowledge file then runs its winner without a collective of ours from the first call, as a
 * job that knows nothing runs its first candidate. */
static void propose_opening(iotame_window_t *w, int local_fs, int opening[2])
{
    const iotame_coll_env_t env = {.local_fs = local_fs, .write_sieving = iotame_coll_write_sieving()};
    for (int op = 0; op < 2; op++) {
        w->norder[op] = candidates_on(w, &env, op, w->order[op]);
        iotame_select_conf_t conf = conf_of(w, op);
        int s = conf.budget < 1 ? iotame_select_opening(w->sel, w->knowledge, &conf, op, w->nprocs) : -1;
        opening[op] = s >= 0 && iotame_strategies[s]->native ? s : -1;
    }
}

/* The file's value of a collective setting, else its default in runtime/settings.json (one source of truth). */
static const json_t *setting(const iotame_file_config_t *fc, const char *key)
{
    return iotame_config_setting(fc, "collective", key);
}

static iotame_window_t *new_window(iotame_file_stats_t *fs, const iotame_file_config_t *fc, int nprocs)
{
    iotame_window_t *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->fs = fs;
    w->nprocs = nprocs;
    w->comm = MPI_COMM_NULL;
    w->pend_req = MPI_REQUEST_NULL;
    size_t i;
    json_t *item;
    json_array_foreach((json_t *)setting(fc, "candidates"), i, item) {
        int s = iotame_strategy_find(json_string_value(item));
        int dup = 0;
        for (int k = 0; k < w->ncand; k++) dup |= w->cand[k] == s;
        if (s >= 0 && !dup && w->ncand < IOTAME_STRATEGY_MAX) w->cand[w->ncand++] = s;
    }
    if (w->ncand == 0) w->cand[w->ncand++] = 0; /* settings.json without a default: passthrough alone */
    const json_t *v;
    iotame_select_conf_t *c = &w->conf;
    c->exam_calls = (int)json_integer_value(setting(fc, "exam_calls"));
    c->trace = json_integer_value(setting(fc, "trace"));
    c->threshold = json_number_value(setting(fc, "threshold"));
    c->budget = json_number_value(setting(fc, "exam_budget"));
    c->window_seconds = c->budget < 1 ? json_number_value(setting(fc, "window_seconds")) : 0;
    c->knobs = &w->knobs;
    w->knobs = (iotame_select_knobs_t){json_number_value(setting(fc, "drop")),
                                       (int)json_integer_value(setting(fc, "retry_every")),
                                       json_number_value(setting(fc, "threshold_max")),
                                       json_number_value(setting(fc, "gate_calls")),
                                       json_number_value(setting(fc, "window_max_seconds"))};
    const char *path = iotame_stats_path(fs);
    c->readahead = (v = setting(fc, "readahead")) ? json_integer_value(v) : path ? iotame_coll_readahead(path) : 0;
    w->shortest = w->window_calls = (int)json_integer_value(setting(fc, "steady_windows")) * c->exam_calls;
    const char *k = json_string_value(setting(fc, "knowledge"));
    int ok = 1;
    if (k && *k) ok &= (w->knowledge_path = strdup(k)) != NULL;
    w->rows = malloc((size_t)nprocs * WINDOW_FIELDS * sizeof *w->rows);
    w->sel = selector_of(fs);
    if (!ok || !w->rows || !w->sel) {
        free_window(w);
        return NULL;
    }
    return w;
}

iotame_window_t *iotame_window_open(iotame_file_stats_t *fs, const iotame_file_config_t *fc, MPI_Comm comm,
                                    int agree[IOTAME_WINDOW_AGREE])
{
    int rank, nprocs, broken = 0, exists = 0;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &nprocs);
    const char *k = json_string_value(setting(fc, "knowledge"));
    json_t *knowledge = k && *k ? iotame_knowledge_load(k, comm, rank, &broken, &exists) : NULL;
    iotame_window_t *w = fs ? new_window(fs, fc, nprocs) : NULL;
    memset(agree, 0, IOTAME_WINDOW_AGREE * sizeof *agree);
    if (!w) {
        json_decref(knowledge);
        return NULL;
    }
    w->rank = rank;
    w->knowledge = knowledge;
    w->knowledge_broken = broken;
    agree[A_HAS] = exists && knowledge;
    agree[A_HAS_NOT] = exists && !knowledge;
    agree[A_READAHEAD_KB] = (int)(w->conf.readahead >> 10 < INT_MAX ? w->conf.readahead >> 10 : INT_MAX);
    for (int away = 0; away < 2; away++) {
        int p[2];
        propose_opening(w, !away, p);
        for (int op = 0; op < 2; op++) {
            agree[A_OPENING + 4 * away + 2 * op] = p[op];
            agree[A_OPENING + 4 * away + 2 * op + 1] = -p[op];
        }
    }
    pthread_mutex_lock(&lock);
    w->next = windows;
    windows = w;
    pthread_mutex_unlock(&lock);
    return w;
}

void iotame_window_agreed(iotame_window_t *w, const iotame_coll_env_t *env, const int agree[IOTAME_WINDOW_AGREE],
                          int64_t cost_ns)
{
    w->comm = env->comm;
    w->conf.readahead = (int64_t)agree[A_READAHEAD_KB] << 10; /* every rank's selector alike */
    w->cost_ns = cost_ns; /* what a collective of ours costs, until a gather costs less */
    const int *open = agree + A_OPENING + 4 * !env->local_fs;
    for (int op = 0; op < 2; op++) w->opening[op] = open[2 * op] == -open[2 * op + 1] ? open[2 * op] : -1;
    if (agree[A_HAS] && agree[A_HAS_NOT]) { /* some rank has no copy of the knowledge: no rank uses it */
        json_decref(w->knowledge);
        w->knowledge = NULL;
        if (w->rank == 0)
            iotame_log_warn("knowledge file %s: a rank could not hold it (out of memory): not used\n", w->knowledge_path);
    }
    for (int op = 0; op < 2; op++) w->norder[op] = candidates_on(w, env, op, w->order[op]);
}

/* ---- windows ---- */

static iotame_sel_entry_t *entry_of(iotame_window_t *w, const iotame_sig_t *sig)
{
    const iotame_select_conf_t conf = conf_of(w, sig->write);
    iotame_sel_entry_t *e = iotame_select_entry(w->sel, sig, &conf, w->knowledge);
    json_t *d = iotame_select_decisions(w->sel), *section = d ? iotame_stats_collective(w->fs) : NULL;
    if (section && json_object_get(section, "decisions") != d) json_object_set(section, "decisions", d);
    return e;
}

/* This rank's part of a call as a window compares it: bytes, extents, span; and its first byte. */
static void shape(int64_t nbytes, const iotame_extents_t *x, int64_t row[3], int64_t *start)
{
    *start = x->n ? x->v[0].off : 0;
    row[0] = nbytes;
    row[1] = (int64_t)x->n;
    row[2] = x->n ? x->v[x->n - 1].off + x->v[x->n - 1].len - *start : 0;
}

/* A window of strategy s. entry NULL: the opening window, or a window that goes on from it, whose entry its
 * gathered signature gives. The opening window's first call sets the shape; other windows go on with it. */
static void start(iotame_window_t *w, iotame_sel_entry_t *entry, int s, int write, int kind)
{
    w->entry = entry;
    w->strategy = s;
    w->write = write;
    w->kind = kind;
    w->generation = iotame_select_generation(w->sel);
    w->left = w->calls = kind == WINDOW_EXAM ? iotame_select_exam_left(entry) : entry ? w->window_calls : w->shortest;
    w->changed = 0;
    w->delta = INT64_MIN; /* the step between starts: set by the window's second call */
    w->seconds = w->warm = 0;
    w->fresh = kind == WINDOW_OPENING;
}

/* Posts this rank's row of the window of n calls that just ended (the gather completes while the next window
 * runs) and keeps what the window was, for finish. */
static void post(iotame_window_t *w, int n)
{
    int64_t *m = w->pend_row;
    m[W_CHANGED] = w->changed || w->generation != iotame_select_generation(w->sel);
    m[W_DELTA] = w->delta;
    m[W_START] = w->first;
    m[W_END] = w->first + w->row[2];
    m[W_BYTES] = w->row[0];
    m[W_EXTENTS] = w->row[1];
    m[W_WARM_NS] = (int64_t)(w->warm * 1e9);
    m[W_NS] = (int64_t)(w->seconds * 1e9);
    m[W_COST_NS] = w->cost_ns;
    w->pend_entry = w->entry;
    w->pend_strategy = w->strategy;
    w->pend_write = w->write;
    w->pend_kind = w->kind;
    w->pend_calls = n;
    w->left = 0;
    uint64_t t0 = iotame_monotonic_ns();
    PMPI_Iallgather(m, WINDOW_FIELDS, MPI_INT64_T, w->rows, WINDOW_FIELDS, MPI_INT64_T, w->comm, &w->pend_req);
    w->pend_ns = (int64_t)(iotame_monotonic_ns() - t0);
    w->pending = 1;
}

/* Completes the posted window (collective): when every rank saw calls of one shape, moving alike, the policy gets
 * the window at the slowest rank's time. `unseen`: calls served since, in a window not posted yet (the next window's
 * length counts them as served when it waits for credit). Returns the window's entry; NULL when it was not
 * measured. */
static iotame_sel_entry_t *finish(iotame_window_t *w, int unseen)
{
    uint64_t t0 = iotame_monotonic_ns();
    PMPI_Wait(&w->pend_req, MPI_STATUS_IGNORE);
    const int64_t took = w->pend_ns + (int64_t)(iotame_monotonic_ns() - t0);
    w->cost_ns = took < w->cost_ns ? took : w->cost_ns; /* noise only adds to a collective's time */
    w->pending = 0;
    int changed = 0, moving = 0;
    int64_t delta = 0, gmin = INT64_MAX, gmax = INT64_MIN, gbytes = 0, greq = 0, warm = 0, all = 0, cost = INT64_MAX;
    for (int r = 0; r < w->nprocs; r++) {
        const int64_t *x = w->rows + (size_t)r * WINDOW_FIELDS;
        changed |= x[W_CHANGED] != 0;
        if (x[W_EXTENTS] > 0) { /* ranks with data move by one step (the signature's span stays the same) */
            changed |= moving && x[W_DELTA] != delta;
            delta = x[W_DELTA];
            moving = 1;
            gmin = x[W_START] < gmin ? x[W_START] : gmin;
            gmax = x[W_END] > gmax ? x[W_END] : gmax;
        }
        gbytes += x[W_BYTES];
        greq += x[W_EXTENTS];
        warm = x[W_WARM_NS] > warm ? x[W_WARM_NS] : warm;
        all = x[W_NS] > all ? x[W_NS] : all;
        cost = x[W_COST_NS] < cost ? x[W_COST_NS] : cost;
    }
    iotame_sel_entry_t *en = w->pend_entry;
    const int s = w->pend_strategy, kind = w->pend_kind;
    int n = w->pend_calls;
    if (changed || (!en && gbytes <= 0)) {
        w->unmeasured++;
        return NULL;
    }
    if (!en) { /* the signature, the same for every call of the window */
        int64_t gap = greq > 1 ? (gmax - gmin - gbytes) / (greq - 1) : 0;
        iotame_sig_t sig = {w->pend_write, w->nprocs, gbytes, greq, gap > 0 ? gap : 0};
        if (!(en = entry_of(w, &sig))) return NULL;
    }
    if (kind == WINDOW_OPENING) { /* the handle's first call is a transition call */
        const double first = warm > 0 ? gbytes * 1e3 / warm : 0;
        if (iotame_select_choose(en) == s) iotame_select_update(w->sel, en, s, first);
        else iotame_select_served(w->sel, en, s, 1, first);
        n--;
        all -= warm;
    }
    w->measured++;
    if (kind == WINDOW_EXAM) {
        iotame_select_exam_window(w->sel, en, s, n, warm, all);
    } else {
        double mbs = all > 0 ? (double)iotame_select_bytes(en) * n * 1e3 / all : 0;
        /* call by call, as long as the choice stands (a monitoring window stops where an examination starts; the
         * opening window's calls are the first candidate's examination); the rest is served, not measured */
        int k = 0;
        for (; k < n && iotame_select_choose(en) == s && (kind != WINDOW_MONITOR || iotame_select_settled(en)); k++)
            iotame_select_update(w->sel, en, s, mbs);
        iotame_select_served(w->sel, en, s, n - k, mbs);
    }
    const int wait = iotame_select_wait_calls(en);
    if (n > 0) /* the next window's length, from the gather's cost and the calls' mean time, both agreed */
        w->window_calls = iotame_select_window_calls(&w->conf, w->shortest, cost, (double)all / n,
                                                     iotame_select_running(en), wait > unseen ? wait - unseen : 0);
    return en;
}

/* After the policy moved on: a window of the library strategy it chose next, if any (an examined library
 * candidate's calls are a window of their own; a settled library choice is monitored in windows), going on with the
 * shape of the calls before. Returns whether one started. A library candidate is examined as it runs when it wins:
 * measured call by call, in lockstep with our reductions, its ranks cannot drift apart as they do unsynchronized. */
static int next(iotame_window_t *w, iotame_sel_entry_t *en, int write)
{
    int s = iotame_select_choose(en);
    if (!iotame_strategies[s]->native) return 0;
    if (iotame_select_settled(en)) {
        iotame_select_rebase(en); /* windows are measured otherwise than single calls */
        start(w, en, s, write, WINDOW_MONITOR);
    } else if (iotame_select_exam_left(en) > 0) {
        start(w, en, s, write, WINDOW_EXAM);
    } else {
        return 0;
    }
    return 1;
}

/* The end of a steady window: the window before it is finished, this one posted, and the next one starts while the
 * choice stands (every rank alike: it rests on finished windows only). Else this one is finished too, and the next
 * call is measured on its own. */
static void end(iotame_window_t *w)
{
    iotame_sel_entry_t *en = w->entry;
    int stop = 0;
    if (w->pending) {
        iotame_sel_entry_t *before = finish(w, w->calls);
        stop = before == NULL; /* the calls changed shape */
        if (!en) en = before;  /* a window going on from the opening one: its signature's entry */
    }
    const int s = w->strategy, write = w->write, kind = w->kind;
    post(w, w->calls);
    if (!stop && (en ? kind == WINDOW_MONITOR && iotame_select_settled(en) && iotame_select_choose(en) == s
                     : kind == WINDOW_OPENING)) {
        start(w, en, s, write, WINDOW_MONITOR); /* the shape goes on */
        return;
    }
    /* no gather stays posted while the policy decides on this window, or calls are measured one by one */
    iotame_sel_entry_t *now = finish(w, 0);
    if (!stop && now) next(w, now, write);
}

int iotame_window_serving(iotame_window_t *w, int write)
{
    if (!w->started) { /* the opening window, when nothing is known of the operation (agreed at open) */
        w->started = 1;
        if (w->opening[write] >= 0) start(w, NULL, w->opening[write], write, WINDOW_OPENING);
    }
    return w->left > 0 ? w->strategy : -1;
}

void iotame_window_served(iotame_window_t *w, int write, int shaped, int64_t nbytes, const iotame_extents_t *ext,
                          double seconds)
{
    int64_t row[3], at = 0;
    if (!shaped || write != w->write) {
        w->changed = 1;
    } else if (w->fresh) {
        shape(nbytes, ext, w->row, &w->start);
        w->first = w->start;
        w->fresh = 0;
    } else {
        shape(nbytes, ext, row, &at);
        if (w->delta == INT64_MIN) w->delta = at - w->start;
        w->changed |= memcmp(row, w->row, sizeof row) != 0 || at - w->start != w->delta;
        w->start = at;
    }
    if (w->left == w->calls) w->warm = seconds;
    w->seconds += seconds;
    w->served++;
    int done;
    if (w->pending) PMPI_Test(&w->pend_req, &done, MPI_STATUS_IGNORE); /* the last window's gather moves on */
    if (--w->left == 0) end(w);
}

uint64_t iotame_window_digest(const iotame_window_t *w) { return iotame_select_digest(w->sel); }

iotame_sel_entry_t *iotame_window_entry(iotame_window_t *w, const iotame_sig_t *sig, int diverged)
{
    if (diverged) {
        iotame_stats_passthrough(w->fs, "selector state differed between ranks (reset)");
        iotame_select_reset(w->sel);
    }
    return entry_of(w, sig);
}

void iotame_window_measured(iotame_window_t *w, iotame_sel_entry_t *e, int strategy, double mbs, int write,
                            int64_t nbytes, const iotame_extents_t *ext)
{
    iotame_select_update(w->sel, e, strategy, mbs);
    if (next(w, e, write)) { /* the window's shape is this call's */
        shape(nbytes, ext, w->row, &w->start);
        w->first = w->start;
    }
}

/* ---- the end ---- */

static void add_count(json_t *o, const char *key, int64_t n)
{
    json_object_set_new(o, key, json_integer(json_integer_value(json_object_get(o, key)) + n));
}

/* The statistics of a closed handle's windows, and its knowledge saved (rank 0); then it is freed. */
static void retire(iotame_window_t *w)
{
    json_t *coll = w->served ? iotame_stats_collective(w->fs) : NULL;
    if (coll) { /* the calls steady windows served; windows measured, and not (calls changed) */
        add_count(coll, "steady_calls", w->served);
        add_count(coll, "steady_windows_measured", w->measured);
        add_count(coll, "steady_windows_changed", w->unmeasured);
    }
    if (w->knowledge_path && w->rank == 0 && !w->knowledge_broken && iotame_knowledge_save(w->sel, w->knowledge_path) != 0)
        iotame_log_warn("cannot write the knowledge file %s\n", w->knowledge_path);
    if (w->closed && w->comm != MPI_COMM_NULL) PMPI_Comm_free(&w->comm);
    free_window(w);
}

/* A window under way is posted as far as it went (every rank made the same calls). */
static void post_last(iotame_window_t *w)
{
    if (w->left > 0 && w->left < w->calls) {
        if (w->pending) finish(w, 0);
        post(w, w->calls - w->left);
    }
}

/* Finishing the last window's gather at the close would synchronize the ranks there, and a short phase never ends
 * its opening window before the close: posted at the close and finished at MPI_Finalize, where the ranks meet
 * anyway, it costs nothing, and its window reaches the statistics and the knowledge file at the end of the job. */
void iotame_window_close(iotame_window_t *w, MPI_Comm *comm)
{
    if (w->comm == MPI_COMM_NULL) { /* the open failed on some rank: nothing to post, nothing learned */
        unlink_window(w);
        free_window(w);
        return;
    }
    post_last(w);
    w->closed = 1;
    if (w->pending) {
        *comm = MPI_COMM_NULL; /* ours now: the gather runs on it */
        return;
    }
    w->comm = MPI_COMM_NULL;
    unlink_window(w);
    retire(w);
}

/* A handle still open here is closed inside MPI_Finalize (HDF5 closes its files there), after the runtime has
 * stopped, so its close is never seen: its last window and its knowledge are taken now. */
void iotame_window_finalize(void)
{
    for (iotame_window_t *w = windows; w; w = w->next)
        if (!w->closed) post_last(w);
    /* every gather is posted before any is waited for: they all progress meanwhile */
    while (windows) {
        iotame_window_t *w = windows;
        windows = w->next;
        if (w->pending) finish(w, 0);
        retire(w);
    }
}
