/* sigprobe: not an application benchmark. The strategies part of a machine profile (`iotame calibrate`,
 * docs/calibrate.md, issue 48): a design of synthetic collective call signatures measured in one job, each a write
 * phase and a read phase of `calls` consecutive MPI_File_write_all / MPI_File_read_all on a fresh shared file.
 *
 * A signature: piece size s, k = max(1, b / s) pieces per process per call (b: the size's own `s@b` in --sizes, else
 * --pieces-bytes), a layout and a number of calls C. Interleaved: piece j of rank r at (j*P + r)*s of the call's region; contiguous: rank r's k pieces follow
 * one another at r*k*s. The regions of the calls follow one another (call c at c*P*k*s), so each file view is one
 * type tiled by the calls through the individual file pointer. A row says what the runtime sees of a call: touching
 * pieces merge into one (contiguous: one piece of k*s bytes per process; interleaved with one process or one
 * piece: the same), and the pieces count as interleaved when the processes' ranges overlap. Signatures that are
 * the same call after that are measured once.
 *
 * Per repeat and signature (repeats outermost, so drift spreads over all signatures alike):
 *   write: open CREATE|WRONLY (timed: the slowest rank), set the view, barrier, C calls (timed from the barrier to
 *          the last call's return, the slowest rank, pattern fill excluded), sync, close; every rank then evicts
 *          the file's pages (posix_fadvise DONTNEED: this file only, never the machine's whole page cache);
 *   read:  open RDONLY (timed), the same view, barrier, C calls (timed alike, checks excluded), close, delete.
 * A row's "seconds" is the phase's time / C for each repeat run; "open_seconds" the median open time.
 *
 * Budget (--seconds B > 0; issue 48: one slow strategy ran calibrate past its timeout). The first repeat of every
 * signature always runs. The further repeats have what the first pass left of B, and at least a third of B: a
 * strategy slow at its smallest pieces would otherwise leave every signature one sample, its quick large-piece ones
 * too, and the fit's anchors rest where one sample landed. From it each signature gets a share T, max-min fair: the
 * largest T with sum_i min(T, (R - 1) t_i) within it (t_i its first repeat's time, R the repeats), so a share that a
 * fast signature does not need goes to the slow ones instead of idling (an even share would leave a slow design's
 * slowest signatures one repeat while most of it went unused). A further repeat runs while the signature's repeats
 * so far plus one more at its mean stay within T, and no repeat pass starts once the repeats took it all. Times are the
 * slowest rank's (max-reduced), so every rank takes the same branches: a rank that skipped a collective the others
 * entered would hang the job.
 *
 * Data: the 64-bit word at file offset o (o a multiple of 8) is (o + 1) * 0x9e3779b97f4a7c15 ^ salt, little
 * endian, salt from the signature and the repeat; unaligned head and tail bytes are those words' bytes. Every read
 * byte is checked, which is what "verified" says; "mismatches" counts the bad 8-byte words.
 */
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/view.h"
#include "kernels.h"

#define SIGPROBE_MAX_LIST 16
#define SIGPROBE_MAX_SIGS (SIGPROBE_MAX_LIST * SIGPROBE_MAX_LIST * 2)
#define SIGPROBE_MAX_CALL ((int64_t)1 << 30) /* bytes per process and call */
#define SIGPROBE_GOLDEN 0x9e3779b97f4a7c15ULL

enum { SIGPROBE_INTERLEAVED, SIGPROBE_CONTIGUOUS, SIGPROBE_NLAYOUTS };
static const char *const sigprobe_layout_names[] = {"interleaved", "contiguous"};
enum { SIGPROBE_WRITE, SIGPROBE_READ, SIGPROBE_NOPS };
static const char *const sigprobe_op_names[] = {"write", "read"};

typedef struct {
    int64_t size;   /* the requested piece size */
    int layout;
    int64_t k;      /* pieces per process per call, as laid out */
    int64_t calls;
    int64_t piece, pieces; /* as the runtime sees them: touching pieces merged */
    bool interleaved;      /* the processes' ranges overlap */
    double *seconds[SIGPROBE_NOPS], *open[SIGPROBE_NOPS]; /* per repeat */
    int64_t done;  /* repeats run: the first `done` entries of seconds[] and open[] */
    double spent;  /* their time, the slowest rank's, write to delete */
    double first;  /* the first repeat's */
} sigprobe_sig_t;

