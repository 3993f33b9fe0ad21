/* HDF5 properties from the configuration, applied to copies of the application's property lists (Behzad et al.,
 * SC13, H5Tuner; the parameters of Howison et al., "Tuning HDF5 for Lustre File Systems", 2010: alignment, metadata
 * block size, chunk size, collective metadata).
 *
 * Settings come from the "hdf5" section of the file's rule overlaid on the defaults' (iotame_config_setting; no hdf5
 * setting has a default in settings.json: an unset one leaves the application's value), and for dataset creation
 * and transfer from the first rule of `datasets` that matches the dataset. The configured values replace the
 * application's own (they are what a tuner varies); the application's lists are never modified.
 *
 * RATIONALE: chunking is applied whether the application passed its own creation list or H5P_DEFAULT; H5Tuner's
 * public code does it only in the first case, so the common H5P_DEFAULT dataset was never chunked. A dataset that
 * cannot take the configured chunks (compact, external storage, a scalar space, a chunk past a fixed extent) keeps
 * the application's layout and the statistics say why.
 */
#include <fnmatch.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hdf5/hdf5.h"

#define SECTION "hdf5"
#define CHUNK_LIMIT 0xFFFFFFFFull /* HDF5: a chunk holds less than 4 GiB */
#define NOT_MPIO "the file does not use the MPI-IO driver"

static const json_t *props_setting(const iotame_file_config_t *fc, const char *key)
{
    return iotame_config_setting(fc, SECTION, key);
}

/* ---- what the configuration has anywhere, so that calls it cannot change pass straight through ---- */

enum { HAS_FILE = 1, HAS_DATASET = 2, HAS_TRANSFER = 4 };

static int scan_section(const json_t *hdf5)
{
    int has = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)hdf5, k, v) {
        if (strcmp(k, "transfer") == 0) has |= HAS_TRANSFER;
        else if (strcmp(k, "chunk") == 0 || strcmp(k, "chunk_bytes") == 0 || strcmp(k, "alloc_time") == 0)
            has |= HAS_DATASET;
        else if (strcmp(k, "datasets") == 0) {
            size_t i;
            json_t *rule;
            json_array_foreach(v, i, rule) has |= scan_section(rule) & (HAS_DATASET | HAS_TRANSFER);
        } else
            has |= HAS_FILE;
    }
    return has;
}

static int config_has(const iotame_config_t *cfg)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static const iotame_config_t *seen;
    static int has;
    pthread_mutex_lock(&lock);
    if (seen != cfg) {
        seen = cfg;
        has = cfg->defaults.json ? scan_section(json_object_get(cfg->defaults.json, SECTION)) : 0;
        for (size_t i = 0; i < cfg->nrules; i++) has |= scan_section(json_object_get(cfg->rules[i].json, SECTION));
    }
    int out = has;
    pthread_mutex_unlock(&lock);
    return out;
}

/* ---- names ---- */

/* A name HDF5 returns through get(id, buf, size) (H5Iget_name, H5Fget_name): malloc'd, or NULL. */
static char *h5_name(ssize_t (*get)(hid_t, char *, size_t), hid_t id)
{
    char buf[256];
    ssize_t n = get(id, buf, sizeof buf);
    if (n < 0) return NULL;
    if ((size_t)n < sizeof buf) return strdup(buf);
    char *p = malloc((size_t)n + 1);
    if (p && get(id, p, (size_t)n + 1) < 0) {
        free(p);
        p = NULL;
    }
    return p;
}

/* The full name of dataset `name` created at loc: "/Step#0/x". */
static char *dataset_path(hid_t loc, const char *name)
{
    if (name[0] == '/') return strdup(name);
    char *base = h5_name(iotame_hdf5_api()->Iget_name, loc); /* "/" for a file, "/g" for a group */
    size_t n = base ? strlen(base) : 0;
    char *full = malloc(n + strlen(name) + 2);
    if (full) sprintf(full, "%s%s%s", base ? base : "", n && base[n - 1] == '/' ? "" : "/", name);
    free(base);
    return full;
}

