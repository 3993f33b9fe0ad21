/* Write-through: a call that staging cannot make pay is written within the call with the handle's own descriptor of
 * the file (through the POSIX layer: throttle and emulate see its requests), after nothing of this process's staged
 * data it meets (docs/design/staging.md). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "handle.h"

/* this process's counters, updated with stage_count from any thread */
static struct {
    uint64_t full, absorbed, bytes;
} through_counts;

/* The path to open the file by on first use, and the profile's per-call costs of a file system that absorbs writes
 * (a page cache: absorbs NULL when there is no such profile). */
void stage_through_open(stage_handle_t *h, const char *real, const iotame_profile_t *absorbs)
{
    h->through.fd = -1;
    h->through.path = strdup(real);
    if (!absorbs || absorbs->writeback_bytes <= 0) return;
    h->through.absorb_call_s = absorbs->syscall_seconds;
    h->through.copy_rate = absorbs->copy_rate;
    h->through.piece_s = absorbs->piece_seconds;
}

void stage_through_close(stage_handle_t *h)
{
    if (h->through.fd >= 0) close(h->through.fd);
    free(h->through.path);
}

/* Whether the handle has its own descriptor of the file for writing through (opened on first use; the file found by
 * its path must still be the one staged for). */
static int stage_through_fd(stage_handle_t *h)
{
    stage_through_t *t = &h->through;
    if (t->fd >= 0 || !t->path) return t->fd >= 0;
    struct stat st;
    const stage_file_t *f = &stage_process.area->file[h->file];
    t->fd = open(t->path, O_WRONLY | O_CLOEXEC);
    if (t->fd >= 0 && (fstat(t->fd, &st) != 0 || (uint64_t)st.st_dev != f->dev || (uint64_t)st.st_ino != f->ino)) {
        close(t->fd);
        t->fd = -1;
        free(t->path); /* not tried again: the handle stages every call */
        t->path = NULL;
    }
    return t->fd >= 0;
}

/* Writes the call's pieces from `data` (its bytes in run order). Returns 0 or an errno; *done: the bytes written
 * before an error. */
static int stage_through_pwrite(stage_handle_t *h, const char *data, int64_t *done)
{
    const iotame_runs_t *runs = stage_call_runs();
    int interrupted = 0;
    *done = 0;
    for (size_t i = 0; i < runs->n; i++)
        for (int64_t j = 0; j < runs->v[i].count; j++) {
            const int64_t off = runs->v[i].off + j * runs->v[i].stride;
            for (int64_t b = 0; b < runs->v[i].len;) {
                ssize_t w = pwrite(h->through.fd, data + *done, (size_t)(runs->v[i].len - b), (off_t)(off + b));
                if (w < 0 && errno == EINTR && ++interrupted < STAGE_EINTR_RETRIES) continue;
                if (w <= 0) return w < 0 ? errno : EIO;
                interrupted = 0;
                b += w;
                *done += w;
            }
        }
    return 0;
}

/* Why the call is better written through than staged, or NULL:
 *  - "full": staged, it would fill the ring past the flush threshold (the flusher is then behind the writers) and
 *    its pieces are large enough to be written as they are (small ones wait for room: merged, they become large
 *    writes);
 *  - "absorbed": the file system absorbs writes (its profile says so: a page cache) and the call's write calls cost
 *    no more than staging's copy and bookkeeping: pieces of some KiB or more (the copy into the page cache is paid
 *    either way, by the flusher's merged writes after staging; their calls are shared by many staged calls).
 * Never when it meets this process's staged data not yet written (the two must reach the file in order), nor when
 * the file cannot be opened again by its path. */
const char *stage_through_reason(stage_handle_t *h, int64_t nbytes, uint64_t pieces, int64_t lo, int64_t end)
{
    const stage_through_t *t = &h->through;
    const char *why = NULL;
    if (!stage_room_for(stage_process.area, stage_record_bytes(stage_call_runs()->n, (uint64_t)nbytes),
                        stage_process.flush.threshold) &&
        (uint64_t)nbytes >= pieces * STAGE_SMALL_PIECE)
        why = "full";
    else if (t->absorb_call_s > 0 &&
             (double)pieces * t->absorb_call_s <= (double)nbytes / t->copy_rate + (double)pieces * t->piece_s)
        why = "absorbed";
    return why && !stage_own_overlap(h, lo, end) && stage_through_fd(h) ? why : NULL;
}

int stage_through_write(stage_handle_t *h, const char *why, const char *data, int64_t *done)
{
    int err = stage_through_pwrite(h, data, done);
    stage_count(why[0] == 'f' ? &through_counts.full : &through_counts.absorbed, 1);
    stage_count(&through_counts.bytes, (uint64_t)*done);
    if (!err) return MPI_SUCCESS;
    const int code = stage_error_class(err);
    PMPI_File_call_errhandler(h->fh, code);
    return code;
}

void stage_through_report(json_t *s)
{
    json_t *counts = json_pack("{s:I,s:I,s:I,s:I}", "written_through",
                               (json_int_t)(through_counts.full + through_counts.absorbed), "written_through_full",
                               (json_int_t)through_counts.full, "written_through_absorbed",
                               (json_int_t)through_counts.absorbed, "written_through_bytes",
                               (json_int_t)through_counts.bytes);
    json_object_update(s, counts);
    json_decref(counts);
}
