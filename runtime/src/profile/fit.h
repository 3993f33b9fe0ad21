/* fit.h: the reader of a profile's "strategies.fit" section (fit.c), for load.c only: the fit's interface for the
 * rest of the runtime is in profile.h. */
#ifndef IOTAME_PROFILE_FIT_H
#define IOTAME_PROFILE_FIT_H

#include <jansson.h>

#include "profile.h"

/* A problem of the section: its key, what was expected, the value found (borrowed). */
typedef struct {
    char key[160];
    const char *expected;
    const json_t *got;
} iotame_fit_problem_t;

/* The "fit" of the profile's "strategies" section into out->fit; 0, or -1 with the first problem in *problem (the
 * fits read so far are kept). No "fit" key: 0, nothing read. */
int iotame__profile_fit_read(const json_t *strategies, iotame_profile_t *out, iotame_fit_problem_t *problem);

#endif
