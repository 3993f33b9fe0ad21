/* The wrappers' cost: N independent writes of SIZE bytes with MPI_File_write_at into the page cache (no sync),
 * cycling over a WINDOW so dirty-page writeback does not grow with N. Prints the loop's seconds.
 * Usage: overhead_writes FILE [N] [SIZE] [WINDOW] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc < 2) {
        fprintf(stderr, "usage: overhead_writes FILE [N] [SIZE] [WINDOW]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long n = argc > 2 ? atol(argv[2]) : 1000000, size = argc > 3 ? atol(argv[3]) : 4096;
    long window = argc > 4 ? atol(argv[4]) : 256L << 20, slots = window / size;
    /* Page-aligned: the kernel's copy of a misaligned buffer costs what the heap's layout (which a preloaded
     * library shifts) makes it cost, and the bench would measure that layout rather than the wrappers. */
    char *buf = NULL;
    if (posix_memalign((void **)&buf, 4096, (size_t)size) != 0) MPI_Abort(MPI_COMM_WORLD, 1);
    memset(buf, 'x', (size_t)size);
    MPI_File fh;
    MPI_File_open(MPI_COMM_SELF, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    double t0 = MPI_Wtime();
    for (long i = 0; i < n; i++)
        MPI_File_write_at(fh, (MPI_Offset)(i % slots) * size, buf, (int)size, MPI_BYTE, MPI_STATUS_IGNORE);
    double t = MPI_Wtime() - t0;
    MPI_File_close(&fh);
    printf("%.6f\n", t);
    free(buf);
    MPI_Finalize();
    return 0;
}
