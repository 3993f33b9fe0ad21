/* The POSIX layer's records: which descriptors are recorded (the files the job opened through MPI-IO or HDF5, or
 * every regular file with posix.all_files), the per-file counters (Darshan's POSIX module: requests, bytes, sizes,
 * consecutive/sequential/random, seek distance, time), the node's shared segment that counts the requests in
 * flight on a file over the node's processes, and the module's statistics section (docs/formats.md). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "posix.h"

/* ---- records ---- */

enum { READ, WRITE };

iotame__posix_fd_t *iotame__posix_fds;
unsigned iotame__posix_nfds;
static unsigned fds_cap; /* the table's size (iotame__posix_nfds is 0 while the layer is off) */

static int all_files;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* records, watched paths, descriptor table updates */
#define HASH 256
static iotame_posix_file_t *files, *by_id[HASH];

/* Files to record (posix.all_files false): the paths given to MPI_File_open and HDF5's opens, identified by their
 * last component and the directory holding them (device and inode: any spelling of the path matches). */
typedef struct watched {
    char *path; /* as given, the statistics record's path */
    char *base;
    int dir_known; /* dir_dev and dir_ino read (1), not yet (0), could not be (-1) */
    dev_t dir_dev;
    ino_t dir_ino;
    struct watched *next;
} watched_t;
static watched_t *watched[HASH];
static int nwatched;

static unsigned hash_str(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static uint64_t hash_id(dev_t dev, ino_t ino)
{
    uint64_t h = ((uint64_t)dev * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)ino + 0x7f4a7c159e3779b9ull);
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    return h ? h : 1;
}

const char *iotame_posix_file_path(const iotame_posix_file_t *f) { return f->path; }
iotame_posix_slot_t *iotame_posix_file_slot(const iotame_posix_file_t *f) { return f->slot; }
void iotame_posix_file_id(const iotame_posix_file_t *f, dev_t *dev, ino_t *ino)
{
    *dev = f->dev;
    *ino = f->ino;
}

/* ---- the node's shared segment ---- */

static iotame_posix_segment_t *segment;
static const char *segment_problem; /* why there is none (statistics) */

static int node_rank;

iotame_posix_segment_t *iotame_posix_segment(void) { return segment; }
int iotame_posix_node_rank(void) { return node_rank; }

/* The slot of a file: linear probing from its hash; a free slot is claimed with a compare-and-swap, so the node's
 * processes agree on it without a lock. Slots are never given back during the job. */
static iotame_posix_slot_t *slot_of(dev_t dev, ino_t ino)
{
    if (!segment) return NULL;
    uint64_t key = hash_id(dev, ino);
    for (unsigned i = 0; i < IOTAME_POSIX_SLOTS; i++) {
        iotame_posix_slot_t *s = &segment->slot[(key + i) % IOTAME_POSIX_SLOTS];
        uint64_t k = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE), zero = 0;
        if (k == key) return s;
        if (k == 0 && (__atomic_compare_exchange_n(&s->key, &zero, key, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) ||
                       zero == key))
            return s;
    }
    return NULL;
}

typedef struct {
    uint32_t nprocs, job_nprocs, nnodes;
} segment_shape_t;

static void segment_init(void *map, void *arg)
{
    const segment_shape_t *shape = arg;
    iotame_posix_segment_t *s = map;
    s->version = IOTAME_POSIX_SEGMENT_VERSION;
    s->nslots = IOTAME_POSIX_SLOTS;
    s->nprocs = shape->nprocs;
    s->job_nprocs = shape->job_nprocs;
    s->nnodes = shape->nnodes;
    iotame__posix_target_layout(s);
    __atomic_store_n(&s->magic, IOTAME_POSIX_SEGMENT_MAGIC, __ATOMIC_RELEASE);
}

/* Creates the segment on the node's first rank and maps it everywhere (collective over MPI_COMM_WORLD, at
 * MPI_Init; core/shm.c). */
