/* Routing of the blocking collective data calls (MPI_File_write_all, read_all, write_at_all, read_at_all and their
 * _c forms) through the strategies, with MPI-IO's semantics kept: the data stream is the application's buffer
 * packed with its datatype (PMPI_Pack; a contiguous buffer is used as it is), the file side is the handle's view
 * flattened (flatten/), strategies do their I/O through a shadow handle (the same file opened MPI_MODE_RDWR on a
 * duplicate of the communicator, default view), the individual file pointer is advanced with PMPI_File_seek, the
 * status carries the bytes moved, and an error on any rank is returned on every rank through the file's error
 * handler. Whatever the engine cannot take goes to the library unchanged, with its reason counted.
 *
 * Only handles whose "collective.strategy" is not passthrough are tracked (iotame_collective_open); the other
 * handles, and every independent call, never reach this file. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>

#include "select/select.h"
#include "strategy.h"

#define AUTO (-1)

/* what every rank tells at the end of a steady window: the window's shape and times on this rank, and the least
 * time it spent in a collective of ours so far */
enum { W_CHANGED, W_DELTA, W_START, W_END, W_BYTES, W_EXTENTS, W_WARM_NS, W_NS, W_COST_NS, WINDOW_FIELDS };
/* the opening window, and the shortest steady window: STEADY_WINDOWS monitoring windows of exam_calls calls */
#define STEADY_WINDOWS 4

int iotame__collective_handles;

struct iotame_coll_file {
    MPI_File fh;
    iotame_file_stats_t *fs;
    char *path;
    int amode, atomic;
    /* the view, types owned (duplicated at set_view) unless named */
    MPI_Offset disp;
    MPI_Datatype etype, filetype;
    int64_t etype_size;
    int native_rep;
    iotame_flat_t *flat;
    int flat_rc; /* 1: not flattened yet, else iotame_flatten_type's result */
    /* configuration */
    int strategy; /* registry index, or AUTO */
    int cand[IOTAME_STRATEGY_MAX], ncand;
    int exam_calls;
    int64_t trace;
    double threshold, budget;
    char *knowledge_path;
    int knowledge_broken; /* rank 0: the file exists but is not a knowledge file (reported at load) */
    int64_t virtual_node_size, targets, target_unit;
    int64_t readahead; /* bytes: configured, else this rank's file system's; the ranks' largest once agreed */
    /* agreed at open */
    iotame_coll_env_t env;
    int opening[2];  /* the strategy of the opening window of reads [0], writes [1]; -1: none */
    int started;     /* the first call came (the opening window starts there) */
    const char *off; /* why every call now goes to the library (the engine could not be set up), or NULL */
    int *node_of, *spread;
    int hints_stale, written;
    iotame_extents_t ext;
    char *pack;
    size_t pack_cap;
    int64_t *info;
    json_t *knowledge;
    iotame_selector_t *sel;
    /* calls served without a collective of ours (a fixed library strategy, or steady windows): this rank's
     * calls, bytes and seconds per strategy, into the statistics at close (merged over the ranks at the end) */
    int64_t own_calls[IOTAME_STRATEGY_MAX], own_bytes[IOTAME_STRATEGY_MAX];
    double own_seconds[IOTAME_STRATEGY_MAX];
    /* a steady window of strategy auto (steady_call): its strategy serves every call of the window; no entry in the
     * opening window (the handle's first calls, whose signature is learned at the window's end) */
    int steady_left, steady_calls, steady_changed, steady_strategy, steady_write, steady_fresh, steady_kind;
    int64_t steady_measured, steady_unmeasured; /* windows ended, every rank alike */
    iotame_sel_entry_t *steady_entry;
    uint64_t steady_generation; /* the selector's, when the entry was taken */
    int64_t steady_row[3], steady_first, steady_start, steady_delta; /* this rank's bytes, extents, span; first
                                                                        start; last start; step between starts */
    double steady_seconds, steady_warm; /* the window's calls; its first call */
    int window_calls;                   /* the next steady window's length (agreed at every window's end) */
    int64_t cost_ns;                    /* this rank's least time in a collective of ours */
    int64_t *window;                    /* nprocs x WINDOW_FIELDS, gathered at a window's end */
    /* the window that ended last, its rows gathered without waiting (post_window) until the next one ends */
    int pending, pend_strategy, pend_write, pend_calls, pend_kind;
    iotame_sel_entry_t *pend_entry;
    MPI_Request pend_req;
    int64_t pend_row[WINDOW_FIELDS], pend_ns;
};

/* ---- the handles we route ---- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static iotame_coll_file_t **files;
static size_t nfiles, files_cap;
/* closed handles whose last window's gather is still posted (finished at MPI_Finalize) */
static iotame_coll_file_t **closed;
static size_t nclosed, closed_cap;

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

/* Appends f to a list of handles (the caller holds the lock); -ENOMEM when the list cannot grow. */
static int push(iotame_coll_file_t ***list, size_t *n, size_t *cap, iotame_coll_file_t *f)
{
    if (*n == *cap) {
        size_t grow = *cap ? 2 * *cap : 8;
        iotame_coll_file_t **grown = realloc(*list, grow * sizeof *grown);
        if (!grown) return -ENOMEM;
        *list = grown;
        *cap = grow;
    }
    (*list)[(*n)++] = f;
    return 0;
}

static int add_file(iotame_coll_file_t *f)
{
    if (iotame__threaded) pthread_mutex_lock(&lock);
    int rc = push(&files, &nfiles, &files_cap, f);
    if (!rc) __atomic_add_fetch(&iotame__collective_handles, 1, __ATOMIC_RELAXED);
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

/* ---- statistics: calls, bytes and seconds per strategy ---- */

static void add_count(json_t *o, const char *key, int64_t n)
{
    json_object_set_new(o, key, json_integer(json_integer_value(json_object_get(o, key)) + n));
}

static void count_strategy(iotame_coll_file_t *f, int s, int64_t calls, int64_t bytes, double seconds)
{
    json_t *coll = iotame_stats_collective(f->fs);
    if (!coll) return;
    json_t *all = json_object_get(coll, "strategies");
    if (!all) json_object_set_new(coll, "strategies", all = json_object());
    const char *name = iotame_strategies[s]->name;
    json_t *o = json_object_get(all, name);
    if (!o) json_object_set_new(all, name, o = json_pack("{s:I,s:I,s:f}", "calls", (json_int_t)0, "bytes", (json_int_t)0, "seconds", 0.0));
    add_count(o, "calls", calls);
    add_count(o, "bytes", bytes);
    json_object_set_new(o, "seconds", json_real(json_real_value(json_object_get(o, "seconds")) + seconds));
}

/* ---- the view ---- */

static int is_named(MPI_Datatype t)
{
    int ni, na, nd, combiner;
    return PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) == MPI_SUCCESS && combiner == MPI_COMBINER_NAMED;
}

