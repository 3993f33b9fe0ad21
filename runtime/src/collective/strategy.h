/* collective: the collective-I/O engine. Strategies (one file each, one const table each), their registry, the
 * shared aggregation engine they are built on, the chooser auto that picks one of them per call (the selector's
 * policy from select/ fed by the window protocol), and the routing of MPI_File_{write,read}[_at]_all calls through
 * them (per-handle state, shadow handle, file pointer, status, errors).
 * The only interface of runtime/src/collective/ to the other parts (core/modules.c registers the module table);
 * collective/window.h is internal to auto. */
#ifndef IOTAME_COLLECTIVE_STRATEGY_H
#define IOTAME_COLLECTIVE_STRATEGY_H

#include <mpi.h>
#include <stdint.h>

#include "core/core.h"
#include "core/module.h"
#include "flatten/flatten.h"
#include "profile/profile.h"
#include "select/select.h"

/* ---- the module's hooks of a handle (route.c; module.c registers them) ----
 * A routed handle's state (iotame_coll_file_t) is the module's slot of the core's record (core/module.h): set at the
 * open once every rank agreed to route the handle, cleared at its close; the hooks of other handles find the slot
 * empty and do nothing. Collective calls on one handle are never concurrent (MPI requires every rank to make them
 * in the same order), so the call under way needs no lock. */

typedef enum {
    IOTAME_COLL_WRITE_ALL,
    IOTAME_COLL_READ_ALL,
    IOTAME_COLL_WRITE_AT_ALL,
    IOTAME_COLL_READ_AT_ALL,
} iotame_coll_op_t;

/* The arguments of one blocking collective data call, as the application made it. */
typedef struct {
    iotame_coll_op_t op;
    int large; /* the MPI-4 _c form was called */
    MPI_File fh;
    MPI_Offset offset; /* explicit-offset forms */
    void *buf;
    MPI_Count count;
    MPI_Datatype datatype;
    MPI_Status *status;
} iotame_coll_args_t;

/* After a successful MPI_File_open: the handle's state, when its collective calls are to be routed (the file's
 * "collective.strategy" is not passthrough). Collective over o->comm for such files: one reduction, and a duplicate
 * of the communicator unless a native strategy (independent) is fixed. */
void iotame__coll_open(const iotame_open_t *o);
/* After a successful MPI_File_set_view / set_info / set_atomicity. */
void iotame__coll_set_view(iotame_file_t *f, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                           const char *datarep);
void iotame__coll_set_info(iotame_file_t *f);
void iotame__coll_set_atomicity(iotame_file_t *f, int flag);
/* A blocking collective data call of a routed handle: done through a strategy, or by the library when the call
 * must pass through (*rc its MPI return code; returns 1). The other collective forms of a routed handle go to the
 * library with their reason counted (returns 0), as do every call of another handle. */
int iotame__coll_serve(const iotame_io_t *io, int *rc);
/* Before MPI_File_sync (collective): the shadow handle, which the engine's writes went through, is flushed too. */
int iotame__coll_sync(iotame_file_t *f);
/* Before MPI_File_close (collective): the strategies' state of the handle and the shadow handle closed. */
int iotame__coll_close(iotame_file_t *f);
/* At MPI_Finalize (collective): the handles still open and the gathers closed ones left posted. */
void iotame__coll_finalize(void);

/* The file's "collective" statistics section (core/module.h; collective/module.c reduces it over the ranks). */
extern const struct iotame_module iotame_module_collective;
static inline json_t *iotame_stats_collective(iotame_file_stats_t *fs)
{
    return iotame_stats_section(fs, &iotame_module_collective);
}

/* ---- strategies ---- */

typedef struct iotame_coll_file iotame_coll_file_t;

/* Facts about the handle every strategy may read, stable between calls (agreed at open; nodes, hints and the shadow
 * handle when an engine strategy is first set up: collective/env.c). What one strategy alone keeps of a handle is its
 * own state (iotame_strategy_t.open), not here. Over 20 fields: each is a fact of the file or the job that several
 * strategies read, set once; what belongs to one strategy has already left. */
