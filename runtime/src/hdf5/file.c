/* Wrappers of H5Fcreate and H5Fopen (H5Tuner, Behzad et al. SC13: the file-level HDF5 and MPI-IO parameters are
 * set where the application creates or opens its file). The MPI_File_open that HDF5 makes underneath is
 * intercepted as usual, so the file's MPI-IO hints and statistics are those of any MPI-IO file. */
#include "hdf5/hdf5.h"

/* The real call with our access list, and again with the application's when HDF5 refuses ours.
 * RATIONALE: HDF5 checks property lists before any I/O, so such a failure happens on every rank alike and the
 * retry stays collective; a failure that has nothing to do with our properties fails again, with HDF5's error
 * stack printed as the application would have seen it. A failed read or write made with ours is not retried:
 * HDF5 accepted them, and storage may fail on some ranks only, where a retry would no longer be collective. */
#define WITH_RETRY(result, CALL_OURS, CALL_APP, WHAT)                                                          \
    do {                                                                                                       \
        if (!p.ours) {                                                                                         \
            result = CALL_APP;                                                                                 \
            break;                                                                                             \
        }                                                                                                      \
        iotame_h5_quiet_t q;                                                                                   \
        iotame_hdf5_quiet_begin(&q);                                                                           \
        result = CALL_OURS;                                                                                    \
        char why_[256] = "";                                                                                   \
        const int io_ = result < 0 && iotame_hdf5_error(why_, sizeof why_);                                    \
        iotame_hdf5_quiet_end(&q);                                                                             \
        if (result >= 0) break;                                                                                \
        if (io_) {                                                                                             \
            iotame_hdf5_quiet_print(&q);                                                                       \
            break;                                                                                             \
        }                                                                                                      \
        iotame_hdf5_report_reset(&r); /* nothing of it was applied */                                          \
        iotame_hdf5_not_applied(&r, NULL, "file access", WHAT " refused the configured properties (%s): the "  \
                                "application's own were used", why_);                                          \
        result = CALL_APP;                                                                                     \
    } while (0)

IOTAME_WRAPPER hid_t H5Fcreate(const char *filename, unsigned flags, hid_t fcpl, hid_t fapl)
{
    const iotame_h5_api_t *h5 = iotame_hdf5_api();
    if (!h5->Fcreate) return iotame_hdf5_missing("H5Fcreate");
    iotame_hdf5_count(IOTAME_H5_FCREATE);
    if (!filename || !iotame_hdf5_enter()) return h5->Fcreate(filename, flags, fcpl, fapl);
    iotame_modules_opening(&(iotame_open_t){.fh = MPI_FILE_NULL, .comm = MPI_COMM_NULL, .path = filename,
                                            .info = MPI_INFO_NULL});
    iotame_h5_report_t r;
    iotame_h5_plist_t p = iotame_hdf5_file_access(filename, fapl, &r);
    hid_t file;
    WITH_RETRY(file, h5->Fcreate(filename, flags, fcpl, p.id), h5->Fcreate(filename, flags, fcpl, fapl), "H5Fcreate");
    iotame_hdf5_plist_release(&p);
    iotame_hdf5_report_commit(&r, file >= 0);
    iotame_hdf5_leave();
    return file;
}

IOTAME_WRAPPER hid_t H5Fopen(const char *filename, unsigned flags, hid_t fapl)
{
    const iotame_h5_api_t *h5 = iotame_hdf5_api();
    if (!h5->Fopen) return iotame_hdf5_missing("H5Fopen");
    iotame_hdf5_count(IOTAME_H5_FOPEN);
    if (!filename || !iotame_hdf5_enter()) return h5->Fopen(filename, flags, fapl);
    iotame_modules_opening(&(iotame_open_t){.fh = MPI_FILE_NULL, .comm = MPI_COMM_NULL, .path = filename,
                                            .info = MPI_INFO_NULL});
    iotame_h5_report_t r;
    iotame_h5_plist_t p = iotame_hdf5_file_access(filename, fapl, &r);
    hid_t file;
    WITH_RETRY(file, h5->Fopen(filename, flags, p.id), h5->Fopen(filename, flags, fapl), "H5Fopen");
    iotame_hdf5_plist_release(&p);
    iotame_hdf5_report_commit(&r, file >= 0);
    iotame_hdf5_leave();
    return file;
}