typedef struct {
    const char *dir, *sizes_arg, *calls_arg, *layouts_arg, *ops_arg;
    int64_t pieces_bytes, repeats;
    double budget; /* --seconds: 0 unbounded */
    int64_t sizes[SIGPROBE_MAX_LIST], calls[SIGPROBE_MAX_LIST];
    int64_t call_bytes[SIGPROBE_MAX_LIST]; /* per size: bytes per process and call (0: --pieces-bytes) */
    int nsizes, ncalls;
    bool layouts[SIGPROBE_NLAYOUTS], ops[SIGPROBE_NOPS];
    sigprobe_sig_t sigs[SIGPROBE_MAX_SIGS];
    int nsigs;
    int nodes, ppn;
    uint64_t mismatches;
    char path[4096];
} sigprobe_t;

/* A comma list of sizes (sizes: each SIZE or SIZE@BYTES, BYTES per process and call into at[], else 0) or
 * integers >= 1 (calls) into out[]; a usage error naming the option. */
static int sigprobe_numbers(const char *option, const char *text, bool sizes, int64_t *out, int64_t *at, int *n)
{
    const char *s = text;
    *n = 0;
    while (true) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        char item[64];
        int64_t v = 0, b = 0;
        if (len == 0 || len >= sizeof item) break;
        memcpy(item, s, len);
        item[len] = '\0';
        char *sep = sizes ? strchr(item, '@') : NULL;
        if (sep) *sep = '\0';
        if ((sizes ? iotame_parse_size(item, &v) : iotame_parse_int(item, &v)) != 0 || v < 1) break;
        if (sep && (iotame_parse_size(sep + 1, &b) != 0 || b < 1)) break;
        if (v > (sizes ? SIGPROBE_MAX_CALL : 100000) || b > SIGPROBE_MAX_CALL)
            return iotame_usage_error("option --%s: %.*s is too large (at most %s)", option, (int)len, s,
                                      sizes ? "1g" : "100000");
        if (*n == SIGPROBE_MAX_LIST)
            return iotame_usage_error("option --%s: at most %d values", option, SIGPROBE_MAX_LIST);
        if (at) at[*n] = b;
        out[(*n)++] = v;
        if (!end) return 0;
        s = end + 1;
    }
    return iotame_usage_error("option --%s: expected a comma-separated list of %s, got \"%s\"", option,
                              sizes ? IOTAME_SIZE_SYNTAX " (each optionally @bytes per process and call)"
                                    : "integers >= 1", text);
}

/* A comma list of names from names[0..n) into chosen[]; a usage error naming the option. */
static int sigprobe_names(const char *option, const char *text, const char *const *names, int n, bool *chosen)
{
    const char *s = text;
    for (int i = 0; i < n; i++) chosen[i] = false;
    while (true) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        int found = -1;
        for (int i = 0; i < n; i++)
            if (strlen(names[i]) == len && strncmp(names[i], s, len) == 0) found = i;
        if (found < 0) break;
        chosen[found] = true;
        if (!end) return 0;
        s = end + 1;
    }
    return iotame_usage_error("option --%s: expected a comma-separated list of %s%s%s, got \"%s\"", option, names[0],
                              n > 1 ? " and " : "", n > 1 ? names[1] : "", text);
}

/* The distinct signatures of the design, in the order sizes x layouts x calls. */
static void sigprobe_design(sigprobe_t *p, int nprocs)
{
    p->nsigs = 0;
    for (int i = 0; i < p->nsizes; i++)
        for (int layout = 0; layout < SIGPROBE_NLAYOUTS; layout++) {
            if (!p->layouts[layout]) continue;
            const int64_t s = p->sizes[i], b = p->call_bytes[i] > 0 ? p->call_bytes[i] : p->pieces_bytes;
            const int64_t k = b / s > 1 ? b / s : 1;
            bool apart = layout == SIGPROBE_INTERLEAVED && nprocs > 1 && k > 1; /* pieces that do not touch */
            for (int c = 0; c < p->ncalls; c++) {
                sigprobe_sig_t g = {.size = s, .layout = layout, .k = k, .calls = p->calls[c],
                                    .piece = apart ? s : k * s, .pieces = apart ? k : 1, .interleaved = apart};
                bool seen = false;
                for (int j = 0; j < p->nsigs; j++) {
                    const sigprobe_sig_t *h = &p->sigs[j];
                    seen |= h->piece == g.piece && h->pieces == g.pieces && h->interleaved == g.interleaved &&
                            h->calls == g.calls;
                }
                if (!seen) p->sigs[p->nsigs++] = g;
            }
        }
}

