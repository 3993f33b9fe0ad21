/* Node staging: a blocking write (independent or collective, explicit offset or individual file pointer) of a file
 * with staging.enabled is mapped through the handle's view to strided file runs, copied into the node's ring and
 * returned: no exchange between ranks, no synchronization; or, where staging cannot pay, written through within the
 * call (through.c). This process's staged data of the file is remembered (its last ring position and file range),
 * so that a read or an unstaged write that meets it waits for it (docs/design/staging.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "handle.h"

/* this process's counters, updated with stage_count from any thread */
static struct {
    uint64_t calls, bytes, blocked_ns, reads_waited, reads_not_waited, bypassed;
} node_counts;

/* The call's file runs and the packing buffer: the process's (the data path takes turns, module.c). */
static iotame_runs_t node_runs;
static char *node_pack;
static size_t node_pack_cap;

const iotame_runs_t *stage_call_runs(void) { return &node_runs; }

void stage_node_blocked(uint64_t ns) { stage_count(&node_counts.blocked_ns, ns); }

/* ---- this process's staged data ---- */

int stage_own_pending(stage_handle_t *h)
{
    if (h->own.last_end && __atomic_load_n(&stage_process.area->tail, __ATOMIC_ACQUIRE) < h->own.last_end) return 1;
    h->own.pend_lo = INT64_MAX;
    h->own.pend_hi = INT64_MIN;
    return 0;
}

int stage_own_overlap(stage_handle_t *h, int64_t lo, int64_t end)
{
    return stage_own_pending(h) && lo < h->own.pend_hi && h->own.pend_lo < end;
}

void stage_own_data_written(stage_handle_t *h)
{
    if (stage_own_pending(h)) stage_drain_counted(h->own.last_end);
}

/* ---- views ---- */

void stage_view_free(stage_handle_t *h)
{
    iotame_flatten_free(h->view.flat);
    h->view.flat = NULL;
}

/* This rank's view as set (default: bytes from 0); agreed over the file's ranks: every view maps, or collective
 * writes are not staged anywhere. */
void stage_view_set(stage_handle_t *h, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                    const char *datarep)
{
    stage_view_t *w = &h->view;
    stage_view_free(h);
    MPI_Count esize = 0;
    PMPI_Type_size_x(etype, &esize);
    w->disp = disp;
    w->etype_size = (int64_t)esize;
    w->native = datarep && strcmp(datarep, "native") == 0;
    iotame_view_t v = {disp, w->etype_size, NULL};
    w->ok = w->native && esize > 0 && iotame_flatten_type(filetype, &w->flat) == 0 &&
            (v.filetype = w->flat, iotame_flatten_view_ok(&v));
    PMPI_Allreduce(&w->ok, &w->ok_all, 1, MPI_INT, MPI_MIN, h->comm);
}

/* ---- the call's file runs and data ---- */

const char *stage_map_call(stage_handle_t *h, const iotame_io_t *io, int64_t *nbytes, MPI_Offset *pos)
{
    MPI_Count tsize = 0;
    if (PMPI_Type_size_x(io->datatype, &tsize) != MPI_SUCCESS || tsize < 0 || io->count < 0) return "invalid datatype";
    *nbytes = (int64_t)tsize * (int64_t)io->count;
    if (*nbytes % h->view.etype_size) return "request not a whole number of etypes";
    *pos = io->offset;
    if (!io->at && PMPI_File_get_position(io->fh, pos) != MPI_SUCCESS) return "no file pointer";
    iotame_view_t v = {h->view.disp, h->view.etype_size, h->view.flat};
    if (iotame_flatten_view_runs(&v, (int64_t)*pos * h->view.etype_size, *nbytes, &node_runs) != 0)
        return "out of memory (staging)";
    return NULL;
}

uint64_t stage_runs_range(int64_t *lo, int64_t *end)
{
    uint64_t pieces = 0;
    *lo = node_runs.n ? node_runs.v[0].off : 0; /* ascending */
    *end = *lo;
    for (size_t i = 0; i < node_runs.n; i++) {
        const iotame_run_t *x = &node_runs.v[i];
        if (x->off + (x->count - 1) * x->stride + x->len > *end) *end = x->off + (x->count - 1) * x->stride + x->len;
        pieces += (uint64_t)x->count;
    }
    return pieces;
}

/* The call's data, as staging takes it: its memory when that is contiguous, else packed by MPI, straight into the
 * ring when the call is one record (packed here first otherwise). */
int stage_fill(void *arg, char *dst, uint64_t from, uint64_t n)
{
    const stage_data_t *d = arg;
    if (d->mem) {
        memcpy(dst, d->mem + from, n);
        return 0;
    }
    MPI_Count at = 0; /* the whole call in one record (stage_node_write packed it first otherwise) */
    if (from != 0 || n != (uint64_t)d->nbytes) return -1;
    return PMPI_Pack_c(d->io->buf, d->io->count, d->io->datatype, dst, (MPI_Count)n, &at, MPI_COMM_SELF) ==
                   MPI_SUCCESS ? 0 : -1;
}

/* Packs the whole call into the process's packing buffer; NULL, or why it cannot be. */
static const char *stage_node_pack(stage_data_t *d)
{
    if ((size_t)d->nbytes > node_pack_cap) {
        char *p = malloc((size_t)d->nbytes);
        if (!p) return "out of memory (staging)";
        free(node_pack);
        node_pack = p;
        node_pack_cap = (size_t)d->nbytes;
    }
    MPI_Count at = 0;
    if (PMPI_Pack_c(d->io->buf, d->io->count, d->io->datatype, node_pack, (MPI_Count)d->nbytes, &at,
                    MPI_COMM_SELF) != MPI_SUCCESS)
        return "the buffer cannot be packed (staging)";
    d->mem = node_pack;
    return NULL;
}

