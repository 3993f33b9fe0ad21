/* posix: the POSIX layer under MPI-IO and HDF5 (docs/design/posix-layer.md). The system calls through which the
 * MPI library (ROMIO's ADIOI_GEN_*, OMPIO's fbtl) and HDF5 reach the file system are interposed by symbol (the
 * library is preloaded; the real functions come from dlsym(RTLD_NEXT)); the descriptors of the files the job opened
 * through MPI_File_open or H5Fcreate/H5Fopen are recorded (every file's with posix.all_files), and each request is
 * handed to the POSIX hooks of the other modules (throttle, emulate). The only interface of runtime/src/posix/. */
#ifndef IOTAME_POSIX_H
#define IOTAME_POSIX_H

#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "core/module.h"

/* ---- our own file I/O ----
 * The runtime's own files (statistics, the knowledge file, /sys lookups) are never recorded and never reach the
 * POSIX hooks: wrap such I/O in iotame_posix_quiet_begin()/end(). The POSIX wrappers also set it around the hooks
 * they call, so a hook's own I/O passes straight through. */
extern _Thread_local int iotame__posix_quiet __attribute__((tls_model("initial-exec")));
static inline void iotame_posix_quiet_begin(void) { iotame__posix_quiet++; }
static inline void iotame_posix_quiet_end(void) { iotame__posix_quiet--; }

/* Data requests on recorded descriptors that failed in this thread so far: compared before and after a library
 * call, it shows a failure the library swallowed (OMPIO returns MPI_SUCCESS when pread or pwrite fails). */
extern _Thread_local unsigned long iotame__posix_failed __attribute__((tls_model("initial-exec")));
static inline unsigned long iotame_posix_failed_requests(void) { return iotame__posix_failed; }

/* ---- the node's shared segment ----
 * One POSIX shared-memory segment per job and node (created at MPI_Init by the node's first rank, opened by the
 * others, unlinked once all have mapped it): a header and a table of file slots found by a hash of the file's
 * device and inode, so that every process of the node that opens a file meets the same slot. A slot counts the
 * requests in progress on its file from all processes of the node. A second table holds one entry per storage
 * target the node's processes use, with a slot for each registered module that keeps node-shared state per target
 * (its table's posix_target_bytes: the throttle's gates and controllers), laid out at the segment's creation. */
#define IOTAME_POSIX_SEGMENT_MAGIC 0x696f706fu /* "iopo" */
#define IOTAME_POSIX_SEGMENT_VERSION 3u
#define IOTAME_POSIX_SLOTS 1024
#define IOTAME_POSIX_TARGETS 32
#define IOTAME_POSIX_TARGET_STATE 16384 /* bytes of a target's entry for the modules' slots */

typedef struct {
    uint64_t key;      /* hash of (dev, ino), never 0; 0: a free slot (claimed with a compare-and-swap) */
    int32_t inflight;  /* requests in progress on the file, over the node's processes */
    int32_t max;       /* the most seen at once */
} __attribute__((aligned(64))) iotame_posix_slot_t;

typedef struct {
    uint64_t key; /* iotame_posix_target_of's key, never 0; 0: a free entry */
    /* The modules' slots (iotame_posix_target_state), zeroed at creation. */
    unsigned char state[IOTAME_POSIX_TARGET_STATE] __attribute__((aligned(64)));
} __attribute__((aligned(64))) iotame_posix_target_t;

typedef struct {
    uint32_t magic, version, nslots, nprocs; /* nprocs: the node's processes */
    uint32_t job_nprocs, nnodes;             /* the job's processes and nodes */
    uint32_t target_slot[IOTAME_MODULE_MAX]; /* per registered module: its slot's offset in a target's state + 1; 0: none */
    iotame_posix_slot_t slot[IOTAME_POSIX_SLOTS];
    iotame_posix_target_t target[IOTAME_POSIX_TARGETS];
} __attribute__((aligned(64))) iotame_posix_segment_t;

/* The node's segment, or NULL (outside MPI_Init..MPI_Finalize, or it could not be set up: then nothing is counted
 * across processes and the statistics say why). */
iotame_posix_segment_t *iotame_posix_segment(void);
/* A recorded file's slot in the segment, or NULL (no segment, or the table is full). */
iotame_posix_slot_t *iotame_posix_file_slot(const iotame_posix_file_t *f);
/* This process's rank among the node's processes (0 without a segment). */
int iotame_posix_node_rank(void);

/* ---- storage targets ----
 * A request's storage target: where a module's layout hook (the emulated striped storage) or the file system
 * (Lustre's layout, the "lustre.lov" extended attribute; CephFS's, "ceph.file.layout") stripes the file over data
 * servers, the server holding the request's first byte; elsewhere the file system (its device number). A 64-bit
 * key, never 0; 0 when the descriptor is not a regular file. The layout is read once per recorded file. */
