/* Wrappers of MPI_Init, MPI_Init_thread and MPI_Finalize: the runtime's life cycle. MPICH's Fortran
 * bindings call these C entry points, so Fortran applications are covered too. */
#include <stdio.h>

#include "intercept.h"

static void intercept_start(void)
{
    static int started; /* an MPI whose PMPI_Init calls MPI_Init_thread must not start us twice */
    if (started) return;
    started = 1;
    int provided = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&provided);
    iotame_core_init(provided);
}

IOTAME_WRAPPER int MPI_Init(int *argc, char ***argv)
{
    iotame_partial_snapshot(); /* the application's signal handlers, before the library adds its own */
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) intercept_start();
    return rc;
}

IOTAME_WRAPPER int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    iotame_partial_snapshot();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) intercept_start();
    return rc;
}

/* The modules finish their work, then the statistics are reduced (core), then the library finalizes. */
IOTAME_WRAPPER int MPI_Finalize(void)
{
    iotame_core_finalize();
    return PMPI_Finalize();
}

/* The job ends here: this process writes its own statistics first (partial, core/partial.c), then aborts. */
IOTAME_WRAPPER int MPI_Abort(MPI_Comm comm, int errorcode)
{
    char reason[128];
    snprintf(reason, sizeof reason, "MPI_Abort(%s, %d) called on rank %d",
             comm == MPI_COMM_WORLD ? "MPI_COMM_WORLD" : "comm", errorcode, iotame_core_rank());
    iotame_core_write_partial(reason, 0);
    return PMPI_Abort(comm, errorcode);
}
