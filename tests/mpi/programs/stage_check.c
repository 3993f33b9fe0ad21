/* The semantics staging must keep, seen from an application: usage `stage_check MODE FILE [LIMIT]`.
 *
 * raw:  each rank writes blocks through several call forms (explicit offset, file pointer, collective, a strided
 *       view) and reads each back at once, independently and collectively, and asks the file's size; prints
 *       {"checked": N, "mismatches": M, "size_ok": B}.
 * fail: every rank's file-size limit is LIMIT bytes (RLIMIT_FSIZE, SIGXFSZ ignored; 0: none, for a file on a full
 *       file system), an error handler counts its calls and returns; each rank writes 1 MiB at rank MiB, then syncs,
 *       writes again, and closes. Prints {"write": [...], "sync": [...], "close": [...], "handler_calls": [...]}:
 *       each rank's error class by name ("ok", "io", "no_space", ...).
 * kill: each rank writes 1 MiB at 2 * rank MiB, syncs, writes 1 MiB after it, then every rank is killed (SIGKILL)
 *       with the second write staged and not synced. The pattern of byte i of the file is (i * 7 + 3) % 251.
 * through: (for a cache of 1 MiB) each rank mixes, in its own 8 MiB region, small writes (staged), large ones that
 *       do not fit (written through within the call unless they meet the rank's staged data), overlapping ones in
 *       both orders and a collective strided write of large pieces, reading back after each; then syncs and reads
 *       the region whole. Prints {"checked": N, "mismatches": M}: every read against the rank's own image of what
 *       it wrote, in program order. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define MiB (1 << 20)

static int handler_calls;

static void count(MPI_File *fh, int *code, ...)
{
    (void)fh;
    (void)code;
    handler_calls++;
}

static void fill(unsigned char *b, long off, long n)
{
    for (long i = 0; i < n; i++) b[i] = (unsigned char)(((off + i) * 7 + 3) % 251);
}

static int cls(int rc)
{
    int c = 0;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &c);
    return c;
}

static const char *class_name(int c)
{
    static char other[32];
    switch (c) {
    case 0: return "ok";
    case MPI_ERR_IO: return "io";
    case MPI_ERR_NO_SPACE: return "no_space";
    case MPI_ERR_QUOTA: return "quota";
    default: snprintf(other, sizeof other, "class %d", c); return other;
    }
}

/* Rank 0 prints every rank's value of `v`: numbers, or with `classes` error class names. */
static void print_ints(const char *name, int v, int rank, int nprocs, int last, int classes)
{
    int *all = malloc(sizeof(int) * (size_t)nprocs);
    MPI_Gather(&v, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("\"%s\": [", name);
        for (int i = 0; i < nprocs; i++)
            classes ? printf("%s\"%s\"", i ? ", " : "", class_name(all[i])) : printf("%s%d", i ? ", " : "", all[i]);
        printf("]%s", last ? "}\n" : ", ");
    }
    free(all);
}