static void release_type(MPI_Datatype *t)
{
    if (*t != MPI_DATATYPE_NULL && !is_named(*t)) PMPI_Type_free(t);
    *t = MPI_DATATYPE_NULL;
}

static MPI_Datatype keep_type(MPI_Datatype t)
{
    if (is_named(t)) return t;
    MPI_Datatype copy = MPI_DATATYPE_NULL;
    return PMPI_Type_dup(t, &copy) == MPI_SUCCESS ? copy : MPI_DATATYPE_NULL;
}

static void set_view(iotame_coll_file_t *f, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, int native)
{
    release_type(&f->etype);
    release_type(&f->filetype);
    iotame_flatten_free(f->flat);
    f->flat = NULL;
    f->flat_rc = 1;
    f->disp = disp;
    f->etype = keep_type(etype);
    f->filetype = keep_type(filetype);
    MPI_Count size = 0;
    PMPI_Type_size_x(etype, &size);
    f->etype_size = (int64_t)size;
    f->native_rep = native;
}

void iotame_collective_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                                const char *datarep)
{
    iotame_coll_file_t *f = find(fh);
    if (f) set_view(f, disp, etype, filetype, datarep && strcmp(datarep, "native") == 0);
}

void iotame_collective_set_atomicity(MPI_File fh, int flag)
{
    iotame_coll_file_t *f = find(fh);
    if (f) f->atomic = flag;
}

void iotame_collective_set_info(MPI_File fh)
{
    iotame_coll_file_t *f = find(fh);
    if (f) f->hints_stale = 1;
}

/* ---- open (collective): the configuration, one agreement ---- */

/* The file's value of a collective setting, else its default in runtime/settings.json (one source of truth). */
static const json_t *setting(const iotame_file_config_t *fc, const char *key)
{
    const json_t *v = fc ? iotame_config_value(fc, "collective", key) : NULL;
    return v ? v : iotame_config_default("collective", key);
}

static int strategy_of(const iotame_file_config_t *fc)
{
    const char *name = json_string_value(setting(fc, "strategy"));
    if (!name) return 0; /* passthrough */
    return strcmp(name, "auto") == 0 ? AUTO : iotame_strategy_find(name);
}

static int64_t info_int(MPI_Info info, const char *key, int64_t dflt)
{
    char value[64];
    int flag = 0;
    if (info == MPI_INFO_NULL || PMPI_Info_get(info, key, sizeof value - 1, value, &flag) != MPI_SUCCESS || !flag)
        return dflt;
    char *end;
    long long v = strtoll(value, &end, 10);
    return end != value && v > 0 ? (int64_t)v : dflt;
}

/* cb_nodes, cb_buffer_size and striping from the application's handle (the configured hints merged in at open);
 * ROMIO's defaults when the library does not say. */
static void read_hints(iotame_coll_file_t *f)
{
    MPI_Info info = MPI_INFO_NULL;
    PMPI_File_get_info(f->fh, &info);
    iotame_coll_env_t *e = &f->env;
    e->cb_buffer_size = info_int(info, "cb_buffer_size", 16777216);
    e->cb_nodes = info_int(info, "cb_nodes", e->nnodes);
    e->striping_unit = info_int(info, "striping_unit", 0);
    e->striping_factor = info_int(info, "striping_factor", 0);
    e->targets = f->targets > 0 ? f->targets : e->striping_factor > 0 ? e->striping_factor : 1;
    e->target_unit = f->target_unit > 0 ? f->target_unit : e->striping_unit > 0 ? e->striping_unit : 1048576;
    if (info != MPI_INFO_NULL) PMPI_Info_free(&info);
    f->hints_stale = 0;
}

/* Nodes (MPI_COMM_TYPE_SHARED, or virtual nodes of virtual_node_size ranks), numbered by their first rank, and
 * the aggregator order: the first rank of every node, then the second, ... */
static int setup_nodes(iotame_coll_file_t *f)
{
    iotame_coll_env_t *e = &f->env;
    MPI_Comm node;
    int rc = f->virtual_node_size > 0
                 ? PMPI_Comm_split(e->comm, (int)(e->rank / f->virtual_node_size), e->rank, &node)
                 : PMPI_Comm_split_type(e->comm, MPI_COMM_TYPE_SHARED, e->rank, MPI_INFO_NULL, &node);
    if (rc != MPI_SUCCESS) return -EIO;
    int leader = e->rank, *leaders = malloc((size_t)e->nprocs * sizeof *leaders);
    PMPI_Allreduce(&e->rank, &leader, 1, MPI_INT, MPI_MIN, node);
    PMPI_Comm_free(&node);
    int ok = leaders != NULL, all = 0;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, e->comm);
    if (!all) {
        free(leaders);
        return -ENOMEM;
    }
    PMPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, e->comm);
    f->node_of = malloc((size_t)e->nprocs * sizeof *f->node_of);
    f->spread = malloc((size_t)e->nprocs * sizeof *f->spread);
    int *local = calloc((size_t)e->nprocs, sizeof *local), *count = calloc((size_t)e->nprocs, sizeof *count);
    if (!f->node_of || !f->spread || !local || !count) {
        free(leaders), free(local), free(count);
        return -ENOMEM; /* every rank allocates alike; a failure here is agreed below */
    }
    e->nnodes = 0;
    for (int r = 0; r < e->nprocs; r++) {
        if (leaders[r] == r) f->node_of[r] = e->nnodes++;
        else f->node_of[r] = f->node_of[leaders[r]];
        local[r] = count[f->node_of[r]]++;
    }
    int k = 0;
    for (int i = 0; k < e->nprocs; i++)
        for (int n = 0; n < e->nnodes; n++)
            for (int r = 0; r < e->nprocs; r++)
                if (f->node_of[r] == n && local[r] == i) f->spread[k++] = r;
    e->node_of = f->node_of;
    e->spread = f->spread;
    free(leaders), free(local), free(count);
    return 0;
}

