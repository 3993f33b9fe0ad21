/* Calls every MPI-IO data-access function once to write and once to read back, so the runtime's wrappers can
 * be compared with the library alone: usage `every_call FILE [BLOCK]`.
 * Region k of the file (nprocs * BLOCK bytes) is written by variant k, rank r owning bytes [r*BLOCK, (r+1)*BLOCK).
 * Shared-pointer variants run rank after rank so the file is deterministic. Rank 0 prints
 * {"variants": K, "bytes": total, "errors": E}; exit 1 when a read-back byte or a status count is wrong. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    V_AT, V_AT_ALL, V_PTR, V_ALL, V_IAT, V_IAT_ALL, V_I, V_IALL, V_AT_SPLIT, V_ALL_SPLIT,
    V_SHARED, V_ISHARED, V_ORDERED, V_ORDERED_SPLIT, V_AT_C, V_ALL_C, V_IAT_C, V_AT_SPLIT_C, V_VECTOR,
    V_COUNT
};

static int rank, nprocs, errors;
static MPI_Offset block;

static void check(int rc, const char *what)
{
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len;
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "rank %d: %s: %s\n", rank, what, msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static unsigned char byte_at(int variant, MPI_Offset i) { return (unsigned char)(variant * 31 + rank * 7 + i * 13 + (i >> 8)); }

/* The status must say the whole request moved: the wrappers must not disturb it. */
static void check_status(MPI_Status *st, MPI_Datatype type, int expected, int variant)
{
    int count;
    MPI_Get_count(st, type, &count);
    if (count != expected) {
        fprintf(stderr, "rank %d: variant %d: status count %d, expected %d\n", rank, variant, count, expected);
        errors++;
    }
}

