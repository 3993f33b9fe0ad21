/* File access by API (POSIX or MPI-IO) with every return code checked. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "run.h"

const char *const iotame_api_names[] = {"POSIX", "MPIIO", NULL};

void iotame_mpi_check(int err, const char *what, const char *path)
{
    if (err == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(err, msg, &len);
    iotame_fatal("%s %s: %s", what, path ? path : "", msg);
}

void *iotame_alloc(size_t len)
{
    void *p = NULL;
    if (posix_memalign(&p, 4096, len ? len : 1) != 0) {
        iotame_fatal("out of memory allocating %zu bytes", len);
    }
    return p;
}

int iotame_file_open(iotame_file_t *f, iotame_api_t api, MPI_Comm comm, const char *path, int mode, MPI_Info info)
{
    memset(f, 0, sizeof *f);
    f->api = api;
    f->fd = -1;
    f->fh = MPI_FILE_NULL;
    f->path = strdup(path);
    bool rd = mode & IOTAME_FILE_READ, wr = mode & IOTAME_FILE_WRITE, create = mode & IOTAME_FILE_CREATE;
    const char *how = create ? "create" : "open", *why = create ? "" : wr ? " for writing" : " for reading";
    if (api == IOTAME_API_POSIX) {
        int flags = (rd && wr ? O_RDWR : wr ? O_WRONLY : O_RDONLY) | (create ? O_CREAT : 0);
        f->fd = open(path, flags, 0644);
        if (f->fd >= 0) return 0;
        iotame_error("cannot %s %s%s: %s", how, path, why, strerror(errno));
    } else {
        int amode = rd && wr ? MPI_MODE_RDWR : wr ? MPI_MODE_WRONLY : MPI_MODE_RDONLY;
        if (create) amode |= MPI_MODE_CREATE;
        int err = MPI_File_open(comm, path, amode, info, &f->fh);
        if (err == MPI_SUCCESS) return 0;
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(err, msg, &len);
        iotame_error("cannot %s %s%s: %s", how, path, why, msg);
        f->fh = MPI_FILE_NULL;
    }
    free(f->path);
    f->path = NULL;
    return -1;
}

/* One datatype of len bytes, for requests above INT_MAX bytes (MPICH 4.0's ROMIO asserts on large counts):
 * whole GiB chunks, then the remainder. */
static MPI_Datatype big_type(size_t len)
{
    const size_t gib = (size_t)1 << 30;
    MPI_Datatype chunk, type;
    MPI_Type_contiguous((int)gib, MPI_BYTE, &chunk);
    int lens[2] = {(int)(len / gib), (int)(len % gib)};
    MPI_Aint disps[2] = {0, (MPI_Aint)(len / gib * gib)};
    MPI_Datatype types[2] = {chunk, MPI_BYTE};
    MPI_Type_create_struct(2, lens, disps, types, &type);
    MPI_Type_commit(&type);
    MPI_Type_free(&chunk);
    return type;
}

static void mpi_transfer(iotame_file_t *f, uint64_t offset, void *buf, size_t len, bool write, bool collective)
{
    MPI_Status st;
    MPI_Offset off = (MPI_Offset)offset;
    bool big = len > INT_MAX;
    MPI_Datatype type = big ? big_type(len) : MPI_BYTE;
    int count = big ? 1 : (int)len, err;
    const char *what;
    if (write) {
        what = collective ? "MPI_File_write_at_all" : "MPI_File_write_at";
        err = collective ? MPI_File_write_at_all(f->fh, off, buf, count, type, &st)
                         : MPI_File_write_at(f->fh, off, buf, count, type, &st);
    } else {
        what = collective ? "MPI_File_read_at_all" : "MPI_File_read_at";
        err = collective ? MPI_File_read_at_all(f->fh, off, buf, count, type, &st)
                         : MPI_File_read_at(f->fh, off, buf, count, type, &st);
    }
    if (big) MPI_Type_free(&type);
    iotame_mpi_check(err, what, f->path);
    MPI_Count done = 0;
    MPI_Get_elements_x(&st, MPI_BYTE, &done);
    if ((size_t)done != len) {
        iotame_fatal("%s %s: %s %lld of %zu bytes at offset %llu%s", what, f->path, write ? "wrote" : "read",
                     (long long)done, len, (unsigned long long)offset,
                     write ? "" : " (file shorter than expected?)");
    }
}