/* Local disk file systems, where ROMIO's data-sieving locks work (the independent strategy needs them). */
static int on_local_fs(const char *path)
{
    static const unsigned long local[] = {0xEF53, 0x58465342, 0x9123683E, 0x01021994, 0x794C7630, 0x2FC12FC1,
                                          0xF2F52010}; /* ext2/3/4, xfs, btrfs, tmpfs, overlay, zfs, f2fs */
    struct statfs sf;
    const char *p = strncmp(path, "ufs:", 4) == 0 ? path + 4 : path;
    if (statfs(p, &sf) != 0) return 0;
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++)
        if ((unsigned long)sf.f_type == local[i]) return 1;
    return 0;
}

/* Bytes the kernel reads ahead of a sequential reader of the file: its disk's read_ahead_kb (a partition's is its
 * disk's), else its file system's backing device's (NFS, FUSE); 0 when unknown (tmpfs, a parallel file system's
 * client, which has its own settings). */
static int64_t readahead_of(const char *path)
{
    static const char *const where[] = {"/sys/dev/block/%u:%u/queue/read_ahead_kb",
                                        "/sys/dev/block/%u:%u/../queue/read_ahead_kb",
                                        "/sys/class/bdi/%u:%u/read_ahead_kb"};
    struct stat st;
    if (stat(strncmp(path, "ufs:", 4) == 0 ? path + 4 : path, &st) != 0) return 0;
    for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) {
        char name[128];
        snprintf(name, sizeof name, where[i], major(st.st_dev), minor(st.st_dev));
        FILE *in = fopen(name, "r");
        long kb = -1;
        if (in && fscanf(in, "%ld", &kb) != 1) kb = -1;
        if (in) fclose(in);
        if (kb >= 0) return (int64_t)kb * 1024;
    }
    return 0;
}

/* The candidates on the file's file system: away from a local one independent is the library's collective call, and
 * with passthrough also a candidate, examining both would measure one thing twice. */
static int candidates_on(const iotame_coll_file_t *f, int local_fs, int *cand)
{
    int ind = iotame_strategy_find("independent"), pt = iotame_strategy_find("passthrough"), has_pt = 0, k = 0;
    for (int i = 0; i < f->ncand; i++) has_pt |= f->cand[i] == pt;
    for (int i = 0; i < f->ncand; i++)
        if (local_fs || !has_pt || f->cand[i] != ind) cand[k++] = f->cand[i];
    return k;
}

static iotame_select_conf_t select_conf(const iotame_coll_file_t *f, const int *cand, int ncand)
{
    return (iotame_select_conf_t){cand, ncand, f->exam_calls, f->threshold, f->trace, f->budget,
                                  f->budget < 1 ? IOTAME_SELECT_WINDOW_SECONDS : 0, f->readahead};
}

/* The strategy of the opening window of each operation ([0] reads, [1] writes) as this rank sees it, on a local
 * file system or not (the file system is agreed with it): a library strategy that every signature known of the
 * operation would run, or, none known, the first candidate; else -1 (the first call is measured on its own).
 * RATIONALE: a job that starts from the knowledge file then runs its winner without a collective of ours from the
 * first call, as a job that knows nothing runs its first candidate (measured with 4 ranks on 2 cores: the first
 * call measured on its own costs two collectives of 10 ms). */
static void propose_opening(const iotame_coll_file_t *f, const json_t *knowledge, int local_fs, int opening[2])
{
    int cand[IOTAME_STRATEGY_MAX], ncand = candidates_on(f, local_fs, cand);
    iotame_select_conf_t conf = select_conf(f, cand, ncand);
    for (int w = 0; w < 2; w++) {
        int s = f->strategy == AUTO && f->budget < 1 ? iotame_select_opening(f->sel, knowledge, &conf, w, f->env.nprocs)
                                                     : -1;
        opening[w] = s >= 0 && iotame_strategies[s]->native ? s : -1;
    }
}

/* The knowledge file, read by rank 0 and broadcast over comm: its length heads the first piece, and the pieces are
 * of a fixed size, so a file of up to 16 KiB costs one broadcast and every rank takes part in every broadcast even
 * when it cannot allocate the text (it then knows nothing: the agreement at open makes every rank drop the
 * knowledge). NULL when there is none yet (it is written at close); *broken on rank 0 when the file is there but
 * cannot be used (it is then left as it is); *exists when rank 0 could read a file. */
static json_t *load_knowledge(const char *path, MPI_Comm comm, int rank, int *broken, int *exists)
{
    enum { PIECE = 16384, HEAD = sizeof(long long) };
    char *text = NULL, piece[PIECE];
    long long n = -1;
    FILE *in = rank == 0 ? fopen(path, "rb") : NULL;
    if (in) {
        size_t cap = 0, len = 0, got = 0;
        do {
            char *grown = len + PIECE > cap ? realloc(text, cap = 2 * cap + 2 * PIECE) : text;
            if (!grown) break;
            text = grown;
            got = fread(text + len, 1, cap - len, in);
            len += got;
        } while (got > 0);
        fclose(in);
        n = got == 0 && text ? (long long)len : -1;
        *broken = n < 0;
    }
    const long long first = PIECE - HEAD; /* the text's bytes in the first piece */
    if (rank == 0) {
        memcpy(piece, &n, HEAD);
        if (n > 0) memcpy(piece + HEAD, text, (size_t)(n < first ? n : first));
    }
    PMPI_Bcast(piece, PIECE, MPI_BYTE, 0, comm);
    memcpy(&n, piece, HEAD);
    if (rank != 0 && n >= 0 && (text = malloc((size_t)n + 1)))
        memcpy(text, piece + HEAD, (size_t)(n < first ? n : first));
    for (long long at = first; at < n; at += PIECE) {
        int len = (int)(n - at < PIECE ? n - at : PIECE);
        PMPI_Bcast(rank == 0 ? text + at : piece, len, MPI_BYTE, 0, comm);
        if (rank != 0 && text) memcpy(text + at, piece, (size_t)len);
    }
    json_t *knowledge = n >= 0 && text ? iotame_knowledge_parse(text, (size_t)n) : NULL;
    free(text);
    *exists = n >= 0;
    if (rank == 0 && n >= 0 && !knowledge) *broken = 1;
    if (rank == 0 && *broken)
        iotame_log_warn("knowledge file %s cannot be read or is not a knowledge file (expected {\"version\": 1, "
                        "\"entries\": [...]}): not used, and left as it is\n", path);
    return knowledge;
}

