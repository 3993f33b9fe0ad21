/* The knowledge store: what the runtime's modules learned in one run (the selector's winners, the throttle's
 * levels, ...) kept in one JSON file for the next runs, one section per module:
 *     {"version": 2, "modules": {"collective": {...}, "throttle": {...}}}
 * What a section holds is its module's business; the store reads a module's section (rank 0 reads, every rank gets
 * it by broadcast) and saves one (lock, read the file as it is now, merge through the module's own function, write
 * a temporary file beside it, fsync, rename), so that several jobs, or several files of one job, sharing one path
 * never lose each other's entries. The files of version 1 (the selector's {"version": 1, "entries": [...]} and the
 * throttle's {"version": 1, "throttle": {...}}) are read as the sections "collective" and "throttle" and saved as
 * version 2. docs/design/knowledge.md says why.
 *
 * MPI-free except iotame_knowledge_read. The store does its I/O with plain system calls: a caller under the POSIX
 * layer wraps its calls in iotame_posix_quiet_begin()/end(). Reports go through iotame_log_warn, naming the path. */
#ifndef IOTAME_KNOWLEDGE_H
#define IOTAME_KNOWLEDGE_H

#include <mpi.h>
#include <stddef.h>

typedef struct json_t json_t;

#define IOTAME_KNOWLEDGE_VERSION 2

/* A module's merge: folds what this run learned (fresh, the caller's) into its section as the file holds it now
 * (section: an object, empty when the file has none; the merge changes it in place and may keep references to
 * fresh's items). Returns 0, or -errno to skip the save (-EINVAL: the section is not in the module's format;
 * -ENOMEM). */
typedef int (*iotame_knowledge_merge_fn)(json_t *section, json_t *fresh);

/* The section `module` of a knowledge file's text (len bytes), as a new reference in *section: an empty object when
 * the file has none, or is empty (0 bytes). Returns 0; -EINVAL when the text is not a knowledge file (not JSON, not
 * an object of a known version, a section not an object), *section NULL; -ENOMEM. */
int iotame_knowledge_section(const char *text, size_t len, const char *module, json_t **section);

/* Rank 0 of comm reads the file at path and broadcasts its text; every rank takes the section `module` of it
 * (collective over comm: every rank takes part in every broadcast, also when it cannot allocate). Returns 0 with
 * *section (a new reference; an empty object when the file has no such section), else *section is NULL and:
 * -ENOENT no file; -EINVAL the file is not a knowledge file (on every rank); -EIO rank 0 could not read it (on every
 * rank); -ENOMEM this rank could not hold it (on this rank only). Rank 0 reports -EINVAL and -EIO. */
int iotame_knowledge_read(const char *path, const char *module, MPI_Comm comm, json_t **section);

/* Saves what this process learned (fresh) into the section `module` of the file at path, created if missing: locks
 * path.lock (waiting at most iotame__knowledge_lock_ns), reads the file as it is now, merges through `merge`,
 * writes path.tmp.PID, fsyncs it and renames it over path. Other modules' sections and other versions' entries are
 * kept. Returns 0, or -errno with the file left as it was, and reported: -EEXIST the file is not a knowledge file
 * (or of a newer version); -ETIMEDOUT the lock could not be had in time; the merge's error; an I/O error. */
int iotame_knowledge_merge(const char *path, const char *module, iotame_knowledge_merge_fn merge, json_t *fresh);

/* The longest a save waits for the lock (default 10 s); tests shorten it. */
extern long long iotame__knowledge_lock_ns;

#endif
