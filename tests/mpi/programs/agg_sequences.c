/* MPI-IO's consistency rules around collective writes cached at the aggregators (aggregator caching,
 * docs/design/aggregator-caching.md): usage `agg_sequences FILE`. Every rank owns pieces of PIECE bytes interleaved
 * with the other ranks' (a resized-vector view), and every rank keeps the image the file must hold (all ranks' writes
 * are computed alike everywhere). The sequences:
 *  1. collective write, then a collective read of the rank's own data before any sync;
 *  2. an independent read of the rank's own data (its aggregator may be on another node);
 *  3. an independent overwrite of part of the rank's data still cached, then an independent read of it;
 *  4. get_size;
 *  5. sync, barrier, sync, then every rank reads the whole file independently (the other ranks' data);
 *  6. a collective write, then set_size shrinking the file, then sync-barrier-sync and the whole file read;
 *  7. a collective write, atomic mode on and an atomic collective write over it, atomic mode off;
 *  8. a collective write, then a split collective write over part of it;
 *  9. a collective write, close without sync, reopen, the whole file read.
 * Every read is compared with the image, and at the end the file itself. Rank 0 prints {"checked": C,
 * "mismatches": M}; exit 1 on a mismatch. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PIECE 1000
#define PIECES 64

static int rank, nprocs, mismatches, checked;
static unsigned char *image; /* what the file must hold */
static int64_t image_size;   /* its size */

