/* The moments at which tests/preload/test_deaths.py kills a rank: usage `deaths MODE DIR ITERS MARK VICTIM`.
 *
 * Every rank writes its pid to DIR/pid.RANK, then 1 MiB at RANK MiB of DIR/data.dat (collective), and makes it durable
 * as MPI-IO says (sync, barrier, sync); rank 0 then creates DIR/synced. Then the ranks run ITERS iterations of the
 * mode's loop (-1: until killed); each writes one block per rank after the synced part, block slot (i % CYCLE) of
 * the rank. Byte i of the file is always (i * 7 + 3) % 251, so that any byte written is known. After MARK iterations
 * the loop marks its moment by creating DIR/phase.RANK:
 *   gate:    independent writes (throttled by the configuration): every rank marks and goes on;
 *   flusher: independent writes (staged): every rank marks and goes on;
 *   ring:    independent writes (staged); rank VICTIM's write of iteration MARK is from a buffer whose pages are
 *            missing (userfaultfd): the copy of its data into the staging ring blocks with its record reserved, and
 *            the fault's handler thread marks;
 *   gather, between: collective writes: rank VICTIM marks after its MARK-th call and sleeps there, between two
 *            collective calls (the others go on into the next one).
 * A run that ends (ITERS >= 0) syncs, closes and prints {"iterations": ITERS} from rank 0. Exit status 5: a marked
 * rank that was not killed within two minutes; 4: userfaultfd unavailable (the test skips). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <mpi.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MiB (1 << 20)
#define CYCLE 16

static const char *dir;
static int rank, nprocs;
static long block;

static void deaths_fill(unsigned char *b, long off, long n)
{
    for (long i = 0; i < n; i++) b[i] = (unsigned char)(((off + i) * 7 + 3) % 251);
}

/* Creates DIR/NAME.RANK holding `text`, whole or not at all (written aside, then renamed). */
static void deaths_mark(const char *name, const char *text)
{
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s.%d", dir, name, rank);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "deaths: cannot create %s\n", path);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* The marked rank waits here for its death: two minutes without it is a failure of the test. */
static void deaths_await_kill(void)
{
    for (int i = 0; i < 1200; i++) usleep(100000);
    fprintf(stderr, "deaths: rank %d was not killed\n", rank);
    _exit(5);
}

/* ---- ring: a buffer whose pages are missing ---- */

static int uffd = -1;

/* The fault's handler: the copy into the ring is blocked now; mark, and never resolve the fault. */
static void *deaths_fault_handler(void *arg)
{
    (void)arg;
    struct pollfd p = {uffd, POLLIN, 0};
    while (poll(&p, 1, -1) < 0 && errno == EINTR) {}
    struct uffd_msg msg;
    if (read(uffd, &msg, sizeof msg) != (ssize_t)sizeof msg || msg.event != UFFD_EVENT_PAGEFAULT) {
        fprintf(stderr, "deaths: no page fault read from userfaultfd\n");
        _exit(6);
    }
    char text[64];
    snprintf(text, sizeof text, "fault %d\n", (int)getpid());
    deaths_mark("phase", text);
    deaths_await_kill();
    return NULL;
}

/* n bytes whose first read faults to the handler thread (started here). */
static void *deaths_missing_buffer(long n)
{
    uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
    if (uffd < 0) uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
    struct uffdio_api api = {.api = UFFD_API};
    void *buf = mmap(NULL, (size_t)n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct uffdio_register reg = {.range = {(unsigned long)buf, (unsigned long)n}, .mode = UFFDIO_REGISTER_MODE_MISSING};
    pthread_t t;
    if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) != 0 || buf == MAP_FAILED || ioctl(uffd, UFFDIO_REGISTER, &reg) != 0 ||
        pthread_create(&t, NULL, deaths_fault_handler, NULL) != 0) {
        printf("{\"skip\": \"userfaultfd unavailable: %s\"}\n", strerror(errno));
        fflush(stdout);
        _exit(4);
    }
    return buf;
}

/* ---- the loop ---- */

static MPI_Offset deaths_slot(long i, int r) { return (MPI_Offset)nprocs * MiB + ((i % CYCLE) * nprocs + r) * block; }

static void deaths_check(int rc, const char *what)
{
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "deaths: rank %d: %s: %s\n", rank, what, msg);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc != 6) {
        if (!rank) fprintf(stderr, "usage: deaths gate|flusher|ring|gather|between DIR ITERS MARK VICTIM\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const char *mode = argv[1];
    dir = argv[2];
    const long iters = atol(argv[3]), mark = atol(argv[4]);
    const int victim = atoi(argv[5]);
    const int collective = !strcmp(mode, "gather") || !strcmp(mode, "between");
    block = collective ? 64 * 1024 : 256 * 1024;
    char text[64], path[4096];
    snprintf(text, sizeof text, "%d\n", (int)getpid());
    deaths_mark("pid", text);

    MPI_File fh;
    snprintf(path, sizeof path, "%s/data.dat", dir);
    deaths_check(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh), "open");
    unsigned char *buf = malloc(MiB);
    deaths_fill(buf, (long)rank * MiB, MiB);
    deaths_check(MPI_File_write_at_all(fh, (MPI_Offset)rank * MiB, buf, MiB, MPI_BYTE, MPI_STATUS_IGNORE), "write");
    deaths_check(MPI_File_sync(fh), "sync");
    MPI_Barrier(MPI_COMM_WORLD);
    deaths_check(MPI_File_sync(fh), "sync");
    if (!rank) deaths_mark("synced", "synced\n");

    for (long i = 0; iters < 0 || i < iters; i++) {
        const MPI_Offset off = deaths_slot(i, rank);
        void *data = buf;
        if (!strcmp(mode, "ring") && rank == victim && i == mark) data = deaths_missing_buffer(block);
        else deaths_fill(buf, (long)off, block);
        if (collective)
            deaths_check(MPI_File_write_at_all(fh, off, data, (int)block, MPI_BYTE, MPI_STATUS_IGNORE), "write_at_all");
        else
            deaths_check(MPI_File_write_at(fh, off, data, (int)block, MPI_BYTE, MPI_STATUS_IGNORE), "write_at");
        if (i + 1 == mark && (!strcmp(mode, "gate") || !strcmp(mode, "flusher"))) deaths_mark("phase", text);
        if (i + 1 == mark && collective && rank == victim) {
            deaths_mark("phase", text);
            deaths_await_kill();
        }
    }
    deaths_check(MPI_File_sync(fh), "sync");
    MPI_Barrier(MPI_COMM_WORLD);
    deaths_check(MPI_File_close(&fh), "close");
    if (!rank) printf("{\"iterations\": %ld}\n", iters);
    free(buf);
    MPI_Finalize();
    return 0;
}
