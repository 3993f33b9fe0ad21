/* The node's staging area without MPI (runtime/src/stage: area.c, batch.c, flusher.c): an area in anonymous shared
 * memory, node processes played by ranks of this process (threads) or by forked children, real files in a
 * temporary directory. Each file's expected content is kept in memory, the writes applied in staging order.
 *  - batches (batch.c, called directly): interleaved small pieces of two processes become one write, large ones
 *    one pwritev, sparse ones one write per adjacent group; overlapping writes land in staging order; a padding
 *    record at the ring's end is skipped; a failed write names the processes whose bytes it did not write;
 *  - the flusher thread with writer threads through a ring smaller than what they write;
 *  - writers (forked children) that die between reserving a record and committing it, or while they wait for
 *    room in the ring. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "core/core.h"
#include "stage/stage.h"

static char dir[] = "/tmp/test_stage.XXXXXX";
static const char *volatile phase = "start";

static void timed_out(int sig)
{
    (void)sig;
    static const char msg[] = "test_stage: timed out in ";
    ssize_t r = write(2, msg, sizeof msg - 1);
    r = write(2, (const char *)phase, strlen((const char *)phase));
    r = write(2, "\n", 1);
    (void)r;
    _exit(2);
}

/* The runtime's warnings (core/log.c is not linked): the last one is kept. */
static pthread_mutex_t warned_lock = PTHREAD_MUTEX_INITIALIZER;
static char warned[1024];

void iotame_log_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&warned_lock);
    vsnprintf(warned, sizeof warned, fmt, ap);
    pthread_mutex_unlock(&warned_lock);
    va_end(ap);
}

static int warned_of(const char *what)
{
    pthread_mutex_lock(&warned_lock);
    int yes = strstr(warned, what) != NULL;
    pthread_mutex_unlock(&warned_lock);
    return yes;
}

/* ---- areas, files, writes ---- */