/* The first rule of `datasets` whose glob matches the dataset's full name or its last component. */
static const json_t *dataset_rule(const iotame_file_config_t *fc, const char *full)
{
    const char *base = strrchr(full, '/');
    base = base ? base + 1 : full;
    size_t i;
    json_t *rule;
    json_array_foreach(props_setting(fc, "datasets"), i, rule) {
        const char *glob = json_string_value(json_object_get(rule, "match"));
        if (glob && (fnmatch(glob, full, 0) == 0 || fnmatch(glob, base, 0) == 0)) return rule;
    }
    return NULL;
}

/* A dataset setting: the dataset rule's, else the file's. */
static const json_t *dataset_setting(const json_t *rule, const iotame_file_config_t *fc, const char *key)
{
    const json_t *v = json_object_get(rule, key);
    return v ? v : props_setting(fc, key);
}

/* Chunking: `chunk` or `chunk_bytes` of the most specific level that sets either (dataset rule, file rule,
 * defaults); `chunk` first within a level. */
static void chunking(const json_t *rule, const iotame_file_config_t *fc, const json_t **chunk, const json_t **bytes)
{
    const json_t *levels[3] = {rule, fc->rule ? json_object_get(fc->rule->json, SECTION) : NULL,
                               fc->defaults ? json_object_get(fc->defaults->json, SECTION) : NULL};
    *chunk = *bytes = NULL;
    for (int i = 0; i < 3; i++) {
        *chunk = json_object_get(levels[i], "chunk");
        *bytes = *chunk ? NULL : json_object_get(levels[i], "chunk_bytes");
        if (*chunk || *bytes) return;
    }
}

void iotame_hdf5_plist_release(iotame_h5_plist_t *p)
{
    if (p->ours) {
        const hid_t kept = iotame_hdf5_errors_keep();
        iotame_hdf5_api()->Pclose(p->id);
        iotame_hdf5_errors_restore(kept);
    }
    p->ours = 0;
}

/* A copy of the application's list, or a new default one for H5P_DEFAULT. */
static iotame_h5_plist_t copy_of(hid_t app, iotame_h5_class_t cls)
{
    hid_t id = app == H5P_DEFAULT ? iotame_hdf5_plist_create(cls) : iotame_hdf5_api()->Pcopy(app);
    return id < 0 ? (iotame_h5_plist_t){app, 0} : (iotame_h5_plist_t){id, 1};
}

/* ---- file access ---- */

/* The configured hints merged into the MPI-IO driver's info; records those the application did not set itself
 * (or all, with override). */
static void apply_hints(const iotame_file_config_t *fc, hid_t fapl, iotame_h5_report_t *r)
{
    const iotame_h5_api_t *h5 = iotame_hdf5_api();
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Info info = MPI_INFO_NULL, merged = MPI_INFO_NULL;
    if (h5->Pget_fapl_mpio(fapl, &comm, &info) < 0) {
        iotame_hdf5_not_applied(r, NULL, "mpiio_hints", "H5Pget_fapl_mpio failed");
        return;
    }
    if (iotame_hints_merge(info, fc, &merged) != MPI_SUCCESS)
        iotame_hdf5_not_applied(r, NULL, "mpiio_hints", "the hints could not be merged into the MPI_Info");
    else if (h5->Pset_fapl_mpio(fapl, comm, merged) < 0)
        iotame_hdf5_not_applied(r, NULL, "mpiio_hints", "H5Pset_fapl_mpio failed");
    else {
        json_t *set = json_object();
        for (size_t i = 0; i < fc->nhints; i++) {
            int len, user_has = 0;
            if (info != MPI_INFO_NULL && !fc->override) PMPI_Info_get_valuelen(info, fc->hints[i]->key, &len, &user_has);
            if (!user_has) json_object_set_new(set, fc->hints[i]->key, json_string(fc->hints[i]->value));
        }
        iotame_hdf5_applied(r, NULL, "mpiio_hints", set);
    }
    if (merged != MPI_INFO_NULL) PMPI_Info_free(&merged);
    if (info != MPI_INFO_NULL) PMPI_Info_free(&info);
    if (comm != MPI_COMM_NULL) PMPI_Comm_free(&comm);
}

