/* A collective write that fails on disk: usage `io_error FILE [LIMIT]`.
 *
 * After MPI_Init (whose shared-memory set-up needs large files) every rank limits the size of the files it may write
 * to LIMIT bytes (default 1 MiB; 0: no limit, for storage that fails by itself, such as a full pool) (RLIMIT_FSIZE,
 * SIGXFSZ ignored, so a write past it fails with EFBIG), installs an error handler on the file that counts its calls
 * and returns, and writes 1 MiB per rank with MPI_File_write_at_all: the second rank's data lies past the default
 * limit. Rank 0 prints {"ranks": N, "failed": F, "handler_calls": H, "classes": [...]}: how many ranks got an error
 * code back, how many times the handler ran, and each rank's error class. When the open fails (permission), it prints
 * {"ranks": N, "open_failed": F, "classes": [...], "class_access": C} instead. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static int handler_calls;

static void count(MPI_File *fh, int *code, ...)
{
    (void)fh;
    (void)code;
    handler_calls++;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 2) {
        if (rank == 0) fprintf(stderr, "usage: io_error FILE\n");
        MPI_Finalize();
        return 2;
    }
    signal(SIGXFSZ, SIG_IGN);
    rlim_t limit = argc > 2 ? (rlim_t)strtoull(argv[2], NULL, 10) : 1 << 20;
    struct rlimit lim = {limit ? limit : RLIM_INFINITY, limit ? limit : RLIM_INFINITY};
    setrlimit(RLIMIT_FSIZE, &lim);
    int *classes = malloc(sizeof(int) * (size_t)nprocs);

    MPI_File fh;
    if (rank == 0) MPI_File_delete(argv[1], MPI_INFO_NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    int orc = MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    if (orc != MPI_SUCCESS) {
        int ocls, failed = 1, all_failed = 0;
        MPI_Error_class(orc, &ocls);
        MPI_Reduce(&failed, &all_failed, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Gather(&ocls, 1, MPI_INT, classes, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            printf("{\"ranks\": %d, \"open_failed\": %d, \"classes\": [", nprocs, all_failed);
            for (int r = 0; r < nprocs; r++) printf("%s%d", r ? ", " : "", classes[r]);
            printf("], \"class_access\": %d}\n", MPI_ERR_ACCESS);
        }
        free(classes);
        MPI_Finalize();
        return 0;
    }
    MPI_Errhandler eh;
    MPI_File_create_errhandler(count, &eh);
    MPI_File_set_errhandler(fh, eh);

    const int n = 1 << 20;
    char *buf = malloc(n);
    memset(buf, 'a' + rank, n);
    int rc = MPI_File_write_at_all(fh, (MPI_Offset)rank * n, buf, n, MPI_BYTE, MPI_STATUS_IGNORE);
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);

    int failed = rc != MPI_SUCCESS, all_failed = 0, calls = 0;
    MPI_Reduce(&failed, &all_failed, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&handler_calls, &calls, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Gather(&cls, 1, MPI_INT, classes, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("{\"ranks\": %d, \"failed\": %d, \"handler_calls\": %d, \"classes\": [", nprocs, all_failed, calls);
        for (int r = 0; r < nprocs; r++) printf("%s%d", r ? ", " : "", classes[r]);
        printf("], \"class_io\": %d, \"class_no_space\": %d}\n", MPI_ERR_IO, MPI_ERR_NO_SPACE);
    }
    MPI_File_close(&fh);
    MPI_Errhandler_free(&eh);
    free(buf);
    free(classes);
    MPI_Finalize();
    return 0;
}
