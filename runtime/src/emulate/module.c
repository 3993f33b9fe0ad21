/* The emulate module: the settings (a preset and its overrides), the state of the storage's targets shared by every
 * process that uses it (a file mapped MAP_SHARED, guarded by a process-shared robust mutex), the POSIX hook that
 * splits each request over the targets and schedules its pieces on the model (device.c), sleeping until the last
 * one's modelled completion, the layout given to the POSIX layer (where the throttle and the collective strategies
 * read a file's striping), and the statistics, always labelled with the device and its parameters
 * ("modules"/"emulate"). No MPI call in the hooks: they run inside the MPI library's I/O. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "emulate.h"
#include "posix/posix.h"

#define STATE_MAGIC 0x656d756cu /* "emul" */
#define STATE_VERSION 2u

/* The state file's layout. `magic` is written last at initialization, so a process that finds it (under the file
 * lock) finds the rest ready. */
typedef struct {
    uint32_t magic, version;
    uint64_t params_hash;
    uint64_t size; /* sizeof(state_t) of the process that initialized it */
    pthread_mutex_t lock; /* process-shared, robust: held only to compute a few segments' schedule */
    emulate_striped_t dev; /* every target */
} state_t;

static char device_name[16];
static emulate_params_t params;
static char state_path[4096];
static state_t *state; /* NULL: requests pass through unmodelled */

/* This process's counts (atomics: the application may do I/O from several threads), named as the statistics show
 * them. */
enum { REQUESTS, READS, WRITES, PIECES, SEGMENTS, POSITIONINGS, STREAM_HITS, BYTES, UNMODELLED, NCOUNTS };
static const char *const counts[NCOUNTS] = {"requests", "reads", "writes", "pieces", "segments", "positionings",
                                            "stream_hits", "bytes", "unmodelled"};
static uint64_t mine[NCOUNTS], delay_ns, target_segments[EMULATE_MAX_TARGETS], target_bytes[EMULATE_MAX_TARGETS];

static void emulate_count(int which, uint64_t n) { __atomic_add_fetch(&mine[which], n, __ATOMIC_RELAXED); }

/* ---- the shared state ---- */

static void emulate_state_init(state_t *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&s->lock, &a);
    pthread_mutexattr_destroy(&a);
    emulate_striped_init(&s->dev, &params);
    s->version = STATE_VERSION;
    s->params_hash = emulate_params_hash(&params);
    s->size = sizeof *s;
    __atomic_store_n(&s->magic, STATE_MAGIC, __ATOMIC_RELEASE);
}

/* Maps the device's state, initializing it when it is new or was made for other parameters (under flock, so one
 * process initializes and the others wait for it). Returns NULL and sets *why when it cannot. */
static state_t *emulate_state_open(const char *path, const char **why)
{
    state_t *s = NULL;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        *why = "emulate: cannot open the device's state file; requests not modelled";
        return NULL;
    }
    struct stat st;
    if (flock(fd, LOCK_EX) != 0 || fstat(fd, &st) != 0) {
        *why = "emulate: cannot lock the device's state file; requests not modelled";
    } else if (st.st_size < (off_t)sizeof *s && ftruncate(fd, sizeof *s) != 0) {
        *why = "emulate: cannot size the device's state file; requests not modelled";
    } else {
        s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (s == MAP_FAILED) {
            s = NULL;
            *why = "emulate: cannot map the device's state file; requests not modelled";
        } else if (__atomic_load_n(&s->magic, __ATOMIC_ACQUIRE) != STATE_MAGIC || s->version != STATE_VERSION ||
                   s->size != sizeof *s || s->params_hash != emulate_params_hash(&params)) {
            emulate_state_init(s);
        }
    }
    flock(fd, LOCK_UN);
    close(fd);
    return s;
}

static int emulate_state_lock(state_t *s)
{
    int rc = pthread_mutex_lock(&s->lock);
    if (rc == EOWNERDEAD) { /* a process died while scheduling: its update is a few stores, keep the state */
        pthread_mutex_consistent(&s->lock);
        rc = 0;
    }
    return rc;
}

/* ---- the POSIX hook ---- */

static void emulate_sleep_until(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
}

/* A request is split over the targets (emulate_split); each target's piece reaches its device a segment at a time,
 * each segment queued when that target's previous one completed (another process's segment that arrived meanwhile
 * goes before it), the targets in parallel; the call waits for its last segment. */
