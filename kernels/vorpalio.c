/* vorpalio: the VORPAL-IO kernel (Behzad et al., SC13: the H5Block I/O calls of the VORPAL plasma code), through
 * parallel HDF5.
 *
 * The processes form a px × py × pz grid (MPI_Dims_create: px >= py >= pz; rank r sits at x = r mod px,
 * y = (r / px) mod py, z = r / (px py)), each holding one block of --block AxBxC cells (x by y by z) of a field of
 * --components components (a vector field: 3). Each of --steps time steps is one double dataset /Step#S/field of
 * shape [pz C][py B][px A][components], the union of the blocks (z slowest as in H5Block's k, j, i order; the
 * components of a cell next to each other). Each rank writes its block as one hyperslab, collectively with
 * --collective, else independently; the read phase reads it back the same way.
 *
 * Verification (see common/h5.h): the steps' datasets lie end to end in the logical space, so element (z, y, x, c)
 * of step S (global cell indices; extents X, Y, Z) is checked against the pattern at logical offset
 * ((((S Z + z) Y + y) X + x) components + c) × 8; a mismatch reads {"file": "FILE:/Step#S/field", "offset": that}.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

#define ELEM 8 /* doubles */

typedef struct {
    iotame_standard_options_t std;
    const char *block_arg;
    int64_t components, steps;
    bool collective;
} vorpal_opts_t;

typedef struct {
    hsize_t block[3]; /* cells of a block in x, y, z */
    int procs[3];     /* processes in x, y, z */
    hsize_t dims[4];  /* the dataset: [Z][Y][X][components] */
    hsize_t start[4]; /* my block in it */
    hsize_t count[4];
} vorpal_t;

/* "AxBxC" with three integers >= 1; returns 0 or -1. */
static int parse_block(const char *s, hsize_t out[3])
{
    for (int i = 0; i < 3; i++) {
        char *end;
        if (*s < '0' || *s > '9') return -1;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || v < 1 || v > (1ULL << 30)) return -1;
        out[i] = v;
        if (i < 2 && *end != 'x' && *end != 'X') return -1;
        s = end + (i < 2);
        if (i == 2 && *end) return -1;
    }
    return 0;
}

/* Fills (check false) or checks my block of step s in buf, one x row (contiguous in the logical space) at a time. */
static void rows(iotame_run_t *run, const vorpal_t *v, int64_t s, double *buf, bool check, const char *where)
{
    const hsize_t *d = v->dims, *st = v->start, *n = v->count;
    size_t row = (size_t)(n[2] * n[3]);
    for (hsize_t z = 0; z < n[0]; z++) {
        for (hsize_t y = 0; y < n[1]; y++) {
            uint64_t elem = (uint64_t)s * d[0] * d[1] * d[2] * d[3]; /* the step's base, in elements */
            elem += (((st[0] + z) * d[1] + st[1] + y) * d[2] + st[2]) * d[3];
            double *p = buf + (z * n[1] + y) * row;
            if (check) iotame_data_check(run, where, p, row * ELEM, IOTAME_H5_WRITER, elem * ELEM);
            else iotame_data_fill(run, p, row * ELEM, IOTAME_H5_WRITER, elem * ELEM);
        }
    }
}

typedef struct {
    const vorpal_opts_t *o;
    const vorpal_t *v;
    double *buf; /* my block */
} vorpal_ctx_t;

/* Writes, or reads and checks, every step (an iotame_pass_fn). Returns IOTAME_EXIT_IO on every rank when an input
 * cannot be opened. */
