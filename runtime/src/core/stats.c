/* Statistics: per-file records updated by the wrappers (the hot path: a few additions per call), reduced to
 * rank 0 at MPI_Finalize and written as JSON (docs/formats.md). */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core.h"
#include "iotame.h"
#include "module.h"

#define MAX_REASONS 16

typedef struct {
    const char *reason; /* a string literal of the runtime */
    uint64_t count;
} reason_t;

#define TIMES (IOTAME_OP_COUNT + IOTAME_CAT_COUNT)
#define CAT_NS(cat) (IOTAME_OP_COUNT + (cat))

/* The numbers of one record, reduced as one block of uint64_t. */
typedef struct {
    uint64_t count[IOTAME_OP_COUNT];
    uint64_t errors[IOTAME_OP_COUNT]; /* calls that returned an error */
    uint64_t bytes[IOTAME_OP_COUNT];
    uint64_t ns[TIMES]; /* per operation, then per category (CAT_NS); iotame_now() ticks until packed */
    uint64_t hist[2][IOTAME_HIST_BUCKETS]; /* [0] reads, [1] writes */
} numbers_t;

struct iotame_file_stats {
    char *path;
    char *rule;  /* glob of the rule that matched, or NULL */
    char *hints; /* JSON object of the configured hints, or NULL */
    char *taken; /* JSON object of the hints the MPI library reported at the file's first open, or NULL */
    json_t *section[IOTAME_MODULE_MAX]; /* the modules' sections, by registry index, or NULL */
    numbers_t n;
    reason_t reasons[MAX_REASONS];
    iotame_file_stats_t *next;
};

#define OP_CAT(name, cat) IOTAME_CAT_##cat,
static const unsigned char op_cat[IOTAME_OP_COUNT] = {IOTAME_OPS(OP_CAT)};
#define OP_NAME(name, cat) #name,
static const char *const op_name[IOTAME_OP_COUNT] = {IOTAME_OPS(OP_NAME)};
static const char *const cat_name[IOTAME_CAT_COUNT] = {"read", "write", "sync", "meta"};

static iotame_file_stats_t *files;  /* every record of this rank, newest first */
static reason_t job_reasons[MAX_REASONS];
static json_t *job_section[IOTAME_MODULE_MAX]; /* the modules' job-wide sections on this rank */
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER; /* the records, when threaded */

static void lock_if_threaded(void)
{
    if (iotame__threaded) pthread_mutex_lock(&stats_lock);
}
static void unlock_if_threaded(void)
{
    if (iotame__threaded) pthread_mutex_unlock(&stats_lock);
}


/* ---- records ---- */

static iotame_file_stats_t *find_or_add(const char *path)
{
    iotame_file_stats_t *fs;
    for (fs = files; fs; fs = fs->next)
        if (strcmp(fs->path, path) == 0) return fs;
    fs = calloc(1, sizeof *fs);
    if (!fs || !(fs->path = strdup(path))) {
        free(fs);
        return NULL;
    }
    fs->next = files;
    files = fs;
    return fs;
}

iotame_file_stats_t *iotame_stats_file(const char *path)
{
    lock_if_threaded();
    iotame_file_stats_t *fs = find_or_add(path);
    unlock_if_threaded();
    return fs;
}

