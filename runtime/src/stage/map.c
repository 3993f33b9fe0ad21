/* The node's staging area in an MPI job: created at MPI_Init in the node's shared memory (core/shm.c) and joined by
 * every process of the node. The only MPI calls of the area; area.c is MPI-free (unit tests map it themselves). */
#include "core/core.h"
#include "stage.h"

typedef struct {
    uint64_t cap, prefetch_bytes;
    uint32_t nprocs;
} map_shape_t;

static void map_init(void *map, void *arg)
{
    const map_shape_t *s = arg;
    stage_area_init(map, s->cap, s->prefetch_bytes, s->nprocs);
}

stage_area_t *stage_area_map(uint64_t cap, uint64_t prefetch_bytes, int *node_rank)
{
    MPI_Comm node;
    if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS) return NULL;
    int size = 1, world_rank = 0;
    PMPI_Comm_rank(node, node_rank);
    PMPI_Comm_size(node, &size);
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    map_shape_t s = {cap, prefetch_bytes, (uint32_t)size};
    stage_area_t *a = size <= STAGE_PROCS ? iotame_node_shared(node, stage_area_bytes(cap, prefetch_bytes), map_init, &s)
                                          : NULL; /* (the same on every process of the node) */
    PMPI_Comm_free(&node);
    int ok = a && a->magic == STAGE_MAGIC && stage_area_join(a, *node_rank, world_rank) == 0, all = 0;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD); /* staged on every node, or on none */
    return all ? a : NULL;
}
