/* netprobe: not an I/O benchmark. The network part of a machine profile (`iotame calibrate`, docs/calibrate.md):
 * ping-pong latency and bandwidth between two ranks of one node and two ranks of different nodes (nodes from
 * MPI_Comm_split_type SHARED), and the time of the collectives the collective strategies use at this job's layout:
 * MPI_Allgather of 9 int64 per rank (what the collective router gathers) and MPI_Alltoallv at a few per-pair sizes.
 *
 * Every point is --warmup untimed rounds, then --reps timed ones; the median is reported. A ping-pong round is one
 * round trip timed by the sender; its one-way time is half of it. A collective round starts after a barrier and
 * lasts until the slowest rank leaves the call. Every message's contents are checked (outside the timed part),
 * which is what "verified" says.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

#define NETPROBE_GATHER_INTS 9 /* int64 per rank of the collective router's allgather */

static const int64_t netprobe_pingpong_sizes[] = {8, 64 << 10, 4 << 20};
static const int64_t netprobe_alltoallv_sizes[] = {64, 4 << 10, 64 << 10, 1 << 20};
#define NETPROBE_NPP (int)(sizeof netprobe_pingpong_sizes / sizeof netprobe_pingpong_sizes[0])
#define NETPROBE_NA2A (int)(sizeof netprobe_alltoallv_sizes / sizeof netprobe_alltoallv_sizes[0])
/* An alltoallv size is skipped when one rank's send buffer would exceed this. */
#define NETPROBE_A2A_MAX_BYTES ((int64_t)64 << 20)

typedef struct {
    int64_t reps, warmup;
    int *node_of;   /* world rank -> node index (0.. in the order of the nodes' lowest world ranks) */
    int nnodes, max_ppn;
    int *node_size; /* processes per node */
} netprobe_t;

static unsigned char netprobe_byte(int64_t round, int64_t size, int from, int to, int64_t i)
{
    return (unsigned char)(round * 31 + size * 7 + from * 13 + to * 5 + i * 11 + (i >> 9));
}

static void netprobe_fill(unsigned char *buf, int64_t len, int64_t round, int64_t size, int from, int to)
{
    for (int64_t i = 0; i < len; i++) buf[i] = netprobe_byte(round, size, from, to, i);
}

/* Counts the bytes as verified; records the first wrong one (its index as the offset). */
static void netprobe_check(iotame_run_t *run, const char *what, const unsigned char *buf, int64_t len, int64_t round,
                           int64_t size, int from, int to)
{
    for (int64_t i = 0; i < len; i++) {
        unsigned char want = netprobe_byte(round, size, from, to, i);
        if (buf[i] != want) {
            iotame_verify_record(run, what, (uint64_t)i, want, buf[i]);
            break;
        }
    }
    iotame_verify_count(run, (uint64_t)len);
}

static int netprobe_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double netprobe_median(double *v, int64_t n)
{
    qsort(v, (size_t)n, sizeof *v, netprobe_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The node of every world rank and the node sizes, from the shared-memory split. */
static void netprobe_nodes(iotame_run_t *run, netprobe_t *p)
{
    MPI_Comm node;
    int leader = run->rank; /* a node is named by its lowest world rank */
    MPI_Comm_split_type(run->comm, MPI_COMM_TYPE_SHARED, run->rank, MPI_INFO_NULL, &node);
    MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    int *leaders = malloc(sizeof(int) * (size_t)run->nprocs);
    p->node_of = malloc(sizeof(int) * (size_t)run->nprocs);
    p->node_size = calloc((size_t)run->nprocs, sizeof(int));
    if (!leaders || !p->node_of || !p->node_size) iotame_fatal("out of memory");
    MPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, run->comm);
    p->nnodes = 0;
    for (int r = 0; r < run->nprocs; r++) {
        if (leaders[r] == r) p->node_of[r] = p->nnodes++;
        else p->node_of[r] = p->node_of[leaders[r]];
        p->node_size[p->node_of[r]]++;
    }
    p->max_ppn = 0;
    for (int n = 0; n < p->nnodes; n++) p->max_ppn = p->node_size[n] > p->max_ppn ? p->node_size[n] : p->max_ppn;
    free(leaders);
}

/* The pair measured: same node (intra) or different nodes (inter); the lowest such pair, rank 0's when it can be.
 * Returns false when the layout has none. */
static bool netprobe_pair(const iotame_run_t *run, const netprobe_t *p, bool intra, int pair[2])
{
    for (int a = 0; a < run->nprocs; a++)
        for (int b = a + 1; b < run->nprocs; b++)
            if ((p->node_of[a] == p->node_of[b]) == intra) {
                pair[0] = a, pair[1] = b;
                return true;
            }
    return false;
}

/* One-way microseconds (median) of ping-pong rounds of `size` bytes between pair[0] and pair[1]; 0 elsewhere. */
static double netprobe_pingpong(iotame_run_t *run, const netprobe_t *p, const int pair[2], int64_t size,
                                unsigned char *sbuf, unsigned char *rbuf, double *times)
{
    int me = run->rank == pair[0] ? 0 : run->rank == pair[1] ? 1 : -1;
    MPI_Barrier(run->comm);
    if (me < 0) return 0.0;
    int peer = pair[1 - me];
    const char *what = "netprobe ping-pong message";
    for (int64_t round = -p->warmup; round < p->reps; round++) {
        if (me == 0) {
            netprobe_fill(sbuf, size, round, size, pair[0], pair[1]);
            double t0 = MPI_Wtime();
            MPI_Send(sbuf, (int)size, MPI_BYTE, peer, 0, run->comm);
            MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, 0, run->comm, MPI_STATUS_IGNORE);
            double t = MPI_Wtime() - t0;
            if (round >= 0) times[round] = t / 2 * 1e6;
            netprobe_check(run, what, rbuf, size, round, size, pair[0], pair[1]); /* the echo */
        } else {
            MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, 0, run->comm, MPI_STATUS_IGNORE);
            MPI_Send(rbuf, (int)size, MPI_BYTE, peer, 0, run->comm);
            netprobe_check(run, what, rbuf, size, round, size, pair[0], pair[1]);
        }
    }
    return me == 0 ? netprobe_median(times, p->reps) : 0.0;
}

