/* Errors of writes cached at the aggregators reach the ranks whose data failed: usage `agg_fault FILE BLOCK`.
 * Rank r writes BLOCK bytes at file block 3r + 1 with one collective call (under view_based with BLOCK-byte blocks,
 * rank r's data is cached by the aggregator of that block, another rank's process when there are several), then
 * syncs; writes again and closes. Each rank prints one line {"rank": r, "sync": "CLASS", "close": "CLASS"} (the MPI
 * error class names of MPI_SUCCESS, MPI_ERR_NO_SPACE, MPI_ERR_IO, ...), in rank order. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *class_name(int rc)
{
    int c = MPI_SUCCESS;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &c);
    switch (c) {
    case MPI_SUCCESS: return "MPI_SUCCESS";
    case MPI_ERR_NO_SPACE: return "MPI_ERR_NO_SPACE";
    case MPI_ERR_QUOTA: return "MPI_ERR_QUOTA";
    case MPI_ERR_IO: return "MPI_ERR_IO";
    default: return "other";
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc != 3) {
        if (rank == 0) fprintf(stderr, "usage: agg_fault FILE BLOCK\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int block = atoi(argv[2]);
    char *buf = malloc((size_t)block);
    memset(buf, 'a' + rank, (size_t)block);
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 2);
    const MPI_Offset at = (MPI_Offset)(3 * rank + 1) * block;
    int w1 = MPI_File_write_at_all(fh, at, buf, block, MPI_BYTE, MPI_STATUS_IGNORE);
    int sync = MPI_File_sync(fh);
    int w2 = MPI_File_write_at_all(fh, at, buf, block, MPI_BYTE, MPI_STATUS_IGNORE);
    int close = MPI_File_close(&fh);
    for (int r = 0; r < nprocs; r++) {
        if (r == rank)
            printf("{\"rank\": %d, \"write\": \"%s\", \"sync\": \"%s\", \"write2\": \"%s\", \"close\": \"%s\"}\n", rank,
                   class_name(w1), class_name(sync), class_name(w2), class_name(close));
        fflush(stdout);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
