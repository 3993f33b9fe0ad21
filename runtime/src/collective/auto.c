/* auto: the selector as a chooser (Orthrus, Zhang, Ou, Davis and Jiang, ISC 2014; docs/collective.md, "The
 * selector"). It serves no call itself: for each call it picks one of the registry's strategies (strategy.h, "a
 * chooser"), which the router then runs. Its state of a handle is the window protocol (window.c) over the file
 * record's selector (select/, shared by the handles of one path), the knowledge an earlier run left, and the gather
 * a steady window posts. This file is the MPI side of it: the open's agreement, the gathers, the statistics and
 * the knowledge file.
 *
 * The close needs no collective that waits: a steady window under way is posted there, and MPI_Finalize finishes
 * what the closed handles left posted, where the ranks meet anyway (docs/design/select-policy.md). */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "posix/posix.h"
#include "strategy.h"
#include "window.h"

/* the open's agreement: whether every rank holds the knowledge, the readahead in KiB plus one (0: not configured
 * nor read at the open), and the opening windows of reads and writes on a local file system [0..3] and elsewhere
 * [4..7], each as (max, -min) over the ranks. The machine profile is agreed by the core (the file record's), the
 * file's facts by the router (iotame_coll_env_t). */
enum { A_HAS, A_HAS_NOT, A_READAHEAD_KB, A_OPENING, A_FIELDS = A_OPENING + 8 };
_Static_assert((int)A_FIELDS == (int)IOTAME_COLL_AGREE, "auto's part of the open's agreement");

/* The selector of a file, shared by the handles of its path, and its "decisions" in the file's statistics (linked
 * when its first entry appears, filled at MPI_Finalize). Keyed by the file's statistics record, whose life it
 * shares: it outlives every handle (a later open of the path goes on from it), and the last windows of the path's
 * handles, posted at their close (or at MPI_Finalize for a handle still open), wait here for MPI_Finalize. */
typedef struct auto_selector {
    iotame_file_stats_t *fs;
    iotame_selector_t *sel;
    json_t *decisions;
    json_t *used; /* what auto_predict applied of the learned corrections to each signature (corrections.c) */
    struct iotame_coll_choice *left; /* handles' states whose last window completes at MPI_Finalize */
    struct auto_selector *next;
} auto_selector_t;

/* The cost model's part of a handle (NULL profile: none): the file record's profile, and the agreed facts of the
 * handle a prediction needs (the strategies' model terms). */
typedef struct {
    const iotame_profile_found_t *profile;
    const char *refused; /* this rank's lines of the profiles refused on the way (borrowed) */
    int differs;         /* the ranks found different profiles */
    int64_t nodes, targets, unit;
    iotame_model_call_t own[IOTAME_STRATEGY_MAX]; /* each strategy's own facts of the handle (its model_call) */
    int sieves, kind[IOTAME_STRATEGY_MAX];
    double error;
    json_t *corrections; /* the knowledge file's corrections of every profile ("model"), read at the open */
    const json_t *learned; /* those of this file's profile (borrowed from corrections; NULL: none) */
    char learned_key[16];  /* the profile's key in them */
} auto_model_t;

struct iotame_coll_choice {
    iotame_window_t w;
    iotame_file_stats_t *fs;
    auto_selector_t *selector;
    int rank;
    int cand[IOTAME_STRATEGY_MAX], ncand; /* configured */
    char *knowledge_path;
    int knowledge_broken; /* rank 0: the file exists but is not a knowledge file (reported at load) */
    MPI_Comm comm; /* the handle's (borrowed), owned after the close of a handle whose gather is still posted */
    int64_t *rows; /* nprocs x IOTAME_WINDOW_FIELDS, gathered at a window's end */
    MPI_Request req;
    int64_t post_ns;
    iotame_sel_entry_t *entry; /* the entry of the call chosen last (choose, then measured) */
    auto_model_t model;
    /* which strategies served a call of this handle: a native one's first call, or the engine's set-up (shared by
     * the engine strategies), is paid once per handle (the model's `setup`) */
    int served[IOTAME_STRATEGY_MAX], engine_set_up;
    int closed;
    struct iotame_coll_choice *next; /* in its selector's `left` */
};

/* ---- the selector of each file ---- */

