/* Parallel HDF5 helpers for the HDF5 kernels (flashio, vpicio, vorpalio, gcrmio): property lists for MPI-IO,
 * files, datasets, hyperslab transfers, all with checked calls.
 *
 * Pattern data can go through HDF5 unchanged when the memory type equals the file type (H5T_NATIVE_DOUBLE both
 * sides, say): HDF5 then converts nothing, so iotame_data_fill/check work on the raw bytes of typed arrays.
 *
 * Verifying dataset contents. HDF5 decides where a dataset's bytes go in the file, so the HDF5 kernels check what a
 * dataset holds, not file offsets: every dataset of a run gets a base in a "logical" byte space where the run's
 * datasets lie end to end in an order each kernel documents, and element e of a dataset holds the pattern bytes of
 * writer IOTAME_H5_WRITER at logical offset base + e * element size (e counted row-major over the whole dataset).
 * The data thus depends on (seed, dataset, element) only, not on the process count or decomposition, and a bad
 * element is reported as {"file": "PATH:/dataset", "offset": its logical offset}.
 *
 * Calls that must not fail abort the job through iotame_h5_check (HDF5 prints its error stack first). Opening an
 * input (iotame_h5_open, iotame_h5_dataset_open) may fail: those print why and return a negative id, and the
 * kernel agrees across ranks with iotame_all_ok() before going on; the *_begin functions do both for a pass that
 * writes or reads a file:
 *
 *   hid_t file = iotame_h5_file_begin(run, path, write);
 *   if (file < 0) return IOTAME_EXIT_IO;                            the same on every rank
 *   for each dataset:
 *       hid_t dset = iotame_h5_dataset_begin(run, file, write, name, type, ndims, dims, chunk, path);
 *       if (dset < 0) { rc = IOTAME_EXIT_IO; break; }
 *       ... iotame_h5_select, fill or clear, iotame_h5_io, check, close ...
 *   iotame_h5_file_end(file, path, write);
 */
#ifndef IOTAME_KERNELS_H5_H
#define IOTAME_KERNELS_H5_H

#include <stdbool.h>

#include <hdf5.h>
#include <mpi.h>

#include "run.h"

/* The pattern "writer" of every HDF5 dataset element: see above. */
#define IOTAME_H5_WRITER 0

/* iotame_h5_io memory space meaning: buf holds exactly the selected elements, packed, in selection order. */
#define IOTAME_H5_PACKED ((hid_t)0)

/* File access property list using MPI-IO over comm with info (MPI_INFO_NULL for none). Close with H5Pclose. */
hid_t iotame_h5_fapl(MPI_Comm comm, MPI_Info info);

/* Dataset transfer property list: collective or independent MPI-IO. Close with H5Pclose. */
hid_t iotame_h5_dxpl(bool collective);

/* Aborts the job naming what failed (HDF5 has already printed its error stack) when status is negative; returns
 * status otherwise, so calls can be wrapped: hid_t f = iotame_h5_check(H5Fcreate(...), "H5Fcreate", path); */
hid_t iotame_h5_check(hid_t status, const char *what, const char *path);

/* Closes any HDF5 id (file, group, dataset, dataspace, datatype, property list), aborting on failure. */
void iotame_h5_close(hid_t id, const char *where);

/* Collective. Creates (truncates) path for parallel access over comm with the MPI-IO driver; aborts on failure. */
hid_t iotame_h5_create(const char *path, MPI_Comm comm);
/* Collective. Opens path read-only with the MPI-IO driver; a negative id after printing "cannot open PATH". */
hid_t iotame_h5_open(const char *path, MPI_Comm comm);
/* Collective. H5Fflush (MPI_File_sync underneath) and H5Fclose: ends a timed write phase. */
void iotame_h5_flush_close(hid_t file, const char *path);

/* Collective. The file of one pass: created (truncated) when write, else opened read-only. A negative id on every
 * rank when any rank could not open it (the reason is on stderr). */
hid_t iotame_h5_file_begin(iotame_run_t *run, const char *path, bool write);
/* Collective. Ends the pass: iotame_h5_flush_close after a write, H5Fclose after a read. */
void iotame_h5_file_end(hid_t file, const char *path, bool write);

/* Collective. Creates group `name` under loc; aborts on failure. */
hid_t iotame_h5_group_create(hid_t loc, const char *name, const char *path);

/* Collective. Creates dataset `name` (a path relative to loc) of type and shape dims[ndims], contiguous, or
 * chunked when chunk is not NULL. Never written fill values: every element is written by some rank. */
hid_t iotame_h5_dataset_create(hid_t loc, const char *name, hid_t type, int ndims, const hsize_t *dims,
                               const hsize_t *chunk, const char *path);
/* Opens dataset `name` and checks that it has the given element type and shape (so that reading converts nothing
 * and the logical offsets are those of this run); a negative id after printing what differs. */
hid_t iotame_h5_dataset_open(hid_t loc, const char *name, hid_t type, int ndims, const hsize_t *dims,
                             const char *path);

/* Collective. The dataset of one pass: iotame_h5_dataset_create when write, else iotame_h5_dataset_open (chunk is
 * then unused). A negative id on every rank when any rank could not open it. */
hid_t iotame_h5_dataset_begin(iotame_run_t *run, hid_t loc, bool write, const char *name, hid_t type, int ndims,
                              const hsize_t *dims, const hsize_t *chunk, const char *path);

/* The dataset's file space with a hyperslab selected (H5Sselect_hyperslab's arguments; stride and block may be
 * NULL for ones); nothing selected when a count or block is 0. Close with iotame_h5_close. */
hid_t iotame_h5_select(hid_t dset, const hsize_t *start, const hsize_t *stride, const hsize_t *count,
                       const hsize_t *block, const char *where);

/* H5Dwrite (write) or H5Dread of dset's selection filespace from/to buf, elements of memtype, memory selection
 * memspace or IOTAME_H5_PACKED; transfer list dxpl. Aborts on failure; `where` names the dataset. */
void iotame_h5_io(bool write, hid_t dset, hid_t memtype, hid_t memspace, hid_t filespace, hid_t dxpl, void *buf,
                  const char *where);

#endif
