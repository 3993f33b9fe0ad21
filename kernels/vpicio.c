/* vpicio: the VPIC-IO kernel (Behzad et al., SC13: the H5Part I/O calls of the VPIC plasma code; h5bench's
 * vpic-io), through parallel HDF5.
 *
 * Each of --steps time steps is a group /Step#S holding eight one-dimensional datasets, one per particle variable,
 * in the order x, y, z, id1, id2, px, py, pz (32-bit floats; id1 and id2 32-bit ints), of --particles × nprocs
 * elements. Rank r writes elements [r × particles, (r + 1) × particles) of every dataset (rank-contiguous
 * hyperslabs), collectively with --collective, else independently; the read phase reads them back the same way.
 *
 * Verification (see common/h5.h): the datasets lie end to end in the logical space in the order above, step after
 * step, so element e of variable v in step S is checked against the pattern at logical offset
 * ((S × 8 + v) × particles × nprocs + e) × 4; a mismatch reads {"file": "FILE:/Step#S/VAR", "offset": that}.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

#define NVARS 8
#define ELEM 4 /* bytes of every variable: float or int32 */

static const struct {
    const char *name;
    bool is_int;
} vars[NVARS] = {{"x", false},  {"y", false},  {"z", false},  {"id1", true},
                 {"id2", true}, {"px", false}, {"py", false}, {"pz", false}};

typedef struct {
    iotame_standard_options_t std;
    int64_t particles, steps;
    bool collective;
} vpic_opts_t;

typedef struct {
    const vpic_opts_t *o;
    void *buf; /* one variable of my particles */
} vpic_ctx_t;

/* One pass (an iotame_pass_fn) over every step and variable: create and write (write) or open, read and check.
 * Returns IOTAME_EXIT_IO on every rank when the file or a dataset could not be opened for reading. */
static int vpic_pass(iotame_run_t *run, void *ctx, bool write)
{
    const vpic_ctx_t *c = ctx;
    const vpic_opts_t *o = c->o;
    void *buf = c->buf;
    const char *path = o->std.file;
    hid_t file = iotame_h5_file_begin(run, path, write);
    if (file < 0) return IOTAME_EXIT_IO;
    hid_t dxpl = iotame_h5_dxpl(o->collective);
    hsize_t total = (hsize_t)o->particles * (hsize_t)run->nprocs;
    hsize_t start = (hsize_t)o->particles * (hsize_t)run->rank, count = (hsize_t)o->particles;
    size_t len = (size_t)o->particles * ELEM;
    int rc = IOTAME_EXIT_OK;
    char where[PATH_MAX + 64], name[64];
    for (int64_t s = 0; rc == IOTAME_EXIT_OK && s < o->steps; s++) {
        snprintf(name, sizeof name, "Step#%lld", (long long)s);
        if (write) iotame_h5_close(iotame_h5_group_create(file, name, path), path);
        for (int v = 0; v < NVARS; v++) {
            hid_t type = vars[v].is_int ? H5T_NATIVE_INT32 : H5T_NATIVE_FLOAT;
            uint64_t logical = ((uint64_t)s * NVARS + (uint64_t)v) * total * ELEM + start * ELEM;
            snprintf(name, sizeof name, "Step#%lld/%s", (long long)s, vars[v].name);
            snprintf(where, sizeof where, "%s:/%s", path, name);
            hid_t dset = iotame_h5_dataset_begin(run, file, write, name, type, 1, &total, NULL, path);
            if (dset < 0) {
                rc = IOTAME_EXIT_IO;
                break;
            }
            hid_t fspace = iotame_h5_select(dset, &start, NULL, &count, NULL, where);
            if (write) iotame_data_fill(run, buf, len, IOTAME_H5_WRITER, logical);
            else memset(buf, 0, len);
            iotame_h5_io(write, dset, type, IOTAME_H5_PACKED, fspace, dxpl, buf, where);
            if (!write) iotame_data_check(run, where, buf, len, IOTAME_H5_WRITER, logical);
            iotame_h5_close(fspace, where);
            iotame_h5_close(dset, where);
        }
    }
    iotame_h5_close(dxpl, path);
    iotame_h5_file_end(file, path, write);
    return rc;
}

static int vpic_run(iotame_run_t *run, int argc, char **argv)
{
    vpic_opts_t o;
    const iotame_option_t opts[] = {
        IOTAME_STANDARD_OPTIONS(o.std, "iotame-vpicio.h5"),
        {.name = "particles", .type = IOTAME_OPT_INT, .value = &o.particles, .def = "65536", .min = "1",
         .help = "particles per process (the paper: 8388608)"},
        {.name = "steps", .type = IOTAME_OPT_INT, .value = &o.steps, .def = "1", .min = "1", .max = "100000",
         .help = "time steps: one group /Step#S of eight datasets each"},
        {.name = "collective", .type = IOTAME_OPT_FLAG, .value = &o.collective,
         .help = "collective transfers (H5FD_MPIO_COLLECTIVE); default independent"},
        {0}};
    int rc = iotame_options_parse(run, opts, argc, argv);
    if (rc) return rc;
    run->seed = (uint64_t)o.std.seed;
    /* The logical space of all steps must fit 63 bits, and one rank's variable a buffer. */
    if ((uint64_t)o.particles > (uint64_t)INT64_MAX / ELEM / NVARS / (uint64_t)o.steps / (uint64_t)run->nprocs)
        return iotame_usage_error("option --particles: %lld particles x %d processes x %lld steps is too large",
                                  (long long)o.particles, run->nprocs, (long long)o.steps);

    void *buf = iotame_alloc((size_t)o.particles * ELEM);
    uint64_t my_bytes = (uint64_t)o.steps * NVARS * ELEM * (uint64_t)o.particles;
    vpic_ctx_t c = {.o = &o, .buf = buf};
    rc = iotame_write_then_read(run, &o.std, my_bytes, vpic_pass, &c);
    free(buf);
    return rc;
}

const iotame_kernel_t iotame_kernel_vpicio = {
    .name = "vpicio",
    .summary = "VPIC-IO: 8 particle variables (1-D datasets, rank-contiguous hyperslabs) per step, parallel HDF5",
    .run = vpic_run,
};
