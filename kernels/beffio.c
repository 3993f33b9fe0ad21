/* beffio: b_eff_io, the effective I/O bandwidth benchmark of Rabenseifner and Koniges, as used by Saini et al.,
 * "Parallel I/O Performance Characterization of Columbia and NEC SX-8 Superclusters" (IPDPS 2007): five pattern
 * types over a list of chunk sizes l, each accessed by initial write, rewrite and read.
 *
 *   type 0  strided collective, scattering large chunks: one call moves --scatter-size bytes of memory into chunks
 *           of l bytes; chunk g of rank r is at (g * N + r) * l of one shared file (a strided file view)
 *   type 1  strided collective, one call per chunk: type 0's layout, l bytes per call (individual file pointers, as
 *           b_eff_io's -noshared used in the paper)
 *   type 2  noncollective, one file per process (FILE.type2.%08d of the rank), chunks back to back
 *   type 3  segmented: one shared file, each process its own contiguous segment, noncollective
 *   type 4  segmented collective: type 3's layout with collective calls
 * The default chunk sizes are b_eff_io's 1 kB, 32 kB and 1 MB with their non-wellformed +8 byte variants; its
 * maximum chunk (memory per process / 128, at least 2 MB) depends on the machine, add it with --chunks (...,2m).
 * Like b_eff_io, type 0 moves 1 MB of memory per call in chunks of the size without its +8 (1k+8 moves 1024 chunks
 * of 1032 bytes).
 *
 * Scheduling, simplified from b_eff_io's time units: the initial write of types 0-2 repeats each chunk size while
 * one more repetition is expected to fit its share of --seconds-per-pattern (chunks of 1 MiB and more get two units,
 * smaller ones one); types 3 and 4 take the smallest count of types 0-2 (their segments must be known before they
 * are written), and the rewrite and read of a type repeat what its write did. --reps N fixes N repetitions of every
 * chunk size instead (reproducible files; --skip-write needs it). With --api posix every chunk is one pwrite/pread
 * and nothing is collective.
 *
 * Bandwidth of one type and access method = its bytes / time from open to close, sync included for writes. The
 * b_eff_io figure as b_eff_io.c (revision 2.1) computes it: per access method the average over the types with type 0
 * weighted twice; b_eff_io = sqrt(W x R) with R that average for read and W the one for write in which one of type
 * 0's two weights goes to its rewrite.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

#define MAX_CHUNKS 16
#define MAX_CHUNK_BYTES (1LL << 30)
enum { NTYPES = 5 };
enum { A_WRITE, A_REWRITE, A_READ, NACCESS };
static const char *const access_names[NACCESS] = {"write", "rewrite", "read"};

typedef struct {
    iotame_standard_options_t std;
    const char *chunks;
    int64_t scatter, reps;
    double seconds;
    int api;
} beff_opts_t;

typedef struct {
    beff_opts_t o;
    int nchunks, total_units;
    uint64_t len[MAX_CHUNKS];      /* chunk bytes */
    uint64_t per_call[MAX_CHUNKS]; /* type 0: chunks per call */
    int units[MAX_CHUNKS];         /* share of the time of a pattern type */
    uint64_t reps[NTYPES][MAX_CHUNKS];
    uint64_t segment; /* bytes of each process's segment in types 3 and 4 */
    unsigned char *buf;
    double mbs[NACCESS][NTYPES];
    bool measured[NACCESS][NTYPES];
} beff_t;

/* "1k,1k+8,32k,...": sizes with an optional +N bytes. Returns 0, or a usage error naming --chunks. */
static int parse_chunks(beff_t *b)
{
    const char *s = b->o.chunks;
    b->nchunks = 0;
    b->total_units = 0;
    while (true) {
        const char *end = strchr(s, ',');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        char item[64];
        int64_t base = 0, extra = 0;
        if (n == 0 || n >= sizeof item) goto bad;
        memcpy(item, s, n);
        item[n] = '\0';
        char *plus = strchr(item, '+');
        if (plus) *plus = '\0';
        if (iotame_parse_size(item, &base) != 0 || base < 1) goto bad;
        if (plus && (iotame_parse_size(plus + 1, &extra) != 0 || extra >= base))
            return iotame_usage_error("option --chunks: in \"%.*s\" the +N must be a size smaller than the chunk it "
                                      "is added to", (int)n, s);
        if (base + extra > MAX_CHUNK_BYTES)
            return iotame_usage_error("option --chunks: \"%.*s\" is larger than 1g", (int)n, s);
        if (b->nchunks == MAX_CHUNKS)
            return iotame_usage_error("option --chunks: at most %d chunk sizes", MAX_CHUNKS);
        int c = b->nchunks++;
        b->len[c] = (uint64_t)(base + extra);
        b->per_call[c] = b->o.scatter / base > 1 ? (uint64_t)(b->o.scatter / base) : 1;
        b->units[c] = b->len[c] >= (1u << 20) ? 2 : 1;
        b->total_units += b->units[c];
        if (!end) return 0;
        s = end + 1;
    }
bad:
    return iotame_usage_error("option --chunks: expected a comma-separated list of sizes, each optionally +N bytes "
                              "(1k,1k+8,32k,1m+8), got \"%s\"", b->o.chunks);
}

