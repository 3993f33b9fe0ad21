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

/* Merges the entries this run learned into the file's: by signature, an undecided entry never replacing a winner
 * (another job decided meanwhile). */
static int select_knowledge_merge(json_t *section, json_t *learned)
{
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
            if (decided || !json_is_string(json_object_get(item, "strategy"))) rc = json_array_set(entries, i, fresh);
            found = 1;
            break;
        }
        if (!found) rc = json_array_append(entries, fresh);
        if (rc) return -ENOMEM;
    }
    return 0;
}

int iotame__coll_knowledge_save(const iotame_selector_t *s, const char *path)
{
    json_t *learned = iotame__coll_learned(s);
    if (!learned) return 0;
    iotame_posix_quiet_begin();
    int rc = iotame_knowledge_merge(path, SELECT_KNOWLEDGE_MODULE, select_knowledge_merge, learned);
    iotame_posix_quiet_end();
    json_decref(learned);
    return rc;
}
