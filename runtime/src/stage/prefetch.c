/* Prefetch: the node's flusher reads ahead of a process's sequential independent reads into the area's read-ahead
 * buffers (two per handle at most), and a read that falls into what was read ahead is served from them. Independent
 * blocking reads only: a collective read served on some ranks only would leave the others waiting in the library's
 * collective. */
#include "handle.h"

/* this process's counters, updated with stage_count from any thread */
static struct {
    uint64_t hits, misses, bytes;
} prefetch_counts;

int stage_prefetch_held(const stage_handle_t *h) { return h->ahead.slot[0] >= 0 || h->ahead.slot[1] >= 0; }

void stage_prefetch_release(stage_handle_t *h)
{
    stage_area_t *area = stage_process.area;
    stage_lock(area);
    for (int k = 0; k < 2; k++) {
        if (h->ahead.slot[k] < 0) continue;
        stage_prefetch_t *p = &area->prefetch[h->ahead.slot[k]];
        if (p->state == PREFETCH_ASKED) area->asked--; /* not read yet: the flusher skips it */
        p->state = PREFETCH_FREE;
        h->ahead.slot[k] = -1;
    }
    stage_unlock(area);
    h->ahead.next_read = -1;
}

/* Asks the flusher to read [off, off + prefetch_bytes) into one of h's buffers not covering the read at `keep`.
 * The lock is held. */
static void stage_prefetch_ask(stage_handle_t *h, int64_t off, int64_t keep)
{
    stage_area_t *area = stage_process.area;
    for (int k = 0; k < 2; k++) {
        int s = h->ahead.slot[k];
        if (s >= 0) {
            stage_prefetch_t *p = &area->prefetch[s];
            if (p->state == PREFETCH_ASKED || (keep >= p->off && keep < p->off + (int64_t)area->prefetch_bytes))
                continue;
        } else {
            for (int i = 0; i < STAGE_PREFETCH_SLOTS && s < 0; i++)
                if (area->prefetch[i].state == PREFETCH_FREE) s = i;
            if (s < 0) return; /* every buffer of the node is in use */
            h->ahead.slot[k] = s;
        }
        area->prefetch[s] = (stage_prefetch_t){PREFETCH_ASKED, h->file, stage_process.node_rank, 0, off,
                                               (int64_t)area->prefetch_bytes, area->file[h->file].generation};
        area->asked++; /* stage_unlock wakes the flusher */
        return;
    }
}

/* Serves an independent read of one contiguous extent from h's read-ahead buffers when they hold it, and keeps
 * the read-ahead going for a sequential reader. Returns 1 when served. */
int stage_prefetch_read(stage_handle_t *h, const iotame_io_t *io, int *rc)
{
    stage_area_t *area = stage_process.area;
    const iotame_runs_t *runs = stage_call_runs();
    int64_t nbytes = 0;
    MPI_Offset pos = 0;
    if (io->kind != IOTAME_IO_INDEPENDENT || !h->view.ok || stage_map_call(h, io, &nbytes, &pos) || runs->n != 1 ||
        runs->v[0].count != 1)
        return 0;
    const int64_t off = runs->v[0].off, len = runs->v[0].len;
    int served = 0, sequential = off == h->ahead.next_read;
    h->ahead.next_read = off + len;
    stage_lock(area);
    for (int k = 0; k < 2 && !served; k++) {
        if (h->ahead.slot[k] < 0) continue;
        stage_prefetch_t *p = &area->prefetch[h->ahead.slot[k]];
        if (off < p->off || off + len > p->off + (int64_t)area->prefetch_bytes) continue;
        if (p->generation != area->file[h->file].generation) continue; /* stale whatever it holds: not waited for */
        while (p->state == PREFETCH_ASKED) stage_wait_progress(area); /* the flusher reads it: no second read */
        if (p->state != PREFETCH_READY || p->generation != area->file[h->file].generation ||
            off + len > p->off + p->len)
            continue; /* stale (written since), or past the end of the file when it was read */
        stage_unlock(area);
        const char *from = stage_prefetch_buffer(area, h->ahead.slot[k]) + (off - p->off);
        MPI_Count at = 0;
        served =
            PMPI_Unpack_c(from, (MPI_Count)len, &at, io->buf, io->count, io->datatype, MPI_COMM_SELF) == MPI_SUCCESS;
        stage_lock(area);
    }
    if (sequential) {
        /* keep one buffer ahead of the reader: from the end of what its buffers already cover */
        int64_t ahead = off + len;
        for (int pass = 0; pass < 2; pass++)
            for (int k = 0; k < 2; k++) {
                const stage_prefetch_t *p = h->ahead.slot[k] >= 0 ? &area->prefetch[h->ahead.slot[k]] : NULL;
                if (p && p->state != PREFETCH_FREE && p->off <= ahead && ahead < p->off + (int64_t)area->prefetch_bytes)
                    ahead = p->off + (int64_t)area->prefetch_bytes;
            }
        if (ahead - (off + len) < (int64_t)area->prefetch_bytes) stage_prefetch_ask(h, ahead, off);
    }
    stage_unlock(area);
    if (!served) {
        stage_count(&prefetch_counts.misses, 1);
        return 0;
    }
    stage_count(&prefetch_counts.hits, 1);
    stage_count(&prefetch_counts.bytes, (uint64_t)len);
    stage_complete(io, h, pos, nbytes, nbytes);
    *rc = MPI_SUCCESS;
    return 1;
}

void stage_prefetch_report(json_t *s)
{
    json_t *counts = json_pack("{s:I,s:I,s:I}", "prefetch_hits", (json_int_t)prefetch_counts.hits, "prefetch_misses",
                               (json_int_t)prefetch_counts.misses, "prefetch_bytes", (json_int_t)prefetch_counts.bytes);
    json_object_update(s, counts);
    json_decref(counts);
}
