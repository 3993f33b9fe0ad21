/* Parallel HDF5 helpers for the HDF5 kernels (flashio, vpicio): property lists for MPI-IO and checked calls.
 *
 * Pattern data can go through HDF5 unchanged when the memory type equals the file type (H5T_NATIVE_DOUBLE both
 * sides, say): HDF5 then converts nothing, so iotame_data_fill/check work on the raw bytes of typed arrays.
 */
#ifndef IOTAME_KERNELS_H5_H
#define IOTAME_KERNELS_H5_H

#include <stdbool.h>

#include <hdf5.h>
#include <mpi.h>

/* File access property list using MPI-IO over comm with info (MPI_INFO_NULL for none). Close with H5Pclose. */
hid_t iotame_h5_fapl(MPI_Comm comm, MPI_Info info);

/* Dataset transfer property list: collective or independent MPI-IO. Close with H5Pclose. */
hid_t iotame_h5_dxpl(bool collective);

/* Aborts the job naming what failed (HDF5 has already printed its error stack) when status is negative; returns
 * status otherwise, so calls can be wrapped: hid_t f = iotame_h5_check(H5Fcreate(...), "H5Fcreate", path); */
hid_t iotame_h5_check(hid_t status, const char *what, const char *path);

#endif
