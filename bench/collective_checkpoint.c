/* A checkpoint-style job for the selector's cost where there is nothing to choose (issue 20): every checkpoint is a
 * file of its own that sees one collective call between open and close, through the individual file pointer
 * (MPI_File_open, set_view, MPI_File_seek, MPI_File_write_all, MPI_File_sync, MPI_File_close), noncontiguous in
 * memory (every other block of the buffer) and in the file (rank r's block j at (j * nprocs + r) * BLOCK).
 *
 * Prints one JSON object: {"nprocs", "block", "blocks", "files", "bytes_per_file", "seconds": [per file, open to
 * close, the slowest rank's], "median_seconds"}. Usage: collective_checkpoint DIR BLOCK BLOCKS FILES */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc < 5) {
        if (rank == 0) fprintf(stderr, "usage: collective_checkpoint DIR BLOCK BLOCKS FILES\n");
        MPI_Finalize();
        return 2;
    }
    const int block = atoi(argv[2]), blocks = atoi(argv[3]), files = atoi(argv[4]);
    char *buf = malloc((size_t)2 * block * blocks);
    double *seconds = calloc((size_t)files, sizeof *seconds);
    for (size_t i = 0; i < (size_t)2 * block * blocks; i++) buf[i] = (char)(i * 31 + rank);
    MPI_Datatype memtype, filetype, tiled;
    MPI_Type_vector(blocks, block, 2 * block, MPI_BYTE, &memtype); /* every other block of the buffer */
    MPI_Type_commit(&memtype);
    MPI_Type_vector(blocks, block, block * np, MPI_BYTE, &filetype);
    MPI_Type_create_resized(filetype, 0, (MPI_Aint)block * np * blocks, &tiled);
    MPI_Type_commit(&tiled);
    for (int k = 0; k < files; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/chk_%04d.dat", argv[1], k);
        MPI_File fh;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
        MPI_File_set_view(fh, (MPI_Offset)rank * block, MPI_BYTE, tiled, "native", MPI_INFO_NULL);
        MPI_File_seek(fh, 0, MPI_SEEK_SET);
        MPI_File_write_all(fh, buf, 1, memtype, MPI_STATUS_IGNORE);
        MPI_File_sync(fh);
        MPI_File_close(&fh);
        double t = MPI_Wtime() - t0;
        MPI_Reduce(&t, &seconds[k], 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    }
    if (rank == 0) {
        printf("{\"nprocs\": %d, \"block\": %d, \"blocks\": %d, \"files\": %d, \"bytes_per_file\": %lld, \"seconds\": [",
               np, block, blocks, files, (long long)block * blocks * np);
        for (int k = 0; k < files; k++) printf("%s%.6f", k ? ", " : "", seconds[k]);
        qsort(seconds, (size_t)files, sizeof *seconds, by_value);
        printf("], \"median_seconds\": %.6f}\n", files ? seconds[files / 2] : 0.0);
    }
    for (int k = 0; rank == 0 && k < files; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/chk_%04d.dat", argv[1], k);
        remove(path);
    }
    MPI_Type_free(&memtype);
    MPI_Type_free(&filetype);
    MPI_Type_free(&tiled);
    free(buf);
    free(seconds);
    MPI_Finalize();
    return 0;
}
