/* intercept: the PMPI wrappers. Each one looks up the file's record, times the call, and hands it to the
 * registered modules (core/module.h) in their order; decisions live in the modules. This header holds what every
 * wrapper shares. */
#ifndef IOTAME_INTERCEPT_H
#define IOTAME_INTERCEPT_H

#include "core/core.h"
#include "core/module.h"

/* Only the wrappers are exported; everything else in libiotame.so is hidden (no PLT hops inside the library). */
#define IOTAME_WRAPPER __attribute__((visibility("default")))

/* Enters a wrapper. Returns 0 when the call must go straight to the library: the runtime is inactive
 * (before MPI_Init, IOTAME_DISABLE=1, after MPI_Finalize) or we are already inside one of our wrappers. */
static inline int iotame__enter_call(const char *call)
{
    if (!iotame__active || iotame__depth) return 0;
    iotame__depth++;
    iotame_where_enter(call);
    return 1;
}
/* The wrapper's own name is the call the watchdog reports (core/watch.h). */
#define iotame__enter() iotame__enter_call(__func__)

/* The record of a handle, which the watchdog also takes for the file the current call is about. */
static inline iotame_file_t *iotame__lookup(MPI_File fh)
{
    iotame_file_t *f = iotame_file_lookup(fh);
    iotame_where_file(f ? f->fs : NULL);
    return f;
}

static inline void iotame__leave(void)
{
    iotame_where_leave();
    iotame__depth--;
}

/* Bytes a completed call moved, from its status. MPICH and Open MPI keep the byte count in public
 * fields of MPI_Status (mpi.h); reading them costs a few instructions where PMPI_Get_elements_x costs a hundred,
 * which is most of a wrapper's overhead on small requests. Other MPIs take the portable call. */
static inline uint64_t iotame__status_bytes(const MPI_Status *status, int rc)
{
    if (rc != MPI_SUCCESS) return 0;
#if defined(MPICH)
    /* count_hi_and_cancelled holds the high bits above the "cancelled" bit */
    return (uint64_t)(unsigned)status->count_lo | (uint64_t)((unsigned)status->count_hi_and_cancelled >> 1) << 32;
#elif defined(OPEN_MPI)
    return (uint64_t)status->_ucount;
#else
    MPI_Count n = 0;
    if (PMPI_Get_elements_x(status, MPI_BYTE, &n) != MPI_SUCCESS || n < 0) return 0;
    return (uint64_t)n;
#endif
}

/* The size of a datatype. MPICH encodes the size of its builtin types in the handle (kind 0x1 in
 * bits 30-31, size in bits 8-15; core checks this against PMPI_Type_size_x at start-up and sets
 * iotame__builtin_sizes), which saves a library call on every request of a basic type. */
static inline uint64_t iotame__type_size(MPI_Datatype datatype)
{
#if defined(MPICH)
    unsigned h = (unsigned)datatype;
    if (iotame__builtin_sizes && (h >> 30) == 1u) return (h >> 8) & 0xffu;
#endif
    MPI_Count size = 0;
    if (PMPI_Type_size_x(datatype, &size) != MPI_SUCCESS || size < 0) return 0;
    return (uint64_t)size;
}

/* Bytes a call asks for: count elements of datatype. */
static inline uint64_t iotame__request_bytes(MPI_Count count, MPI_Datatype datatype)
{
    return count > 0 ? (uint64_t)count * iotame__type_size(datatype) : 0;
}

/* Bytes a blocking call moved. With a status, what it reports; with MPI_STATUS_IGNORE, what was asked.
 * Giving the library a status of our own makes ROMIO fill it (more instructions than the rest of the
 * wrapper); a write moves all it asked for or fails, and a read past the end of file whose caller
 * ignores the count is rare enough to count as asked. */
static inline uint64_t iotame__moved_bytes(const MPI_Status *status, int rc, MPI_Count count, MPI_Datatype datatype)
{
    if (rc != MPI_SUCCESS) return 0;
    return status == MPI_STATUS_IGNORE ? iotame__request_bytes(count, datatype) : iotame__status_bytes(status, rc);
}

#endif