static int beff_parse(iotame_run_t *run, int argc, char **argv, beff_t *b)
{
    static const char *const apis[] = {"posix", "mpiio", NULL};
    beff_opts_t *o = &b->o;
    const iotame_option_t opts[] = {
        IOTAME_STANDARD_OPTIONS(o->std, "iotame-beffio"),
        {.name = "chunks", .type = IOTAME_OPT_STRING, .value = &o->chunks, .def = "1k,1k+8,32k,32k+8,1m,1m+8",
         .help = "chunk sizes l, comma-separated, each optionally +N bytes"},
        {.name = "scatter-size", .type = IOTAME_OPT_SIZE, .value = &o->scatter, .def = "1m", .min = "1",
         .max = "1g", .help = "type 0: bytes of memory scattered by one call"},
        {.name = "seconds-per-pattern", .type = IOTAME_OPT_DOUBLE, .value = &o->seconds, .def = "0.01", .min = "0",
         .max = "86400", .help = "time of the initial write of one pattern type, shared by its chunk sizes"},
        {.name = "reps", .type = IOTAME_OPT_INT, .value = &o->reps, .def = "0", .min = "0", .max = "1000000",
         .help = "repetitions of every chunk size instead of the time bound (0: time-bounded)"},
        {.name = "api", .type = IOTAME_OPT_ENUM, .value = &o->api, .def = "mpiio", .choices = apis,
         .help = "I/O interface (posix: no collective calls)"},
        {0}};
    int rc = iotame_options_parse(run, opts, argc, argv);
    if (rc) return rc;
    if ((rc = parse_chunks(b))) return rc;
    if (o->std.skip_write && o->reps == 0)
        return iotame_usage_error("option --skip-write needs --reps N: how often a time-bounded write repeated each "
                                  "chunk size is not known to a later run");
    return 0;
}

static void type_path(const beff_t *b, int type, int rank, char *buf, size_t n)
{
    if (type == 2) snprintf(buf, n, "%s.type2.%08d", b->o.std.file, rank);
    else snprintf(buf, n, "%s.type%d", b->o.std.file, type);
}

/* File offset of this rank's chunk g (counted over repetitions) of size l; base: where the chunk size's region
 * starts (in types 3 and 4: inside the segment). */
static uint64_t chunk_offset(const iotame_run_t *run, const beff_t *b, int type, uint64_t base, uint64_t g,
                             uint64_t l)
{
    uint64_t n = (uint64_t)run->nprocs, r = (uint64_t)run->rank;
    if (type <= 1) return base + (g * n + r) * l;
    if (type == 2) return base + g * l;
    return r * b->segment + base + g * l;
}

/* Type 0 through MPI-IO: a view in which this rank sees only its chunks, every N-th chunk from base + rank * l.
 * Each chunk size sets its own view; nothing else in the file uses one. */
static void set_strided_view(const iotame_run_t *run, iotame_file_t *f, uint64_t base, uint64_t l)
{
    MPI_Datatype chunk, strided;
    MPI_Type_contiguous((int)l, MPI_BYTE, &chunk);
    MPI_Type_create_resized(chunk, 0, (MPI_Aint)(l * (uint64_t)run->nprocs), &strided);
    MPI_Type_commit(&strided);
    MPI_Offset disp = (MPI_Offset)(base + (uint64_t)run->rank * l);
    iotame_mpi_check(MPI_File_set_view(f->fh, disp, MPI_BYTE, strided, "native", MPI_INFO_NULL),
                     "MPI_File_set_view", f->path);
    MPI_Type_free(&strided);
    MPI_Type_free(&chunk);
}

