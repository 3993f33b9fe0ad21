/* module: the registry of the runtime's parts (in the spirit of Darshan's module registration and IOR's backend
 * table). Each part is one const table of hooks; the wrappers (intercept/, posix/) loop over the registered
 * modules and call no part by name. A new module is one folder and one line in core/modules.c.
 *
 * The order of core/modules.c is the order every hook runs in, at both layers:
 *   MPI-IO layer: stats, trace, hdf5, stage, collective
 *   POSIX layer:  posix, throttle, emulate
 * A hook a module does not need is NULL. docs/design/module-order.md says why the order is what it is. */
#ifndef IOTAME_CORE_MODULE_H
#define IOTAME_CORE_MODULE_H

#include <mpi.h>
#include <stdint.h>
#include <sys/types.h>

#include "core.h"

struct iotame_run;            /* flatten/flatten.h: a strided run of file offsets */
struct iotame_profile_found;  /* profile/profile.h: a machine profile as found for a file */

#define IOTAME_MODULE_MAX 10 /* the registry holds 8 with HDF5 */

/* ---- the core's record of an open file (core/file.c) ----
 * One record per MPI_File handle the runtime saw opened, from the library's successful open (before any module's
 * open hook) until the library closed it (after every module's close hook). The wrappers look the handle up once per
 * call and pass the record to every hook.
 *
 * The threading rule, the same for every module: the core's table of records is the core's, under its lock. A
 * module's slot in a record is the module's own: the module sets it in its open hook, frees it in its close hook
 * (setting it NULL) and reads it in the hooks of that handle only. MPI forbids using a handle concurrently with its
 * close, so no hook of a handle races with the freeing of its record or slots. Data calls on one handle from several
 * threads (MPI_THREAD_MULTIPLE) may run a module's data hooks at once: what those change in the slot, or in state the
 * module shares between handles, the module protects with its own lock. A module never takes another module's lock,
 * never reads another module's slot. */
/* A block consumer (docs/design/block-consumer.md): the one tie between the collective engine and a module that
 * takes the finished blocks of a handle's collective calls instead of the file (the stage module: aggregator
 * caching, docs/design/aggregator-caching.md). It runs one way: the consumer names itself on the handle's record
 * (iotame_file_t.consumer, set in its open hook, cleared in its close hook, both before the collective module's);
 * the collective module calls it and names no module; every decision about the blocks (whether a call's are taken,
 * where they go, when they are written) is the consumer's. Which strategies can hand blocks is theirs to declare:
 * those whose aggregators own fixed blocks (block b at aggregator b mod n, for writes and reads alike), so that every
 * byte of a block taken is in one consumer's hands, in call order.
 *
 * The collective module calls, per handle, in this order and nothing else:
 *  - bind: once, in its open hook (collective over the file's communicator, every rank alike): why NULL, the
 *    handle's blocking collective calls go through a strategy that hands blocks, and take/flush will be called as
 *    below; else why not (for the consumer's statistics), and no other function is called for the handle. Not
 *    called at all where the collective module does not run: the consumer then assumes a refusal.
 *  - take: before each blocking collective call routed through a strategy that hands blocks (collective: every rank
 *    alike, with the same `call`, gathered and reduced). Returns 1: the call's blocks are handed (a write's through
 *    put and staged, a read calls read_ready); 0: the call reaches the file, after flush. The consumer may make
 *    collective MPI calls here on its own communicator of the file (a duplicate: never the file's, never the
 *    collective module's).
 *  - flush: before any other blocking collective call of the handle reaches the file (another strategy, a call
 *    passed to the library, a call take refused): collective, every rank alike; every block the consumer holds is
 *    written when it returns.
 *  - put: at an aggregator, during a write handed over, for one source's data of one window: `origin` that source's
 *    rank in the file's communicator, nruns ascending file runs and their bytes in run order. Returns the position
 *    the aggregator reports (to staged). Local: no MPI call, no wait for another rank (it may wait for room).
 *  - staged: after a handed write's agreement, on every rank alike: end[r] the position rank r reported from its
 *    puts of the call (0: none), [lo, hi) the file range of this rank's data. Local: no MPI call.
 *  - read_ready: at an aggregator, during a read handed over, before it reads [lo, hi) of the file: what the
 *    consumer holds there is written first. Local: no MPI call.
 * A consumer's functions never call the collective module and make no MPI call on the file's handle. */