static pthread_mutex_t auto_lock = PTHREAD_MUTEX_INITIALIZER;
static auto_selector_t *auto_selectors;

static auto_selector_t *auto_selector_of(iotame_file_stats_t *fs)
{
    pthread_mutex_lock(&auto_lock);
    auto_selector_t *s;
    for (s = auto_selectors; s && s->fs != fs; s = s->next) {}
    if (!s && (s = calloc(1, sizeof *s))) {
        if ((s->sel = iotame_select_new())) {
            s->fs = fs;
            s->next = auto_selectors;
            auto_selectors = s;
        } else {
            free(s);
            s = NULL;
        }
    }
    pthread_mutex_unlock(&auto_lock);
    return s;
}

/* The selector's decisions join the file's statistics when its first entry appears. */
static void auto_link(auto_selector_t *s)
{
    if (s->decisions || !iotame_select_started(s->sel)) return;
    json_t *section = iotame_stats_collective(s->fs);
    if (section && (s->decisions = json_array())) json_object_set(section, "decisions", s->decisions);
}

/* A handle's state whose last window completes at MPI_Finalize. */
static void auto_leave(struct iotame_coll_choice *a)
{
    pthread_mutex_lock(&auto_lock);
    a->next = a->selector->left;
    a->selector->left = a;
    pthread_mutex_unlock(&auto_lock);
}

static void auto_free(struct iotame_coll_choice *a)
{
    iotame__coll_known_free(&a->w.set.knowledge);
    json_decref(a->model.corrections);
    free(a->knowledge_path);
    free(a->rows);
    free(a);
}

/* ---- the gather of a window's rows: posted, tested, completed a window later ---- */

static void auto_gather_post(void *arg, const int64_t *row)
{
    struct iotame_coll_choice *a = arg;
    uint64_t t0 = iotame_monotonic_ns();
    PMPI_Iallgather(row, IOTAME_WINDOW_FIELDS, MPI_INT64_T, a->rows, IOTAME_WINDOW_FIELDS, MPI_INT64_T, a->comm,
                    &a->req);
    a->post_ns = (int64_t)(iotame_monotonic_ns() - t0);
}

static const int64_t *auto_gather_wait(void *arg, int64_t *took_ns)
{
    struct iotame_coll_choice *a = arg;
    uint64_t t0 = iotame_monotonic_ns();
    PMPI_Wait(&a->req, MPI_STATUS_IGNORE);
    *took_ns = a->post_ns + (int64_t)(iotame_monotonic_ns() - t0);
    return a->rows;
}

static void auto_gather_test(void *arg)
{
    struct iotame_coll_choice *a = arg;
    int done;
    PMPI_Test(&a->req, &done, MPI_STATUS_IGNORE);
}

/* ---- the cost model: the profile, its agreement, the prediction of a new signature ---- */

/* The model's term of each registry strategy here (the one it declares): a strategy that does not apply to the
 * handle does the library's collective call (passthrough); one that declares none is never predicted. */
static void auto_profile_kinds(struct iotame_coll_choice *a, const iotame_coll_env_t *env)
{
    for (int s = 0; s < iotame_nstrategies && s < IOTAME_STRATEGY_MAX; s++) {
        const iotame_strategy_t *st = iotame_strategies[s];
        a->model.kind[s] = st->model;
        if (a->model.kind[s] != IOTAME_MODEL_NONE && st->applies && !st->applies(env))
            a->model.kind[s] = IOTAME_MODEL_PASSTHROUGH;
    }
}

/* Records what a signature's predictions applied of the learned corrections (auto_selector_t's `used`): the class,
 * and each strategy's correction, from which this run's measurements are reported as observations. */
static void auto_predict_used(const struct iotame_coll_choice *a, const iotame_sig_t *sig, const char *cls,
                              json_t *applied)
{
    char key[160];
    iotame__coll_corrections_sig_key(key, sizeof key, sig);
    json_t *used = a->selector->used ? a->selector->used : (a->selector->used = json_object());
    json_object_set_new(used, key, json_pack("{s:s,s:o}", "class", cls, "corrections", applied));
}

