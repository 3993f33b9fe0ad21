/* What the HDF5 wrappers applied to which file and dataset, and what they could not apply and why: the "hdf5"
 * object of a file's statistics (docs/formats.md). A wrapper collects into a report and commits it when the
 * application's call succeeded, so a failed call leaves no claim behind. */
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hdf5/hdf5.h"

/* RATIONALE: an application with many thousands of datasets must not grow the statistics without bound; past
 * these counts entries are only counted ("datasets_not_listed", "not_applied_not_listed"). */
#define MAX_DATASETS 4096
#define MAX_NOT_APPLIED 256

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Files and their drivers, as H5Fcreate and H5Fopen found them. */
static struct file {
    char *path;
    int mpio;
    struct file *next;
} *files;

void iotame_hdf5_report_init(iotame_h5_report_t *r, const char *path)
{
    r->path = path ? strdup(path) : NULL;
    r->dataset = NULL;
    r->driver = NULL;
    r->applied = NULL;
    r->datasets = NULL;
    r->not_applied = NULL;
}

void iotame_hdf5_applied(iotame_h5_report_t *r, const char *dataset, const char *property, json_t *value)
{
    if (!value) return;
    json_t *into;
    if (!dataset) {
        if (!r->applied) r->applied = json_object();
        into = r->applied;
    } else {
        if (!r->datasets) r->datasets = json_object();
        into = json_object_get(r->datasets, dataset);
        if (!into) {
            into = json_object();
            json_object_set_new(r->datasets, dataset, into);
        }
    }
    json_object_set_new(into, property, value);
}

void iotame_hdf5_not_applied(iotame_h5_report_t *r, const char *dataset, const char *property, const char *fmt, ...)
{
    char reason[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    json_t *entry = json_object();
    if (dataset) json_object_set_new(entry, "dataset", json_string(dataset));
    json_object_set_new(entry, "property", json_string(property));
    json_object_set_new(entry, "reason", json_string(reason));
    if (!r->not_applied) r->not_applied = json_array();
    json_array_append_new(r->not_applied, entry);
    /* What was claimed applied for this property is not (a dataset left with nothing is dropped; `dataset` may be
     * its key in r->datasets, hence the copy). */
    json_t *from = dataset ? json_object_get(r->datasets, dataset) : r->applied;
    json_object_del(from, property);
    if (dataset && from && json_object_size(from) == 0) {
        char *key = strdup(dataset);
        if (key) json_object_del(r->datasets, key);
        free(key);
    }
}

static void count(json_t *h, const char *key)
{
    json_t *n = json_object_get(h, key);
    json_object_set_new(h, key, json_integer(n ? json_integer_value(n) + 1 : 1));
}

static void log_not_applied(const char *path, const json_t *entry)
{
    const char *d = json_string_value(json_object_get(entry, "dataset"));
    iotame_log_info("iotame: %s%s%s: %s not applied: %s\n", path, d ? ":" : "", d ? d : "",
                    json_string_value(json_object_get(entry, "property")),
                    json_string_value(json_object_get(entry, "reason")));
}

/* The report merged into the file's "hdf5" object; new entries of not_applied are logged (IOTAME_VERBOSE=1). */
static void record_merge(json_t *h, const iotame_h5_report_t *r)
{
    if (!json_object_get(h, "applied")) {
        /* the keys in a fixed order */
        json_object_set_new(h, "driver", json_string(r->driver ? r->driver : "other"));
        json_object_set_new(h, "applied", json_object());
        json_object_set_new(h, "datasets", json_object());
        json_object_set_new(h, "not_applied", json_array());
    }
    if (r->driver) json_object_set_new(h, "driver", json_string(r->driver));
    if (r->applied) json_object_update(json_object_get(h, "applied"), r->applied);
    json_t *datasets = json_object_get(h, "datasets"), *not_applied = json_object_get(h, "not_applied");
    const char *name;
    json_t *props;
    json_object_foreach(r->datasets, name, props) {
        json_t *have = json_object_get(datasets, name);
        if (have) json_object_update(have, props);
        else if (json_object_size(datasets) < MAX_DATASETS) json_object_set(datasets, name, props);
        else count(h, "datasets_not_listed");
    }
    size_t i, j;
    json_t *entry, *old;
    json_array_foreach(r->not_applied, i, entry) {
        int seen = 0;
        json_array_foreach(not_applied, j, old) if (json_equal(old, entry)) seen = 1;
        if (seen) continue;
        log_not_applied(r->path, entry);
        if (json_array_size(not_applied) < MAX_NOT_APPLIED) json_array_append(not_applied, entry);
        else count(h, "not_applied_not_listed");
    }
}

void iotame_hdf5_report_reset(iotame_h5_report_t *r)
{
    json_decref(r->applied);
    json_decref(r->datasets);
    json_decref(r->not_applied);
    r->applied = r->datasets = r->not_applied = NULL;
}

void iotame_hdf5_report_commit(iotame_h5_report_t *r, int succeeded)
{
    if (succeeded && r->path && (r->driver || r->applied || r->datasets || r->not_applied)) {
        pthread_mutex_lock(&lock);
        json_t *h = iotame_stats_section(iotame_stats_file(r->path), &iotame_module_hdf5);
        if (h) record_merge(h, r);
        pthread_mutex_unlock(&lock);
    }
    iotame_hdf5_report_reset(r);
    free(r->path);
    free(r->dataset);
    iotame_hdf5_report_init(r, NULL);
}

int iotame_hdf5_file_is_mpio(const char *path)
{
    int mpio = 0;
    pthread_mutex_lock(&lock);
    for (struct file *f = files; f; f = f->next)
        if (strcmp(f->path, path) == 0) {
            mpio = f->mpio;
            break;
        }
    pthread_mutex_unlock(&lock);
    return mpio;
}

void iotame_hdf5_file_set_mpio(const char *path, int mpio)
{
    pthread_mutex_lock(&lock);
    struct file *f;
    for (f = files; f && strcmp(f->path, path) != 0; f = f->next) {}
    if (!f) {
        f = calloc(1, sizeof *f);
        if (f && !(f->path = strdup(path))) {
            free(f);
            f = NULL;
        }
        if (f) {
            f->next = files;
            files = f;
        }
    }
    if (f) f->mpio = mpio; /* out of memory: the file counts as not MPI-IO, and transfers are left alone */
    pthread_mutex_unlock(&lock);
}