typedef struct {
    int write;
    int64_t nprocs, nodes, aggregators; /* the call's ranks, the nodes they are on, the strategy's aggregators */
    int64_t bytes;                      /* over all ranks */
    int64_t pieces;                     /* file pieces per rank (rounded up) */
    int interleaved;                    /* the ranks' ranges overlap (the cost model's "interleaved") */
    int64_t block_size;                 /* the strategy's block: block b is at aggregator b mod aggregators */
    double model_error;                 /* the margin the collective module's cost model is trusted to */
} iotame_block_call_t;

typedef struct iotame_block_consumer {
    void (*bind)(void *arg, const char *why);
    int (*take)(void *arg, const iotame_block_call_t *call);
    void (*flush)(void *arg);
    uint64_t (*put)(void *arg, int origin, const struct iotame_run *runs, size_t nruns, const char *data);
    void (*staged)(void *arg, const int64_t *end, int64_t lo, int64_t hi);
    void (*read_ready)(void *arg, int64_t lo, int64_t hi);
} iotame_block_consumer_t;

/* The machine profile of a file, as the core found it at MPI_File_open (one search per rank, agreed over the ranks in a
 * reduction that runs beside the library's open), when some active module predicts from it for the file (the
 * module's `predicts` hook). Every module reads it here, none finds its own. */
typedef struct {
    const struct iotame_profile_found *found; /* the profile every rank found (borrowed for the job's life), or NULL */
    const char *refused; /* this rank's lines of the profiles refused on the way (borrowed), or NULL */
    int asked;           /* a module predicts for the file: the core searched and agreed */
    int differs;         /* the ranks found different profiles (or some none): found is NULL */
} iotame_file_profile_t;

typedef struct iotame_file {
    MPI_File fh;              /* MPI_FILE_NULL: the shared record of handles the runtime did not see opened */
    iotame_file_stats_t *fs;  /* the path's statistics record (shared by the path's handles), or NULL */
    const char *path;         /* as given to MPI_File_open (the record's own copy) */
    int amode;
    const iotame_file_config_t *fc; /* the file's settings (matched rule over the defaults, parsed once at open),
                                       NULL without a configuration */
    void *slot[IOTAME_MODULE_MAX];  /* each module's state of the handle, by registry index */
    iotame_file_profile_t profile;  /* the file system's machine profile (set before any module's open hook) */
    const iotame_block_consumer_t *consumer; /* the module that takes the finished blocks of the handle's collective
                                                calls (set in its open hook, cleared in its close hook), or NULL */
    void *consumer_arg;
} iotame_file_t;

/* A new record of a handle the library just opened, bound to it; fc (may be NULL) is taken over and released with
 * the record. NULL on ENOMEM (then fc is still the caller's). */
iotame_file_t *iotame_file_open(MPI_File fh, iotame_file_stats_t *fs, const char *path, int amode,
                                const iotame_file_config_t *fc);
/* Forgets and frees a record once the library closed its handle. */
void iotame_file_close(iotame_file_t *f);
/* The record of a handle (the shared record of handles the runtime did not see opened when it has none). */
iotame_file_t *iotame_file_lookup(MPI_File fh);
/* Nonzero for the record of a handle the runtime saw opened. */
int iotame_file_known(const iotame_file_t *f);
/* Calls fn for every open record (MPI_Finalize: the handles the application left open); fn may close them. */
void iotame_file_each(void (*fn)(iotame_file_t *f, void *arg), void *arg);
/* The file's value of a setting, else its default in runtime/settings.json, else NULL (borrowed). */
const json_t *iotame_file_setting(const iotame_file_t *f, const char *section, const char *key);

/* How a data-access function reaches the file: independent, blocking collective, split collective (begin/end),
 * nonblocking (independent or collective), shared or ordered file pointer. */