static void segment_setup(void)
{
    MPI_Comm node;
    if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS) {
        segment_problem = "no node communicator";
        return;
    }
    int rank = 0, size = 1;
    PMPI_Comm_rank(node, &rank);
    PMPI_Comm_size(node, &size);
    node_rank = rank;
    int job_nprocs = 1, nnodes = 1, first = rank == 0;
    PMPI_Comm_size(MPI_COMM_WORLD, &job_nprocs);
    PMPI_Allreduce(&first, &nnodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    segment_shape_t shape = {(uint32_t)size, (uint32_t)job_nprocs, (uint32_t)nnodes};
    void *map = iotame_node_shared(node, sizeof(iotame_posix_segment_t), segment_init, &shape);
    PMPI_Comm_free(&node);
    if (map && ((iotame_posix_segment_t *)map)->magic == IOTAME_POSIX_SEGMENT_MAGIC) segment = map;
    else segment_problem = "the node's shared-memory segment could not be set up";
    if (segment) iotame__posix_target_check(segment);
}

/* ---- files and descriptors ---- */

/* The record of a file (created on first use; the lock held). */
static iotame_posix_file_t *file_of(dev_t dev, ino_t ino, const char *path)
{
    unsigned h = (unsigned)hash_id(dev, ino) % HASH;
    iotame_posix_file_t *f;
    for (f = by_id[h]; f; f = f->hash_next)
        if (f->dev == dev && f->ino == ino) return f;
    if (!(f = calloc(1, sizeof *f)) || !(f->path = strdup(path))) {
        free(f);
        return NULL;
    }
    f->dev = dev;
    f->ino = ino;
    pthread_mutex_init(&f->lock, NULL);
    f->slot = slot_of(dev, ino);
    f->inflight = f->slot ? &f->slot->inflight : &f->own_inflight;
    f->hash_next = by_id[h];
    by_id[h] = f;
    f->next = files;
    files = f;
    return f;
}

const char *iotame_posix_path(const char *path)
{
    const char *c = strchr(path, ':');
    if (!c || c == path || c - path > 12) return path;
    for (const char *p = path; p < c; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) return path;
    return c + 1;
}

/* The directory holding path (relative to dirfd), by device and inode. */
static int dir_of(int dirfd, const char *path, struct stat *st)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return dirfd == AT_FDCWD ? stat(".", st) : fstat(dirfd, st);
    if (slash == path) return stat("/", st);
    char dir[PATH_MAX];
    size_t n = (size_t)(slash - path);
    if (n >= sizeof dir) return -1;
    memcpy(dir, path, n);
    dir[n] = '\0';
    return fstatat(dirfd, dir, st, 0);
}

static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Whether watched entry w's directory is the one of identity dir (w's read at its first comparison). */
static int watched_in(watched_t *w, const struct stat *dir)
{
    struct stat st;
    if (!w->dir_known) {
        w->dir_known = dir_of(AT_FDCWD, iotame_posix_path(w->path), &st) == 0 ? 1 : -1;
        w->dir_dev = st.st_dev;
        w->dir_ino = st.st_ino;
    }
    return w->dir_known > 0 && w->dir_dev == dir->st_dev && w->dir_ino == dir->st_ino;
}

/* The path given to MPI_File_open or HDF5 whose file path (as opened, relative to dirfd) is, or NULL: the same text
 * (what the library does with the path it is given), else the same name in the same directory. The text asks the
 * file system nothing, where a directory's identity is a round trip to a parallel file system's metadata server. */
