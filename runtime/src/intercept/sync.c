/* Wrapper of MPI_Barrier: the application's synchronization points, where the throttle sees the load imbalance of
 * Seelam et al. ("Throttling I/O Streams to Accelerate File-I/O Performance") after an I/O phase (the time a process
 * waits at the next barrier for the others' I/O). Barriers made inside MPI-IO or HDF5 calls (iotame__depth > 0) are
 * the library's own and are not shown to the modules. */
#include "intercept.h"

IOTAME_WRAPPER int MPI_Barrier(MPI_Comm comm)
{
    if (__builtin_expect(!iotame__hooks_barrier.n || iotame__depth, 1)) return PMPI_Barrier(comm);
    uint64_t t0 = iotame_monotonic_ns();
    int rc = PMPI_Barrier(comm);
    iotame_modules_barrier(iotame_monotonic_ns() - t0);
    return rc;
}
