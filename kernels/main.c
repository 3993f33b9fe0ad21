/* iotame-kernel: one MPI program holding the I/O kernels of the papers' benchmarks.
 * `iotame-kernel KERNEL [options]` runs one; rank 0 prints its JSON result on stdout. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"

static const iotame_kernel_t *const kernels[] = {
    &iotame_kernel_ior,
#ifndef IOTAME_NO_HDF5 /* the HDF5 kernels (kernels/CMakeLists.txt) */
    &iotame_kernel_vpicio,
    &iotame_kernel_flashio,
    &iotame_kernel_vorpalio,
    &iotame_kernel_gcrmio,
#endif
    &iotame_kernel_matrix,
    &iotame_kernel_noncontig,
    &iotame_kernel_tileio,
    &iotame_kernel_btio,
    &iotame_kernel_madbench,
    &iotame_kernel_iobench,
    &iotame_kernel_spio,
    &iotame_kernel_beffio,
    &iotame_kernel_phases,
    &iotame_kernel_replay,
    &iotame_kernel_netprobe, /* not an I/O benchmark: the network part of iotame calibrate */
    &iotame_kernel_sigprobe, /* collective call signatures: the strategies part of iotame calibrate */
};
#define NKERNELS (sizeof kernels / sizeof kernels[0])

static void usage(FILE *out)
{
    fprintf(out, "usage: iotame-kernel KERNEL [options]   (KERNEL --help lists its options)\n"
                 "       iotame-kernel --list\n\nkernels:\n");
    for (size_t i = 0; i < NKERNELS; i++) fprintf(out, "  %-10s %s\n", kernels[i]->name, kernels[i]->summary);
}

static const iotame_kernel_t *find(const char *name)
{
    for (size_t i = 0; i < NKERNELS; i++)
        if (strcmp(kernels[i]->name, name) == 0) return kernels[i];
    return NULL;
}

/* Everything but running a kernel: --list, --help, usage errors. Rank 0 prints; returns the exit status. */
static int no_kernel(int rank, int argc, char **argv)
{
    const char *arg = argc >= 2 ? argv[1] : NULL;
    bool list = arg && strcmp(arg, "--list") == 0;
    bool help = arg && (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0);
    if (rank == 0) {
        if (list) {
            for (size_t i = 0; i < NKERNELS; i++) printf("%s\n", kernels[i]->name);
        } else if (help) {
            usage(stdout);
        } else {
            if (arg) fprintf(stderr, "iotame-kernel: unknown kernel \"%s\"\n", arg);
            usage(stderr);
        }
    }
    return list || help ? 0 : 2;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, rc;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const iotame_kernel_t *k = argc >= 2 ? find(argv[1]) : NULL;
    if (!k) {
        rc = no_kernel(rank, argc, argv);
    } else {
        iotame_run_t run;
        iotame_run_init(&run, k->name, k->summary, MPI_COMM_WORLD);
        rc = k->run(&run, argc - 1, argv + 1);
        /* All ranks leave the same way, even if a kernel failed on some ranks only. */
        MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (rc == IOTAME_EXIT_OK) rc = iotame_run_finish(&run);
        else if (rc == IOTAME_EXIT_HELP) rc = IOTAME_EXIT_OK;
        iotame_run_free(&run);
    }
    fflush(stdout);
    MPI_Finalize();
    return rc;
}
