/* The selector's section of the knowledge store (core/knowledge.h): what it learned (winners per call signature,
 * and the examination budget of the signatures not decided yet), read at the open of a file under strategy auto and
 * merged back at its close, so that the next run of a job starts where this one ended. The section is
 * {"entries": [...]}, the entries what the policy learned, as decisions.c writes them (iotame__coll_learned). */
#include <errno.h>
#include <jansson.h>

#include "core/knowledge.h"
#include "posix/posix.h"
#include "strategy.h"

#define SELECT_KNOWLEDGE_MODULE "collective"

json_t *iotame__coll_knowledge_parse(const char *text, size_t len)
{
    json_t *section;
    return iotame_knowledge_section(text, len, SELECT_KNOWLEDGE_MODULE, &section) == 0 ? section : NULL;
}

/* The runtime's own I/O: never in the POSIX layer's statistics (posix.all_files records every file). */
json_t *iotame__coll_knowledge_load(const char *path, MPI_Comm comm, int rank, int *broken, int *exists)
{
    json_t *section;
    iotame_posix_quiet_begin();
    int rc = iotame_knowledge_read(path, SELECT_KNOWLEDGE_MODULE, comm, &section);
    iotame_posix_quiet_end();
    /* a file rank 0 read, whether this rank could hold it or not (the open's agreement compares them) */
    *exists = rc == 0 || rc == -EINVAL || rc == -ENOMEM;
    *broken = rank == 0 && rc != 0 && rc != -ENOENT;
    return section;
}

/* An undecided entry's examination credit: the file's (item), plus what this run added since the file last had its
 * own (fresh's "added"). Jobs at once start from the same credit: replacing the file's with
 * this run's total would drop what the others saved meanwhile. */
static int select_knowledge_add_credit(const json_t *item, json_t *fresh)
{
    static const char *const keys[] = {"spent", "debt"};
    const json_t *added = json_object_get(fresh, "added"), *theirs = json_object_get(item, "examination");
    json_t *mine = json_object_get(fresh, "examination");
    for (int i = 0; i < 2 && added && mine; i++) {
        const double had = json_number_value(json_object_get(theirs, keys[i])); /* 0 when the file's has none */
        const double sum = (had > 0 ? had : 0) + json_number_value(json_object_get(added, keys[i]));
        if (json_object_set_new(mine, keys[i], json_real(sum)) != 0) return -ENOMEM;
    }
    return 0;
}

/* Merges the entries this run learned into the file's: by signature, an undecided entry never replacing a winner
 * (another job decided meanwhile), and adding its credit to an undecided one's; then the model's observations into
 * its corrections (corrections.c). fresh: {"entries": [...], "observed": {...}}, either may be missing. */
static int select_knowledge_merge(json_t *section, json_t *fresh_all)
{
    json_t *learned = json_object_get(fresh_all, "entries");
    json_t *entries = json_object_get(section, "entries");
    if (!entries && json_object_set_new(section, "entries", entries = json_array()) != 0) return -ENOMEM;
    if (!json_is_array(entries)) return -EINVAL;
    size_t j;
    json_t *fresh;
    json_array_foreach(learned, j, fresh) {
        const json_t *g = json_object_get(fresh, "signature");
        const int decided = json_is_string(json_object_get(fresh, "strategy"));
        size_t i;
        json_t *item;
        int found = 0, rc = 0;
        json_array_foreach(entries, i, item) {
            if (!json_equal(json_object_get(item, "signature"), g)) continue;
            if (decided) rc = json_array_set(entries, i, fresh);
            else if (!json_is_string(json_object_get(item, "strategy")))
                rc = select_knowledge_add_credit(item, fresh) ?: json_array_set(entries, i, fresh);
            found = 1;
            break;
        }
        json_object_del(fresh, "added"); /* never in the file (a new entry's credit is this run's whole) */
        if (!found) rc = json_array_append(entries, fresh);
        if (rc) return -ENOMEM;
    }
    return iotame__coll_corrections_merge(section, json_object_get(fresh_all, "observed"));
}

int iotame__coll_knowledge_save(iotame_selector_t *s, const char *path, const json_t *observed)
{
    json_t *learned = iotame__coll_learned(s);
    if (!learned && !observed) return 0;
    json_t *fresh = json_pack("{s:o*,s:O*}", "entries", learned, "observed", observed);
    if (!fresh) return -ENOMEM;
    iotame_posix_quiet_begin();
    int rc = iotame_knowledge_merge(path, SELECT_KNOWLEDGE_MODULE, select_knowledge_merge, fresh);
    iotame_posix_quiet_end();
    if (rc == 0) iotame_select_saved(s); /* the next save adds only what comes after */
    json_decref(fresh);
    return rc;
}