static int raw(const char *path, int rank, int nprocs)
{
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    enum { B = 4096, ROUNDS = 8 };
    unsigned char w[B], r[B];
    int checked = 0, bad = 0;
    long end = 0;
    for (int round = 0; round < ROUNDS; round++) {
        long off = ((long)round * nprocs + rank) * B;
        fill(w, off, B);
        MPI_Status st;
        switch (round % 4) {
        case 0: MPI_File_write_at(fh, off, w, B, MPI_BYTE, &st); break;
        case 1: MPI_File_seek(fh, off, MPI_SEEK_SET), MPI_File_write(fh, w, B, MPI_BYTE, &st); break;
        case 2: MPI_File_write_at_all(fh, off, w, B, MPI_BYTE, &st); break;
        default: MPI_File_seek(fh, off, MPI_SEEK_SET), MPI_File_write_all(fh, w, B, MPI_BYTE, &st); break;
        }
        int got = 0;
        MPI_Get_count(&st, MPI_BYTE, &got);
        bad += got != B;
        memset(r, 0, B);
        MPI_File_read_at(fh, off, r, B, MPI_BYTE, &st); /* my own write, not synced: read-after-write */
        bad += memcmp(r, w, B) != 0;
        memset(r, 0, B);
        MPI_File_read_at_all(fh, off, r, B, MPI_BYTE, &st);
        bad += memcmp(r, w, B) != 0;
        checked += 2;
        end = off + B > end ? off + B : end;
    }
    /* a strided view: each rank's 64-byte pieces interleaved with the others', after what was written above */
    long base = (long)ROUNDS * nprocs * B;
    MPI_Datatype vec, file;
    MPI_Type_vector(1, 64, 64 * nprocs, MPI_BYTE, &vec);
    MPI_Type_create_resized(vec, 0, 64L * nprocs, &file);
    MPI_Type_commit(&file);
    MPI_File_set_view(fh, base + 64L * rank, MPI_BYTE, file, "native", MPI_INFO_NULL);
    for (long i = 0; i < B; i += 64) fill(w + i, base + (i / 64 * nprocs + rank) * 64, 64);
    MPI_File_write_all(fh, w, B, MPI_BYTE, MPI_STATUS_IGNORE);
    memset(r, 0, B);
    MPI_File_read_at(fh, 0, r, B, MPI_BYTE, MPI_STATUS_IGNORE);
    bad += memcmp(r, w, B) != 0;
    checked++;
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    /* the size counts every rank's staged data once it was synced (MPI-IO's visibility) */
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Offset size = 0;
    MPI_File_get_size(fh, &size);
    int size_ok = size == base + (long)B * nprocs;
    MPI_File_close(&fh);
    int all_bad = 0, all_ok = 0;
    MPI_Reduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&size_ok, &all_ok, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("{\"checked\": %d, \"mismatches\": %d, \"size_ok\": %s}\n", checked * nprocs, all_bad,
               all_ok ? "true" : "false");
    (void)end;
    return 0;
}

static int fail(const char *path, long limit, int rank, int nprocs)
{
    if (limit > 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit lim = {(rlim_t)limit, (rlim_t)limit};
        setrlimit(RLIMIT_FSIZE, &lim);
    }
    if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    MPI_Errhandler eh;
    MPI_File_create_errhandler(count, &eh);
    MPI_File_set_errhandler(fh, eh);
    unsigned char *b = malloc(MiB);
    fill(b, (long)rank * MiB, MiB);
    int w = cls(MPI_File_write_at(fh, (MPI_Offset)rank * MiB, b, MiB, MPI_BYTE, MPI_STATUS_IGNORE));
    int s = cls(MPI_File_sync(fh));
    w = w ? w : cls(MPI_File_write_at(fh, (MPI_Offset)rank * MiB, b, MiB, MPI_BYTE, MPI_STATUS_IGNORE));
    int c = cls(MPI_File_close(&fh));
    if (rank == 0) printf("{");
    print_ints("write", w, rank, nprocs, 0, 1);
    print_ints("sync", s, rank, nprocs, 0, 1);
    print_ints("close", c, rank, nprocs, 0, 1);
    print_ints("handler_calls", handler_calls, rank, nprocs, 1, 0);
    free(b);
    return 0;
}

