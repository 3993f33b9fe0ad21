/* A job that ends before MPI_Finalize: usage `abort_modes MODE FILE`.
 *
 * Every rank writes 1000 * (rank + 1) bytes at its own offset of FILE (MPI_File_write_at, then closes it), then:
 *   abort        rank 1 calls MPI_Abort(MPI_COMM_WORLD, 7); rank 0 waits in a barrier
 *   segv         rank 0 raises SIGSEGV; rank 1 waits in a barrier
 *   fault        rank 0 writes through a null pointer (a real SIGSEGV); rank 1 waits in a barrier
 *   overflow     rank 0 overflows its stack (a SIGSEGV the handler must take on another stack)
 *   blocked      as segv, but rank 0 first makes the runtime's temporary name for its partial statistics
 *                ($IOTAME_STATS.partial.0.tmpPID) a FIFO nobody reads: the write blocks, the alarm must end it
 *   term         rank 0 raises SIGTERM; rank 1 waits in a barrier
 *   own-handler  as segv, but every rank installed a SIGSEGV handler before MPI_Init that prints
 *                "own handler" and exits with status 42
 *   exit         every rank calls exit(3) without MPI_Finalize
 *   wait         rank 0 also opens 200 files FILE.N of its own (its statistics take longer to write), then every
 *                rank creates FILE.ready.RANK and sleeps (up to a minute) until a signal ends the job
 *   normal       MPI_Finalize, exit status 0 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void own_handler(int sig)
{
    (void)sig;
    static const char msg[] = "own handler\n";
    if (write(1, msg, sizeof msg - 1) < 0) _exit(43);
    _exit(42);
}

/* Recurses until the stack is exhausted (the volatile buffer keeps each frame). */
static int deep(int n)
{
    volatile char frame[4096];
    frame[0] = (char)n;
    return n < (1 << 30) ? deep(n + 1) + frame[0] : 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: abort_modes MODE FILE\n");
        return 2;
    }
    const char *mode = argv[1];
    if (strcmp(mode, "own-handler") == 0) signal(SIGSEGV, own_handler);
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    static char data[2000];
    memset(data, 'a' + rank, sizeof data);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, argv[2], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    MPI_File_write_at(fh, (MPI_Offset)rank * 2000, data, 1000 * (rank + 1), MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
    if (strcmp(mode, "abort") == 0) {
        if (rank == 1) MPI_Abort(MPI_COMM_WORLD, 7);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "segv") == 0 || strcmp(mode, "own-handler") == 0) {
        if (rank == 0) raise(SIGSEGV);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "fault") == 0) {
        if (rank == 0) *(volatile int *)(argc > 99 ? argv[0] : NULL) = 1;
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "overflow") == 0) {
        if (rank == 0) deep(0);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "blocked") == 0) {
        if (rank == 0) {
            char fifo[4096];
            snprintf(fifo, sizeof fifo, "%s.partial.0.tmp%d", getenv("IOTAME_STATS"), (int)getpid());
            if (mkfifo(fifo, 0600) != 0) perror("mkfifo");
            raise(SIGSEGV);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "term") == 0) {
        if (rank == 0) raise(SIGTERM);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "exit") == 0) {
        exit(3);
    } else if (strcmp(mode, "wait") == 0) {
        for (int i = 0; rank == 0 && i < 200; i++) {
            char name[4096];
            snprintf(name, sizeof name, "%s.%d", argv[2], i);
            MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
            MPI_File_close(&fh);
        }
        char ready[4096];
        snprintf(ready, sizeof ready, "%s.ready.%d", argv[2], rank);
        FILE *f = fopen(ready, "w");
        if (f) fclose(f);
        for (int i = 0; i < 600; i++) usleep(100000);
    }
    MPI_Finalize();
    return 0;
}
