/* Several threads of each rank (MPI_THREAD_MULTIPLE) open, set a view, write, set atomicity, sync, get the size
 * of and close DIFFERENT files at once, again and again: each thread on its own duplicate of MPI_COMM_WORLD (the
 * collective calls of one communicator must not run concurrently). Then each reads its file back through a second
 * open and checks every value. With the runtime preloaded and staging on, the stage module's per-handle state is
 * reached from every thread while others open and close; under ThreadSanitizer a race on it is reported.
 *
 * Usage `stage_threads DIR THREADS ITERATIONS`. File DIR/stage_threads.T.(I%2): every rank writes stripes of BLOCK
 * ints in turn (view: BLOCK ints, extent BLOCK*nprocs), STRIPES by one collective write, one more by an independent
 * write in atomic mode. Rank 0 prints {"threads", "iterations", "mismatches", "errors"} (sums over the ranks);
 * exit status 0 when both are 0. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

enum { BLOCK = 256, STRIPES = 8, MAX_THREADS = 16, MAX_ITERATIONS = 1024 };

static const char *dir;
static int rank, nprocs, iterations;

typedef struct {
    int t;
    MPI_Comm comm;
    long mismatches, errors;
} worker_t;

/* The value of index j of rank r's part of thread t's file in iteration it: no two writes leave the same value. */
static int value(int t, int it, int r, int j) { return 1 + j + 4096 * (r + 16 * (it + MAX_ITERATIONS * t)); }

static void count(worker_t *w, int rc)
{
    if (rc != MPI_SUCCESS) w->errors++;
}

/* Write phase: a collective write (staged), an independent write in atomic mode (not staged: it waits for the
 * thread's staged data), sync-barrier-sync, the size, close. */
static void write_file(worker_t *w, const char *path, int it, MPI_Datatype stripe, int *buf)
{
    MPI_File fh;
    int rc = MPI_File_open(w->comm, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    count(w, rc);
    if (rc != MPI_SUCCESS) return;
    MPI_Offset disp = (MPI_Offset)rank * BLOCK * sizeof(int);
    count(w, MPI_File_set_view(fh, disp, MPI_INT, stripe, "native", MPI_INFO_NULL));
    for (int j = 0; j < (STRIPES + 1) * BLOCK; j++) buf[j] = value(w->t, it, rank, j);
    count(w, MPI_File_write_all(fh, buf, STRIPES * BLOCK, MPI_INT, MPI_STATUS_IGNORE));
    count(w, MPI_File_set_atomicity(fh, 1));
    count(w, MPI_File_write_at(fh, STRIPES * BLOCK, buf + STRIPES * BLOCK, BLOCK, MPI_INT, MPI_STATUS_IGNORE));
    count(w, MPI_File_set_atomicity(fh, 0));
    count(w, MPI_File_sync(fh));
    MPI_Barrier(w->comm);
    count(w, MPI_File_sync(fh));
    MPI_Offset size = -1;
    count(w, MPI_File_get_size(fh, &size));
    if (size != (MPI_Offset)((STRIPES + 1) * BLOCK * nprocs * sizeof(int))) w->mismatches++;
    count(w, MPI_File_close(&fh));
}

/* Read phase: every rank reads the whole file and checks every rank's values. */
static void check_file(worker_t *w, const char *path, int it, int *all)
{
    MPI_File fh;
    int n = (STRIPES + 1) * BLOCK * nprocs, rc = MPI_File_open(w->comm, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    count(w, rc);
    if (rc != MPI_SUCCESS) return;
    for (int p = 0; p < n; p++) all[p] = 0;
    count(w, MPI_File_read_at_all(fh, 0, all, n, MPI_INT, MPI_STATUS_IGNORE));
    for (int p = 0; p < n; p++) {
        int stripe = p / (BLOCK * nprocs), in = p % (BLOCK * nprocs);
        if (all[p] != value(w->t, it, in / BLOCK, stripe * BLOCK + in % BLOCK)) w->mismatches++;
    }
    count(w, MPI_File_close(&fh));
}

static void *worker(void *arg)
{
    worker_t *w = arg;
    MPI_Datatype block, stripe;
    MPI_Type_contiguous(BLOCK, MPI_INT, &block);
    MPI_Type_create_resized(block, 0, (MPI_Aint)BLOCK * nprocs * sizeof(int), &stripe);
    MPI_Type_commit(&stripe);
    MPI_Type_free(&block);
    int *buf = malloc((STRIPES + 1) * BLOCK * sizeof(int));
    int *all = malloc((size_t)(STRIPES + 1) * BLOCK * nprocs * sizeof(int));
    char path[4096];
    for (int it = 0; it < iterations && buf && all; it++) {
        snprintf(path, sizeof path, "%s/stage_threads.%d.%d", dir, w->t, it % 2);
        write_file(w, path, it, stripe, buf);
        check_file(w, path, it, all);
    }
    if (!buf || !all) w->errors++;
    free(buf);
    free(all);
    MPI_Type_free(&stripe);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    int threads = argc == 4 ? atoi(argv[2]) : 0;
    iterations = argc == 4 ? atoi(argv[3]) : 0;
    if (provided != MPI_THREAD_MULTIPLE || threads < 1 || threads > MAX_THREADS || iterations < 1 ||
        iterations > MAX_ITERATIONS || nprocs > 16) {
        if (rank == 0)
            fprintf(stderr, "usage: stage_threads DIR THREADS(1-%d) ITERATIONS(1-%d), at most 16 ranks "
                            "(needs MPI_THREAD_MULTIPLE; provided %d)\n", MAX_THREADS, MAX_ITERATIONS, provided);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    dir = argv[1];
    /* MPICH's ROMIO creates its global mutex at the first MPI-IO call of the process without synchronization: two
     * threads making that first call at once may both initialize it and both enter (a hang or a race inside the
     * library, not ours). The first call is therefore made here, before the threads start. */
    char first[4096];
    snprintf(first, sizeof first, "%s/stage_threads.first.%d", dir, rank);
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_SELF, first, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_DELETE_ON_CLOSE,
                      MPI_INFO_NULL, &fh) == MPI_SUCCESS)
        MPI_File_close(&fh);
    worker_t w[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    for (int t = 0; t < threads; t++) {
        w[t] = (worker_t){t, MPI_COMM_NULL, 0, 0};
        MPI_Comm_dup(MPI_COMM_WORLD, &w[t].comm);
    }
    for (int t = 0; t < threads; t++) pthread_create(&th[t], NULL, worker, &w[t]);
    long mine[2] = {0, 0}, sum[2];
    for (int t = 0; t < threads; t++) {
        pthread_join(th[t], NULL);
        mine[0] += w[t].mismatches;
        mine[1] += w[t].errors;
        MPI_Comm_free(&w[t].comm);
    }
    MPI_Reduce(mine, sum, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("{\"threads\": %d, \"iterations\": %d, \"mismatches\": %ld, \"errors\": %ld}\n", threads, iterations,
               sum[0], sum[1]);
    MPI_Bcast(sum, 2, MPI_LONG, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return sum[0] || sum[1];
}
