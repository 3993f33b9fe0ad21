/* An HDF5 application that never closes its file (tests/preload/test_collective.py): every rank writes its part of
 * CALLS rows of a 2-D dataset, one collective H5Dwrite per row, and calls MPI_Finalize with the file open, so HDF5
 * closes it inside MPI_Finalize.
 *
 *   h5_left_open FILE CALLS     prints {"calls": CALLS} (rank 0) */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { ROW = 1024 }; /* ints per rank and row */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc != 3) {
        if (rank == 0) fprintf(stderr, "usage: h5_left_open FILE CALLS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int calls = atoi(argv[2]);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t file = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hsize_t dims[2] = {(hsize_t)calls, (hsize_t)np * ROW}, count[2] = {1, ROW};
    hid_t space = H5Screate_simple(2, dims, NULL), mem = H5Screate_simple(2, count, NULL);
    hid_t ds = H5Dcreate(file, "d", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    int buf[ROW];
    for (int i = 0; i < ROW; i++) buf[i] = rank * 100000 + i;
    int failed = 0;
    for (int c = 0; c < calls; c++) {
        hsize_t start[2] = {(hsize_t)c, (hsize_t)rank * ROW};
        H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
        failed |= H5Dwrite(ds, H5T_NATIVE_INT, mem, space, dxpl, buf) < 0;
    }
    if (rank == 0) printf("{\"calls\": %d}\n", calls);
    MPI_Finalize(); /* the file, its dataset and lists left open on purpose */
    return failed;
}