static int vorpal_pass(iotame_run_t *run, void *ctx, bool write)
{
    const vorpal_ctx_t *c = ctx;
    const vorpal_opts_t *o = c->o;
    const vorpal_t *v = c->v;
    double *buf = c->buf;
    const char *path = o->std.file;
    hid_t file = iotame_h5_file_begin(run, path, write);
    if (file < 0) return IOTAME_EXIT_IO;
    hid_t dxpl = iotame_h5_dxpl(o->collective);
    const hsize_t *d = v->dims;
    size_t len = (size_t)(v->count[0] * v->count[1] * v->count[2] * v->count[3]) * ELEM;
    int rc = IOTAME_EXIT_OK;
    char name[64], where[PATH_MAX + 64];
    for (int64_t s = 0; s < o->steps; s++) {
        snprintf(name, sizeof name, "Step#%lld", (long long)s);
        if (write) iotame_h5_close(iotame_h5_group_create(file, name, path), path);
        snprintf(name, sizeof name, "Step#%lld/field", (long long)s);
        snprintf(where, sizeof where, "%s:/%s", path, name);
        hid_t dset = iotame_h5_dataset_begin(run, file, write, name, H5T_NATIVE_DOUBLE, 4, d, NULL, path);
        if (dset < 0) {
            rc = IOTAME_EXIT_IO;
            break;
        }
        hid_t fspace = iotame_h5_select(dset, v->start, NULL, v->count, NULL, where);
        if (write) rows(run, v, s, buf, false, where);
        else memset(buf, 0, len);
        iotame_h5_io(write, dset, H5T_NATIVE_DOUBLE, IOTAME_H5_PACKED, fspace, dxpl, buf, where);
        if (!write) rows(run, v, s, buf, true, where);
        iotame_h5_close(fspace, where);
        iotame_h5_close(dset, where);
    }
    iotame_h5_close(dxpl, path);
    iotame_h5_file_end(file, path, write);
    return rc;
}

static int vorpal_run(iotame_run_t *run, int argc, char **argv)
{
    vorpal_opts_t o;
    const iotame_option_t opts[] = {
        IOTAME_STANDARD_OPTIONS(o.std, "iotame-vorpalio.h5"),
        {.name = "block", .type = IOTAME_OPT_STRING, .value = &o.block_arg, .def = "20x20x12",
         .help = "cells of each process's block, AxBxC in x, y, z (the paper: 100x100x60)"},
        {.name = "components", .type = IOTAME_OPT_INT, .value = &o.components, .def = "3", .min = "1",
         .max = "1024", .help = "components of the field (3: a vector field)"},
        {.name = "steps", .type = IOTAME_OPT_INT, .value = &o.steps, .def = "1", .min = "1", .max = "100000",
         .help = "time steps: one dataset /Step#S/field each (the paper: 20)"},
        {.name = "collective", .type = IOTAME_OPT_FLAG, .value = &o.collective,
         .help = "collective transfers (H5FD_MPIO_COLLECTIVE, as VORPAL-IO); default independent"},
        {0}};
    int rc = iotame_options_parse(run, opts, argc, argv);
    if (rc) return rc;
    run->seed = (uint64_t)o.std.seed;

    vorpal_t v = {0};
    if (parse_block(o.block_arg, v.block) != 0)
        return iotame_usage_error("option --block: expected AxBxC, three integers from 1 to 2^30 "
                                  "(e.g. 100x100x60), got \"%s\"", o.block_arg);
    double block_bytes = (double)v.block[0] * (double)v.block[1] * (double)v.block[2] * (double)o.components * ELEM;
    /* RATIONALE: a usage error naming the options beats an out-of-memory abort or a logical space past 2^63. */
    if (block_bytes > 64.0 * (1 << 30) || block_bytes * run->nprocs * (double)o.steps > 0x1p62)
        return iotame_usage_error("options --block, --components, --steps: %.0f bytes per process and step is too "
                                  "large", block_bytes);
    MPI_Dims_create(run->nprocs, 3, v.procs);
    int coord[3] = {run->rank % v.procs[0], run->rank / v.procs[0] % v.procs[1],
                    run->rank / (v.procs[0] * v.procs[1])};
    for (int i = 0; i < 3; i++) { /* dataset dimension 2 - i is direction i (x, y, z) */
        v.dims[2 - i] = (hsize_t)v.procs[i] * v.block[i];
        v.start[2 - i] = (hsize_t)coord[i] * v.block[i];
        v.count[2 - i] = v.block[i];
    }
    v.dims[3] = v.count[3] = (hsize_t)o.components;
    char decomp[64];
    snprintf(decomp, sizeof decomp, "%dx%dx%d", v.procs[0], v.procs[1], v.procs[2]);
    iotame_param_str(run, "decomposition", decomp);

    double *buf = iotame_alloc((size_t)block_bytes);
    uint64_t my_bytes = (uint64_t)block_bytes * (uint64_t)o.steps;
    vorpal_ctx_t c = {.o = &o, .v = &v, .buf = buf};
    rc = iotame_write_then_read(run, &o.std, my_bytes, vorpal_pass, &c);
    free(buf);
    return rc;
}

const iotame_kernel_t iotame_kernel_vorpalio = {
    .name = "vorpalio",
    .summary = "VORPAL-IO: 3-D block-structured vector field, one block per process per step, parallel HDF5",
    .run = vorpal_run,
};