static int auto_predict(void *arg, const iotame_sig_t *sig, int interleaved, iotame_select_model_t *out)
{
    const struct iotame_coll_choice *a = arg;
    memset(out, 0, sizeof *out);
    out->error = a->model.error;
    out->library = -1;
    char cls[128];
    iotame__coll_correction_class(cls, sizeof cls, sig, a->model.nodes, interleaved);
    json_t *applied = json_object();
    int any = 0;
    for (int s = 0; s < iotame_nstrategies && s < IOTAME_SELECT_MAX; s++) {
        if (a->model.kind[s] == IOTAME_MODEL_NONE) continue;
        iotame_model_call_t call = a->model.own[s]; /* the strategy's own facts, completed with the call's */
        call.write = sig->write;
        call.nprocs = sig->nprocs;
        call.nodes = a->model.nodes;
        call.bytes = sig->bytes;
        call.pieces = (sig->requests + sig->nprocs - 1) / sig->nprocs;
        call.interleaved = interleaved;
        call.gap = sig->gap;
        call.targets = a->model.targets;
        call.unit = a->model.unit;
        call.sieves = a->model.sieves;
        /* first_call 0 and no set-up: the selector's means are of calls after a strategy's first (transition
         * calls are not measured), so that is what is predicted, as the fit's rows amortize the set-up (two opens)
         * over a phase's calls and `first` 0 is a phase without end. Counted on every call, one noisy open of the
         * job decided the ranking of a phase of few calls. */
        double error;
        out->seconds[s] = iotame_model_fitted(&a->model.profile->profile, &call, a->model.kind[s], &error);
        const char *name = iotame_strategies[s]->name;
        if (iotame_strategies[s]->model == IOTAME_MODEL_PASSTHROUGH) out->library = s;
        const iotame_coll_correction_t k = iotame__coll_correction(a->model.learned, cls, name);
        out->seconds[s] *= exp(k.correction);
        const int paid = iotame_strategies[s]->native ? a->served[s] : a->engine_set_up;
        out->setup[s] = paid ? 0 : iotame_model_setup(&a->model.profile->profile, a->model.kind[s], sig->write);
        out->errors[s] = iotame__coll_correction_error(&k, error > 0 ? error : a->model.error);
        out->measured[s] = k.measurements > INT32_MAX ? INT32_MAX : (int)k.measurements;
        out->correction[s] = k.correction;
        if (k.measurements > 0) json_object_set_new(applied, name, json_real(k.correction));
        any |= out->seconds[s] > 0;
    }
    auto_predict_used(a, sig, cls, applied);
    return any;
}

/* (max, -min) of a value over the ranks: one agreed value, or -1 when they differ. */
static int64_t auto_agreed_value(const int *pair) { return pair[0] == -pair[1] ? pair[0] : -1; }

/* After the open's agreement: the profile is the file record's, which every rank found (collective then: the nodes
 * are counted). The file's statistics say which, or why none. */
static void auto_profile_agreed(struct iotame_coll_choice *a, const iotame_coll_env_t *env, const int *agree)
{
    json_t *coll = iotame_stats_collective(a->fs);
    if (a->rank == 0 && a->model.refused) iotame_log_warn("%s", a->model.refused);
    if (a->model.refused && coll) json_object_set_new(coll, "profile_refused", json_string(a->model.refused));
    if (!a->model.profile) {
        if (a->model.differs && coll) /* some rank found none, or another */
            json_object_set_new(coll, "profile_refused", json_string("the ranks found different machine profiles "
                                                                     "(or some none): not used"));
        a->w.set.conf.predicts = 0;
        return;
    }
    const int own = env->layout_from == IOTAME_POSIX_FROM_LUSTRE || env->layout_from == IOTAME_POSIX_FROM_CEPHFS;
    /* 0: the profile's (a local file system, an emulated one-target file); 1: a striping file system said one */
    a->model.targets = env->layout_targets > 1 ? env->layout_targets : own;
    a->model.unit = a->model.targets > 1 ? env->layout_unit : 0;
    a->model.nodes = iotame_coll_count_nodes(env->comm, a->rank, env->virtual_node_size);
    a->model.sieves = env->write_sieving;
    auto_profile_kinds(a, env);
    a->model.error = iotame_select_known_error(&a->w.set.knowledge, a->model.error);
    iotame__coll_correction_key(a->model.learned_key, sizeof a->model.learned_key, a->model.profile->hash);
    a->model.learned = json_object_get(a->model.corrections, a->model.learned_key);
    a->w.set.conf.predicts = 1;
    a->w.predict = (iotame_window_predict_t){auto_predict, a};
    const iotame_profile_t *pr = &a->model.profile->profile;
    int64_t classes, measurements;
    iotame__coll_corrections_count(a->model.learned, &classes, &measurements);
    if (coll)
        json_object_set_new(coll, "profile",
                            json_pack("{s:s,s:s,s:I,s:I,s:I,s:f,s:i,s:{s:I,s:I}}", "path", a->model.profile->path,
                                      "found_by", a->model.profile->found_by, "nodes", (json_int_t)a->model.nodes,
                                      "targets", (json_int_t)(a->model.targets ? a->model.targets : pr->targets),
                                      "unit", (json_int_t)(a->model.targets ? a->model.unit : pr->stripe_unit),
                                      "model_error", a->model.error, "fitted_strategies", iotame_model_fits(pr),
                                      "corrections", "classes", (json_int_t)classes, "measurements",
                                      (json_int_t)measurements));
}