static void free_file(iotame_coll_file_t *f)
{
    if (f->env.comm != MPI_COMM_NULL) PMPI_Comm_free(&f->env.comm);
    release_type(&f->etype);
    release_type(&f->filetype);
    iotame_flatten_free(f->flat);
    iotame_extents_free(&f->ext);
    json_decref(f->knowledge);
    free(f->node_of);
    free(f->spread);
    free(f->info);
    free(f->window);
    free(f->pack);
    free(f->path);
    free(f->knowledge_path);
    free(f);
}

/* The handle's state and settings; NULL when something could not be allocated. fixed: a library strategy serves
 * every call, so no selector and no per-call buffers. */
static iotame_coll_file_t *new_file(MPI_File fh, MPI_Comm comm, int amode, int strategy, int fixed,
                                    iotame_file_stats_t *fs, const iotame_file_config_t *fc)
{
    iotame_coll_file_t *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->fh = fh;
    f->fs = fs;
    f->amode = amode;
    f->strategy = strategy;
    f->env.comm = MPI_COMM_NULL;
    f->env.shadow = MPI_FILE_NULL;
    f->pend_req = MPI_REQUEST_NULL;
    PMPI_Comm_rank(comm, &f->env.rank);
    PMPI_Comm_size(comm, &f->env.nprocs);
    f->etype = f->filetype = MPI_DATATYPE_NULL;
    set_view(f, 0, MPI_BYTE, MPI_BYTE, 1);
    const json_t *cands = setting(fc, "candidates");
    size_t i;
    json_t *item;
    json_array_foreach((json_t *)cands, i, item) {
        int s = iotame_strategy_find(json_string_value(item));
        int dup = 0;
        for (int k = 0; k < f->ncand; k++) dup |= f->cand[k] == s;
        if (s >= 0 && !dup && f->ncand < IOTAME_STRATEGY_MAX) f->cand[f->ncand++] = s;
    }
    /* RATIONALE: the default order (settings.json) matters, since examinations wait for their budget and a
     * signature called a few times keeps its first candidate: independent first, the best or close to it for most
     * patterns measured on a local file system (docs/reproductions/orthrus.md); elsewhere independent is the
     * library's collective call and is dropped at open. */
    if (f->ncand == 0) f->cand[f->ncand++] = 0; /* settings.json without a default: passthrough alone */
    const json_t *v;
    f->exam_calls = (int)json_integer_value(setting(fc, "exam_calls"));
    f->window_calls = STEADY_WINDOWS * f->exam_calls;
    f->trace = json_integer_value(setting(fc, "trace"));
    f->threshold = json_number_value(setting(fc, "threshold"));
    f->budget = json_number_value(setting(fc, "exam_budget"));
    f->virtual_node_size = json_integer_value(setting(fc, "virtual_node_size"));
    f->targets = (v = setting(fc, "targets")) ? json_integer_value(v) : 0;
    f->target_unit = (v = setting(fc, "target_unit")) ? json_integer_value(v) : 0;
    const char *k = json_string_value(setting(fc, "knowledge"));
    f->path = strdup(iotame_stats_path(fs));
    int ok = f->path != NULL;
    f->readahead = (v = setting(fc, "readahead")) ? json_integer_value(v) : ok && !fixed ? readahead_of(f->path) : 0;
    if (k && *k) ok &= (f->knowledge_path = strdup(k)) != NULL;
    if (!fixed) {
        f->window = malloc((size_t)f->env.nprocs * WINDOW_FIELDS * sizeof *f->window);
        f->info = malloc((size_t)f->env.nprocs * IOTAME_INFO_FIELDS * sizeof *f->info);
        f->sel = iotame_select_for(fs);
        ok &= f->window && f->info && f->sel;
    }
    if (!ok) {
        free_file(f);
        return NULL;
    }
    return f;
}

/* RATIONALE: every collective of ours costs about 10 ms with 4 ranks on 2 cores (MPICH busy-polls; measured: one
 * MPI_Allreduce 5.7 to 10 ms, 0.4 us with 2 ranks), a tenth of a small phase. So the open agrees on everything in
 * one reduction on the application's communicator, inside its collective open (where the library's open does its own
 * collectives on it too): whether every rank could set the handle up, rank 0's file system type, whether every rank
 * holds the knowledge, the largest readahead, and the opening windows. A rank that cannot route says so there, and
 * then no rank routes the handle: ranks never take different paths. A fixed library strategy (independent) needs
 * nothing more: no communicator of ours and no collective of ours at all. The others duplicate the communicator for
 * their calls' collectives, without blocking, so that the duplicate completes during the reduction (measured with 4
 * ranks: 10.5 ms for both, 22 ms one after the other); nodes, hints and the shadow handle wait until an engine
 * strategy is chosen (open_engine). */
