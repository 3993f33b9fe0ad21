/* The environment of a routed handle that the strategies share (iotame_coll_env_t): what the file system is (local
 * disk file systems, the readahead a sequential reader gets), the node topology (MPI_COMM_TYPE_SHARED groups or
 * virtual nodes) with the aggregator order ROMIO's default cb_config_list "*:1" gives, the file's hints, its
 * striping over storage targets (from the POSIX layer, where the throttle reads it too), and the shadow handle that
 * engine strategies do their I/O through. Set up lazily: a handle whose calls only ever go to
 * the library never pays for nodes, hints or the shadow handle. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "posix/posix.h"
#include "shadow_path.h"
#include "strategy.h"

int iotame_coll_write_sieving(void)
{
    static int sieving = -1;
    if (sieving < 0) {
        char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
        int len = 0;
        PMPI_Get_library_version(version, &len);
        const char *io = getenv("OMPI_MCA_io"); /* Open MPI's io component: ompio unless romio is asked for */
        sieving = !strstr(version, "Open MPI") ||
                  (io && (io[0] == '^' ? strstr(io, "ompio") != NULL : strstr(io, "romio") != NULL));
    }
    return sieving;
}

/* Bytes the kernel reads ahead of a sequential reader of a file on device dev: its disk's read_ahead_kb (a
 * partition's is its disk's), else its file system's backing device's (NFS, FUSE); 0 when unknown (tmpfs, a parallel
 * file system's client, which has its own settings). */
static int64_t env_readahead(dev_t dev)
{
    static const char *const where[] = {"/sys/dev/block/%u:%u/queue/read_ahead_kb",
                                        "/sys/dev/block/%u:%u/../queue/read_ahead_kb",
                                        "/sys/class/bdi/%u:%u/read_ahead_kb"};
    for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) {
        char name[128];
        snprintf(name, sizeof name, where[i], major(dev), minor(dev));
        FILE *in = fopen(name, "r");
        long kb = -1;
        if (in && fscanf(in, "%ld", &kb) != 1) kb = -1;
        if (in) fclose(in);
        if (kb >= 0) return (int64_t)kb * 1024;
    }
    return 0;
}

int64_t iotame_coll_readahead(const char *path)
{
    struct stat st;
    return stat(iotame_posix_path(path), &st) == 0 ? env_readahead(st.st_dev) : 0;
}

void iotame_coll_file_facts(const char *path, int romio, iotame_coll_file_facts_t *out)
{
    const uint64_t xfs = 0x58465342;
    iotame_posix_layout_t l;
    struct stat st;
    *out = (iotame_coll_file_facts_t){.targets = 1};
    if (iotame_posix_layout(path, &l, &st) != 0) return;
    out->shadow_ufs = strlen(path) + 4 < IOTAME_COLL_SHADOW_PATH_MAX &&
                      iotame_coll_shadow_ufs(path, l.fs_type, l.from == IOTAME_POSIX_FROM_CEPHFS, romio);
    /* A file striped over several targets by a layout hook (the emulated storage) behaves as on the parallel file
     * system it models, whatever file system holds its bytes. */
    out->local_fs = l.count <= 1 && (l.fs_type == xfs || iotame_coll_ufs_only_fs(l.fs_type));
    out->readahead = env_readahead(st.st_dev);
    out->block = st.st_blksize > 0 ? (int64_t)st.st_blksize : 0;
    /* A file system's own layout counts with one stripe too; elsewhere one stripe is no layout. */
    if (l.from == IOTAME_POSIX_FROM_LUSTRE || l.from == IOTAME_POSIX_FROM_CEPHFS || (l.count > 1 && l.unit > 0)) {
        out->targets = l.count;
        out->unit = l.unit;
        out->from = l.from;
    }
}

/* ---- the engine's options ---- */

const char *const iotame_coll_engine_options[] = {"virtual_node_size", NULL};

void iotame__coll_env_options(iotame_coll_env_t *e, const iotame_file_config_t *fc)
{
    const iotame_coll_options_t o = {fc, iotame_coll_engine_options};
    e->virtual_node_size = iotame_coll_option_int(&o, "virtual_node_size", 0);
}

/* Nodes (MPI_COMM_TYPE_SHARED, or virtual nodes of virtual_node_size ranks), numbered by their first rank, and
 * the aggregator order: the first rank of every node, then the second, ... Collective over env->comm. */
