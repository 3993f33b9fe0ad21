/* gcrmio: the GCRM-IO kernel (Behzad et al., SC13: the I/O of the Global Cloud Resolving Model on its
 * semi-structured geodesic grid), through parallel HDF5.
 *
 * Each process owns --cells cells of the geodesic grid (C = cells × nprocs in all), with --levels vertical levels.
 * Every variable is one float dataset [rows][levels]: --variables cell-centred ones over the C cells
 * ("cell_var_I"), --edge-variables over the edges ("edge_var_I": 3 per cell on a hexagonal geodesic grid, 3C rows)
 * and --corner-variables over the corners ("corner_var_I": 2 per cell, 2C rows). Rank r writes its rows
 * [r m cells, (r + 1) m cells) (m = 1, 3 or 2) of every dataset as one hyperslab. Datasets are contiguous, or
 * chunked with --chunk-cells rows × --chunk-levels levels (0: all levels) per chunk, the HDF5 parameter the paper
 * tunes for GCRM-IO; collective transfers with --collective, else independent. The read phase reads them back the
 * same way.
 *
 * Verification (see common/h5.h): the datasets lie end to end in the logical space in the order cell, edge, corner
 * variables, so element (row, level) of a dataset is checked against the pattern at logical offset
 * base + (row × levels + level) × 4; a mismatch reads {"file": "FILE:/cell_var_0", "offset": that}.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

#define ELEM 4 /* floats */

typedef struct {
    iotame_standard_options_t std;
    int64_t cells, levels, variables, edge_variables, corner_variables, chunk_cells, chunk_levels;
    bool collective;
} gcrm_opts_t;

/* The kinds of variables: name prefix and rows per cell. */
static const struct {
    const char *prefix;
    uint64_t per_cell;
} kinds[3] = {{"cell_var", 1}, {"edge_var", 3}, {"corner_var", 2}};

static int64_t count_of(const gcrm_opts_t *o, int kind)
{
    return kind == 0 ? o->variables : kind == 1 ? o->edge_variables : o->corner_variables;
}

typedef struct {
    const gcrm_opts_t *o;
    float *buf; /* my rows of the largest kind of variable */
} gcrm_ctx_t;

/* Writes, or reads and checks, every variable (an iotame_pass_fn). Returns IOTAME_EXIT_IO on every rank when an
 * input cannot be opened. */
static int gcrm_pass(iotame_run_t *run, void *ctx, bool write)
{
    const gcrm_ctx_t *c = ctx;
    const gcrm_opts_t *o = c->o;
    float *buf = c->buf;
    const char *path = o->std.file;
    hid_t file = iotame_h5_file_begin(run, path, write);
    if (file < 0) return IOTAME_EXIT_IO;
    hid_t dxpl = iotame_h5_dxpl(o->collective);
    uint64_t cells = (uint64_t)o->cells, levels = (uint64_t)o->levels, base = 0;
    hsize_t chunk[2] = {(hsize_t)o->chunk_cells, o->chunk_levels ? (hsize_t)o->chunk_levels : levels};
    int rc = IOTAME_EXIT_OK;
    char name[64], where[PATH_MAX + 64];
    for (int k = 0; k < 3 && rc == IOTAME_EXIT_OK; k++) {
        uint64_t mine = kinds[k].per_cell * cells; /* my rows */
        hsize_t dims[2] = {mine * (uint64_t)run->nprocs, levels};
        hsize_t start[2] = {mine * (uint64_t)run->rank, 0}, count[2] = {mine, levels};
        size_t len = (size_t)(mine * levels * ELEM);
        for (int64_t i = 0; i < count_of(o, k); i++) {
            snprintf(name, sizeof name, "%s_%lld", kinds[k].prefix, (long long)i);
            snprintf(where, sizeof where, "%s:/%s", path, name);
            hid_t dset = iotame_h5_dataset_begin(run, file, write, name, H5T_NATIVE_FLOAT, 2, dims,
                                                 o->chunk_cells ? chunk : NULL, path);
            if (dset < 0) {
                rc = IOTAME_EXIT_IO;
                break;
            }
            uint64_t logical = base + start[0] * levels * ELEM;
            hid_t fspace = iotame_h5_select(dset, start, NULL, count, NULL, where);
            if (write) iotame_data_fill(run, buf, len, IOTAME_H5_WRITER, logical);
            else memset(buf, 0, len);
            iotame_h5_io(write, dset, H5T_NATIVE_FLOAT, IOTAME_H5_PACKED, fspace, dxpl, buf, where);
            if (!write) iotame_data_check(run, where, buf, len, IOTAME_H5_WRITER, logical);
            iotame_h5_close(fspace, where);
            iotame_h5_close(dset, where);
            base += dims[0] * levels * ELEM;
        }
    }
    iotame_h5_close(dxpl, path);
    iotame_h5_file_end(file, path, write);
    return rc;
}