void iotame_collective_open(MPI_File fh, MPI_Comm comm, int amode, iotame_file_stats_t *fs,
                            const iotame_file_config_t *fc)
{
    const int strategy = strategy_of(fc);
    if (strategy == 0 || strategy < AUTO) return; /* the library's own collective I/O: nothing to track */
    const int fixed = strategy != AUTO && iotame_strategies[strategy]->native;
    int rank, broken = 0, exists = 0;
    PMPI_Comm_rank(comm, &rank);
    MPI_Comm own = MPI_COMM_NULL; /* ours: the application may free its own after the open */
    MPI_Request dup = MPI_REQUEST_NULL;
    int ok = fixed || PMPI_Comm_idup(comm, &own, &dup) == MPI_SUCCESS;
    const char *k = json_string_value(setting(fc, "knowledge"));
    json_t *knowledge = !fixed && k && *k ? load_knowledge(k, comm, rank, &broken, &exists) : NULL;
    iotame_coll_file_t *f = ok && fs ? new_file(fh, comm, amode, strategy, fixed, fs, fc) : NULL;
    if (f && add_file(f) != 0) {
        free_file(f);
        f = NULL;
    }
    /* the opening windows on a local file system [0..3] and elsewhere [4..7], each as (max, -min) over the ranks */
    enum { FAILED, LOCAL, HAS, HAS_NOT, READAHEAD_KB, OPENING, FIELDS = OPENING + 8 };
    int mine[FIELDS] = {!f, rank == 0 && f && on_local_fs(f->path), exists && knowledge, exists && !knowledge,
                        f ? (int)(f->readahead >> 10 < INT_MAX ? f->readahead >> 10 : INT_MAX) : 0};
    int all[FIELDS];
    for (int away = 0; away < 2; away++) {
        int p[2] = {-1, -1};
        if (f && f->sel) propose_opening(f, knowledge, !away, p);
        for (int w = 0; w < 2; w++) {
            mine[OPENING + 4 * away + 2 * w] = p[w];
            mine[OPENING + 4 * away + 2 * w + 1] = -p[w];
        }
    }
    uint64_t t0 = iotame_monotonic_ns();
    PMPI_Allreduce(mine, all, FIELDS, MPI_INT, MPI_MAX, comm);
    const int64_t cost_ns = (int64_t)(iotame_monotonic_ns() - t0);
    /* RATIONALE: the duplicate's context id is agreed over the ranks by the library (MPICH, Open MPI), so a
     * duplicate that started on every rank completes, or fails, on every rank alike. (One that cannot start on a
     * rank leaves the others waiting, as a blocking duplicate would: a nonblocking collective cannot be cancelled.) */
    if (dup != MPI_REQUEST_NULL && PMPI_Wait(&dup, MPI_STATUS_IGNORE) != MPI_SUCCESS) own = MPI_COMM_NULL;
    if (all[FAILED] || (!fixed && own == MPI_COMM_NULL)) {
        if (f) {
            remove_file(f);
            free_file(f);
        }
        json_decref(knowledge);
        if (own != MPI_COMM_NULL) PMPI_Comm_free(&own);
        const char *why = "a rank could not set up collective routing (out of memory, or no communicator)";
        if (fs) iotame_stats_passthrough(fs, why);
        return;
    }
    f->env.comm = own;
    f->env.local_fs = all[LOCAL];
    f->readahead = (int64_t)all[READAHEAD_KB] << 10; /* every rank's selector alike */
    f->cost_ns = cost_ns; /* what a collective of ours costs, until a gather costs less */
    const int *open = all + OPENING + 4 * !f->env.local_fs;
    for (int w = 0; w < 2; w++) f->opening[w] = open[2 * w] == -open[2 * w + 1] ? open[2 * w] : -1;
    if (all[HAS] && all[HAS_NOT]) { /* some rank has no copy of the knowledge: no rank uses it */
        json_decref(knowledge);
        knowledge = NULL;
        if (rank == 0) iotame_log_warn("knowledge file %s: a rank could not hold it (out of memory): not used\n", k);
    }
    f->knowledge = knowledge;
    f->knowledge_broken = broken;
    f->ncand = candidates_on(f, f->env.local_fs, f->cand);
}

/* What our own strategies need, set up when the first of them is chosen (every rank chooses alike): the nodes, the
 * hints, and the shadow handle they do their I/O through (read-modify-write needs reading, so RDWR even when the
 * application writes only). A job whose selector keeps the library's calls never pays for it. */
static int open_engine(iotame_coll_file_t *f)
{
    iotame_coll_env_t *e = &f->env;
    int nodes = setup_nodes(f) == 0, all = 0;
    if (nodes) read_hints(f);
    int amode = (f->amode & MPI_MODE_RDONLY) ? MPI_MODE_RDONLY : MPI_MODE_RDWR;
    int ok = nodes && PMPI_File_open(e->comm, f->path, amode, MPI_INFO_NULL, &e->shadow) == MPI_SUCCESS;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, e->comm);
    if (all) return 0;
    /* RATIONALE: a handle opened on some ranks only is left open: closing it is collective. */
    f->off = nodes ? "the file cannot be opened for reading and writing (shadow handle)"
                   : "out of memory (collective routing)";
    return -EACCES;
}

/* ---- the call ---- */

static int is_write(iotame_coll_op_t op) { return op == IOTAME_COLL_WRITE_ALL || op == IOTAME_COLL_WRITE_AT_ALL; }
static int is_at(iotame_coll_op_t op) { return op == IOTAME_COLL_WRITE_AT_ALL || op == IOTAME_COLL_READ_AT_ALL; }

static int library(const iotame_coll_args_t *a) { return iotame_coll_library(a, 0); }

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
    return library(a);
}

