/* Calls whose file extents the request trace must show exactly: usage `trace_calls FILE PIECES`, every rank alone
 * on its own file FILE.<rank> (MPI_COMM_SELF).
 *   open; set_size(0);
 *   set_view(0, MPI_BYTE, F) with F PIECES blocks of 8 bytes, block i at i/3*96 + i%3*40 (three at a stride of 40,
 *     every 96 bytes: PIECES/3 runs that do not merge); write_at_all(0, PIECES*8 bytes);
 *   set_view(100, MPI_INT, MPI_INT); seek(5); write(4 ints) twice (the individual file pointer in etypes: bytes
 *     120 and 136); sync; close. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void trace_calls_check(int rc, const char *what)
{
    if (rc == MPI_SUCCESS) return;
    fprintf(stderr, "trace_calls: %s failed\n", what);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 3 || atoi(argv[2]) < 1) {
        if (rank == 0) fprintf(stderr, "usage: trace_calls FILE PIECES\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int pieces = atoi(argv[2]);
    char path[4096];
    snprintf(path, sizeof path, "%s.%d", argv[1], rank);
    MPI_File fh;
    trace_calls_check(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh), "open");
    trace_calls_check(MPI_File_set_size(fh, 0), "set_size");

    MPI_Aint *displs = malloc((size_t)pieces * sizeof *displs);
    char *buf = calloc((size_t)pieces, 8);
    for (int i = 0; i < pieces; i++) displs[i] = (MPI_Aint)(i / 3) * 96 + (MPI_Aint)(i % 3) * 40;
    MPI_Datatype ftype;
    MPI_Type_create_hindexed_block(pieces, 8, displs, MPI_BYTE, &ftype);
    MPI_Type_commit(&ftype);
    trace_calls_check(MPI_File_set_view(fh, 0, MPI_BYTE, ftype, "native", MPI_INFO_NULL), "set_view");
    trace_calls_check(MPI_File_write_at_all(fh, 0, buf, pieces * 8, MPI_BYTE, MPI_STATUS_IGNORE), "write_at_all");
    MPI_Type_free(&ftype);

    trace_calls_check(MPI_File_set_view(fh, 100, MPI_INT, MPI_INT, "native", MPI_INFO_NULL), "set_view ints");
    trace_calls_check(MPI_File_seek(fh, 5, MPI_SEEK_SET), "seek");
    trace_calls_check(MPI_File_write(fh, buf, 4, MPI_INT, MPI_STATUS_IGNORE), "write");
    trace_calls_check(MPI_File_write(fh, buf, 4, MPI_INT, MPI_STATUS_IGNORE), "write");
    trace_calls_check(MPI_File_sync(fh), "sync");
    trace_calls_check(MPI_File_close(&fh), "close");
    free(displs);
    free(buf);
    MPI_Finalize();
    return 0;
}