/* Repetition r of chunk size c: k chunks for type 0 (one call through the view, or one pwrite each), else one. */
static void beff_rep(iotame_run_t *run, beff_t *b, iotame_file_t *f, const char *path, int type, bool write,
                     bool collective, int c, uint64_t base, uint64_t r)
{
    uint64_t l = b->len[c], k = type == 0 ? b->per_call[c] : 1;
    bool view = type == 0 && f->api == IOTAME_API_MPIIO;
    for (uint64_t j = 0; write && j < k; j++)
        iotame_data_fill(run, b->buf + j * l, l, run->rank, chunk_offset(run, b, type, base, r * k + j, l));
    if (view) {
        if (write) iotame_file_write_at(f, r * k * l, b->buf, k * l, collective);
        else iotame_file_read_at(f, r * k * l, b->buf, k * l, collective);
    } else {
        for (uint64_t j = 0; j < k; j++) {
            uint64_t off = chunk_offset(run, b, type, base, r * k + j, l);
            if (write) iotame_file_write_at(f, off, b->buf + j * l, l, collective);
            else iotame_file_read_at(f, off, b->buf + j * l, l, collective);
        }
    }
    for (uint64_t j = 0; !write && j < k; j++)
        iotame_data_check(run, path, b->buf + j * l, l, run->rank, chunk_offset(run, b, type, base, r * k + j, l));
}

/* One pattern type with one access method: one phase from open to close over every chunk size. */
static int beff_type(iotame_run_t *run, beff_t *b, int access, int type)
{
    char path[PATH_MAX + 32], name[32];
    type_path(b, type, run->rank, path, sizeof path);
    snprintf(name, sizeof name, "type%d_%s", type, access_names[access]);
    bool write = access != A_READ, mpiio = b->o.api == IOTAME_API_MPIIO;
    bool collective = mpiio && (type == 0 || type == 1 || type == 4);
    bool timed = access == A_WRITE && type <= 2 && b->o.reps == 0;
    int mode = access == A_WRITE ? IOTAME_FILE_WRITE | IOTAME_FILE_CREATE
               : write           ? IOTAME_FILE_WRITE
                                 : IOTAME_FILE_READ;
    iotame_file_t f;
    iotame_phase_begin(run, name);
    int rc = iotame_file_open(&f, (iotame_api_t)b->o.api, type == 2 ? MPI_COMM_SELF : run->comm, path, mode,
                              MPI_INFO_NULL);
    if (!iotame_all_ok(run, rc == 0)) {
        if (rc == 0) iotame_file_close(&f);
        return IOTAME_EXIT_IO;
    }
    uint64_t base = 0, bytes = 0;
    for (int c = 0; c < b->nchunks; c++) {
        uint64_t l = b->len[c], k = type == 0 ? b->per_call[c] : 1, reps = b->reps[type][c];
        double budget = b->o.seconds * b->units[c] / b->total_units, start = MPI_Wtime();
        if (type == 0 && mpiio) set_strided_view(run, &f, base, l);
        for (uint64_t r = 0; timed || r < reps;) {
            beff_rep(run, b, &f, path, type, write, collective, c, base, r);
            r++;
            if (timed) {
                /* b_eff_io's rule: go on while one more repetition is expected to fit; every rank agrees. */
                double elapsed = MPI_Wtime() - start;
                MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, run->comm);
                if (elapsed * (double)(r + 1) / (double)r > budget) {
                    reps = b->reps[type][c] = r;
                    break;
                }
            }
        }
        bytes += reps * k * l;
        base += (type <= 1 ? (uint64_t)run->nprocs : 1) * reps * k * l;
    }
    if (write) iotame_file_sync(&f);
    iotame_file_close(&f);
    iotame_phase_end(run, bytes);
    json_t *phase = json_array_get(run->phases, json_array_size(run->phases) - 1);
    b->mbs[access][type] = json_real_value(json_object_get(phase, "mbs"));
    b->measured[access][type] = true;
    return IOTAME_EXIT_OK;
}

/* Types 3 and 4: repetitions (the smallest of types 0-2, counted in chunks) and the segment size they make. */
static void plan_segments(beff_t *b)
{
    b->segment = 0;
    for (int c = 0; c < b->nchunks; c++) {
        if (b->o.reps == 0) {
            uint64_t r = b->reps[0][c] * b->per_call[c];
            if (b->reps[1][c] < r) r = b->reps[1][c];
            if (b->reps[2][c] < r) r = b->reps[2][c];
            b->reps[3][c] = b->reps[4][c] = r;
        }
        b->segment += b->reps[3][c] * b->len[c];
    }
}