static int killed(const char *path, int rank)
{
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    unsigned char *b = malloc(MiB);
    long off = 2L * rank * MiB;
    fill(b, off, MiB);
    MPI_File_write_at(fh, off, b, MiB, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_sync(fh);
    fill(b, off + MiB, MiB);
    MPI_File_write_at(fh, off + MiB, b, MiB, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("{\"synced\": true}\n");
        fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    raise(SIGKILL);
    return 1;
}

/* Writes n bytes of pattern `seed` at off (explicit offset, independent) and applies them to the image of the
 * rank's region (which starts at base). */
static void through_write(MPI_File fh, unsigned char *image, long base, long off, long n, int seed)
{
    unsigned char *w = malloc((size_t)n);
    for (long i = 0; i < n; i++) w[i] = (unsigned char)(((off + i) * 7 + 3 + seed * 13) % 251);
    MPI_File_write_at(fh, off, w, (int)n, MPI_BYTE, MPI_STATUS_IGNORE);
    memcpy(image + (off - base), w, (size_t)n);
    free(w);
}

/* Reads [off, off + n) back and compares it with the image: 1 on a difference. Past the end of the file nothing is
 * read: the buffer starts zeroed, as the image is there. */
static int through_read(MPI_File fh, const unsigned char *image, long base, long off, long n)
{
    unsigned char *r = calloc(1, (size_t)n);
    MPI_File_read_at(fh, off, r, (int)n, MPI_BYTE, MPI_STATUS_IGNORE);
    int bad = memcmp(r, image + (off - base), (size_t)n) != 0;
    free(r);
    return bad;
}

static int through(const char *path, int rank, int nprocs)
{
    enum { KiB = 1024, REGION = 8 * MiB };
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    unsigned char *image = calloc(1, REGION);
    const long base = (long)rank * REGION;
    int checked = 0, bad = 0;
    for (long i = 0; i < 256; i++) through_write(fh, image, base, base + i * 2 * KiB, KiB, 1); /* staged, holes */
    through_write(fh, image, base, base + 4 * MiB, 768 * KiB, 2); /* too large, meets nothing staged: written through */
    bad += through_read(fh, image, base, base + 4 * MiB, 768 * KiB), checked++;
    MPI_Barrier(MPI_COMM_WORLD); /* no rank drains the node's ring (next read) before every rank made the one above */
    bad += through_read(fh, image, base, base, 512 * KiB), checked++;
    through_write(fh, image, base, base + 256 * KiB, 768 * KiB, 3); /* meets the staged writes: after them */
    bad += through_read(fh, image, base, base, 2 * MiB), checked++;
    for (long i = 0; i < 64; i++) through_write(fh, image, base, base + 4 * MiB + i * 8 * KiB, KiB, 4); /* over it */
    through_write(fh, image, base, base + 4 * MiB + 512 * KiB, 640 * KiB, 5); /* meets them again */
    bad += through_read(fh, image, base, base + 4 * MiB, 2 * MiB), checked++;
    /* collective: every rank's 64 KiB pieces interleaved with the others' at 6 MiB of each region (a 768 KiB call
     * of large pieces: written through when it does not fit) */
    MPI_Datatype vec, file;
    MPI_Type_vector(12, 64 * KiB, 64 * KiB * 2, MPI_BYTE, &vec);
    MPI_Type_create_resized(vec, 0, 2L * 12 * 64 * KiB, &file);
    MPI_Type_commit(&file);
    unsigned char *w = malloc(768 * KiB);
    for (int k = 0; k < 2; k++) { /* two passes: the second overwrites the first */
        MPI_File_set_view(fh, base + 6 * MiB + (long)k * 64 * KiB, MPI_BYTE, file, "native", MPI_INFO_NULL);
        for (long i = 0; i < 768 * KiB; i++) {
            long off = base + 6 * MiB + (long)k * 64 * KiB + i / (64 * KiB) * 128 * KiB + i % (64 * KiB);
            w[i] = (unsigned char)((off * 7 + 3 + (6 + k) * 13) % 251);
            image[off - base] = w[i];
        }
        MPI_File_write_all(fh, w, 768 * KiB, MPI_BYTE, MPI_STATUS_IGNORE);
    }
    free(w);
    MPI_Type_free(&vec);
    MPI_Type_free(&file);
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    bad += through_read(fh, image, base, base + 6 * MiB, 2 * MiB), checked++;
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    bad += through_read(fh, image, base, base, REGION), checked++;
    MPI_File_close(&fh);
    free(image);
    int all_bad = 0;
    MPI_Reduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("{\"checked\": %d, \"mismatches\": %d}\n", checked * nprocs, all_bad);
    return all_bad != 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 3) {
        if (rank == 0) fprintf(stderr, "usage: stage_check raw|fail|kill|through FILE [LIMIT]\n");
        MPI_Finalize();
        return 2;
    }
    int rc = 2;
    if (strcmp(argv[1], "raw") == 0) rc = raw(argv[2], rank, nprocs);
    else if (strcmp(argv[1], "fail") == 0) rc = fail(argv[2], argc > 3 ? atol(argv[3]) : 0, rank, nprocs);
    else if (strcmp(argv[1], "kill") == 0) rc = killed(argv[2], rank);
    else if (strcmp(argv[1], "through") == 0) rc = through(argv[2], rank, nprocs);
    MPI_Finalize();
    return rc;
}
