/* The throttle module: which requests pass the gate and at what level (the file's throttle.readers/writers), the
 * gates' setup at MPI_Init, the knowledge file of the adaptive levels, and the statistics: per direction the time
 * processes waited for a turn, their time in requests, and the load-imbalance view of Seelam, Kerstens and Teller
 * ("Throttling I/O Streams to Accelerate File-I/O Performance") (the time they then waited at the application's next
 * barrier); per target the level in force per phase and the most processes seen inside at once. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/knowledge.h"
#include "posix/posix.h"
#include "profile/profile.h"
#include "throttle.h"

enum { READ, WRITE };
static const char *const dir_name[2] = {"read", "write"};

/* A file's levels per direction: 0 not throttled, AUTO, or the node's share of the job-wide static level; and for
 * AUTO its file system's machine profile's streams curve and the level it predicts (0: no profile). */
#define AUTO (-1)
typedef struct {
    int level[2];
    int predicted[2];
    throttle_curve_t curve[2];
} file_levels_t;

static throttle_knobs_t knobs;
static uint64_t stall_ns;
static int node_procs = 1, job_procs = 1;
static json_t *knowledge; /* signature -> {"level": n, "mbs": x}, as read at MPI_Init */
static const char *knowledge_path;
static uint64_t start_ns; /* phases' start times are from here (MPI_Init) */

/* The machine profile this process's predictions came from (the first one found), or what was refused on the way
 * to one; for the statistics. */
static pthread_mutex_t profile_lock = PTHREAD_MUTEX_INITIALIZER;
static const iotame_profile_found_t *profile_used; /* borrowed from profile/ for the job's life, as is the next */
static const char *profile_refused;

/* This process's numbers per direction (atomics: the application may write from several threads). */
typedef struct {
    uint64_t requests, waited, wait_ns, io_ns, sync_ns, syncs;
} dir_stats_t;
static dir_stats_t mine[2];
static int last_dir = -1; /* the direction of this process's last throttled request since its last barrier */

static _Thread_local throttle_gate_t *entered;
static _Thread_local throttle_pass_t entered_pass;
static _Thread_local int entered_auto;
static _Thread_local uint64_t entered_wait, entered_at;

/* The throttle's slot of a target's entry in the node's segment (the target's two gates), or NULL. */
static throttle_target_t *throttle_state_of(iotame_posix_target_t *t)
{
    return iotame_posix_target_state(t, &iotame_module_throttle);
}

/* ---- settings ---- */

/* Keeps the first profile this process used, and the first refusal. */
static void throttle_profile_note(const iotame_profile_found_t *found, const char *refused)
{
    pthread_mutex_lock(&profile_lock);
    if (found && !profile_used) profile_used = found;
    if (refused && !profile_refused) profile_refused = refused;
    pthread_mutex_unlock(&profile_lock);
}

/* The machine profile of the file's file system (profile/: the one search per file system and the setting's
 * reading; the POSIX layer has no file record to take it from, and a process's level needs no agreement): each auto
 * direction's predicted level, from that direction's streams curve, for the node's processes. The hooks run quiet,
 * so reading the profile is not recorded. */
static void throttle_profile_predict(file_levels_t *l, const char *path, const iotame_file_config_t *fc)
{
    const char *refused = NULL;
    const iotame_profile_found_t *found = iotame_profile_for(path, fc, &refused);
    if (found) {
        const iotame_model_curve_t *curve[2] = {&found->profile.streams_read, &found->profile.streams_write};
        for (int d = 0; d < 2; d++) {
            if (l->level[d] != AUTO) continue;
            throttle_curve_t *c = &l->curve[d];
            c->n = curve[d]->n < THROTTLE_CURVE_POINTS ? curve[d]->n : THROTTLE_CURVE_POINTS;
            memcpy(c->x, curve[d]->x, (size_t)c->n * sizeof c->x[0]);
            memcpy(c->y, curve[d]->y, (size_t)c->n * sizeof c->y[0]);
            l->predicted[d] = throttle_predict_level(c, node_procs, knobs.tolerance);
        }
    }
    throttle_profile_note(found, refused);
}