/* Runs variant v in direction `write` on buf (block bytes) at this rank's place in region v. */
static void run(MPI_File fh, int v, int write, unsigned char *buf)
{
    MPI_Offset region = (MPI_Offset)v * nprocs * block, mine = region + rank * block;
    int n = (int)block;
    MPI_Status st;
    MPI_Request req;
    /* Pointer-based variants see the file through a view starting at their own block. */
    check(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL), "set_view");
    if (v == V_PTR || v == V_ALL || v == V_I || v == V_IALL || v == V_ALL_SPLIT || v == V_ALL_C)
        check(MPI_File_seek(fh, mine, MPI_SEEK_SET), "seek");
    if (v == V_SHARED || v == V_ISHARED || v == V_ORDERED || v == V_ORDERED_SPLIT)
        check(MPI_File_seek_shared(fh, region, MPI_SEEK_SET), "seek_shared");
    switch (v) {
    case V_AT:
        check(write ? MPI_File_write_at(fh, mine, buf, n, MPI_BYTE, &st) : MPI_File_read_at(fh, mine, buf, n, MPI_BYTE, &st), "at");
        check_status(&st, MPI_BYTE, n, v);
        break;
    case V_AT_ALL:
        check(write ? MPI_File_write_at_all(fh, mine, buf, n, MPI_BYTE, MPI_STATUS_IGNORE)
                    : MPI_File_read_at_all(fh, mine, buf, n, MPI_BYTE, MPI_STATUS_IGNORE), "at_all");
        break;
    case V_PTR:
        check(write ? MPI_File_write(fh, buf, n, MPI_BYTE, &st) : MPI_File_read(fh, buf, n, MPI_BYTE, &st), "ptr");
        check_status(&st, MPI_BYTE, n, v);
        break;
    case V_ALL:
        check(write ? MPI_File_write_all(fh, buf, n, MPI_BYTE, &st) : MPI_File_read_all(fh, buf, n, MPI_BYTE, &st), "all");
        check_status(&st, MPI_BYTE, n, v);
        break;
    case V_IAT:
        check(write ? MPI_File_iwrite_at(fh, mine, buf, n, MPI_BYTE, &req) : MPI_File_iread_at(fh, mine, buf, n, MPI_BYTE, &req), "iat");
        MPI_Wait(&req, &st);
        check_status(&st, MPI_BYTE, n, v);
        break;
    case V_IAT_ALL:
        check(write ? MPI_File_iwrite_at_all(fh, mine, buf, n, MPI_BYTE, &req)
                    : MPI_File_iread_at_all(fh, mine, buf, n, MPI_BYTE, &req), "iat_all");
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        break;
    case V_I:
        check(write ? MPI_File_iwrite(fh, buf, n, MPI_BYTE, &req) : MPI_File_iread(fh, buf, n, MPI_BYTE, &req), "i");
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        break;
    case V_IALL:
        check(write ? MPI_File_iwrite_all(fh, buf, n, MPI_BYTE, &req) : MPI_File_iread_all(fh, buf, n, MPI_BYTE, &req), "iall");
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        break;
    case V_AT_SPLIT:
        if (write) {
            check(MPI_File_write_at_all_begin(fh, mine, buf, n, MPI_BYTE), "at_split begin");
            check(MPI_File_write_at_all_end(fh, buf, &st), "at_split end");
        } else {
            check(MPI_File_read_at_all_begin(fh, mine, buf, n, MPI_BYTE), "at_split begin");
            check(MPI_File_read_at_all_end(fh, buf, &st), "at_split end");
        }
        check_status(&st, MPI_BYTE, n, v);
        break;
    case V_ALL_SPLIT:
        if (write) {
            check(MPI_File_write_all_begin(fh, buf, n, MPI_BYTE), "all_split begin");
            check(MPI_File_write_all_end(fh, buf, MPI_STATUS_IGNORE), "all_split end");
        } else {
            check(MPI_File_read_all_begin(fh, buf, n, MPI_BYTE), "all_split begin");
            check(MPI_File_read_all_end(fh, buf, MPI_STATUS_IGNORE), "all_split end");
        }
        break;
    case V_SHARED:
    case V_ISHARED:
        for (int r = 0; r < nprocs; r++) {
            if (r == rank) {
                if (v == V_SHARED)
                    check(write ? MPI_File_write_shared(fh, buf, n, MPI_BYTE, &st) : MPI_File_read_shared(fh, buf, n, MPI_BYTE, &st), "shared");
                else {
                    check(write ? MPI_File_iwrite_shared(fh, buf, n, MPI_BYTE, &req) : MPI_File_iread_shared(fh, buf, n, MPI_BYTE, &req), "ishared");
                    MPI_Wait(&req, &st);
                }
                check_status(&st, MPI_BYTE, n, v);
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
        break;
    case V_ORDERED:
        check(write ? MPI_File_write_ordered(fh, buf, n, MPI_BYTE, &st) : MPI_File_read_ordered(fh, buf, n, MPI_BYTE, &st), "ordered");
        check_status(&st, MPI_BYTE, n, v);
        break;
    case V_ORDERED_SPLIT:
        if (write) {
            check(MPI_File_write_ordered_begin(fh, buf, n, MPI_BYTE), "ordered_split begin");
            check(MPI_File_write_ordered_end(fh, buf, MPI_STATUS_IGNORE), "ordered_split end");
        } else {
            check(MPI_File_read_ordered_begin(fh, buf, n, MPI_BYTE), "ordered_split begin");
            check(MPI_File_read_ordered_end(fh, buf, MPI_STATUS_IGNORE), "ordered_split end");
        }
        break;
#if MPI_VERSION >= 4
    case V_AT_C:
        check(write ? MPI_File_write_at_c(fh, mine, buf, (MPI_Count)n, MPI_BYTE, &st)
                    : MPI_File_read_at_c(fh, mine, buf, (MPI_Count)n, MPI_BYTE, &st), "at_c");
        check_status(&st, MPI_BYTE, n, v);
        break;
    case V_ALL_C:
        check(write ? MPI_File_write_all_c(fh, buf, (MPI_Count)n, MPI_BYTE, MPI_STATUS_IGNORE)
                    : MPI_File_read_all_c(fh, buf, (MPI_Count)n, MPI_BYTE, MPI_STATUS_IGNORE), "all_c");
        break;
    case V_IAT_C:
        check(write ? MPI_File_iwrite_at_c(fh, mine, buf, (MPI_Count)n, MPI_BYTE, &req)
                    : MPI_File_iread_at_c(fh, mine, buf, (MPI_Count)n, MPI_BYTE, &req), "iat_c");
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        break;
    case V_AT_SPLIT_C:
        if (write) {
            check(MPI_File_write_at_all_begin_c(fh, mine, buf, (MPI_Count)n, MPI_BYTE), "at_split_c begin");
            check(MPI_File_write_at_all_end(fh, buf, MPI_STATUS_IGNORE), "at_split_c end");
        } else {
            check(MPI_File_read_at_all_begin_c(fh, mine, buf, (MPI_Count)n, MPI_BYTE), "at_split_c begin");
            check(MPI_File_read_at_all_end(fh, buf, MPI_STATUS_IGNORE), "at_split_c end");
        }
        break;
#else
    case V_AT_C:
    case V_ALL_C:
    case V_IAT_C:
    case V_AT_SPLIT_C:
        check(write ? MPI_File_write_at(fh, mine, buf, n, MPI_BYTE, MPI_STATUS_IGNORE)
                    : MPI_File_read_at(fh, mine, buf, n, MPI_BYTE, MPI_STATUS_IGNORE), "at (no large count)");
        break;
#endif
    case V_VECTOR: {
        /* Noncontiguous on both sides: the ranks' 64-byte pieces interleave through a vector file view, and
         * memory is read through a vector with gaps; counts in the status are in whole vectors. */
        int piece = 64, pieces = n / piece;
        MPI_Datatype ftype, mtype;
        MPI_Type_vector(pieces, piece, piece * nprocs, MPI_BYTE, &ftype);
        MPI_Type_commit(&ftype);
        MPI_Type_vector(pieces, piece, piece, MPI_BYTE, &mtype); /* contiguous in effect, but a derived type */
        MPI_Type_commit(&mtype);
        check(MPI_File_set_view(fh, region + (MPI_Offset)rank * piece, MPI_BYTE, ftype, "native", MPI_INFO_NULL), "vector view");
        check(write ? MPI_File_write_all(fh, buf, 1, mtype, &st) : MPI_File_read_all(fh, buf, 1, mtype, &st), "vector");
        check_status(&st, mtype, 1, v);
        MPI_Type_free(&ftype);
        MPI_Type_free(&mtype);
        break;
    }
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 2) {
        if (rank == 0) fprintf(stderr, "usage: every_call FILE [BLOCK]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    block = argc > 2 ? atoll(argv[2]) : 4096;
    if (block < 64 || block % 64) {
        if (rank == 0) fprintf(stderr, "every_call: BLOCK must be a positive multiple of 64\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    unsigned char *buf = malloc((size_t)block), *back = malloc((size_t)block);
    MPI_File fh;
    check(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh), "open");
    for (int v = 0; v < V_COUNT; v++) {
        for (MPI_Offset i = 0; i < block; i++) buf[i] = byte_at(v, i);
        run(fh, v, 1, buf);
    }
    check(MPI_File_sync(fh), "sync");
    MPI_Barrier(MPI_COMM_WORLD);
    check(MPI_File_sync(fh), "sync");
    for (int v = 0; v < V_COUNT; v++) {
        memset(back, 0, (size_t)block);
        run(fh, v, 0, back);
        for (MPI_Offset i = 0; i < block; i++)
            if (back[i] != byte_at(v, i)) {
                fprintf(stderr, "rank %d: variant %d: byte %lld is %u, expected %u\n", rank, v, (long long)i, back[i], byte_at(v, i));
                errors++;
                break;
            }
    }
    check(MPI_File_close(&fh), "close");
    int total_errors;
    MPI_Reduce(&errors, &total_errors, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Bcast(&total_errors, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("{\"variants\": %d, \"bytes\": %lld, \"errors\": %d}\n", V_COUNT, (long long)V_COUNT * nprocs * block, total_errors);
    free(buf);
    free(back);
    MPI_Finalize();
    return total_errors ? 1 : 0;
}