typedef struct iotame_coll_env {
    MPI_Comm comm;      /* our duplicate of the file's communicator */
    int rank, nprocs;
    MPI_File shadow;    /* the same file opened MPI_MODE_RDWR on comm, default view: strategies' I/O */
    const int *node_of; /* node index of every rank (virtual nodes when configured) */
    int nnodes;
    const int *spread;  /* ranks in aggregator order: first rank of each node, then the second, ... */
    int64_t cb_nodes, cb_buffer_size, striping_unit, striping_factor; /* the file's hints (ROMIO defaults) */
    /* what rank 0 read of the file at the open (iotame_coll_file_facts) */
    int64_t layout_targets, layout_unit; /* the file's layout as the POSIX layer reads it */
    int layout_from;                     /* its iotame_posix_from_t (0: none) */
    int64_t readahead, fs_block;         /* bytes a sequential reader gets read ahead; st_blksize */
    int local_fs;                 /* the file is on a local disk file system (working fcntl locks) */
    int shadow_ufs;               /* the shadow handle opens "ufs:" + path */
    int write_sieving;            /* the library's independent and collective writes sieve small pieces (ROMIO) */
    int hints_stale;              /* MPI_File_set_info since the hints were read */
    int lost; /* the MPI error class of a message of ours lost on some rank in the engine's set-up (0: none) */
    /* the engine's option (iotame_coll_engine_options; 0: not set): ranks grouped into virtual nodes of this many
     * consecutive ranks, where every engine strategy places its aggregators and the cost model counts nodes */
    int64_t virtual_node_size;
    /* called by the engine's set-up once the shared facts above are known, before it reports (the router tells
     * every strategy of the handle: iotame_strategy_t.environment) */
    void (*set_up)(const struct iotame_coll_env *env, void *arg);
    void *set_up_arg;
    MPI_File fh;      /* the application's handle */
    const char *path; /* as given to MPI_File_open */
    int amode;
} iotame_coll_env_t;

/* Adds calls, bytes and seconds of strategy s to the file's "strategies" statistics (module.c; this rank's part,
 * reduced over the ranks at MPI_Finalize); for an engine strategy also the bytes of offset/length lists and of file
 * views this rank sent to other ranks (list_bytes, view_bytes; negative: a library strategy, not shown). */
void iotame__coll_count(iotame_file_stats_t *fs, int s, int64_t calls, int64_t bytes, double seconds,
                        int64_t list_bytes, int64_t view_bytes);

/* ---- the environment (env.c) ---- */

/* Whether the MPI library in use writes small noncontiguous pieces with data sieving (ROMIO, MPICH's and Open MPI's
 * romio component), rather than one by one (Open MPI's OMPIO); the same on every rank. */
int iotame_coll_write_sieving(void);
/* What rank 0 reads of the file at the open, for every rank (route_open.c), in one stat, one statfs and the
 * layout's attribute: whether it is on a local disk file system (where ROMIO's data-sieving locks work) and not
 * striped over several targets by emulated storage; whether the engine's shadow handle may open it with ROMIO's
 * "ufs:" prefix (shadow_path.h; `romio`: the library is ROMIO); the bytes the kernel reads ahead of a sequential
 * reader (its disk's read_ahead_kb, else its backing device's: NFS, FUSE; 0 for tmpfs or a parallel file system's
 * client); its block size (st_blksize: a local file system's page, a parallel file system's stripe or block); its
 * layout (posix/target.c: the emulated storage's, else Lustre's or CephFS's, else one target). One rank reads them
 * so that a job's open sends the metadata server one set of queries, not one per rank. Zeros and one target when
 * the file cannot be examined. */