static int throttle_level_of(const json_t *v)
{
    if (!v) return 0;
    if (json_is_string(v)) return AUTO; /* "auto", the only string the validator lets through */
    long long k = json_integer_value(v);
    /* The node's share of a job-wide limit, at least one (a node without a token could not get one without a
     * message, and none may be sent from inside the MPI library's I/O). */
    long long share = (k * node_procs + job_procs / 2) / job_procs;
    return share < 1 ? 1 : share > 1000000 ? 1000000 : (int)share;
}

static file_levels_t *throttle_levels_of(iotame_posix_file_t *f)
{
    void **slot = iotame_posix_file_data(f, &iotame_module_throttle);
    file_levels_t *l = slot ? __atomic_load_n((file_levels_t **)slot, __ATOMIC_ACQUIRE) : NULL;
    if (l || !slot) return l;
    l = calloc(1, sizeof *l);
    if (!l) return NULL;
    const iotame_config_t *cfg = iotame_core_config();
    iotame_file_config_t fc;
    if (cfg && iotame_config_for_file(cfg, iotame_posix_file_path(f), &fc) == 0) {
        l->level[READ] = throttle_level_of(iotame_config_setting(&fc, "throttle", "readers"));
        l->level[WRITE] = throttle_level_of(iotame_config_setting(&fc, "throttle", "writers"));
        if (l->level[READ] == AUTO || l->level[WRITE] == AUTO)
            throttle_profile_predict(l, iotame_posix_file_path(f), &fc);
        iotame_config_file_release(&fc);
    }
    file_levels_t *none = NULL;
    if (!__atomic_compare_exchange_n((file_levels_t **)slot, &none, l, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        free(l); /* another thread of this process was first */
        l = none;
    }
    return l;
}

/* Whether a value of readers or writers limits the streams (set: a level or "auto"). */
static int throttle_limits(const json_t *v) { return v != NULL; }

static double throttle_knob(const iotame_file_config_t *process, const char *key)
{
    return json_number_value(iotame_config_setting(process, "throttle", key));
}

/* ---- the knowledge file ---- */

static unsigned size_class(uint64_t bytes) { return bytes ? 63u - (unsigned)__builtin_clzll(bytes) : 0u; }

static void signature(char *buf, size_t n, int dir, uint64_t fs_type, int size_log2)
{
    snprintf(buf, n, "%s procs=%d fs=0x%llx size=2^%d", dir_name[dir], node_procs, (unsigned long long)fs_type, size_log2);
}

/* Every rank gets the throttle's section of the knowledge store: rank 0 reads the file and broadcasts it (collective
 * over MPI_COMM_WORLD: start runs on every rank). */
static void knowledge_load(void)
{
    if (!knowledge_path) return;
    iotame_posix_quiet_begin();
    int rc = iotame_knowledge_read(knowledge_path, "throttle", MPI_COMM_WORLD, &knowledge);
    iotame_posix_quiet_end();
    if (rc == -EINVAL) iotame_stats_passthrough(NULL, "throttle: the knowledge file is not a knowledge file; not used");
}

static int knowledge_level(int dir, uint64_t fs_type, int size_log2)
{
    char sig[128];
    signature(sig, sizeof sig, dir, fs_type, size_log2);
    json_int_t l = json_integer_value(json_object_get(json_object_get(knowledge, sig), "level"));
    return l > 0 && l <= node_procs ? (int)l : 0;
}

/* ---- the POSIX hooks ---- */

static void throttle_posix_before(const iotame_posix_io_t *io)
{
    file_levels_t *l = io->file ? throttle_levels_of(io->file) : NULL;
    int dir = io->write ? WRITE : READ;
    if (!l || !l->level[dir]) return;
    throttle_target_t *t = throttle_state_of(iotame_posix_target(iotame_posix_target_of(io)));
    if (!t) {
        iotame_stats_passthrough(NULL, "throttle: no shared target entry (no segment, a table full, or not a regular file)");
        return;
    }
    throttle_gate_t *g = &t->dir[dir];
    if (l->level[dir] == AUTO && !__atomic_load_n(&g->ctl_started, __ATOMIC_ACQUIRE)) {
        int size_log2 = (int)size_class(io->bytes);
        uint64_t fs_type = iotame_posix_fs_type(io->file);
        g->sig_size_log2 = size_log2;
        g->sig_fs_type = fs_type;
        throttle_gate_start_auto(g, node_procs, knowledge_level(dir, fs_type, size_log2), l->predicted[dir],
                                 &l->curve[dir]);
    }
    entered_at = iotame_monotonic_ns();
    iotame_where_mark_t mark = iotame_where_push("throttle", "waiting for a gate token");
    iotame_where_wait(IOTAME_WAIT_GATE, dir == WRITE ? "writes" : "reads", 0, l->level[dir] == AUTO ? 0 : l->level[dir], 0);
    entered_wait = throttle_gate_enter(g, l->level[dir] == AUTO ? 0 : l->level[dir], stall_ns, &entered_pass);
    iotame_where_pop(mark);
    entered = g;
    entered_auto = l->level[dir] == AUTO;
}

static void throttle_posix_after(const iotame_posix_io_t *io, ssize_t rc, uint64_t ns)
{
    (void)ns; /* the request's time is from the turn asked for: the wait, a later module's (emulate) and the call */
    throttle_gate_t *g = entered;
    if (!g) return;
    entered = NULL;
    throttle_gate_leave(g, &entered_pass, rc > 0 ? (uint64_t)rc : 0, entered_auto, &knobs);
    dir_stats_t *s = &mine[io->write ? WRITE : READ];
    __atomic_add_fetch(&s->requests, 1, __ATOMIC_RELAXED);
    if (entered_wait > 1000) __atomic_add_fetch(&s->waited, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&s->wait_ns, entered_wait, __ATOMIC_RELAXED);
    __atomic_add_fetch(&s->io_ns, iotame_monotonic_ns() - entered_at, __ATOMIC_RELAXED);
    __atomic_store_n(&last_dir, io->write ? WRITE : READ, __ATOMIC_RELAXED);
}

/* The paper's LBSTIO: a barrier after throttled I/O is the wait for the processes whose I/O came later. */
static void throttle_barrier(uint64_t ns)
{
    int d = __atomic_exchange_n(&last_dir, -1, __ATOMIC_RELAXED);
    if (d < 0) return;
    __atomic_add_fetch(&mine[d].sync_ns, ns, __ATOMIC_RELAXED);
    __atomic_add_fetch(&mine[d].syncs, 1, __ATOMIC_RELAXED);
}

/* ---- start and finalize ---- */

static int throttle_start(const iotame_config_t *cfg)
{
    if (!cfg || !(iotame_config_any(cfg, "throttle", "readers", throttle_limits) ||
                  iotame_config_any(cfg, "throttle", "writers", throttle_limits)))
        return 0; /* the same on every rank: they all read one configuration */
    const iotame_file_config_t process = {.defaults = &cfg->defaults};
    knobs.window_ns = throttle_knob(&process, "window_seconds") * 1e9;
    knobs.threshold = throttle_knob(&process, "threshold");
    knobs.tolerance = throttle_knob(&process, "tolerance");
    knobs.budget = throttle_knob(&process, "exam_budget");
    stall_ns = (uint64_t)(throttle_knob(&process, "stall_seconds") * 1e9);
    knowledge_path = json_string_value(iotame_config_setting(&process, "throttle", "knowledge"));
    iotame_posix_segment_t *seg = iotame_posix_segment();
    int ok = seg != NULL;
    if (seg) {
        node_procs = (int)seg->nprocs;
        job_procs = (int)seg->job_nprocs;
        for (int i = 0; i < IOTAME_POSIX_TARGETS && ok; i++) {
            throttle_target_t *t = throttle_state_of(&seg->target[i]);
            ok = t != NULL;
            if (t && iotame_posix_node_rank() == 0)
                for (int d = 0; d < 2 && ok; d++) ok = throttle_gate_init(&t->dir[d]) == 0;
        }
    }
    int all = ok;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD); /* also: the gates are ready before any I/O */
    if (!all) {
        iotame_stats_passthrough(NULL, "throttle: the node's shared segment could not hold the gates; not throttled");
        return 0;
    }
    knowledge_load();
    start_ns = iotame_monotonic_ns();
    return 1;
}

