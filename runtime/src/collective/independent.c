/* independent: each rank's part of the collective call as the MPI library's independent call on the application's
 * handle (MPI_File_write_all -> MPI_File_write, ...), so ROMIO serves it with data sieving: one read-modify-write
 * of the rank's whole range instead of a data exchange, which on one node with small interleaved pieces is often
 * the fastest (docs/collective.md). Same file pointer, status and error semantics as the collective call (a
 * collective call promises nothing an independent one does not, beyond every rank calling it). Under Open MPI's
 * OMPIO writes are not sieved (one pwritev per contiguous piece, no locks); reads are. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "posix/posix.h"
#include "strategy.h"

/* ROMIO's data-sieving writes lock the range they rewrite (fcntl), and a file system without working locks makes
 * ROMIO abort the job: only files on local disk file systems (agreed at open) take this path. */
static int independent_applies(const iotame_coll_env_t *env) { return env->local_fs; }

/* A library without write sieving (OMPIO) writes small noncontiguous pieces one by one, in its independent and its
 * collective calls alike: the engine strategies are examined first for writes there. */
static int independent_likely(const iotame_coll_env_t *env, int write) { return !write || env->write_sieving; }

/* ROMIO's sieved write locks the range it rewrites, and when the write fails it returns without unlocking it: the
 * other ranks' next sieved writes of that range then wait forever, where the collective call the application made
 * would have returned the error. After a failed write this process's byte-range locks on the file are released
 * (locks belong to the process, whatever descriptor set them), so the error is all the others see. */
static void independent_release_locks(const char *path)
{
    iotame_posix_quiet_begin();
    int fd = open(iotame_posix_path(path), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        struct flock all = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
        (void)fcntl(fd, F_SETLK, &all);
        close(fd);
    }
    iotame_posix_quiet_end();
}

static int independent_call(iotame_coll_call_t *c)
{
    /* where it does not apply: the library's collective call */
    const int applies = independent_applies(c->env);
    const unsigned long failed = iotame_posix_failed_requests();
    c->mpi_error = iotame_coll_library(c->args, applies);
    if (c->mpi_error == MPI_SUCCESS && iotame_posix_failed_requests() != failed) c->mpi_error = MPI_ERR_IO;
    const int write = c->args->op == IOTAME_COLL_WRITE_ALL || c->args->op == IOTAME_COLL_WRITE_AT_ALL;
    if (c->mpi_error != MPI_SUCCESS && applies && write) independent_release_locks(c->env->path);
    return c->mpi_error == MPI_SUCCESS ? 0 : -EIO;
}

const iotame_strategy_t iotame_strategy_independent = {
    .name = "independent",
    .summary = "each rank's part as the library's independent call (data sieving), on local file systems",
    .number = 4,
    .model = IOTAME_MODEL_INDEPENDENT,
    .native = 1,
    .likely = independent_likely,
    .applies = independent_applies,
    .write_all = independent_call,
    .read_all = independent_call,
    .write_at_all = independent_call,
    .read_at_all = independent_call,
};
