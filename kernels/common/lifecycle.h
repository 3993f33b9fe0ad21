/* The life cycle of a kernel's files: removing them so that every rank agrees on the outcome, and the cycle of the
 * kernels that write one shared file and read it back (matrix, noncontig, tileio, vpicio, vorpalio, gcrmio):
 *
 *   static int foo_pass(iotame_run_t *run, void *ctx, bool write) { ... open, transfer, sync if write, close ... }
 *   foo_ctx_t c = {.o = &o, .buf = buf};
 *   rc = iotame_write_then_read(run, &o.std, my_bytes, foo_pass, &c);
 */
#ifndef IOTAME_KERNELS_LIFECYCLE_H
#define IOTAME_KERNELS_LIFECYCLE_H

#include <stdbool.h>
#include <stdint.h>

#include "fileio.h"
#include "options.h"
#include "run.h"

/* Collective. After a barrier (nobody still has the file open), the ranks where `mine` is true remove path with api
 * (rank 0 for a shared file, every rank for its own file); a missing file is fine. Returns IOTAME_EXIT_OK, or
 * IOTAME_EXIT_IO on every rank when any removal failed (the reason is on stderr). */
int iotame_file_remove_agreed(iotame_run_t *run, iotame_api_t api, const char *path, bool mine);

/* One pass over a kernel's file: write (fill and write, sync, close) or read (read, check, close). Returns
 * IOTAME_EXIT_OK, or another status on every rank (IOTAME_EXIT_IO: the input could not be opened). */
typedef int iotame_pass_fn(iotame_run_t *run, void *ctx, bool write);

/* Collective. The cycle of one shared file std->file:
 *   unless --skip-write: remove the old file (its size and content are then this run's only),
 *                        phase "write" = pass(ctx, true)
 *   phase "read" = pass(ctx, false)
 *   unless --keep or --skip-write: remove the file (a --skip-write run never removes its input)
 * Both phases count my_bytes for this rank. The first status other than IOTAME_EXIT_OK ends the cycle and is
 * returned. The file is removed by rank 0 with MPI_File_delete, which takes the names MPI_File_open takes (HDF5's
 * MPI-IO driver opens its files with MPI_File_open too). */
int iotame_write_then_read(iotame_run_t *run, const iotame_standard_options_t *std, uint64_t my_bytes,
                           iotame_pass_fn *pass, void *ctx);

#endif