static void emulate_posix_before(const iotame_posix_io_t *io)
{
    if (!io->file) return;
    if (!state) {
        emulate_count(UNMODELLED, 1);
        iotame_stats_passthrough(NULL, "emulate: no device state; request not modelled");
        return;
    }
    dev_t dev;
    ino_t ino;
    iotame_posix_file_id(io->file, &dev, &ino);
    const uint64_t file = emulate_file_key((uint64_t)dev, (uint64_t)ino);
    emulate_piece_t piece[EMULATE_MAX_TARGETS];
    uint64_t ready[EMULATE_MAX_TARGETS] = {0}; /* when each piece's last booked segment completes */
    unsigned n = emulate_split(&params, file, io->offset > 0 ? (uint64_t)io->offset : 0, io->bytes, piece);
    emulate_count(REQUESTS, 1);
    emulate_count(io->write ? WRITES : READS, 1);
    emulate_count(BYTES, io->bytes);
    emulate_count(PIECES, n);
    if (!n) return; /* no bytes: nothing reaches the device */
    const uint64_t begin = iotame_monotonic_ns();
    uint64_t last = begin;
    for (;;) {
        uint64_t now = iotame_monotonic_ns(), next = UINT64_MAX;
        if (emulate_state_lock(state) != 0) { /* ENOTRECOVERABLE: the state is lost for every process */
            emulate_count(UNMODELLED, 1);
            iotame_stats_passthrough(NULL, "emulate: the device's lock is unusable; request not modelled");
            break;
        }
        for (unsigned i = 0; i < n; i++) {
            if (!piece[i].bytes || ready[i] > now) continue;
            emulate_request_t r = {.file = file, .offset = piece[i].offset, .write = io->write,
                                   .bytes = piece[i].bytes < EMULATE_SEGMENT ? piece[i].bytes : EMULATE_SEGMENT};
            emulate_result_t res;
            emulate_schedule(&state->dev.target[piece[i].target], &r, now, &res);
            ready[i] = res.done;
            piece[i].offset += r.bytes;
            piece[i].bytes -= r.bytes;
            emulate_count(SEGMENTS, 1);
            if (res.positioned) emulate_count(POSITIONINGS, 1);
            if (res.stream_hit) emulate_count(STREAM_HITS, 1);
            __atomic_add_fetch(&target_segments[piece[i].target], 1, __ATOMIC_RELAXED);
            __atomic_add_fetch(&target_bytes[piece[i].target], r.bytes, __ATOMIC_RELAXED);
        }
        pthread_mutex_unlock(&state->lock);
        for (unsigned i = 0; i < n; i++) {
            if (ready[i] > last) last = ready[i];
            if (piece[i].bytes && ready[i] < next) next = ready[i];
        }
        if (next == UINT64_MAX) break; /* every segment booked */
        emulate_sleep_until(next);
    }
    emulate_sleep_until(last);
    __atomic_add_fetch(&delay_ns, last - begin, __ATOMIC_RELAXED);
}

/* The layout hook: the layout the POSIX layer reads for a file on the emulated storage (every file it records,
 * while the module is active): `targets` stripes of target_unit bytes, stripe i on target (first + i) % targets. */
static unsigned emulate_layout(dev_t dev, ino_t ino, uint32_t *stripe_size, uint32_t *target, unsigned max)
{
    uint64_t file = emulate_file_key((uint64_t)dev, (uint64_t)ino);
    unsigned n = params.targets < max ? params.targets : max;
    uint32_t first = emulate_first_target(&params, file);
    for (unsigned i = 0; i < n; i++) target[i] = (first + i) % params.targets;
    *stripe_size = (uint32_t)params.target_unit;
    return n;
}

/* ---- start, finalize, statistics ---- */

static double emulate_number(const iotame_file_config_t *process, const char *key, double preset)
{
    const json_t *v = iotame_config_setting(process, "emulate", key);
    return v ? json_number_value(v) : preset;
}

static int emulate_start(const iotame_config_t *cfg)
{
    if (!cfg) return 0;
    const iotame_file_config_t process = {.defaults = &cfg->defaults};
    const char *device = json_string_value(iotame_config_setting(&process, "emulate", "device"));
    if (!device || emulate_preset(device, &params) != 0) return 0; /* "none" */
    snprintf(device_name, sizeof device_name, "%s", device);
    params.servers = (uint32_t)emulate_number(&process, "servers", params.servers);
    params.bytes_per_ns = emulate_number(&process, "bandwidth_mbs", params.bytes_per_ns * 1e3) * 1e-3;
    params.position_ns = emulate_number(&process, "position_ms", params.position_ns * 1e-6) * 1e6;
    params.seek_ns = emulate_number(&process, "seek_ms", params.seek_ns * 1e-6) * 1e6;
    params.span = (uint64_t)(emulate_number(&process, "span_mb", (double)params.span * 1e-6) * 1e6);
    params.streams = (uint32_t)emulate_number(&process, "streams", params.streams);
    params.targets = (uint32_t)emulate_number(&process, "targets", params.targets);
    params.target_unit = (uint64_t)emulate_number(&process, "target_unit", (double)params.target_unit);
    const json_t *wb = iotame_config_setting(&process, "emulate", "write_behind");
    if (wb) params.write_behind = json_is_true(wb);
    static emulate_striped_t probe; /* the limits the model applies (static: it is large) */
    emulate_striped_init(&probe, &params);
    params = probe.p;
    const char *path = json_string_value(iotame_config_setting(&process, "emulate", "state"));
    if (path) snprintf(state_path, sizeof state_path, "%s", path);
    else snprintf(state_path, sizeof state_path, "/dev/shm/iotame-emulate-%u-%s", (unsigned)getuid(), device_name);
    const char *why = NULL;
    iotame_posix_quiet_begin();
    state = emulate_state_open(state_path, &why);
    iotame_posix_quiet_end();
    if (!state) iotame_stats_passthrough(NULL, why);
    return 1; /* labelled even when the state is missing: the statistics then count every request as unmodelled */
}