static int sigprobe_parse(iotame_run_t *run, int argc, char **argv, sigprobe_t *p)
{
    const iotame_option_t opts[] = {
        {.name = "dir", .type = IOTAME_OPT_STRING, .value = &p->dir, .def = ".",
         .help = "directory of the probe's file (one at a time, removed after each signature)"},
        {.name = "pieces-bytes", .type = IOTAME_OPT_SIZE, .value = &p->pieces_bytes, .def = "1m", .min = "1",
         .max = "1g", .help = "bytes per process and call: k = max(1, this / piece size) pieces"},
        {.name = "sizes", .type = IOTAME_OPT_STRING, .value = &p->sizes_arg, .def = "64,1024,16384,262144,4194304",
         .help = "piece sizes, comma-separated; SIZE@BYTES: that size with BYTES per process and call"},
        {.name = "calls", .type = IOTAME_OPT_STRING, .value = &p->calls_arg, .def = "1,8",
         .help = "calls per phase, comma-separated"},
        {.name = "layouts", .type = IOTAME_OPT_STRING, .value = &p->layouts_arg, .def = "interleaved,contiguous",
         .help = "interleaved (piece j of rank r at (j*P + r)*s) and/or contiguous (rank r's pieces in one region)"},
        {.name = "repeats", .type = IOTAME_OPT_INT, .value = &p->repeats, .def = "3", .min = "1", .max = "1000",
         .help = "repeats of each signature"},
        {.name = "seconds", .type = IOTAME_OPT_DOUBLE, .value = &p->budget, .def = "0", .min = "0", .max = "86400",
         .help = "time budget: repeats after each signature's first run only within its share of it (0: all)"},
        {.name = "ops", .type = IOTAME_OPT_STRING, .value = &p->ops_arg, .def = "write,read",
         .help = "phases reported: write and/or read (the file is always written)"},
        {0}};
    int rc = iotame_options_parse(run, opts, argc, argv);
    if (rc) return rc;
    if ((rc = sigprobe_numbers("sizes", p->sizes_arg, true, p->sizes, p->call_bytes, &p->nsizes))) return rc;
    if ((rc = sigprobe_numbers("calls", p->calls_arg, false, p->calls, NULL, &p->ncalls))) return rc;
    if ((rc = sigprobe_names("layouts", p->layouts_arg, sigprobe_layout_names, SIGPROBE_NLAYOUTS, p->layouts)))
        return rc;
    if ((rc = sigprobe_names("ops", p->ops_arg, sigprobe_op_names, SIGPROBE_NOPS, p->ops))) return rc;
    for (int i = 0; i < p->nsizes; i++)
        if (p->sizes[i] > INT32_MAX / run->nprocs || p->call_bytes[i] > INT32_MAX / run->nprocs)
            return iotame_usage_error("option --sizes: %lld bytes times %d processes overflows a datatype",
                                      (long long)(p->sizes[i] > p->call_bytes[i] ? p->sizes[i] : p->call_bytes[i]),
                                      run->nprocs);
    if (p->pieces_bytes > INT32_MAX / run->nprocs)
        return iotame_usage_error("option --pieces-bytes: %lld bytes times %d processes overflows a datatype",
                                  (long long)p->pieces_bytes, run->nprocs);
    return 0;
}

/* Nodes (MPI_COMM_TYPE_SHARED groups) and the most processes on one. */
static void sigprobe_nodes(iotame_run_t *run, sigprobe_t *p)
{
    MPI_Comm node;
    int size, rank;
    MPI_Comm_split_type(run->comm, MPI_COMM_TYPE_SHARED, run->rank, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &size);
    MPI_Comm_rank(node, &rank);
    MPI_Comm_free(&node);
    int leader = rank == 0;
    MPI_Allreduce(&leader, &p->nodes, 1, MPI_INT, MPI_SUM, run->comm);
    MPI_Allreduce(&size, &p->ppn, 1, MPI_INT, MPI_MAX, run->comm);
}

