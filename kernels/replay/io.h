/* Replaying one file's calls (timed), and reading back what they wrote (untimed verification). */
#ifndef IOTAME_KERNELS_REPLAY_IO_H
#define IOTAME_KERNELS_REPLAY_IO_H

#include <stdbool.h>
#include <stdint.h>

#include "replay/spec.h"

typedef struct {
    iotame_run_t *run;
    bool compute;                           /* sleep each call's gap */
    unsigned char *buf;                     /* one call's data, grown as needed */
    size_t cap;
    uint64_t calls, read_bytes, write_bytes; /* this rank's, so far */
    const unsigned char *map;               /* the file being verified, mapped read-only */
    uint64_t map_size;
} replay_io_t;

/* Opens f (MPIIO: collectively on comm, the communicator of f->procs), makes this rank's calls, closes it. Reads
 * check their data against the pattern. Aborts the job when a call fails. */
void replay_io_file(replay_io_t *io, const replay_file_t *f, MPI_Comm comm);

/* Reads back (through a mapping, after every file is closed) and checks every piece this rank's write calls wrote
 * in f. */
void replay_io_verify(replay_io_t *io, const replay_file_t *f);

/* Setup: creates path `size` bytes long; then writes the pattern over [offset, offset + length) of it (through a
 * mapping, every rank its share). */
void replay_io_create(replay_io_t *io, const char *path, uint64_t size);
void replay_io_preload(replay_io_t *io, const char *path, uint64_t offset, uint64_t length);

#endif
