/* stage: node-level asynchronous staging (Isaila, Garcia Blas, Carretero, Latham, Lang, Ross: "Latency hiding file
 * I/O for Blue Gene systems", CCGrid 2009: write-behind and prefetch; docs/design/staging.md). The processes of a
 * node share one staging area: a ring of write records in shared memory, appended to by the writers and written
 * behind, in order, by one flusher per node (a thread of the node's first process that makes no MPI call). A write
 * returns once its data is in the ring; the flusher merges adjacent pieces of all the node's processes into large
 * writes. A small table of read-ahead buffers serves prefetch. The only interface of runtime/src/stage/. */
#ifndef IOTAME_STAGE_H
#define IOTAME_STAGE_H

#include <pthread.h>
#include <stdint.h>

#include "flatten/flatten.h"

#define STAGE_FILES 256        /* files with staged data on a node at once */
#define STAGE_RANK_WORDS 16    /* node processes an error can name (bit per process) */
#define STAGE_ORIGIN_WORDS 64  /* world ranks a cached collective write's error can name (aggregator caching) */
#define STAGE_PATH_MAX 4096
#define STAGE_PREFETCH_SLOTS 64 /* read-ahead buffers of the node */
/* A transfer interrupted (EINTR) this many times in a row fails with EINTR: retried forever, storage that keeps
 * answering EINTR would hang the job at its next sync. */
#define STAGE_EINTR_RETRIES 64

/* A file the node's processes stage data for, found by its device and inode. */
typedef struct {
    uint64_t key; /* hash of (dev, ino), never 0; 0: free */
    uint64_t dev, ino;
    int32_t users;        /* open handles of the node's processes */
    int32_t error;        /* errno of a failed background write not yet returned to every process it concerns */
    uint64_t error_ranks[STAGE_RANK_WORDS]; /* the node processes whose data failed and who were not told yet */
    /* aggregator caching: the errno of a failed write of records with an origin (another rank's data, cached here
     * by an aggregator of this node) and the origins' world ranks (agg_all: one of 4096 or more failed too, so
     * every rank of the file is told); taken whole by the next sync or close of the file (stage_take_agg_error) */
    int32_t agg_error, agg_all;
    uint64_t agg_origins[STAGE_ORIGIN_WORDS];
    int32_t agg_users, pad; /* open handles caching the file (one at a time: they would share the word) */
    uint64_t pending;     /* bytes staged and not yet written (or failed) */
    uint64_t failed_bytes, generation; /* generation: bumped by every write, so that prefetched data is dropped */
    char path[STAGE_PATH_MAX];
} stage_file_t;

/* A read-ahead buffer: the flusher fills [off, off + len) of a file for one process. */
enum { PREFETCH_FREE, PREFETCH_ASKED, PREFETCH_READY };
typedef struct {
    int32_t state, file, owner, pad;
    int64_t off, len;      /* asked for; len becomes what was read (short at the end of the file) */
    uint64_t generation;   /* the file's when asked: a later write makes the data stale */
} stage_prefetch_t;

/* A failed background write, kept for the statistics (the file's slot may be reused once the error was returned). */
#define STAGE_FAILURES 16
typedef struct {
    char path[512];
    int32_t error, pad;
    uint64_t bytes;
} stage_failure_t;

/* Records lost with their writer: a node process that died between reserving a record and committing it (inside
 * its write call, which never returned). Kept for the statistics, one entry per file and dead process. */
#define STAGE_LOST 16
typedef struct {
    char path[512];
    uint64_t bytes, records;
    int32_t node_rank, world_rank, pid, pad;
} stage_lost_t;

/* A node process of the area. Its first thread (the one that called MPI_Init, which MPI requires to live until
 * MPI_Finalize) holds `alive` while the process stages: the kernel releases a robust mutex of a dead thread as
 * "owner died", so the flusher learns of a writer's death from the mutex, whatever killed it and without a process
 * id (which may have been reused, may name a zombie, or may mean nothing in another PID namespace). */
