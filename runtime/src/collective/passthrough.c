/* passthrough: the MPI library's own collective I/O (ROMIO's two-phase in MPICH, OMPIO in Open MPI) on the
 * application's handle, with the application's arguments: the reference every other strategy is compared with.
 * Also home of iotame_coll_library, which the independent strategy shares. */
#include <errno.h>

#include "strategy.h"

int iotame_coll_library(const iotame_coll_args_t *a, int independent)
{
    const int op = a->op + (independent ? 4 : 0); /* the four collective forms, then the four independent ones */
#if MPI_VERSION >= 4
    if (a->large) {
        MPI_Count n = a->count;
        switch (op) {
        case IOTAME_COLL_WRITE_ALL: return PMPI_File_write_all_c(a->fh, a->buf, n, a->datatype, a->status);
        case IOTAME_COLL_READ_ALL: return PMPI_File_read_all_c(a->fh, a->buf, n, a->datatype, a->status);
        case IOTAME_COLL_WRITE_AT_ALL: return PMPI_File_write_at_all_c(a->fh, a->offset, a->buf, n, a->datatype, a->status);
        case IOTAME_COLL_READ_AT_ALL: return PMPI_File_read_at_all_c(a->fh, a->offset, a->buf, n, a->datatype, a->status);
        case IOTAME_COLL_WRITE_ALL + 4: return PMPI_File_write_c(a->fh, a->buf, n, a->datatype, a->status);
        case IOTAME_COLL_READ_ALL + 4: return PMPI_File_read_c(a->fh, a->buf, n, a->datatype, a->status);
        case IOTAME_COLL_WRITE_AT_ALL + 4: return PMPI_File_write_at_c(a->fh, a->offset, a->buf, n, a->datatype, a->status);
        default: return PMPI_File_read_at_c(a->fh, a->offset, a->buf, n, a->datatype, a->status);
        }
    }
#endif
    int n = (int)a->count;
    switch (op) {
    case IOTAME_COLL_WRITE_ALL: return PMPI_File_write_all(a->fh, a->buf, n, a->datatype, a->status);
    case IOTAME_COLL_READ_ALL: return PMPI_File_read_all(a->fh, a->buf, n, a->datatype, a->status);
    case IOTAME_COLL_WRITE_AT_ALL: return PMPI_File_write_at_all(a->fh, a->offset, a->buf, n, a->datatype, a->status);
    case IOTAME_COLL_READ_AT_ALL: return PMPI_File_read_at_all(a->fh, a->offset, a->buf, n, a->datatype, a->status);
    case IOTAME_COLL_WRITE_ALL + 4: return PMPI_File_write(a->fh, a->buf, n, a->datatype, a->status);
    case IOTAME_COLL_READ_ALL + 4: return PMPI_File_read(a->fh, a->buf, n, a->datatype, a->status);
    case IOTAME_COLL_WRITE_AT_ALL + 4: return PMPI_File_write_at(a->fh, a->offset, a->buf, n, a->datatype, a->status);
    default: return PMPI_File_read_at(a->fh, a->offset, a->buf, n, a->datatype, a->status);
    }
}

/* A library without write sieving (OMPIO) writes small noncontiguous pieces one by one, in its independent and its
 * collective calls alike: the engine strategies are examined first for writes there. */
static int passthrough_likely(const iotame_coll_env_t *env, int write) { return !write || env->write_sieving; }

static int passthrough_call(iotame_coll_call_t *c)
{
    c->mpi_error = iotame_coll_library(c->args, 0);
    return c->mpi_error == MPI_SUCCESS ? 0 : -EIO;
}

const iotame_strategy_t iotame_strategy_passthrough = {
    .name = "passthrough",
    .summary = "the MPI library's own collective I/O on the application's handle",
    .number = 0,
    .model = IOTAME_MODEL_PASSTHROUGH,
    .native = 1,
    .likely = passthrough_likely,
    .write_all = passthrough_call,
    .read_all = passthrough_call,
    .write_at_all = passthrough_call,
    .read_at_all = passthrough_call,
};
