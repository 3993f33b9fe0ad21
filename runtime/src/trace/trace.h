/* trace: the per-request trace of the statistics (setting trace.requests; in the spirit of Darshan's DXT), so that a
 * job's MPI-IO calls can be replayed (iotame-kernel replay) and compared. Per process and path record, the first
 * `requests` MPI-IO calls of the application in call order: every data call at its issue (the file extents it
 * accesses, as strided runs with the file view applied; none for the shared and ordered file pointers), open, close,
 * sync, set_size and set_view; the calls past the limit are counted. Rank 0 gathers every rank's trace in the
 * statistics at MPI_Finalize (file record key "trace"; docs/formats.md). Off (the default) the module does not start:
 * no hook of it runs. The only interface of runtime/src/trace/. */
#ifndef IOTAME_TRACE_H
#define IOTAME_TRACE_H

#include "core/module.h"
#include "flatten/flatten.h"

/* Most runs kept for one call; past it the call's "at" is cut there and says "at_truncated". */
#define IOTAME_TRACE_MAX_RUNS 4096

extern const iotame_module_t iotame_module_trace;

#endif