typedef struct {
    int local_fs, shadow_ufs;
    int64_t readahead, block;
    int64_t targets, unit; /* the layout: targets 1 and unit 0 when nothing says */
    int from;              /* its iotame_posix_from_t */
} iotame_coll_file_facts_t;
void iotame_coll_file_facts(const char *path, int romio, iotame_coll_file_facts_t *out);
/* The readahead of iotame_coll_file_facts alone, on this rank (a stat). */
int64_t iotame_coll_readahead(const char *path);
/* The nodes of comm's ranks (MPI_COMM_TYPE_SHARED, or virtual nodes of virtual_node_size consecutive ranks); the
 * same count on every rank, 1 when it cannot be had. Collective. */
int iotame_coll_count_nodes(MPI_Comm comm, int rank, int64_t virtual_node_size);
/* cb_nodes, cb_buffer_size and striping from the application's handle (the configured hints merged in at open),
 * ROMIO's defaults when the library does not say. */
void iotame__coll_env_hints(iotame_coll_env_t *e, MPI_File fh);
/* The setup and teardown of the engine strategies (two_phase, node_local, target_aligned, view_based): the nodes, the
 * hints, and the shadow handle (read-modify-write needs reading, so RDWR even when the application writes only),
 * shared by them and set up once. Collective; returns 0, -ENOMEM, or -EACCES (the shadow handle could not be
 * opened), or -EPROTO (a message of the runtime's own failed on some rank before the set-up's agreement: e->lost says
 * its class), every rank alike. Shaped as a strategy's setup and teardown hooks (state unused), so that an engine
 * strategy without state of its own names them as its own (.setup = iotame_coll_engine_setup). */
int iotame_coll_engine_setup(iotame_coll_env_t *e, void *state);
void iotame_coll_engine_teardown(iotame_coll_env_t *e, void *state);
/* Frees the communicator and the node tables (not the shadow handle: closing it is collective). */
void iotame__coll_env_free(iotame_coll_env_t *e);

/* ---- the file view of a routed handle (view.c) ---- */

typedef struct {
    MPI_Offset disp;
    MPI_Datatype etype, filetype; /* owned (duplicated at set_view) unless named; MPI_DATATYPE_NULL at first */
    int64_t etype_size;
    int native_rep; /* the data representation is "native" */
    iotame_flat_t *flat;
    int flat_rc; /* 1: not flattened yet, else iotame_flatten_type's result */
    int64_t generation; /* counts the views set on the handle (its open's first): the same on every rank, since
                           MPI_File_set_view is collective; view_based resends the views when it changes */
} iotame_coll_view_t;

void iotame__coll_view_set(iotame_coll_view_t *v, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                           int native);
void iotame__coll_view_release(iotame_coll_view_t *v);
/* This rank's file extents of nbytes of the data stream from stream byte `start`; NULL, or why they cannot be had
 * (a pass-through reason). */
const char *iotame__coll_view_map(iotame_coll_view_t *v, int64_t start, int64_t nbytes, iotame_extents_t *ext);

/* Per-rank facts of one call, gathered on every rank: first and end file offset, bytes, file extents, flags, the
 * choosing strategy's tag (strategy.tag), the position of the call's first byte in the view's data stream (bytes),
 * and the view's generation (view_based maps every rank's part from these two and its cached view). */
enum { IOTAME_INFO_START, IOTAME_INFO_END, IOTAME_INFO_BYTES, IOTAME_INFO_EXTENTS, IOTAME_INFO_FLAGS,
       IOTAME_INFO_TAG, IOTAME_INFO_STREAM, IOTAME_INFO_VIEW, IOTAME_INFO_FIELDS };

