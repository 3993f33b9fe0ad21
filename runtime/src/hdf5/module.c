/* The HDF5 layer as a module (core/module.h): its wrappers are HDF5's own entry points (file.c, dataset.c); the
 * module holds the "hdf5" statistics section's reduction over the ranks. */
#include <jansson.h>
#include <stdint.h>

#include "hdf5/hdf5.h"

/* Every rank applies the same configuration, but not every rank sees every dataset or every refusal: the union of
 * the ranks' objects (keys a rank adds) and lists (entries a rank adds); a value both hold is the first rank's. */
static void hdf5_merge(json_t *into, const json_t *rank)
{
    const char *key;
    json_t *value, *have;
    size_t i, j;
    json_object_foreach((json_t *)rank, key, value) {
        if (!(have = json_object_get(into, key))) {
            json_object_set(into, key, value);
        } else if (json_is_object(have) && json_is_object(value)) {
            hdf5_merge(have, value);
        } else if (json_is_array(have) && json_is_array(value)) {
            json_t *item, *old;
            json_array_foreach(value, i, item) {
                int seen = 0;
                json_array_foreach(have, j, old) seen |= json_equal(old, item);
                if (!seen) json_array_append(have, item);
            }
        }
    }
}

/* ---- the application's HDF5 calls, per process ---- */

static const char *const call_name[IOTAME_H5_CALLS] = {"H5Fcreate", "H5Fopen", "H5Dcreate", "H5Dwrite", "H5Dread"};
static uint64_t calls[IOTAME_H5_CALLS];

void iotame_hdf5_count(int call)
{
    /* HDF5 calling its own API from inside a wrapper is not the application's call */
    if (iotame__active && iotame_hdf5_enter()) {
        iotame_hdf5_leave();
        __atomic_add_fetch(&calls[call], 1, __ATOMIC_RELAXED);
    }
}

static void hdf5_finalize(void)
{
    json_t *s = iotame_stats_job_section(&iotame_module_hdf5);
    for (int i = 0; s && i < IOTAME_H5_CALLS; i++) json_object_set_new(s, call_name[i], json_integer((json_int_t)calls[i]));
}

/* Per call, the fewest and the most any rank made; whether every rank made the same number of each (a collective
 * transfer or collective metadata cannot hang such a job). Left out when no rank made any. */
static json_t *job_report(const json_t *ranks)
{
    json_t *out = json_object(), *r;
    int any = 0, same = 1;
    for (int c = 0; c < IOTAME_H5_CALLS; c++) {
        json_int_t lo = -1, hi = 0;
        size_t i;
        json_array_foreach(ranks, i, r) {
            json_int_t n = json_integer_value(json_object_get(r, call_name[c])); /* 0 for a rank without it */
            if (lo < 0 || n < lo) lo = n;
            if (n > hi) hi = n;
        }
        any |= hi > 0;
        same &= lo == hi;
        json_object_set_new(out, call_name[c], json_pack("{s:I,s:I}", "min", lo < 0 ? 0 : lo, "max", hi));
    }
    if (!any) {
        json_decref(out);
        return NULL;
    }
    json_object_set_new(out, "same_on_every_rank", json_boolean(same));
    return out;
}

const iotame_module_t iotame_module_hdf5 = {
    .name = "hdf5",
    .settings = "hdf5",
    .finalize = hdf5_finalize,
    .merge = hdf5_merge,
    .job_report = job_report,
};
