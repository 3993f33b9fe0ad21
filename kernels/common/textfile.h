/* Small input files (a kernel's spec): read whole on one rank, broadcast to all.
 *
 *   char *text = NULL; size_t len = 0;
 *   if (run->rank == 0) text = iotame_text_read(path, &len);   NULL: the reason is on stderr
 *   if (!iotame_text_bcast(run, &text, &len)) return IOTAME_EXIT_USAGE;
 */
#ifndef IOTAME_KERNELS_TEXTFILE_H
#define IOTAME_KERNELS_TEXTFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "run.h"

/* Most bytes such a file may have (one MPI_Bcast). */
#define IOTAME_TEXT_MAX ((size_t)1 << 30)

/* The whole file, NUL-terminated (len without the NUL), or NULL after printing why (iotame_error). Free with free(). */
char *iotame_text_read(const char *path, size_t *len);

/* Collective. Sends rank 0's text (NULL: it failed) to every rank. Returns false on every rank when rank 0 had none;
 * otherwise every rank holds a NUL-terminated copy in *text. */
bool iotame_text_bcast(const iotame_run_t *run, char **text, size_t *len);

#endif