/* One call as a strategy sees it. */
typedef struct {
    const iotame_coll_env_t *env;
    void *state;                    /* the serving strategy's state of the handle (iotame_strategy_t.open), or NULL */
    const iotame_coll_args_t *args; /* the application's call (passthrough) */
    int write;
    const iotame_extent_t *ext; /* this rank's file extents, sorted, disjoint */
    size_t next;
    char *data;                 /* this rank's data stream: the packed buffer (writes read it, reads fill it) */
    int64_t nbytes;
    const int64_t *info;        /* nprocs rows of IOTAME_INFO_FIELDS */
    int64_t gmin, gmax, gbytes; /* over all ranks: first and end offset, bytes */
    const iotame_coll_view_t *view; /* this rank's file view (flattened: the call's extents were mapped from it) */
    int mpi_error;              /* out: the first MPI error code of this rank's I/O, or MPI_SUCCESS */
    int64_t list_bytes;         /* out: bytes of offset/length lists this rank sent to other ranks (the engine) */
    int64_t view_bytes;         /* out: bytes of file views this rank sent to other ranks (view_based) */
    /* the block consumer the call's blocks are handed to (core/module.h): the engine's aggregators put the windows of
     * a write there instead of writing them, and call read_ready before a read; NULL: none */
    const iotame_block_consumer_t *consumer;
    void *consumer_arg;
    int64_t handed_end; /* out: this aggregator's position after its last put (0: none) */
} iotame_coll_call_t;

typedef int (*iotame_coll_fn)(iotame_coll_call_t *call);

/* A call's facts as the router gathered them before a strategy is chosen: every rank's row and their reduction,
 * and this rank's part. */
typedef struct {
    int write;
    int nprocs;
    const int64_t *info;        /* nprocs rows of IOTAME_INFO_FIELDS */
    int64_t gmin, gmax, gbytes; /* over all ranks: first and end offset, bytes */
    int64_t requests;           /* file extents over all ranks */
    int tags_differ;            /* the ranks' tags (IOTAME_INFO_TAG) differ */
    int64_t nbytes;             /* this rank's bytes and file extents */
    const iotame_extents_t *ext;
} iotame_coll_facts_t;

/* This rank's part of a call served without the router's gather: its bytes and file extents. */
typedef struct {
    int64_t nbytes;
    const iotame_extents_t *ext;
} iotame_coll_part_t;

/* ---- options: a strategy's, the chooser's and the engine's own collective.* settings (settings.c) ---- */

/* What a strategy (or the chooser, or the engine) may read of a file's collective settings: the keys it owns. */
typedef struct {
    const iotame_file_config_t *fc;
    const char *const *own; /* NULL-terminated: the strategy's .options */
} iotame_coll_options_t;
/* The value of one of the owned keys: the file's, else its default in runtime/settings.json; NULL when neither
 * (or when the key is not owned: a strategy reads its own options only). The core's validator has checked it against
 * settings.json (type, range, allowed values) before any file is opened. */
const json_t *iotame_coll_option(const iotame_coll_options_t *o, const char *key);
int64_t iotame_coll_option_int(const iotame_coll_options_t *o, const char *key, int64_t unset);
double iotame_coll_option_number(const iotame_coll_options_t *o, const char *key);
/* A string option; NULL when unset or empty (borrowed from the configuration). */
const char *iotame_coll_option_string(const iotame_coll_options_t *o, const char *key);
/* The engine's own options (env.c reads them: virtual_node_size); NULL-terminated. */
extern const char *const iotame_coll_engine_options[];
/* The engine's options of a file into e (at the handle's open). */
void iotame__coll_env_options(iotame_coll_env_t *e, const iotame_file_config_t *fc);

typedef struct iotame_strategy iotame_strategy_t;
typedef struct iotame_chooser iotame_chooser_t;

/* What the router reads of a file's collective settings itself, at the open (settings.c). */
typedef struct {
    /* collective.strategy: one of the registry's, or a chooser (exactly one of the two set) */
    const iotame_strategy_t *strategy;
    const iotame_chooser_t *chooser;
    /* collective.model_error: handed to the block consumer with a call's facts (staging.collective auto) */
    double model_error;
} iotame_coll_settings_t;
/* Reads them; returns whether the file's collective calls are routed (its strategy is not passthrough). */
int iotame__coll_settings(const iotame_file_config_t *fc, iotame_coll_settings_t *set);

