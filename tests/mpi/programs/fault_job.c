/* The fault matrix's program: usage `fault_job DIR write|read`.
 *
 * Every rank's part of a call is BLOCKS blocks of BLOCK bytes, the ranks' blocks interleaved by a file view
 * (displacement rank*BLOCK, filetype BLOCK bytes resized to nprocs*BLOCK), CALLS collective calls one after the
 * other, each int of rank r's part of call c holding value(r, c, j). First DIR/keep.dat is written whole, synced and
 * closed: a file the fault must not touch. Then DIR/fault.dat:
 *   write: open; call 0; sync, barrier, sync (durable before the fault); arm the faults; calls 1..CALLS-1 with
 *          MPI_File_write_at_all; set_size to the full size; sync; close.
 *   read:  open; every call written; sync; close; open read-only; arm; every call read back with
 *          MPI_File_read_at_all, a read that returns success checked value by value; close.
 * The faults are armed through iotame_fault_arm() of the preloaded test fault injector (libiotame_faults.so) when
 * it is there, so nothing before that point is faulted, and disarmed through iotame_fault_disarm() (where the injector
 * has it: libiotame_msgfaults.so) after the last step, so that every fault lands in a step. Every rank notes each step's error class (0: success); rank
 * 0 prints {"nprocs": N, "steps": [names], "classes": [[rank 0's], ...], "bad": [values read wrong per rank],
 * "class": {"io": MPI_ERR_IO, ...: this library's numbers}}.
 * Exit status 0 whatever the errors: the caller judges them. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BLOCK = 4096, BLOCKS = 16, CALLS = 4, MAX_STEPS = 16 };
#define INTS (BLOCK * BLOCKS / (int)sizeof(int))

static int rank, nprocs, nsteps, classes[MAX_STEPS];
static const char *steps[MAX_STEPS];

static int value(int r, int c, int j) { return 1 + j + 100003 * (c + 16 * r); }

/* Notes a step's outcome; the return code passes through. */
static int note(const char *step, int rc)
{
    int cls = 0;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    if (nsteps < MAX_STEPS) {
        steps[nsteps] = step;
        classes[nsteps++] = cls;
    }
    return rc;
}

static MPI_Datatype stripe_type(void)
{
    MPI_Datatype block, stripe;
    MPI_Type_contiguous(BLOCK, MPI_BYTE, &block);
    MPI_Type_create_resized(block, 0, (MPI_Aint)BLOCK * nprocs, &stripe);
    MPI_Type_commit(&stripe);
    MPI_Type_free(&block);
    return stripe;
}

static void fill(int *buf, int c)
{
    for (int j = 0; j < INTS; j++) buf[j] = value(rank, c, j);
}

static int open_view(const char *path, int amode, MPI_Datatype stripe, MPI_File *fh)
{
    int rc = MPI_File_open(MPI_COMM_WORLD, path, amode, MPI_INFO_NULL, fh);
    if (rc == MPI_SUCCESS) rc = MPI_File_set_view(*fh, (MPI_Offset)rank * BLOCK, MPI_BYTE, stripe, "native",
                                                   MPI_INFO_NULL);
    return rc;
}

static int write_call(MPI_File fh, int *buf, int c)
{
    fill(buf, c);
    return MPI_File_write_at_all(fh, (MPI_Offset)c * BLOCK * BLOCKS, buf, BLOCK * BLOCKS, MPI_BYTE,
                                 MPI_STATUS_IGNORE);
}

/* keep.dat: every call, synced and closed before anything is faulted. */
static void write_keep(const char *dir, MPI_Datatype stripe, int *buf)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/keep.dat", dir);
    MPI_File fh;
    if (note("keep open", open_view(path, MPI_MODE_CREATE | MPI_MODE_WRONLY, stripe, &fh)) != MPI_SUCCESS) return;
    for (int c = 0; c < CALLS; c++) write_call(fh, buf, c);
    note("keep sync", MPI_File_sync(fh));
    note("keep close", MPI_File_close(&fh));
}

/* The barriers are PMPI_'s: the runtime forwards the program's own MPI_Barrier (intercept/sync.c), and the one
 * after arming would be the first call that the message fault injector sees coming from the runtime. */