static json_t *throttle_phases_json(const throttle_ctl_t *c, uint64_t t0)
{
    json_t *a = json_array();
    for (uint32_t i = 0; i < c->nphases; i++) {
        const throttle_phase_t *p = &c->phase[i];
        double busy = (double)p->busy_ns * 1e-9;
        json_array_append_new(a, json_pack("{s:i,s:s,s:i,s:f,s:I,s:f,s:f}", "level", p->level, "state",
                                           p->searching ? "search" : "steady", "windows", (int)p->windows,
                                           "start_seconds", p->start_ns > t0 ? (double)(p->start_ns - t0) * 1e-9 : 0.0,
                                           "bytes", (json_int_t)p->bytes, "io_seconds", busy, "mbs",
                                           busy > 0 ? (double)p->bytes / busy / 1e6 : 0.0));
    }
    return a;
}

static json_t *throttle_gate_json(const throttle_gate_t *g, uint64_t t0)
{
    json_t *o = json_pack("{s:s,s:I,s:i,s:i}", "mode", g->used_auto ? "auto" : "static", "requests",
                          (json_int_t)g->requests, "max_inside", g->max_inside, "bypassed", g->bypassed);
    if (!g->used_auto) {
        json_object_set_new(o, "level", json_integer(g->static_level));
        return o;
    }
    const throttle_ctl_t *c = &g->ctl;
    json_object_set_new(o, "level", json_integer(c->level));
    json_object_set_new(o, "predicted_level", json_integer(c->predicted));
    json_object_set_new(o, "best_measured", json_integer(throttle_ctl_best(c)));
    json_object_set_new(o, "found_level", json_integer(c->found));
    json_object_set_new(o, "from_knowledge", json_boolean(c->known));
    json_object_set_new(o, "searches", json_integer(c->searches));
    json_t *measured = json_object();
    for (int i = 0; i < c->ncand; i++) {
        char key[16];
        snprintf(key, sizeof key, "%d", c->level_cand[i]);
        if (c->mbs[i] > 0) json_object_set_new(measured, key, json_real(c->mbs[i]));
    }
    json_object_set_new(o, "measured_mbs", measured);
    json_object_set_new(o, "phases", throttle_phases_json(c, t0));
    return o;
}