static stage_area_t *area_new(uint64_t cap)
{
    void *m = mmap(NULL, stage_area_bytes(cap, 0), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    stage_area_init(m, cap, 0, 2);
    stage_area_t *a = m;
    CHECK(a->cap == cap);
    CHECK(stage_area_join(a, 0, 100) == 0);
    return a;
}

static void area_free(stage_area_t *a)
{
    size_t bytes = stage_area_bytes(a->cap, a->prefetch_bytes);
    stage_area_leave(a, 0);
    munmap(a, bytes);
}

static const char *path_of(const char *name)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

/* A new empty file, claimed in the area's table. */
static int file_new(stage_area_t *a, const char *name)
{
    const char *p = path_of(name);
    int fd = open(p, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    struct stat st;
    CHECK(fd >= 0 && fstat(fd, &st) == 0);
    close(fd);
    int f = stage_file_claim(a, (uint64_t)st.st_dev, (uint64_t)st.st_ino, p);
    CHECK(f >= 0);
    return f;
}

/* Whether the file holds exactly `n` bytes of `expect`; reports the first difference. */
static void file_check(const char *name, const unsigned char *expect, size_t n)
{
    int fd = open(path_of(name), O_RDONLY);
    unsigned char *got = calloc(1, n + 1);
    ssize_t r = pread(fd, got, n + 1, 0);
    close(fd);
    CHECK(r == (ssize_t)n);
    for (size_t i = 0; i < n; i++)
        if (got[i] != expect[i]) {
            fprintf(stderr, "%s: byte %zu is %u, expected %u\n", name, i, got[i], expect[i]);
            failures++;
            break;
        }
    free(got);
}

static unsigned char pattern(unsigned seed, size_t i) { return (unsigned char)((seed * 131u + i * 7u) % 251u + 1u); }

/* The extents x[0..n) as runs, equal pieces at one stride joined (as the view's mapping gives them); *nruns. */
static iotame_run_t *runs_of(const iotame_extent_t *x, size_t n, size_t *nruns)
{
    iotame_run_t *r = malloc((n ? n : 1) * sizeof *r);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        iotame_run_t *p = k ? &r[k - 1] : NULL;
        int64_t s = p ? (p->count > 1 ? p->stride : x[i].off - p->off) : 0;
        if (p && p->len == x[i].len && s > p->len && x[i].off == p->off + p->count * s) {
            p->count++;
            p->stride = s;
        } else {
            r[k++] = (iotame_run_t){x[i].off, x[i].len, 1, x[i].len};
        }
    }
    *nruns = k;
    return r;
}

static int test_fill(void *arg, char *dst, uint64_t from, uint64_t n)
{
    memcpy(dst, (const char *)arg + from, n);
    return 0;
}

/* Stages the extents x[0..n) for `rank` with data of pattern `seed`, applied to `image` (if any) as the file should
 * get it. */
static uint64_t put(stage_area_t *a, int f, int rank, const iotame_extent_t *x, size_t n, unsigned seed,
                    unsigned char *image)
{
    size_t bytes = 0, nruns = 0;
    for (size_t i = 0; i < n; i++) bytes += (size_t)x[i].len;
    char *d = malloc(bytes ? bytes : 1);
    for (size_t i = 0; i < bytes; i++) d[i] = (char)pattern(seed, i);
    for (size_t i = 0, at = 0; image && i < n; at += (size_t)x[i].len, i++)
        memcpy(image + x[i].off, d + at, (size_t)x[i].len);
    iotame_run_t *r = runs_of(x, n, &nruns);
    const stage_source_t src = {test_fill, d};
    uint64_t blocked = 0, end = stage_put(a, f, rank, -1, r, nruns, &src, 1.0, &blocked);
    free(r);
    free(d);
    return end;
}

/* `count` extents of `len` bytes, `stride` apart from `first`. */
static iotame_extent_t *strided(int64_t first, int64_t len, int64_t stride, size_t count)
{
    iotame_extent_t *x = malloc(count * sizeof *x);
    for (size_t i = 0; i < count; i++) x[i] = (iotame_extent_t){first + (int64_t)i * stride, len};
    return x;
}

/* Writes everything staged as one batch (what the flusher does when it finds it all committed). */
static void batch_all(stage_area_t *a)
{
    uint64_t head = stage_head(a);
    stage_write_batch(a, a->tail, head);
    stage_lock(a);
    __atomic_store_n(&a->tail, head, __ATOMIC_RELEASE);
    stage_unlock(a);
}

/* ---- batches ---- */

/* Two processes' 64-byte pieces, interleaved: one write of the whole range. */
static void batch_dense(void)
{
    phase = "batch_dense";
    stage_area_t *a = area_new(1 << 20);
    int f = file_new(a, "dense.dat");
    unsigned char image[8192] = {0};
    iotame_extent_t *x0 = strided(0, 64, 128, 64), *x1 = strided(64, 64, 128, 64);
    put(a, f, 0, x0, 64, 1, image);
    put(a, f, 1, x1, 64, 2, image);
    batch_all(a);
    CHECK(a->count.records == 2 && a->count.extents_in == 128);
    CHECK(a->count.writes_out == 1 && a->count.bytes_out == 8192);
    CHECK(a->file[f].pending == 0 && a->problems.nfailures == 0);
    file_check("dense.dat", image, sizeof image);
    free(x0), free(x1);
    area_free(a);
}

/* Small pieces of two processes over a range beyond one dense window (64 MiB): copied window by window, a piece
 * cut where a window ends, each window's covered bytes one write. */
static void batch_dense_windows(void)
{
    phase = "batch_dense_windows";
    stage_area_t *a = area_new(256u << 20);
    int f = file_new(a, "windows.dat");
    const size_t n = 900000, len = 48, end = 100 + 2 * n * len; /* about 82 MiB from offset 100 */
    unsigned char *image = calloc(1, end);
    iotame_extent_t *x0 = strided(100, len, 2 * len, n), *x1 = strided(100 + len, len, 2 * len, n);
    put(a, f, 0, x0, n, 7, image);
    put(a, f, 1, x1, n, 8, image);
    batch_all(a);
    CHECK(a->count.records == 2 && a->count.runs_in == 2 && a->count.extents_in == 2 * n);
    CHECK(a->count.writes_out == 2 && a->count.bytes_out == 2 * n * len);
    file_check("windows.dat", image, end);
    free(x0), free(x1), free(image);
    area_free(a);
}

/* Large pieces: sorted, adjacent ones written together (one pwritev), a hole starts another write. */
static void batch_sorted(void)
{
    phase = "batch_sorted";
    stage_area_t *a = area_new(1 << 20);
    int f = file_new(a, "sorted.dat");
    static unsigned char image[320 << 10];
    memset(image, 0, sizeof image);
    iotame_extent_t *x0 = strided(0, 8192, 16384, 16), *x1 = strided(8192, 8192, 16384, 16);
    put(a, f, 0, x0, 16, 3, image);
    put(a, f, 1, x1, 16, 4, image);
    batch_all(a);
    CHECK(a->count.writes_out == 1 && a->count.bytes_out == 256 << 10);
    /* rank 1's pieces first in the ring, and a hole before the last one */
    iotame_extent_t y1[2] = {{(256 << 10) + 8192, 8192}, {(256 << 10) + 32768, 8192}};
    iotame_extent_t y0[2] = {{256 << 10, 8192}, {(256 << 10) + 16384, 8192}};
    put(a, f, 1, y1, 2, 5, image);
    put(a, f, 0, y0, 2, 6, image);
    batch_all(a);
    CHECK(a->count.writes_out == 3 && a->count.overlap_batches == 0);
    file_check("sorted.dat", image, (256 << 10) + 40960);
    free(x0), free(x1);
    area_free(a);
}

/* Small pieces far apart (not dense): each group of adjacent pieces of the two processes is one write. */
static void batch_sparse(void)
{
    phase = "batch_sparse";
    stage_area_t *a = area_new(1 << 20);
    int f = file_new(a, "sparse.dat");
    unsigned char image[20000] = {0};
    iotame_extent_t *x0 = strided(0, 100, 1000, 20), *x1 = strided(100, 100, 1000, 20);
    put(a, f, 1, x1, 20, 7, image);
    put(a, f, 0, x0, 20, 8, image);
    batch_all(a);
    CHECK(a->count.writes_out == 20 && a->count.bytes_out == 4000);
    file_check("sparse.dat", image, 19200);
    free(x0), free(x1);
    area_free(a);
}

/* Overlapping writes of two processes in one batch: the later write of a byte wins, in both ways of writing. */
static void batch_overlap(void)
{
    phase = "batch_overlap";
    stage_area_t *a = area_new(1 << 20);
    int f = file_new(a, "overlap.dat");
    unsigned char image[24576] = {0};
    /* dense: 64-byte pieces */
    iotame_extent_t *x = strided(0, 64, 64, 64);
    put(a, f, 0, x, 64, 9, image);
    put(a, f, 1, x + 16, 16, 10, image);
    put(a, f, 0, x + 24, 1, 11, image);
    batch_all(a);
    CHECK(a->count.writes_out == 1 && a->count.overlap_batches == 0);
    /* sorted: 8 KiB pieces */
    iotame_extent_t big0[2] = {{8192, 8192}, {16384, 8192}}, big1 = {12288, 8192}, big2 = {14336, 8192};
    put(a, f, 0, big0, 2, 12, image);
    put(a, f, 1, &big1, 1, 13, image);
    put(a, f, 0, &big2, 1, 14, image);
    batch_all(a);
    CHECK(a->count.overlap_batches == 1);
    file_check("overlap.dat", image, sizeof image);
    free(x);
    area_free(a);
}

/* A record that does not fit before the ring's end goes to its start behind a padding record, which is skipped. */
static void batch_padding(void)
{
    phase = "batch_padding";
    stage_area_t *a = area_new(65536);
    int f = file_new(a, "padding.dat");
    unsigned char image[80000] = {0};
    for (int i = 0; i < 3; i++) {
        iotame_extent_t x = {20000 * i, 20000};
        put(a, f, i % 2, &x, 1, 15 + (unsigned)i, image);
    }
    uint64_t head = stage_head(a);
    batch_all(a);
    iotame_extent_t x = {60000, 20000};
    put(a, f, 1, &x, 1, 18, image);
    uint64_t record = (sizeof(stage_record_t) + sizeof(iotame_run_t) + 20000 + 63) / 64 * 64;
    CHECK(head == 3 * record);
    CHECK(stage_head(a) == 65536 + record); /* padded to the end, then the record at the ring's start */
    batch_all(a);
    CHECK(a->count.records == 4 && a->count.writes_out == 2 && a->count.bytes_out == 80000);
    file_check("padding.dat", image, sizeof image);
    area_free(a);
}

/* A failed write: the processes whose bytes were not written are told, once each; the others are not. */
static void batch_missing_file(void)
{
    phase = "batch_missing_file";
    stage_area_t *a = area_new(1 << 20);
    int f = file_new(a, "gone.dat");
    unsigned char image[8192];
    iotame_extent_t *x0 = strided(0, 64, 128, 64), *x1 = strided(64, 64, 128, 64);
    put(a, f, 0, x0, 64, 1, image);
    put(a, f, 1, x1, 64, 2, image);
    unlink(path_of("gone.dat"));
    batch_all(a);
    CHECK(a->problems.nfailures == 1 && a->problems.failure[0].error == ENOENT && a->problems.failure[0].bytes == 8192);
    CHECK(strstr(a->problems.failure[0].path, "gone.dat") != NULL);
    CHECK(a->file[f].pending == 0 && a->file[f].failed_bytes == 8192);
    CHECK(stage_take_error(a, f, 0) == ENOENT && stage_take_error(a, f, 0) == 0);
    CHECK(stage_take_error(a, f, 2) == 0);
    CHECK(stage_take_error(a, f, 1) == ENOENT && a->file[f].error == 0);
    free(x0), free(x1);
    area_free(a);
}

/* A write cut short by the file-size limit (in a child, which has the limit): rank 0's bytes below it are written,
 * rank 1's above it failed and only rank 1 is told; dense and sorted batches alike. */
static void batch_short_child(int sorted)
{
    failures = 0;
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {65536, 65536};
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    stage_area_t *a = area_new(1 << 20);
    const char *name = sorted ? "short_sorted.dat" : "short_dense.dat";
    int f = file_new(a, name);
    static unsigned char image[98304];
    int64_t len = sorted ? 8192 : 64;
    size_t n0 = (size_t)(65536 / len), n1 = (size_t)(32768 / len);
    iotame_extent_t *x0 = strided(0, len, len, n0), *x1 = strided(65536, len, len, n1);
    put(a, f, 0, x0, n0, 1, image);
    put(a, f, 1, x1, n1, 2, image);
    batch_all(a);
    CHECK(a->problems.nfailures == 1 && a->problems.failure[0].error == EFBIG && a->problems.failure[0].bytes == 32768);
    CHECK(a->count.bytes_out == 65536 && a->file[f].pending == 0);
    CHECK(stage_take_error(a, f, 0) == 0);
    CHECK(stage_take_error(a, f, 1) == EFBIG);
    file_check(name, image, 65536);
    free(x0), free(x1);
    area_free(a);
}

static void batch_short(void)
{
    for (int sorted = 0; sorted < 2; sorted++) {
        phase = sorted ? "batch_short sorted" : "batch_short dense";
        fflush(stderr);
        pid_t child = fork();
        if (child == 0) {
            batch_short_child(sorted);
            _exit(failures != 0);
        }
        int status = 0;
        CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
}

/* ---- the flusher with writer threads ---- */

enum { WRITERS = 2, WRITES = 400, REGION = 65536 };

typedef struct {
    stage_area_t *a;
    int file, rank;
    unsigned char *image; /* the writer's own region of the expected file */
} writer_t;

/* Writes of 1 to 4 pieces of random sizes in the writer's region, overlapping earlier ones, some larger than half
 * the ring (split into several records); a drain now and then. */
static void *writer(void *arg)
{
    writer_t *w = arg;
    unsigned s = 77u + (unsigned)w->rank;
    for (int i = 0; i < WRITES; i++) {
        iotame_extent_t x[4];
        size_t want = 1 + (size_t)(rand_r(&s) % 4), n = 0;
        int64_t at = w->rank * REGION + rand_r(&s) % (REGION / 2);
        int64_t big = i % 50 == 0 ? 40000 : 4000;
        for (; n < want; n++) {
            int64_t len = 1 + (rand_r(&s) % big) / (int64_t)want;
            if (at + len > (w->rank + 1) * REGION) break;
            x[n] = (iotame_extent_t){at, len};
            at += len + 1 + rand_r(&s) % 200;
        }
        put(w->a, w->file, w->rank, x, n, (unsigned)(i * WRITERS + w->rank), w->image);
        if (i % 97 == 0) stage_drain(w->a, stage_head(w->a));
    }
    return NULL;
}

static void flusher_writers(void)
{
    phase = "flusher_writers";
    stage_area_t *a = area_new(65536);
    int f = file_new(a, "threads.dat");
    static unsigned char image[WRITERS * REGION];
    stage_flush_knobs_t k = {0.5, 1000000};
    CHECK(stage_flusher_start(a, &k) == 0);
    pthread_t t[WRITERS];
    writer_t w[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        w[i] = (writer_t){a, f, i, image};
        pthread_create(&t[i], NULL, writer, &w[i]);
    }
    for (int i = 0; i < WRITERS; i++) pthread_join(t[i], NULL);
    stage_drain(a, stage_head(a));
    stage_flusher_stop(a);
    CHECK(a->head == a->tail && a->file[f].pending == 0 && a->problems.nfailures == 0);
    CHECK(a->count.max_dirty <= a->cap && a->count.records >= WRITERS * WRITES);
    size_t end = sizeof image;
    while (end && !image[end - 1]) end--;
    file_check("threads.dat", image, end);
    area_free(a);
}

/* A fill that keeps its record in flight until the flusher has written what came before it (2 s at most), waking
 * the flusher as another writer's commit would. */
static stage_area_t *inflight_area;
static int inflight_saw_tail;

static int inflight_fill(void *arg, char *dst, uint64_t from, uint64_t n)
{
    for (int i = 0; i < 2000 && !inflight_saw_tail; i++) {
        stage_event_notify(&inflight_area->wake, 0);
        inflight_saw_tail = __atomic_load_n(&inflight_area->tail, __ATOMIC_ACQUIRE) > 0;
        usleep(1000);
    }
    memcpy(dst, (const char *)arg + from, n);
    return 0;
}

/* The ring past its threshold while a writer is still copying a record: the flusher writes the committed records
 * before it instead of waiting (writers that keep staging would always have a record under way). */
static void flusher_under_pressure(void)
{
    phase = "flusher_under_pressure";
    stage_area_t *a = area_new(65536);
    int f = file_new(a, "pressure.dat");
    static unsigned char image[20000];
    memset(image, 0, sizeof image);
    stage_flush_knobs_t k = {0.25, 10000000000ull}; /* the threshold alone starts a flush */
    CHECK(stage_flusher_start(a, &k) == 0);
    iotame_extent_t first = {0, 10000};
    put(a, f, 0, &first, 1, 21, image);
    char *d = malloc(10000);
    for (size_t i = 0; i < 10000; i++) d[i] = (char)(image[10000 + i] = pattern(22, i));
    inflight_area = a;
    inflight_saw_tail = 0;
    const iotame_run_t second = {10000, 10000, 1, 10000};
    const stage_source_t src = {inflight_fill, d};
    uint64_t blocked = 0;
    stage_put(a, f, 0, -1, &second, 1, &src, k.threshold, &blocked);
    CHECK(inflight_saw_tail);
    stage_drain(a, stage_head(a));
    stage_flusher_stop(a);
    file_check("pressure.dat", image, sizeof image);
    free(d);
    area_free(a);
}

/* ---- writers that die ---- */

static void die_in_copy(int sig)
{
    (void)sig;
    _exit(3);
}

/* A child, node process `rank`, stages a write, then dies in the copy of a second one (its data lies partly in
 * memory it cannot read): the second record is reserved and never committed. Returns the child's pid. */
static pid_t child_dies_in_copy(stage_area_t *a, int f, int rank, int64_t good_at, int64_t dead_at, unsigned char *image)
{
    long page = sysconf(_SC_PAGESIZE);
    char *mem = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(mem, 0x5a, (size_t)page);
    mprotect(mem + page, (size_t)page, PROT_NONE);
    iotame_extent_t good = {good_at, 4096};
    fflush(stderr);
    pid_t child = fork();
    if (child == 0) {
        signal(SIGSEGV, die_in_copy);
        if (stage_area_join(a, rank, 100 + rank) != 0) _exit(1);
        put(a, f, rank, &good, 1, 40, NULL);
        iotame_run_t dead = {dead_at, 2 * page, 1, 2 * page};
        const stage_source_t src = {test_fill, mem};
        uint64_t blocked = 0;
        stage_put(a, f, rank, -1, &dead, 1, &src, 1.0, &blocked);
        _exit(0); /* not reached: the copy faults */
    }
    for (size_t i = 0; i < 4096; i++) image[good_at + (int64_t)i] = pattern(40, i);
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 3);
    munmap(mem, 2 * (size_t)page);
    return child;
}

/* Writers that die between reserving a record and committing it: the flusher skips their records, writes the
 * others' behind them, and reports the lost bytes; a drain behind a dead record returns, and so does the flusher's
 * stop (MPI_Finalize of the node's first process) with one pending. */
static void dead_writer(void)
{
    phase = "dead_writer";
    stage_area_t *a = area_new(1 << 20);
    int f = file_new(a, "dead.dat");
    static unsigned char image[6 * 65536];
    memset(image, 0, sizeof image);
    stage_flush_knobs_t k = {0.5, 1000000};
    CHECK(stage_flusher_start(a, &k) == 0);
    pid_t first = child_dies_in_copy(a, f, 1, 65536, 2 * 65536, image);
    iotame_extent_t mine = {0, 4096}, after = {3 * 65536 - 4096, 4096};
    put(a, f, 0, &mine, 1, 41, image);
    put(a, f, 0, &after, 1, 42, image);
    phase = "dead_writer: a drain behind the dead record";
    stage_drain(a, stage_head(a));
    file_check("dead.dat", image, 3 * 65536);
    CHECK(warned_of("dead.dat"));
    /* another one dies, and the flusher is stopped with its record pending */
    phase = "dead_writer: the flusher's stop behind a dead record";
    pid_t second = child_dies_in_copy(a, f, 1, 4 * 65536, 5 * 65536, image);
    stage_flusher_stop(a);
    CHECK(a->head == a->tail && a->file[f].pending == 0);
    file_check("dead.dat", image, 4 * 65536 + 4096);
    stage_lost_t lost[STAGE_LOST];
    int n = stage_lost_records(a, lost, STAGE_LOST);
    CHECK(n == 2 && a->count.lost_records == 2 && a->count.lost_bytes == 2 * 2 * (uint64_t)sysconf(_SC_PAGESIZE));
    for (int i = 0; i < n && i < 2; i++) {
        CHECK(strstr(lost[i].path, "dead.dat") != NULL && lost[i].records == 1);
        CHECK(lost[i].bytes == 2 * (uint64_t)sysconf(_SC_PAGESIZE));
        CHECK(lost[i].node_rank == 1 && lost[i].world_rank == 101 && lost[i].pid == (i ? second : first));
    }
    CHECK(a->proc[1].state == STAGE_PROC_DEAD && a->problems.nfailures == 0);
    area_free(a);
}

/* A writer killed while it waits for room in the full ring: the waiters are woken after the next batch as before,
 * and the dead writer's committed records and everyone else's are written. (A killed waiter of a process-shared
 * pthread condition variable made glibc's next broadcast wait for it for ever.) */
static void killed_waiter(void)
{
    phase = "killed_waiter";
    stage_area_t *a = area_new(65536);
    int f = file_new(a, "waiter.dat");
    static unsigned char image[200000];
    memset(image, 0, sizeof image);
    fflush(stderr);
    pid_t child = fork();
    if (child == 0) { /* no flusher yet: three records fill the ring, the fourth waits for room */
        if (stage_area_join(a, 1, 101) != 0) _exit(1);
        for (int i = 0; i < 8; i++) {
            iotame_extent_t x = {20000 * i, 20000};
            put(a, f, 1, &x, 1, 50 + (unsigned)i, NULL);
        }
        _exit(0);
    }
    for (int i = 0; i < 3; i++) {
        iotame_extent_t x = {20000 * i, 20000};
        for (size_t b = 0; b < 20000; b++) image[x.off + (int64_t)b] = pattern(50 + (unsigned)i, b);
    }
    for (int blocked = 0; !blocked; usleep(1000)) {
        stage_lock(a);
        blocked = a->blocked;
        stage_unlock(a);
    }
    usleep(20000);
    kill(child, SIGKILL);
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFSIGNALED(status));
    phase = "killed_waiter: the flusher behind a killed waiter";
    stage_flush_knobs_t k = {0.5, 1000000};
    CHECK(stage_flusher_start(a, &k) == 0);
    for (int i = 0; i < 6; i++) { /* more than the ring holds: this process waits for room too */
        iotame_extent_t x = {100000 + 16000 * i, 16000};
        put(a, f, 0, &x, 1, 60 + (unsigned)i, image);
    }
    stage_drain(a, stage_head(a));
    stage_flusher_stop(a);
    CHECK(a->head == a->tail && a->file[f].pending == 0 && a->count.lost_records == 0);
    file_check("waiter.dat", image, 196000);
    area_free(a);
}

int main(void)
{
    signal(SIGALRM, timed_out);
    alarm(120);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    batch_dense();
    batch_dense_windows();
    batch_sorted();
    batch_sparse();
    batch_overlap();
    batch_padding();
    batch_missing_file();
    batch_short();
    flusher_writers();
    flusher_under_pressure();
    dead_writer();
    killed_waiter();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (!failures && system(cmd) != 0) fprintf(stderr, "test_stage: %s left behind\n", dir);
    if (failures) fprintf(stderr, "test_stage: %d failed, files in %s\n", failures, dir);
    return failures != 0;
}
