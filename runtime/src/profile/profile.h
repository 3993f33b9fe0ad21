/* profile: the machine profile that `iotame calibrate` writes (JSON, docs/formats.md "Machine profile"), read into
 * the cost model's iotame_profile_t (load.c), and found for a data file's file system without being named each time
 * (find.c). The decisions that predict from the machine use it: the collective strategy, and staging's
 * write-through. docs/design/cost-model.md says how its keys map to the fields and what is taken for what it leaves
 * out. load.c needs no MPI, so that the MPI-free validator (`iotame-config profile`) links it. The only interface of
 * runtime/src/profile/. */
#ifndef IOTAME_PROFILE_H
#define IOTAME_PROFILE_H

#include <stddef.h>

#include "select/select.h"

/* Reads the profile named `path`, from text[0..len) or, when text is NULL, from the file `path`, into *out. Returns 0
 * when it is valid and iotame_model_profile_problem() accepts it; else a negative errno (-EINVAL: invalid, another:
 * unreadable) and *errors (malloc'd, the caller frees it) holds every problem, one line each:
 * "iotame: profile FILE: KEY: expected ..., got ...". *errors is NULL on success. */
int iotame_profile_load(const char *path, const char *text, size_t len, iotame_profile_t *out, char **errors);

/* A machine profile found for a data file (find.c). */
typedef struct {
    iotame_profile_t profile;
    char path[4096];
    const char *found_by; /* "setting", "environment" or "directory" */
    int hash;             /* of the profile's text, never 0: ranks that read the same profile agree on it */
} iotame_profile_found_t;
/* The profile of the file system of data_path (as MPI_File_open got it), found as docs/calibrate.md says: named by
 * `setting` (collective.profile; NULL: none) or IOTAME_PROFILE (a file or a directory), else in the user's and the
 * installation's profile directories. Returns 1 and *out when found; *refused (malloc'd, or NULL) holds a line for
 * each profile refused on the way (invalid, or named but of another file system). Kept per directory for the job's
 * life; thread-safe. */
int iotame_profile_find(const char *data_path, const char *setting, iotame_profile_found_t *out, char **refused);
/* Whether a search without a setting could find any profile at all: IOTAME_PROFILE is set, or a profile directory
 * holds a *.json file (cheap: no file is read). 0 means that every iotame_profile_find without a setting fails. */
int iotame_profile_may_exist(void);

#endif
