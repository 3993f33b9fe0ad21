/* Shared files accessed through MPI-IO file views, for the kernels built on derived datatypes (matrix, noncontig,
 * tileio, btio): opening and removing agreed across ranks, transfers through the current view with their byte
 * count checked, and a check that a read left the holes of a noncontiguous memory datatype alone.
 *
 *   if ((rc = iotame_view_open(run, &f, path, true))) return rc;   every rank gets the same status
 *   iotame_view_set(&f, 0, etype, filetype);
 *   iotame_view_write(&f, offset_in_etypes, buf, count, memtype, collective);
 *   iotame_file_sync(&f); iotame_file_close(&f);
 *
 * Include it next to kernels.h: #include "common/view.h".
 */
#ifndef IOTAME_KERNELS_VIEW_H
#define IOTAME_KERNELS_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include <mpi.h>

#include "fileio.h"
#include "run.h"

/* Collective. Opens the shared file with MPI-IO on run->comm, for writing (created if missing) or for reading.
 * Returns IOTAME_EXIT_OK, or IOTAME_EXIT_IO on every rank when any rank failed (the reason is on stderr). */
int iotame_view_open(iotame_run_t *run, iotame_file_t *f, const char *path, bool write);

/* Collective. Rank 0 removes path (a missing file is fine); returns IOTAME_EXIT_OK or IOTAME_EXIT_IO everywhere. */
int iotame_view_remove(iotame_run_t *run, const char *path);

/* MPI_File_set_view with the "native" representation (collective); aborts the job on failure. */
void iotame_view_set(iotame_file_t *f, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype);

/* count items of memtype at `offset` (in etypes of the current view): MPI_File_{write,read}_at[_all]. Aborts the job
 * when the call fails or moves fewer bytes than count x size(memtype) (a read past the end of the file). */
void iotame_view_write(iotame_file_t *f, MPI_Offset offset, const void *buf, int count, MPI_Datatype memtype,
                       bool collective);
void iotame_view_read(iotame_file_t *f, MPI_Offset offset, void *buf, int count, MPI_Datatype memtype,
                      bool collective);

/* MPI_Type_commit, for symmetry with MPI_Type_free in the kernels' setup code. */
void iotame_view_commit(MPI_Datatype *type);

/* The byte that fills the holes of a noncontiguous memory buffer before a read. A kernel verifies its data pieces,
 * gives them back to the holes (iotame_view_clear), then calls iotame_view_holes_check on the whole buffer. */
#define IOTAME_VIEW_HOLE 0xA5

/* memset(buf, byte, len) with its time excluded from the current phase (preparing buffers is not I/O). */
void iotame_view_clear(iotame_run_t *run, void *buf, size_t len, int byte);

/* Aborts the job (IOTAME_EXIT_IO) when a byte of buf is not IOTAME_VIEW_HOLE: a read through a memory datatype
 * wrote outside it, which breaks MPI's contract rather than the file's data. Its time is excluded from the phase. */
void iotame_view_holes_check(iotame_run_t *run, const void *buf, size_t len, const char *path);

#endif