static void apply_size(iotame_h5_report_t *r, const json_t *v, const char *property, hid_t fapl,
                       herr_t (*set)(hid_t, hsize_t))
{
    if (!v) return;
    if (set(fapl, (hsize_t)json_integer_value(v)) < 0)
        iotame_hdf5_not_applied(r, NULL, property, "H5Pset_%s failed", property);
    else
        iotame_hdf5_applied(r, NULL, property, json_integer(json_integer_value(v)));
}

static herr_t set_sieve(hid_t fapl, hsize_t size) { return iotame_hdf5_api()->Pset_sieve_buf_size(fapl, (size_t)size); }

static void apply_coll(iotame_h5_report_t *r, const json_t *v, const char *property, hid_t fapl, int mpio,
                       __typeof__(H5Pset_coll_metadata_write) *set)
{
    if (!v) return;
    if (!mpio) iotame_hdf5_not_applied(r, NULL, property, NOT_MPIO);
    else if (!set) iotame_hdf5_not_applied(r, NULL, property, "this HDF5 library cannot do it");
    else if (set(fapl, json_is_true(v)) < 0) iotame_hdf5_not_applied(r, NULL, property, "H5Pset failed");
    else iotame_hdf5_applied(r, NULL, property, json_boolean(json_is_true(v)));
}

iotame_h5_plist_t iotame_hdf5_file_access(const char *path, hid_t fapl, iotame_h5_report_t *r)
{
    const iotame_h5_api_t *h5 = iotame_hdf5_api();
    iotame_h5_plist_t out = {fapl, 0};
    iotame_hdf5_report_init(r, path);
    hid_t mpio_driver = iotame_hdf5_mpio_driver();
    int mpio = fapl != H5P_DEFAULT && mpio_driver >= 0 && h5->Pget_driver(fapl) == mpio_driver;
    iotame_hdf5_file_set_mpio(path, mpio);
    r->driver = mpio ? "mpio" : "other";
    const iotame_config_t *cfg = iotame_core_config();
    iotame_file_config_t fc;
    if (!cfg || iotame_config_for_file(cfg, path, &fc) != 0) return out;
    const json_t *threshold = props_setting(&fc, "alignment_threshold"), *alignment = props_setting(&fc, "alignment"),
                 *meta = props_setting(&fc, "meta_block_size"), *sieve = props_setting(&fc, "sieve_buf_size"),
                 *reads = props_setting(&fc, "coll_metadata_reads"),
                 *writes = props_setting(&fc, "coll_metadata_writes");
    int hints = fc.nhints && mpio;
    if (fc.nhints && !mpio) iotame_hdf5_not_applied(r, NULL, "mpiio_hints", NOT_MPIO);
    if (!threshold && !alignment && !meta && !sieve && !reads && !writes && !hints) {
        iotame_config_file_release(&fc);
        return out;
    }
    out = copy_of(fapl, IOTAME_H5_FILE_ACCESS);
    if (!out.ours) {
        iotame_hdf5_not_applied(r, NULL, "file access", "the application's file access list could not be copied");
        iotame_config_file_release(&fc);
        return out;
    }
    if (threshold || alignment) {
        hsize_t t = 1, a = 1; /* a part the configuration leaves out keeps the application's value */
        h5->Pget_alignment(out.id, &t, &a);
        if (threshold) t = (hsize_t)json_integer_value(threshold);
        if (alignment) a = (hsize_t)json_integer_value(alignment);
        if (h5->Pset_alignment(out.id, t, a) < 0) iotame_hdf5_not_applied(r, NULL, "alignment", "H5Pset_alignment failed");
        else iotame_hdf5_applied(r, NULL, "alignment", json_pack("[I,I]", (json_int_t)t, (json_int_t)a));
    }
    apply_size(r, meta, "meta_block_size", out.id, h5->Pset_meta_block_size);
    apply_size(r, sieve, "sieve_buf_size", out.id, set_sieve);
    apply_coll(r, reads, "coll_metadata_reads", out.id, mpio, h5->Pset_all_coll_metadata_ops);
    apply_coll(r, writes, "coll_metadata_writes", out.id, mpio, h5->Pset_coll_metadata_write);
    if (hints) apply_hints(&fc, out.id, r);
    iotame_config_file_release(&fc);
    return out;
}

