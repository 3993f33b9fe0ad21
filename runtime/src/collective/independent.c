/* independent: each rank's part of the collective call as the MPI library's independent call on the application's
 * handle (MPI_File_write_all -> MPI_File_write, ...), so ROMIO serves it with data sieving: one read-modify-write
 * of the rank's whole range instead of a data exchange. Measured here (docs/reproductions/orthrus.md) it is the
 * fastest way to write and read small interleaved pieces on one node: the exchange of two-phase costs more than
 * the data it saves. Same file pointer, status and error semantics as the collective call (a collective call
 * promises nothing an independent one does not, beyond every rank calling it).
 * RATIONALE: ROMIO's data-sieving writes lock the range they rewrite (fcntl); a file system without working
 * locks makes ROMIO abort the job. Only files on local disk file systems take this path; the others get the
 * library's collective call. */
#include <errno.h>

#include "strategy.h"

static int call(iotame_coll_call_t *c)
{
    const iotame_coll_args_t *a = c->args;
    if (!c->env->local_fs) return iotame_strategy_passthrough.write_all(c); /* any op: passthrough dispatches */
    int rc;
#if MPI_VERSION >= 4
    if (a->large) {
        switch (a->op) {
        case IOTAME_COLL_WRITE_ALL: rc = PMPI_File_write_c(a->fh, a->buf, a->count, a->datatype, a->status); break;
        case IOTAME_COLL_READ_ALL: rc = PMPI_File_read_c(a->fh, a->buf, a->count, a->datatype, a->status); break;
        case IOTAME_COLL_WRITE_AT_ALL:
            rc = PMPI_File_write_at_c(a->fh, a->offset, a->buf, a->count, a->datatype, a->status);
            break;
        default: rc = PMPI_File_read_at_c(a->fh, a->offset, a->buf, a->count, a->datatype, a->status);
        }
        c->mpi_error = rc;
        return rc == MPI_SUCCESS ? 0 : -EIO;
    }
#endif
    int n = (int)a->count;
    switch (a->op) {
    case IOTAME_COLL_WRITE_ALL: rc = PMPI_File_write(a->fh, a->buf, n, a->datatype, a->status); break;
    case IOTAME_COLL_READ_ALL: rc = PMPI_File_read(a->fh, a->buf, n, a->datatype, a->status); break;
    case IOTAME_COLL_WRITE_AT_ALL: rc = PMPI_File_write_at(a->fh, a->offset, a->buf, n, a->datatype, a->status); break;
    default: rc = PMPI_File_read_at(a->fh, a->offset, a->buf, n, a->datatype, a->status);
    }
    c->mpi_error = rc;
    return rc == MPI_SUCCESS ? 0 : -EIO;
}

const iotame_strategy_t iotame_strategy_independent = {
    .name = "independent",
    .summary = "each rank's part as the library's independent call (data sieving), on local file systems",
    .native = 1,
    .write_all = call,
    .read_all = call,
    .write_at_all = call,
    .read_at_all = call,
};
