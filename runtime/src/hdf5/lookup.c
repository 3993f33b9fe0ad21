/* The HDF5 functions the wrappers call, found at run time (H5Tuner's interception by dynamic linking, Behzad et al.
 * SC13, without linking HDF5 into libiotame.so): the wrapped ones with dlsym(RTLD_NEXT), so that another
 * interposer after us keeps its place, and everything else in the library that defines them. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "hdf5/hdf5.h"

static iotame_h5_api_t api;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static _Thread_local int inside; /* nesting of HDF5 wrappers on this thread */

/* The first loaded object, in load order, that exports H5open. */
static int find_hdf5(struct dl_phdr_info *info, size_t size, void *data)
{
    void **handle = data;
    if (!info->dlpi_name || !*info->dlpi_name) return 0;
    void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return 0;
    if (dlsym(h, "H5open")) {
        *handle = h;
        return 1;
    }
    dlclose(h);
    return 0;
}

/* A handle on the HDF5 library, or NULL. RATIONALE: an HDF5 loaded with RTLD_LOCAL (a Python module, a plugin) is
 * not in the global scope, so dlsym(RTLD_NEXT) cannot see it while its callers still reach our wrappers; then the
 * loaded objects are searched one by one. */
static void *library(void)
{
    void *p = dlsym(RTLD_NEXT, "H5open"), *handle = NULL;
    Dl_info info;
    if (p && dladdr(p, &info) && info.dli_fname) handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!handle) dl_iterate_phdr(find_hdf5, &handle);
    return handle;
}

#define WRAPPED(field, name)                                                                                   \
    do {                                                                                                       \
        void *f = dlsym(RTLD_NEXT, name);                                                                      \
        if (!f && lib) f = dlsym(lib, name);                                                                   \
        if (f) memcpy(&api.field, &f, sizeof f);                                                               \
    } while (0)

/* RATIONALE: memcpy from the void * that dlsym returns, since ISO C has no conversion of an object pointer to a
 * function pointer; `needed` functions turn the layer off when missing, the MPI-IO ones only their settings. */
#define HELPER(field, name, needed)                                                                            \
    do {                                                                                                       \
        void *f = lib ? dlsym(lib, name) : NULL;                                                               \
        if (f) memcpy(&api.field, &f, sizeof f);                                                               \
        else if (needed && !api.reason) api.reason = "the HDF5 library lacks " name;                          \
    } while (0)

/* One of HDF5's global variables. RATIONALE: an executable that names H5P_FILE_ACCESS holds a copy of
 * H5P_CLS_FILE_ACCESS_ID_g (a copy relocation) which the library itself then uses; the first definition in the
 * global scope is that live one, the library's own is stale. An HDF5 outside the global scope has no such copy. */
static const hid_t *variable(void *lib, const char *name)
{
    const hid_t *p = dlsym(RTLD_DEFAULT, name);
    return p ? p : dlsym(lib, name);
}

