/* Parallel HDF5 property lists and error checks. */
#include "h5.h"
#include "run.h"

hid_t iotame_h5_check(hid_t status, const char *what, const char *path)
{
    if (status >= 0) return status;
    iotame_fatal("%s %s failed", what, path ? path : "");
}

hid_t iotame_h5_fapl(MPI_Comm comm, MPI_Info info)
{
    hid_t fapl = iotame_h5_check(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate", NULL);
    iotame_h5_check(H5Pset_fapl_mpio(fapl, comm, info), "H5Pset_fapl_mpio", NULL);
    return fapl;
}

hid_t iotame_h5_dxpl(bool collective)
{
    hid_t dxpl = iotame_h5_check(H5Pcreate(H5P_DATASET_XFER), "H5Pcreate", NULL);
    iotame_h5_check(H5Pset_dxpl_mpio(dxpl, collective ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT),
                    "H5Pset_dxpl_mpio", NULL);
    return dxpl;
}