/* ---- dataset creation ---- */

static const char *const alloc_names[] = {"default", "early", "late", "incr"}; /* by H5D_alloc_time_t value */

/* Chunk dimensions of about `target` bytes: whole dimensions from the fastest-varying one while they fit, then
 * part of the next one, ones before it. A chunk is thus one contiguous run of the dataset's row-major order (the
 * rank-contiguous hyperslabs of VPIC-IO, GCRM-IO, FLASH-IO go to few chunks) and never crosses a fixed extent.
 * Returns 0, or -1 with the reason in why. */
static int derive_chunk(int n, const hsize_t *dims, const hsize_t *maxdims, size_t elem, uint64_t target,
                        hsize_t *chunk, char *why, size_t len)
{
    if (target > CHUNK_LIMIT) target = CHUNK_LIMIT;
    uint64_t budget = target / elem ? target / elem : 1; /* elements */
    for (int i = n - 1; i >= 0; i--) {
        uint64_t extent = dims[i];
        if (extent == 0) { /* an empty extendible dimension: up to its maximum */
            if (maxdims[i] == 0) {
                snprintf(why, len, "dimension %d has a fixed extent of 0: no chunk fits", i);
                return -1;
            }
            extent = maxdims[i] == H5S_UNLIMITED || maxdims[i] > budget ? budget : maxdims[i];
        }
        chunk[i] = extent <= budget ? extent : budget;
        budget = extent <= budget ? budget / extent : 1;
    }
    return 0;
}

static void apply_chunk(iotame_h5_report_t *r, const char *ds, hid_t dcpl, hid_t type, hid_t space,
                        const json_t *chunk, const json_t *bytes)
{
    const iotame_h5_api_t *h5 = iotame_hdf5_api();
    H5D_layout_t layout = h5->Pget_layout(dcpl);
    if (layout == H5D_COMPACT) {
        iotame_hdf5_not_applied(r, ds, "chunk", "the application asked for a compact layout");
        return;
    }
    if (layout != H5D_CONTIGUOUS && layout != H5D_CHUNKED) {
        iotame_hdf5_not_applied(r, ds, "chunk", "the application asked for a %s layout",
                                layout == H5D_VIRTUAL ? "virtual" : "special");
        return;
    }
    if (layout == H5D_CONTIGUOUS && h5->Pget_external_count(dcpl) > 0) {
        iotame_hdf5_not_applied(r, ds, "chunk", "the application stores the dataset in external files");
        return;
    }
    H5S_class_t cls = h5->Sget_simple_extent_type(space);
    if (cls != H5S_SIMPLE) {
        iotame_hdf5_not_applied(r, ds, "chunk", "a %s dataspace cannot be chunked", cls == H5S_SCALAR ? "scalar" : "null");
        return;
    }
    hsize_t dims[H5S_MAX_RANK], maxdims[H5S_MAX_RANK], c[H5S_MAX_RANK];
    int n = h5->Sget_simple_extent_dims(space, dims, maxdims);
    size_t elem = h5->Tget_size(type);
    if (n <= 0 || elem == 0) {
        iotame_hdf5_not_applied(r, ds, "chunk", "the dataset's shape or element size is unknown");
        return;
    }
    if (chunk) {
        if ((int)json_array_size(chunk) != n) {
            iotame_hdf5_not_applied(r, ds, "chunk", "the chunk has %zu dimensions, the dataset %d",
                                    json_array_size(chunk), n);
            return;
        }
        for (int i = 0; i < n; i++) {
            c[i] = (hsize_t)json_integer_value(json_array_get(chunk, (size_t)i));
            if (maxdims[i] != H5S_UNLIMITED && c[i] > maxdims[i]) {
                iotame_hdf5_not_applied(r, ds, "chunk", "chunk dimension %d (%llu) exceeds the dataset's fixed extent "
                                        "(%llu)", i, (unsigned long long)c[i], (unsigned long long)maxdims[i]);
                return;
            }
        }
    } else {
        char why[256];
        if (derive_chunk(n, dims, maxdims, elem, (uint64_t)json_integer_value(bytes), c, why, sizeof why) < 0) {
            iotame_hdf5_not_applied(r, ds, "chunk", "chunk_bytes %lld: %s", (long long)json_integer_value(bytes), why);
            return;
        }
    }
    uint64_t size = elem;
    for (int i = 0; i < n; i++) size = c[i] && size > CHUNK_LIMIT / c[i] ? CHUNK_LIMIT + 1 : size * c[i];
    if (size > CHUNK_LIMIT) {
        iotame_hdf5_not_applied(r, ds, "chunk", "the chunk exceeds HDF5's limit of 4 GiB");
        return;
    }
    if (h5->Pset_chunk(dcpl, n, c) < 0) {
        iotame_hdf5_not_applied(r, ds, "chunk", "H5Pset_chunk failed");
        return;
    }
    json_t *dims_json = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(dims_json, json_integer((json_int_t)c[i]));
    iotame_hdf5_applied(r, ds, "chunk", dims_json);
}