static int setup_nodes(iotame_coll_env_t *e)
{
    MPI_Comm node;
    int rc = e->virtual_node_size > 0
                 ? PMPI_Comm_split(e->comm, (int)(e->rank / e->virtual_node_size), e->rank, &node)
                 : PMPI_Comm_split_type(e->comm, MPI_COMM_TYPE_SHARED, e->rank, MPI_INFO_NULL, &node);
    if (rc != MPI_SUCCESS) return -EIO;
    int leader = e->rank, *leaders = malloc((size_t)e->nprocs * sizeof *leaders);
    PMPI_Allreduce(&e->rank, &leader, 1, MPI_INT, MPI_MIN, node);
    PMPI_Comm_free(&node);
    int ok = leaders != NULL, all = 0;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, e->comm);
    if (!all) {
        free(leaders);
        return -ENOMEM;
    }
    PMPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, e->comm);
    int *node_of = malloc((size_t)e->nprocs * sizeof *node_of), *spread = malloc((size_t)e->nprocs * sizeof *spread);
    int *local = calloc((size_t)e->nprocs, sizeof *local), *count = calloc((size_t)e->nprocs, sizeof *count);
    e->node_of = node_of;
    e->spread = spread;
    if (!node_of || !spread || !local || !count) {
        free(leaders), free(local), free(count);
        return -ENOMEM; /* every rank allocates alike; a failure here is agreed by the caller */
    }
    e->nnodes = 0;
    for (int r = 0; r < e->nprocs; r++) {
        if (leaders[r] == r) node_of[r] = e->nnodes++;
        else node_of[r] = node_of[leaders[r]];
        local[r] = count[node_of[r]]++;
    }
    int k = 0;
    for (int i = 0; k < e->nprocs; i++)
        for (int n = 0; n < e->nnodes; n++)
            for (int r = 0; r < e->nprocs; r++)
                if (node_of[r] == n && local[r] == i) spread[k++] = r;
    free(leaders), free(local), free(count);
    return 0;
}

int iotame_coll_count_nodes(MPI_Comm comm, int rank, int64_t virtual_node_size)
{
    MPI_Comm node;
    int rc = virtual_node_size > 0 ? PMPI_Comm_split(comm, (int)(rank / virtual_node_size), rank, &node)
                                   : PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int node_rank = 1, leaders = 0;
    if (rc == MPI_SUCCESS) {
        PMPI_Comm_rank(node, &node_rank);
        PMPI_Comm_free(&node);
    }
    int leader = node_rank == 0;
    PMPI_Allreduce(&leader, &leaders, 1, MPI_INT, MPI_SUM, comm);
    return leaders > 0 ? leaders : 1;
}

static int64_t info_int(MPI_Info info, const char *key, int64_t dflt)
{
    char value[64];
    int flag = 0;
    if (info == MPI_INFO_NULL || PMPI_Info_get(info, key, sizeof value - 1, value, &flag) != MPI_SUCCESS || !flag)
        return dflt;
    char *end;
    long long v = strtoll(value, &end, 10);
    return end != value && v > 0 ? (int64_t)v : dflt;
}

void iotame__coll_env_hints(iotame_coll_env_t *e, MPI_File fh)
{
    MPI_Info info = MPI_INFO_NULL;
    PMPI_File_get_info(fh, &info);
    e->cb_buffer_size = info_int(info, "cb_buffer_size", 16777216);
    e->cb_nodes = info_int(info, "cb_nodes", e->nnodes);
    e->striping_unit = info_int(info, "striping_unit", 0);
    e->striping_factor = info_int(info, "striping_factor", 0);
    if (info != MPI_INFO_NULL) PMPI_Info_free(&info);
    e->hints_stale = 0;
}

/* A message of ours lost in the set-up before its agreement (when the call had lost none before it: a call that did
 * fails anyway, core.h), as a negated class for the agreement's MPI_MIN. */
static int64_t setup_lost_mine(int before)
{
    return before == MPI_SUCCESS ? -(int64_t)iotame_msg_error_class(iotame_msg_error_peek()) : 0;
}

/* The set-up's messages, lost on any rank, make every rank give the file to the library (-EPROTO, e->lost). The one
 * reduction's own message, lost on one rank only, stays recorded for the router: the call then fails on every rank. */
