/* libiotame_msgfaults.so: a test-only fault injector for the runtime's own MPI messages, preloaded AFTER
 * libiotame.so (LD_PRELOAD=libiotame.so:this). It defines the PMPI_ functions the runtime exchanges messages with
 * and forwards them through dlsym(RTLD_NEXT) to the MPI library; docs/design/fault-injection.md says why it exists.
 *
 * Only the runtime's messages are faulted. The application's MPI_X calls never reach these symbols (MPI_X is its
 * own symbol in the library, an alias of PMPI_X's code). The MPI library's own internal calls can: MPICH's ROMIO
 * calls PMPI_Allreduce & co. through its PLT (`readelf -r libmpich.so.12` lists JUMP_SLOT relocations for them), and
 * so do some of Open MPI's. So a call is matched only when its return address lies in libiotame.so's mapping; the
 * others pass straight through, uncounted.
 *
 * What a fault does, so that a correct runtime can keep every rank in step:
 *   fail=CLASS  the call is performed as asked (its messages are exchanged, its requests complete), then its return
 *               code is replaced by CLASS in the chosen process: a local failure report. Only calls that complete
 *               something are failed: the blocking collectives, Wait/Waitall/Waitsome, a Test that completed its
 *               request, Win_flush and Win_unlock_all. A call that starts one (Isend, Irecv, Iallreduce, Fetch_and_op,
 *               ...) never fails: a request the runtime believed not started would be left pending on its buffer.
 *   delay=S     the process sleeps S seconds before the call (every matched call, starts included); S may be 0: the
 *               call is only logged (a trace of the runtime's messages).
 *
 * One rule, from IOTAME_MSGFAULT: comma-separated key=value pairs (the syntax of IOTAME_FAULT, tests/faults/faults.c).
 *   op=mpi:NAME|mpi:collective|mpi:p2p|mpi:rma|mpi:any   NAME: allreduce, bcast, barrier, allgather, alltoall,
 *                 alltoallv, gather, gatherv, iallreduce, iallgather, isend, issend, irecv, wait, waitall, waitsome,
 *                 test, fetch_and_op, win_lock_all, win_flush, win_unlock_all; collective: the blocking collectives
 *   fail=MPI_ERR_OTHER|MPI_ERR_INTERN|MPI_ERR_COMM|MPI_ERR_TRUNCATE|MPI_ERR_PENDING  or  delay=SECONDS
 *   nth=N         the first matching call faulted (default 1), counted per process
 *   count=K       how many matching calls from the nth (default 1; 0: every one after it)
 *   rank=R        only in the process of this rank (PMI_RANK, OMPI_COMM_WORLD_RANK); default every process
 *   arm=program   matching calls are counted only after the program called iotame_fault_arm() (found with dlsym)
 *                 (a program that calls iotame_fault_disarm() stops every rule there, armed or not)
 *   log=PATH      every faulted call appends "op=NAME n=N fail=CLASS|delay=S" to PATH.RANK
 * Without IOTAME_MSGFAULT every call passes straight through. A malformed rule stops the process with exit status 2
 * and a message naming the key. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MSGF_EXPORT __attribute__((visibility("default")))

/* The calls, in groups: blocking collectives, point-to-point, one-sided. */
#define MSGF_CALLS(X)                                                                                          \
    X(allreduce, COLL) X(bcast, COLL) X(barrier, COLL) X(allgather, COLL) X(alltoall, COLL) X(alltoallv, COLL)    \
    X(gather, COLL) X(gatherv, COLL) X(iallreduce, START) X(iallgather, START) X(isend, START) X(issend, START)   \
    X(irecv, START) X(wait, P2P) X(waitall, P2P) X(waitsome, P2P) X(test, P2P) X(fetch_and_op, RMA_START)         \
    X(win_lock_all, RMA_START) X(win_flush, RMA) X(win_unlock_all, RMA)
#define MSGF_ENUM(name, group) MSGF_##name,
#define MSGF_NAME(name, group) #name,
#define MSGF_GROUP(name, group) MSGF_G_##group,
typedef enum { MSGF_CALLS(MSGF_ENUM) MSGF_NCALLS } msgf_call_t;
enum { MSGF_G_COLL, MSGF_G_START, MSGF_G_P2P, MSGF_G_RMA_START, MSGF_G_RMA };
static const char *const msgf_names[] = {MSGF_CALLS(MSGF_NAME)};
static const int msgf_groups[] = {MSGF_CALLS(MSGF_GROUP)};

