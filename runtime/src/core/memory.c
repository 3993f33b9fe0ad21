/* The process's memory allocator (the `memory` section), set once at MPI_Init. */
#include <jansson.h>
#include <stdlib.h>

#include "core.h"

static long long threshold; /* what was applied: 0 when nothing was */

long long iotame_memory_threshold(void) { return threshold; }

/* ROMIO allocates and frees its data-sieving and collective buffers on every call; once glibc's dynamic mmap
 * threshold has risen (it does so by itself at the first free of an mmapped buffer), they are reused from the heap
 * instead of being faulted in afresh. One allocation of the configured size, freed at once, raises it at start-up.
 * Off by default: preloading the runtime changes nothing unless the configuration asks (docs/design/malloc-threshold.md). */
void iotame_memory_prepare(const iotame_config_t *cfg)
{
    const iotame_file_config_t process = {.defaults = cfg ? &cfg->defaults : NULL}; /* no file: defaults only */
    const json_t *v = iotame_config_setting(&process, "memory", "malloc_threshold");
    long long n = json_integer_value(v ? v : iotame_config_default("memory", "malloc_threshold"));
#if defined(__GLIBC__)
    if (n > 0) {
        void *volatile p = malloc((size_t)n); /* volatile: the pair must not be optimized away */
        free(p);
        threshold = n;
    }
#else
    (void)n;
#endif
}