typedef enum {
    IOTAME_IO_INDEPENDENT,
    IOTAME_IO_COLLECTIVE,
    IOTAME_IO_SPLIT,
    IOTAME_IO_NONBLOCKING,
    IOTAME_IO_NONBLOCKING_COLLECTIVE,
    IOTAME_IO_SHARED,
} iotame_io_kind_t;

/* One MPI-IO data-access call as the application made it. */
typedef struct {
    iotame_op_t op; /* the large-count (_c) forms as their plain name; `large` says which was called */
    iotame_io_kind_t kind;
    int write;
    int at; /* explicit-offset form: `offset` is the application's */
    int large;
    MPI_File fh;
    iotame_file_t *file; /* the handle's record (never NULL: a handle the runtime did not see opened has the shared
                            record of such handles, in which no module has state) */
    MPI_Offset offset;
    void *buf;
    MPI_Count count;
    MPI_Datatype datatype;
    MPI_Status *status; /* blocking forms; MPI_STATUS_IGNORE otherwise */
} iotame_io_t;

/* A successful MPI_File_open, as the modules see it (the hook is collective over comm, like the open). */
typedef struct {
    MPI_File fh;
    MPI_Comm comm;
    const char *path;
    int amode;
    iotame_file_stats_t *fs;
    const iotame_file_config_t *fc; /* the file's settings, NULL without a configuration */
    iotame_file_t *file; /* the handle's record (open hook); NULL in `opening`, and in `open` on a rank that could not
                            allocate it: a module that keeps state says so in its agreement over comm and stays off */
    uint64_t open_ns;    /* what the library's open took on this rank (open hook; 0 in `opening`) */
    MPI_Info info;       /* what MPI_File_open gives the library (the application's, with the configured hints
                            merged): in MPI_File_open's `opening` and `created` only, else MPI_INFO_NULL */
} iotame_open_t;

/* One request of the POSIX layer (posix/): a read or write of `bytes` at `offset` on descriptor fd, which belongs
 * to the file `file` (the POSIX layer's own record, opaque to the others). */
typedef struct iotame_posix_file iotame_posix_file_t;
typedef struct {
    int fd;
    int write;
    off_t offset;
    size_t bytes;
    iotame_posix_file_t *file;
} iotame_posix_io_t;

/* A module: its name, its settings section and its hooks. Over 20 fields, since it is the registry's table of hooks
 * (as Darshan's module table and IOR's backends are): one per moment the wrappers call, NULL where unused. */