/* Removes the files: the shared ones by rank 0, each rank its type 2 file. */
static int beff_remove(iotame_run_t *run, const beff_t *b)
{
    char path[PATH_MAX + 32];
    bool ok = true;
    MPI_Barrier(run->comm); /* nobody still has them open */
    for (int type = 0; type < NTYPES; type++) {
        if (type != 2 && run->rank != 0) continue;
        type_path(b, type, run->rank, path, sizeof path);
        ok = iotame_file_remove((iotame_api_t)b->o.api, path) == 0 && ok;
    }
    return iotame_all_ok(run, ok) ? IOTAME_EXIT_OK : IOTAME_EXIT_IO;
}

static json_t *number_or_null(bool have, double v)
{
    return have ? json_real(v) : json_null();
}

/* "b_eff_io_mbs" and the "b_eff_io" details: per-access averages, chunk sizes, repetitions, segment size. */
static void beff_report(iotame_run_t *run, const beff_t *b)
{
    double avg[NACCESS];
    bool have[NACCESS];
    json_t *detail = json_object(), *access = json_object(), *reps = json_object(), *chunks = json_array(),
           *per_call = json_array();
    for (int a = 0; a < NACCESS; a++) {
        have[a] = true;
        avg[a] = b->mbs[a][0]; /* type 0 counts twice */
        for (int t = 0; t < NTYPES; t++) {
            have[a] = have[a] && b->measured[a][t];
            avg[a] += b->mbs[a][t];
        }
        avg[a] /= NTYPES + 1;
        json_object_set_new(access, access_names[a], number_or_null(have[a], avg[a]));
    }
    bool all = have[A_WRITE] && have[A_REWRITE] && have[A_READ];
    double write_side = avg[A_WRITE] + (b->mbs[A_REWRITE][0] - b->mbs[A_WRITE][0]) / (NTYPES + 1);
    json_object_set_new(run->result, "b_eff_io_mbs", number_or_null(all, sqrt(write_side * avg[A_READ])));

    for (int c = 0; c < b->nchunks; c++) {
        json_array_append_new(chunks, json_integer((json_int_t)b->len[c]));
        json_array_append_new(per_call, json_integer((json_int_t)b->per_call[c]));
    }
    for (int t = 0; t < NTYPES; t++) {
        char key[16];
        json_t *list = json_array();
        for (int c = 0; c < b->nchunks; c++) json_array_append_new(list, json_integer((json_int_t)b->reps[t][c]));
        snprintf(key, sizeof key, "type%d", t);
        json_object_set_new(reps, key, list);
    }
    json_object_set_new(detail, "access_mbs", access);
    json_object_set_new(detail, "chunks", chunks);
    json_object_set_new(detail, "type0_chunks_per_call", per_call);
    json_object_set_new(detail, "repetitions", reps);
    json_object_set_new(detail, "segment_bytes", json_integer((json_int_t)b->segment));
    json_object_set_new(run->result, "b_eff_io", detail);
}

static int beff_run(iotame_run_t *run, int argc, char **argv)
{
    beff_t b = {0};
    int rc = beff_parse(run, argc, argv, &b);
    if (rc) return rc;
    run->seed = (uint64_t)b.o.std.seed;
    size_t buflen = 1;
    for (int c = 0; c < b.nchunks; c++) {
        if (b.len[c] * b.per_call[c] > buflen) buflen = b.len[c] * b.per_call[c];
        for (int t = 0; t < NTYPES; t++) b.reps[t][c] = (uint64_t)b.o.reps;
    }
    b.buf = iotame_alloc(buflen);

    bool write = !b.o.std.skip_write;
    if (!write) plan_segments(&b);
    else rc = beff_remove(run, &b); /* the initial write starts from no files */
    /* As b_eff_io: every type is written, then rewritten, then read. */
    for (int a = write ? A_WRITE : A_READ; !rc && a < NACCESS; a++) {
        for (int type = 0; !rc && type < NTYPES; type++) {
            if (a == A_WRITE && type == 3) plan_segments(&b);
            rc = beff_type(run, &b, a, type);
        }
    }
    if (!rc && write && !b.o.std.keep) rc = beff_remove(run, &b);
    if (!rc) beff_report(run, &b);
    free(b.buf);
    return rc;
}

const iotame_kernel_t iotame_kernel_beffio = {
    .name = "beffio",
    .summary = "b_eff_io: five pattern types (scatter, strided, file per process, segmented, segmented collective) "
               "x chunk sizes; write, rewrite, read; the b_eff_io figure",
    .run = beff_run,
};
