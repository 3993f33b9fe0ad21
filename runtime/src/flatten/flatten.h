/* flatten: MPI datatypes and file views turned into sorted (offset, length) lists.
 * The only interface of runtime/src/flatten/ to the other parts.
 *
 * A datatype becomes its typemap as runs {off, len, count, stride} (count blocks of len bytes at off,
 * off + stride, ...), in typemap order, neighbours merged: a vector of a million blocks stays one run. A file view
 * (displacement, etype, filetype tiled by its extent) maps a byte range of the call's data stream to the sorted
 * file extents it covers. */
#ifndef IOTAME_FLATTEN_H
#define IOTAME_FLATTEN_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

typedef struct iotame_run {
    int64_t off, len, count, stride; /* count >= 1; stride == len when count == 1 */
} iotame_run_t;

/* The flattened typemap of one datatype. */
typedef struct {
    iotame_run_t *runs;
    size_t nruns;
    int64_t *cum;              /* nruns + 1 prefix sums: data bytes before run i */
    int64_t size;              /* MPI_Type_size */
    int64_t lb, extent;        /* MPI_Type_get_extent */
    int64_t true_lb, true_ub;  /* the bytes actually touched, [true_lb, true_ub) */
    int sorted;                /* offsets strictly increasing in typemap order, no byte twice */
} iotame_flat_t;

/* Largest number of runs a flattened type may have (beyond it: -E2BIG, and the caller passes the call through). */
#define IOTAME_FLATTEN_MAX_RUNS ((size_t)1 << 22)

/* Flattens `type` (any constructor of MPI-3: contiguous, vector, hvector, indexed, hindexed, indexed_block,
 * hindexed_block, struct, subarray, darray, resized, dup, and the named types). Returns 0 and a new object (free
 * with iotame_flatten_free), -ENOTSUP for a type it cannot introspect, -E2BIG or -ENOMEM. */
int iotame_flatten_type(MPI_Datatype type, iotame_flat_t **out);
void iotame_flatten_free(iotame_flat_t *flat);

/* Whether `count` items of `type` are one block of bytes in typemap order (what PMPI_Pack would produce is then
 * the memory itself); *first is the block's first byte relative to the buffer. Cheap for named types. */
int iotame_flatten_is_contiguous(MPI_Datatype type, int64_t count, int64_t *first);

typedef struct {
    int64_t off, len;
} iotame_extent_t;

/* A growable list of extents, reused from call to call. */
typedef struct {
    iotame_extent_t *v;
    size_t n, cap;
} iotame_extents_t;

void iotame_extents_free(iotame_extents_t *x);

/* A file view: bytes of the data stream are laid out by the filetype, tiled by its extent from disp. */
typedef struct {
    int64_t disp;
    int64_t etype_size;
    const iotame_flat_t *filetype;
} iotame_view_t;

/* A growable list of strided runs of file offsets, reused from call to call. */
typedef struct {
    iotame_run_t *v;
    size_t n, cap;
} iotame_runs_t;

void iotame_runs_free(iotame_runs_t *x);

/* Whether a view can be mapped: its filetype sorted, with data, and tiles that do not overlap. */
int iotame_flatten_view_ok(const iotame_view_t *view);

/* The file extents of data-stream bytes [start, start + len) of `view`, sorted, touching ones merged, into *out
 * (replacing its content). Returns 0, -EINVAL for a view that cannot be mapped, or -ENOMEM. */
int iotame_flatten_view_map(const iotame_view_t *view, int64_t start, int64_t len, iotame_extents_t *out);

/* The same bytes as iotame_flatten_view_map, in the same (ascending) order, as strided runs: a description that
 * grows with the flattened view, not with its pieces. Neighbouring runs merge (touching pieces into one piece, equal
 * pieces at one stride into one run), so a vector whose tiles continue its stride is one run however many tiles the
 * call covers. Returns 0, -EINVAL for a view that cannot be mapped, or -ENOMEM. */
int iotame_flatten_view_runs(const iotame_view_t *view, int64_t start, int64_t len, iotame_runs_t *out);

#endif