static struct {
    unsigned char ops[MSGF_NCALLS]; /* 1: the rule concerns this call */
    int fail;                       /* an MPI error class, or 0 with delay >= 0 */
    double delay;                   /* seconds, < 0: no delay */
    long nth, count;
    int rank, armed, log_fd, set;
} rule = {.delay = -1, .nth = 1, .count = 1, .rank = -1, .armed = 1, .log_fd = -1};

static pthread_once_t msgf_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t msgf_lock = PTHREAD_MUTEX_INITIALIZER;
static long msgf_seen;               /* matching calls counted so far (under the lock) */
static int msgf_my_rank;
static uintptr_t msgf_lo[8], msgf_hi[8]; /* libiotame.so's loaded segments */
static int msgf_nseg;

static const struct { const char *name; int value; } msgf_classes[] = {
    {"MPI_ERR_OTHER", MPI_ERR_OTHER}, {"MPI_ERR_INTERN", MPI_ERR_INTERN}, {"MPI_ERR_COMM", MPI_ERR_COMM},
    {"MPI_ERR_TRUNCATE", MPI_ERR_TRUNCATE}, {"MPI_ERR_PENDING", MPI_ERR_PENDING}};

static void msgf_die(const char *key, const char *value, const char *expected)
{
    fprintf(stderr, "libiotame_msgfaults: IOTAME_MSGFAULT: %s=%s: expected %s\n", key, value, expected);
    _exit(2);
}

static void msgf_parse_op(const char *value)
{
    static const char *const groups[] = {"mpi:collective", "mpi:p2p", "mpi:rma", "mpi:any"};
    for (int g = 0; g < 4; g++)
        if (!strcmp(value, groups[g])) {
            for (int c = 0; c < MSGF_NCALLS; c++) {
                int k = msgf_groups[c];
                rule.ops[c] = g == 3 || (g == 0 && k == MSGF_G_COLL) ||
                              (g == 1 && (k == MSGF_G_START || k == MSGF_G_P2P) && c != MSGF_iallreduce &&
                               c != MSGF_iallgather) ||
                              (g == 2 && (k == MSGF_G_RMA_START || k == MSGF_G_RMA));
            }
            rule.set = 1;
            return;
        }
    for (int c = 0; c < MSGF_NCALLS; c++)
        if (!strncmp(value, "mpi:", 4) && !strcmp(value + 4, msgf_names[c])) {
            rule.ops[c] = 1;
            rule.set = 1;
            return;
        }
    msgf_die("op", value, "mpi:collective, mpi:p2p, mpi:rma, mpi:any or mpi:NAME (allreduce, bcast, ...)");
}

static void msgf_parse_pair(char *key, char *value, char *log)
{
    char *end;
    if (!strcmp(key, "op")) {
        msgf_parse_op(value);
    } else if (!strcmp(key, "fail")) {
        for (size_t i = 0; i < sizeof msgf_classes / sizeof *msgf_classes; i++)
            if (!strcmp(value, msgf_classes[i].name)) rule.fail = msgf_classes[i].value;
        if (!rule.fail) msgf_die(key, value, "MPI_ERR_OTHER, MPI_ERR_INTERN, MPI_ERR_COMM, MPI_ERR_TRUNCATE or MPI_ERR_PENDING");
    } else if (!strcmp(key, "delay")) {
        rule.delay = strtod(value, &end);
        if (*end || rule.delay < 0) msgf_die(key, value, "seconds >= 0");
    } else if (!strcmp(key, "nth") || !strcmp(key, "count") || !strcmp(key, "rank")) {
        long v = strtol(value, &end, 10);
        if (*end || v < 0) msgf_die(key, value, "a whole number >= 0");
        if (key[0] == 'n') rule.nth = v ? v : 1;
        else if (key[0] == 'c') rule.count = v;
        else rule.rank = (int)v;
    } else if (!strcmp(key, "arm")) {
        if (strcmp(value, "program")) msgf_die(key, value, "program");
        rule.armed = 0;
    } else if (!strcmp(key, "log")) {
        snprintf(log, 4096, "%s", value);
    } else {
        msgf_die(key, value, "one of op, fail, delay, nth, count, rank, arm, log");
    }
}

/* Records the loaded segments of libiotame.so (the runtime), whose calls alone are matched. */
static int msgf_find_runtime(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size, (void)data;
    const char *base = strrchr(info->dlpi_name, '/');
    if (strcmp(base ? base + 1 : info->dlpi_name, "libiotame.so")) return 0;
    for (int i = 0; i < info->dlpi_phnum && msgf_nseg < 8; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD) {
            msgf_lo[msgf_nseg] = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            msgf_hi[msgf_nseg] = msgf_lo[msgf_nseg] + info->dlpi_phdr[i].p_memsz;
            msgf_nseg++;
        }
    return 1;
}