static int gcrm_run(iotame_run_t *run, int argc, char **argv)
{
    gcrm_opts_t o;
    const iotame_option_t opts[] = {
        IOTAME_STANDARD_OPTIONS(o.std, "iotame-gcrmio.h5"),
        {.name = "cells", .type = IOTAME_OPT_INT, .value = &o.cells, .def = "2048", .min = "1",
         .help = "grid cells per process"},
        {.name = "levels", .type = IOTAME_OPT_INT, .value = &o.levels, .def = "25", .min = "1", .max = "100000",
         .help = "vertical levels of every variable"},
        {.name = "variables", .type = IOTAME_OPT_INT, .value = &o.variables, .def = "4", .min = "1", .max = "1000",
         .help = "cell-centred variables"},
        {.name = "edge-variables", .type = IOTAME_OPT_INT, .value = &o.edge_variables, .def = "1", .min = "0",
         .max = "1000", .help = "edge-centred variables (3 edges per cell)"},
        {.name = "corner-variables", .type = IOTAME_OPT_INT, .value = &o.corner_variables, .def = "1", .min = "0",
         .max = "1000", .help = "corner-centred variables (2 corners per cell)"},
        {.name = "chunk-cells", .type = IOTAME_OPT_INT, .value = &o.chunk_cells, .def = "0", .min = "0",
         .help = "rows per chunk; 0: contiguous datasets"},
        {.name = "chunk-levels", .type = IOTAME_OPT_INT, .value = &o.chunk_levels, .def = "0", .min = "0",
         .help = "levels per chunk; 0: all levels"},
        {.name = "collective", .type = IOTAME_OPT_FLAG, .value = &o.collective,
         .help = "collective transfers (H5FD_MPIO_COLLECTIVE); default independent"},
        {0}};
    int rc = iotame_options_parse(run, opts, argc, argv);
    if (rc) return rc;
    run->seed = (uint64_t)o.std.seed;

    double all_cells = (double)o.cells * run->nprocs;
    double rows_per_cell = (double)(o.variables + 3 * o.edge_variables + 2 * o.corner_variables);
    /* RATIONALE: usage errors naming the options beat an out-of-memory abort or a logical space past 2^63. */
    if ((double)o.cells * 3 * (double)o.levels * ELEM > 64.0 * (1 << 30) ||
        all_cells * rows_per_cell * (double)o.levels * ELEM > 0x1p62)
        return iotame_usage_error("options --cells, --levels: %lld cells of %lld levels per process are too many",
                                  (long long)o.cells, (long long)o.levels);
    if ((double)o.chunk_cells > all_cells)
        return iotame_usage_error("option --chunk-cells: %lld is more than the %.0f cells of the grid "
                                  "(--cells x processes)", (long long)o.chunk_cells, all_cells);
    if (o.chunk_levels > o.levels)
        return iotame_usage_error("option --chunk-levels: %lld is more than the %lld --levels",
                                  (long long)o.chunk_levels, (long long)o.levels);
    if (o.chunk_levels && !o.chunk_cells)
        return iotame_usage_error("option --chunk-levels needs --chunk-cells (contiguous datasets have no chunks)");
    double chunk_bytes = (double)o.chunk_cells * (double)(o.chunk_levels ? o.chunk_levels : o.levels) * ELEM;
    if (chunk_bytes >= 0x1p32)
        return iotame_usage_error("options --chunk-cells, --chunk-levels: a chunk of %.0f bytes is over HDF5's "
                                  "4 GiB limit", chunk_bytes);

    float *buf = iotame_alloc((size_t)(3 * o.cells * o.levels * ELEM));
    uint64_t my_bytes = (uint64_t)(o.variables + 3 * o.edge_variables + 2 * o.corner_variables) *
                        (uint64_t)o.cells * (uint64_t)o.levels * ELEM;
    gcrm_ctx_t c = {.o = &o, .buf = buf};
    rc = iotame_write_then_read(run, &o.std, my_bytes, gcrm_pass, &c);
    free(buf);
    return rc;
}

const iotame_kernel_t iotame_kernel_gcrmio = {
    .name = "gcrmio",
    .summary = "GCRM-IO: cell, edge and corner variables [rows][levels] of a geodesic grid, chunked or not, HDF5",
    .run = gcrm_run,
};
