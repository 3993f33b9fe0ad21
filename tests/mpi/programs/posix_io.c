/* The POSIX layer's test program: usage `posix_io MODE FILE [BLOCK] [BLOCKS]`.
 *
 *   independent  each rank writes BLOCKS contiguous blocks of BLOCK bytes (its own region of FILE) with
 *                MPI_File_write_at, syncs, and reads them back with MPI_File_read_at
 *   collective   the ranks' blocks interleaved (block i of rank r at (i * nprocs + r) * BLOCK, a vector file view),
 *                written with one MPI_File_write_all under romio_cb_write=enable and cb_nodes=1, read back with
 *                MPI_File_read_all
 *   plain        rank 0 also writes FILE.plain itself (open, write, pwrite, lseek, read, fsync, close) and tries calls
 *                that fail: pread on a descriptor that is not open and read on a write-only one (EBADF), pwrite at a
 *                negative offset (EINVAL); the MPI part is as in independent
 *
 * Every block holds bytes derived from (rank, block index). Rank 0 prints one JSON object: "verified" (every rank
 * read back what it wrote), "checksum" (of the whole file), and for plain the errno values of the failing calls. */
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned char value(int rank, long block, long i) { return (unsigned char)(rank * 31 + block * 7 + i); }

static void fill(unsigned char *buf, int rank, long blocks, long block)
{
    for (long b = 0; b < blocks; b++)
        for (long i = 0; i < block; i++) buf[b * block + i] = value(rank, b, i);
}

/* The application's own file: what an application does besides MPI-IO; errno of failing calls into errs[]. */
static void plain_file(const char *path, int errs[3])
{
    char name[4096], buf[4096];
    snprintf(name, sizeof name, "%s.plain", path);
    memset(buf, 'p', sizeof buf);
    int fd = open(name, O_CREAT | O_TRUNC | O_RDWR, 0644);
    if (fd < 0 || write(fd, buf, sizeof buf) != (ssize_t)sizeof buf || pwrite(fd, buf, 100, 4096) != 100 ||
        lseek(fd, 0, SEEK_SET) != 0 || read(fd, buf, 1000) != 1000 || fsync(fd) != 0 || close(fd) != 0) {
        perror(name);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    errno = 0;
    errs[0] = pread(fd, buf, 10, 0) < 0 ? errno : 0; /* fd is closed */
    int wo = open(name, O_WRONLY);
    errno = 0;
    errs[1] = read(wo, buf, 10) < 0 ? errno : 0;
    errno = 0;
    errs[2] = pwrite(wo, buf, 10, -5) < 0 ? errno : 0;
    close(wo);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 3) {
        if (rank == 0) fprintf(stderr, "usage: posix_io independent|collective|plain FILE [BLOCK] [BLOCKS]\n");
        MPI_Finalize();
        return 2;
    }
    const char *mode = argv[1], *path = argv[2];
    long block = argc > 3 ? atol(argv[3]) : 65536, blocks = argc > 4 ? atol(argv[4]) : 4;
    int collective = strcmp(mode, "collective") == 0, errs[3] = {0, 0, 0};
    unsigned char *buf = malloc((size_t)(block * blocks)), *back = malloc((size_t)(block * blocks));
    fill(buf, rank, blocks, block);

    if (rank == 0 && strcmp(mode, "plain") == 0) plain_file(path, errs);

    MPI_Info info;
    MPI_Info_create(&info);
    if (collective) {
        MPI_Info_set(info, "romio_cb_write", "enable");
        MPI_Info_set(info, "romio_cb_read", "enable");
        MPI_Info_set(info, "cb_nodes", "1");
    }
    MPI_File fh;
    if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
    MPI_Datatype filetype = MPI_DATATYPE_NULL;
    if (collective) {
        MPI_Type_vector((int)blocks, (int)block, (int)(block * nprocs), MPI_BYTE, &filetype);
        MPI_Type_commit(&filetype);
        MPI_File_set_view(fh, (MPI_Offset)rank * block, MPI_BYTE, filetype, "native", MPI_INFO_NULL);
        MPI_File_write_all(fh, buf, (int)(block * blocks), MPI_BYTE, MPI_STATUS_IGNORE);
        MPI_File_sync(fh);
        MPI_File_seek(fh, 0, MPI_SEEK_SET);
        MPI_File_read_all(fh, back, (int)(block * blocks), MPI_BYTE, MPI_STATUS_IGNORE);
    } else {
        MPI_Offset base = (MPI_Offset)rank * blocks * block;
        for (long b = 0; b < blocks; b++)
            MPI_File_write_at(fh, base + b * block, buf + b * block, (int)block, MPI_BYTE, MPI_STATUS_IGNORE);
        MPI_File_sync(fh);
        for (long b = 0; b < blocks; b++)
            MPI_File_read_at(fh, base + b * block, back + b * block, (int)block, MPI_BYTE, MPI_STATUS_IGNORE);
    }
    MPI_File_close(&fh);
    if (filetype != MPI_DATATYPE_NULL) MPI_Type_free(&filetype);
    MPI_Info_free(&info);

    int ok = memcmp(buf, back, (size_t)(block * blocks)) == 0, all = 0;
    MPI_Reduce(&ok, &all, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        unsigned long long sum = 0;
        FILE *in = fopen(path, "rb");
        int c;
        for (unsigned long long i = 1; in && (c = fgetc(in)) != EOF; i++) sum += (unsigned long long)c * i;
        if (in) fclose(in);
        printf("{\"verified\": %s, \"checksum\": %llu, \"errno\": [%d, %d, %d]}\n", all ? "true" : "false", sum,
               errs[0], errs[1], errs[2]);
    }
    free(buf);
    free(back);
    MPI_Finalize();
    return 0;
}
