/* One of two jobs that share a knowledge file: usage `knowledge_pair DIR NAME OTHER BLOCK CALLS`.
 *
 * Each rank writes CALLS blocks of BLOCK bytes of DIR/NAME.in with independent calls, reads them back with
 * independent calls (four passes: the throttle's read gate searches its level on them, its signature the size
 * class of BLOCK), then writes DIR/NAME.out with CALLS collective calls of one block per rank (the selector's
 * signature: BLOCK x the process count). Then rank 0 creates DIR/NAME.ready and waits (at most 120 s) for
 * DIR/OTHER.ready: so both jobs have read the knowledge file (MPI_Init, the open) before either saves (the close,
 * MPI_Finalize), whatever the order they were started in. Rank 0 prints {"verified": true|false, "met": true|false}. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned char value(int rank, int call, long i) { return (unsigned char)(rank * 7 + call * 3 + i % 251); }

static void fill(unsigned char *buf, int rank, int call, long n)
{
    for (long i = 0; i < n; i++) buf[i] = value(rank, call, i);
}

static int check(const unsigned char *buf, int rank, int call, long n)
{
    for (long i = 0; i < n; i++)
        if (buf[i] != value(rank, call, i)) return 0;
    return 1;
}

/* Rank 0 announces itself and waits for the other job: 1 when it came. */
static int meet(const char *dir, const char *name, const char *other)
{
    char mine[4096], theirs[4096];
    snprintf(mine, sizeof mine, "%s/%s.ready", dir, name);
    snprintf(theirs, sizeof theirs, "%s/%s.ready", dir, other);
    FILE *f = fopen(mine, "w");
    if (f) fclose(f);
    for (int i = 0; i < 12000; i++) {
        if (access(theirs, F_OK) == 0) return 1;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 6) {
        if (rank == 0) fprintf(stderr, "usage: knowledge_pair DIR NAME OTHER BLOCK CALLS\n");
        MPI_Finalize();
        return 2;
    }
    long n = atol(argv[4]);
    int calls = atoi(argv[5]), ok = 1;
    unsigned char *buf = malloc((size_t)n);
    char in[4096], out[4096];
    snprintf(in, sizeof in, "%s/%s.in", argv[1], argv[2]);
    snprintf(out, sizeof out, "%s/%s.out", argv[1], argv[2]);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, in, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    for (int c = 0; c < calls; c++) {
        fill(buf, rank, c, n);
        MPI_File_write_at(fh, ((MPI_Offset)c * nprocs + rank) * n, buf, (int)n, MPI_BYTE, MPI_STATUS_IGNORE);
    }
    for (int pass = 0; pass < 4; pass++)
        for (int c = 0; c < calls; c++) {
            memset(buf, 0, (size_t)n);
            MPI_File_read_at(fh, ((MPI_Offset)c * nprocs + rank) * n, buf, (int)n, MPI_BYTE, MPI_STATUS_IGNORE);
            ok &= check(buf, rank, c, n);
        }
    MPI_File_close(&fh);
    MPI_File_open(MPI_COMM_WORLD, out, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    for (int c = 0; c < calls; c++) {
        fill(buf, rank, c, n);
        MPI_File_write_at_all(fh, ((MPI_Offset)c * nprocs + rank) * n, buf, (int)n, MPI_BYTE, MPI_STATUS_IGNORE);
    }
    MPI_File_close(&fh);
    int met = rank == 0 ? meet(argv[1], argv[2], argv[3]) : 1, all = 0;
    MPI_Reduce(&ok, &all, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("{\"verified\": %s, \"met\": %s}\n", all ? "true" : "false", met ? "true" : "false");
    free(buf);
    MPI_Finalize();
    return 0;
}