/* Why this rank cannot route the call (NULL: it can); fills the call's extents and stream position. */
static const char *prepare(iotame_coll_file_t *f, const iotame_coll_args_t *a, int64_t *pos, int64_t *nbytes)
{
    MPI_Count tsize = 0;
    if (PMPI_Type_size_x(a->datatype, &tsize) != MPI_SUCCESS || tsize < 0 || a->count < 0) return "invalid datatype";
    *nbytes = (int64_t)tsize * (int64_t)a->count;
    if (f->etype_size <= 0 || *nbytes % f->etype_size) return "request not a whole number of etypes";
    if (f->flat_rc == 1) f->flat_rc = f->filetype == MPI_DATATYPE_NULL ? -ENOMEM : iotame_flatten_type(f->filetype, &f->flat);
    if (f->flat_rc != 0) return "filetype cannot be flattened";
    iotame_view_t view = {.disp = f->disp, .etype_size = f->etype_size, .filetype = f->flat};
    if (!iotame_flatten_view_ok(&view)) return "file view not monotonic";
    MPI_Offset etypes = a->offset;
    if (!is_at(a->op) && PMPI_File_get_position(a->fh, &etypes) != MPI_SUCCESS) return "no file pointer";
    *pos = (int64_t)etypes;
    if (iotame_flatten_view_map(&view, (int64_t)etypes * f->etype_size, *nbytes, &f->ext) != 0)
        return "file view cannot be mapped";
    return NULL;
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
/* A steady window monitors a settled choice, opens a handle, or examines a library candidate. */
enum { WINDOW_MONITOR, WINDOW_OPENING, WINDOW_EXAM };

/* ---- steady windows ----
 * RATIONALE: the signature of every call is reduced over the ranks (a collective), and a measured call ends in
 * another: with a library strategy that does no collective of its own (independent), the ranks then move in
 * lockstep, and a job of small calls ran at half the speed of the same strategy fixed (matrix, 16 KiB calls:
 * 362 against 794 MB/s). So once a signature runs with a library strategy, the next STEADY_WINDOWS monitoring
 * windows are served without any collective of ours: every rank checks that its own part of each call keeps the
 * shape of the call that started the window (operation, bytes, extents, span, the same step between starts), and
 * one gather at the window's end confirms that every rank saw the same and gives the selector the window's
 * throughput. A window whose calls changed shape is not measured, and the next call is examined again. The
 * strategy is the same on every rank for the whole window, whatever the calls are, so nothing can diverge.
 * The opening window: a handle's first calls are served the same way by the first candidate when it is a library
 * strategy, since under the examination budget it would serve them anyway; the window's end gives the signature
 * (the calls' shape, gathered) and the first candidate's examination. Measured with 4 ranks on 2 cores, 8 calls
 * per phase: the calls measured one by one at the start of a phase cost auto up to half of the first candidate's
 * throughput. */
static void steady_row(const iotame_coll_file_t *f, int64_t nbytes, int64_t row[3], int64_t *start)
{
    const iotame_extents_t *x = &f->ext;
    *start = x->n ? x->v[0].off : 0;
    row[0] = nbytes;
    row[1] = (int64_t)x->n;
    row[2] = x->n ? x->v[x->n - 1].off + x->v[x->n - 1].len - *start : 0;
}

static iotame_sel_entry_t *entry_of(iotame_coll_file_t *f, const iotame_sig_t *sig)
{
    iotame_select_conf_t conf = select_conf(f, f->cand, f->ncand);
    return iotame_select_entry(f->sel, sig, &conf, f->knowledge);
}

/* A window of strategy s. entry NULL: the opening window, or a window that goes on from it, whose entry its
 * gathered signature gives. The opening window's first call sets the shape; other windows go on with it. */
static void start_window(iotame_coll_file_t *f, iotame_sel_entry_t *entry, int s, int write, int kind)
{
    f->steady_entry = entry;
    f->steady_strategy = s;
    f->steady_write = write;
    f->steady_kind = kind;
    f->steady_generation = iotame_select_generation(f->sel);
    f->steady_left = f->steady_calls = kind == WINDOW_EXAM ? iotame_select_exam_left(entry)
                                       : entry            ? f->window_calls
                                                          : STEADY_WINDOWS * f->exam_calls;
    f->steady_changed = 0;
    f->steady_delta = INT64_MIN; /* the step between starts: set by the window's second call */
    f->steady_seconds = f->steady_warm = 0;
    f->steady_fresh = kind == WINDOW_OPENING;
}

/* RATIONALE: a blocking gather at every window's end cost 10 ms with 4 ranks on 2 cores (a busy-polling rank waits
 * on a core the others need); posted without waiting, tested at every call and used one window later, it costs
 * nothing measurable (4 ranks, 96 calls of about 2 ms in windows of 12: 229 ms with blocking gathers, 172 ms
 * posted, 174 ms without any). So the selector learns of a window one window late, and the next window's strategy
 * is decided from the window before: every rank decides alike all the same. */

/* Posts this rank's row of the window of n calls that just ended (the gather completes while the next window
 * runs) and keeps what the window was, for finish_window. */
static void post_window(iotame_coll_file_t *f, int n)
{
    int64_t *m = f->pend_row;
    m[W_CHANGED] = f->steady_changed || f->steady_generation != iotame_select_generation(f->sel);
    m[W_DELTA] = f->steady_delta;
    m[W_START] = f->steady_first;
    m[W_END] = f->steady_first + f->steady_row[2];
    m[W_BYTES] = f->steady_row[0];
    m[W_EXTENTS] = f->steady_row[1];
    m[W_WARM_NS] = (int64_t)(f->steady_warm * 1e9);
    m[W_NS] = (int64_t)(f->steady_seconds * 1e9);
    m[W_COST_NS] = f->cost_ns;
    f->pend_entry = f->steady_entry;
    f->pend_strategy = f->steady_strategy;
    f->pend_write = f->steady_write;
    f->pend_kind = f->steady_kind;
    f->pend_calls = n;
    f->steady_left = 0;
    uint64_t t0 = iotame_monotonic_ns();
    PMPI_Iallgather(m, WINDOW_FIELDS, MPI_INT64_T, f->window, WINDOW_FIELDS, MPI_INT64_T, f->env.comm, &f->pend_req);
    f->pend_ns = (int64_t)(iotame_monotonic_ns() - t0);
    f->pending = 1;
}

/* Completes the posted window (collective): when every rank saw calls of one shape, moving alike, the selector
 * gets the window at the slowest rank's time. `unseen`: calls served since, in a window not posted yet (the next
 * window's length counts them as served when it waits for credit). Returns the window's entry; NULL when it was
 * not measured. */
static iotame_sel_entry_t *finish_window(iotame_coll_file_t *f, int unseen)
{
    iotame_coll_env_t *e = &f->env;
    uint64_t t0 = iotame_monotonic_ns();
    PMPI_Wait(&f->pend_req, MPI_STATUS_IGNORE);
    const int64_t took = f->pend_ns + (int64_t)(iotame_monotonic_ns() - t0);
    f->cost_ns = took < f->cost_ns ? took : f->cost_ns; /* noise only adds to a collective's time */
    f->pending = 0;
    int changed = 0, moving = 0;
    int64_t delta = 0, gmin = INT64_MAX, gmax = INT64_MIN, gbytes = 0, greq = 0, warm = 0, all = 0, cost = INT64_MAX;
    for (int r = 0; r < e->nprocs; r++) {
        const int64_t *x = f->window + (size_t)r * WINDOW_FIELDS;
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
    iotame_sel_entry_t *en = f->pend_entry;
    const int s = f->pend_strategy, kind = f->pend_kind;
    int n = f->pend_calls;
    if (changed || (!en && gbytes <= 0)) {
        f->steady_unmeasured++;
        return NULL;
    }
    if (!en) { /* the signature, the same for every call of the window */
        int64_t gap = greq > 1 ? (gmax - gmin - gbytes) / (greq - 1) : 0;
        iotame_sig_t sig = {f->pend_write, e->nprocs, gbytes, greq, gap > 0 ? gap : 0};
        if (!(en = entry_of(f, &sig))) return NULL;
    }
    if (kind == WINDOW_OPENING) { /* the handle's first call is a transition call */
        const double first = warm > 0 ? gbytes * 1e3 / warm : 0;
        if (iotame_select_choose(en) == s) iotame_select_update(f->sel, en, s, first);
        else iotame_select_served(f->sel, en, s, 1, first);
        n--;
        all -= warm;
    }
    f->steady_measured++;
    if (kind == WINDOW_EXAM) {
        iotame_select_exam_window(f->sel, en, s, n, warm, all);
    } else {
        double mbs = all > 0 ? (double)iotame_select_bytes(en) * n * 1e3 / all : 0;
        /* call by call, as long as the choice stands (a monitoring window stops where an examination starts; the
         * opening window's calls are the first candidate's examination); the rest is served, not measured */
        int k = 0;
        for (; k < n && iotame_select_choose(en) == s && (kind != WINDOW_MONITOR || iotame_select_settled(en)); k++)
            iotame_select_update(f->sel, en, s, mbs);
        iotame_select_served(f->sel, en, s, n - k, mbs);
    }
    const int wait = iotame_select_wait_calls(en);
    if (n > 0) /* the next window's length, from the gather's cost and the calls' mean time, both agreed */
        f->window_calls = iotame_select_window_calls(f->budget, STEADY_WINDOWS * f->exam_calls, cost, (double)all / n,
                                                     iotame_select_running(en), wait > unseen ? wait - unseen : 0);
    return en;
}

/* After the selector moved on: a window of the library strategy it chose next, if any (an examined library
 * candidate's calls are a window of their own; a settled library choice is monitored in windows), going on with
 * the shape of the calls before. Returns whether one started.
 * RATIONALE: a library candidate is examined as it runs when it wins. Measured call by call, in lockstep with our
 * reductions, independent lost re-examinations it should have won: unsynchronized, its ranks drift apart and the
 * one ahead reads into the page cache what the other needs (matrix, 32 KiB reads: auto 0.67 of independent). */
static int next_window(iotame_coll_file_t *f, iotame_sel_entry_t *en, int write)
{
    int s = iotame_select_choose(en);
    if (!iotame_strategies[s]->native) return 0;
    if (iotame_select_settled(en)) {
        iotame_select_rebase(en); /* windows are measured otherwise than single calls */
        start_window(f, en, s, write, WINDOW_MONITOR);
    } else if (iotame_select_exam_left(en) > 0) {
        start_window(f, en, s, write, WINDOW_EXAM);
    } else {
        return 0;
    }
    return 1;
}

/* The end of a steady window: the window before it is finished, this one posted, and the next one starts while
 * the choice stands (every rank alike: it rests on finished windows only). Else this one is finished too, and
 * the next call is examined on its own. */
static void end_window(iotame_coll_file_t *f)
{
    iotame_sel_entry_t *en = f->steady_entry;
    int stop = 0;
    if (f->pending) {
        iotame_sel_entry_t *before = finish_window(f, f->steady_calls);
        stop = before == NULL; /* the calls changed shape */
        if (!en) en = before;  /* a window going on from the opening one: its signature's entry */
    }
    const int s = f->steady_strategy, write = f->steady_write, kind = f->steady_kind;
    post_window(f, f->steady_calls);
    if (!stop && (en ? kind == WINDOW_MONITOR && iotame_select_settled(en) && iotame_select_choose(en) == s
                     : kind == WINDOW_OPENING)) {
        start_window(f, en, s, write, WINDOW_MONITOR); /* the shape goes on */
        return;
    }
    /* no gather stays posted while the selector decides on this window, or calls are examined one by one */
    iotame_sel_entry_t *now = finish_window(f, 0);
    if (!stop && now) next_window(f, now, write);
}

static int steady_call(iotame_coll_file_t *f, const iotame_coll_args_t *a)
{
    int64_t pos = 0, nbytes = 0, row[3], start = 0;
    if (prepare(f, a, &pos, &nbytes) || is_write(a->op) != f->steady_write) {
        f->steady_changed = 1;
    } else if (f->steady_fresh) {
        steady_row(f, nbytes, f->steady_row, &f->steady_start);
        f->steady_first = f->steady_start;
        f->steady_fresh = 0;
    } else {
        steady_row(f, nbytes, row, &start);
        if (f->steady_delta == INT64_MIN) f->steady_delta = start - f->steady_start;
        f->steady_changed |= memcmp(row, f->steady_row, sizeof row) != 0 || start - f->steady_start != f->steady_delta;
        f->steady_start = start;
    }
    int mpi_error, done;
    double seconds = own_call(f, a, f->steady_strategy, &mpi_error);
    if (f->steady_left == f->steady_calls) f->steady_warm = seconds;
    f->steady_seconds += seconds;
    if (f->pending) PMPI_Test(&f->pend_req, &done, MPI_STATUS_IGNORE); /* the last window's gather moves on */
    if (--f->steady_left == 0) end_window(f);
    return mpi_error;
}

int iotame_collective_call(const iotame_coll_args_t *a)
{
    iotame_coll_file_t *f = find(a->fh);
    if (!f) return library(a);
    const int write = is_write(a->op);
    /* Reasons every rank sees alike (they follow collective calls), so no rank needs to ask the others. */
    if (f->off) return pass(f, a, f->off);
    if (f->atomic) return pass(f, a, "atomic mode");
    if (f->amode & MPI_MODE_SEQUENTIAL) return pass(f, a, "MPI_MODE_SEQUENTIAL");
    if (!f->native_rep) return pass(f, a, "data representation other than native");
    if (write && (f->amode & MPI_MODE_RDONLY)) return pass(f, a, "write to a file opened read-only");
    if (!write && (f->amode & MPI_MODE_WRONLY)) return pass(f, a, "read from a file opened write-only");
    if (!f->started) { /* the opening window, when nothing is known of the operation (agreed at open) */
        f->started = 1;
        if (f->opening[write] >= 0) start_window(f, NULL, f->opening[write], write, WINDOW_OPENING);
    }
    if (f->hints_stale && f->env.shadow != MPI_FILE_NULL) read_hints(f);
    int mpi_error;
    if (f->strategy != AUTO && iotame_strategies[f->strategy]->native) return own_call(f, a, f->strategy, &mpi_error), mpi_error;
    if (f->steady_left > 0) return steady_call(f, a);
    const uint64_t called = iotame_monotonic_ns();
    iotame_coll_env_t *e = &f->env;

    /* This rank's request; then what every rank asks for, gathered everywhere. */
    int64_t pos = 0, nbytes = 0;
    const char *why = prepare(f, a, &pos, &nbytes);
    int64_t row[IOTAME_INFO_FIELDS] = {INT64_MAX, INT64_MIN, 0, 0, 0, (int64_t)iotame_select_digest(f->sel)};
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
        if (dmin != dmax) {
            iotame_stats_passthrough(f->fs, "selector state differed between ranks (reset)");
            iotame_select_reset(f->sel);
        }
        int64_t gap = greq > 1 ? (gmax - gmin - gbytes) / (greq - 1) : 0;
        iotame_sig_t sig = {write, e->nprocs, gbytes, greq, gap > 0 ? gap : 0};
        entry = entry_of(f, &sig);
        s = entry ? iotame_select_choose(entry) : 0;
    } else if (s == AUTO) {
        s = 0; /* nothing to move: the library's call is the cheapest collective no-op */
    }
    const iotame_strategy_t *st = iotame_strategies[s];
    if (!st->native && e->shadow == MPI_FILE_NULL && open_engine(f) != 0) return pass(f, a, f->off);
    iotame_coll_fn fn = function_of(st, a->op);
    iotame_coll_call_t c = {.env = e, .args = a, .write = write, .ext = f->ext.v, .next = f->ext.n,
                            .nbytes = nbytes, .info = f->info, .gmin = gmin, .gmax = gmax, .gbytes = gbytes};
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
    if (entry) iotame_select_update(f->sel, entry, s, slowest > 0 ? (double)gbytes / slowest / 1e6 : 0.0);
    count_strategy(f, s, 1, nbytes, seconds);
    if (entry && !why && next_window(f, entry, write)) { /* the window's shape is this call's */
        steady_row(f, nbytes, f->steady_row, &f->steady_start);
        f->steady_first = f->steady_start;
    }
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
    if (!is_at(a->op) && nbytes > 0) PMPI_File_seek(a->fh, (MPI_Offset)(pos + nbytes / f->etype_size), MPI_SEEK_SET);
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

/* The statistics of a closed handle's calls, and its knowledge saved (rank 0); then it is freed. */
static void retire(iotame_coll_file_t *f)
{
    int64_t own = 0;
    for (int s = 0; s < iotame_nstrategies && s < IOTAME_STRATEGY_MAX; s++) {
        own += f->own_calls[s];
        if (f->own_calls[s]) count_strategy(f, s, f->own_calls[s], f->own_bytes[s], f->own_seconds[s]);
    }
    json_t *coll = f->strategy == AUTO && own ? iotame_stats_collective(f->fs) : NULL;
    if (coll) { /* strategy auto: the calls its steady windows served; windows measured, and not (calls changed) */
        add_count(coll, "steady_calls", own);
        add_count(coll, "steady_windows_measured", f->steady_measured);
        add_count(coll, "steady_windows_changed", f->steady_unmeasured);
    }
    if (f->sel && f->knowledge_path && f->env.rank == 0 && !f->knowledge_broken &&
        iotame_knowledge_save(f->sel, f->knowledge_path) != 0)
        iotame_log_warn("cannot write the knowledge file %s\n", f->knowledge_path);
    free_file(f);
}

/* A window under way is posted as far as it went (every rank made the same calls). */
static void post_last_window(iotame_coll_file_t *f)
{
    if (f->steady_left > 0 && f->steady_left < f->steady_calls) {
        if (f->pending) finish_window(f, 0);
        post_window(f, f->steady_calls - f->steady_left);
    }
}

/* RATIONALE: finishing the last window's gather at the close synchronized the ranks there: with 4 ranks on 2 cores
 * about 10 ms per handle, and a phase of 8 calls (the 4-rank rows of bench/collective.py) never ends its opening
 * window before the close. Posted at the close and finished at MPI_Finalize, where the ranks meet anyway, it costs
 * nothing there; its window reaches the statistics and the knowledge file at the end of the job. */
void iotame_collective_close(MPI_File fh)
{
    iotame_coll_file_t *f = find(fh);
    if (!f) return;
    remove_file(f);
    post_last_window(f);
    if (f->env.shadow != MPI_FILE_NULL) PMPI_File_close(&f->env.shadow);
    if (f->pending) {
        if (iotame__threaded) pthread_mutex_lock(&lock);
        int kept = push(&closed, &nclosed, &closed_cap, f) == 0;
        if (iotame__threaded) pthread_mutex_unlock(&lock);
        if (kept) return;
        finish_window(f, 0); /* no memory to keep it: finished now */
    }
    retire(f);
}

/* RATIONALE: a handle still open here is closed inside MPI_Finalize (HDF5 closes its files there), after the runtime
 * has stopped, so its close is never seen: its last window and its knowledge are taken now. Its shadow handle stays
 * open: closing it is a blocking collective, and the ranks may hold their open handles in different orders. */
void iotame_collective_finalize(void)
{
    for (size_t i = 0; i < nfiles; i++) post_last_window(files[i]);
    /* every gather is posted before any is waited for: they all progress meanwhile */
    for (size_t i = 0; i < nclosed + nfiles; i++) {
        iotame_coll_file_t *f = i < nclosed ? closed[i] : files[i - nclosed];
        if (f->pending) finish_window(f, 0);
        retire(f);
    }
    __atomic_sub_fetch(&iotame__collective_handles, nfiles, __ATOMIC_RELAXED);
    free(closed);
    free(files);
    closed = files = NULL;
    nclosed = closed_cap = nfiles = files_cap = 0;
}