#define STAGE_PROCS (STAGE_RANK_WORDS * 64)
enum { STAGE_PROC_FREE, STAGE_PROC_ALIVE, STAGE_PROC_DEAD };
typedef struct {
    pthread_mutex_t alive; /* process-shared, robust */
    int32_t state, pid, world_rank, pad;
} stage_proc_t;

/* An event of the area: a counter bumped by each notification, slept on with a futex. It keeps nothing per waiter,
 * so a process killed while it waits leaves nothing behind (glibc's process-shared condition variables count their
 * waiters, and the next broadcast after a waiter was killed waited for it for ever). */
typedef struct {
    uint32_t seq, sleepers;
} stage_event_t;

/* The flusher's counters: the node's statistics. */
typedef struct {
    uint64_t records, runs_in, extents_in, writes_out, bytes_out, max_dirty, flush_ns, overlapped_ns, overlap_batches,
        prefetch_reads, prefetch_bytes_read;
    uint64_t lost_bytes, lost_records; /* every lost record (the log below may be full) */
} stage_counts_t;

/* The background writes that failed and the records lost with their writer, logged for the statistics. */
typedef struct {
    int32_t nfailures, nlost;
    stage_failure_t failure[STAGE_FAILURES];
    stage_lost_t lost[STAGE_LOST];
} stage_problems_t;

/* The node's area: this header, then the prefetch buffers, then the ring. Positions in the ring grow without end;
 * a position's byte is at ring[pos % cap]. Writers reserve [head, head + n) under the lock (the record's header is
 * written there and then) and copy the data outside it; the flusher writes committed records from tail and advances
 * tail, which frees their room. A record whose writer died before committing it is skipped and reported as lost.
 * Over 20 fields, as one struct: it is the layout of the node's shared memory, which every process of the node maps
 * (its counters, problems and tables are structs of their own). */
typedef struct {
    uint32_t magic, nprocs;
    pthread_mutex_t lock; /* process-shared, robust; held for bookkeeping only, never across a copy or a write */
    stage_event_t wake;     /* the flusher sleeps here */
    stage_event_t progress; /* writers wait for room, drains for the flusher's progress, readers for read-ahead */
    uint64_t cap, head, tail, want; /* want: a drain asked for everything before this position */
    uint64_t scanned;               /* the flusher's: the records before it are committed */
    uint64_t last_put_ns;           /* when a process of the node last staged a write */
    uint64_t prefetch_bytes;        /* of each read-ahead buffer */
    int32_t stop, waiting;          /* the flusher is to end once everything is written; processes waiting on it */
    int32_t blocked;                /* writers waiting for room */
    int32_t flusher;                /* STAGE_FLUSHER_*: whether the node's flusher runs */
    int32_t asked;                  /* read-ahead buffers asked for (the asker's stage_unlock wakes the flusher) */
    int32_t idle;                   /* the flusher sleeps with nothing staged: the next write wakes it */
    int32_t writing, pad_writing;   /* the flusher is writing a batch (what waiters tell the watchdog) */
    stage_counts_t count;       /* the flusher's */
    stage_problems_t problems;  /* what went wrong behind the application's back */
    stage_file_t file[STAGE_FILES];
    stage_prefetch_t prefetch[STAGE_PREFETCH_SLOTS];
    stage_proc_t proc[STAGE_PROCS];
} stage_area_t;

#define STAGE_MAGIC 0x73746167u /* "stag" */

/* The node's flusher: started at MPI_Init by the node's first process, or, where only staging "auto" is set (no
 * file may stage at all), by the first process of the node that stages a file, which then runs it. */
enum { STAGE_FLUSHER_NONE, STAGE_FLUSHER_STARTING, STAGE_FLUSHER_RUNNING, STAGE_FLUSHER_FAILED };

/* A record in the ring: this header, nruns strided runs of file offsets (iotame_run_t, ascending), then the data
 * bytes in the order of the runs' pieces, padded to 64. One record describes a whole write call (or a part of half
 * the ring at most): its size grows with the call's flattened view, never with its pieces. */