uint64_t iotame_posix_target_of(const iotame_posix_io_t *io);
/* A file's striping as the throttle and the collective strategies see it: `count` stripes of `unit` bytes round
 * robin (stripe k of the file on target ost[k % count]); count 1: one target (unit 0 when nothing says). `from`
 * says who gave it: a module's layout hook (the emulated storage), the file system's own layout (Lustre's,
 * CephFS's: what the file has, whatever hints asked for), or nothing (one target). */
#define IOTAME_POSIX_MAX_STRIPES 64 /* a file striped wider counts its file system as the target */
typedef enum { IOTAME_POSIX_FROM_NONE, IOTAME_POSIX_FROM_EMULATED, IOTAME_POSIX_FROM_LUSTRE,
               IOTAME_POSIX_FROM_CEPHFS } iotame_posix_from_t;
typedef struct {
    uint32_t count, unit;
    uint32_t object_size; /* CephFS: bytes of one object (stripe units of a stripe's object); 0 elsewhere */
    iotame_posix_from_t from;
    uint64_t fs_type; /* the file system's magic (statfs f_type); 0 unknown */
    uint32_t ost[IOTAME_POSIX_MAX_STRIPES];
} iotame_posix_layout_t;
/* The name of a layout's source: "none", "emulated", "lustre", "cephfs". */
const char *iotame_posix_from_name(iotame_posix_from_t from);
/* The layout of the file at path (a prefix such as "ufs:" is skipped), read from the path as iotame_posix_target_of
 * reads a recorded file's: the first active module's layout hook that knows it (iotame_module_t.layout), else
 * Lustre's or CephFS's, else one target. Returns 0, or a negative errno when the file cannot be examined (then *l
 * says one target). For the MPI-IO layer, which has a path and no descriptor. A file system's own layout keeps its
 * unit when it has one stripe (CephFS's default: one object of 4 MiB units in flight). st (may be NULL): the file's
 * stat, taken on the way. */
int iotame_posix_layout(const char *path, iotame_posix_layout_t *l, struct stat *st);
/* The file system's magic number (statfs f_type) of a recorded file, read with its layout; 0 before. */
uint64_t iotame_posix_fs_type(const iotame_posix_file_t *f);
/* The node's entry of a target (claimed at first use), or NULL (no segment, or the table is full). */
iotame_posix_target_t *iotame_posix_target(uint64_t key);
/* Module m's slot in a target's entry: its posix_target_bytes, 64-byte aligned, zeroed at the segment's creation
 * and shared by the node's processes. NULL when m asked for none, or its request did not fit the entry (the
 * statistics then say so). */
void *iotame_posix_target_state(iotame_posix_target_t *t, const iotame_module_t *m);
/* Parses a Lustre layout (lov_user_md v1/v3) into the stripe size and the servers' indexes; returns the stripe
 * count, 0 when the layout is not a plain striped one (composite layouts: the file system is the target). */
unsigned iotame_posix_lustre_layout(const void *xattr, size_t len, uint32_t *stripe_size, uint32_t *ost, unsigned max);
#define IOTAME_POSIX_LUSTRE_XATTR_MAX (48 + 64 * 24) /* a v3 header and 64 stripes (IOTAME_POSIX_MAX_STRIPES) */

/* ---- CephFS (posix/cephfs.c) ----
 * A CephFS file's layout, its virtual extended attribute "ceph.file.layout" ("stripe_unit=4194304 stripe_count=1
 * object_size=4194304 pool=cephfs_data"): the file's bytes go round robin in stripe_unit pieces over stripe_count
 * objects at once, each object holding object_size bytes before the next set of objects starts. */
#define IOTAME_POSIX_FUSE_MAGIC 0x65735546u  /* ceph-fuse (and every other FUSE file system) */
#define IOTAME_POSIX_CEPH_MAGIC 0x00c36400u  /* the kernel's ceph client */
#define IOTAME_POSIX_CEPH_MIN_UNIT 65536u    /* CephFS's stripe units are multiples of this (CEPH_MIN_STRIPE_UNIT) */
#define IOTAME_POSIX_CEPH_XATTR "ceph.file.layout"
typedef struct {
    uint64_t stripe_unit, stripe_count, object_size;
} iotame_posix_cephfs_t;
/* Parses the attribute's text (len bytes, no terminating NUL needed). Returns 0, or -EINVAL when a field is missing,
 * not a number, or the layout is not one CephFS accepts (iotame_posix_cephfs_check). Pure. */