/* Whether the library's writes sieve small pieces: the rule of the runtime's iotame_coll_write_sieving
 * (runtime/src/collective/env.c): ROMIO (MPICH, or Open MPI with OMPI_MCA_io naming romio), not OMPIO. */
static int sigprobe_sieves(const char *version)
{
    const char *io = getenv("OMPI_MCA_io");
    return !strstr(version, "Open MPI") || (io && (io[0] == '^' ? strstr(io, "ompio") != NULL
                                                                 : strstr(io, "romio") != NULL));
}

static uint64_t sigprobe_word(uint64_t word_index, uint64_t salt)
{
    return (word_index + 1) * SIGPROBE_GOLDEN ^ salt;
}

static uint8_t sigprobe_byte(uint64_t off, uint64_t salt)
{
    return (uint8_t)(sigprobe_word(off / 8, salt) >> (8 * (off % 8)));
}

/* The pattern of file bytes [off, off + len) into buf. */
static void sigprobe_fill(unsigned char *buf, size_t len, uint64_t off, uint64_t salt)
{
    size_t i = 0;
    for (; i < len && (off + i) % 8; i++) buf[i] = sigprobe_byte(off + i, salt);
    for (; i + 8 <= len; i += 8) {
        uint64_t w = sigprobe_word((off + i) / 8, salt);
        for (int b = 0; b < 8; b++) buf[i + b] = (unsigned char)(w >> (8 * b));
    }
    for (; i < len; i++) buf[i] = sigprobe_byte(off + i, salt);
}

/* Counts the bad words of buf against file bytes [off, off + len); records the first bad byte. */
static uint64_t sigprobe_check(iotame_run_t *run, const char *path, const unsigned char *buf, size_t len,
                               uint64_t off, uint64_t salt)
{
    uint64_t bad = 0;
    bool recorded = false;
    for (size_t i = 0; i < len;) {
        size_t n = (off + i) % 8 ? 8 - (off + i) % 8 : 8;
        if (n > len - i) n = len - i;
        bool word_bad = false;
        for (size_t b = 0; b < n; b++) {
            uint8_t want = sigprobe_byte(off + i + b, salt);
            if (buf[i + b] != want && !word_bad) {
                word_bad = true;
                if (!recorded) iotame_verify_record(run, path, off + i + b, want, buf[i + b]);
                recorded = true;
            }
        }
        bad += word_bad;
        i += n;
    }
    iotame_verify_count(run, len);
    return bad;
}

/* File offset of this rank's piece j of call c. */
static uint64_t sigprobe_offset(const sigprobe_sig_t *g, int rank, int nprocs, int64_t c, int64_t j)
{
    uint64_t s = (uint64_t)g->size, k = (uint64_t)g->k, P = (uint64_t)nprocs;
    uint64_t region = (uint64_t)c * P * k * s;
    return g->layout == SIGPROBE_INTERLEAVED ? region + ((uint64_t)j * P + (uint64_t)rank) * s
                                             : region + ((uint64_t)rank * k + (uint64_t)j) * s;
}

/* The file view of a signature: its type (committed) and this rank's displacement. */
static MPI_Datatype sigprobe_view(const sigprobe_sig_t *g, int rank, int nprocs, MPI_Offset *disp)
{
    MPI_Datatype base, tiled;
    const int64_t s = g->size, k = g->k;
    if (g->layout == SIGPROBE_INTERLEAVED) {
        MPI_Type_create_hvector((int)k, (int)s, (MPI_Aint)nprocs * s, MPI_BYTE, &base);
        *disp = (MPI_Offset)rank * s;
    } else {
        MPI_Type_contiguous((int)(k * s), MPI_BYTE, &base);
        *disp = (MPI_Offset)rank * k * s;
    }
    MPI_Type_create_resized(base, 0, (MPI_Aint)nprocs * k * s, &tiled);
    MPI_Type_free(&base);
    iotame_mpi_check(MPI_Type_commit(&tiled), "MPI_Type_commit", "");
    return tiled;
}