/* ---- a strategy: one file, one const table (a backend, in the manner of IOR's; ROMIO's drivers' generic
 * functions are the engine's: a strategy names them where it does nothing of its own) ----
 *
 * Serving functions return 0, or -errno when they could not run (nothing done: the call then passes through), or
 * -EIO after an I/O error (call->mpi_error says which). `native` strategies use the application's handle and
 * arguments themselves (no packing, no file pointer or status handling by the router): the library serves their
 * calls, and a native strategy fixed for a file serves every call without a gather or communicator of ours. A NULL
 * hook is not needed. The registry (generated at build time from the strategy files by
 * cmake/strategy_registry.cmake) lists every strategy at its .number; docs/design/adding-a-strategy.md. */
struct iotame_strategy {
    const char *name;
    const char *summary;
    /* its registry index for good: the selector's id, the order of the statistics and the knowledge file's
     * strategies; 0 is passthrough, a new strategy takes the next free number */
    int number;
    int native;
    /* the cost model's term that predicts it (an iotame_model_kind_t); IOTAME_MODEL_NONE (0): never predicted, the
     * selector examines it by measurement alone */
    int model;
    /* what the term needs of the handle that is the strategy's own and constant over it (view_based: its block),
     * into the model's call: called once at the handle's open, onto a zeroed call that the chooser completes with
     * each call's facts (NULL: nothing) */
    void (*model_call)(const void *state, iotame_model_call_t *call);
    /* the collective settings this strategy owns (runtime/settings.json marks each with "strategy": name), which its
     * open reads; NULL-terminated, NULL for none */
    const char *const *options;
    /* The strategy's state of a handle, at the handle's open (on every rank, not collective; every routed handle
     * opens every strategy's, so that a chooser may pick any): its options read and checked (iotame_coll_option_*)
     * into *state. Returns 0, -EINVAL (an option refused: it says why with iotame_log_warn; the handle is then not
     * routed, on every rank alike since the settings are), or -ENOMEM. NULL: the strategy keeps no state. */
    int (*open)(const iotame_coll_options_t *o, void **state);
    /* At the handle's close, after teardown (not collective): frees the state. */
    void (*close)(void *state);
    /* whether the strategy does what its name says on this handle (NULL: everywhere); where it does not, it does the
     * library's collective call, and the selector leaves it out when passthrough is a candidate */
    int (*applies)(const iotame_coll_env_t *env);
    /* whether it is a likely first candidate for the operation here (NULL: yes); the selector examines the unlikely
     * ones after the others (a library strategy that writes small pieces one by one, for writes) */
    int (*likely)(const iotame_coll_env_t *env, int write);
    /* before the strategy first serves a handle's call (collective, every rank alike): 0 or -errno; and at close */
    int (*setup)(iotame_coll_env_t *env, void *state);
    void (*teardown)(iotame_coll_env_t *env, void *state);
    /* once the engine's shared facts of the handle are set up (env.c: nodes, hints, the file's layout), whichever
     * engine strategy set them up: what this strategy derives from them and reports (collective: every rank) */
    void (*environment)(const iotame_coll_env_t *env, void *state);
    iotame_coll_fn write_all, read_all, write_at_all, read_at_all;
    /* whether it can hand a call's finished blocks to the handle's block consumer (core/module.h) instead of the file
     * (NULL: never): its aggregators own fixed blocks, and this gives their map on the handle (set up): block b of
     * block_size bytes is at aggregator b mod aggregators, for writes and reads alike. Its functions then serve a call
     * with call->consumer set through it. */
    void (*blocks)(const iotame_coll_env_t *env, const void *state, int64_t *block_size, int64_t *aggregators);
};

/* ---- a chooser: picks, call by call, the registry strategy that serves (auto.c) ----
 *
 * A chooser serves no call itself: its hooks delegate each call to one of the registry's strategies, so that the
 * router serves a call alike whether its strategy is fixed or chosen:
 *   open -> agreed at the handle's open, then per call either
 *   direct (>= 0: that strategy serves the call without the router's gather) -> served, or
 *   tag (into the gathered row) -> the router's gather -> choose -> the chosen strategy's setup and call -> measured,
 *   and close at the handle's close, finalize at MPI_Finalize.
 * Every hook is called on every rank alike (the decisions rest on gathered, reduced values), so every rank takes the
 * same branch. `state` is the chooser's state of the handle (what its open set). */

