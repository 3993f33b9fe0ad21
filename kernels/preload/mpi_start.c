/* libiotame-start.so: starts MPI, and with it a preloaded libiotame.so, in a program that never calls MPI_Init
 * itself (fio under `iotame calibrate --config`, so that the runtime's emulated storage delays its requests).
 * Preloaded after libiotame.so: LD_PRELOAD=libiotame.so:libiotame-start.so. MPI starts as a singleton; forked
 * children (fio's jobs) inherit the started runtime and never finalize it, only the process that started it does. */
#include <mpi.h>
#include <unistd.h>

static pid_t mpi_start_pid;

__attribute__((constructor)) static void mpi_start_init(void)
{
    int started = 0;
    MPI_Initialized(&started);
    if (!started && MPI_Init(NULL, NULL) == MPI_SUCCESS) mpi_start_pid = getpid();
}

__attribute__((destructor)) static void mpi_start_finalize(void)
{
    int finished = 0;
    if (mpi_start_pid != getpid()) return;
    MPI_Finalized(&finished);
    if (!finished) MPI_Finalize();
}
