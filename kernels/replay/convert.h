/* --from a file that is not a replay spec (a Darshan log, an iotame statistics file): the converter
 * `CLI replay spec SRC --out TMP.json` makes one (docs/kernels.md "replay"). Rank 0 only. */
#ifndef IOTAME_KERNELS_REPLAY_CONVERT_H
#define IOTAME_KERNELS_REPLAY_CONVERT_H

#include <stdbool.h>
#include <stddef.h>

/* True when text is a replay spec, or meant as one (JSON with a "replay" key, or text starting with '{' that is not
 * valid JSON: its parse error is the useful message); false for what the converter reads. */
bool replay_is_spec(const char *text, size_t len);

/* Runs the converter on src and returns the spec it wrote (NUL-terminated, *len set), or NULL after printing why
 * (the converter's own message included) on stderr. */
char *replay_convert(const char *src, size_t *len);

#endif
