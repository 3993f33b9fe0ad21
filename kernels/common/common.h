/* Everything a kernel needs: include this one header. See each header for its part:
 *   run.h        the run: result JSON, params, timed phases, verification, messages, exit statuses
 *   options.h    declarative --long options, size/integer parsers
 *   pattern.h    data pattern from (seed, writer rank, file offset), seeded RNG and shuffle
 *   fileio.h     POSIX / MPI-IO files behind one interface, MPI error checks
 *   h5.h         parallel HDF5 property lists and checked calls
 *   lifecycle.h  removing files with every rank agreeing; writing a shared file, reading it back, removing it
 */
#ifndef IOTAME_KERNELS_COMMON_H
#define IOTAME_KERNELS_COMMON_H

#include "fileio.h"
#ifndef IOTAME_NO_HDF5 /* built without parallel HDF5 (IOTAME_HDF5 OFF): no HDF5 kernels */
#include "h5.h"
#endif
#include "lifecycle.h"
#include "options.h"
#include "pattern.h"
#include "run.h"

#endif
