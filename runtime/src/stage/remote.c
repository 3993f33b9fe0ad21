/* Waiting for another node's flusher (aggregator caching, docs/design/aggregator-caching.md section 2): a process
 * that must see its own data cached by an aggregator of another node (an independent access after a cached
 * collective write, get_size) reads that node's ring tail through MPI one-sided communication until it passes the
 * position the aggregator reported. Every node's first process exposes its area's tail (8 bytes) in a window over
 * MPI_COMM_WORLD, locked for passive access from the start; the flusher only stores the tail, as always, and makes no
 * MPI call (a stale read delays, never lies: the tail only grows). Without hardware atomics, MPI answers the read
 * when the target process next enters the library; any MPI call makes that progress, so the wait cannot deadlock. */
#include <stdlib.h>
#include <time.h>

#include "core/core.h"
#include "stage.h"

static MPI_Win stage_tail_win = MPI_WIN_NULL;
static MPI_Comm stage_tail_comm = MPI_COMM_NULL; /* the window's: MPI_COMM_WORLD's ranks, errors returned */
static int *stage_leaders; /* the world rank of every world rank's node's first process */
static int stage_my_rank;

int stage_remote_start(stage_area_t *a, int node_rank)
{
    int np = 1, ok = 1, all = 0;
    PMPI_Comm_size(MPI_COMM_WORLD, &np);
    PMPI_Comm_rank(MPI_COMM_WORLD, &stage_my_rank);
    MPI_Comm node;
    int leader = stage_my_rank;
    if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        PMPI_Bcast(&leader, 1, MPI_INT, 0, node);
        PMPI_Comm_free(&node);
    } else {
        ok = 0;
    }
    stage_leaders = malloc((size_t)np * sizeof *stage_leaders);
    ok &= stage_leaders != NULL;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        free(stage_leaders);
        stage_leaders = NULL;
        return -1;
    }
    PMPI_Allgather(&leader, 1, MPI_INT, stage_leaders, 1, MPI_INT, MPI_COMM_WORLD);
    /* RATIONALE: a library whose one-sided component cannot serve the network fails the window's creation (Open
     * MPI 4.1's osc/rdma over TCP): that must turn caching off, never end the job. */
    ok = PMPI_Comm_dup(MPI_COMM_WORLD, &stage_tail_comm) == MPI_SUCCESS &&
         PMPI_Comm_set_errhandler(stage_tail_comm, MPI_ERRORS_RETURN) == MPI_SUCCESS;
    if (ok && PMPI_Win_create(node_rank == 0 ? (void *)&a->tail : NULL, node_rank == 0 ? sizeof a->tail : 0,
                              sizeof a->tail, MPI_INFO_NULL, stage_tail_comm, &stage_tail_win) != MPI_SUCCESS) {
        stage_tail_win = MPI_WIN_NULL;
        ok = 0;
    }
    ok = ok && PMPI_Win_set_errhandler(stage_tail_win, MPI_ERRORS_RETURN) == MPI_SUCCESS &&
         PMPI_Win_lock_all(MPI_MODE_NOCHECK, stage_tail_win) == MPI_SUCCESS;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        stage_remote_stop();
        return -1;
    }
    return 0;
}

void stage_remote_stop(void)
{
    if (stage_tail_win != MPI_WIN_NULL) {
        PMPI_Win_unlock_all(stage_tail_win);
        PMPI_Win_free(&stage_tail_win);
    }
    if (stage_tail_comm != MPI_COMM_NULL) PMPI_Comm_free(&stage_tail_comm);
    free(stage_leaders);
    stage_leaders = NULL;
}

int stage_remote_ready(void) { return stage_tail_win != MPI_WIN_NULL; }

int stage_remote_local(int world_rank) { return stage_leaders[world_rank] == stage_leaders[stage_my_rank]; }

int stage_remote_wait(int world_rank, uint64_t upto)
{
    const int leader = stage_leaders[world_rank];
    struct timespec pause = {0, 50000};
    iotame_where_mark_t mark = iotame_where_push("stage", "aggregator caching: waiting for a remote ring");
    for (;;) {
        uint64_t none = 0, tail = 0;
        if (PMPI_Fetch_and_op(&none, &tail, MPI_UINT64_T, leader, 0, MPI_NO_OP, stage_tail_win) != MPI_SUCCESS ||
            PMPI_Win_flush(leader, stage_tail_win) != MPI_SUCCESS) {
            iotame_where_pop(mark);
            return -1;
        }
        if (tail >= upto) {
            iotame_where_pop(mark);
            return 0;
        }
        iotame_where_wait(IOTAME_WAIT_REMOTE, NULL, world_rank, (int64_t)upto, (int64_t)tail);
        nanosleep(&pause, NULL);
        if (pause.tv_nsec < 10000000) pause.tv_nsec *= 2;
    }
}
