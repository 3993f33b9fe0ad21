/* Parallel HDF5 property lists, files, datasets and hyperslab transfers with error checks. */
#include <stdio.h>
#include <string.h>

#include "h5.h"
#include "run.h"

hid_t iotame_h5_check(hid_t status, const char *what, const char *path)
{
    if (status >= 0) return status;
    iotame_fatal("%s %s failed", what, path ? path : "");
}

void iotame_h5_close(hid_t id, const char *where)
{
    herr_t rc;
    switch (H5Iget_type(id)) {
    case H5I_FILE: rc = H5Fclose(id); break;
    case H5I_GROUP: rc = H5Gclose(id); break;
    case H5I_DATASET: rc = H5Dclose(id); break;
    case H5I_DATASPACE: rc = H5Sclose(id); break;
    case H5I_DATATYPE: rc = H5Tclose(id); break;
    case H5I_GENPROP_LST: rc = H5Pclose(id); break;
    default: rc = -1; break;
    }
    iotame_h5_check(rc, "closing", where);
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

hid_t iotame_h5_create(const char *path, MPI_Comm comm)
{
    hid_t fapl = iotame_h5_fapl(comm, MPI_INFO_NULL);
    hid_t file = iotame_h5_check(H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl), "H5Fcreate", path);
    iotame_h5_close(fapl, path);
    return file;
}

hid_t iotame_h5_open(const char *path, MPI_Comm comm)
{
    hid_t fapl = iotame_h5_fapl(comm, MPI_INFO_NULL), file;
    /* RATIONALE: a missing input is a user error, not a library failure: one line instead of HDF5's stack. */
    H5E_BEGIN_TRY { file = H5Fopen(path, H5F_ACC_RDONLY, fapl); }
    H5E_END_TRY;
    iotame_h5_close(fapl, path);
    if (file < 0) iotame_error("cannot open %s: missing, or not an HDF5 file", path);
    return file;
}

void iotame_h5_flush_close(hid_t file, const char *path)
{
    iotame_h5_check(H5Fflush(file, H5F_SCOPE_GLOBAL), "H5Fflush", path);
    iotame_h5_close(file, path);
}

hid_t iotame_h5_file_begin(iotame_run_t *run, const char *path, bool write)
{
    hid_t file = write ? iotame_h5_create(path, run->comm) : iotame_h5_open(path, run->comm);
    if (iotame_all_ok(run, file >= 0)) return file;
    if (file >= 0) iotame_h5_close(file, path);
    return -1;
}

void iotame_h5_file_end(hid_t file, const char *path, bool write)
{
    if (write) iotame_h5_flush_close(file, path);
    else iotame_h5_close(file, path);
}

hid_t iotame_h5_group_create(hid_t loc, const char *name, const char *path)
{
    hid_t g = H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    return iotame_h5_check(g, "H5Gcreate", path);
}