void stage_complete(const iotame_io_t *io, const stage_handle_t *h, MPI_Offset pos, int64_t nbytes, int64_t done)
{
    if (io->status != MPI_STATUS_IGNORE) {
        PMPI_Status_set_elements_x(io->status, MPI_BYTE, (MPI_Count)done);
        PMPI_Status_set_cancelled(io->status, 0);
    }
    if (!io->at && nbytes > 0) PMPI_File_seek(io->fh, pos + nbytes / h->view.etype_size, MPI_SEEK_SET);
}

/* ---- a write ---- */

/* Why a write of h cannot be staged, or NULL. */
static const char *stage_node_write_reason(const stage_handle_t *h, const iotame_io_t *io)
{
    switch (io->kind) {
    case IOTAME_IO_SPLIT: return "split collective (staging)";
    case IOTAME_IO_NONBLOCKING:
    case IOTAME_IO_NONBLOCKING_COLLECTIVE: return "nonblocking (staging)";
    case IOTAME_IO_SHARED: return "shared file pointer (staging)";
    default: break;
    }
    if (h->atomic) return "atomic mode (staging)";
    if (h->amode & MPI_MODE_SEQUENTIAL) return "MPI_MODE_SEQUENTIAL (staging)";
    if (!h->view.native) return "data representation other than native (staging)";
    if (!(io->kind == IOTAME_IO_COLLECTIVE ? h->view.ok_all : h->view.ok))
        return "file view cannot be mapped (staging)";
    return NULL;
}

static void stage_node_bypass(stage_handle_t *h, const char *why)
{
    stage_count(&node_counts.bypassed, 1);
    iotame_stats_passthrough(h->fs, why);
    stage_own_data_written(h);
}

/* Copies the call's runs and data into the ring; 0, or -1 when MPI could not pack the buffer (nothing staged). */
static int stage_node_copy_in(stage_handle_t *h, stage_data_t *d, int64_t lo, int64_t end)
{
    stage_own_pending(h); /* forgets a written range */
    if (node_runs.n) {
        const stage_source_t src = {stage_fill, d};
        uint64_t last = stage_put(stage_process.area, h->file, stage_process.node_rank, -1, node_runs.v, node_runs.n,
                                  &src, stage_process.flush.threshold, &node_counts.blocked_ns);
        if (!last) return -1;
        h->own.last_end = last;
        if (lo < h->own.pend_lo) h->own.pend_lo = lo;
        if (end > h->own.pend_hi) h->own.pend_hi = end;
    }
    stage_count(&node_counts.calls, 1);
    stage_count(&node_counts.bytes, (uint64_t)d->nbytes);
    return 0;
}

int stage_node_write(stage_handle_t *h, const iotame_io_t *io, int *rc)
{
    const char *why = stage_node_write_reason(h, io);
    int64_t nbytes = 0, lo = 0, end = 0;
    MPI_Offset pos = 0;
    if (!why) why = stage_map_call(h, io, &nbytes, &pos);
    int64_t first = 0;
    stage_data_t d = {io, NULL, nbytes};
    if (!why && iotame_flatten_is_contiguous(io->datatype, (int64_t)io->count, &first))
        d.mem = (const char *)io->buf + first;
    uint64_t pieces = why ? 0 : stage_runs_range(&lo, &end);
    const char *through = why ? NULL : stage_through_reason(h, nbytes, pieces, lo, end);
    /* a call of several records, or written through, is packed first: no record waits for a failed pack */
    if (!why && !d.mem && (through || !stage_one_record(stage_process.area, node_runs.n, (uint64_t)nbytes)))
        why = stage_node_pack(&d);
    if (why) {
        stage_node_bypass(h, why);
        return 0;
    }
    int64_t done = nbytes;
    if (through) {
        if (stage_prefetch_held(h)) stage_prefetch_release(h); /* what it read ahead may be stale */
        *rc = stage_through_write(h, through, d.mem, &done);
    } else {
        if (stage_node_copy_in(h, &d, lo, end) != 0) { /* MPI could not pack the buffer into the ring */
            stage_node_bypass(h, "the buffer cannot be packed (staging)");
            return 0;
        }
        *rc = MPI_SUCCESS;
    }
    stage_complete(io, h, pos, done, done);
    return 1;
}

/* ---- a read ---- */

void stage_node_read(stage_handle_t *h, const iotame_io_t *io)
{
    if (!stage_own_pending(h)) return;
    int64_t nbytes = 0, lo = 0, end = 0;
    MPI_Offset pos = 0;
    int mapped = h->view.ok && !stage_map_call(h, io, &nbytes, &pos);
    if (mapped) stage_runs_range(&lo, &end);
    if (!mapped || stage_own_overlap(h, lo, end)) {
        stage_count(&node_counts.reads_waited, 1);
        stage_own_data_written(h);
    } else {
        stage_count(&node_counts.reads_not_waited, 1);
    }
}

void stage_node_report(json_t *s)
{
    json_t *counts = json_pack("{s:I,s:I,s:f,s:I,s:I,s:I}", "calls", (json_int_t)node_counts.calls, "bytes",
                               (json_int_t)node_counts.bytes, "blocked_seconds", stage_seconds(node_counts.blocked_ns),
                               "reads_waited", (json_int_t)node_counts.reads_waited, "reads_not_waited",
                               (json_int_t)node_counts.reads_not_waited, "bypassed", (json_int_t)node_counts.bypassed);
    json_object_update(s, counts);
    json_decref(counts);
}
