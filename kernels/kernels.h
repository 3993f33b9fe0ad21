/* The kernel table type of iotame-kernel and the list of kernels. A kernel is one file exporting one const table:
 *
 *   const iotame_kernel_t iotame_kernel_ior = {.name = "ior", .summary = "...", .run = ior_run};
 *
 * .run gets the run (rank, nprocs, params, phases) and argv with argv[0] = the kernel name. It returns
 * IOTAME_EXIT_OK when the result should be printed, or another IOTAME_EXIT_* status (see common/run.h); every rank
 * must return, main() takes the maximum over ranks. To add a kernel: declare it below and list it in main.c. */
#ifndef IOTAME_KERNELS_KERNELS_H
#define IOTAME_KERNELS_KERNELS_H

#include "common/common.h"

typedef struct iotame_kernel {
    const char *name;    /* the command-line name */
    const char *summary; /* one line: the benchmark and what it does */
    int (*run)(iotame_run_t *run, int argc, char **argv);
} iotame_kernel_t;

extern const iotame_kernel_t iotame_kernel_ior;
extern const iotame_kernel_t iotame_kernel_vpicio;
extern const iotame_kernel_t iotame_kernel_flashio;
extern const iotame_kernel_t iotame_kernel_vorpalio;
extern const iotame_kernel_t iotame_kernel_gcrmio;
extern const iotame_kernel_t iotame_kernel_matrix;
extern const iotame_kernel_t iotame_kernel_noncontig;
extern const iotame_kernel_t iotame_kernel_tileio;
extern const iotame_kernel_t iotame_kernel_btio;
extern const iotame_kernel_t iotame_kernel_madbench;
extern const iotame_kernel_t iotame_kernel_iobench;
extern const iotame_kernel_t iotame_kernel_spio;
extern const iotame_kernel_t iotame_kernel_beffio;
extern const iotame_kernel_t iotame_kernel_phases;
extern const iotame_kernel_t iotame_kernel_replay;
extern const iotame_kernel_t iotame_kernel_netprobe;
extern const iotame_kernel_t iotame_kernel_sigprobe;

#endif