/* {"ranks": [a, b], "points": [[bytes, one-way us, MB/s], ...]} of one pair, or null when the layout has none. */
static json_t *netprobe_pair_section(iotame_run_t *run, const netprobe_t *p, bool intra, unsigned char *sbuf,
                                     unsigned char *rbuf, double *times)
{
    int pair[2];
    if (!netprobe_pair(run, p, intra, pair)) return json_null();
    double us[NETPROBE_NPP];
    for (int i = 0; i < NETPROBE_NPP; i++)
        us[i] = netprobe_pingpong(run, p, pair, netprobe_pingpong_sizes[i], sbuf, rbuf, times);
    /* The pair's first rank has the times; everyone else has zeros. */
    MPI_Allreduce(MPI_IN_PLACE, us, NETPROBE_NPP, MPI_DOUBLE, MPI_MAX, run->comm);
    json_t *points = json_array();
    for (int i = 0; i < NETPROBE_NPP; i++) {
        int64_t size = netprobe_pingpong_sizes[i];
        json_array_append_new(points, json_pack("[I, f, f]", (json_int_t)size, us[i],
                                                us[i] > 0 ? (double)size / us[i] : 0.0)); /* bytes/us = MB/s */
    }
    return json_pack("{s: [i, i], s: o}", "ranks", pair[0], pair[1], "points", points);
}

/* Median microseconds of MPI_Allgather of 9 int64 per rank, contents checked. */
static double netprobe_allgather(iotame_run_t *run, const netprobe_t *p, double *times)
{
    int64_t mine[NETPROBE_GATHER_INTS];
    int64_t *all = malloc(sizeof(int64_t) * NETPROBE_GATHER_INTS * (size_t)run->nprocs);
    if (!all) iotame_fatal("out of memory");
    for (int64_t round = -p->warmup; round < p->reps; round++) {
        for (int j = 0; j < NETPROBE_GATHER_INTS; j++) mine[j] = round * 1000003 + run->rank * 97 + j;
        MPI_Barrier(run->comm);
        double t0 = MPI_Wtime();
        MPI_Allgather(mine, NETPROBE_GATHER_INTS, MPI_INT64_T, all, NETPROBE_GATHER_INTS, MPI_INT64_T, run->comm);
        double t = MPI_Wtime() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, run->comm);
        if (round >= 0) times[round] = t * 1e6;
        for (int r = 0; r < run->nprocs; r++)
            for (int j = 0; j < NETPROBE_GATHER_INTS; j++) {
                int64_t want = round * 1000003 + r * 97 + j;
                if (all[r * NETPROBE_GATHER_INTS + j] != want) {
                    iotame_verify_record(run, "netprobe allgather", (uint64_t)(r * NETPROBE_GATHER_INTS + j),
                                         (int)(want & 0xff), (int)(all[r * NETPROBE_GATHER_INTS + j] & 0xff));
                }
            }
        iotame_verify_count(run, sizeof(int64_t) * NETPROBE_GATHER_INTS * (uint64_t)run->nprocs);
    }
    free(all);
    return netprobe_median(times, p->reps);
}

