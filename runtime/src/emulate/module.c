/* The emulate module: the settings (a preset and its overrides), the device's state shared by every process that
 * uses it (a file mapped MAP_SHARED, guarded by a process-shared robust mutex), the POSIX hook that schedules each
 * request on the model (device.c) and sleeps until its modelled completion, and the statistics, always labelled
 * with the device and its parameters ("modules"/"emulate"). No MPI call in the hooks: they run inside the MPI
 * library's I/O. */
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
#define STATE_VERSION 1u

/* The state file's layout. `magic` is written last at initialization, so a process that finds it (under the file
 * lock) finds the rest ready. */
typedef struct {
    uint32_t magic, version;
    uint64_t params_hash;
    uint64_t size; /* sizeof(state_t) of the process that initialized it */
    pthread_mutex_t lock; /* process-shared, robust: held only to compute one request's schedule */
    emulate_device_t dev;
} state_t;

static char device_name[16];
static emulate_params_t params;
static char state_path[4096];
static state_t *state; /* NULL: requests pass through unmodelled */

/* This process's counts (atomics: the application may do I/O from several threads), named as the statistics show
 * them. */
enum { REQUESTS, READS, WRITES, SEGMENTS, POSITIONINGS, STREAM_HITS, BYTES, UNMODELLED, NCOUNTS };
static const char *const counts[NCOUNTS] = {"requests", "reads", "writes", "segments", "positionings",
                                            "stream_hits", "bytes", "unmodelled"};
static uint64_t mine[NCOUNTS], delay_ns;

static void count(int which, uint64_t n) { __atomic_add_fetch(&mine[which], n, __ATOMIC_RELAXED); }

/* ---- the shared state ---- */

static void state_init(state_t *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&s->lock, &a);
    pthread_mutexattr_destroy(&a);
    emulate_device_init(&s->dev, &params);
    s->version = STATE_VERSION;
    s->params_hash = emulate_params_hash(&params);
    s->size = sizeof *s;
    __atomic_store_n(&s->magic, STATE_MAGIC, __ATOMIC_RELEASE);
}

/* Maps the device's state, initializing it when it is new or was made for other parameters (under flock, so one
 * process initializes and the others wait for it). Returns NULL and sets *why when it cannot. */
static state_t *state_open(const char *path, const char **why)
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
            state_init(s);
        }
    }
    flock(fd, LOCK_UN);
    close(fd);
    return s;
}

static int state_lock(state_t *s)
{
    int rc = pthread_mutex_lock(&s->lock);
    if (rc == EOWNERDEAD) { /* a process died while scheduling: its update is a few stores, keep the state */
        pthread_mutex_consistent(&s->lock);
        rc = 0;
    }
    return rc;
}

/* ---- the POSIX hook ---- */

static void sleep_until(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
}

static void posix_before(const iotame_posix_io_t *io)
{
    if (!io->file) return;
    if (!state) {
        count(UNMODELLED, 1);
        iotame_stats_passthrough(NULL, "emulate: no device state; request not modelled");
        return;
    }
    dev_t dev;
    ino_t ino;
    iotame_posix_file_id(io->file, &dev, &ino);
    emulate_request_t r = {.file = emulate_file_key((uint64_t)dev, (uint64_t)ino),
                           .offset = io->offset > 0 ? (uint64_t)io->offset : 0,
                           .write = io->write};
    uint64_t left = io->bytes, delay = 0;
    count(REQUESTS, 1);
    count(io->write ? WRITES : READS, 1);
    count(BYTES, io->bytes);
    while (left > 0) { /* a segment at a time: another process's segment that arrived meanwhile goes before our next */
        r.bytes = left < EMULATE_SEGMENT ? left : EMULATE_SEGMENT;
        emulate_result_t res;
        uint64_t now = iotame_monotonic_ns();
        if (state_lock(state) != 0) { /* ENOTRECOVERABLE: the state is lost for every process */
            count(UNMODELLED, 1);
            iotame_stats_passthrough(NULL, "emulate: the device's lock is unusable; request not modelled");
            break;
        }
        emulate_schedule(&state->dev, &r, now, &res);
        pthread_mutex_unlock(&state->lock);
        count(SEGMENTS, 1);
        if (res.positioned) count(POSITIONINGS, 1);
        if (res.stream_hit) count(STREAM_HITS, 1);
        delay += res.done - now;
        sleep_until(res.done);
        r.offset += r.bytes;
        left -= r.bytes;
    }
    __atomic_add_fetch(&delay_ns, delay, __ATOMIC_RELAXED);
}

