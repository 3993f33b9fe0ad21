/* Opens each FILE collectively and prints, on rank 0, the hints MPI_File_get_info reports for it:
 * usage `print_hints [-h KEY=VALUE]... [-v KEY=VALUE]... FILE...` where -h hints go to MPI_File_open and
 * -v hints to a later MPI_File_set_view. Output: {"FILE": {"key": "value", ...}, ...}. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void add(MPI_Info info, char *kv)
{
    char *eq = strchr(kv, '=');
    if (!eq) {
        fprintf(stderr, "print_hints: expected KEY=VALUE, got %s\n", kv);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    *eq = '\0';
    MPI_Info_set(info, kv, eq + 1);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Info open_info, view_info;
    MPI_Info_create(&open_info);
    MPI_Info_create(&view_info);
    int nview = 0, first = 1;
    if (rank == 0) printf("{");
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 && i + 1 < argc) {
            add(open_info, argv[++i]);
            continue;
        }
        if (strcmp(argv[i], "-v") == 0 && i + 1 < argc) {
            add(view_info, argv[++i]);
            nview++;
            continue;
        }
        MPI_File fh;
        int rc = MPI_File_open(MPI_COMM_WORLD, argv[i], MPI_MODE_CREATE | MPI_MODE_RDWR, open_info, &fh);
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "print_hints: cannot open %s\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (nview) MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", view_info);
        MPI_Info used;
        MPI_File_get_info(fh, &used);
        int nkeys;
        MPI_Info_get_nkeys(used, &nkeys);
        if (rank == 0) printf("%s\"%s\": {", first ? "" : ", ", argv[i]);
        first = 0;
        for (int k = 0; k < nkeys; k++) {
            char key[MPI_MAX_INFO_KEY + 1], value[MPI_MAX_INFO_VAL + 1];
            int flag;
            MPI_Info_get_nthkey(used, k, key);
            MPI_Info_get(used, key, MPI_MAX_INFO_VAL, value, &flag);
            if (rank == 0) printf("%s\"%s\": \"%s\"", k ? ", " : "", key, value);
        }
        if (rank == 0) printf("}");
        MPI_Info_free(&used);
        MPI_File_close(&fh);
    }
    if (rank == 0) printf("}\n");
    MPI_Info_free(&open_info);
    MPI_Info_free(&view_info);
    MPI_Finalize();
    return 0;
}