static void msgf_init(void)
{
    const char *r = getenv("PMI_RANK");
    if (!r) r = getenv("OMPI_COMM_WORLD_RANK");
    msgf_my_rank = r ? atoi(r) : 0;
    dl_iterate_phdr(msgf_find_runtime, NULL);
    const char *spec = getenv("IOTAME_MSGFAULT");
    if (!spec || !*spec) return;
    char buf[4096], log[4096] = "";
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *pair = strtok_r(buf, ",", &save); pair; pair = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(pair, '=');
        if (!eq) msgf_die(pair, "", "key=value");
        *eq = '\0';
        msgf_parse_pair(pair, eq + 1, log);
    }
    if (!rule.set || (!rule.fail) == (rule.delay < 0)) msgf_die("op/fail/delay", spec, "op and one of fail or delay");
    if (*log) {
        char path[4200];
        snprintf(path, sizeof path, "%s.%d", log, msgf_my_rank);
        rule.log_fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }
}

__attribute__((constructor)) static void msgf_constructor(void) { pthread_once(&msgf_once, msgf_init); }

/* Called by a test program (through dlsym) when the faults may start. */
MSGF_EXPORT void iotame_fault_arm(void) { __atomic_store_n(&rule.armed, 1, __ATOMIC_RELEASE); }

/* Called by a test program after its last step: no fault from here on (MPI_Finalize's messages are not a step's). */
MSGF_EXPORT void iotame_fault_disarm(void) { __atomic_store_n(&rule.armed, 0, __ATOMIC_RELEASE); }

static int msgf_from_runtime(const void *ret)
{
    for (int i = 0; i < msgf_nseg; i++)
        if ((uintptr_t)ret >= msgf_lo[i] && (uintptr_t)ret < msgf_hi[i]) return 1;
    return 0;
}

static void msgf_log(msgf_call_t call, long n)
{
    if (rule.log_fd < 0) return;
    char line[128], how[48];
    if (rule.fail) {
        const char *name = "?";
        for (size_t i = 0; i < sizeof msgf_classes / sizeof *msgf_classes; i++)
            if (msgf_classes[i].value == rule.fail) name = msgf_classes[i].name;
        snprintf(how, sizeof how, "fail=%s", name);
    } else {
        snprintf(how, sizeof how, "delay=%g", rule.delay);
    }
    int len = snprintf(line, sizeof line, "op=%s n=%ld %s\n", msgf_names[call], n, how);
    if (len > 0 && syscall(SYS_write, rule.log_fd, line, (size_t)len) < 0) { /* the log is best effort */ }
}

/* Whether this call of the runtime's is faulted (counts it when it matches); sleeps here for a delay. Returns the
 * error class to report after the call (0: none). `completes`: 0 for a call that only starts something. */
static int msgf_decide(msgf_call_t call, const void *ret, int completes)
{
    pthread_once(&msgf_once, msgf_init);
    if (!rule.ops[call] || !__atomic_load_n(&rule.armed, __ATOMIC_ACQUIRE) || !msgf_from_runtime(ret)) return 0;
    if (rule.rank >= 0 && rule.rank != msgf_my_rank) return 0;
    if (rule.fail && !completes) return 0;
    pthread_mutex_lock(&msgf_lock);
    long n = ++msgf_seen;
    int fire = n >= rule.nth && (rule.count == 0 || n < rule.nth + rule.count);
    pthread_mutex_unlock(&msgf_lock);
    if (!fire) return 0;
    msgf_log(call, n);
    if (rule.delay > 0) {
        struct timespec t = {(time_t)rule.delay, (long)((rule.delay - (time_t)rule.delay) * 1e9)};
        while (nanosleep(&t, &t) != 0) { /* interrupted: sleep the rest */ }
    }
    return rule.fail;
}

/* ---- the wrappers: decide (and sleep) before the call, perform it, then report the fault's class ---- */