iotame_h5_plist_t iotame_hdf5_dataset_create(hid_t loc, const char *name, hid_t type, hid_t space, hid_t dcpl,
                                             iotame_h5_report_t *r)
{
    const iotame_h5_api_t *h5 = iotame_hdf5_api();
    iotame_h5_plist_t out = {dcpl, 0};
    iotame_hdf5_report_init(r, NULL);
    const iotame_config_t *cfg = iotame_core_config();
    if (!cfg || !name || !(config_has(cfg) & HAS_DATASET)) return out;
    char *file = h5_name(h5->Fget_name, loc), *ds = dataset_path(loc, name);
    iotame_file_config_t fc;
    if (!file || !ds || iotame_config_for_file(cfg, file, &fc) != 0) {
        free(file);
        free(ds);
        return out;
    }
    const json_t *rule = dataset_rule(&fc, ds), *chunk, *bytes, *alloc = dataset_setting(rule, &fc, "alloc_time");
    chunking(rule, &fc, &chunk, &bytes);
    if (bytes && json_integer_value(bytes) == 0) bytes = NULL; /* 0: the application's layout */
    if (chunk || bytes || alloc) {
        iotame_hdf5_report_init(r, file);
        r->dataset = strdup(ds);
        out = copy_of(dcpl, IOTAME_H5_DATASET_CREATE);
        if (!out.ours)
            iotame_hdf5_not_applied(r, ds, "dataset creation", "the application's creation list could not be copied");
    }
    if (out.ours && (chunk || bytes)) apply_chunk(r, ds, out.id, type, space, chunk, bytes);
    if (out.ours && alloc) {
        const char *want = json_string_value(alloc);
        H5D_alloc_time_t t = H5D_ALLOC_TIME_DEFAULT;
        for (int i = 0; i < 4; i++)
            if (strcmp(want, alloc_names[i]) == 0) t = (H5D_alloc_time_t)i;
        if (h5->Pset_alloc_time(out.id, t) < 0) iotame_hdf5_not_applied(r, ds, "alloc_time", "H5Pset_alloc_time failed");
        else iotame_hdf5_applied(r, ds, "alloc_time", json_string(want));
    }
    iotame_config_file_release(&fc);
    free(file);
    free(ds);
    return out;
}

void iotame_hdf5_dataset_created(hid_t dset, iotame_h5_report_t *r)
{
    const char *ds;
    json_t *props;
    json_object_foreach(r->datasets, ds, props) {
        const char *alloc = json_string_value(json_object_get(props, "alloc_time"));
        /* Late and incremental allocation leave a new dataset without storage; parallel HDF5 allocates early with
         * the MPI-IO driver whatever the list says (and the list read back still says what was asked). */
        if (alloc && (strcmp(alloc, "late") == 0 || strcmp(alloc, "incr") == 0) &&
            iotame_hdf5_api()->Dget_storage_size(dset) > 0) {
            iotame_hdf5_not_applied(r, ds, "alloc_time", "HDF5 allocated the storage at creation (parallel HDF5 "
                                    "allocates early with the MPI-IO driver)");
            break; /* the report changed under the iteration */
        }
    }
}

