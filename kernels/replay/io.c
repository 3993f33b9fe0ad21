/* The replay of one file: its calls through MPI-IO (file views for noncontiguous calls) or POSIX. */
#define _POSIX_C_SOURCE 200809L /* nanosleep under -std=c11 too */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/view.h"
#include "replay/io.h"

/* A contiguous piece of a call: file offset, bytes, and where it sits in the call's buffer. */
typedef void replay_piece_fn(replay_io_t *io, const replay_file_t *f, iotame_file_t *fh, uint64_t offset,
                             uint64_t len, size_t pos);

/* Calls fn on each contiguous piece of repetition `rep` of c in file order (a run whose stride is its length is
 * one piece). */
static void replay_io_pieces(replay_io_t *io, const replay_file_t *f, iotame_file_t *fh, const replay_call_t *c,
                             uint64_t rep, replay_piece_fn *fn)
{
    size_t pos = 0;
    uint64_t shift = rep * c->advance;
    for (size_t k = 0; k < c->nat; k++) {
        const replay_extent_t *e = &c->at[k];
        if (e->count == 1 || e->stride == e->length) {
            fn(io, f, fh, e->offset + shift, e->length * e->count, pos);
            pos += e->length * e->count;
            continue;
        }
        for (uint64_t i = 0; i < e->count; i++, pos += e->length)
            fn(io, f, fh, e->offset + i * e->stride + shift, e->length, pos);
    }
}

static void replay_io_fill(replay_io_t *io, const replay_file_t *f, iotame_file_t *fh, uint64_t offset, uint64_t len,
                           size_t pos)
{
    (void)f, (void)fh;
    iotame_data_fill(io->run, io->buf + pos, len, 0, offset);
}

static void replay_io_check(replay_io_t *io, const replay_file_t *f, iotame_file_t *fh, uint64_t offset,
                            uint64_t len, size_t pos)
{
    (void)fh;
    iotame_data_check(io->run, f->name, io->buf + pos, len, 0, offset);
}

/* A POSIX call of 0 bytes, made as the job made it (the common file calls make none for 0 bytes). */
static void replay_io_empty(const replay_file_t *f, iotame_file_t *fh, uint64_t offset, bool write)
{
    char byte = 0;
    ssize_t n = write ? pwrite(fh->fd, &byte, 0, (off_t)offset) : pread(fh->fd, &byte, 0, (off_t)offset);
    if (n != 0) iotame_fatal("%s of 0 bytes at offset %llu of %s: %s", write ? "pwrite" : "pread",
                             (unsigned long long)offset, f->path, n < 0 ? strerror(errno) : "moved bytes");
}

/* One independent transfer of a piece: MPI_File_write_at/read_at in the default view, or pwrite/pread. */
static void replay_io_piece_write(replay_io_t *io, const replay_file_t *f, iotame_file_t *fh, uint64_t offset,
                                  uint64_t len, size_t pos)
{
    if (fh->api == IOTAME_API_POSIX && len == 0) replay_io_empty(f, fh, offset, true);
    else if (fh->api == IOTAME_API_MPIIO)
        iotame_view_write(fh, (MPI_Offset)offset, io->buf + pos, (int)len, MPI_BYTE, false);
    else iotame_file_write_at(fh, offset, io->buf + pos, len, false);
}

static void replay_io_piece_read(replay_io_t *io, const replay_file_t *f, iotame_file_t *fh, uint64_t offset,
                                 uint64_t len, size_t pos)
{
    if (fh->api == IOTAME_API_POSIX && len == 0) replay_io_empty(f, fh, offset, false);
    else if (fh->api == IOTAME_API_MPIIO)
        iotame_view_read(fh, (MPI_Offset)offset, io->buf + pos, (int)len, MPI_BYTE, false);
    else iotame_file_read_at(fh, offset, io->buf + pos, len, false);
}

static void replay_io_reserve(replay_io_t *io, uint64_t bytes)
{
    if (bytes <= io->cap) return;
    free(io->buf);
    io->buf = iotame_alloc(bytes);
    io->cap = bytes;
}

