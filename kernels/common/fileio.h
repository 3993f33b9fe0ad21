/* Files through one interface whatever the API (POSIX open/pwrite/pread/fsync or MPI_File_*), and MPI error checks.
 *
 * Opening may legitimately fail (a missing input file): iotame_file_open prints why and returns nonzero, and the
 * kernel agrees across ranks with iotame_all_ok() before going on. Data calls (read, write, sync, close) failing or
 * moving fewer bytes than asked is never expected: they print the reason and abort the job with IOTAME_EXIT_IO.
 */
#ifndef IOTAME_KERNELS_FILEIO_H
#define IOTAME_KERNELS_FILEIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

typedef enum { IOTAME_API_POSIX, IOTAME_API_MPIIO } iotame_api_t;

/* {"POSIX", "MPIIO", NULL}: usable as IOTAME_OPT_ENUM choices, indexed by iotame_api_t. */
extern const char *const iotame_api_names[];

enum { IOTAME_FILE_READ = 1, IOTAME_FILE_WRITE = 2, IOTAME_FILE_CREATE = 4 };

typedef struct iotame_file {
    iotame_api_t api;
    int fd;       /* POSIX */
    MPI_File fh;  /* MPIIO */
    char *path;
} iotame_file_t;

/* Opens path with mode = IOTAME_FILE_READ and/or _WRITE, optionally | _CREATE. MPIIO: collective over comm
 * (MPI_COMM_SELF for a file per process) with info (MPI_INFO_NULL for none); POSIX ignores comm and info.
 * Returns 0, or nonzero after printing the reason on stderr. */
int iotame_file_open(iotame_file_t *f, iotame_api_t api, MPI_Comm comm, const char *path, int mode, MPI_Info info);

/* Whole-buffer transfers at an absolute offset; collective (MPI_File_*_at_all) needs MPIIO. */
void iotame_file_write_at(iotame_file_t *f, uint64_t offset, const void *buf, size_t len, bool collective);
void iotame_file_read_at(iotame_file_t *f, uint64_t offset, void *buf, size_t len, bool collective);
void iotame_file_sync(iotame_file_t *f); /* fsync / MPI_File_sync (collective) */
uint64_t iotame_file_size(iotame_file_t *f);
void iotame_file_close(iotame_file_t *f); /* collective for MPIIO */

/* Removes path (MPI_File_delete or unlink; not collective: call it on one rank per file). A missing file is not an
 * error. Returns 0, or nonzero after printing the reason. */
int iotame_file_remove(iotame_api_t api, const char *path);

/* Aborts the job with a message naming what failed and MPI_Error_string(err) unless err is MPI_SUCCESS. */
void iotame_mpi_check(int err, const char *what, const char *path);

/* Buffer aligned for direct I/O (4 KiB), aborting when out of memory. Free with free(). */
void *iotame_alloc(size_t len);

#endif