/* ---- data transfer ---- */

iotame_h5_plist_t iotame_hdf5_transfer(hid_t dset, hid_t dxpl)
{
    const iotame_h5_api_t *h5 = iotame_hdf5_api();
    iotame_h5_plist_t out = {dxpl, 0};
    const iotame_config_t *cfg = iotame_core_config();
    if (!cfg || !(config_has(cfg) & HAS_TRANSFER)) return out;
    char *file = h5_name(h5->Fget_name, dset), *ds = h5_name(h5->Iget_name, dset);
    iotame_file_config_t fc;
    if (!file || !ds || iotame_config_for_file(cfg, file, &fc) != 0) {
        free(file);
        free(ds);
        return out;
    }
    const json_t *mode = dataset_setting(dataset_rule(&fc, ds), &fc, "transfer");
    iotame_config_file_release(&fc);
    if (!mode) {
        free(file);
        free(ds);
        return out;
    }
    iotame_h5_report_t r;
    iotame_hdf5_report_init(&r, file);
    const char *want_name = json_string_value(mode);
    H5FD_mpio_xfer_t want = strcmp(want_name, "collective") == 0 ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT, have;
    if (!iotame_hdf5_file_is_mpio(file)) {
        iotame_hdf5_not_applied(&r, ds, "transfer", NOT_MPIO);
    } else if (dxpl == H5P_DEFAULT ? want == H5FD_MPIO_INDEPENDENT
                                   : h5->Pget_dxpl_mpio(dxpl, &have) >= 0 && have == want) {
        iotame_hdf5_applied(&r, ds, "transfer", json_string(want_name)); /* already so */
    } else {
        out = copy_of(dxpl, IOTAME_H5_DATASET_XFER);
        if (!out.ours) iotame_hdf5_not_applied(&r, ds, "transfer", "the application's transfer list could not be copied");
        else if (h5->Pset_dxpl_mpio(out.id, want) < 0) {
            iotame_hdf5_not_applied(&r, ds, "transfer", "H5Pset_dxpl_mpio failed");
            iotame_hdf5_plist_release(&out);
            out.id = dxpl;
        } else
            iotame_hdf5_applied(&r, ds, "transfer", json_string(want_name));
    }
    iotame_hdf5_report_commit(&r, 1);
    free(file);
    free(ds);
    return out;
}

void iotame_hdf5_transfer_done(iotame_h5_plist_t *p, hid_t dxpl)
{
    /* HDF5 1.10's names of the properties behind H5Pget_mpio_actual_io_mode, _actual_chunk_opt_mode and
     * _no_collective_cause; a name the library lacks is skipped. RATIONALE: H5Pget and H5Pset, not H5Pcopy_prop,
     * which in 1.10 leaves the destination list unusable for a property it inherits from its class. */
    static const char *const outputs[] = {"actual_io_mode", "actual_chunk_opt_mode", "local_no_collective_cause",
                                          "global_no_collective_cause"};
    const iotame_h5_api_t *h5 = iotame_hdf5_api();
    if (p->ours && dxpl != H5P_DEFAULT) {
        const hid_t kept = iotame_hdf5_errors_keep();
        iotame_h5_quiet_t q;
        iotame_hdf5_quiet_begin(&q);
        for (size_t i = 0; i < sizeof outputs / sizeof *outputs; i++) {
            unsigned char value[16];
            size_t size = 0;
            if (h5->Pexist(p->id, outputs[i]) > 0 && h5->Pexist(dxpl, outputs[i]) > 0 &&
                h5->Pget_size(p->id, outputs[i], &size) >= 0 && size <= sizeof value &&
                h5->Pget(p->id, outputs[i], value) >= 0)
                h5->Pset(dxpl, outputs[i], value);
        }
        iotame_hdf5_quiet_end(&q);
        iotame_hdf5_errors_restore(kept);
    }
    iotame_hdf5_plist_release(p);
}