static void lookup(void)
{
    void *lib = library();
    WRAPPED(Fcreate, "H5Fcreate");
    WRAPPED(Fopen, "H5Fopen");
    WRAPPED(Dcreate2, "H5Dcreate2");
    WRAPPED(Dcreate1, "H5Dcreate1");
    WRAPPED(Dwrite, "H5Dwrite");
    WRAPPED(Dread, "H5Dread");
    if (!lib) {
        api.reason = "the HDF5 library was not found among the loaded objects";
        return;
    }
    __typeof__(H5get_libversion) *libversion = NULL;
    void *f = dlsym(lib, "H5get_libversion");
    if (f) memcpy(&libversion, &f, sizeof f);
    if (!libversion || libversion(&api.version[0], &api.version[1], &api.version[2]) < 0) {
        api.reason = "the HDF5 library's version is unknown";
        return;
    }
    /* RATIONALE: hid_t became 64 bits in 1.10; the functions and enumerations used here keep their 1.10 form in
     * every 1.x release since. An older or a 2.x library is left alone rather than called with the wrong types. */
    if (api.version[0] != H5_VERS_MAJOR || api.version[1] < 10) {
        api.reason = "the HDF5 library's version does not fit the headers libiotame was built with";
        return;
    }
    HELPER(open, "H5open", 1);
    HELPER(Pcreate, "H5Pcreate", 1);
    HELPER(Pcopy, "H5Pcopy", 1);
    HELPER(Pclose, "H5Pclose", 1);
    HELPER(Pget_driver, "H5Pget_driver", 1);
    HELPER(Pget_alignment, "H5Pget_alignment", 1);
    HELPER(Pset_alignment, "H5Pset_alignment", 1);
    HELPER(Pset_meta_block_size, "H5Pset_meta_block_size", 1);
    HELPER(Pset_sieve_buf_size, "H5Pset_sieve_buf_size", 1);
    HELPER(Pget_layout, "H5Pget_layout", 1);
    HELPER(Pset_chunk, "H5Pset_chunk", 1);
    HELPER(Pget_external_count, "H5Pget_external_count", 1);
    HELPER(Pset_alloc_time, "H5Pset_alloc_time", 1);
    HELPER(Sget_simple_extent_type, "H5Sget_simple_extent_type", 1);
    HELPER(Sget_simple_extent_dims, "H5Sget_simple_extent_dims", 1);
    HELPER(Tget_size, "H5Tget_size", 1);
    HELPER(Iget_name, "H5Iget_name", 1);
    HELPER(Fget_name, "H5Fget_name", 1);
    HELPER(Dget_storage_size, "H5Dget_storage_size", 1);
    HELPER(Eget_auto2, "H5Eget_auto2", 1);
    HELPER(Eset_auto2, "H5Eset_auto2", 1);
    HELPER(Ewalk2, "H5Ewalk2", 1);
    HELPER(Eget_num, "H5Eget_num", 0);
    HELPER(Eget_current_stack, "H5Eget_current_stack", 0);
    HELPER(Eset_current_stack, "H5Eset_current_stack", 0);
    HELPER(Pexist, "H5Pexist", 1);
    HELPER(Pget_size, "H5Pget_size", 1);
    HELPER(Pget, "H5Pget", 1);
    HELPER(Pset, "H5Pset", 1);
    HELPER(FD_mpio_init, "H5FD_mpio_init", 0);
    HELPER(Pset_all_coll_metadata_ops, "H5Pset_all_coll_metadata_ops", 0);
    HELPER(Pset_coll_metadata_write, "H5Pset_coll_metadata_write", 0);
    HELPER(Pget_fapl_mpio, "H5Pget_fapl_mpio", 0);
    HELPER(Pset_fapl_mpio, "H5Pset_fapl_mpio", 0);
    HELPER(Pget_dxpl_mpio, "H5Pget_dxpl_mpio", 0);
    HELPER(Pset_dxpl_mpio, "H5Pset_dxpl_mpio", 0);
    api.cls_file_access_g = variable(lib, "H5P_CLS_FILE_ACCESS_ID_g");
    api.cls_dataset_create_g = variable(lib, "H5P_CLS_DATASET_CREATE_ID_g");
    api.cls_dataset_xfer_g = variable(lib, "H5P_CLS_DATASET_XFER_ID_g");
    api.err_read_g = variable(lib, "H5E_READERROR_g");
    api.err_write_g = variable(lib, "H5E_WRITEERROR_g");
    if (!api.cls_file_access_g || !api.cls_dataset_create_g || !api.cls_dataset_xfer_g)
        api.reason = "the HDF5 library lacks its property list class ids";
    if (!api.Fcreate || !api.Fopen || !api.Dcreate2 || !api.Dwrite || !api.Dread)
        api.reason = "the HDF5 library lacks a wrapped function";
    if (!api.reason && (api.version[1] != H5_VERS_MINOR || api.version[2] != H5_VERS_RELEASE))
        iotame_log_info("iotame: HDF5 %u.%u.%u at run time, headers of %d.%d.%d at build time\n", api.version[0],
                        api.version[1], api.version[2], H5_VERS_MAJOR, H5_VERS_MINOR, H5_VERS_RELEASE);
    api.usable = !api.reason;
}

