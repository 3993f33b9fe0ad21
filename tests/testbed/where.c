/* Where every rank runs: `where [VAR...]`. Rank 0 prints one JSON object: per rank its processor name
 * (MPI_Get_processor_name), gethostname, the lowest world rank of its MPI_COMM_TYPE_SHARED communicator and that
 * communicator's size, and the values of the environment variables VAR (null when unset); then the bytes moved by
 * a ring exchange of 1 MiB between neighbouring ranks, verified. The testbed's tests compile it with mpicc or
 * mpicc.openmpi. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FIELD 256

static void json_str(const char *s)
{
    if (!s) {
        printf("null");
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') putchar('\\');
        if ((unsigned char)*s >= 0x20) putchar(*s);
    }
    putchar('"');
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, len, nvars = argc - 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t row = (size_t)(3 + nvars) * FIELD;
    char *mine = calloc(1, row), *all = rank == 0 ? calloc((size_t)size, row) : NULL;
    MPI_Get_processor_name(mine, &len);
    gethostname(mine + FIELD, FIELD - 1);
    MPI_Comm node;
    int leader = rank, node_size;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Allreduce(&rank, &leader, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_size(node, &node_size);
    snprintf(mine + 2 * FIELD, FIELD, "%d %d", leader, node_size);
    for (int v = 0; v < nvars; v++) {
        const char *val = getenv(argv[1 + v]);
        if (val) snprintf(mine + (3 + v) * FIELD, FIELD, "=%s", val); /* "=": set, possibly empty */
    }
    MPI_Gather(mine, (int)row, MPI_CHAR, all, (int)row, MPI_CHAR, 0, MPI_COMM_WORLD);

    /* A ring exchange: every rank sends 1 MiB to the next and checks what the previous one sent. */
    enum { N = 1 << 20 };
    unsigned char *out = malloc(N), *in = malloc(N);
    for (int i = 0; i < N; i++) out[i] = (unsigned char)(i * 7 + rank);
    int prev = (rank + size - 1) % size, next = (rank + 1) % size, bad = 0, allbad = 0;
    MPI_Sendrecv(out, N, MPI_BYTE, next, 0, in, N, MPI_BYTE, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < N; i++) bad += in[i] != (unsigned char)(i * 7 + prev);
    MPI_Reduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);

    if (rank == 0) {
        printf("{\"nprocs\": %d, \"ring_bytes\": %d, \"ring_errors\": %d, \"ranks\": [", size, N * size, allbad);
        for (int r = 0; r < size; r++) {
            char *p = all + (size_t)r * row;
            int lead = -1, nsz = 0;
            sscanf(p + 2 * FIELD, "%d %d", &lead, &nsz);
            printf("%s{\"processor\": ", r ? ", " : "");
            json_str(p);
            printf(", \"hostname\": ");
            json_str(p + FIELD);
            printf(", \"node_leader\": %d, \"node_size\": %d, \"env\": {", lead, nsz);
            for (int v = 0; v < nvars; v++) {
                const char *val = p + (3 + v) * FIELD;
                printf("%s", v ? ", " : "");
                json_str(argv[1 + v]);
                printf(": ");
                json_str(*val == '=' ? val + 1 : NULL);
            }
            printf("}}");
        }
        printf("]}\n");
    }
    MPI_Comm_free(&node);
    free(mine), free(all), free(out), free(in);
    MPI_Finalize();
    return 0;
}
