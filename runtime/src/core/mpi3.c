/* MPI_Pack_c and MPI_Unpack_c for MPI-3 libraries (core.h): the int forms, called on pieces of whole elements
 * whose packed size fits in an int (element i of a typed buffer starts i extents after its address). */
#include <limits.h>

#include "core.h"

#if MPI_VERSION < 4

/* Elements per piece, and the extent of one; 0 when a single element does not fit in an int. */
static MPI_Count piece(MPI_Datatype datatype, MPI_Aint *extent, int *rc)
{
    MPI_Count size = 0;
    MPI_Aint lb = 0;
    *rc = PMPI_Type_size_x(datatype, &size);
    if (*rc == MPI_SUCCESS) *rc = PMPI_Type_get_extent(datatype, &lb, extent);
    if (*rc != MPI_SUCCESS) return 0;
    return size > 0 ? INT_MAX / size : INT_MAX;
}

static int fit(MPI_Count n) { return n > INT_MAX ? INT_MAX : (int)n; }

int iotame__mpi3_pack(const void *inbuf, MPI_Count incount, MPI_Datatype datatype, void *outbuf, MPI_Count outsize,
                      MPI_Count *position, MPI_Comm comm)
{
    MPI_Aint extent = 0;
    int rc;
    MPI_Count per = piece(datatype, &extent, &rc);
    if (rc != MPI_SUCCESS) return rc;
    if (incount < 0 || *position < 0 || *position > outsize) return MPI_ERR_ARG;
    for (MPI_Count done = 0; done < incount;) {
        if (per == 0) return MPI_ERR_COUNT;
        int k = fit(incount - done < per ? incount - done : per), at = 0;
        rc = PMPI_Pack((const char *)inbuf + done * extent, k, datatype, (char *)outbuf + *position,
                       fit(outsize - *position), &at, comm);
        if (rc != MPI_SUCCESS) return rc;
        *position += at;
        done += k;
    }
    return MPI_SUCCESS;
}

int iotame__mpi3_unpack(const void *inbuf, MPI_Count insize, MPI_Count *position, void *outbuf, MPI_Count outcount,
                        MPI_Datatype datatype, MPI_Comm comm)
{
    MPI_Aint extent = 0;
    int rc;
    MPI_Count per = piece(datatype, &extent, &rc);
    if (rc != MPI_SUCCESS) return rc;
    if (outcount < 0 || *position < 0 || *position > insize) return MPI_ERR_ARG;
    for (MPI_Count done = 0; done < outcount;) {
        if (per == 0) return MPI_ERR_COUNT;
        int k = fit(outcount - done < per ? outcount - done : per), at = 0;
        rc = PMPI_Unpack((const char *)inbuf + *position, fit(insize - *position), &at,
                         (char *)outbuf + done * extent, k, datatype, comm);
        if (rc != MPI_SUCCESS) return rc;
        *position += at;
        done += k;
    }
    return MPI_SUCCESS;
}

#endif