void iotame_stats_set_taken(iotame_file_stats_t *fs, MPI_File fh)
{
    if (!fs || fs->taken) return; /* the first open's: read back once per file, not on the hot path */
    MPI_Info info = MPI_INFO_NULL;
    if (PMPI_File_get_info(fh, &info) != MPI_SUCCESS || info == MPI_INFO_NULL) return;
    json_t *h = json_object();
    int nkeys = 0;
    PMPI_Info_get_nkeys(info, &nkeys);
    for (int i = 0; i < nkeys; i++) {
        char key[MPI_MAX_INFO_KEY + 1], value[1024];
        int len = 0, flag = 0;
        if (PMPI_Info_get_nthkey(info, i, key) != MPI_SUCCESS) continue;
        if (PMPI_Info_get_valuelen(info, key, &len, &flag) != MPI_SUCCESS || !flag || len >= (int)sizeof value) continue;
        if (PMPI_Info_get(info, key, (int)sizeof value - 1, value, &flag) == MPI_SUCCESS && flag)
            json_object_set_new(h, key, json_string(value));
    }
    PMPI_Info_free(&info);
    char *text = json_dumps(h, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(h);
    lock_if_threaded();
    if (!fs->taken) fs->taken = text, text = NULL;
    unlock_if_threaded();
    free(text);
}

void iotame_stats_set_config(iotame_file_stats_t *fs, const iotame_file_config_t *fc)
{
    if (!fs) return;
    lock_if_threaded();
    free(fs->rule);
    fs->rule = fc->rule ? strdup(fc->rule->match) : NULL;
    json_t *h = json_object();
    for (size_t i = 0; i < fc->nhints; i++) json_object_set_new(h, fc->hints[i]->key, json_string(fc->hints[i]->value));
    free(fs->hints);
    fs->hints = json_dumps(h, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(h);
    unlock_if_threaded();
}

static unsigned bucket(uint64_t bytes) { return bytes ? 64u - (unsigned)__builtin_clzll(bytes) : 0u; }

/* One update of a record. the threaded test is taken once per call, not once per counter, since
 * these few additions are most of what a wrapper costs. */
static inline void stats_update(numbers_t *n, iotame_op_t op, uint64_t ticks, int data, uint64_t bytes)
{
    unsigned cat = op_cat[op], b = bucket(bytes), w = cat == IOTAME_CAT_WRITE;
    if (!iotame__threaded) {
        n->count[op]++;
        n->ns[op] += ticks;
        n->ns[CAT_NS(cat)] += ticks;
        if (data) {
            n->bytes[op] += bytes;
            n->hist[w][b]++;
        }
        return;
    }
    __atomic_fetch_add(&n->count[op], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&n->ns[op], ticks, __ATOMIC_RELAXED);
    __atomic_fetch_add(&n->ns[CAT_NS(cat)], ticks, __ATOMIC_RELAXED);
    if (data) {
        __atomic_fetch_add(&n->bytes[op], bytes, __ATOMIC_RELAXED);
        __atomic_fetch_add(&n->hist[w][b], 1, __ATOMIC_RELAXED);
    }
}

void iotame_stats_record_time(iotame_file_stats_t *fs, iotame_op_t op, uint64_t ticks)
{
    if (fs) stats_update(&fs->n, op, ticks, 0, 0);
}

void iotame_stats_record(iotame_file_stats_t *fs, iotame_op_t op, uint64_t ticks, uint64_t bytes)
{
    if (fs) stats_update(&fs->n, op, ticks, 1, bytes);
}

void iotame_stats_record_error(iotame_file_stats_t *fs, iotame_op_t op, int rc)
{
    if (fs && rc != MPI_SUCCESS) __atomic_fetch_add(&fs->n.errors[op], 1, __ATOMIC_RELAXED);
}

const char *iotame_stats_path(const iotame_file_stats_t *fs) { return fs->path; }

json_t *iotame_stats_section(iotame_file_stats_t *fs, const iotame_module_t *m)
{
    int i = iotame_module_index(m);
    if (!fs || i < 0) return NULL;
    lock_if_threaded();
    if (!fs->section[i]) fs->section[i] = json_object();
    json_t *o = fs->section[i];
    unlock_if_threaded();
    return o;
}

json_t *iotame_stats_job_section(const iotame_module_t *m)
{
    int i = iotame_module_index(m);
    if (i < 0) return NULL;
    lock_if_threaded();
    if (!job_section[i]) job_section[i] = json_object();
    json_t *o = job_section[i];
    unlock_if_threaded();
    return o;
}

static void add_reason(reason_t *reasons, const char *reason, uint64_t count)
{
    for (int i = 0; i < MAX_REASONS; i++) {
        if (!reasons[i].reason || strcmp(reasons[i].reason, reason) == 0) {
            reasons[i].reason = reason;
            reasons[i].count += count;
            return;
        }
    }
}

void iotame_stats_passthrough(iotame_file_stats_t *fs, const char *reason)
{
    lock_if_threaded();
    add_reason(fs ? fs->reasons : job_reasons, reason, 1);
    unlock_if_threaded();
}

const char *iotame_msg_setup_reason(int cls)
{
    enum { CLASSES = 128 };
    static const char *reasons[CLASSES]; /* never freed: counted reasons are kept by their address */
    static const char *const unknown = "a message of the runtime's own failed while setting the file up";
    if (cls <= 0 || cls >= CLASSES) return unknown;
    lock_if_threaded();
    if (!reasons[cls]) {
        char text[96];
        snprintf(text, sizeof text, "%s: MPI error class %d", unknown, cls);
        reasons[cls] = strdup(text);
    }
    const char *reason = reasons[cls] ? reasons[cls] : unknown;
    unlock_if_threaded();
    return reason;
}

/* ---- reduction: every rank packs its records, rank 0 gathers and merges them ---- */

typedef struct {
    char *data;
    size_t len, cap;
    int failed; /* out of memory: this rank then sends nothing rather than stopping the job */
} buf_t;

static void put(buf_t *b, const void *p, size_t n)
{
    if (b->failed) return;
    if (b->len + n > b->cap) {
        size_t cap = (b->len + n) * 2 + 4096;
        char *grown = realloc(b->data, cap);
        if (!grown) {
            b->failed = 1;
            return;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void put_str(buf_t *b, const char *s)
{
    uint32_t n = s ? (uint32_t)strlen(s) + 1 : 0;
    put(b, &n, sizeof n);
    if (n) put(b, s, n);
}

static void put_reasons(buf_t *b, const reason_t *r)
{
    for (int i = 0; i < MAX_REASONS && r[i].reason; i++) {
        put_str(b, r[i].reason);
        put(b, &r[i].count, sizeof r[i].count);
    }
    put_str(b, NULL);
}

typedef struct {
    const char *p, *end;
} reader_t;

static void get(reader_t *r, void *out, size_t n)
{
    memcpy(out, r->p, n);
    r->p += n;
}

static const char *get_str(reader_t *r)
{
    uint32_t n;
    get(r, &n, sizeof n);
    if (!n) return NULL;
    const char *s = r->p;
    r->p += n;
    return s;
}

/* Merged view of one file over the ranks that used it. */
typedef struct merged {
    const char *path, *rule, *hints, *taken;
    json_t *section[IOTAME_MODULE_MAX];
    int ranks;
    numbers_t sum;
    uint64_t ns_min[TIMES], ns_max[TIMES];
    json_t *reasons;
    struct merged *next;
} merged_t;

static void merge_reasons(reader_t *r, json_t *into)
{
    const char *reason;
    while ((reason = get_str(r))) {
        uint64_t count;
        get(r, &count, sizeof count);
        json_t *old = json_object_get(into, reason);
        json_object_set_new(into, reason, json_integer((json_int_t)(count + (old ? json_integer_value(old) : 0))));
    }
}

static json_t *stats_time_json(uint64_t min, uint64_t sum, uint64_t max, int ranks)
{
    return json_pack("{s:f,s:f,s:f}", "min", min * 1e-9, "avg", ranks ? sum * 1e-9 / ranks : 0.0, "max",
                     max * 1e-9);
}

static json_t *file_json(const merged_t *m)
{
    json_t *ops = json_object(), *time = json_object(), *hist = json_object();
    uint64_t bytes[2] = {0, 0};
    for (int op = 0; op < IOTAME_OP_COUNT; op++) {
        if (!m->sum.count[op]) continue;
        json_t *o = json_pack("{s:I,s:o}", "count", (json_int_t)m->sum.count[op], "seconds",
                              stats_time_json(m->ns_min[op], m->sum.ns[op], m->ns_max[op], m->ranks));
        if (m->sum.errors[op]) json_object_set_new(o, "errors", json_integer((json_int_t)m->sum.errors[op]));
        if (op_cat[op] == IOTAME_CAT_READ || op_cat[op] == IOTAME_CAT_WRITE) {
            json_object_set_new(o, "bytes", json_integer((json_int_t)m->sum.bytes[op]));
            bytes[op_cat[op] == IOTAME_CAT_WRITE] += m->sum.bytes[op];
        }
        json_object_set_new(ops, op_name[op], o);
    }
    for (int c = 0; c < IOTAME_CAT_COUNT; c++)
        json_object_set_new(time, cat_name[c], stats_time_json(m->ns_min[CAT_NS(c)], m->sum.ns[CAT_NS(c)],
                                                         m->ns_max[CAT_NS(c)], m->ranks));
    for (int d = 0; d < 2; d++) {
        json_t *h = json_object();
        for (unsigned b = 0; b < IOTAME_HIST_BUCKETS; b++) {
            if (!m->sum.hist[d][b]) continue;
            char key[24];
            snprintf(key, sizeof key, "%llu", b ? 1ull << (b - 1) : 0ull);
            json_object_set_new(h, key, json_integer((json_int_t)m->sum.hist[d][b]));
        }
        json_object_set_new(hist, d ? "write" : "read", h);
    }
    json_t *hints = m->hints ? json_loads(m->hints, 0, NULL) : NULL;
    json_t *taken = m->taken ? json_loads(m->taken, 0, NULL) : NULL;
    json_t *file = json_pack("{s:s,s:i,s:I,s:I,s:I,s:s?,s:o,s:o*,s:o,s:o,s:o,s:[],s:O}", "path", m->path, "ranks",
                     m->ranks, "opens", (json_int_t)m->sum.count[IOTAME_OP_open], "bytes_read", (json_int_t)bytes[0],
                     "bytes_written", (json_int_t)bytes[1], "rule", m->rule, "hints", hints ? hints : json_object(),
                     "hints_taken", taken, "ops", ops, "time", time, "histogram", hist, "decisions",
                     "passthrough_reasons", m->reasons);
    for (int i = 0; iotame_modules[i]; i++) {
        if (!m->section[i]) continue;
        if (iotame_modules[i]->report) iotame_modules[i]->report(file, m->section[i]);
        else json_object_set(file, iotame_modules[i]->name, m->section[i]);
    }
    return file;
}

/* Folds one rank's section of module i into the merged one: the module's own reduction, else the first rank's. */
static void merge_section(merged_t *m, int i, const char *text)
{
    json_t *rank = text ? json_loads(text, 0, NULL) : NULL;
    if (!rank) return;
    if (!m->section[i]) {
        m->section[i] = rank;
        return;
    }
    if (iotame_modules[i]->merge) iotame_modules[i]->merge(m->section[i], rank);
    json_decref(rank);
}

static double mbs(uint64_t bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e6 : 0.0; }

/* Builds the statistics from the gathered buffers of all ranks (rank 0). */
static json_t *build(const char *all, const int *sizes, int nprocs, double wall, const char *config_path,
                     const char *config_error)
{
    merged_t *list = NULL;
    json_t *job_reasons_json = json_object(), *ranks_sections[IOTAME_MODULE_MAX] = {NULL};
    uint64_t rank_max[IOTAME_CAT_COUNT] = {0}, io_max = 0, bytes[2] = {0, 0};
    const char *p = all;
    for (int rank = 0; rank < nprocs; p += sizes[rank], rank++) {
        if (!sizes[rank]) continue; /* a rank that ran out of memory sent nothing */
        reader_t r = {p, p + sizes[rank]};
        uint64_t rank_ns[IOTAME_CAT_COUNT] = {0};
        merge_reasons(&r, job_reasons_json);
        for (int i = 0; iotame_modules[i]; i++) {
            const char *text = get_str(&r);
            json_t *section = text ? json_loads(text, 0, NULL) : NULL;
            if (section && !ranks_sections[i]) ranks_sections[i] = json_array();
            if (section) { /* the array holds one entry per rank: nulls for the ranks before the first section */
                while (json_array_size(ranks_sections[i]) < (size_t)rank) json_array_append_new(ranks_sections[i], json_null());
                json_array_append_new(ranks_sections[i], section);
            }
        }
        while (r.p < r.end) {
            const char *path = get_str(&r), *rule = get_str(&r), *hints = get_str(&r), *taken = get_str(&r);
            numbers_t n;
            merged_t *m;
            for (m = list; m && strcmp(m->path, path) != 0; m = m->next) {}
            if (!m) {
                m = calloc(1, sizeof *m);
                if (!m) break; /* out of memory: this rank's remaining records are left out */
                m->path = path;
                m->reasons = json_object();
                for (int t = 0; t < TIMES; t++) m->ns_min[t] = UINT64_MAX;
                m->next = list;
                list = m;
            }
            if (!m->rule) m->rule = rule;
            if (!m->hints) m->hints = hints;
            if (!m->taken) m->taken = taken;
            for (int i = 0; iotame_modules[i]; i++) merge_section(m, i, get_str(&r));
            merge_reasons(&r, m->reasons);
            get(&r, &n, sizeof n);
            m->ranks++;
            uint64_t *dst = (uint64_t *)&m->sum, *src = (uint64_t *)&n;
            for (size_t i = 0; i < sizeof n / sizeof(uint64_t); i++) dst[i] += src[i];
            for (int t = 0; t < TIMES; t++) {
                if (n.ns[t] < m->ns_min[t]) m->ns_min[t] = n.ns[t];
                if (n.ns[t] > m->ns_max[t]) m->ns_max[t] = n.ns[t];
            }
            for (int c = 0; c < IOTAME_CAT_COUNT; c++) rank_ns[c] += n.ns[CAT_NS(c)];
            for (int op = 0; op < IOTAME_OP_COUNT; op++)
                if (op_cat[op] == IOTAME_CAT_READ || op_cat[op] == IOTAME_CAT_WRITE)
                    bytes[op_cat[op] == IOTAME_CAT_WRITE] += n.bytes[op];
        }
        uint64_t io = 0;
        for (int c = 0; c < IOTAME_CAT_COUNT; c++) {
            if (rank_ns[c] > rank_max[c]) rank_max[c] = rank_ns[c];
            io += rank_ns[c];
        }
        if (io > io_max) io_max = io;
    }
    json_t *files_json = json_array();
    /* The list is newest first per rank; print files in the order they were first seen. */
    merged_t *rev = NULL;
    while (list) {
        merged_t *next = list->next;
        list->next = rev;
        rev = list;
        list = next;
    }
    for (merged_t *m = rev, *next; m; m = next) {
        next = m->next;
        json_array_append_new(files_json, file_json(m));
        json_decref(m->reasons);
        for (int i = 0; i < IOTAME_MODULE_MAX; i++) json_decref(m->section[i]);
        free(m);
    }
    json_t *modules_json = json_object();
    for (int i = 0; iotame_modules[i]; i++) {
        if (!ranks_sections[i]) continue;
        while (json_array_size(ranks_sections[i]) < (size_t)nprocs) json_array_append_new(ranks_sections[i], json_null());
        const iotame_module_t *m = iotame_modules[i];
        json_t *shown = m->job_report ? m->job_report(ranks_sections[i]) : json_incref(ranks_sections[i]);
        if (shown) json_object_set_new(modules_json, m->name, shown);
        json_decref(ranks_sections[i]);
    }
    double rd = rank_max[IOTAME_CAT_READ] * 1e-9, wr = rank_max[IOTAME_CAT_WRITE] * 1e-9, io = io_max * 1e-9;
    json_t *summary = json_pack(
        "{s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "bytes_read", (json_int_t)bytes[0], "bytes_written",
        (json_int_t)bytes[1], "read_seconds", rd, "write_seconds", wr, "sync_seconds",
        rank_max[IOTAME_CAT_SYNC] * 1e-9, "meta_seconds", rank_max[IOTAME_CAT_META] * 1e-9, "io_seconds", io,
        "read_mbs", mbs(bytes[0], rd), "write_mbs", mbs(bytes[1], wr), "io_mbs", mbs(bytes[0] + bytes[1], io));
    char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    PMPI_Get_library_version(mpi, &len);
    mpi[strcspn(mpi, "\n")] = '\0';
    for (char *c = mpi; *c; c++)
        if (*c == '\t') *c = ' ';
    char *label = strstr(mpi, " Version: "); /* "MPICH Version: 4.0.2" -> "MPICH 4.0.2" */
    if (label) memmove(label + 1, label + 10, strlen(label + 10) + 1);
    return json_pack("{s:i,s:s,s:s,s:i,s:s?,s:s?,s:I,s:f,s:o,s:o,s:o,s:o}", "version", IOTAME_STATS_VERSION,
                     "iotame_version", iotame_version(), "mpi", mpi, "nprocs", nprocs, "config", config_path,
                     "config_error", config_error, "malloc_threshold", (json_int_t)iotame_memory_threshold(),
                     "wall_seconds", wall, "summary", summary, "files", files_json, "modules", modules_json,
                     "passthrough_reasons", job_reasons_json);
}

/* Serializes this rank's records for build(): the job's reasons and sections, then one block per file. */
static void stats_pack(buf_t *b)
{
    double ns_per_tick = iotame_ns_per_tick();
    put_reasons(b, job_reasons);
    for (int i = 0; iotame_modules[i]; i++) {
        char *text = job_section[i] ? json_dumps(job_section[i], JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        put_str(b, text);
        free(text);
    }
    for (iotame_file_stats_t *fs = files; fs; fs = fs->next) {
        put_str(b, fs->path);
        put_str(b, fs->rule);
        put_str(b, fs->hints);
        put_str(b, fs->taken);
        for (int i = 0; iotame_modules[i]; i++) {
            char *text = fs->section[i] ? json_dumps(fs->section[i], JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
            put_str(b, text);
            free(text);
        }
        put_reasons(b, fs->reasons);
        numbers_t n = fs->n; /* every rank sends nanoseconds */
        for (int t = 0; t < TIMES; t++) n.ns[t] = (uint64_t)((double)n.ns[t] * ns_per_tick);
        put(b, &n, sizeof n);
    }
}

/* Writes beside the target and renames, so a reader never sees half a file. 0 on success. */
static int stats_dump(json_t *stats, const char *path)
{
    char tmp[4096];
    /* another thread than the process's first adds its id: the watchdog's partial write and a signal handler's
     * may run at once */
    long tid = (long)syscall(SYS_gettid);
    if (tid == (long)getpid()) snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    else snprintf(tmp, sizeof tmp, "%s.tmp%d.%ld", path, (int)getpid(), tid);
    if (json_dump_file(stats, tmp, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9)) != 0 ||
        rename(tmp, path) != 0) {
        remove(tmp);
        return -1;
    }
    return 0;
}

void iotame_stats_write(MPI_Comm comm, const char *path, double wall, const char *config_path,
                        const char *config_error)
{
    int rank, nprocs;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &nprocs);
    buf_t b = {0};
    stats_pack(&b);
    if (b.failed) b.len = 0;
    int size = (int)b.len, *sizes = NULL, *displs = NULL;
    char *all = NULL;
    if (rank == 0) {
        sizes = calloc((size_t)nprocs, sizeof *sizes);
        displs = calloc((size_t)nprocs, sizeof *displs);
    }
    PMPI_Gather(&size, 1, MPI_INT, sizes, 1, MPI_INT, 0, comm);
    if (rank == 0) {
        size_t total = 0;
        for (int i = 0; i < nprocs; i++) {
            displs[i] = (int)total;
            total += (size_t)sizes[i];
        }
        all = malloc(total ? total : 1);
    }
    PMPI_Gatherv(b.data, size, MPI_BYTE, all, sizes, displs, MPI_BYTE, 0, comm);
    free(b.data);
    if (rank != 0) return;
    if (!all || !sizes || !displs) {
        iotame_log_warn("out of memory: statistics not written\n");
        free(all);
        free(sizes);
        free(displs);
        return;
    }

    json_t *stats = build(all, sizes, nprocs, wall, config_path, config_error);
    if (!stats || stats_dump(stats, path) != 0) iotame_log_warn("cannot write the statistics to %s\n", path);
    json_decref(stats);
    free(all);
    free(sizes);
    free(displs);
}

void iotame_stats_write_partial(const char *path, int rank, int job_nprocs, double wall, const char *config_path,
                                const char *config_error, const char *reason, int signo)
{
    buf_t b = {0};
    stats_pack(&b);
    if (b.failed) b.len = 0;
    int size = (int)b.len;
    json_t *stats = build(b.data ? b.data : "", &size, 1, wall, config_path, config_error);
    free(b.data);
    if (!stats) return;
    json_object_set_new(stats, "partial", json_pack("{s:s,s:i,s:i,s:o}", "reason", reason, "rank", rank,
                                                    "job_nprocs", job_nprocs, "signal",
                                                    signo ? json_integer(signo) : json_null()));
    json_t *hang = iotame_watchdog_json();
    if (hang) json_object_set_new(stats, "hang", hang);
    char target[4096];
    snprintf(target, sizeof target, "%s.partial.%d", path, rank);
    if (stats_dump(stats, target) != 0) iotame_log_warn("cannot write the partial statistics to %s\n", target);
    json_decref(stats);
}

/* ---- the module: every call counted as the application made it ---- */

static void stats_after(const iotame_io_t *io, int rc, uint64_t ticks, uint64_t bytes)
{
    iotame_stats_record(io->file->fs, io->op, ticks, bytes);
    iotame_stats_record_error(io->file->fs, io->op, rc);
}

const iotame_module_t iotame_module_stats = {
    .name = "stats",
    .after = stats_after,
    .meta = iotame_stats_record_time,
};
