/* The knowledge file: what the selector learned (winners per call signature, and the examination budget of the
 * signatures not decided yet), read at the open of a file under strategy auto and merged back at its close, so that
 * the next run of a job starts where this one ended. Reading is rank 0's, broadcast to the others; saving is rank
 * 0's. The entries are what the policy learned, as decisions.c writes them (iotame__coll_learned). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "posix/posix.h"
#include "strategy.h"

json_t *iotame_knowledge_parse(const char *text, size_t len)
{
    json_t *k = json_loadb(text, len, 0, NULL);
    if (k && (!json_is_object(k) || !json_is_array(json_object_get(k, "entries")))) {
        json_decref(k);
        k = NULL;
    }
    return k;
}

/* The file's length heads the first piece, and the pieces are of a fixed size, so a file of up to 16 KiB costs one
 * broadcast, and every rank takes part in every broadcast even when it cannot allocate the text (it then knows
 * nothing: the agreement at open makes every rank drop the knowledge). */
json_t *iotame_knowledge_load(const char *path, MPI_Comm comm, int rank, int *broken, int *exists)
{
    enum { PIECE = 16384, HEAD = sizeof(long long) };
    char *text = NULL, piece[PIECE];
    long long n = -1;
    FILE *in = rank == 0 ? fopen(path, "rb") : NULL;
    if (in) {
        size_t cap = 0, len = 0, got = 0;
        do {
            char *grown = len + PIECE > cap ? realloc(text, cap = 2 * cap + 2 * PIECE) : text;
            if (!grown) break;
            text = grown;
            got = fread(text + len, 1, cap - len, in);
            len += got;
        } while (got > 0);
        fclose(in);
        n = got == 0 && text ? (long long)len : -1;
        *broken = n < 0;
    }
    const long long first = PIECE - HEAD; /* the text's bytes in the first piece */
    if (rank == 0) {
        memcpy(piece, &n, HEAD);
        if (n > 0) memcpy(piece + HEAD, text, (size_t)(n < first ? n : first));
    }
    PMPI_Bcast(piece, PIECE, MPI_BYTE, 0, comm);
    memcpy(&n, piece, HEAD);
    if (rank != 0 && n >= 0 && (text = malloc((size_t)n + 1)))
        memcpy(text, piece + HEAD, (size_t)(n < first ? n : first));
    for (long long at = first; at < n; at += PIECE) {
        int len = (int)(n - at < PIECE ? n - at : PIECE);
        PMPI_Bcast(rank == 0 ? text + at : piece, len, MPI_BYTE, 0, comm);
        if (rank != 0 && text) memcpy(text + at, piece, (size_t)len);
    }
    json_t *knowledge = n >= 0 && text ? iotame_knowledge_parse(text, (size_t)n) : NULL;
    free(text);
    *exists = n >= 0;
    if (rank == 0 && n >= 0 && !knowledge) *broken = 1;
    if (rank == 0 && *broken)
        iotame_log_warn("knowledge file %s cannot be read or is not a knowledge file (expected {\"version\": 1, "
                        "\"entries\": [...]}): not used, and left as it is\n", path);
    return knowledge;
}

/* Several jobs (or files of one job) may save at once: a lock file serializes read-merge-write, and the rename makes
 * a reader see the old or the new file, never half of one. */
static int selector_knowledge_save(const iotame_selector_t *s, const char *path)
{
    json_t *learned = iotame__coll_learned(s);
    if (!learned) return 0;
    char lockpath[4096], tmp[4096];
    snprintf(lockpath, sizeof lockpath, "%s.lock", path);
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    int fd = open(lockpath, O_CREAT | O_RDWR, 0644);
    if (fd < 0) {
        int rc = -errno;
        json_decref(learned);
        return rc;
    }
    flock(fd, LOCK_EX);
    json_t *k = json_load_file(path, 0, NULL);
    if (k && (!json_is_object(k) || !json_is_array(json_object_get(k, "entries")))) {
        json_decref(k);
        k = NULL;
    }
    if (!k && access(path, F_OK) == 0) { /* someone else's file, or a broken one: never overwritten */
        flock(fd, LOCK_UN);
        close(fd);
        json_decref(learned);
        return -EEXIST;
    }
    if (!k) k = json_pack("{s:i,s:[]}", "version", 1, "entries");
    json_t *entries = json_object_get(k, "entries");
    size_t j;
    json_t *fresh;
    json_array_foreach(learned, j, fresh) {
        const json_t *g = json_object_get(fresh, "signature");
        const int decided = json_is_string(json_object_get(fresh, "strategy"));
        size_t i;
        json_t *item;
        int replaced = 0;
        json_array_foreach(entries, i, item) {
            if (json_equal(json_object_get(item, "signature"), g)) {
                /* an undecided entry never replaces a winner (another job decided meanwhile) */
                if (decided || !json_is_string(json_object_get(item, "strategy"))) json_array_set(entries, i, fresh);
                replaced = 1;
                break;
            }
        }
        if (!replaced) json_array_append(entries, fresh);
    }
    json_decref(learned);
    int rc = 0;
    if (json_dump_file(k, tmp, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0 || rename(tmp, path) != 0) {
        rc = -EIO;
        remove(tmp);
    }
    json_decref(k);
    flock(fd, LOCK_UN);
    close(fd);
    return rc;
}

/* The runtime's own I/O: never in the POSIX layer's statistics (posix.all_files records every file). */
int iotame_knowledge_save(const iotame_selector_t *s, const char *path)
{
    iotame_posix_quiet_begin();
    int rc = selector_knowledge_save(s, path);
    iotame_posix_quiet_end();
    return rc;
}