/* What a chooser is told at the handle's open (collective over comm, the application's communicator). */
typedef struct {
    MPI_Comm comm;
    int rank, nprocs;
    iotame_file_stats_t *fs; /* the file's record (NULL: this rank has none) */
    iotame_coll_options_t options; /* the chooser's own settings (its .options) */
    /* every registry strategy's state of the handle (the router's slots), for the strategies' hooks the chooser
     * calls at the open (model_call); NULL when this rank could not set the handle up */
    void *const *states;
    int64_t open_ns; /* what the library's open of the handle took on this rank */
    const iotame_file_profile_t *profile; /* the file's machine profile, agreed by the core (core/module.h) */
} iotame_coll_open_t;

/* The ints a chooser adds to the open's one agreement (reduced with MPI_MAX). */
enum { IOTAME_COLL_AGREE = 11 };

struct iotame_chooser {
    const char *name;
    const char *summary;
    /* the collective settings it owns (no "strategy" mark in runtime/settings.json); NULL-terminated */
    const char *const *options;
    /* At the handle's open (collective over o->comm): its state of the handle into *state (state NULL when this rank
     * could not set the handle up: the chooser then only joins the open's collectives) and its part of the open's
     * one agreement. Returns 0, or -ENOMEM (no rank then routes the handle). */
    int (*open)(void **state, const iotame_coll_open_t *o, int agree[IOTAME_COLL_AGREE]);
    /* After the agreement (env->comm, local_fs and write_sieving set): the reduced values, and what the reduction
     * took (a first estimate of what a collective of ours costs). */
    void (*agreed)(void *state, const iotame_coll_env_t *env, const int agree[IOTAME_COLL_AGREE], int64_t cost_ns);
    /* (a) Before a call: the strategy (registry index, a native one) that serves it without the router's gather,
     * else -1 (NULL: none does). */
    int (*direct)(void *state, int write);
    /* After a call served so: this rank's part of it (NULL: this rank could not map it) and its seconds here. */
    void (*served)(void *state, int write, const iotame_coll_part_t *part, double seconds);
    /* (c) The value this rank adds to the call's gathered row (IOTAME_INFO_TAG), and after the gather the strategy
     * (registry index) that serves the call: its setup and functions are what the router then runs. */
    int64_t (*tag)(const void *state);
    int (*choose)(void *state, const iotame_coll_facts_t *facts);
    /* (b) After a chosen call that ran (an I/O error included): its facts, the strategy that served it, and the
     * slowest rank's seconds from the call's entry (the gather counted). */
    void (*measured)(void *state, const iotame_coll_facts_t *facts, int strategy, double seconds);
    /* At the handle's close (collective, before the strategies' teardown): the state is the chooser's to free; it
     * may keep env->comm for a gather still under way, setting it to MPI_COMM_NULL. At MPI_Finalize (at_finalize),
     * for a handle still open: what is under way is posted, env->comm stays the router's, and finalize completes
     * it. */
    void (*close)(void *state, iotame_coll_env_t *env, int at_finalize);
    /* At MPI_Finalize (collective over MPI_COMM_WORLD), after every still open handle's close: what every handle,
     * closed or not, left posted. */
    void (*finalize)(void);
};

/* The application's call made by the library on the application's handle: the collective call itself, or with
 * `independent` its independent form (MPI_File_write_all -> MPI_File_write, ...). Returns the MPI return code. */
int iotame_coll_library(const iotame_coll_args_t *a, int independent);

#define IOTAME_STRATEGY_MAX 8
_Static_assert(IOTAME_STRATEGY_MAX <= IOTAME_SELECT_MAX, "registry indices are the selector's strategy ids");
/* Every strategy that serves calls, each at its .number (the registry: generated at build time from the strategy
 * files, cmake/strategy_registry.cmake; the index is the strategy's number everywhere: the selector's id,
 * the statistics, the knowledge file; index 0 is passthrough, the library's own collective I/O). */
