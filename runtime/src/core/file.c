/* The core's record of each open MPI_File handle (core/module.h): the handle's statistics record, its settings
 * parsed once at open, and one slot per module for the module's own state of the handle. The one table of open
 * handles of the runtime; the wrappers look a handle up once per call and hand the record to every hook. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "module.h"

/* A record and what it owns: the settings (their hints array) and the path. */
typedef struct {
    iotame_file_t pub;
    iotame_file_config_t fc;
    int has_fc;
} file_record_t;

static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;
/* Open handles: few at a time, so a short array scanned from the newest. */
static file_record_t **file_table;
static size_t file_count, file_cap;
/* Bumped at every open and close: a thread's cached lookup is valid only within one generation, since a closed
 * handle's value can come back for another file. */
static unsigned file_generation = 1;
/* The record of handles the runtime did not see opened (before MPI_Init, or by a library below our wrappers): their
 * calls are counted under one statistics record and no module has state for them. */
static iotame_file_t file_outside = {.fh = MPI_FILE_NULL, .path = "(opened outside iotame)"};

static void file_free(file_record_t *r)
{
    if (r->has_fc) iotame_config_file_release(&r->fc);
    free((char *)r->pub.path);
    free(r);
}

iotame_file_t *iotame_file_open(MPI_File fh, iotame_file_stats_t *fs, const char *path, int amode,
                                const iotame_file_config_t *fc)
{
    file_record_t *r = calloc(1, sizeof *r);
    char *own = strdup(path); /* the application's string may not outlive its open */
    if (!r || !own) {
        free(r);
        free(own);
        return NULL;
    }
    r->pub.fh = fh;
    r->pub.fs = fs;
    r->pub.path = own;
    r->pub.amode = amode;
    if (fc) {
        r->fc = *fc; /* taken over: released with the record */
        r->has_fc = 1;
        r->pub.fc = &r->fc;
    }
    pthread_mutex_lock(&file_lock);
    if (file_count == file_cap) {
        size_t cap = file_cap ? 2 * file_cap : 16;
        void *grown = realloc(file_table, cap * sizeof *file_table);
        if (!grown) {
            pthread_mutex_unlock(&file_lock);
            r->has_fc = 0; /* the caller still owns fc */
            file_free(r);
            return NULL;
        }
        file_table = grown;
        file_cap = cap;
    }
    file_table[file_count++] = r;
    __atomic_add_fetch(&file_generation, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&file_lock);
    return &r->pub;
}


void iotame_file_close(iotame_file_t *f)
{
    if (!f || f == &file_outside) return;
    file_record_t *r = (file_record_t *)f;
    pthread_mutex_lock(&file_lock);
    for (size_t i = file_count; i-- > 0;)
        if (file_table[i] == r) {
            file_table[i] = file_table[--file_count];
            break;
        }
    __atomic_add_fetch(&file_generation, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&file_lock);
    file_free(r);
}

static iotame_file_t *file_lookup_locked(MPI_File fh)
{
    iotame_file_t *f = NULL;
    pthread_mutex_lock(&file_lock);
    for (size_t i = file_count; i-- > 0;)
        if (file_table[i]->pub.fh == fh) {
            f = &file_table[i]->pub;
            break;
        }
    if (!f) {
        if (!file_outside.fs) file_outside.fs = iotame_stats_file(file_outside.path);
        f = &file_outside;
    }
    pthread_mutex_unlock(&file_lock);
    return f;
}

iotame_file_t *iotame_file_lookup(MPI_File fh)
{
    static _Thread_local struct {
        unsigned generation;
        MPI_File fh;
        iotame_file_t *f;
    } last __attribute__((tls_model("initial-exec")));
    unsigned generation = __atomic_load_n(&file_generation, __ATOMIC_ACQUIRE);
    if (last.generation == generation && last.fh == fh && last.f) return last.f;
    iotame_file_t *f = file_lookup_locked(fh);
    last.generation = generation;
    last.fh = fh;
    last.f = f;
    return f;
}

int iotame_file_known(const iotame_file_t *f) { return f && f != &file_outside; }

void iotame_file_each(void (*fn)(iotame_file_t *f, void *arg), void *arg)
{
    pthread_mutex_lock(&file_lock);
    size_t n = file_count;
    file_record_t **copy = n ? malloc(n * sizeof *copy) : NULL;
    if (copy) memcpy(copy, file_table, n * sizeof *copy);
    pthread_mutex_unlock(&file_lock);
    for (size_t i = 0; copy && i < n; i++) fn(&copy[i]->pub, arg); /* fn may close records: not under the lock */
    free(copy);
}

const json_t *iotame_file_setting(const iotame_file_t *f, const char *section, const char *key)
{
    return iotame_config_setting(f ? f->fc : NULL, section, key);
}