/* ---- open ---- */

/* The candidates of an operation on the file's file system and library, in examination order: a strategy that does
 * not apply there does the library's collective call, so with passthrough also a candidate it is left out (both
 * would measure one thing); the likely ones first, in the configured order, then the others. */
static int auto_candidates(const struct iotame_coll_choice *a, const iotame_coll_env_t *env, int op, int *cand)
{
    int has_pt = 0, k = 0;
    for (int i = 0; i < a->ncand; i++) has_pt |= a->cand[i] == iotame_strategy_find("passthrough");
    for (int likely = 1; likely >= 0; likely--)
        for (int i = 0; i < a->ncand; i++) {
            const iotame_strategy_t *st = iotame_strategies[a->cand[i]];
            const int here = !has_pt || !st->applies || st->applies(env);
            if (here && likely == (!st->likely || st->likely(env, op))) cand[k++] = a->cand[i];
        }
    return k;
}

/* The strategy of the opening window of each operation ([0] reads, [1] writes) as this rank sees it, on a local
 * file system or not (the file system is agreed with it). A job that starts from the knowledge file then runs its
 * winner without a collective of ours from the first call, as a job that knows nothing runs its first candidate. */
static void auto_propose(struct iotame_coll_choice *a, int local_fs, int opening[2])
{
    const iotame_coll_env_t env = {.local_fs = local_fs, .write_sieving = iotame_coll_write_sieving()};
    for (int op = 0; op < 2; op++) {
        a->w.set.norder[op] = auto_candidates(a, &env, op, a->w.set.order[op]);
        opening[op] = iotame_window_opening(&a->w, op);
    }
}

/* collective.candidates in the configured order, each once (registry indices); passthrough alone when none is
 * named. */
static void auto_candidates_set(struct iotame_coll_choice *a, const iotame_coll_options_t *o)
{
    size_t i;
    json_t *item;
    a->ncand = 0;
    json_array_foreach((json_t *)iotame_coll_option(o, "candidates"), i, item) {
        int s = iotame_strategy_find(json_string_value(item)), dup = 0;
        for (int k = 0; k < a->ncand; k++) dup |= a->cand[k] == s;
        if (s >= 0 && !dup && a->ncand < IOTAME_STRATEGY_MAX) a->cand[a->ncand++] = s;
    }
    if (a->ncand == 0) a->cand[a->ncand++] = 0; /* settings.json without a default */
}