static void arm(void)
{
    PMPI_Barrier(MPI_COMM_WORLD);
    void (*arm_faults)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "iotame_fault_arm");
    if (arm_faults) arm_faults();
    PMPI_Barrier(MPI_COMM_WORLD);
}

static const char *const write_steps[CALLS] = {"write 0", "write 1", "write 2", "write 3"};
static const char *const read_steps[CALLS] = {"read 0", "read 1", "read 2", "read 3"};

static void write_mode(const char *path, MPI_Datatype stripe, int *buf)
{
    MPI_File fh;
    if (note("open", open_view(path, MPI_MODE_CREATE | MPI_MODE_RDWR, stripe, &fh)) != MPI_SUCCESS) return;
    note(write_steps[0], write_call(fh, buf, 0));
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    arm();
    for (int c = 1; c < CALLS; c++) note(write_steps[c], write_call(fh, buf, c));
    note("set_size", MPI_File_set_size(fh, (MPI_Offset)CALLS * BLOCK * BLOCKS * nprocs));
    note("sync", MPI_File_sync(fh));
    note("close", MPI_File_close(&fh));
}

static long read_mode(const char *path, MPI_Datatype stripe, int *buf)
{
    MPI_File fh;
    long bad = 0;
    if (open_view(path, MPI_MODE_CREATE | MPI_MODE_WRONLY, stripe, &fh) != MPI_SUCCESS) return note("prepare", 1), 0;
    for (int c = 0; c < CALLS; c++) write_call(fh, buf, c);
    MPI_File_sync(fh);
    MPI_File_close(&fh);
    arm();
    if (note("open", open_view(path, MPI_MODE_RDONLY, stripe, &fh)) != MPI_SUCCESS) return 0;
    for (int c = 0; c < CALLS; c++) {
        memset(buf, 0, BLOCK * BLOCKS);
        int rc = note(read_steps[c], MPI_File_read_at_all(fh, (MPI_Offset)c * BLOCK * BLOCKS, buf, BLOCK * BLOCKS,
                                                          MPI_BYTE, MPI_STATUS_IGNORE));
        for (int j = 0; rc == MPI_SUCCESS && j < INTS; j++) bad += buf[j] != value(rank, c, j);
    }
    note("close", MPI_File_close(&fh));
    return bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc != 3 || (strcmp(argv[2], "write") && strcmp(argv[2], "read"))) {
        if (rank == 0) fprintf(stderr, "usage: fault_job DIR write|read\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    MPI_Datatype stripe = stripe_type();
    int *buf = malloc(BLOCK * BLOCKS);
    char path[4096];
    snprintf(path, sizeof path, "%s/fault.dat", argv[1]);
    write_keep(argv[1], stripe, buf);
    long bad = !strcmp(argv[2], "write") ? (write_mode(path, stripe, buf), 0) : read_mode(path, stripe, buf);
    void (*disarm_faults)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "iotame_fault_disarm");
    if (disarm_faults) disarm_faults();
    int *all = malloc(sizeof(int) * MAX_STEPS * nprocs);
    long *bads = malloc(sizeof(long) * nprocs);
    MPI_Gather(classes, MAX_STEPS, MPI_INT, all, MAX_STEPS, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Gather(&bad, 1, MPI_LONG, bads, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("{\"nprocs\": %d, \"steps\": [", nprocs);
        for (int s = 0; s < nsteps; s++) printf("%s\"%s\"", s ? ", " : "", steps[s]);
        printf("], \"classes\": [");
        for (int r = 0; r < nprocs; r++) {
            printf("%s[", r ? ", " : "");
            for (int s = 0; s < nsteps; s++) printf("%s%d", s ? ", " : "", all[r * MAX_STEPS + s]);
            printf("]");
        }
        printf("], \"bad\": [");
        for (int r = 0; r < nprocs; r++) printf("%s%ld", r ? ", " : "", bads[r]);
        printf("], \"class\": {\"io\": %d, \"access\": %d, \"no_space\": %d, \"quota\": %d, \"file\": %d}}\n",
               MPI_ERR_IO, MPI_ERR_ACCESS, MPI_ERR_NO_SPACE, MPI_ERR_QUOTA, MPI_ERR_FILE);
    }
    free(all);
    free(bads);
    free(buf);
    MPI_Type_free(&stripe);
    MPI_Finalize();
    return 0;
}
