/* Two handles of one file open at once under aggregator caching: usage `agg_two_opens FILE`. The first handle makes
 * one collective write of interleaved pieces (each rank's PIECE bytes, ranks alternating), then a second handle of the
 * same file is opened, read back collectively and closed, then the first; the file must hold the written image.
 * Rank 0 prints {"mismatches": M}. Under staging.collective "auto" without a machine profile, the first write
 * decides for node staging, and the node must count the first handle as no longer caching the file: the second
 * open may cache (the file's statistics show what it was given). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define PIECE 512
#define PIECES 32

static void agg_two_opens_check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "agg_two_opens: %s failed (%d)\n", what, rc);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

static void agg_two_opens_view(MPI_File fh, int rank, int nprocs)
{
    MPI_Datatype piece, tiled;
    MPI_Type_contiguous(PIECE, MPI_BYTE, &piece);
    MPI_Type_create_resized(piece, 0, (MPI_Aint)PIECE * nprocs, &tiled);
    MPI_Type_commit(&tiled);
    agg_two_opens_check(MPI_File_set_view(fh, (MPI_Offset)rank * PIECE, MPI_BYTE, tiled, "native", MPI_INFO_NULL),
                        "set_view");
    MPI_Type_free(&tiled);
    MPI_Type_free(&piece);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 2) {
        if (rank == 0) fprintf(stderr, "usage: agg_two_opens FILE\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    char *mine = malloc(PIECE * PIECES), *back = calloc(PIECE * PIECES, 1);
    for (int i = 0; i < PIECE * PIECES; i++) mine[i] = (char)(rank * 31 + i * 7);
    MPI_File first, second;
    agg_two_opens_check(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &first),
                        "open");
    agg_two_opens_view(first, rank, nprocs);
    agg_two_opens_check(MPI_File_write_all(first, mine, PIECE * PIECES, MPI_BYTE, MPI_STATUS_IGNORE), "write_all");
    agg_two_opens_check(MPI_File_sync(first), "sync");
    MPI_Barrier(MPI_COMM_WORLD);
    agg_two_opens_check(MPI_File_sync(first), "sync");
    agg_two_opens_check(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_RDWR, MPI_INFO_NULL, &second), "second open");
    agg_two_opens_view(second, rank, nprocs);
    agg_two_opens_check(MPI_File_read_all(second, back, PIECE * PIECES, MPI_BYTE, MPI_STATUS_IGNORE), "read_all");
    agg_two_opens_check(MPI_File_close(&second), "second close");
    agg_two_opens_check(MPI_File_close(&first), "close");
    int mismatches = 0, all = 0;
    for (int i = 0; i < PIECE * PIECES; i++) mismatches += back[i] != mine[i];
    MPI_Reduce(&mismatches, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("{\"mismatches\": %d}\n", all);
    free(mine);
    free(back);
    MPI_Finalize();
    return all != 0;
}