/* ---- start, finalize, statistics ---- */

static double number(const iotame_file_config_t *process, const char *key, double preset)
{
    const json_t *v = iotame_config_setting(process, "emulate", key);
    return v ? json_number_value(v) : preset;
}

static int start(const iotame_config_t *cfg)
{
    if (!cfg) return 0;
    const iotame_file_config_t process = {.defaults = &cfg->defaults};
    const char *device = json_string_value(iotame_config_setting(&process, "emulate", "device"));
    if (!device || emulate_preset(device, &params) != 0) return 0; /* "none" */
    snprintf(device_name, sizeof device_name, "%s", device);
    params.servers = (uint32_t)number(&process, "servers", params.servers);
    params.bytes_per_ns = number(&process, "bandwidth_mbs", params.bytes_per_ns * 1e3) * 1e-3;
    params.position_ns = number(&process, "position_ms", params.position_ns * 1e-6) * 1e6;
    params.seek_ns = number(&process, "seek_ms", params.seek_ns * 1e-6) * 1e6;
    params.span = (uint64_t)(number(&process, "span_mb", (double)params.span * 1e-6) * 1e6);
    params.streams = (uint32_t)number(&process, "streams", params.streams);
    const json_t *wb = iotame_config_setting(&process, "emulate", "write_behind");
    if (wb) params.write_behind = json_is_true(wb);
    emulate_device_t probe; /* the limits the model applies */
    emulate_device_init(&probe, &params);
    params = probe.p;

    const char *path = json_string_value(iotame_config_setting(&process, "emulate", "state"));
    if (path) snprintf(state_path, sizeof state_path, "%s", path);
    else snprintf(state_path, sizeof state_path, "/dev/shm/iotame-emulate-%u-%s", (unsigned)getuid(), device_name);
    const char *why = NULL;
    iotame_posix_quiet_begin();
    state = state_open(state_path, &why);
    iotame_posix_quiet_end();
    if (!state) iotame_stats_passthrough(NULL, why);
    return 1; /* labelled even when the state is missing: the statistics then count every request as unmodelled */
}

static void finalize(void)
{
    json_t *section = iotame_stats_job_section(&iotame_module_emulate);
    if (!section) return;
    for (int k = 0; k < NCOUNTS; k++) json_object_set_new(section, counts[k], json_integer((json_int_t)mine[k]));
    json_object_set_new(section, "delay_seconds", json_real((double)delay_ns * 1e-9));
}

/* The device and every parameter in force, the counts summed over the ranks, the requests each rank modelled. */
static json_t *job_report(const json_t *ranks)
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
    json_array_foreach(ranks, i, r) {
        for (int k = 0; k < NCOUNTS; k++) sum[k] += json_integer_value(json_object_get(r, counts[k]));
        double d = json_number_value(json_object_get(r, "delay_seconds"));
        delay += d;
        if (d > delay_max) delay_max = d;
        json_array_append_new(per_rank, json_integer(json_integer_value(json_object_get(r, "requests"))));
    }
    for (int k = 0; k < NCOUNTS; k++) json_object_set_new(out, counts[k], json_integer(sum[k]));
    json_object_set_new(out, "segment_kb", json_integer(EMULATE_SEGMENT / 1024));
    json_object_set_new(out, "delay_seconds", json_real(delay));
    json_object_set_new(out, "delay_seconds_max", json_real(delay_max));
    json_object_set_new(out, "requests_per_rank", per_rank);
    return out;
}

const iotame_module_t iotame_module_emulate = {
    .name = "emulate",
    .settings = "emulate",
    .start = start,
    .posix_before = posix_before,
    .finalize = finalize,
    .job_report = job_report,
};
