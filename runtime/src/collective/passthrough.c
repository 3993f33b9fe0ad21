/* passthrough: the MPI library's own collective I/O (ROMIO's two-phase in MPICH, OMPIO in Open MPI) on the
 * application's handle, with the application's arguments: the reference every other strategy is compared with. */
#include <errno.h>

#include "strategy.h"

static int call(iotame_coll_call_t *c)
{
    const iotame_coll_args_t *a = c->args;
    int rc;
#if MPI_VERSION >= 4
    if (a->large) {
        switch (a->op) {
        case IOTAME_COLL_WRITE_ALL: rc = PMPI_File_write_all_c(a->fh, a->buf, a->count, a->datatype, a->status); break;
        case IOTAME_COLL_READ_ALL: rc = PMPI_File_read_all_c(a->fh, a->buf, a->count, a->datatype, a->status); break;
        case IOTAME_COLL_WRITE_AT_ALL:
            rc = PMPI_File_write_at_all_c(a->fh, a->offset, a->buf, a->count, a->datatype, a->status);
            break;
        default: rc = PMPI_File_read_at_all_c(a->fh, a->offset, a->buf, a->count, a->datatype, a->status);
        }
        c->mpi_error = rc;
        return rc == MPI_SUCCESS ? 0 : -EIO;
    }
#endif
    int n = (int)a->count;
    switch (a->op) {
    case IOTAME_COLL_WRITE_ALL: rc = PMPI_File_write_all(a->fh, a->buf, n, a->datatype, a->status); break;
    case IOTAME_COLL_READ_ALL: rc = PMPI_File_read_all(a->fh, a->buf, n, a->datatype, a->status); break;
    case IOTAME_COLL_WRITE_AT_ALL: rc = PMPI_File_write_at_all(a->fh, a->offset, a->buf, n, a->datatype, a->status); break;
    default: rc = PMPI_File_read_at_all(a->fh, a->offset, a->buf, n, a->datatype, a->status);
    }
    c->mpi_error = rc;
    return rc == MPI_SUCCESS ? 0 : -EIO;
}

const iotame_strategy_t iotame_strategy_passthrough = {
    .name = "passthrough",
    .summary = "the MPI library's own collective I/O on the application's handle",
    .native = 1,
    .write_all = call,
    .read_all = call,
    .write_at_all = call,
    .read_at_all = call,
};
