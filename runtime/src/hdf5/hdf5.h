/* hdf5: the HDF5 layer of the runtime (Behzad et al., SC13, H5Tuner: HDF5, MPI-IO and file-system parameters set
 * inside an unmodified application by intercepting its HDF5 calls). The only interface of runtime/src/hdf5/.
 *
 * libiotame.so does not link HDF5: most MPI applications do not use it. The wrappers (H5Fcreate, H5Fopen,
 * H5Dcreate2, H5Dcreate1, H5Dwrite, H5Dread) are only ever called by an application that links HDF5; they find the
 * real functions with dlsym(RTLD_NEXT) and every other HDF5 function they need in the same library, at first use.
 * The HDF5 headers are included for types and constants only; lookup.c checks that the library's version fits them.
 *
 * The wrappers never modify the application's property lists: they apply the configuration to copies, close the
 * copies after the call, and when a property cannot be applied the call proceeds without it and the statistics
 * say why ("hdf5" of the file's record, docs/formats.md).
 */
#ifndef IOTAME_HDF5_H
#define IOTAME_HDF5_H

#include <hdf5.h>

#include "core/module.h"
#include "intercept/intercept.h"

#ifndef H5_HAVE_PARALLEL
#error "runtime/src/hdf5 is built against the headers of a parallel HDF5 (pkg-config hdf5-mpich or hdf5-mpi)"
#endif
#ifdef H5_NO_DEPRECATED_SYMBOLS
hid_t H5Dcreate1(hid_t loc_id, const char *name, hid_t type_id, hid_t space_id, hid_t dcpl_id);
#endif

/* ---- lookup.c: the HDF5 functions, found at run time ---- */

/* One pointer per HDF5 function the runtime wraps or calls, looked up together at start: over 20 fields, since it is
 * a table (as a library's dispatch table is), one entry per function, each found the same way. */
typedef struct {
    /* the wrapped functions: the next definition after ours (dlsym(RTLD_NEXT)), else the library's own */
    __typeof__(H5Fcreate) *Fcreate;
    __typeof__(H5Fopen) *Fopen;
    __typeof__(H5Dcreate2) *Dcreate2;
    __typeof__(H5Dcreate1) *Dcreate1; /* NULL when the library has no deprecated symbols */
    __typeof__(H5Dwrite) *Dwrite;
    __typeof__(H5Dread) *Dread;
    /* what the wrappers use, from the same library; NULL when the layer is off (see `usable`) */
    __typeof__(H5Pcreate) *Pcreate;
    __typeof__(H5Pcopy) *Pcopy;
    __typeof__(H5Pclose) *Pclose;
    __typeof__(H5Pget_driver) *Pget_driver;
    __typeof__(H5Pget_alignment) *Pget_alignment;
    __typeof__(H5Pset_alignment) *Pset_alignment;
    __typeof__(H5Pset_meta_block_size) *Pset_meta_block_size;
    __typeof__(H5Pset_sieve_buf_size) *Pset_sieve_buf_size;
    __typeof__(H5Pset_all_coll_metadata_ops) *Pset_all_coll_metadata_ops; /* MPI-IO builds only */
    __typeof__(H5Pset_coll_metadata_write) *Pset_coll_metadata_write;     /* MPI-IO builds only */
    __typeof__(H5Pget_fapl_mpio) *Pget_fapl_mpio;                         /* MPI-IO builds only */
    __typeof__(H5Pset_fapl_mpio) *Pset_fapl_mpio;                         /* MPI-IO builds only */
    __typeof__(H5Pget_dxpl_mpio) *Pget_dxpl_mpio;                         /* MPI-IO builds only */
    __typeof__(H5Pset_dxpl_mpio) *Pset_dxpl_mpio;                         /* MPI-IO builds only */
    __typeof__(H5Pexist) *Pexist;
    __typeof__(H5Pget_size) *Pget_size;
    __typeof__(H5Pget) *Pget;
    __typeof__(H5Pset) *Pset;
    __typeof__(H5Pget_layout) *Pget_layout;
    __typeof__(H5Pset_chunk) *Pset_chunk;
    __typeof__(H5Pget_external_count) *Pget_external_count;
    __typeof__(H5Pset_alloc_time) *Pset_alloc_time;
    __typeof__(H5Sget_simple_extent_type) *Sget_simple_extent_type;
    __typeof__(H5Sget_simple_extent_dims) *Sget_simple_extent_dims;
    __typeof__(H5Tget_size) *Tget_size;
    __typeof__(H5Iget_name) *Iget_name;
    __typeof__(H5Fget_name) *Fget_name;
    __typeof__(H5Dget_storage_size) *Dget_storage_size;
    __typeof__(H5Eget_auto2) *Eget_auto2;
    __typeof__(H5Eset_auto2) *Eset_auto2;
    __typeof__(H5Ewalk2) *Ewalk2;
    __typeof__(H5Eget_num) *Eget_num;
    __typeof__(H5Eget_current_stack) *Eget_current_stack;
    __typeof__(H5Eset_current_stack) *Eset_current_stack;
    __typeof__(H5open) *open;
    __typeof__(H5FD_mpio_init) *FD_mpio_init; /* H5FD_MPIO; MPI-IO builds only */
    /* HDF5's global class ids: variables, read after H5open (they change if the application restarts HDF5) */
    const hid_t *cls_file_access_g, *cls_dataset_create_g, *cls_dataset_xfer_g;
    const hid_t *err_read_g, *err_write_g; /* the minor error ids of a failed read or write (NULL: not found) */
    unsigned version[3];
    int usable;         /* every function above (but the MPI-IO ones) found, and a library version we fit */
    const char *reason; /* why not usable */
} iotame_h5_api_t;

