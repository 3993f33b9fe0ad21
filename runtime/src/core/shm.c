/* Node-shared memory: one POSIX shared-memory segment per job and node, for the parts whose state the processes of
 * a node share (posix/'s segment, stage/'s area). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "core.h"

void *iotame_node_shared(MPI_Comm node, size_t bytes, void (*init)(void *map, void *arg), void *arg)
{
    int rank = 0;
    PMPI_Comm_rank(node, &rank);
    char name[64] = "";
    void *map = MAP_FAILED;
    if (rank == 0) {
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
