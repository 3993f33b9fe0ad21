/* The throttle's liveness program: usage `throttle_mix DIR ROUNDS BLOCK`.
 *
 * The ranks do what makes a token scheme deadlock if it can: in each round, rank r writes its blocks of the shared
 * file DIR/shared.dat and of its own file DIR/own.<r> in an order that depends on r (even ranks shared first,
 * ascending; odd ranks own first, descending), reads them back in the other order, and rank 1 skips every other
 * round's reads; the last rank does no I/O at all (a rank with nothing to write); rank 0 leaves the loop one round
 * early and waits in the collective close while the others still do I/O. Between rounds a barrier, as in the
 * paper's phases; a collective write_all of one block per rank at the end (served by whatever strategy the
 * configuration routes). Every read is checked; rank 0 then reads both kinds of file back with plain pread and
 * prints {"verified": true|false, "rounds": R}. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

enum { BLOCKS = 4 };

static unsigned char value(int rank, int block, long i) { return (unsigned char)(rank * 13 + block * 5 + i % 251); }

static void fill(unsigned char *buf, int rank, int block, long n)
{
    for (long i = 0; i < n; i++) buf[i] = value(rank, block, i);
}

static int check(const unsigned char *buf, int rank, int block, long n)
{
    for (long i = 0; i < n; i++)
        if (buf[i] != value(rank, block, i)) return 0;
    return 1;
}

/* Blocks of rank r: shared file at (r * BLOCKS + b) * n, own file at b * n. */
static int pass(MPI_File shared, MPI_File own, int rank, long n, int write, int shared_first, int ascending)
{
    unsigned char *buf = malloc((size_t)n);
    int ok = 1;
    for (int which = 0; which < 2; which++) {
        int is_shared = (which == 0) == shared_first;
        MPI_File fh = is_shared ? shared : own;
        for (int k = 0; k < BLOCKS; k++) {
            int b = ascending ? k : BLOCKS - 1 - k;
            MPI_Offset off = ((is_shared ? (MPI_Offset)rank * BLOCKS : 0) + b) * n;
            if (write) {
                fill(buf, rank, b, n);
                MPI_File_write_at(fh, off, buf, (int)n, MPI_BYTE, MPI_STATUS_IGNORE);
            } else {
                memset(buf, 0, (size_t)n);
                MPI_File_read_at(fh, off, buf, (int)n, MPI_BYTE, MPI_STATUS_IGNORE);
                ok &= check(buf, rank, b, n);
            }
        }
    }
    free(buf);
    return ok;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 4) {
        if (rank == 0) fprintf(stderr, "usage: throttle_mix DIR ROUNDS BLOCK\n");
        MPI_Finalize();
        return 2;
    }
    int rounds = atoi(argv[2]);
    long n = atol(argv[3]);
    char path[4096], own_path[4096];
    snprintf(path, sizeof path, "%s/shared.dat", argv[1]);
    snprintf(own_path, sizeof own_path, "%s/own.%d", argv[1], rank);
    MPI_File shared, own;
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &shared);
    MPI_File_open(MPI_COMM_SELF, own_path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &own);
    int ok = 1, idle = nprocs > 2 && rank == nprocs - 1;
    int even = rank % 2 == 0;
    /* The collective part first: every rank, one block each (the last rank's block is written here only). */
    unsigned char *one = malloc((size_t)n);
    fill(one, rank, 99, n);
    MPI_File_write_at_all(shared, ((MPI_Offset)nprocs * BLOCKS + rank) * n, one, (int)n, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = 0; r < rounds; r++) {
        if (rank == 0 && r == rounds - 1) break; /* finishes early */
        if (!idle) {
            ok &= pass(shared, own, rank, n, 1, even, even);
            if (!(rank == 1 && r % 2)) ok &= pass(shared, own, rank, n, 0, !even, !even);
        }
        if (r < rounds - 1) MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_File_close(&own);
    MPI_File_close(&shared); /* rank 0 waits here while the others do their last round */
    /* The final check after everyone is done: every rank's own file and the shared file, read by plain pread. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        unsigned char *buf = malloc((size_t)n);
        int fd = open(path, O_RDONLY);
        for (int p = 0; p < nprocs && fd >= 0; p++) {
            if (pread(fd, buf, (size_t)n, ((off_t)nprocs * BLOCKS + p) * n) != n || !check(buf, p, 99, n)) ok = 0;
            if (nprocs > 2 && p == nprocs - 1) continue; /* the idle rank wrote no blocks */
            for (int b = 0; b < BLOCKS; b++)
                if (pread(fd, buf, (size_t)n, ((off_t)p * BLOCKS + b) * n) != n || !check(buf, p, b, n)) ok = 0;
        }
        if (fd >= 0) close(fd);
        free(buf);
    }
    free(one);
    int all = 0;
    MPI_Reduce(&ok, &all, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("{\"verified\": %s, \"rounds\": %d}\n", all ? "true" : "false", rounds);
    MPI_Finalize();
    return 0;
}