/* The computation before a call (--compute): a sleep, excluded from the phase. */
static void replay_io_gap(replay_io_t *io, double seconds)
{
    if (!io->compute || seconds <= 0) return;
    double t = MPI_Wtime();
    struct timespec ts = {.tv_sec = (time_t)seconds, .tv_nsec = (long)((seconds - floor(seconds)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) continue;
    iotame_phase_exclude(io->run, MPI_Wtime() - t);
}

/* Before a transfer: the gap, and the data of a write. After: the check of a read, and the counts. */
static void replay_io_before(replay_io_t *io, const replay_file_t *f, const replay_call_t *c, uint64_t rep)
{
    replay_io_gap(io, c->gap);
    if (c->op == 'w' || c->op == 'W') replay_io_pieces(io, f, NULL, c, rep, replay_io_fill);
}

static void replay_io_after(replay_io_t *io, const replay_file_t *f, const replay_call_t *c, uint64_t rep)
{
    bool write = c->op == 'w' || c->op == 'W';
    if (!write) replay_io_pieces(io, f, NULL, c, rep, replay_io_check);
    *(write ? &io->write_bytes : &io->read_bytes) += c->bytes;
    io->calls++;
}

/* ---- file views (collective calls, and independent entries every proc makes alike) ---- */

/* The view in place on this rank: the default one, or the runs of a call relative to its first offset (disp), the
 * filetype's extent being `tile`. Whether it is the default is the same on every proc of the file. */
typedef struct {
    bool is_default;
    MPI_Offset disp;
    const replay_call_t *shape; /* NULL: a proc with no data (MPI_BYTE filetype) */
    uint64_t tile;
} replay_view_t;

static bool replay_io_contiguous(const replay_call_t *c)
{
    return c->nat == 1 && (c->at[0].count == 1 || c->at[0].stride == c->at[0].length);
}

/* Same runs relative to the first offset. */
static bool replay_io_same_shape(const replay_call_t *a, const replay_call_t *b)
{
    if (a->nat != b->nat) return false;
    for (size_t k = 0; k < a->nat; k++) {
        const replay_extent_t *x = &a->at[k], *y = &b->at[k];
        if (x->offset - a->at[0].offset != y->offset - b->at[0].offset || x->length != y->length ||
            x->count != y->count || (x->count > 1 && x->stride != y->stride))
            return false;
    }
    return true;
}

/* The filetype of c's runs relative to its first offset (hvector per run in a struct), resized to tile when tile is
 * not 0. */
static MPI_Datatype replay_io_filetype(const replay_call_t *c, uint64_t tile)
{
    int n = (int)c->nat;
    int *lens = calloc((size_t)n, sizeof *lens);
    MPI_Aint *disps = calloc((size_t)n, sizeof *disps);
    MPI_Datatype *types = calloc((size_t)n, sizeof *types), st, out;
    for (int k = 0; k < n; k++) {
        const replay_extent_t *e = &c->at[k];
        MPI_Type_create_hvector((int)e->count, (int)e->length, (MPI_Aint)e->stride, MPI_BYTE, &types[k]);
        lens[k] = 1;
        disps[k] = (MPI_Aint)(e->offset - c->at[0].offset);
    }
    MPI_Type_create_struct(n, lens, disps, types, &st);
    for (int k = 0; k < n; k++) MPI_Type_free(&types[k]);
    if (tile) {
        MPI_Type_create_resized(st, 0, (MPI_Aint)tile, &out);
        MPI_Type_free(&st);
    } else {
        out = st;
    }
    iotame_view_commit(&out);
    free(lens);
    free(disps);
    free(types);
    return out;
}

/* Sets the view of c's runs at disp (a proc without data: MPI_BYTE at 0) and records it. */
static void replay_io_set_view(iotame_file_t *fh, replay_view_t *v, const replay_call_t *c, MPI_Offset disp,
                               uint64_t tile)
{
    bool data = c && c->bytes > 0;
    MPI_Datatype ft = data ? replay_io_filetype(c, tile == replay_call_span(c) ? 0 : tile) : MPI_BYTE;
    iotame_view_set(fh, data ? disp : 0, MPI_BYTE, ft);
    if (data) MPI_Type_free(&ft);
    *v = (replay_view_t){.is_default = false, .disp = data ? disp : 0, .shape = data ? c : NULL, .tile = tile};
}

static void replay_io_default_view(iotame_file_t *fh, replay_view_t *v)
{
    iotame_view_set(fh, 0, MPI_BYTE, MPI_BYTE);
    *v = (replay_view_t){.is_default = true};
}

/* Where the view v puts a call of c's runs starting at `first` in etypes, or -1 when it cannot (a new view is
 * needed): v has c's runs, the call starts on one of its tiles, and when `repeat` calls follow at c's advance the
 * tiles are that far apart. */
static MPI_Offset replay_io_view_offset(const replay_view_t *v, const replay_call_t *c, MPI_Offset first,
                                       uint64_t repeat)
{
    if (c->bytes == 0) return 0;
    if (v->is_default || !v->shape || !replay_io_same_shape(v->shape, c)) return -1;
    if (repeat > 1 && v->tile != c->advance) return -1;
    if (first < v->disp || (uint64_t)(first - v->disp) % v->tile != 0) return -1;
    return (MPI_Offset)((uint64_t)(first - v->disp) / v->tile * c->bytes);
}

/* True when an independent call of this rank comes after entry j before the next collective transfer. */
static bool replay_io_independent_follows(const replay_file_t *f, size_t j)
{
    for (size_t k = j + 1; k < f->ncalls; k++) {
        const replay_call_t *c = &f->calls[k];
        if (c->repeat == 0 || !replay_op_data(c->op)) continue;
        if (replay_op_collective(c->op)) return false;
        return true;
    }
    return false;
}

static void replay_io_transfer(replay_io_t *io, iotame_file_t *fh, const replay_call_t *c, MPI_Offset at)
{
    if (c->op == 'W') iotame_view_write(fh, at, io->buf, (int)c->bytes, MPI_BYTE, true);
    else iotame_view_read(fh, at, io->buf, (int)c->bytes, MPI_BYTE, true);
}

/* A collective entry ('W' or 'R') of an MPIIO file. One MPI_Allreduce on comm tells every proc the same: whether
 * some proc needs a view (noncontiguous data), whether some needs one per call (repetitions closer than their span),
 * whether some cannot use the view in place, whether some makes independent calls next (they need the default
 * view back). */
static void replay_io_collective(replay_io_t *io, const replay_file_t *f, size_t j, iotame_file_t *fh,
                                 replay_view_t *view, MPI_Comm comm)
{
    const replay_call_t *c = &f->calls[j];
    bool data = c->bytes > 0;
    uint64_t span = data ? replay_call_span(c) : 0;
    uint64_t tile = c->repeat > 1 ? c->advance : span;
    MPI_Offset first = data ? (MPI_Offset)c->at[0].offset : 0;
    int need[4] = {data && !replay_io_contiguous(c), data && c->repeat > 1 && c->advance < span,
                   replay_io_view_offset(view, c, first, c->repeat) < 0, replay_io_independent_follows(f, j)};
    MPI_Allreduce(MPI_IN_PLACE, need, 4, MPI_INT, MPI_MAX, comm);
    if (!need[0]) { /* contiguous everywhere: absolute offsets in the default view */
        if (!view->is_default) replay_io_default_view(fh, view);
        for (uint64_t i = 0; i < c->repeat; i++) {
            replay_io_before(io, f, c, i);
            replay_io_transfer(io, fh, c, data ? (MPI_Offset)(c->at[0].offset + i * c->advance) : 0);
            replay_io_after(io, f, c, i);
        }
    } else if (!need[1]) { /* one view for the entry: call i at i x its bytes in etypes */
        MPI_Offset base = 0;
        if (need[2]) replay_io_set_view(fh, view, c, first, tile);
        else base = replay_io_view_offset(view, c, first, c->repeat);
        for (uint64_t i = 0; i < c->repeat; i++) {
            replay_io_before(io, f, c, i);
            replay_io_transfer(io, fh, c, base + (MPI_Offset)(i * c->bytes));
            replay_io_after(io, f, c, i);
        }
    } else { /* repetitions closer than their span: a view per call, but for a call the view in place fits (one
              * MPI_Allreduce a call decides) */
        for (uint64_t i = 0; i < c->repeat; i++) {
            replay_io_before(io, f, c, i);
            MPI_Offset at_i = data ? first + (MPI_Offset)(i * c->advance) : 0;
            MPI_Offset at = replay_io_view_offset(view, c, at_i, 1);
            int fresh = at < 0;
            MPI_Allreduce(MPI_IN_PLACE, &fresh, 1, MPI_INT, MPI_MAX, comm);
            if (fresh) {
                replay_io_set_view(fh, view, c, at_i, span);
                at = 0;
            }
            replay_io_transfer(io, fh, c, at);
            replay_io_after(io, f, c, i);
        }
    }
    if (need[3] && !view->is_default) replay_io_default_view(fh, view);
}

/* ---- the file ---- */

/* An independent entry. Marked viewed (every proc of the file sets the view of its own runs here, as the job did
 * before its noncontiguous independent calls): call i at i x its bytes in etypes; otherwise one call per contiguous
 * piece in the default view, set back first where a viewed entry left its view (on every proc alike). */
static void replay_io_independent(replay_io_t *io, const replay_file_t *f, iotame_file_t *fh, const replay_call_t *c,
                                  replay_view_t *view)
{
    if (c->viewed) replay_io_set_view(fh, view, c, (MPI_Offset)c->at[0].offset,
                                      c->repeat > 1 ? c->advance : replay_call_span(c));
    else if (!view->is_default) replay_io_default_view(fh, view);
    for (uint64_t i = 0; i < c->repeat; i++) {
        replay_io_before(io, f, c, i);
        if (!c->viewed)
            replay_io_pieces(io, f, fh, c, i, c->op == 'w' ? replay_io_piece_write : replay_io_piece_read);
        else if (c->op == 'w')
            iotame_view_write(fh, (MPI_Offset)(i * c->bytes), io->buf, (int)c->bytes, MPI_BYTE, false);
        else iotame_view_read(fh, (MPI_Offset)(i * c->bytes), io->buf, (int)c->bytes, MPI_BYTE, false);
        replay_io_after(io, f, c, i);
    }
}

static void replay_io_open(const replay_file_t *f, MPI_Comm comm, iotame_file_t *fh, replay_view_t *view)
{
    if (iotame_file_open(fh, f->api, comm, f->path, IOTAME_FILE_READ | IOTAME_FILE_WRITE | IOTAME_FILE_CREATE,
                         MPI_INFO_NULL) != 0)
        iotame_fatal("cannot open %s for the replay", f->path);
    *view = (replay_view_t){.is_default = true};
}

void replay_io_file(replay_io_t *io, const replay_file_t *f, MPI_Comm comm)
{
    iotame_file_t fh;
    replay_view_t view;
    replay_io_open(f, comm, &fh, &view);
    for (size_t j = 0; j < f->ncalls; j++) {
        const replay_call_t *c = &f->calls[j];
        if (c->op == 'o') {
            for (uint64_t i = 0; i < c->repeat; i++) {
                replay_io_gap(io, c->gap);
                iotame_file_close(&fh);
                replay_io_open(f, comm, &fh, &view);
                io->calls++;
            }
            continue;
        }
        if (c->op == 's') {
            for (uint64_t i = 0; i < c->repeat; i++) {
                replay_io_gap(io, c->gap);
                iotame_file_sync(&fh);
                io->calls++;
            }
            continue;
        }
        if (c->repeat == 0) continue;
        replay_io_reserve(io, c->bytes);
        if (replay_op_collective(c->op)) replay_io_collective(io, f, j, &fh, &view, comm);
        else replay_io_independent(io, f, &fh, c, &view);
    }
    iotame_file_close(&fh);
}

/* ---- setup and verification (untimed, POSIX) ---- */

/* The piece at offset in the mapping of the file (replay_io_verify); a file shorter than what was written is a
 * failed write the library did not report, which no kernel expects. */
static void replay_io_verify_piece(replay_io_t *io, const replay_file_t *f, iotame_file_t *fh, uint64_t offset,
                                   uint64_t len, size_t pos)
{
    (void)fh, (void)pos;
    if (len == 0) return;   /* a write of 0 bytes leaves nothing to check */
    if (offset + len > io->map_size)
        iotame_fatal("%s is %llu bytes, short of the piece written at %llu (%llu bytes)", f->path,
                     (unsigned long long)io->map_size, (unsigned long long)offset, (unsigned long long)len);
    iotame_data_check(io->run, f->name, io->map + offset, len, 0, offset);
}

/* Reads back through a read-only mapping: a mapping makes no read calls, so the check adds nothing to what a
 * tracer of the replay counts (the runtime's statistics, Darshan), and the replay's counts stay the job's. */
void replay_io_verify(replay_io_t *io, const replay_file_t *f)
{
    bool writes = false;
    for (size_t j = 0; j < f->ncalls; j++) writes |= (f->calls[j].op == 'w' || f->calls[j].op == 'W') &&
                                                     f->calls[j].repeat > 0 && f->calls[j].bytes > 0;
    if (!writes) return;
    int fd = open(f->path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) iotame_fatal("cannot open %s to verify it: %s", f->path, strerror(errno));
    io->map_size = (uint64_t)st.st_size;
    void *map = io->map_size ? mmap(NULL, io->map_size, PROT_READ, MAP_SHARED, fd, 0) : NULL;
    if (map == MAP_FAILED) iotame_fatal("cannot map %s to verify it: %s", f->path, strerror(errno));
    close(fd);
    io->map = map;
    for (size_t j = 0; j < f->ncalls; j++) {
        const replay_call_t *c = &f->calls[j];
        if (c->op != 'w' && c->op != 'W') continue;
        for (uint64_t i = 0; i < c->repeat; i++) replay_io_pieces(io, f, NULL, c, i, replay_io_verify_piece);
    }
    if (map) munmap(map, io->map_size);
    io->map = NULL;
}

/* Creates path (setup) with `size` bytes, zeros, for the preload of every rank to map. */
void replay_io_create(replay_io_t *io, const char *path, uint64_t size)
{
    (void)io;
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0) iotame_fatal("cannot create %s to preload it: %s", path, strerror(errno));
    if (ftruncate(fd, (off_t)size) != 0)
        iotame_fatal("cannot extend %s to %llu bytes to preload it: %s", path, (unsigned long long)size,
                     strerror(errno));
    close(fd);
}

/* Written through a mapping for the reason replay_io_verify reads through one: the statistics of the replay (and a
 * Darshan log of it) count the job's calls only. The file is already that long (replay_io_create): ranks preload
 * their shares at once, and none may change its size under another's mapping. */
void replay_io_preload(replay_io_t *io, const char *path, uint64_t offset, uint64_t length)
{
    int fd = open(path, O_RDWR);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) iotame_fatal("cannot open %s to preload it: %s", path, strerror(errno));
    uint64_t end = offset + length, page = (uint64_t)sysconf(_SC_PAGESIZE), start = offset / page * page;
    if ((uint64_t)st.st_size < end)
        iotame_fatal("%s has %lld bytes, the preload needs %llu", path, (long long)st.st_size,
                     (unsigned long long)end);
    unsigned char *map = mmap(NULL, end - start, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)start);
    if (map == MAP_FAILED) iotame_fatal("cannot map %s to preload it: %s", path, strerror(errno));
    iotame_pattern_fill(map + (offset - start), length, io->run->seed, 0, offset);
    if (msync(map, end - start, MS_SYNC) != 0) iotame_fatal("cannot write %s back: %s", path, strerror(errno));
    munmap(map, end - start);
    close(fd);
}
