/* MPI-IO hints from the configuration, merged into the application's MPI_Info. The application's info object
 * is never modified: the merge goes into a fresh one. */
#include "core.h"

int iotame_hints_merge(MPI_Info user, const iotame_file_config_t *fc, MPI_Info *merged)
{
    *merged = MPI_INFO_NULL;
    int rc = user == MPI_INFO_NULL ? PMPI_Info_create(merged) : PMPI_Info_dup(user, merged);
    if (rc != MPI_SUCCESS) return rc;
    for (size_t i = 0; i < fc->nhints; i++) {
        const iotame_kv_t *h = fc->hints[i];
        int user_has = 0;
        if (user != MPI_INFO_NULL && !fc->override) {
            int len;
            PMPI_Info_get_valuelen(user, h->key, &len, &user_has);
        }
        if (user_has) continue; /* the application's own hint wins unless the rule overrides */
        rc = PMPI_Info_set(*merged, h->key, h->value);
        if (rc != MPI_SUCCESS) {
            PMPI_Info_free(merged);
            return rc;
        }
    }
    return MPI_SUCCESS;
}