static double sigprobe_max(iotame_run_t *run, double t)
{
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, run->comm);
    return t;
}

/* Drops this file's pages from the page cache (they are clean after the sync). */
static void sigprobe_evict(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

/* One phase of one signature: open (timed), view, C calls (timed), then sync and close (write). */
static void sigprobe_phase(iotame_run_t *run, sigprobe_t *p, sigprobe_sig_t *g, int op, int64_t rep,
                           unsigned char *buf, uint64_t salt)
{
    const int write = op == SIGPROBE_WRITE;
    const size_t len = (size_t)(g->k * g->size);
    MPI_File fh;
    MPI_Barrier(run->comm);
    double t0 = MPI_Wtime();
    iotame_mpi_check(MPI_File_open(run->comm, p->path, write ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY,
                                   MPI_INFO_NULL, &fh),
                     "MPI_File_open", p->path);
    g->open[op][rep] = sigprobe_max(run, MPI_Wtime() - t0);
    MPI_Offset disp;
    MPI_Datatype view = sigprobe_view(g, run->rank, run->nprocs, &disp);
    iotame_mpi_check(MPI_File_set_view(fh, disp, MPI_BYTE, view, "native", MPI_INFO_NULL), "MPI_File_set_view",
                     p->path);
    double excluded = 0.0;
    MPI_Barrier(run->comm);
    t0 = MPI_Wtime();
    for (int64_t c = 0; c < g->calls; c++) {
        MPI_Status st;
        int done = 0;
        double t = MPI_Wtime();
        if (write)
            for (int64_t j = 0; j < g->k; j++)
                sigprobe_fill(buf + j * g->size, (size_t)g->size, sigprobe_offset(g, run->rank, run->nprocs, c, j),
                              salt);
        else
            memset(buf, 0, len);
        excluded += MPI_Wtime() - t;
        int err = write ? MPI_File_write_all(fh, buf, (int)len, MPI_BYTE, &st)
                        : MPI_File_read_all(fh, buf, (int)len, MPI_BYTE, &st);
        iotame_mpi_check(err, write ? "MPI_File_write_all" : "MPI_File_read_all", p->path);
        MPI_Get_count(&st, MPI_BYTE, &done);
        if (done != (int)len)
            iotame_fatal("%s %s: moved %d of %zu bytes in call %lld",
                         write ? "MPI_File_write_all" : "MPI_File_read_all", p->path, done, len, (long long)c);
        if (!write) {
            t = MPI_Wtime();
            for (int64_t j = 0; j < g->k; j++)
                p->mismatches += sigprobe_check(run, p->path, buf + j * g->size, (size_t)g->size,
                                                sigprobe_offset(g, run->rank, run->nprocs, c, j), salt);
            excluded += MPI_Wtime() - t;
        }
    }
    g->seconds[op][rep] = sigprobe_max(run, MPI_Wtime() - t0 - excluded) / (double)g->calls;
    if (write) iotame_mpi_check(MPI_File_sync(fh), "MPI_File_sync", p->path);
    iotame_mpi_check(MPI_File_close(&fh), "MPI_File_close", p->path);
    MPI_Type_free(&view);
}

static int sigprobe_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double sigprobe_median(const double *v, int64_t n)
{
    double *w = malloc(sizeof(double) * (size_t)n);
    if (!w) iotame_fatal("out of memory");
    memcpy(w, v, sizeof(double) * (size_t)n);
    qsort(w, (size_t)n, sizeof *w, sigprobe_cmp);
    double m = n % 2 ? w[n / 2] : (w[n / 2 - 1] + w[n / 2]) / 2;
    free(w);
    return m;
}

static json_t *sigprobe_row(const iotame_run_t *run, const sigprobe_t *p, const sigprobe_sig_t *g, int op,
                            int sieves)
{
    json_t *seconds = json_array();
    for (int64_t r = 0; r < g->done; r++) json_array_append_new(seconds, json_real(g->seconds[op][r]));
    json_t *row = json_object();
    json_object_set_new(row, "op", json_string(sigprobe_op_names[op]));
    json_object_set_new(row, "nprocs", json_integer(run->nprocs));
    json_object_set_new(row, "nodes", json_integer(p->nodes));
    json_object_set_new(row, "ppn", json_integer(p->ppn));
    json_object_set_new(row, "piece", json_integer((json_int_t)g->piece));
    json_object_set_new(row, "pieces", json_integer((json_int_t)g->pieces));
    json_object_set_new(row, "interleaved", json_boolean(g->interleaved));
    json_object_set_new(row, "calls", json_integer((json_int_t)g->calls));
    json_object_set_new(row, "bytes", json_integer((json_int_t)(g->k * g->size * run->nprocs)));
    json_object_set_new(row, "gap", json_integer(0));
    json_object_set_new(row, "targets", json_integer(1));
    json_object_set_new(row, "unit", json_integer(0));
    json_object_set_new(row, "sieves", json_integer(sieves));
    json_object_set_new(row, "open_seconds", json_real(sigprobe_median(g->open[op], g->done)));
    json_object_set_new(row, "seconds", seconds);
    json_object_set_new(row, "layout", json_string(sigprobe_layout_names[g->layout]));
    json_object_set_new(row, "size", json_integer((json_int_t)g->size));
    return row;
}

/* The time of the design's further repeats when each signature's take at most share seconds. */
static double sigprobe_cost(const sigprobe_t *p, double share)
{
    double sum = 0.0;
    for (int i = 0; i < p->nsigs; i++) {
        const double all = p->sigs[i].first * (double)(p->repeats - 1);
        sum += share < all ? share : all;
    }
    return sum;
}

/* Each signature's share of the further repeats' budget: the largest share whose cost stays within it (bisection;
 * the cost grows with the share), unbounded when every repeat fits (a repeat slower than the first then cuts
 * nothing). The same numbers on every rank give the same share. */
static double sigprobe_share(const sigprobe_t *p, double budget)
{
    double lo = 0.0, hi = 0.0;
    for (int i = 0; i < p->nsigs; i++)
        if (p->sigs[i].first * (double)(p->repeats - 1) > hi) hi = p->sigs[i].first * (double)(p->repeats - 1);
    if (sigprobe_cost(p, hi) <= budget) return HUGE_VAL;
    for (int it = 0; it < 64; it++) {
        double mid = (lo + hi) / 2;
        if (sigprobe_cost(p, mid) <= budget)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Whether signature g runs repeat rep (>= 1) under the budget: it ran every repeat before, and one more at its
 * mean keeps its further repeats within its share. */
static bool sigprobe_again(const sigprobe_t *p, const sigprobe_sig_t *g, int64_t rep, double share)
{
    if (g->done != rep) return false;
    return p->budget <= 0 || g->spent - g->first + g->spent / (double)g->done <= share;
}

/* One repeat of one signature: written, evicted, read back and deleted; its time (the slowest rank's) counted. */
static int sigprobe_repeat(iotame_run_t *run, sigprobe_t *p, int i, int64_t rep, unsigned char *buf)
{
    sigprobe_sig_t *g = &p->sigs[i];
    uint64_t salt = ((uint64_t)rep * SIGPROBE_MAX_SIGS + (uint64_t)i + 1) * 0xbf58476d1ce4e5b9ULL;
    double t0 = MPI_Wtime();
    sigprobe_phase(run, p, g, SIGPROBE_WRITE, rep, buf, salt);
    sigprobe_evict(p->path);
    sigprobe_phase(run, p, g, SIGPROBE_READ, rep, buf, salt);
    int rc = iotame_view_remove(run, p->path);
    g->spent += sigprobe_max(run, MPI_Wtime() - t0);
    if (!g->done) g->first = g->spent;
    g->done++;
    return rc;
}

/* The design's repeats, repeats outermost, within the budget (the file header); the run's time. */
static int sigprobe_measure(iotame_run_t *run, sigprobe_t *p, unsigned char *buf, double *elapsed)
{
    double share = 0.0, first_pass = 0.0, further = 0.0;
    *elapsed = 0.0;
    for (int64_t rep = 0; rep < p->repeats; rep++) {
        if (rep == 1 && p->budget > 0) {
            first_pass = *elapsed;
            further = fmax(p->budget - first_pass, p->budget / 3);
            share = sigprobe_share(p, further);
        }
        if (rep > 0 && p->budget > 0 && *elapsed - first_pass > further) break;
        for (int i = 0; i < p->nsigs; i++) {
            if (rep > 0 && !sigprobe_again(p, &p->sigs[i], rep, share)) continue;
            double before = p->sigs[i].spent;
            int rc = sigprobe_repeat(run, p, i, rep, buf);
            *elapsed += p->sigs[i].spent - before;
            if (rc) return rc;
        }
    }
    return 0;
}

static int sigprobe_run(iotame_run_t *run, int argc, char **argv)
{
    sigprobe_t *p = calloc(1, sizeof *p);
    if (!p) iotame_fatal("out of memory");
    int rc = sigprobe_parse(run, argc, argv, p);
    if (rc) {
        free(p);
        return rc;
    }
    sigprobe_nodes(run, p);
    sigprobe_design(p, run->nprocs);
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int vlen = 0;
    MPI_Get_library_version(version, &vlen);
    version[strcspn(version, "\n")] = '\0';
    const int sieves = sigprobe_sieves(version);

    int tag = (int)getpid(); /* rank 0's: one name for the job */
    MPI_Bcast(&tag, 1, MPI_INT, 0, run->comm);
    snprintf(p->path, sizeof p->path, "%s/iotame-sigprobe-%d.dat", p->dir, tag);
    int64_t most = 0;
    for (int i = 0; i < p->nsigs; i++) {
        sigprobe_sig_t *g = &p->sigs[i];
        most = g->k * g->size > most ? g->k * g->size : most;
        for (int op = 0; op < SIGPROBE_NOPS; op++) {
            g->seconds[op] = calloc((size_t)p->repeats, sizeof(double));
            g->open[op] = calloc((size_t)p->repeats, sizeof(double));
            if (!g->seconds[op] || !g->open[op]) iotame_fatal("out of memory");
        }
    }
    unsigned char *buf = iotame_alloc(most > 0 ? (size_t)most : 1);
    double elapsed = 0.0;
    if ((rc = iotame_view_remove(run, p->path)) || (rc = sigprobe_measure(run, p, buf, &elapsed))) goto out;

    uint64_t bad = p->mismatches;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_UINT64_T, MPI_SUM, run->comm);
    json_t *rows = json_array();
    int64_t rows_cut = 0, repeats_cut = 0;
    for (int i = 0; i < p->nsigs; i++) {
        repeats_cut += p->repeats - p->sigs[i].done;
        for (int op = 0; op < SIGPROBE_NOPS; op++)
            if (p->ops[op]) {
                json_array_append_new(rows, sigprobe_row(run, p, &p->sigs[i], op, sieves));
                rows_cut += p->sigs[i].done < p->repeats;
            }
    }
    json_object_set_new(run->result, "nodes", json_integer(p->nodes));
    json_object_set_new(run->result, "ppn", json_integer(p->ppn));
    json_object_set_new(run->result, "mpi_library", json_string(version));
    json_object_set_new(run->result, "sieves", json_integer(sieves));
    json_object_set_new(run->result, "mismatches", json_integer((json_int_t)bad));
    json_object_set_new(run->result, "repeats", json_integer((json_int_t)p->repeats));
    json_object_set_new(run->result, "seconds_budget", json_real(p->budget));
    json_object_set_new(run->result, "seconds_spent", json_real(elapsed));
    json_object_set_new(run->result, "rows_cut", json_integer((json_int_t)rows_cut));
    json_object_set_new(run->result, "repeats_cut", json_integer((json_int_t)repeats_cut));
    json_object_set_new(run->result, "rows", rows);
out:
    free(buf);
    for (int i = 0; i < p->nsigs; i++)
        for (int op = 0; op < SIGPROBE_NOPS; op++) free(p->sigs[i].seconds[op]), free(p->sigs[i].open[op]);
    free(p);
    return rc;
}

const iotame_kernel_t iotame_kernel_sigprobe = {
    .name = "sigprobe",
    .summary = "not an application benchmark: a design of collective call signatures, write_all and read_all "
               "timed per call (iotame calibrate's strategies part)",
    .run = sigprobe_run,
};
