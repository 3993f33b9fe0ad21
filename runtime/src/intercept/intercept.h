/* intercept: the PMPI wrappers. Each one looks up nothing but the file's record, times the real call, and
 * records it; decisions live in the other parts. This header holds what every wrapper shares. */
#ifndef IOTAME_INTERCEPT_H
#define IOTAME_INTERCEPT_H

#include "core/core.h"

/* Enters a wrapper. Returns 0 when the call must go straight to the library: the runtime is inactive
 * (before MPI_Init, IOTAME_DISABLE=1, after MPI_Finalize) or we are already inside one of our wrappers. */
static inline int iotame__enter(void)
{
    if (!iotame__active || iotame__depth) return 0;
    iotame__depth++;
    return 1;
}

static inline void iotame__leave(void) { iotame__depth--; }

/* Bytes a completed call moved, from its status. MPICH and Open MPI keep the count in bytes, so asking for
 * MPI_BYTE elements gives it exactly, whatever the datatype. */
static inline uint64_t iotame__status_bytes(MPI_Status *status, int rc)
{
    MPI_Count n = 0;
    if (rc != MPI_SUCCESS || PMPI_Get_elements_x(status, MPI_BYTE, &n) != MPI_SUCCESS || n < 0) return 0;
    return (uint64_t)n;
}

/* Bytes a call asks for: count elements of datatype (nonblocking and split collectives, counted at issue). */
static inline uint64_t iotame__request_bytes(MPI_Count count, MPI_Datatype datatype)
{
    MPI_Count size = 0;
    if (PMPI_Type_size_x(datatype, &size) != MPI_SUCCESS || size < 0 || count < 0) return 0;
    return (uint64_t)count * (uint64_t)size;
}

#endif