static void check(int rc, const char *what)
{
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len;
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "rank %d: %s: %s\n", rank, what, msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static unsigned char value(int r, int64_t i, int version) { return (unsigned char)(r * 31 + i * 7 + version * 13 + 1); }

/* The file offset of byte i of rank r's stream in the interleaved view. */
static int64_t offset_of(int r, int64_t i) { return (int64_t)r * PIECE + i / PIECE * nprocs * PIECE + i % PIECE; }

/* Rank r wrote bytes [from, from + n) of its stream with `version`: the image follows. */
static void image_write(int r, int64_t from, int64_t n, int version)
{
    for (int64_t i = from; i < from + n; i++) {
        int64_t o = offset_of(r, i);
        image[o] = value(r, i, version);
        if (o + 1 > image_size) image_size = o + 1;
    }
}

static void fill(unsigned char *buf, int64_t from, int64_t n, int version)
{
    for (int64_t i = 0; i < n; i++) buf[i] = value(rank, from + i, version);
}

static void compare(const char *what, int step, const unsigned char *got, const unsigned char *want, int64_t n)
{
    checked++;
    for (int64_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            if (mismatches < 10)
                fprintf(stderr, "rank %d: step %d: %s differs at byte %lld (%u, want %u)\n", rank, step, what,
                        (long long)i, got[i], want[i]);
            mismatches++;
            return;
        }
}

static void set_interleaved(MPI_File fh)
{
    MPI_Datatype piece, tile;
    MPI_Type_contiguous(PIECE, MPI_BYTE, &piece);
    MPI_Type_create_resized(piece, 0, (MPI_Aint)nprocs * PIECE, &tile);
    MPI_Type_commit(&tile);
    check(MPI_File_set_view(fh, (MPI_Offset)rank * PIECE, MPI_BYTE, tile, "native", MPI_INFO_NULL), "set_view");
    MPI_Type_free(&piece);
    MPI_Type_free(&tile);
}

/* Every rank writes its whole stream collectively with `version`. */
static void write_all(MPI_File fh, int version, unsigned char *buf)
{
    const int64_t n = (int64_t)PIECE * PIECES;
    fill(buf, 0, n, version);
    check(MPI_File_write_at_all(fh, 0, buf, (int)n, MPI_BYTE, MPI_STATUS_IGNORE), "write_at_all");
    for (int r = 0; r < nprocs; r++) image_write(r, 0, n, version);
}

/* The rank's own stream [from, from + n) read back (collectively or not) against the image. */
static void read_own(MPI_File fh, int collective, int64_t from, int64_t n, int step, unsigned char *buf,
                     unsigned char *want)
{
    memset(buf, 0, (size_t)n);
    check(collective ? MPI_File_read_at_all(fh, from, buf, (int)n, MPI_BYTE, MPI_STATUS_IGNORE)
                     : MPI_File_read_at(fh, from, buf, (int)n, MPI_BYTE, MPI_STATUS_IGNORE), "read own");
    for (int64_t i = 0; i < n; i++) want[i] = image[offset_of(rank, from + i)];
    compare(collective ? "collective read of own data" : "independent read of own data", step, buf, want, n);
}

/* sync, barrier, sync; then the whole file read by every rank through the default view. */
static void read_whole(MPI_File fh, int step, unsigned char *buf)
{
    check(MPI_File_sync(fh), "sync");
    MPI_Barrier(MPI_COMM_WORLD);
    check(MPI_File_sync(fh), "sync");
    check(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL), "set_view bytes");
    MPI_Offset size = 0;
    check(MPI_File_get_size(fh, &size), "get_size");
    checked++;
    if (size != image_size) {
        fprintf(stderr, "rank %d: step %d: size %lld, want %lld\n", rank, step, (long long)size, (long long)image_size);
        mismatches++;
    }
    memset(buf, 0, (size_t)image_size);
    check(MPI_File_read_at(fh, 0, buf, (int)image_size, MPI_BYTE, MPI_STATUS_IGNORE), "read whole");
    compare("the whole file", step, buf, image, image_size);
    set_interleaved(fh);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc != 2) {
        if (rank == 0) fprintf(stderr, "usage: agg_sequences FILE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int64_t n = (int64_t)PIECE * PIECES, full = n * nprocs;
    image = calloc((size_t)full, 1);
    unsigned char *buf = malloc((size_t)full), *want = malloc((size_t)full);
    MPI_File fh;
    MPI_File_delete(argv[1], MPI_INFO_NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    check(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh), "open");
    set_interleaved(fh);

    write_all(fh, 1, buf); /* 1 */
    read_own(fh, 1, 0, n, 1, buf, want);
    read_own(fh, 0, 0, n, 2, buf, want); /* 2 */

    write_all(fh, 2, buf); /* 3: an independent overwrite of cached data */
    fill(buf, 5 * PIECE + 17, 2 * PIECE, 3);
    check(MPI_File_write_at(fh, 5 * PIECE + 17, buf, 2 * PIECE, MPI_BYTE, MPI_STATUS_IGNORE), "write_at");
    for (int r = 0; r < nprocs; r++) image_write(r, 5 * PIECE + 17, 2 * PIECE, 3);
    read_own(fh, 0, 0, n, 3, buf, want);

    MPI_Offset size = 0; /* 4 */
    check(MPI_File_get_size(fh, &size), "get_size");
    checked++;
    if (size != image_size) {
        fprintf(stderr, "rank %d: step 4: size %lld, want %lld\n", rank, (long long)size, (long long)image_size);
        mismatches++;
    }
    read_whole(fh, 5, buf); /* 5 */

    write_all(fh, 4, buf); /* 6 */
    image_size = full / 2 + 123;
    check(MPI_File_set_size(fh, image_size), "set_size");
    memset(image + image_size, 0, (size_t)(full - image_size));
    read_whole(fh, 6, buf);

    write_all(fh, 5, buf); /* 7 */
    check(MPI_File_set_atomicity(fh, 1), "set_atomicity 1");
    fill(buf, 3 * PIECE, 4 * PIECE, 6);
    check(MPI_File_write_at_all(fh, 3 * PIECE, buf, 4 * PIECE, MPI_BYTE, MPI_STATUS_IGNORE), "atomic write_at_all");
    for (int r = 0; r < nprocs; r++) image_write(r, 3 * PIECE, 4 * PIECE, 6);
    check(MPI_File_set_atomicity(fh, 0), "set_atomicity 0");
    read_whole(fh, 7, buf);

    write_all(fh, 7, buf); /* 8 */
    fill(buf, 10 * PIECE + 3, 5 * PIECE, 8);
    check(MPI_File_write_at_all_begin(fh, 10 * PIECE + 3, buf, 5 * PIECE, MPI_BYTE), "write_at_all_begin");
    check(MPI_File_write_at_all_end(fh, buf, MPI_STATUS_IGNORE), "write_at_all_end");
    for (int r = 0; r < nprocs; r++) image_write(r, 10 * PIECE + 3, 5 * PIECE, 8);
    read_whole(fh, 8, buf);

    write_all(fh, 9, buf); /* 9 */
    check(MPI_File_close(&fh), "close");
    check(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_RDWR, MPI_INFO_NULL, &fh), "reopen");
    set_interleaved(fh);
    read_whole(fh, 9, buf);
    check(MPI_File_close(&fh), "close");

    int total[2] = {0, 0}, mine[2] = {checked, mismatches};
    MPI_Reduce(mine, total, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("{\"checked\": %d, \"mismatches\": %d}\n", total[0], total[1]);
    free(image), free(buf), free(want);
    MPI_Finalize();
    return total[1] || mismatches ? 1 : 0;
}