/* The HDF5 functions, looked up on the first call (thread-safe). Never NULL; see ->usable. */
const iotame_h5_api_t *iotame_hdf5_api(void);

/* A new, default property list of class file access, dataset creation or dataset transfer; negative on failure. */
typedef enum { IOTAME_H5_FILE_ACCESS, IOTAME_H5_DATASET_CREATE, IOTAME_H5_DATASET_XFER } iotame_h5_class_t;
hid_t iotame_hdf5_plist_create(iotame_h5_class_t cls);
/* The id of the MPI-IO driver (H5FD_MPIO), or H5I_INVALID_HID for an HDF5 without it. */
hid_t iotame_hdf5_mpio_driver(void);
/* A wrapped function that the lookup did not find: says so once and returns HDF5's failure value. */
int iotame_hdf5_missing(const char *name);

/* The application's HDF5 calls, counted per process (module.c): the statistics say whether every rank made the
 * same number of each, which the tuner needs before it tries settings that make the calls collective. */
enum { IOTAME_H5_FCREATE, IOTAME_H5_FOPEN, IOTAME_H5_DCREATE, IOTAME_H5_DWRITE, IOTAME_H5_DREAD, IOTAME_H5_CALLS };
void iotame_hdf5_count(int call);

/* Enters an HDF5 wrapper: returns 0 when the call must go straight to the library (the runtime is inactive, the
 * HDF5 layer is unusable, or HDF5 is calling its own API from inside one of our wrappers).
 * RATIONALE: a separate guard from iotame__depth, which the HDF5 wrappers leave alone, so that the MPI-IO calls
 * HDF5 makes underneath (MPI_File_open, MPI_File_write_at_all, ...) are still intercepted, configured and counted. */
int iotame_hdf5_enter(void);
void iotame_hdf5_leave(void);

/* Runs the library's error printing off until iotame_hdf5_quiet_end (for an attempt with the configured
 * properties that is retried with the application's own when it fails). */
typedef struct {
    H5E_auto2_t func;
    void *data;
    int saved;
} iotame_h5_quiet_t;
void iotame_hdf5_quiet_begin(iotame_h5_quiet_t *q);
void iotame_hdf5_quiet_end(iotame_h5_quiet_t *q);
/* After iotame_hdf5_quiet_end: the error stack printed as the application's own settings print it. */
void iotame_hdf5_quiet_print(const iotame_h5_quiet_t *q);
/* The innermost message of the thread's HDF5 error stack ("" when empty), before anything clears it; returns 1 when
 * the stack holds a failed read or write of the file: HDF5 accepted the properties and did I/O with them. */