#define MSGF_REAL(name, params)                                                                                \
    static int(*real_##name) params;                                                                           \
    if (!real_##name) real_##name = (int(*) params)dlsym(RTLD_NEXT, #name)

#define MSGF_WRAP(call, completes, name, PARAMS, TYPES, ARGS)                                                   \
    MSGF_EXPORT int name PARAMS                                                                                \
    {                                                                                                          \
        MSGF_REAL(name, TYPES);                                                                                \
        int fail = msgf_decide(MSGF_##call, __builtin_return_address(0), completes);                           \
        int msgf_rc = real_##name ARGS;                                                                       \
        return fail && msgf_rc == MPI_SUCCESS ? fail : msgf_rc;                                                \
    }

MSGF_WRAP(allreduce, 1, PMPI_Allreduce,
          (const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c),
          (const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm), (s, r, n, t, o, c))
MSGF_WRAP(bcast, 1, PMPI_Bcast, (void *b, int n, MPI_Datatype t, int root, MPI_Comm c),
          (void *, int, MPI_Datatype, int, MPI_Comm), (b, n, t, root, c))
MSGF_WRAP(barrier, 1, PMPI_Barrier, (MPI_Comm c), (MPI_Comm), (c))
MSGF_WRAP(allgather, 1, PMPI_Allgather,
          (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c),
          (const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm), (s, sn, st, r, rn, rt, c))
MSGF_WRAP(alltoall, 1, PMPI_Alltoall,
          (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c),
          (const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm), (s, sn, st, r, rn, rt, c))
MSGF_WRAP(alltoallv, 1, PMPI_Alltoallv,
          (const void *s, const int *sc, const int *sd, MPI_Datatype st, void *r, const int *rn, const int *rd,
           MPI_Datatype rt, MPI_Comm c),
          (const void *, const int *, const int *, MPI_Datatype, void *, const int *, const int *, MPI_Datatype,
           MPI_Comm),
          (s, sc, sd, st, r, rn, rd, rt, c))
MSGF_WRAP(gather, 1, PMPI_Gather,
          (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm c),
          (const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm),
          (s, sn, st, r, rn, rt, root, c))
MSGF_WRAP(gatherv, 1, PMPI_Gatherv,
          (const void *s, int sn, MPI_Datatype st, void *r, const int *rn, const int *rd, MPI_Datatype rt, int root,
           MPI_Comm c),
          (const void *, int, MPI_Datatype, void *, const int *, const int *, MPI_Datatype, int, MPI_Comm),
          (s, sn, st, r, rn, rd, rt, root, c))
MSGF_WRAP(iallreduce, 0, PMPI_Iallreduce,
          (const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c, MPI_Request *q),
          (const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request *), (s, r, n, t, o, c, q))
MSGF_WRAP(iallgather, 0, PMPI_Iallgather,
          (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c, MPI_Request *q),
          (const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm, MPI_Request *),
          (s, sn, st, r, rn, rt, c, q))
MSGF_WRAP(isend, 0, PMPI_Isend,
          (const void *b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c, MPI_Request *q),
          (const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *), (b, n, t, dest, tag, c, q))
MSGF_WRAP(issend, 0, PMPI_Issend,
          (const void *b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c, MPI_Request *q),
          (const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *), (b, n, t, dest, tag, c, q))
MSGF_WRAP(irecv, 0, PMPI_Irecv, (void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Request *q),
          (void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *), (b, n, t, src, tag, c, q))
MSGF_WRAP(wait, 1, PMPI_Wait, (MPI_Request *q, MPI_Status *s), (MPI_Request *, MPI_Status *), (q, s))
MSGF_WRAP(waitall, 1, PMPI_Waitall, (int n, MPI_Request *q, MPI_Status *s), (int, MPI_Request *, MPI_Status *),
          (n, q, s))
MSGF_WRAP(waitsome, 1, PMPI_Waitsome, (int n, MPI_Request *q, int *o, int *i, MPI_Status *s),
          (int, MPI_Request *, int *, int *, MPI_Status *), (n, q, o, i, s))
MSGF_WRAP(fetch_and_op, 0, PMPI_Fetch_and_op,
          (const void *o, void *r, MPI_Datatype t, int target, MPI_Aint disp, MPI_Op op, MPI_Win w),
          (const void *, void *, MPI_Datatype, int, MPI_Aint, MPI_Op, MPI_Win), (o, r, t, target, disp, op, w))
MSGF_WRAP(win_lock_all, 0, PMPI_Win_lock_all, (int a, MPI_Win w), (int, MPI_Win), (a, w))
MSGF_WRAP(win_flush, 1, PMPI_Win_flush, (int r, MPI_Win w), (int, MPI_Win), (r, w))
MSGF_WRAP(win_unlock_all, 1, PMPI_Win_unlock_all, (MPI_Win w), (MPI_Win), (w))

/* A Test fails only when it completed its request (one still pending would be abandoned by a runtime that believes
 * it failed), and only such a Test is counted. */
MSGF_EXPORT int PMPI_Test(MPI_Request *q, int *flag, MPI_Status *s)
{
    MSGF_REAL(PMPI_Test, (MPI_Request *, int *, MPI_Status *));
    const void *ret = __builtin_return_address(0);
    int rc = real_PMPI_Test(q, flag, s);
    if (rc != MPI_SUCCESS || !*flag) return rc;
    int fail = msgf_decide(MSGF_test, ret, 1);
    return fail ? fail : rc;
}
