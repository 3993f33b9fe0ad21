/* The process's memory allocator (the `memory` section), set once at MPI_Init. */
#include <jansson.h>
#include <stdlib.h>

#include "core.h"

static long long threshold; /* what was applied: 0 when nothing was */

long long iotame_memory_threshold(void) { return threshold; }

/* RATIONALE: ROMIO allocates and frees its data-sieving buffer (4 MiB) on every independent call, and glibc
 * serves it from the heap once its dynamic mmap threshold has risen (at the first free of an mmapped buffer, up to
 * 32 MiB). Whether a freed buffer then stays in the heap or is trimmed, to be faulted in afresh by the next call,
 * depends on the whole history of the process's allocations, ours included: BT-IO's reads at 1 rank took 29,000
 * more page faults under `auto` than under `independent` and ran at half the speed (docs/runtime.md). One
 * allocation of 16 MiB, freed at once, puts glibc where it gets by itself at the first MPI_File_close (ROMIO's
 * collective buffer): buffers of up to 16 MiB reused, the heap's top trimmed beyond 32. On by default since the
 * selector no longer measures a strategy's first call after another's: before, the setting moved its verdicts on
 * small writes (matrix 4 KiB, depth 4: auto at 0.70 of itself without it; docs/reproductions/orthrus.md runs 15-16). */
void iotame_memory_prepare(const iotame_config_t *cfg)
{
    const iotame_file_config_t process = {.defaults = cfg ? &cfg->defaults : NULL}; /* no file: defaults only */
    const json_t *v = iotame_config_value(&process, "memory", "malloc_threshold");
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