int iotame_posix_cephfs_parse(const char *text, size_t len, iotame_posix_cephfs_t *out);
/* NULL when CephFS accepts the layout, else what it accepts (a sentence fragment for a message). Pure. */
const char *iotame_posix_cephfs_check(const iotame_posix_cephfs_t *l);
/* The layout the striping hints ask for, from the file's current one: factor (stripe_count) and unit (stripe_unit),
 * 0 when not given; the object size stays unless it is not a multiple of the new unit, then it becomes the least
 * multiple of the unit at least as large. Returns NULL, or why CephFS would refuse it (*want then undefined). Pure. */
const char *iotame_posix_cephfs_plan(const iotame_posix_cephfs_t *cur, int64_t factor, int64_t unit,
                                     iotame_posix_cephfs_t *want);
/* The CephFS layout of a file (descriptor fd >= 0, else path) on a file system of magic fs_type. Returns 0, or a
 * negative errno (-ENODATA: not CephFS, e.g. another FUSE file system). */
int iotame_posix_cephfs_read(int fd, const char *path, uint64_t fs_type, iotame_posix_cephfs_t *out);
/* At MPI_File_open with MPI_MODE_CREATE (the module's `created` hook), after the library opened the file and before
 * any module or the application can write it (collective over comm when info has a striping hint, else nothing): the
 * striping hints in info (striping_factor, striping_unit) become the new file's CephFS layout, set by rank 0
 * and agreed by all (posix/cephfs_hints.c). A file with data keeps its layout; an invalid layout is refused with a
 * warning; the outcome goes into the file's statistics (fs). Never fails the open. */
void iotame_posix_cephfs_create(MPI_Comm comm, const char *filename, MPI_Info info, iotame_file_stats_t *fs);

/* A module's slot for its own state of a recorded file (NULL at first; the module sets it, and frees what it put
 * there in its finalize hook if it must: records live until the process ends). */
static inline void **iotame_posix_file_data(iotame_posix_file_t *f, const iotame_module_t *m);

/* The path the file system knows of a path given to MPI_File_open: ROMIO and OMPIO accept a file-system prefix
 * ("ufs:", "nfs:", "lustre:", ...) before it. */
const char *iotame_posix_path(const char *path);

/* A recorded file's device and inode, and the path its statistics are written under. */
void iotame_posix_file_id(const iotame_posix_file_t *f, dev_t *dev, ino_t *ino);
const char *iotame_posix_file_path(const iotame_posix_file_t *f);

/* ---- between the files of posix/ (internal) ---- */

/* The descriptor table, indexed by fd: the hot path's one lookup. */
typedef struct {
    iotame_posix_file_t *file; /* NULL: the descriptor is not recorded */
    off_t pos;                 /* the file position read/write/readv/writev use, as far as we saw it move */
    int append;                /* O_APPEND: a write's offset is asked from the kernel after it */
    int written;               /* written since its open (iotame_core_sync_at_close: fsync at close) */
} iotame__posix_fd_t;

extern iotame__posix_fd_t *iotame__posix_fds;
/* Descriptors below this are looked up; 0 while the layer is off (before MPI_Init, after MPI_Finalize, with
 * IOTAME_DISABLE=1), so that one comparison makes every wrapper a pass-through. */
extern unsigned iotame__posix_nfds;

/* The recorded file of a descriptor, or NULL: the wrappers' fast path. */
static inline iotame__posix_fd_t *iotame__posix_fd(int fd)
{
    if (__builtin_expect((unsigned)fd >= __atomic_load_n(&iotame__posix_nfds, __ATOMIC_ACQUIRE) || iotame__posix_quiet,
                         1))
        return NULL;
    iotame__posix_fd_t *d = &iotame__posix_fds[fd];
    return __atomic_load_n(&d->file, __ATOMIC_ACQUIRE) ? d : NULL;
}

/* A descriptor was opened (record.c decides whether it is recorded): dirfd and path as given to openat. */
void iotame__posix_opened(int dirfd, const char *path, int fd, int flags, uint64_t ticks);
/* The record of this thread's last recorded open, its descriptor (*fd) and the file's stat at that open (*st), when
 * that open was of path (a prefix such as "ufs:" aside) and the descriptor still is; else NULL. */
iotame_posix_file_t *iotame__posix_last_opened(const char *path, int *fd, struct stat *st);
/* A recorded descriptor is being closed (before the real close: its number may be reused at once). */
iotame_posix_file_t *iotame__posix_closing(int fd);

typedef enum { IOTAME_POSIX_T_READ, IOTAME_POSIX_T_WRITE, IOTAME_POSIX_T_SYNC, IOTAME_POSIX_T_META } iotame__posix_cat_t;
typedef enum { IOTAME_POSIX_N_OPEN, IOTAME_POSIX_N_CLOSE, IOTAME_POSIX_N_SEEK, IOTAME_POSIX_N_SYNC,
               IOTAME_POSIX_N_TRUNCATE, IOTAME_POSIX_N_COUNT } iotame__posix_meta_t;

