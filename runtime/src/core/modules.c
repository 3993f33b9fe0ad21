/* The module registry: the one list of the runtime's parts, and the loops that call their hooks. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "iotame.h"

#include "module.h"

/* The order hooks run in (module.h). stats first: it counts every call as the application made it, whatever a
 * later module does with it; collective last at the MPI-IO layer: it may serve the call instead of the library. */
extern const iotame_module_t iotame_module_stats, iotame_module_trace, iotame_module_hdf5, iotame_module_stage,
    iotame_module_collective, iotame_module_posix, iotame_module_throttle, iotame_module_emulate;

const iotame_module_t *const iotame_modules[] = {
    &iotame_module_stats,
    &iotame_module_trace, /* beside stats: every call as the application made it, before a module serves it */
#if defined(IOTAME_HAVE_HDF5)
    &iotame_module_hdf5,
#endif
    &iotame_module_stage, /* before collective: a staged write is served here, and reads wait for staged data */
    &iotame_module_collective,
    &iotame_module_posix, /* the POSIX layer: its wrappers call the posix_before/after hooks of the modules after it */
    &iotame_module_throttle, /* before emulate: a process waits for its token, then for the modelled device */
    &iotame_module_emulate,
    NULL,
};

iotame_hooks_t iotame__hooks_before, iotame__hooks_serve, iotame__hooks_after, iotame__hooks_meta,
    iotame__hooks_posix_before, iotame__hooks_posix_after, iotame__hooks_barrier, iotame__hooks_layout;
static iotame_hooks_t active; /* every started module */

int iotame_module_index(const iotame_module_t *m)
{
    for (int i = 0; iotame_modules[i]; i++)
        if (iotame_modules[i] == m) return i;
    return -1;
}

static void modules_add(iotame_hooks_t *h, const iotame_module_t *m, int has)
{
    if (has && h->n < IOTAME_MODULE_MAX) h->m[h->n++] = m;
}

void iotame_modules_start(const iotame_config_t *cfg)
{
    for (int i = 0; iotame_modules[i]; i++) {
        const iotame_module_t *m = iotame_modules[i];
        if (m->start && !m->start(cfg)) continue;
        modules_add(&active, m, 1);
        modules_add(&iotame__hooks_before, m, m->before != NULL);
        modules_add(&iotame__hooks_serve, m, m->serve != NULL);
        modules_add(&iotame__hooks_after, m, m->after != NULL);
        modules_add(&iotame__hooks_meta, m, m->meta != NULL);
        modules_add(&iotame__hooks_posix_before, m, m->posix_before != NULL);
        modules_add(&iotame__hooks_posix_after, m, m->posix_after != NULL);
        modules_add(&iotame__hooks_barrier, m, m->barrier != NULL);
        modules_add(&iotame__hooks_layout, m, m->layout != NULL);
    }
}

/* Each hook over the active modules, in registry order. */
#define EACH(HOOK, CALL)                                                                                       \
    for (int i = 0; i < active.n; i++)                                                                         \
        if (active.m[i]->HOOK) active.m[i]->CALL

void iotame_modules_opening(const iotame_open_t *o) { EACH(opening, opening(o)); }
void iotame_modules_created(const iotame_open_t *o) { EACH(created, created(o)); }
void iotame_modules_open(const iotame_open_t *o) { EACH(open, open(o)); }
/* The hooks of one handle run for the records of handles the runtime saw opened: no module has state of others. */
void iotame_modules_set_view(iotame_file_t *f, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                             const char *datarep)
{
    if (iotame_file_known(f)) EACH(set_view, set_view(f, disp, etype, filetype, datarep));
}
void iotame_modules_set_info(iotame_file_t *f)
{
    if (iotame_file_known(f)) EACH(set_info, set_info(f));
}
void iotame_modules_set_atomicity(iotame_file_t *f, int flag)
{
    if (iotame_file_known(f)) EACH(set_atomicity, set_atomicity(f, flag));
}
/* Over every registered module, active or not: whether a module starts may depend on a rank's environment, and the
 * answer decides whether the ranks join the open's reduction of the profile. */
int iotame_modules_predict(const iotame_file_config_t *fc)
{
    for (int i = 0; iotame_modules[i]; i++)
        if (iotame_modules[i]->predicts && iotame_modules[i]->predicts(fc)) return 1;
    return 0;
}

void iotame_modules_sizing(iotame_file_t *f)
{
    if (iotame_file_known(f)) EACH(sizing, sizing(f));
}

/* Every module's hook runs, even after another's error; the first error is returned. */
#define FIRST_ERROR(HOOK)                                                                                       \
    int rc = MPI_SUCCESS;                                                                                      \
    for (int i = 0; iotame_file_known(f) && i < active.n; i++) {                                              \
        if (!active.m[i]->HOOK) continue;                                                                      \
        int r = active.m[i]->HOOK(f);                                                                          \
        if (rc == MPI_SUCCESS) rc = r;                                                                         \
    }                                                                                                          \
    return rc;

int iotame_modules_sync(iotame_file_t *f) { FIRST_ERROR(sync) }
int iotame_modules_close(iotame_file_t *f) { FIRST_ERROR(close) }

/* Stops the hooks of the data path first: a module's finalize may do I/O that must not be counted. */
void iotame_modules_finalize(void)
{
    iotame__hooks_before.n = iotame__hooks_serve.n = iotame__hooks_after.n = iotame__hooks_meta.n = 0;
    iotame__hooks_posix_before.n = iotame__hooks_posix_after.n = iotame__hooks_barrier.n = 0;
    EACH(finalize, finalize());
    active.n = 0;
    iotame__hooks_layout.n = 0;
}

const char *iotame_registry(void)
{
    static char *text;
    if (text) return text;
    json_t *modules = json_array();
    for (int i = 0; iotame_modules[i]; i++) {
        const iotame_module_t *m = iotame_modules[i];
        json_t *entry = json_pack("{s:s,s:s?}", "name", m->name, "settings", m->settings);
        if (m->describe) m->describe(entry);
        json_array_append_new(modules, entry);
    }
    json_t *all = json_pack("{s:o}", "modules", modules);
    text = json_dumps(all, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(all);
    return text ? text : "{}";
}