int iotame_hdf5_error(char *buf, size_t len);
/* The thread's error stack taken aside when it holds errors (H5I_INVALID_HID when empty), and put back. */
hid_t iotame_hdf5_errors_keep(void);
void iotame_hdf5_errors_restore(hid_t kept);

/* ---- record.c: what was applied, into the file's statistics ---- */

/* The statistics of one HDF5 file, collected during one wrapper call and committed when the call succeeded. */
typedef struct {
    char *path;          /* the file, as the application named it */
    char *dataset;       /* the dataset's full name, for a dataset creation */
    const char *driver;  /* "mpio" or "other", for a file access */
    json_t *applied;     /* file properties: {"alignment": [t, b], ...} */
    json_t *datasets;    /* {"/name": {"chunk": [...], ...}} */
    json_t *not_applied; /* [{"dataset": ..., "property": ..., "reason": ...}] */
} iotame_h5_report_t;

void iotame_hdf5_report_init(iotame_h5_report_t *r, const char *path);
/* A property applied to the file (dataset NULL) or to a dataset; steals value. */
void iotame_hdf5_applied(iotame_h5_report_t *r, const char *dataset, const char *property, json_t *value);
/* A property that could not be applied, and why (a formatted message). */
void iotame_hdf5_not_applied(iotame_h5_report_t *r, const char *dataset, const char *property, const char *fmt,
                             ...) __attribute__((format(printf, 4, 5)));
/* Forgets what the report says (the call is retried with the application's own properties). */
void iotame_hdf5_report_reset(iotame_h5_report_t *r);
/* Merges the report into the file's statistics (when the call succeeded) and frees it. */
void iotame_hdf5_report_commit(iotame_h5_report_t *r, int succeeded);

/* Whether the file was opened with the MPI-IO driver (what H5Fcreate/H5Fopen found; unknown files: no). */
int iotame_hdf5_file_is_mpio(const char *path);
void iotame_hdf5_file_set_mpio(const char *path, int mpio);

/* ---- props.c: the configuration applied to property lists ---- */

/* A property list of ours to pass instead of the application's, or the application's own (nothing to change). */
typedef struct {
    hid_t id;
    int ours; /* close it after the call */
} iotame_h5_plist_t;

/* File access: the hdf5 section of the file's rule (alignment, metadata block size, sieve buffer, collective
 * metadata) and its MPI-IO hints (into H5Pset_fapl_mpio's info), applied to a copy of fapl. */
iotame_h5_plist_t iotame_hdf5_file_access(const char *path, hid_t fapl, iotame_h5_report_t *report);

/* Dataset creation: chunking and allocation time for dataset `name` created at loc with type and space, applied
 * to a copy of dcpl. *report is initialized (its path NULL when nothing applies). */
iotame_h5_plist_t iotame_hdf5_dataset_create(hid_t loc, const char *name, hid_t type, hid_t space, hid_t dcpl,
                                             iotame_h5_report_t *report);
/* After a successful creation: checks what HDF5 did with what was asked (allocation time). */
void iotame_hdf5_dataset_created(hid_t dset, iotame_h5_report_t *report);

/* Data transfer: `transfer` for dataset dset, applied to a copy of dxpl (or a new list for H5P_DEFAULT). */
iotame_h5_plist_t iotame_hdf5_transfer(hid_t dset, hid_t dxpl);
/* After the transfer: what HDF5 reports into a transfer list (H5Pget_mpio_actual_io_mode, ...) is copied from ours
 * to the application's, as if it had been used; then ours is closed (see iotame_hdf5_plist_release). */
void iotame_hdf5_transfer_done(iotame_h5_plist_t *p, hid_t dxpl);

/* Closes a list of ours. Both leave the thread's error stack as the application's call left it (our HDF5 calls
 * would clear it), so that an application finds the library's errors there after a failed call. */
void iotame_hdf5_plist_release(iotame_h5_plist_t *p);

/* This part's module table (core/modules.c registers it). */
extern const iotame_module_t iotame_module_hdf5;

#endif