static const char *watched_path(int dirfd, const char *path)
{
    const char *base = base_of(path);
    watched_t *first = watched[hash_str(base) % HASH];
    for (watched_t *w = first; w && (dirfd == AT_FDCWD || path[0] == '/'); w = w->next)
        if (strcmp(iotame_posix_path(w->path), path) == 0) return w->path;
    struct stat dir;
    int have = 0;
    for (watched_t *w = first; w; w = w->next) {
        if (strcmp(w->base, base) != 0) continue;
        if (!have && dir_of(dirfd, path, &dir) != 0) return NULL;
        have = 1;
        if (watched_in(w, &dir)) return w->path;
    }
    return NULL;
}

/* The runtime's own files that reach these wrappers (the knowledge file's lock, opened with open(2)): the
 * configured collective.knowledge paths, which also prefix their lock and temporary files. RATIONALE: the
 * statistics and the configuration are read and written outside MPI_Init..MPI_Finalize, and the runtime's stdio
 * (fopen) reaches the kernel through the C library's internal calls, which no interposer sees. */
static char **own_paths;
static size_t nown;

static void add_own_path(const json_t *rule)
{
    const json_t *k = json_object_get(json_object_get(rule, "collective"), "knowledge");
    char **grown;
    if (!json_is_string(k) || !(grown = realloc(own_paths, (nown + 1) * sizeof *own_paths))) return;
    own_paths = grown;
    if ((own_paths[nown] = strdup(json_string_value(k)))) nown++;
}

/* Paths that are never files of the application's data (as Darshan leaves them out), and our own. */
static int excluded(const char *canonical, const char *given)
{
    if (strncmp(canonical, "/proc/", 6) == 0 || strncmp(canonical, "/sys/", 5) == 0 ||
        strncmp(canonical, "/dev/", 5) == 0)
        return 1;
    for (size_t i = 0; i < nown; i++)
        if (strncmp(given, own_paths[i], strlen(own_paths[i])) == 0) return 1;
    return 0;
}

/* The descriptor this thread's last recorded open returned (-1: none): iotame__posix_last_opened. */
static _Thread_local int last_fd = -1;

iotame_posix_file_t *iotame__posix_last_opened(const char *path, int *fd, struct stat *st)
{
    const int d = last_fd;
    iotame_posix_file_t *f = d >= 0 && (unsigned)d < fds_cap
                                 ? __atomic_load_n(&iotame__posix_fds[d].file, __ATOMIC_ACQUIRE)
                                 : NULL;
    if (!f || strcmp(iotame_posix_path(f->path), iotame_posix_path(path)) != 0) return NULL;
    *fd = d;
    pthread_mutex_lock(&lock);
    *st = f->opened;
    pthread_mutex_unlock(&lock);
    return f;
}

void iotame__posix_opened(int dirfd, const char *path, int fd, int flags, uint64_t ticks)
{
    if (!path || (!all_files && !__atomic_load_n(&nwatched, __ATOMIC_ACQUIRE))) return;
    pthread_mutex_lock(&lock);
    const char *name = nwatched ? watched_path(dirfd, path) : NULL;
    char canonical[PATH_MAX];
    struct stat st;
    iotame_posix_file_t *f = NULL;
    if ((name || all_files) && fstat(fd, &st) == 0 && (name || S_ISREG(st.st_mode))) {
        if (!name) { /* every file: its canonical path, as the kernel knows it */
            char link[64];
            snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
            ssize_t n = readlink(link, canonical, sizeof canonical - 1);
            if (n > 0) canonical[n] = '\0';
            name = n > 0 ? canonical : path;
            if (excluded(name, path)) name = NULL;
        }
        if (name) f = file_of(st.st_dev, st.st_ino, name);
    }
    if (f && (unsigned)fd < fds_cap) {
        iotame__posix_fd_t *d = &iotame__posix_fds[fd];
        d->pos = 0;
        d->append = (flags & O_APPEND) != 0;
        d->written = 0;
        __atomic_store_n(&d->file, f, __ATOMIC_RELEASE);
        f->opened = st;
        last_fd = fd;
    } else if (f) {
        iotame_stats_passthrough(iotame_stats_file(f->path), "posix: a descriptor beyond the descriptor table");
        f = NULL;
    }
    pthread_mutex_unlock(&lock);
    if (f) iotame__posix_meta(f, IOTAME_POSIX_N_OPEN, IOTAME_POSIX_T_META, ticks);
}