/* The levels this run found replace the file's of the same signatures; the other signatures are kept. */
static int knowledge_merge_levels(json_t *section, json_t *found)
{
    return json_object_update(section, found) == 0 ? 0 : -ENOMEM;
}

/* Rank 0 of the job keeps what its node's controllers found, merged into the knowledge file under its lock (the
 * store reports a save it could not make). */
static void knowledge_save(iotame_posix_segment_t *seg)
{
    if (!knowledge_path || !seg) return;
    json_t *found = json_object();
    int changed = 0;
    for (int i = 0; i < IOTAME_POSIX_TARGETS && found; i++) {
        if (!seg->target[i].key) continue;
        for (int d = 0; d < 2; d++) {
            const throttle_gate_t *g = &throttle_state_of(&seg->target[i])->dir[d];
            /* the last finished search's level, also when a re-search is under way at the end of the job */
            if (!g->ctl_started || !g->ctl.found) continue;
            char sig[128];
            signature(sig, sizeof sig, d, g->sig_fs_type, g->sig_size_log2);
            json_object_set_new(found, sig, json_pack("{s:i,s:f}", "level", g->ctl.found, "mbs", g->ctl.found_mbs));
            changed = 1;
        }
    }
    if (changed) {
        iotame_posix_quiet_begin();
        iotame_knowledge_merge(knowledge_path, "throttle", knowledge_merge_levels, found);
        iotame_posix_quiet_end();
    }
    json_decref(found);
}

static json_t *throttle_dir_json(const dir_stats_t *s)
{
    return json_pack("{s:I,s:I,s:f,s:f,s:f,s:I}", "requests", (json_int_t)s->requests, "waited", (json_int_t)s->waited,
                     "wait_seconds", (double)s->wait_ns * 1e-9, "io_seconds", (double)s->io_ns * 1e-9,
                     "sync_after_io_seconds", (double)s->sync_ns * 1e-9, "syncs_after_io", (json_int_t)s->syncs);
}