/* The handle's state from the file's settings (auto's own options); NULL when something could not be allocated. */
static struct iotame_coll_choice *auto_new(const iotame_coll_open_t *o)
{
    const iotame_coll_options_t *opt = &o->options;
    struct iotame_coll_choice *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->fs = o->fs;
    a->rank = o->rank;
    a->comm = MPI_COMM_NULL;
    a->req = MPI_REQUEST_NULL;
    for (int s = 0; s < iotame_nstrategies && s < IOTAME_STRATEGY_MAX; s++)
        if (iotame_strategies[s]->model_call && o->states)
            iotame_strategies[s]->model_call(o->states[s], &a->model.own[s]);
    auto_candidates_set(a, opt);
    iotame_window_t *w = &a->w;
    w->nprocs = o->nprocs;
    w->gather = (iotame_window_gather_t){auto_gather_post, auto_gather_wait, auto_gather_test, a};
    w->set.knobs = (iotame_select_knobs_t){iotame_coll_option_number(opt, "drop"),
                                           (int)iotame_coll_option_int(opt, "retry_every", 0),
                                           iotame_coll_option_number(opt, "threshold_max"),
                                           iotame_coll_option_number(opt, "gate_calls"),
                                           iotame_coll_option_number(opt, "window_max_seconds")};
    iotame_select_conf_t *c = &w->set.conf;
    c->exam_calls = (int)iotame_coll_option_int(opt, "exam_calls", 0);
    c->trace = iotame_coll_option_int(opt, "trace", 0);
    c->threshold = iotame_coll_option_number(opt, "threshold");
    c->budget = iotame_coll_option_number(opt, "exam_budget");
    c->window_seconds = c->budget < 1 ? iotame_coll_option_number(opt, "window_seconds") : 0;
    c->knobs = &w->set.knobs;
    c->readahead = iotame_coll_option_int(opt, "readahead", -1); /* -1: the file's (auto_agreed) */
    w->set.shortest = w->tally.next_calls = (int)iotame_coll_option_int(opt, "steady_windows", 0) * c->exam_calls;
    for (int s = 0; s < iotame_nstrategies; s++) w->set.library[s] = iotame_strategies[s]->native;
    int ok = 1;
    const char *knowledge = iotame_coll_option_string(opt, "knowledge");
    if (knowledge) ok &= (a->knowledge_path = strdup(knowledge)) != NULL;
    a->rows = malloc((size_t)o->nprocs * IOTAME_WINDOW_FIELDS * sizeof *a->rows);
    a->selector = auto_selector_of(o->fs);
    a->model.profile = o->profile ? o->profile->found : NULL;
    a->model.refused = o->profile ? o->profile->refused : NULL;
    a->model.differs = o->profile ? o->profile->differs : 0;
    a->model.error = iotame_coll_option_number(opt, "model_error");
    c->predicts = a->model.profile != NULL;
    if (!ok || !a->rows || !a->selector) {
        auto_free(a);
        return NULL;
    }
    w->sel = a->selector->sel;
    return a;
}

/* The knowledge file (rank 0 reads it, every rank takes part in its broadcast), the handle's state and this rank's
 * part of the open's agreement. */
static int auto_open(void **state, const iotame_coll_open_t *o, int agree[IOTAME_COLL_AGREE])
{
    int broken = 0, exists = 0;
    const char *k = iotame_coll_option_string(&o->options, "knowledge");
    json_t *knowledge = k ? iotame__coll_knowledge_load(k, o->comm, o->rank, &broken, &exists) : NULL;
    memset(agree, 0, IOTAME_COLL_AGREE * sizeof *agree);
    struct iotame_coll_choice *a = state && o->fs ? auto_new(o) : NULL;
    if (!a) {
        json_decref(knowledge);
        return -ENOMEM;
    }
    a->knowledge_broken = broken;
    const int held = knowledge && iotame__coll_known(knowledge, &a->w.set.knowledge) == 0;
    a->model.corrections = json_incref(json_object_get(knowledge, "model")); /* every rank parsed the same text */
    json_decref(knowledge);
    agree[A_HAS] = exists && held;
    agree[A_HAS_NOT] = exists && !held;
    /* A read's turn spans the readahead, so the opening windows of the signatures the knowledge file holds need it
     * now, on every rank; else the file's, as rank 0 read it for the router, serves after the agreement. */
    const char *path = iotame_stats_path(o->fs);
    if (a->w.set.conf.readahead < 0 && held && path) a->w.set.conf.readahead = iotame_coll_readahead(path);
    const int64_t readahead = a->w.set.conf.readahead;
    const int64_t kb = readahead < 0 ? -1 : readahead >> 10;
    agree[A_READAHEAD_KB] = (int)(kb + 1 < INT_MAX ? kb + 1 : INT_MAX);
    for (int away = 0; away < 2; away++) {
        int p[2];
        auto_propose(a, !away, p);
        for (int op = 0; op < 2; op++) {
            agree[A_OPENING + 4 * away + 2 * op] = p[op];
            agree[A_OPENING + 4 * away + 2 * op + 1] = -p[op];
        }
    }
    *state = a;
    return 0;
}