const iotame_h5_api_t *iotame_hdf5_api(void)
{
    pthread_once(&once, lookup);
    return &api;
}

hid_t iotame_hdf5_plist_create(iotame_h5_class_t cls)
{
    if (api.open() < 0) return H5I_INVALID_HID; /* the class ids are valid once the library is initialized */
    const hid_t *g = cls == IOTAME_H5_FILE_ACCESS     ? api.cls_file_access_g
                     : cls == IOTAME_H5_DATASET_CREATE ? api.cls_dataset_create_g
                                                       : api.cls_dataset_xfer_g;
    return api.Pcreate(*g);
}

hid_t iotame_hdf5_mpio_driver(void)
{
    if (!api.FD_mpio_init || !api.Pget_fapl_mpio || !api.Pset_fapl_mpio || !api.Pget_dxpl_mpio ||
        !api.Pset_dxpl_mpio || api.open() < 0)
        return H5I_INVALID_HID;
    return api.FD_mpio_init();
}

int iotame_hdf5_missing(const char *name)
{
    static int said;
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        fprintf(stderr, "iotame: %s called but no HDF5 library defining it was found: the call fails\n", name);
    return -1;
}

int iotame_hdf5_enter(void)
{
    if (!iotame__active || inside) return 0;
    if (!iotame_hdf5_api()->usable) {
        static int counted;
        if (!__atomic_exchange_n(&counted, 1, __ATOMIC_RELAXED)) {
            iotame_stats_passthrough(NULL, api.reason);
            iotame_log_info("iotame: HDF5 properties are not applied: %s\n", api.reason);
        }
        return 0;
    }
    inside++;
    return 1;
}

void iotame_hdf5_leave(void) { inside--; }

void iotame_hdf5_quiet_begin(iotame_h5_quiet_t *q)
{
    q->saved = api.Eget_auto2(H5E_DEFAULT, &q->func, &q->data) >= 0;
    if (q->saved) api.Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void iotame_hdf5_quiet_end(iotame_h5_quiet_t *q)
{
    if (q->saved) api.Eset_auto2(H5E_DEFAULT, q->func, q->data);
}

void iotame_hdf5_quiet_print(const iotame_h5_quiet_t *q)
{
    if (q->saved && q->func) q->func(H5E_DEFAULT, q->data);
}

typedef struct {
    char *buf;
    size_t len;
    int io; /* an entry is a failed read or write */
} error_text_t;

static herr_t innermost(unsigned n, const H5E_error2_t *err, void *data)
{
    error_text_t *t = data;
    if (err->desc && *err->desc) snprintf(t->buf, t->len, "%s", err->desc); /* walking down: the last one wins */
    if ((api.err_read_g && err->min_num == *api.err_read_g) || (api.err_write_g && err->min_num == *api.err_write_g))
        t->io = 1;
    return 0;
}

int iotame_hdf5_error(char *buf, size_t len)
{
    error_text_t t = {buf, len, 0};
    if (len) buf[0] = '\0';
    api.Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, innermost, &t);
    return t.io;
}

hid_t iotame_hdf5_errors_keep(void)
{
    if (!api.Eget_num || !api.Eget_current_stack || !api.Eset_current_stack || api.Eget_num(H5E_DEFAULT) <= 0)
        return H5I_INVALID_HID;
    return api.Eget_current_stack(); /* a copy; the thread's stack is cleared */
}

void iotame_hdf5_errors_restore(hid_t kept)
{
    if (kept >= 0) api.Eset_current_stack(kept); /* replaces the thread's stack and closes the copy */
}