static void throttle_finalize(void)
{
    PMPI_Barrier(MPI_COMM_WORLD); /* every process of the node has left its last request */
    json_t *section = iotame_stats_job_section(&iotame_module_throttle);
    if (!section) return;
    json_object_set_new(section, "read", throttle_dir_json(&mine[READ]));
    json_object_set_new(section, "write", throttle_dir_json(&mine[WRITE]));
    if (profile_used)
        json_object_set_new(section, "profile",
                            json_pack("{s:s,s:s}", "path", profile_used->path, "found_by", profile_used->found_by));
    if (profile_refused) json_object_set_new(section, "profile_refused", json_string(profile_refused));
    iotame_posix_segment_t *seg = iotame_posix_segment();
    if (seg && iotame_posix_node_rank() == 0) {
        json_t *targets = json_array();
        uint64_t t0 = start_ns;
        for (int i = 0; i < IOTAME_POSIX_TARGETS; i++) {
            if (!seg->target[i].key) continue;
            const throttle_target_t *t = throttle_state_of(&seg->target[i]);
            if (!t->dir[READ].requests && !t->dir[WRITE].requests) continue;
            char key[24];
            snprintf(key, sizeof key, "%016llx", (unsigned long long)seg->target[i].key);
            json_t *o = json_pack("{s:s}", "target", key);
            for (int d = 0; d < 2; d++)
                if (t->dir[d].requests) json_object_set_new(o, dir_name[d], throttle_gate_json(&t->dir[d], t0));
            json_array_append_new(targets, o);
        }
        json_object_set_new(section, "targets", targets);
        if (iotame_core_rank() == 0) knowledge_save(seg);
    }
    json_decref(knowledge);
    knowledge = NULL;
}

/* Means over the ranks for the per-process numbers (the paper's TIO and LBSTIO are means over tasks), sums for the
 * counts; the targets of every node. */
static json_t *throttle_job_report(const json_t *ranks)
{
    json_t *out = json_object(), *targets = json_array();
    double n = 0;
    dir_stats_t sum[2] = {{0}};
    double sec[2][3] = {{0}};
    size_t i;
    json_t *r;
    json_array_foreach(ranks, i, r) {
        if (!json_is_object(r)) continue;
        n++;
        for (int d = 0; d < 2; d++) {
            json_t *s = json_object_get(r, dir_name[d]);
            sum[d].requests += (uint64_t)json_integer_value(json_object_get(s, "requests"));
            sum[d].waited += (uint64_t)json_integer_value(json_object_get(s, "waited"));
            sum[d].syncs += (uint64_t)json_integer_value(json_object_get(s, "syncs_after_io"));
            sec[d][0] += json_number_value(json_object_get(s, "wait_seconds"));
            sec[d][1] += json_number_value(json_object_get(s, "io_seconds"));
            sec[d][2] += json_number_value(json_object_get(s, "sync_after_io_seconds"));
        }
        static const char *const profile_keys[] = {"profile", "profile_refused"};
        for (int k = 0; k < 2; k++) { /* the lowest rank's: the ranks read one configuration */
            json_t *v = json_object_get(r, profile_keys[k]);
            if (v && !json_object_get(out, profile_keys[k])) json_object_set(out, profile_keys[k], v);
        }
        json_t *t;
        size_t j;
        json_array_foreach(json_object_get(r, "targets"), j, t) {
            json_t *copy = json_deep_copy(t);
            json_object_set_new(copy, "node_of_rank", json_integer((json_int_t)i));
            json_array_append_new(targets, copy);
        }
    }
    for (int d = 0; d < 2; d++)
        json_object_set_new(out, dir_name[d],
                            json_pack("{s:I,s:I,s:I,s:f,s:f,s:f}", "requests", (json_int_t)sum[d].requests, "waited",
                                      (json_int_t)sum[d].waited, "syncs_after_io", (json_int_t)sum[d].syncs,
                                      "wait_seconds_mean", n ? sec[d][0] / n : 0.0, "io_seconds_mean",
                                      n ? sec[d][1] / n : 0.0, "sync_after_io_seconds_mean", n ? sec[d][2] / n : 0.0));
    json_object_set_new(out, "targets", targets);
    return out;
}

const iotame_module_t iotame_module_throttle = {
    .name = "throttle",
    .settings = "throttle",
    .start = throttle_start,
    .posix_before = throttle_posix_before,
    .posix_after = throttle_posix_after,
    .posix_target_bytes = sizeof(throttle_target_t),
    .barrier = throttle_barrier,
    .finalize = throttle_finalize,
    .job_report = throttle_job_report,
};