static void auto_agreed(void *state, const iotame_coll_env_t *env, const int agree[IOTAME_COLL_AGREE], int64_t cost_ns)
{
    struct iotame_coll_choice *a = state;
    iotame_window_t *w = &a->w;
    a->comm = env->comm;
    /* every rank's selector alike: the configured readahead where a rank has one, else the file's */
    w->set.conf.readahead = agree[A_READAHEAD_KB] ? (int64_t)(agree[A_READAHEAD_KB] - 1) << 10 : env->readahead;
    w->tally.cost_ns = cost_ns; /* what a collective of ours costs, until a gather costs less */
    const int *open = agree + A_OPENING + 4 * !env->local_fs;
    for (int op = 0; op < 2; op++) w->set.opening[op] = (int)auto_agreed_value(open + 2 * op);
    if (agree[A_HAS] && agree[A_HAS_NOT]) { /* some rank has no copy of the knowledge: no rank uses it */
        iotame__coll_known_free(&w->set.knowledge);
        if (a->rank == 0)
            iotame_log_warn("knowledge file %s: a rank could not hold it (out of memory): not used\n", a->knowledge_path);
    }
    for (int op = 0; op < 2; op++) w->set.norder[op] = auto_candidates(a, env, op, w->set.order[op]);
    auto_profile_agreed(a, env, agree);
}

/* ---- calls ---- */

static int auto_direct(void *state, int write)
{
    struct iotame_coll_choice *a = state;
    return iotame_window_serving(&a->w, write);
}

static void auto_served(void *state, int write, const iotame_coll_part_t *part, double seconds)
{
    struct iotame_coll_choice *a = state;
    iotame_window_served(&a->w, write, part != NULL, part ? part->nbytes : 0, part ? part->ext : NULL, seconds);
    auto_link(a->selector); /* the opening window's end may have given a signature its entry */
}

/* The selector's digest: ranks whose digests differ have diverged (the path was used by different communicators). */
static int64_t auto_tag(const void *state)
{
    const struct iotame_coll_choice *a = state;
    return (int64_t)iotame_select_digest(a->w.sel);
}

int iotame__coll_interleaved(const iotame_coll_facts_t *facts)
{
    int64_t spans = 0;
    for (int r = 0; r < facts->nprocs; r++) {
        const int64_t *row = facts->info + (size_t)r * IOTAME_INFO_FIELDS;
        if (row[IOTAME_INFO_EXTENTS] > 0) spans += row[IOTAME_INFO_END] - row[IOTAME_INFO_START];
    }
    return spans > facts->gmax - facts->gmin;
}

/* A call measured on its own: the entry of its signature (the selector reset first when the ranks' digests
 * differed) and its choice. A call that moves no bytes on any rank goes to the library, the cheapest collective
 * no-op (registry index 0), as does every call when the entry cannot be had (out of memory). */
static int auto_choose(void *state, const iotame_coll_facts_t *facts)
{
    struct iotame_coll_choice *a = state;
    a->entry = NULL;
    if (facts->gbytes <= 0) return 0;
    const iotame_sig_t sig =
        iotame_select_sig(facts->write, facts->nprocs, facts->gbytes, facts->requests, facts->gmin, facts->gmax);
    if (facts->tags_differ) {
        iotame_stats_passthrough(a->fs, "selector state differed between ranks (reset)");
        iotame_select_reset(a->w.sel);
    }
    a->entry = iotame_window_entry(&a->w, &sig, a->w.predict.fn && iotame__coll_interleaved(facts));
    auto_link(a->selector);
    return a->entry ? iotame_select_choose(a->entry) : 0;
}

/* The call's throughput, the bytes of every rank over the slowest rank's time; this rank's part is the shape a
 * window that starts now goes on with. */
