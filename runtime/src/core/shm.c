/* Node-shared memory: one POSIX shared-memory segment per job and node, for the parts whose state the processes of
 * a node share (posix/'s segment, stage/'s area). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core.h"

/* The creator's pid of a segment name of ours ("iotame-PID-XXXXXXXX", as iotame_node_shared makes them), else 0. */
static long shm_leftover_pid(const char *name)
{
    const char *p = name + sizeof "iotame-" - 1;
    if (strncmp(name, "iotame-", p - name) != 0 || *p < '1' || *p > '9') return 0;
    char *end;
    long pid = strtol(p, &end, 10);
    if (*end != '-' || strlen(end + 1) != 8 || strspn(end + 1, "0123456789abcdef") != 8) return 0;
    return pid;
}

/* A segment is named from its creation until every process of the node has mapped it: a job that dies in that
 * window (a rank killed or failing in MPI_Init) leaves it in /dev/shm, where it holds its memory (the staging area's
 * cache_mb) until the node reboots. So the node's first process removes such leftovers of this user before it
 * creates a segment: names of ours whose creator is gone (the pid in the name), each with a warning. A creator in
 * another PID namespace that shares /dev/shm may seem gone: its job then runs without the node-shared parts, as
 * with a full /dev/shm. */
static void shm_remove_leftovers(void)
{
    DIR *d = opendir("/dev/shm");
    if (!d) return;
    struct dirent *e;
    struct stat st;
    while ((e = readdir(d))) {
        long pid = shm_leftover_pid(e->d_name);
        if (!pid || pid == (long)getpid() || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode) || st.st_uid != geteuid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0)
            iotame_log_warn("removed /dev/shm/%s (%lld MiB): a shared-memory segment of iotame left by a job that "
                            "died while it set it up (its process %ld is gone)\n", e->d_name,
                            (long long)(st.st_size >> 20), pid);
    }
    closedir(d);
}

void *iotame_node_shared(MPI_Comm node, size_t bytes, void (*init)(void *map, void *arg), void *arg)
{
    int rank = 0;
    PMPI_Comm_rank(node, &rank);
    char name[64] = "";
    void *map = MAP_FAILED;
    if (rank == 0) {
        shm_remove_leftovers();
        for (int tries = 0; tries < 8 && !name[0]; tries++) {
            unsigned r = 0;
            if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) r = (unsigned)time(NULL) * 2654435761u;
            snprintf(name, sizeof name, "/iotame-%ld-%08x", (long)getpid(), r ^ (unsigned)tries);
            int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
            if (fd < 0) {
                name[0] = '\0';
                if (errno != EEXIST) break;
                continue;
            }
            /* posix_fallocate: the pages are reserved now, so that a full /dev/shm fails here, not as SIGBUS later;
             * MAP_POPULATE (here and below): the page tables are filled now, not by faults in the first writes */
            if (ftruncate(fd, (off_t)bytes) == 0 && posix_fallocate(fd, 0, (off_t)bytes) == 0)
                map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
            close(fd);
            if (map == MAP_FAILED) {
                shm_unlink(name);
                name[0] = '\0';
                break;
            }
            if (init) init(map, arg);
        }
    }
    PMPI_Bcast(name, sizeof name, MPI_CHAR, 0, node);
    if (rank != 0 && name[0]) {
        int fd = shm_open(name, O_RDWR, 0);
        if (fd >= 0) {
            map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
            close(fd);
        }
    }
    PMPI_Barrier(node); /* every process has mapped it (or failed to) */
    if (rank == 0 && name[0]) shm_unlink(name);
    int ok = map != MAP_FAILED, all = 0;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, node);
    if (!all && map != MAP_FAILED) munmap(map, bytes);
    return all ? map : NULL;
}