typedef struct iotame_module {
    const char *name;     /* the module's statistics section in each file's record */
    const char *settings; /* the section of runtime/settings.json it reads ("owner" there), or NULL */
    /* At MPI_Init, after the configuration was read (cfg NULL without one). Returns nonzero when the module is
     * active in this job: the hooks of an inactive module are never called. */
    int (*start)(const iotame_config_t *cfg);
    /* Whether the module predicts from the machine profile for a file with these settings (fc never NULL). Decided
     * from the configuration alone, so the same on every rank: when an active module says yes, the core finds the
     * file's profile at MPI_File_open and agrees on it over the ranks (iotame_file_t.profile). */
    int (*predicts)(const iotame_file_config_t *fc);

    /* ---- MPI-IO layer ---- */
    /* Before the library opens a file: MPI_File_open (o->fh is MPI_FILE_NULL) and HDF5's H5Fcreate/H5Fopen
     * (o->comm is MPI_COMM_NULL, o->fc NULL). Not collective: the library may open the file on some ranks only. */
    void (*opening)(const iotame_open_t *o);
    /* After a successful MPI_File_open with MPI_MODE_CREATE, before any module's `open` hook and before the open
     * returns (collective over comm; o->file NULL): where a new file's properties are set before anyone can write
     * it (the POSIX layer: CephFS's layout from the striping hints). */
    void (*created)(const iotame_open_t *o);
    void (*open)(const iotame_open_t *o); /* after a successful MPI_File_open (collective over its comm) */
    void (*set_view)(iotame_file_t *f, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, const char *datarep);
    void (*set_info)(iotame_file_t *f);
    void (*set_atomicity)(iotame_file_t *f, int flag);
    /* Before a data access. */
    void (*before)(const iotame_io_t *io);
    /* Serves a data access instead of the MPI library: returns 1 and sets *rc to the MPI return code when it did,
     * 0 when the call goes on to the next module (and in the end to the library). At most one module serves. */
    int (*serve)(const iotame_io_t *io, int *rc);
    /* After a data access: its return code, its duration in iotame_now() ticks, the bytes it moved. */
    void (*after)(const iotame_io_t *io, int rc, uint64_t ticks, uint64_t bytes);
    /* After a call that moves no data of its own (open, close, sync, set_view, seek, ..., the end of a split
     * collective): its duration in iotame_now() ticks. fs may be NULL. */
    void (*meta)(iotame_file_stats_t *fs, iotame_op_t op, uint64_t ticks);
    /* Before MPI_File_sync (collective; the library's sync follows, so it covers what the module wrote): returns an
     * MPI error code (MPI_SUCCESS), which the sync returns. */
    int (*sync)(iotame_file_t *f);
    /* Before MPI_File_close (collective): returns an MPI error code, which the close returns (the file is closed
     * whatever it is). */
    int (*close)(iotame_file_t *f);
    /* Before MPI_File_get_size, set_size or preallocate: the file's size is to be what the application wrote. */
    void (*sizing)(iotame_file_t *f);

    /* ---- POSIX layer ---- */
    void (*posix_before)(const iotame_posix_io_t *io);
    void (*posix_after)(const iotame_posix_io_t *io, ssize_t rc, uint64_t ns);
    /* The striping of a file on storage the module models (emulate's striped device), by device and inode: returns
     * the stripe count (1..max) with the stripe size and each stripe's target, or 0 when the file is not its own.
     * posix/target.c asks the active modules in registry order; the first that knows the file wins, also over the
     * file system's own layout (the modelled storage is what the requests meet). */
    unsigned (*layout)(dev_t dev, ino_t ino, uint32_t *stripe_size, uint32_t *target, unsigned max);
    /* Bytes of node-shared state the module keeps per storage target (iotame_posix_target_state), 0: none. */
    size_t posix_target_bytes;

    /* ---- the application's synchronization ---- */
    /* After the application's own MPI_Barrier (not one made inside MPI-IO or HDF5): its duration in nanoseconds. */
    void (*barrier)(uint64_t ns);

    /* ---- the end ---- */
    /* At MPI_Finalize, before the statistics are reduced (collective over MPI_COMM_WORLD): finish background work
     * and put what is left into the file records' sections (iotame_stats_section). */
    void (*finalize)(void);
    /* Reduces the module's statistics section of one file over the ranks (rank 0): folds one rank's section into
     * `into` (the first rank's, copied). NULL: the first rank's section stands (every rank holds the same). */
    void (*merge)(json_t *into, const json_t *rank_section);
    /* Writes the merged section into the file's JSON object. NULL: as file[name]. */
    void (*report)(json_t *file, json_t *merged);
    /* Reduces the module's job-wide section (iotame_stats_job_section) over the ranks (rank 0): `ranks` holds every
     * rank's section, null where a rank had none. Returns what the statistics show as "modules"/<name>; NULL
     * leaves the module out. Without this hook, a job section is shown as the list of the ranks' sections. */
    json_t *(*job_report)(const json_t *ranks);
    /* Adds what the module registers of its own (the collective strategies) to its entry of iotame_registry(). */
    void (*describe)(json_t *entry);
} iotame_module_t;

/* Every module, in hook order (core/modules.c); NULL-terminated. */
extern const iotame_module_t *const iotame_modules[];
/* The registry index of a module (its statistics section's slot), or -1. */
int iotame_module_index(const iotame_module_t *m);

/* Module m's slot in a record (registry order). */
static inline void **iotame_file_slot(iotame_file_t *f, const iotame_module_t *m)
{
    return &f->slot[iotame_module_index(m)];
}

