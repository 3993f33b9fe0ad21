/* The HDF5 layer as a module (core/module.h): its wrappers are HDF5's own entry points (file.c, dataset.c); the
 * module holds the "hdf5" statistics section's reduction over the ranks. */
#include <jansson.h>

#include "hdf5/hdf5.h"

/* Every rank applies the same configuration, but not every rank sees every dataset or every refusal: the union of
 * the ranks' objects (keys a rank adds) and lists (entries a rank adds); a value both hold is the first rank's. */
static void merge(json_t *into, const json_t *rank)
{
    const char *key;
    json_t *value, *have;
    size_t i, j;
    json_object_foreach((json_t *)rank, key, value) {
        if (!(have = json_object_get(into, key))) {
            json_object_set(into, key, value);
        } else if (json_is_object(have) && json_is_object(value)) {
            merge(have, value);
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

const iotame_module_t iotame_module_hdf5 = {
    .name = "hdf5",
    .settings = "hdf5",
    .merge = merge,
};