iotame_posix_file_t *iotame__posix_closing(int fd)
{
    if ((unsigned)fd >= fds_cap) return NULL;
    return __atomic_exchange_n(&iotame__posix_fds[fd].file, NULL, __ATOMIC_ACQ_REL);
}

/* The module's `opening` hook: the library is about to open this file (maybe later, on some ranks only). */
static void opening(const iotame_open_t *o)
{
    if (!o->path) return;
    const char *path = iotame_posix_path(o->path), *base = base_of(path);
    if (!*base) return; /* no file */
    pthread_mutex_lock(&lock);
    unsigned h = hash_str(base) % HASH;
    watched_t *w;
    for (w = watched[h]; w; w = w->next)
        if (strcmp(iotame_posix_path(w->path), path) == 0) break;
    if (!w && (w = calloc(1, sizeof *w)) && (w->path = strdup(o->path)) && (w->base = strdup(base))) {
        w->next = watched[h];
        watched[h] = w;
        __atomic_store_n(&nwatched, nwatched + 1, __ATOMIC_RELEASE);
    } else if (w && !w->base) {
        free(w->path);
        free(w);
    }
    pthread_mutex_unlock(&lock);
}

/* ---- the hot path ---- */

void iotame__posix_meta(iotame_posix_file_t *f, iotame__posix_meta_t what, iotame__posix_cat_t cat, uint64_t ticks)
{
    if (!f) return;
    int threaded = iotame__threaded;
    if (threaded) pthread_mutex_lock(&f->lock);
    f->meta[what]++;
    f->ticks[cat] += ticks;
    if (threaded) pthread_mutex_unlock(&f->lock);
}

/* ticks -> ns for the POSIX hooks: the TSC's rate over the time since posix_start (fixed once it spans 50 ms). */
static uint64_t start_ns, start_tick;
static double ns_per_tick_fixed;

uint64_t iotame__posix_ns(uint64_t ticks)
{
    if (!iotame__tsc) return ticks;
    double r = ns_per_tick_fixed;
    if (r == 0) {
        uint64_t ns = iotame_monotonic_ns() - start_ns, t = iotame_now() - start_tick;
        r = t ? (double)ns / (double)t : 1.0;
        if (ns >= 50000000u) ns_per_tick_fixed = r;
    }
    return (uint64_t)((double)ticks * r);
}

/* ---- the module ---- */

