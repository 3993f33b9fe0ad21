/* What a replay creates on storage, held within what the user allows: the bytes its write calls move and the
 * preload its reads need, after --scale; --replay-bytes lowers the scale until they fit, and a replay that would
 * need more than the limit or the free space of --dir does not start. */
#ifndef IOTAME_KERNELS_REPLAY_BUDGET_H
#define IOTAME_KERNELS_REPLAY_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#include "replay/spec.h"

/* Collective on run->comm: per file, whether --scale left every call of every proc (malloc'd; free()). */
bool *replay_budget_whole(iotame_run_t *run, const replay_spec_t *spec);

/* This rank's share of f's preload after --scale: with every call of every proc kept (`whole`), the spec's preload
 * on the file's first proc; else the spec's preload ranges within the extents of this rank's kept read calls. Sorted and merged
 * ([offset, length]; *out NULL when none). Free *out with free(). */
size_t replay_budget_preload(const replay_file_t *f, bool whole, uint64_t (**out)[2]);

/* Bytes this rank creates at the current scale: its kept write calls' bytes and its share of the preload. */
uint64_t replay_budget_bytes(const replay_spec_t *spec, const bool *whole);

/* Collective on run->comm. Applies --scale `scale` to spec; with limit > 0 (--replay-bytes) lowers the scale until
 * the bytes every rank creates fit in limit, and checks them against the free space of dir. *chosen: the scale
 * applied, *created: the bytes summed over ranks. Returns IOTAME_EXIT_OK, or IOTAME_EXIT_USAGE on every rank after
 * rank 0 said what the replay would need and what it may have. */
int replay_budget_fit(iotame_run_t *run, replay_spec_t *spec, double scale, uint64_t limit, const char *dir,
                      double *chosen, uint64_t *created);

#endif