extern const iotame_strategy_t *const iotame_strategies[];
extern const int iotame_nstrategies;
/* The registry index of a strategy name, or -1. */
int iotame_strategy_find(const char *name);
/* The chooser collective.strategy may name (registry.c lists them apart: no candidates, no numbers), or NULL. */
const iotame_chooser_t *iotame_chooser_named(const char *name);
/* The chooser among the registry's strategies (auto.c). */
extern const iotame_chooser_t iotame_chooser_auto;
/* Whether the ranks' ranges of a call overlap (their lengths sum to more than the call's whole range): what the
 * cost model calls interleaved (auto.c). */
int iotame__coll_interleaved(const iotame_coll_facts_t *facts);
/* Calls the finalize hook of every chooser that has one (MPI_Finalize, collective). */
void iotame__coll_choosers_finalize(void);

/* ---- the selector's policy in the statistics and the knowledge file (decisions.c, knowledge.c) ---- */

/* Fills list (a JSON array: the file's "decisions") with the selector's decisions, oldest first. */
void iotame__coll_decisions(json_t *list, const iotame_selector_t *s);
/* The knowledge-file entries of what s learned (winners, and the budgets of undecided signatures), newest first;
 * NULL when nothing. */
json_t *iotame__coll_learned(const iotame_selector_t *s);
/* A parsed knowledge file's entries as the policy reads them (free with iotame__coll_known_free). 0 or -ENOMEM. */
int iotame__coll_known(const json_t *knowledge, iotame_select_knowledge_t *out);
void iotame__coll_known_free(iotame_select_knowledge_t *k);

/* The knowledge file (knowledge.c): the "collective" section of the knowledge store (core/knowledge.h),
 * {"entries": [{"signature": {...}, "strategy": name, "throughputs": {...}}]}; a signature not decided yet has
 * "strategy": null and "examination": {"spent": s, "debt": s, "first": name}, the examination budget's seconds and
 * the candidate the next run starts with. */
/* The section of a knowledge file's text (a file of version 1 or 2; NULL when it is not a knowledge file). */
json_t *iotame__coll_knowledge_parse(const char *text, size_t len);
/* Rank 0 reads the file at path and broadcasts it over comm (collective; every rank takes part in every broadcast,
 * also when it cannot allocate: it then knows nothing). The section (an empty one when the file has none), NULL
 * when there is no file yet or this rank cannot hold it; *broken on rank 0 when the file is there but cannot be
 * used (reported; it is then left as it is); *exists when rank 0 could read a file. */
json_t *iotame__coll_knowledge_load(const char *path, MPI_Comm comm, int rank, int *broken, int *exists);
/* Merges the winners of s, and the budgets of its undecided signatures, into the file at path (created if missing;
 * entries of other signatures and other modules' sections kept; a winner never replaced by an undecided entry;
 * locked against concurrent writers, replaced atomically; an existing file that is not a knowledge file is left
 * alone: -EEXIST; a lock not had in time: -ETIMEDOUT; each reported), and the model's observations (observed, may be
 * NULL: iotame__coll_corrections_observed) into its corrections. Returns 0 or -errno. */
int iotame__coll_knowledge_save(iotame_selector_t *s, const char *path, const json_t *observed);

/* ---- the model's corrections learned from the jobs it served (corrections.c) ---- */

/* A strategy's correction on a class of signatures: predictions are multiplied by exp(correction); spread is the mean
 * deviation of the observations from it (log); measurements how many there were (0: none, nothing corrected). */
typedef struct {
    double correction, spread;
    int64_t measurements;
} iotame_coll_correction_t;
/* The class of a signature the corrections are kept by: operation, processes, nodes, the piece size to a power of
 * two, interleaved or not ("read procs=2 nodes=1 piece=2^6 interleaved"). */