int iotame_coll_engine_setup(iotame_coll_env_t *e, void *state)
{
    if (e->shadow != MPI_FILE_NULL) return 0; /* another engine strategy set it up */
    const int before = iotame_msg_error_peek();
    int nodes = setup_nodes(e) == 0, all = 0;
    if (nodes) iotame__coll_env_hints(e, e->fh);
    char prefixed[IOTAME_COLL_SHADOW_PATH_MAX]; /* "ufs:" + the path where the open agreed so (shadow_path.h) */
    const char *path = e->path;
    if (e->shadow_ufs && snprintf(prefixed, sizeof prefixed, "ufs:%s", e->path) < (int)sizeof prefixed) path = prefixed;
    int rw = (e->amode & MPI_MODE_RDONLY) ? MPI_MODE_RDONLY : MPI_MODE_RDWR;
    int ok = nodes && PMPI_File_open(e->comm, path, rw, MPI_INFO_NULL, &e->shadow) == MPI_SUCCESS;
    int64_t mine[2] = {ok, setup_lost_mine(before)}, agreed[2];
    PMPI_Allreduce(mine, agreed, 2, MPI_INT64_T, MPI_MIN, e->comm); /* the one reduction */
    e->lost = (int)-agreed[1];
    all = agreed[0] == 1 && !e->lost;
    if (e->set_up) e->set_up(e, e->set_up_arg); /* the strategies of the handle learn the facts (target_aligned) */
    if (all) return 0;
    if (e->lost && agreed[0] == 1) PMPI_File_close(&e->shadow); /* open on every rank: closed by every rank */
    if (e->lost) return -EPROTO;
    /* A handle opened on some ranks only is left open: closing it is collective. */
    return nodes ? -EACCES : -ENOMEM;
}

void iotame_coll_engine_teardown(iotame_coll_env_t *e, void *state)
{
    if (e->shadow != MPI_FILE_NULL) PMPI_File_close(&e->shadow);
}

void iotame__coll_env_free(iotame_coll_env_t *e)
{
    if (e->comm != MPI_COMM_NULL) PMPI_Comm_free(&e->comm);
    free((int *)e->node_of);
    free((int *)e->spread);
    e->node_of = e->spread = NULL;
}

/* ---- file access through the shadow handle ---- */

void iotame__coll_shadow_io(iotame_coll_call_t *c, int write, int64_t off, char *buf, int64_t len)
{
    while (len > 0) {
        const int n = (int)(len < ((int64_t)1 << 30) ? len : (int64_t)1 << 30); /* one MPI count at a time */
        MPI_Status st;
        int rc = write ? PMPI_File_write_at(c->env->shadow, off, buf, n, MPI_BYTE, &st)
                       : PMPI_File_read_at(c->env->shadow, off, buf, n, MPI_BYTE, &st);
        if (rc != MPI_SUCCESS) {
            if (c->mpi_error == MPI_SUCCESS) c->mpi_error = rc;
            return;
        }
        int got = 0;
        PMPI_Get_count(&st, MPI_BYTE, &got);
        /* RATIONALE: OMPIO (Open MPI 4.1) returns MPI_SUCCESS when pwrite fails (EFBIG, ENOSPC) and says so only
         * in the status: a write that moved less than asked failed, and the call fails on every rank. */
        if (write && got != n) {
            if (c->mpi_error == MPI_SUCCESS) c->mpi_error = MPI_ERR_IO;
            return;
        }
        if (!write && got < n) {
            /* end of file: what lies beyond reads as zeros. OMPIO also returns MPI_SUCCESS and fewer bytes when
             * pread fails: a read that stops short of the file's end failed. */
            const int64_t end = off + (got > 0 ? got : 0);
            MPI_Offset size = 0;
            if (PMPI_File_get_size(c->env->shadow, &size) != MPI_SUCCESS || end < (int64_t)size) {
                if (c->mpi_error == MPI_SUCCESS) c->mpi_error = MPI_ERR_IO;
                return;
            }
            memset(buf + (got > 0 ? got : 0), 0, (size_t)(len - (got > 0 ? got : 0)));
            return;
        }
        off += n;
        buf += n;
        len -= n;
    }
}
