/* Whether glibc serves an allocation of SIZE bytes made after MPI_Init with mmap (above its mmap threshold) or
 * from the heap: usage `heap_probe SIZE`, prints {"mmapped": true|false} on rank 0. */
#include <malloc.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    size_t size = argc > 1 ? strtoull(argv[1], NULL, 10) : 8u << 20;
    size_t before = mallinfo2().hblkhd; /* bytes in mmapped chunks */
    char *volatile p = malloc(size);
    size_t after = mallinfo2().hblkhd;
    if (rank == 0) printf("{\"mmapped\": %s}\n", p && after - before >= size ? "true" : "false");
    free(p);
    MPI_Finalize();
    return 0;
}