typedef struct {
    uint32_t committed; /* set (release) once the data is copied */
    int32_t file;       /* index in stage_area_t.file, or -1: padding up to the ring's end, or a lost record */
    uint32_t rank;      /* the node process that staged it (its index in stage_area_t.proc) */
    uint32_t nruns;
    int32_t origin;     /* aggregator caching: the world rank whose data it is (-1: the staging process's own) */
    int32_t pad;
    uint64_t size;      /* of the whole record */
    uint64_t bytes;     /* of data */
    uint64_t pieces;    /* of its runs */
    int64_t lo, end;    /* the file range its runs touch */
} stage_record_t;

/* The data of one staged write: `fill` copies n bytes from byte `from` of the call's data (in the order of its
 * runs' pieces) to dst. A call staged as one record is filled once, from 0, whole. */
typedef struct {
    int (*fill)(void *arg, char *dst, uint64_t from, uint64_t n); /* 0, or -1: the data cannot be had */
    void *arg;
} stage_source_t;

/* Pieces below this size are small: the flusher merges them (copies them into one buffer, waits for the node's other
 * processes to fill the holes between them), and a call whose pieces are smaller on average waits for room in a
 * full ring instead of being written through. */
#define STAGE_SMALL_PIECE 4096

/* ---- the area (area.c; its mapping in MPI: map.c) ---- */

/* Maps the node's area (collective over MPI_COMM_WORLD, at MPI_Init, by the thread that called it): ring of cap
 * bytes and read-ahead buffers of prefetch_bytes; the calling process joins it. NULL on every process when it could
 * not be set up (also on a node of more than STAGE_PROCS processes). */
stage_area_t *stage_area_map(uint64_t cap, uint64_t prefetch_bytes, int *node_rank);
/* The bytes of an area of that shape, and the area set up in `map` (zeroed, that many bytes) for nprocs processes:
 * what stage_area_map does without MPI (unit tests map it themselves). */
size_t stage_area_bytes(uint64_t cap, uint64_t prefetch_bytes);
void stage_area_init(void *map, uint64_t cap, uint64_t prefetch_bytes, uint32_t nprocs);
/* The calling process joins the area as node process node_rank: the calling thread takes the process's alive mutex
 * and must live as long as the process stages (the thread of MPI_Init). 0, or -EINVAL/-EBUSY. */
int stage_area_join(stage_area_t *a, int node_rank, int world_rank);
/* The process leaves (its staged data is committed, and it stages no more): its thread of stage_area_join gives the
 * alive mutex back, before the area is unmapped. */
void stage_area_leave(stage_area_t *a, int node_rank);
/* Whether node process `rank` may still be staging: 0 only once its alive mutex shows that it died (a process that
 * never joined cannot be told dead). The lock is held. */
int stage_proc_alive(stage_area_t *a, uint32_t rank);
/* The ring's bytes, and read-ahead buffer i. */
char *stage_ring(stage_area_t *a);
char *stage_prefetch_buffer(stage_area_t *a, int i);
/* Locks the area (a dead holder's lock is taken over). The unlock wakes the sleeping flusher when read-ahead was
 * asked for (asked > 0). */
void stage_lock(stage_area_t *a);
void stage_unlock(stage_area_t *a);
/* Sleeps on ev with the lock held (released while asleep, taken again) until a notification, deadline_ns
 * (CLOCK_MONOTONIC) or a spurious wake-up: the caller checks its condition again. stage_event_notify wakes one
 * sleeper, or all. */
void stage_event_wait(stage_area_t *a, stage_event_t *ev, uint64_t deadline_ns);
void stage_event_notify(stage_event_t *ev, int all);
/* Waits (the lock held) for the flusher's progress (a batch written, read-ahead filled), 100 ms at most; counted in
 * `waiting`. */
void stage_wait_progress(stage_area_t *a);
/* The file's index for (dev, ino), claimed with its path when new and counted as one more user; -1 when the
 * table is full. stage_file_release: one user less (the slot is reused once no user, data or error is left). */
int stage_file_claim(stage_area_t *a, uint64_t dev, uint64_t ino, const char *path);
void stage_file_release(stage_area_t *a, int file);
/* The index of (dev, ino) if staged data of it may be pending, else -1. */
int stage_file_find(stage_area_t *a, uint64_t dev, uint64_t ino);