static void auto_measured(void *state, const iotame_coll_facts_t *facts, int strategy, double seconds)
{
    struct iotame_coll_choice *a = state;
    if (strategy >= 0 && strategy < iotame_nstrategies && strategy < IOTAME_STRATEGY_MAX) {
        a->served[strategy] = 1;
        a->engine_set_up |= !iotame_strategies[strategy]->native;
    }
    if (!a->entry) return;
    const double mbs = seconds > 0 ? (double)facts->gbytes / seconds / 1e6 : 0.0;
    iotame_window_measured(&a->w, a->entry, strategy, mbs, facts->write, facts->nbytes, facts->ext);
}

/* ---- the end ---- */

static void auto_add_count(json_t *o, const char *key, int64_t n)
{
    json_object_set_new(o, key, json_integer(json_integer_value(json_object_get(o, key)) + n));
}

/* The statistics of a closed handle's windows, and its knowledge saved (rank 0); then it is freed. */
static void auto_choice_retire(struct iotame_coll_choice *a)
{
    const iotame_window_tally_t *t = &a->w.tally;
    json_t *coll = t->served ? iotame_stats_collective(a->fs) : NULL;
    if (coll) { /* the calls steady windows served; windows measured, and not (calls changed) */
        auto_add_count(coll, "steady_calls", t->served);
        auto_add_count(coll, "steady_windows_measured", t->measured);
        auto_add_count(coll, "steady_windows_changed", t->unmeasured);
    }
    if (a->knowledge_path && a->rank == 0 && !a->knowledge_broken) { /* the store reports what it could not save */
        json_t *observed = a->model.profile ? iotame__coll_corrections_observed(a->w.sel, a->selector->used,
                                                                                a->model.learned_key)
                                            : NULL;
        iotame__coll_knowledge_save(a->w.sel, a->knowledge_path, observed);
        json_decref(observed);
    }
    if (a->closed && a->comm != MPI_COMM_NULL) PMPI_Comm_free(&a->comm);
    auto_free(a);
}

/* Finishing the last window's gather at the close would synchronize the ranks there, and a short phase never ends
 * its opening window before the close: posted at the close and finished at MPI_Finalize, where the ranks meet
 * anyway, it costs nothing, and its window reaches the statistics and the knowledge file at the end of the job. A
 * handle still open at MPI_Finalize is closed inside it (HDF5 closes its files there), after the runtime has stopped,
 * so its close is never seen: its window under way is posted then (at_finalize), on the router's communicator. */
static void auto_close(void *state, iotame_coll_env_t *env, int at_finalize)
{
    struct iotame_coll_choice *a = state;
    if (a->comm == MPI_COMM_NULL) { /* the open failed on some rank: nothing to post, nothing learned */
        auto_free(a);
        return;
    }
    iotame_window_post_last(&a->w);
    auto_link(a->selector);
    a->closed = !at_finalize;
    if (at_finalize || a->w.posted.pending) {
        if (!at_finalize) env->comm = MPI_COMM_NULL; /* ours now: the gather runs on it */
        auto_leave(a);
        return;
    }
    a->comm = MPI_COMM_NULL;
    auto_choice_retire(a);
}

/* Every gather is posted (at the handles' close, or by auto_close at_finalize for the ones still open) before any is
 * waited for here: they all progress meanwhile. Then every selector's decisions go into its file's statistics. */
static void auto_finalize(void)
{
    for (auto_selector_t *s = auto_selectors; s; s = s->next) {
        while (s->left) {
            struct iotame_coll_choice *a = s->left;
            s->left = a->next;
            iotame_window_complete(&a->w);
            auto_link(s);
            auto_choice_retire(a);
        }
        if (s->decisions) iotame__coll_decisions(s->decisions, s->sel);
    }
}

const iotame_chooser_t iotame_chooser_auto = {
    .name = "auto",
    .summary = "the selector: examines the candidates on the application's calls and keeps the fastest per call "
               "signature (Orthrus)",
    .options = (const char *const[]){"candidates", "exam_calls", "exam_budget", "threshold", "knowledge", "trace",
                                     "readahead", "drop", "retry_every", "threshold_max", "gate_calls", "profile",
                                     "model_error",
                                     "steady_windows", "window_seconds", "window_max_seconds", NULL},
    .open = auto_open,
    .agreed = auto_agreed,
    .direct = auto_direct,
    .served = auto_served,
    .tag = auto_tag,
    .choose = auto_choose,
    .measured = auto_measured,
    .close = auto_close,
    .finalize = auto_finalize,
};