static void emulate_finalize(void)
{
    json_t *section = iotame_stats_job_section(&iotame_module_emulate);
    if (!section) return;
    for (int k = 0; k < NCOUNTS; k++) json_object_set_new(section, counts[k], json_integer((json_int_t)mine[k]));
    json_object_set_new(section, "delay_seconds", json_real((double)delay_ns * 1e-9));
    json_t *segments = json_array(), *bytes = json_array();
    for (uint32_t t = 0; t < params.targets; t++) {
        json_array_append_new(segments, json_integer((json_int_t)target_segments[t]));
        json_array_append_new(bytes, json_integer((json_int_t)target_bytes[t]));
    }
    json_object_set_new(section, "target_segments", segments);
    json_object_set_new(section, "target_bytes", bytes);
}

/* The device and every parameter in force, the counts summed over the ranks, the requests each rank modelled. */
static json_t *emulate_job_report(const json_t *ranks)
{
    json_t *out = json_pack("{s:s,s:i,s:f,s:f,s:f,s:f,s:i,s:b,s:s}", "device", device_name, "servers",
                            (int)params.servers, "bandwidth_mbs", params.bytes_per_ns * 1e3, "position_ms",
                            params.position_ns * 1e-6, "seek_ms", params.seek_ns * 1e-6, "span_mb",
                            (double)params.span * 1e-6, "streams", (int)params.streams, "write_behind",
                            (int)params.write_behind, "state", state_path);
    json_int_t sum[NCOUNTS] = {0};
    double delay = 0, delay_max = 0;
    json_t *per_rank = json_array();
    size_t i;
    json_t *r;
    json_int_t per_target[2][EMULATE_MAX_TARGETS] = {{0}};
    json_array_foreach(ranks, i, r) {
        for (int k = 0; k < NCOUNTS; k++) sum[k] += json_integer_value(json_object_get(r, counts[k]));
        for (uint32_t t = 0; t < params.targets; t++) {
            per_target[0][t] += json_integer_value(json_array_get(json_object_get(r, "target_segments"), t));
            per_target[1][t] += json_integer_value(json_array_get(json_object_get(r, "target_bytes"), t));
        }
        double d = json_number_value(json_object_get(r, "delay_seconds"));
        delay += d;
        if (d > delay_max) delay_max = d;
        json_array_append_new(per_rank, json_integer(json_integer_value(json_object_get(r, "requests"))));
    }
    for (int k = 0; k < NCOUNTS; k++) json_object_set_new(out, counts[k], json_integer(sum[k]));
    json_object_set_new(out, "segment_kb", json_integer(EMULATE_SEGMENT / 1024));
    json_object_set_new(out, "targets", json_integer((json_int_t)params.targets));
    json_object_set_new(out, "target_unit", json_integer((json_int_t)params.target_unit));
    json_t *per[2] = {json_array(), json_array()};
    for (uint32_t t = 0; t < params.targets; t++)
        for (int k = 0; k < 2; k++) json_array_append_new(per[k], json_integer(per_target[k][t]));
    json_object_set_new(out, "target_segments", per[0]);
    json_object_set_new(out, "target_bytes", per[1]);
    json_object_set_new(out, "delay_seconds", json_real(delay));
    json_object_set_new(out, "delay_seconds_max", json_real(delay_max));
    json_object_set_new(out, "requests_per_rank", per_rank);
    return out;
}

const iotame_module_t iotame_module_emulate = {
    .name = "emulate",
    .settings = "emulate",
    .start = emulate_start,
    .posix_before = emulate_posix_before,
    .layout = emulate_layout, /* the configuration's: the same on every rank, whether or not the state is mapped */
    .finalize = emulate_finalize,
    .job_report = emulate_job_report,
};
