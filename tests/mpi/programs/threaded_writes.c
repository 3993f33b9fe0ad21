/* Two threads per rank write at the same time under MPI_THREAD_MULTIPLE: the statistics must count every
 * call exactly. Usage `threaded_writes FILE WRITES_PER_THREAD`; each write is 512 bytes at its own offset. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 2
#define SIZE 512

static MPI_File fh;
static int rank, nprocs, writes;

static void *writer(void *arg)
{
    int t = (int)(long)arg;
    char buf[SIZE];
    memset(buf, 'a' + t, sizeof buf);
    for (int i = 0; i < writes; i++) {
        MPI_Offset off = (((MPI_Offset)i * nprocs + rank) * THREADS + t) * SIZE;
        MPI_File_write_at(fh, off, buf, SIZE, MPI_BYTE, MPI_STATUS_IGNORE);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 3 || provided != MPI_THREAD_MULTIPLE) {
        if (rank == 0) fprintf(stderr, "usage: threaded_writes FILE WRITES (needs MPI_THREAD_MULTIPLE)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    writes = atoi(argv[2]);
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, writer, (void *)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    MPI_File_close(&fh);
    MPI_Finalize();
    return 0;
}