/* Median microseconds of MPI_Alltoallv with `size` bytes from every rank to every rank, contents checked. */
static double netprobe_alltoallv(iotame_run_t *run, const netprobe_t *p, int64_t size, double *times)
{
    size_t n = (size_t)run->nprocs;
    unsigned char *sbuf = malloc((size_t)size * n), *rbuf = malloc((size_t)size * n);
    int *counts = malloc(sizeof(int) * n), *displs = malloc(sizeof(int) * n);
    if (!sbuf || !rbuf || !counts || !displs) iotame_fatal("out of memory");
    for (size_t r = 0; r < n; r++) counts[r] = (int)size, displs[r] = (int)(size * (int64_t)r);
    for (int64_t round = -p->warmup; round < p->reps; round++) {
        for (size_t r = 0; r < n; r++) netprobe_fill(sbuf + displs[r], size, round, size, run->rank, (int)r);
        MPI_Barrier(run->comm);
        double t0 = MPI_Wtime();
        MPI_Alltoallv(sbuf, counts, displs, MPI_BYTE, rbuf, counts, displs, MPI_BYTE, run->comm);
        double t = MPI_Wtime() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, run->comm);
        if (round >= 0) times[round] = t * 1e6;
        for (size_t r = 0; r < n; r++)
            netprobe_check(run, "netprobe alltoallv", rbuf + displs[r], size, round, size, (int)r, run->rank);
    }
    free(sbuf), free(rbuf), free(counts), free(displs);
    return netprobe_median(times, p->reps);
}

static int netprobe_run(iotame_run_t *run, int argc, char **argv)
{
    netprobe_t p = {0};
    const iotame_option_t opts[] = {
        {.name = "reps", .type = IOTAME_OPT_INT, .value = &p.reps, .def = "20", .min = "1", .max = "100000",
         .help = "timed rounds per point (the median is reported)"},
        {.name = "warmup", .type = IOTAME_OPT_INT, .value = &p.warmup, .def = "3", .min = "0", .max = "1000",
         .help = "untimed rounds before each point"},
        {0}};
    int rc = iotame_options_parse(run, opts, argc, argv);
    if (rc) return rc;
    double *times = malloc(sizeof(double) * (size_t)p.reps);
    unsigned char *sbuf = malloc((size_t)netprobe_pingpong_sizes[NETPROBE_NPP - 1]);
    unsigned char *rbuf = malloc((size_t)netprobe_pingpong_sizes[NETPROBE_NPP - 1]);
    if (!times || !sbuf || !rbuf) iotame_fatal("out of memory");
    netprobe_nodes(run, &p);

    json_t *sizes = json_array();
    for (int n = 0; n < p.nnodes; n++) json_array_append_new(sizes, json_integer(p.node_size[n]));
    json_t *pingpong = json_pack("{s: o, s: o}", "intra", netprobe_pair_section(run, &p, true, sbuf, rbuf, times),
                                 "inter", netprobe_pair_section(run, &p, false, sbuf, rbuf, times));
    json_t *allgather = json_array();
    json_array_append_new(allgather, json_pack("[i, i, f]", run->nprocs, (int)(NETPROBE_GATHER_INTS * 8),
                                               netprobe_allgather(run, &p, times)));
    json_t *alltoallv = json_array();
    for (int i = 0; i < NETPROBE_NA2A; i++) {
        int64_t size = netprobe_alltoallv_sizes[i];
        if (size * run->nprocs > NETPROBE_A2A_MAX_BYTES) break;
        json_array_append_new(alltoallv, json_pack("[i, I, f]", run->nprocs, (json_int_t)size,
                                                   netprobe_alltoallv(run, &p, size, times)));
    }
    json_object_set_new(run->result, "nodes", json_pack("{s: i, s: i, s: o}", "count", p.nnodes,
                                                        "processes_per_node", p.max_ppn, "sizes", sizes));
    json_object_set_new(run->result, "pingpong", pingpong);
    json_object_set_new(run->result, "allgather", allgather);
    json_object_set_new(run->result, "alltoallv", alltoallv);
    free(times), free(sbuf), free(rbuf), free(p.node_of), free(p.node_size);
    return IOTAME_EXIT_OK;
}

const iotame_kernel_t iotame_kernel_netprobe = {
    .name = "netprobe",
    .summary = "not an I/O benchmark: ping-pong within and between nodes, allgather and alltoallv times "
               "(iotame calibrate's network part)",
    .run = netprobe_run,
};
