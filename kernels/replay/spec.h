/* The replay spec (docs/kernels.md "replay"): parsing and validation into what one rank replays.
 *
 * Every rank parses the same text, so every rank reaches the same verdict; rank 0 alone prints the error. */
#ifndef IOTAME_KERNELS_REPLAY_SPEC_H
#define IOTAME_KERNELS_REPLAY_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

/* Most bytes one call moves (MPI counts are ints) and most pieces it has. */
#define REPLAY_MAX_CALL_BYTES ((uint64_t)1 << 30)
/* Offsets (repetitions included) stay below this, far from int64_t overflow. */
#define REPLAY_MAX_OFFSET ((uint64_t)1 << 60)

/* A run of the spec: count pieces of length bytes at offset + i*stride. */
typedef struct {
    uint64_t offset, length, count, stride;
} replay_extent_t;

typedef struct {
    char op;                /* 'w' 'r' 'W' 'R' 's' */
    replay_extent_t *at;    /* in file order; NULL when nat is 0 */
    size_t nat;
    uint64_t repeat;        /* after --scale: 0 drops the entry */
    uint64_t spec_repeat;   /* as the spec has it (--scale starts from it, so it can be applied again) */
    uint64_t advance;
    double gap;
    uint64_t bytes;         /* one call's bytes */
    uint64_t pieces;        /* one call's pieces */
    bool viewed;            /* an independent MPIIO entry made under a view every proc of the file sets here */
} replay_call_t;

typedef struct {
    char *name;             /* relative to --dir */
    char *path;             /* --dir/name */
    iotame_api_t api;
    int *procs;
    size_t nprocs;
    int me;                 /* this rank's index in procs, -1 when not a proc of the file */
    uint64_t (*preload)[2]; /* [offset, length] */
    size_t npreload;
    replay_call_t *calls;   /* this rank's calls (none when me < 0) */
    size_t ncalls;
} replay_file_t;

typedef struct {
    json_t *source;         /* the spec's "source" (a new reference), or NULL */
    replay_file_t *files;
    size_t nfiles;
} replay_spec_t;

/* Parses and validates the spec text (what = the file named in messages) for run->rank. Returns IOTAME_EXIT_OK, or
 * IOTAME_EXIT_USAGE on every rank after rank 0 printed what is wrong. */
int replay_spec_parse(iotame_run_t *run, const char *text, size_t len, const char *what, const char *dir,
                      replay_spec_t *spec);

/* Applies --scale f (0 < f <= 1) to this rank's calls as the spec has them (again: a later call replaces an earlier
 * one): per file the first ceil(f*n) collective and ceil(f*m) independent calls, repetitions counted, syncs and
 * reopens kept. */
void replay_spec_scale(replay_spec_t *spec, double f);

void replay_spec_free(replay_spec_t *spec);

/* Bytes from a call's first offset to the end of its last piece (a call with runs). */
uint64_t replay_call_span(const replay_call_t *c);

/* True for the ops that move data collectively ('W', 'R'), for entries of the collective sequence of an MPIIO
 * file ('W', 'R', 's', 'o'), and for the ops that move data (all but 's' and 'o'). */
bool replay_op_collective(char op);
bool replay_op_in_sequence(const replay_file_t *f, char op);
bool replay_op_data(char op);

#endif