static int posix_start(const iotame_config_t *cfg)
{
    const iotame_file_config_t process = {.defaults = cfg ? &cfg->defaults : NULL}; /* defaults only */
    const json_t *v = iotame_config_setting(&process, "posix", "all_files");
    all_files = json_is_true(v ? v : iotame_config_default("posix", "all_files"));
    if (all_files && cfg) {
        add_own_path(cfg->defaults.json);
        for (size_t i = 0; i < cfg->nrules; i++) add_own_path(cfg->rules[i].json);
    }
    start_ns = iotame_monotonic_ns();
    start_tick = iotame_now();
    segment_setup(); /* collective: before any rank can return early */
    /* The descriptor table: one entry per possible descriptor, mapped lazily (untouched pages cost nothing). */
    struct rlimit rl;
    rlim_t n = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_max : 65536;
    if (n == RLIM_INFINITY || n > (1u << 20)) n = 1u << 20;
    if (n < 1024) n = 1024;
    void *table = mmap(NULL, n * sizeof(iotame__posix_fd_t), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (table == MAP_FAILED) {
        iotame_stats_passthrough(NULL, "posix: no memory for the descriptor table");
        return 0;
    }
    iotame__posix_fds = table;
    fds_cap = (unsigned)n;
    if (segment_problem) iotame_stats_passthrough(NULL, segment_problem);
    __atomic_store_n(&iotame__posix_nfds, fds_cap, __ATOMIC_RELEASE);
    return 1;
}

static json_t *posix_time_json(uint64_t ticks, double ns_per_tick)
{
    double s = (double)ticks * ns_per_tick * 1e-9;
    return json_pack("{s:f,s:f,s:f}", "min", s, "avg", s, "max", s);
}

static json_t *hist_json(const uint64_t *h)
{
    json_t *o = json_object();
    for (unsigned b = 0; b < IOTAME_HIST_BUCKETS; b++) {
        if (!h[b]) continue;
        char key[24];
        snprintf(key, sizeof key, "%llu", b ? 1ull << (b - 1) : 0ull);
        json_object_set_new(o, key, json_integer((json_int_t)h[b]));
    }
    return o;
}

static json_t *access_json(const iotame_posix_file_t *f, int d)
{
    return json_pack("{s:I,s:I,s:I}", "consecutive", (json_int_t)f->consecutive[d], "sequential",
                     (json_int_t)f->sequential[d], "random", (json_int_t)(f->requests[d] - f->sequential[d]));
}

/* This rank's section of one file (the form `merge` folds: every rank's own numbers, times as min = avg = max). */
static json_t *section_json(const iotame_posix_file_t *f, double ns_per_tick)
{
    const uint64_t *m = f->meta;
    return json_pack("{s:i,s:i,s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:{s:o,s:o},s:{s:o,s:o},s:{s:I,s:I},"
                     "s:{s:o,s:o,s:o,s:o},s:i}",
                     "ranks", 1, "reading_ranks", f->requests[READ] > 0, "writing_ranks", f->requests[WRITE] > 0,
                     "opens", (json_int_t)m[IOTAME_POSIX_N_OPEN], "closes",
                     (json_int_t)m[IOTAME_POSIX_N_CLOSE], "reads", (json_int_t)f->requests[READ], "writes",
                     (json_int_t)f->requests[WRITE], "bytes_read", (json_int_t)f->bytes[READ], "bytes_written",
                     (json_int_t)f->bytes[WRITE], "seeks", (json_int_t)m[IOTAME_POSIX_N_SEEK], "syncs",
                     (json_int_t)m[IOTAME_POSIX_N_SYNC], "truncates", (json_int_t)m[IOTAME_POSIX_N_TRUNCATE],
                     "histogram", "read", hist_json(f->hist[READ]), "write", hist_json(f->hist[WRITE]), "access",
                     "read", access_json(f, READ), "write", access_json(f, WRITE), "seek_distance", "total",
                     (json_int_t)f->seek_total, "max", (json_int_t)f->seek_max, "time", "read",
                     posix_time_json(f->ticks[IOTAME_POSIX_T_READ], ns_per_tick), "write",
                     posix_time_json(f->ticks[IOTAME_POSIX_T_WRITE], ns_per_tick), "sync",
                     posix_time_json(f->ticks[IOTAME_POSIX_T_SYNC], ns_per_tick), "meta",
                     posix_time_json(f->ticks[IOTAME_POSIX_T_META], ns_per_tick), "max_concurrent",
                     (int)f->max_inflight);
}

/* Folds src's counters into dst: two files (inodes) one rank recorded under one path. */
static void fold(iotame_posix_file_t *dst, const iotame_posix_file_t *src)
{
    for (int d = 0; d < 2; d++) {
        dst->requests[d] += src->requests[d];
        dst->bytes[d] += src->bytes[d];
        dst->consecutive[d] += src->consecutive[d];
        dst->sequential[d] += src->sequential[d];
        for (int b = 0; b < IOTAME_HIST_BUCKETS; b++) dst->hist[d][b] += src->hist[d][b];
    }
    dst->seek_total += src->seek_total;
    if (src->seek_max > dst->seek_max) dst->seek_max = src->seek_max;
    for (int c = 0; c < 4; c++) dst->ticks[c] += src->ticks[c];
    for (int k = 0; k < IOTAME_POSIX_N_COUNT; k++) dst->meta[k] += src->meta[k];
    if (src->max_inflight > dst->max_inflight) dst->max_inflight = src->max_inflight;
}

/* At MPI_Finalize: stops recording (the runtime's own I/O from here on, the statistics file, passes through) and
 * puts each file's counters into its record's section. */
static void posix_finalize(void)
{
    __atomic_store_n(&iotame__posix_nfds, 0, __ATOMIC_RELEASE);
    double ns_per_tick = iotame_ns_per_tick();
    pthread_mutex_lock(&lock);
    /* Two files (inodes) under one path, a file deleted and created again: the newest record holds both. */
    for (iotame_posix_file_t *f = files; f; f = f->next) {
        iotame_posix_file_t *first = f;
        for (iotame_posix_file_t *g = files; g != f && first == f; g = g->next)
            if (strcmp(g->path, f->path) == 0) first = g;
        if (first != f) {
            fold(first, f);
            continue;
        }
        json_t *section = iotame_stats_section(iotame_stats_file(f->path), &iotame_module_posix), *mine;
        if (section && (mine = section_json(f, ns_per_tick))) {
            json_object_update(section, mine);
            json_decref(mine);
        }
    }
    pthread_mutex_unlock(&lock);
}

/* Folds one rank's section into the merged one: counts add up, "max" and "max_concurrent" take the larger, "min"
 * the smaller, and each time's "avg" is over the ranks of both ("ranks": the ranks that recorded the file). */
static void fold_json(json_t *into, const json_t *from, double wi, double wf)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)from, key, v) {
        json_t *mine = json_object_get(into, key);
        if (!mine) {
            json_object_set_new(into, key, json_deep_copy(v));
        } else if (json_is_object(v)) {
            fold_json(mine, v, wi, wf);
        } else if (json_is_integer(v)) {
            json_int_t a = json_integer_value(mine), b = json_integer_value(v);
            json_int_t r = strncmp(key, "max", 3) == 0 ? (a > b ? a : b) : strcmp(key, "min") == 0 ? (a < b ? a : b) : a + b;
            json_integer_set(mine, r);
        } else if (json_is_number(v)) {
            double a = json_number_value(mine), b = json_number_value(v), r;
            if (strcmp(key, "max") == 0) r = a > b ? a : b;
            else if (strcmp(key, "min") == 0) r = a < b ? a : b;
            else if (strcmp(key, "avg") == 0) r = wi + wf > 0 ? (a * wi + b * wf) / (wi + wf) : 0;
            else r = a + b;
            json_object_set_new(into, key, json_real(r));
        }
    }
}

static void posix_merge(json_t *into, const json_t *rank_section)
{
    double wi = (double)json_integer_value(json_object_get(into, "ranks"));
    double wf = (double)json_integer_value(json_object_get(rank_section, "ranks"));
    /* storage_layout (posix/cephfs_hints.c) was agreed by the ranks: the first rank's stands, not a sum */
    json_t *agreed = json_deep_copy(json_object_get(into, "storage_layout"));
    fold_json(into, rank_section, wi, wf);
    if (agreed) json_object_set_new(into, "storage_layout", agreed);
}

/* The module's `created` hook: a new file on CephFS takes the striping hints as its layout (posix/cephfs_hints.c). */
static void posix_created(const iotame_open_t *o) { iotame_posix_cephfs_create(o->comm, o->path, o->info, o->fs); }

const iotame_module_t iotame_module_posix = {
    .name = "posix",
    .settings = "posix",
    .start = posix_start,
    .opening = opening,
    .created = posix_created,
    .finalize = posix_finalize,
    .merge = posix_merge,
};