/* A recorded file: the per-request accounting is inline in the wrappers (posix.h), the rest in record.c. */
/* What every request touches comes first, in as few cache lines as it fits (a request follows a system call, after
 * which little of it is cached). Over 20 fields: split into parts, the request path would follow more pointers. */
struct iotame_posix_file {
    int32_t *inflight; /* the slot's count, or the process's own without a segment */
    iotame_posix_slot_t *slot;
    int32_t max_inflight, own_inflight;
    off_t last_end[2]; /* where the last read / write ended */
    uint64_t requests[2], bytes[2], consecutive[2], sequential[2];
    uint64_t seek_total, seek_max, ticks[4];
    uint64_t hist[2][IOTAME_HIST_BUCKETS];
    uint64_t meta[IOTAME_POSIX_N_COUNT];
    pthread_mutex_t lock; /* the counters, when the application asked for MPI_THREAD_MULTIPLE */
    dev_t dev;
    ino_t ino;
    struct stat opened; /* at its last recorded open */
    int layout; /* 0: not read yet; 1: read (posix/target.c); -1: not a regular file */
    iotame_posix_layout_t stripes; /* as read */
    void *data[IOTAME_MODULE_MAX]; /* each POSIX module's own per-file state (iotame_posix_file_data) */
    char *path; /* the statistics record's path: as given to MPI_File_open/H5Fopen, else the canonical path */
    struct iotame_posix_file *next, *hash_next;
};

/* A request begins (the in-flight count of its file's slot) and ends (its accounting: rc as the call returned,
 * ticks of iotame_now()). Inline: every recorded request takes them. */
static inline void iotame__posix_request_begin(iotame_posix_file_t *f)
{
    if (!f) return;
    int32_t n = __atomic_add_fetch(f->inflight, 1, __ATOMIC_RELAXED);
    if (n > __atomic_load_n(&f->max_inflight, __ATOMIC_RELAXED)) __atomic_store_n(&f->max_inflight, n, __ATOMIC_RELAXED);
    if (f->slot) {
        int32_t m = __atomic_load_n(&f->slot->max, __ATOMIC_RELAXED);
        while (n > m && !__atomic_compare_exchange_n(&f->slot->max, &m, n, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    }
}

static inline unsigned iotame__posix_bucket(uint64_t bytes) { return bytes ? 64u - (unsigned)__builtin_clzll(bytes) : 0u; }

static inline void iotame__posix_request_end(iotame_posix_file_t *f, int write, off_t offset, ssize_t rc, uint64_t ticks)
{
    if (!f) return;
    __atomic_sub_fetch(f->inflight, 1, __ATOMIC_RELAXED);
    int threaded = iotame__threaded;
    if (threaded) pthread_mutex_lock(&f->lock);
    f->ticks[write] += ticks;
    if (rc >= 0) { /* Darshan's definitions: consecutive starts where the last ended, sequential at or after it */
        uint64_t n = (uint64_t)rc;
        off_t last = f->last_end[write];
        f->requests[write]++;
        f->bytes[write] += n;
        f->hist[write][iotame__posix_bucket(n)]++;
        if (offset == last) f->consecutive[write]++;
        if (offset >= last) f->sequential[write]++;
        uint64_t dist = offset >= last ? (uint64_t)(offset - last) : (uint64_t)(last - offset);
        f->seek_total += dist;
        if (dist > f->seek_max) f->seek_max = dist;
        f->last_end[write] = offset + rc;
    }
    if (threaded) pthread_mutex_unlock(&f->lock);
}

static inline void **iotame_posix_file_data(iotame_posix_file_t *f, const iotame_module_t *m)
{
    int i = iotame_module_index(m);
    return i >= 0 ? &f->data[i] : NULL;
}

/* A call that moves no data: counted as `what`, its time in category cat. */
void iotame__posix_meta(iotame_posix_file_t *f, iotame__posix_meta_t what, iotame__posix_cat_t cat, uint64_t ticks);
/* Nanoseconds of ticks (the POSIX hooks take nanoseconds). */
uint64_t iotame__posix_ns(uint64_t ticks);

/* Lays out the modules' slots in a new segment's target entries, in registry order while they fit (the creator). */
void iotame__posix_target_layout(iotame_posix_segment_t *s);
/* Says in the statistics which modules' per-target state did not fit a target's entry (every process). */
void iotame__posix_target_check(const iotame_posix_segment_t *s);

/* This part's module table (core/modules.c registers it). */
extern const iotame_module_t iotame_module_posix;

#endif