void iotame_file_write_at(iotame_file_t *f, uint64_t offset, const void *buf, size_t len, bool collective)
{
    if (f->api == IOTAME_API_MPIIO) {
        mpi_transfer(f, offset, (void *)buf, len, true, collective);
        return;
    }
    if (collective) {
        iotame_fatal("%s: collective I/O needs MPIIO", f->path);
    }
    const char *p = buf;
    while (len > 0) { /* pwrite may write less than asked */
        ssize_t n = pwrite(f->fd, p, len, (off_t)offset);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            iotame_fatal("pwrite %s at offset %llu: %s", f->path, (unsigned long long)offset,
                         n < 0 ? strerror(errno) : "wrote nothing");
        }
        p += n;
        len -= (size_t)n;
        offset += (uint64_t)n;
    }
}

void iotame_file_read_at(iotame_file_t *f, uint64_t offset, void *buf, size_t len, bool collective)
{
    if (f->api == IOTAME_API_MPIIO) {
        mpi_transfer(f, offset, buf, len, false, collective);
        return;
    }
    if (collective) {
        iotame_fatal("%s: collective I/O needs MPIIO", f->path);
    }
    char *p = buf;
    while (len > 0) {
        ssize_t n = pread(f->fd, p, len, (off_t)offset);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            iotame_fatal("pread %s at offset %llu: %s", f->path, (unsigned long long)offset,
                         n < 0 ? strerror(errno) : "end of file (file shorter than expected?)");
        }
        p += n;
        len -= (size_t)n;
        offset += (uint64_t)n;
    }
}

void iotame_file_sync(iotame_file_t *f)
{
    if (f->api == IOTAME_API_MPIIO) {
        iotame_mpi_check(MPI_File_sync(f->fh), "MPI_File_sync", f->path);
    } else if (fsync(f->fd) != 0) {
        iotame_fatal("fsync %s: %s", f->path, strerror(errno));
    }
}

uint64_t iotame_file_size(iotame_file_t *f)
{
    if (f->api == IOTAME_API_MPIIO) {
        MPI_Offset size = 0;
        iotame_mpi_check(MPI_File_get_size(f->fh, &size), "MPI_File_get_size", f->path);
        return (uint64_t)size;
    }
    struct stat st;
    if (fstat(f->fd, &st) != 0) {
        iotame_fatal("fstat %s: %s", f->path, strerror(errno));
    }
    return (uint64_t)st.st_size;
}

void iotame_file_close(iotame_file_t *f)
{
    if (f->api == IOTAME_API_MPIIO) {
        iotame_mpi_check(MPI_File_close(&f->fh), "MPI_File_close", f->path);
    } else if (close(f->fd) != 0) {
        iotame_fatal("close %s: %s", f->path, strerror(errno));
    }
    f->fd = -1;
    free(f->path);
    f->path = NULL;
}

int iotame_file_remove(iotame_api_t api, const char *path)
{
    if (api == IOTAME_API_POSIX) {
        if (unlink(path) == 0 || errno == ENOENT) return 0;
        iotame_error("cannot remove %s: %s", path, strerror(errno));
        return -1;
    }
    int err = MPI_File_delete(path, MPI_INFO_NULL);
    int cls = MPI_SUCCESS;
    if (err != MPI_SUCCESS) MPI_Error_class(err, &cls);
    if (err == MPI_SUCCESS || cls == MPI_ERR_NO_SUCH_FILE) return 0;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(err, msg, &len);
    iotame_error("cannot remove %s: %s", path, msg);
    return -1;
}
