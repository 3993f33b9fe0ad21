/* switch_cost: what the first collective writes of a stretch cost after a stretch of other work, per call.
 *
 * The matrix pattern (blocks of --block bytes, --depth per rank and call, ranks interleaved), written with
 * MPI_File_write_all in stretches of --coll calls, each after --other calls of something else:
 *   independent  MPI_File_write of the same pattern (ROMIO: data sieving)
 *   collective   MPI_File_write_all as well (the reference: no switch)
 *   spin         40 us of busy waiting (no I/O, no messages)
 *   p2p          MPI_Sendrecv of one call's bytes between neighbours
 * Every call is timed at the slowest rank (an MPI_Allreduce after it, outside the clock). Rank 0 prints one line
 * per stretch: the MB/s of each collective call. Run it with and without LD_PRELOAD=libiotame.so (a strategy set
 * in IOTAME_CONFIG) to see what the selector's examination sees when it switches strategies (docs/collective.md).
 *
 *   mpiexec -n 2 build/bench/switch_cost spin [--other 200 --coll 12 --rounds 4 --file switch_cost.dat]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double slowest(double t)
{
    double m;
    MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

static void other_call(const char *mode, MPI_File fh, char *buf, int n, char *peer_buf, int rank, int nprocs)
{
    if (strcmp(mode, "independent") == 0) {
        MPI_File_write(fh, buf, n, MPI_BYTE, MPI_STATUS_IGNORE);
    } else if (strcmp(mode, "collective") == 0) {
        MPI_File_write_all(fh, buf, n, MPI_BYTE, MPI_STATUS_IGNORE);
    } else if (strcmp(mode, "spin") == 0) {
        for (double end = MPI_Wtime() + 40e-6; MPI_Wtime() < end;)
            ;
    } else {
        MPI_Sendrecv(buf, n, MPI_BYTE, (rank + 1) % nprocs, 0, peer_buf, n, MPI_BYTE, (rank + nprocs - 1) % nprocs,
                     0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    const char *mode = argc > 1 ? argv[1] : "";
    const char *path = "switch_cost.dat";
    int other = 200, coll = 12, rounds = 4, block = 4096, depth = 4;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--other") == 0) other = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--coll") == 0) coll = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--rounds") == 0) rounds = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--block") == 0) block = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--depth") == 0) depth = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--file") == 0) path = argv[i + 1];
    }
    const char *modes[] = {"independent", "collective", "spin", "p2p"};
    int known = 0;
    for (int i = 0; i < 4; i++) known |= strcmp(mode, modes[i]) == 0;
    if (!known || block < 1 || depth < 1 || coll < 1 || other < 0 || rounds < 1) {
        if (rank == 0) fprintf(stderr, "usage: switch_cost independent|collective|spin|p2p [--other N] [--coll N] "
                                       "[--rounds N] [--block BYTES] [--depth N] [--file PATH]\n");
        MPI_Finalize();
        return 2;
    }
    /* this rank's block of depth consecutive rows of nprocs blocks: one call's part */
    MPI_Datatype rows, tile;
    MPI_Type_vector(depth, block, block * nprocs, MPI_BYTE, &rows);
    MPI_Type_create_resized(rows, 0, (MPI_Aint)block * nprocs * depth, &tile);
    MPI_Type_commit(&tile);
    MPI_File fh;
    MPI_File_delete(path, MPI_INFO_NULL);
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) != MPI_SUCCESS) {
        if (rank == 0) fprintf(stderr, "switch_cost: cannot open %s\n", path);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_File_set_view(fh, (MPI_Offset)rank * block, MPI_BYTE, tile, "native", MPI_INFO_NULL);
    const int n = block * depth;
    char *buf = malloc((size_t)n), *peer_buf = malloc((size_t)n);
    double *mbs = malloc((size_t)coll * sizeof *mbs);
    memset(buf, 'a' + rank % 26, (size_t)n);
    const double call_mb = (double)n * nprocs / 1e6;
    for (int r = 0; r < rounds; r++) {
        double other_seconds = 0;
        for (int i = 0; i < other; i++) {
            double t0 = MPI_Wtime();
            other_call(mode, fh, buf, n, peer_buf, rank, nprocs);
            other_seconds += slowest(MPI_Wtime() - t0);
        }
        for (int i = 0; i < coll; i++) {
            double t0 = MPI_Wtime();
            MPI_File_write_all(fh, buf, n, MPI_BYTE, MPI_STATUS_IGNORE);
            mbs[i] = call_mb / slowest(MPI_Wtime() - t0);
        }
        if (rank == 0) { /* printed after the stretch: output wakes mpiexec's forwarder, which takes a core */
            printf("%s x%d (%.1f ms), then collective:", mode, other, other_seconds * 1e3);
            for (int i = 0; i < coll; i++) printf(" %.0f", mbs[i]);
            printf("\n");
            fflush(stdout);
        }
    }
    MPI_File_close(&fh);
    if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
    MPI_Type_free(&tile);
    MPI_Type_free(&rows);
    free(buf);
    free(peer_buf);
    free(mbs);
    MPI_Finalize();
    return 0;
}