void iotame__coll_correction_class(char *out, size_t size, const iotame_sig_t *sig, int64_t nodes, int interleaved);
/* The key of a machine profile's corrections (its hash, hexadecimal). */
void iotame__coll_correction_key(char *out, size_t size, int profile_hash);
/* The correction of a strategy on a class, from a profile's corrections (NULL: none; values out of range: none). */
iotame_coll_correction_t iotame__coll_correction(const json_t *profile_model, const char *cls, const char *strategy);
/* The error of a prediction so corrected: the spread's (twice the mean deviation) once there are a few measurements,
 * before that never below `fitted` (the fit's error, or the default). */
double iotame__coll_correction_error(const iotame_coll_correction_t *c, double fitted);
/* What the selector's entries measured against predictions this run has not reported yet, as {"profile": key,
 * "observations": [{"class", "strategy", "r"}]} (r: log of measured over the uncorrected prediction), from `used`
 * (what auto_predict recorded of each signature: {"<signature>": {"class": c, "corrections": {strategy: c}}}, whose
 * "seen" it updates); NULL when there is nothing new. */
json_t *iotame__coll_corrections_observed(const iotame_selector_t *s, json_t *used, const char *profile_key);
/* The key of a signature in `used`. */
void iotame__coll_corrections_sig_key(char *out, size_t size, const iotame_sig_t *sig);
/* Applies observed's observations to the corrections of the knowledge section (each bounded; the file's corrections
 * as they are now, so that jobs at once each add theirs). 0 or -ENOMEM. */
int iotame__coll_corrections_merge(json_t *section, const json_t *observed);
/* The classes and the measurements a profile's corrections rest on. */
void iotame__coll_corrections_count(const json_t *profile_model, int64_t *classes, int64_t *measurements);

/* ---- the aggregation engine strategies are built on ---- */

typedef enum {
    IOTAME_DOMAINS_EVEN,      /* aggregator a owns file bytes [bounds[a], bounds[a+1]) */
    IOTAME_DOMAINS_STRIPED,   /* aggregator a owns stripes a, a + nagg, ... of `unit` bytes */
    IOTAME_DOMAINS_BY_SOURCE, /* aggregator agg_of_rank[r] takes every byte of rank r */
} iotame_domains_t;

typedef struct {
    int nagg;
    const int *agg_rank;    /* comm rank of aggregator a */
    iotame_domains_t kind;
    const int64_t *bounds;  /* EVEN: nagg + 1 offsets */
    int64_t unit;           /* STRIPED */
    const int *agg_of_rank; /* BY_SOURCE */
    int64_t window;         /* bytes of an aggregator's domain handled per round */
    int fill_holes;         /* writes may read-modify-write the holes between pieces (exclusive domains) */
    /* Where an aggregator learns the pieces of its domain. NULL: every rank sends each aggregator the list of its
     * pieces (offsets and lengths, an MPI_Alltoallv per call). Else no list is sent: aggregator agg asks for the
     * file extents of rank r's part of the call (each r != itself with bytes in the call), sorted and disjoint,
     * holding at least every one of r's extents inside agg's domain (those outside are ignored), exactly as r's
     * view maps them; the engine cuts them as r cuts its own. Returns 0 or -errno; must not communicate. */
    int (*extents_of)(void *arg, int agg, int rank, iotame_extents_t *out);
    void *arg;
} iotame_plan_t;

/* Runs one call through the plan: request lists to the aggregators (unless plan->extents_of), then rounds of data
 * exchange and I/O. Collective over env->comm; its first collective is an agreement (MPI_Allreduce, MPI_MIN of an
 * int), which a rank without a plan joins. Returns 0, -EIO (call->mpi_error set), or -errno before anything was
 * done (then on every rank alike). A strategy that cannot make its plan on this rank passes NULL: the call fails
 * everywhere. */
int iotame_coll_engine(iotame_coll_call_t *call, const iotame_plan_t *plan);
/* The engine's I/O of len bytes at off through the shadow handle (env.c), in pieces of at most 1 GiB: the first MPI
 * error of the call is kept in c->mpi_error (a short write, or a short read before the file's end, is MPI_ERR_IO;
 * past the end a read gives zeros). */
void iotame__coll_shadow_io(iotame_coll_call_t *c, int write, int64_t off, char *buf, int64_t len);

#endif