/* Copies one write into the ring: `runs` (ascending file runs) and their data, in records of at most half the ring,
 * staged by node process `rank` for world rank `origin` (-1: its own data). Blocks while the ring is full
 * (*blocked_ns adds the time). Returns the ring position after the last record (what stage_drain waits for), or 0
 * when the source failed (only a call of one record may fail: nothing is staged). The lock is taken once per record,
 * to reserve it; the copy and the commit take none. */
uint64_t stage_put(stage_area_t *a, int file, int rank, int origin, const iotame_run_t *runs, size_t nruns,
                   const stage_source_t *src, double threshold, uint64_t *blocked_ns);
/* Whether a write of nruns runs and `bytes` of data is staged as one record. */
int stage_one_record(const stage_area_t *a, size_t nruns, uint64_t bytes);
/* The ring's bytes a record of nruns runs and `bytes` of data takes, and whether the ring holds that many more
 * within `fill` of its size now (a hint: other processes may take them first). */
uint64_t stage_record_bytes(size_t nruns, uint64_t bytes);
int stage_room_for(stage_area_t *a, uint64_t record_bytes, double fill);
/* Waits until everything staged before position `upto` is written (or failed, or lost with its writer). Returns the
 * nanoseconds waited. */
uint64_t stage_drain(stage_area_t *a, uint64_t upto);
/* The same, the wait named `step` (a string literal) for the watchdog (core/watch.h). */
uint64_t stage_drain_step(stage_area_t *a, uint64_t upto, const char *step);
/* The current end of the ring (a drain of everything staged so far waits for it). */
uint64_t stage_head(stage_area_t *a);
/* Takes this process's pending error of a file (0 when none): returned once per process it concerns. */
int stage_take_error(stage_area_t *a, int file, int rank);
/* Takes the file's error of cached records (aggregator caching): its errno (0: none), the origins' bits into
 * origins[STAGE_ORIGIN_WORDS] and *all; cleared, so that one process of the node takes it. */
int stage_take_agg_error(stage_area_t *a, int file, uint64_t *origins, int *all);
/* The records lost with their writers: up to max entries of the log copied into out; returns how many it holds
 * (a->lost_bytes and a->lost_records count every lost record, also beyond the log). */
int stage_lost_records(stage_area_t *a, stage_lost_t *out, int max);

/* ---- another node's ring (remote.c: aggregator caching) ---- */

/* Collective over MPI_COMM_WORLD, after stage_area_map: every process learns every process's node, and the node's
 * first process exposes a's tail to the others. 0, or -1 on every process (then no remote wait is possible). */
int stage_remote_start(stage_area_t *a, int node_rank);
void stage_remote_stop(void); /* collective over MPI_COMM_WORLD */
int stage_remote_ready(void);
/* Whether world rank w stages into this process's area (the same node). */
int stage_remote_local(int world_rank);
/* Waits until the ring of world rank w's node has written everything before position upto (w on another node).
 * 0, or -1 when MPI failed to read the position. */
int stage_remote_wait(int world_rank, uint64_t upto);

/* ---- the flusher (flusher.c): a thread of the node's first process ---- */

typedef struct {
    double threshold;  /* of the ring dirty that starts a flush */
    uint64_t delay_ns; /* quiet time after the last write that starts one */
} stage_flush_knobs_t;

/* A descriptor of staged file i for writing (or reading), opened on first use; -errno when it cannot be had. The
 * slot's path is checked to still name the file staged for (not one created in its place). */
int stage_fd(stage_area_t *a, int file, int write);
/* Writes the committed records of [from, to) (batch.c); stage_batch_free releases its working memory. */
void stage_write_batch(stage_area_t *a, uint64_t from, uint64_t to);
void stage_batch_free(void);

/* Starts the flusher in this process (0, or an errno). Stop: when this process runs it (nothing otherwise), stops it
 * once everything staged is written, then returns. */
int stage_flusher_start(stage_area_t *a, const stage_flush_knobs_t *k);
void stage_flusher_stop(stage_area_t *a);

#endif