hid_t iotame_h5_dataset_create(hid_t loc, const char *name, hid_t type, int ndims, const hsize_t *dims,
                               const hsize_t *chunk, const char *path)
{
    hid_t space = iotame_h5_check(H5Screate_simple(ndims, dims, NULL), "H5Screate_simple", path);
    hid_t dcpl = iotame_h5_check(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate", path);
    /* RATIONALE: like the benchmarks' applications, never write fill values: every element gets written anyway,
     * and parallel HDF5 would otherwise write each dataset twice. */
    iotame_h5_check(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER), "H5Pset_fill_time", path);
    if (chunk) iotame_h5_check(H5Pset_chunk(dcpl, ndims, chunk), "H5Pset_chunk", path);
    hid_t dset = H5Dcreate2(loc, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    iotame_h5_check(dset, "H5Dcreate", path);
    iotame_h5_close(dcpl, path);
    iotame_h5_close(space, path);
    return dset;
}

/* "[4, 3]" */
static void shape_str(int ndims, const hsize_t *dims, char *buf, size_t n)
{
    size_t len = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndims && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%llu", i ? ", " : "", (unsigned long long)dims[i]);
    if (len < n) snprintf(buf + len, n - len, "]");
}

hid_t iotame_h5_dataset_open(hid_t loc, const char *name, hid_t type, int ndims, const hsize_t *dims,
                             const char *path)
{
    hid_t dset;
    H5E_BEGIN_TRY { dset = H5Dopen2(loc, name, H5P_DEFAULT); }
    H5E_END_TRY;
    if (dset < 0) {
        iotame_error("%s has no dataset \"%s\" (written with other options?)", path, name);
        return -1;
    }
    hid_t ftype = iotame_h5_check(H5Dget_type(dset), "H5Dget_type", path);
    htri_t same_type = (htri_t)iotame_h5_check(H5Tequal(ftype, type), "H5Tequal", path);
    iotame_h5_close(ftype, path);
    hid_t space = iotame_h5_check(H5Dget_space(dset), "H5Dget_space", path);
    int fdims = (int)iotame_h5_check(H5Sget_simple_extent_ndims(space), "H5Sget_simple_extent_ndims", path);
    hsize_t have[H5S_MAX_RANK];
    bool same_shape = fdims == ndims;
    if (same_shape) {
        iotame_h5_check(H5Sget_simple_extent_dims(space, have, NULL), "H5Sget_simple_extent_dims", path);
        same_shape = memcmp(have, dims, (size_t)ndims * sizeof *dims) == 0;
    }
    iotame_h5_close(space, path);
    if (same_type && same_shape) return dset;
    char want[256], got[256];
    shape_str(ndims, dims, want, sizeof want);
    if (fdims == ndims) shape_str(fdims, have, got, sizeof got);
    else snprintf(got, sizeof got, "of %d dimensions", fdims);
    if (!same_type)
        iotame_error("dataset \"%s\" in %s has another element type than this kernel writes", name, path);
    else
        iotame_error("dataset \"%s\" in %s has shape %s, expected %s (written with other options or process "
                     "count?)", name, path, got, want);
    iotame_h5_close(dset, path);
    return -1;
}

hid_t iotame_h5_dataset_begin(iotame_run_t *run, hid_t loc, bool write, const char *name, hid_t type, int ndims,
                              const hsize_t *dims, const hsize_t *chunk, const char *path)
{
    hid_t dset = write ? iotame_h5_dataset_create(loc, name, type, ndims, dims, chunk, path)
                       : iotame_h5_dataset_open(loc, name, type, ndims, dims, path);
    if (iotame_all_ok(run, dset >= 0)) return dset;
    if (dset >= 0) iotame_h5_close(dset, path);
    return -1;
}

hid_t iotame_h5_select(hid_t dset, const hsize_t *start, const hsize_t *stride, const hsize_t *count,
                       const hsize_t *block, const char *where)
{
    hid_t space = iotame_h5_check(H5Dget_space(dset), "H5Dget_space", where);
    int ndims = (int)iotame_h5_check(H5Sget_simple_extent_ndims(space), "H5Sget_simple_extent_ndims", where);
    bool empty = false;
    for (int i = 0; i < ndims; i++) empty = empty || count[i] == 0 || (block && block[i] == 0);
    if (empty) iotame_h5_check(H5Sselect_none(space), "H5Sselect_none", where);
    else iotame_h5_check(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, stride, count, block),
                         "H5Sselect_hyperslab", where);
    return space;
}

void iotame_h5_io(bool write, hid_t dset, hid_t memtype, hid_t memspace, hid_t filespace, hid_t dxpl, void *buf,
                  const char *where)
{
    hid_t mspace = memspace;
    if (memspace == IOTAME_H5_PACKED) {
        hssize_t n = iotame_h5_check(H5Sget_select_npoints(filespace), "H5Sget_select_npoints", where);
        hsize_t dim = n > 0 ? (hsize_t)n : 1;
        mspace = iotame_h5_check(H5Screate_simple(1, &dim, NULL), "H5Screate_simple", where);
        /* An empty selection still takes part in a collective transfer. */
        if (n == 0) iotame_h5_check(H5Sselect_none(mspace), "H5Sselect_none", where);
    }
    if (write) iotame_h5_check(H5Dwrite(dset, memtype, mspace, filespace, dxpl, buf), "H5Dwrite", where);
    else iotame_h5_check(H5Dread(dset, memtype, mspace, filespace, dxpl, buf), "H5Dread", where);
    if (mspace != memspace) iotame_h5_close(mspace, where);
}
