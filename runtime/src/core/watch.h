/* The watchdog's "where am I" records (core/watch.c, core/watchdog.c; docs/design/watchdog.md). Each thread that
 * enters a call of the runtime owns one record and updates it with relaxed atomic stores at step boundaries (no
 * lock, no system call); one watchdog thread per process reads every record about once a second and reports a
 * record whose progress counter has not moved for runtime.hang_seconds while it is inside a call. MPI-free: the unit
 * test (tests/unit/test_watchdog.c) links watch.c alone. Included by core.h, the part's interface. */
#ifndef IOTAME_WATCH_H
#define IOTAME_WATCH_H

#include <stdint.h>

/* What a stuck step waits for: the figures a, b, c and the name `what` mean per kind (watch.c formats them). */
typedef enum {
    IOTAME_WAIT_NONE,
    IOTAME_WAIT_GATE,    /* a throttle gate token: a holder pid (0 unknown), b level; what: direction */
    IOTAME_WAIT_RING,    /* room in the node's staging ring: a dirty bytes, b capacity, c flusher (0 idle, 1 writing) */
    IOTAME_WAIT_DRAIN,   /* the node's flusher to write up to a (tail now b), c flusher (0 idle, 1 writing) */
    IOTAME_WAIT_REMOTE,  /* aggregator caching: world rank a's node ring tail to reach b (c: last seen) */
    IOTAME_WAIT_COLL,    /* an MPI call of the runtime's own: what, a ranks of the communicator, b the
                          * communicator's ranks known missing as a bit mask of the first 64 (0: not known) */
    IOTAME_WAIT_SYSCALL, /* a system call on the file system: what, a fd, b bytes, c offset */
    IOTAME_WAIT_KINDS
} iotame_wait_t;

/* One thread's record. Written by its owner thread only (relaxed atomic stores), read by the watchdog (relaxed
 * loads, trusted only when the progress counter read before and after agrees). Names are string literals. */
typedef struct {
    const char *call;   /* the outermost call of the runtime the thread is in, NULL outside */
    const void *file;   /* its statistics record (iotame_file_stats_t), NULL when none */
    const char *module; /* the module and step in force, NULL when none */
    const char *step;
    const char *what;
    int32_t wait;       /* iotame_wait_t */
    int32_t tid;        /* the owner's thread id */
    int64_t a, b, c;
    uint64_t progress;  /* bumped at every step boundary */
    int32_t used;       /* the slot has an owner */
    int32_t pad;
} iotame_where_t;

#define IOTAME_WATCH_SLOTS 256 /* threads of a process watched at once (the others go unwatched) */

extern int iotame__watch; /* the watchdog runs: the records are kept */
extern _Thread_local iotame_where_t *iotame__where __attribute__((tls_model("initial-exec")));
/* The calling thread's record, claimed at its first use; NULL when every slot was taken then (the thread stays
 * unwatched). */
iotame_where_t *iotame__where_claim(void);

/* The records (watch.c); a slot with `used` set has an owner thread. */
extern iotame_where_t iotame__watch_slots[IOTAME_WATCH_SLOTS];

/* What the watchdog remembers of one record between two looks. */
typedef struct {
    uint64_t progress; /* seen last */
    uint64_t since_ns; /* when it was first seen with that value inside a call */
    int inside;        /* it was inside a call */
} iotame_watch_seen_t;

/* The no-progress rule, pure: given a look at a record (inside a call or not, its progress counter) at now_ns,
 * updates `seen` and returns 1 when the record has been inside one call with the same counter for at least
 * hang_ns (0: never). */
int iotame_watch_stuck(iotame_watch_seen_t *seen, int inside, uint64_t progress, uint64_t now_ns, uint64_t hang_ns);

/* Formats what the record waits for into buf (a sentence without a final period; "" for none). Returns buf. */
char *iotame_watch_describe_wait(const iotame_where_t *w, char *buf, unsigned long size);

/* What the kernel says thread `tid` of this process waits in (/proc/self/task/TID/syscall and wchan): the system
 * call, its descriptor's file where the call takes one, and the kernel function it sleeps in, e.g. "the system
 * call write on fd 5 (/mnt/x/f.dat), waiting in the kernel's request_wait_answer" (a FUSE request unanswered), into
 * buf; "" where procfs says nothing. Returns buf. */
char *iotame_watch_kernel(int tid, char *buf, unsigned long size);

#endif