/* The hooks of the active modules, in registry order (filled at MPI_Init by iotame_modules_start). */
typedef struct {
    int n;
    const iotame_module_t *m[IOTAME_MODULE_MAX];
} iotame_hooks_t;
extern iotame_hooks_t iotame__hooks_before, iotame__hooks_serve, iotame__hooks_after, iotame__hooks_meta,
    iotame__hooks_posix_before, iotame__hooks_posix_after, iotame__hooks_barrier;
extern iotame_hooks_t iotame__hooks_layout; /* the active modules with a layout hook (posix/target.c) */

/* Starts every module (MPI_Init) and fills the hook lists; stops them (MPI_Finalize, before the statistics). */
void iotame_modules_start(const iotame_config_t *cfg);
void iotame_modules_finalize(void);

/* The MPI-IO hooks, each called for every active module that has it, in registry order. */
void iotame_modules_opening(const iotame_open_t *o);
void iotame_modules_created(const iotame_open_t *o);
void iotame_modules_open(const iotame_open_t *o);
void iotame_modules_set_view(iotame_file_t *f, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                             const char *datarep);
void iotame_modules_set_info(iotame_file_t *f);
void iotame_modules_set_atomicity(iotame_file_t *f, int flag);
int iotame_modules_sync(iotame_file_t *f);  /* the first error code a module returned, else MPI_SUCCESS */
int iotame_modules_close(iotame_file_t *f); /* the same */
void iotame_modules_sizing(iotame_file_t *f);
/* Whether an active module predicts from the machine profile for a file with these settings (its `predicts`). */
int iotame_modules_predict(const iotame_file_config_t *fc);

/* The data path: inline, since every data call takes it. */
/* Each hook runs as a step of its module for the watchdog (core/watch.h): serve's count as progress; before and
 * after, which do not wait, only name their module. */
static inline void iotame_modules_before(const iotame_io_t *io)
{
    iotame_where_file(io->file ? io->file->fs : NULL);
    for (int i = 0; i < iotame__hooks_before.n; i++) {
        iotame_where_module(iotame__hooks_before.m[i]->name, "before the call");
        iotame__hooks_before.m[i]->before(io);
    }
}
static inline int iotame_modules_serve(const iotame_io_t *io, int *rc)
{
    for (int i = 0; i < iotame__hooks_serve.n; i++) {
        iotame_where_mark_t mark = iotame_where_push(iotame__hooks_serve.m[i]->name, "serving the call");
        int served = iotame__hooks_serve.m[i]->serve(io, rc);
        iotame_where_pop(mark);
        if (served) return 1;
    }
    iotame_where_push("library", "the MPI library's own call");
    return 0;
}
static inline void iotame_modules_after(const iotame_io_t *io, int rc, uint64_t ticks, uint64_t bytes)
{
    for (int i = 0; i < iotame__hooks_after.n; i++) {
        iotame_where_module(iotame__hooks_after.m[i]->name, "after the call");
        iotame__hooks_after.m[i]->after(io, rc, ticks, bytes);
    }
}
static inline void iotame_modules_meta(iotame_file_stats_t *fs, iotame_op_t op, uint64_t ticks)
{
    for (int i = 0; i < iotame__hooks_meta.n; i++) iotame__hooks_meta.m[i]->meta(fs, op, ticks);
}
static inline void iotame_modules_posix_before(const iotame_posix_io_t *io)
{
    for (int i = 0; i < iotame__hooks_posix_before.n; i++) {
        iotame_where_mark_t mark = iotame_where_push(iotame__hooks_posix_before.m[i]->name, "before the system call");
        iotame__hooks_posix_before.m[i]->posix_before(io);
        iotame_where_pop(mark);
    }
}
static inline void iotame_modules_posix_after(const iotame_posix_io_t *io, ssize_t rc, uint64_t ns)
{
    for (int i = 0; i < iotame__hooks_posix_after.n; i++) iotame__hooks_posix_after.m[i]->posix_after(io, rc, ns);
}
static inline void iotame_modules_barrier(uint64_t ns)
{
    for (int i = 0; i < iotame__hooks_barrier.n; i++) iotame__hooks_barrier.m[i]->barrier(ns);
}

#endif
