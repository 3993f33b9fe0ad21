/* Wrappers of H5Dcreate2, H5Dcreate1, H5Dwrite and H5Dread (H5Tuner, Behzad et al. SC13): chunking and allocation
 * time where a dataset is created, collective or independent transfer where it is written and read. */
#include "hdf5/hdf5.h"

/* The creation with our creation list, and again with the application's when HDF5 refuses ours (see
 * hdf5/file.c); a failure of the I/O made with ours (the fill of early allocation) is the call's own and is not
 * retried. Expects loc_id, name, type_id, space_id, dcpl_id and assigns dset. */
#define CREATE(CALL_OURS, CALL_APP, WHAT)                                                                      \
    do {                                                                                                       \
        iotame_h5_report_t r;                                                                                  \
        iotame_h5_plist_t p = iotame_hdf5_dataset_create(loc_id, name, type_id, space_id, dcpl_id, &r);        \
        if (!p.ours) {                                                                                         \
            dset = CALL_APP;                                                                                   \
        } else {                                                                                               \
            iotame_h5_quiet_t q;                                                                               \
            iotame_hdf5_quiet_begin(&q);                                                                       \
            dset = CALL_OURS;                                                                                  \
            char why_[256] = "";                                                                               \
            const int io_ = dset < 0 && iotame_hdf5_error(why_, sizeof why_);                                  \
            iotame_hdf5_quiet_end(&q);                                                                         \
            if (dset >= 0) {                                                                                   \
                iotame_hdf5_dataset_created(dset, &r);                                                         \
            } else if (io_) {                                                                                  \
                iotame_hdf5_quiet_print(&q);                                                                   \
            } else {                                                                                           \
                iotame_hdf5_report_reset(&r); /* nothing of it was applied */                                  \
                iotame_hdf5_not_applied(&r, r.dataset, "dataset creation", WHAT " refused the configured "      \
                                        "properties (%s): the application's own were used", why_);            \
                dset = CALL_APP;                                                                               \
            }                                                                                                  \
        }                                                                                                      \
        iotame_hdf5_plist_release(&p);                                                                         \
        iotame_hdf5_report_commit(&r, dset >= 0);                                                              \
    } while (0)

IOTAME_WRAPPER hid_t H5Dcreate2(hid_t loc_id, const char *name, hid_t type_id, hid_t space_id, hid_t lcpl_id,
                                hid_t dcpl_id, hid_t dapl_id)
{
    const iotame_h5_api_t *h5 = iotame_hdf5_api();
    if (!h5->Dcreate2) return iotame_hdf5_missing("H5Dcreate2");
    iotame_hdf5_count(IOTAME_H5_DCREATE);
    if (!iotame_hdf5_enter()) return h5->Dcreate2(loc_id, name, type_id, space_id, lcpl_id, dcpl_id, dapl_id);
    hid_t dset;
    CREATE(h5->Dcreate2(loc_id, name, type_id, space_id, lcpl_id, p.id, dapl_id),
           h5->Dcreate2(loc_id, name, type_id, space_id, lcpl_id, dcpl_id, dapl_id), "H5Dcreate2");
    iotame_hdf5_leave();
    return dset;
}

IOTAME_WRAPPER hid_t H5Dcreate1(hid_t loc_id, const char *name, hid_t type_id, hid_t space_id, hid_t dcpl_id)
{
    const iotame_h5_api_t *h5 = iotame_hdf5_api();
    if (!h5->Dcreate1) return iotame_hdf5_missing("H5Dcreate1");
    iotame_hdf5_count(IOTAME_H5_DCREATE);
    if (!iotame_hdf5_enter()) return h5->Dcreate1(loc_id, name, type_id, space_id, dcpl_id);
    hid_t dset;
    CREATE(h5->Dcreate1(loc_id, name, type_id, space_id, p.id), h5->Dcreate1(loc_id, name, type_id, space_id, dcpl_id),
           "H5Dcreate1");
    iotame_hdf5_leave();
    return dset;
}

IOTAME_WRAPPER herr_t H5Dwrite(hid_t dset_id, hid_t mem_type_id, hid_t mem_space_id, hid_t file_space_id,
                               hid_t dxpl_id, const void *buf)
{
    const iotame_h5_api_t *h5 = iotame_hdf5_api();
    if (!h5->Dwrite) return iotame_hdf5_missing("H5Dwrite");
    iotame_hdf5_count(IOTAME_H5_DWRITE);
    if (!iotame_hdf5_enter()) return h5->Dwrite(dset_id, mem_type_id, mem_space_id, file_space_id, dxpl_id, buf);
    iotame_h5_plist_t p = iotame_hdf5_transfer(dset_id, dxpl_id);
    herr_t rc = h5->Dwrite(dset_id, mem_type_id, mem_space_id, file_space_id, p.id, buf);
    iotame_hdf5_transfer_done(&p, dxpl_id);
    iotame_hdf5_leave();
    return rc;
}

IOTAME_WRAPPER herr_t H5Dread(hid_t dset_id, hid_t mem_type_id, hid_t mem_space_id, hid_t file_space_id,
                              hid_t dxpl_id, void *buf)
{
    const iotame_h5_api_t *h5 = iotame_hdf5_api();
    if (!h5->Dread) return iotame_hdf5_missing("H5Dread");
    iotame_hdf5_count(IOTAME_H5_DREAD);
    if (!iotame_hdf5_enter()) return h5->Dread(dset_id, mem_type_id, mem_space_id, file_space_id, dxpl_id, buf);
    iotame_h5_plist_t p = iotame_hdf5_transfer(dset_id, dxpl_id);
    herr_t rc = h5->Dread(dset_id, mem_type_id, mem_space_id, file_space_id, p.id, buf);
    iotame_hdf5_transfer_done(&p, dxpl_id);
    iotame_hdf5_leave();
    return rc;
}
