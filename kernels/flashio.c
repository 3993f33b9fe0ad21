/* flashio: the FLASH-IO benchmark (Zingale's I/O kernel of the FLASH AMR code, run by Saini et al., IPDPS 2007),
 * through parallel HDF5.
 *
 * As FLASH-IO, rank r holds lnb = min(maxblocks, 4 maxblocks / 5 + r mod 3) PARAMESH blocks of nxb × nyb × nzb
 * cells, numbered globally rank after rank (B blocks in all), and keeps its 24 unknowns the way FLASH does in
 * memory: unk[block][z][y][x][var] with --nguard guard cells on every side (Fortran unk(nvar, i, j, k, block)).
 * It writes three files, PREFIX being --file without a trailing ".h5":
 *   PREFIX_chk.h5      checkpoint: the tree and grid metadata FLASH writes, "refine level", "node type" (int [B]),
 *                      "gid" (int [B][15]: 6 neighbours, parent, 8 children), "coordinates", "block size" (double
 *                      [B][3]), "bounding box" (double [B][3][2]); then one double dataset [B][nzb][nyb][nxb] per
 *                      unknown, named by FLASH's labels (dens, velx, ...); its memory selection leaves out the guard
 *                      cells and the other unknowns, as FLASH's does.
 *   PREFIX_plt_cnt.h5  plot file of cell-centred data: the same metadata in single precision (ints stay ints) and
 *                      4 unknowns (dens, temp, pres, he4, as FLASH-IO) as float [B][nzb][nyb][nxb].
 *   PREFIX_plt_crn.h5  plot file of corner data: as above with float [B][nzb+1][nyb+1][nxb+1].
 * Every rank writes the hyperslab [first block, first block + lnb) of every dataset: independent transfers as
 * FLASH-IO, collective ones with --collective. The read phases read the files back the same way.
 *
 * Verification (see common/h5.h): the logical space holds the datasets of the three files end to end in the order
 * above (files in that order too); a mismatch reads {"file": "PREFIX_chk.h5:/dens", "offset": logical offset}.
 * Unlike FLASH, the values are the common pattern: metadata is not a real tree and plot data is not the unknowns
 * converted to single precision or interpolated to corners; what is measured, the I/O, is the same.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

#define NVAR 24   /* FLASH-IO's unknowns: 11 hydro variables, 13 nuclear abundances */
#define NPLOT 4   /* unknowns in the plot files */
#define NDIM 3
#define NGID 15   /* 2 NDIM faces + parent + 2^NDIM children */
#define NMETA 6
#define MAXDS (NMETA + NVAR)

static const char *const unk_names[NVAR] = {
    "dens", "velx", "vely", "velz", "pres", "ener", "temp", "gamc", "game", "enuc", "gpot", "he4",
    "c12",  "o16",  "ne20", "mg24", "si28", "s32",  "ar36", "ca40", "ti44", "cr48", "fe52", "ni56"};
static const int plot_vars[NPLOT] = {0, 6, 4, 11}; /* dens, temp, pres, first abundance */

/* The metadata datasets: dimensions after the block dimension. */
static const struct {
    const char *name;
    bool is_int;
    int ndims;
    hsize_t dims[2];
} meta[NMETA] = {
    {"refine level", true, 0, {0, 0}}, {"node type", true, 0, {0, 0}},     {"gid", true, 1, {NGID, 0}},
    {"coordinates", false, 1, {NDIM, 0}}, {"block size", false, 1, {NDIM, 0}}, {"bounding box", false, 2, {NDIM, 2}},
};

typedef struct {
    iotame_standard_options_t std;
    int64_t nxb, nyb, nzb, nguard, maxblocks;
    bool collective;
} flash_opts_t;

typedef struct {
    const char *name;
    hid_t type;
    size_t elem;
    int ndims;
    hsize_t dims[4];      /* dims[0]: all blocks */
    uint64_t block_elems; /* elements per block */
    int unk;              /* checkpoint unknown: its index in unk[]; -1: data packed block after block */
    uint64_t base;        /* logical offset of element 0 */
} dset_t;

typedef struct {
    const char *phase; /* "checkpoint", ... */
    char path[PATH_MAX];
    int n;
    dset_t d[MAXDS];
} ffile_t;

/* The decomposition and the unknowns in memory. */
typedef struct {
    const flash_opts_t *o;
    uint64_t lnb, first, total; /* my blocks, my first block, all blocks */
    hsize_t unk_dims[5];        /* [maxblocks][nzb+2g][nyb+2g][nxb+2g][NVAR] */
    double *unk;
    void *buf; /* packed data of one dataset */
    hid_t dxpl;
} flash_t;

static void add_dataset(ffile_t *f, const char *name, bool is_int, bool dbl, int ndims, const hsize_t *dims,
                        int unk, uint64_t total, uint64_t *base)
{
    dset_t *d = &f->d[f->n++];
    d->name = name;
    d->type = is_int ? H5T_NATIVE_INT32 : dbl ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT;
    d->elem = is_int ? 4 : dbl ? 8 : 4;
    d->ndims = ndims + 1;
    d->dims[0] = total;
    d->block_elems = 1;
    for (int i = 0; i < ndims; i++) {
        d->dims[i + 1] = dims[i];
        d->block_elems *= dims[i];
    }
    d->unk = unk;
    d->base = *base;
    *base += total * d->block_elems * d->elem;
}

/* The three files and their datasets, with the logical bases in file and dataset order. */
static void build_files(const flash_opts_t *o, uint64_t total, ffile_t files[3])
{
    static const char *const phases[3] = {"checkpoint", "plot_centered", "plot_corner"};
    static const char *const suffixes[3] = {"_chk.h5", "_plt_cnt.h5", "_plt_crn.h5"};
    size_t plen = strlen(o->std.file);
    if (plen >= 3 && strcmp(o->std.file + plen - 3, ".h5") == 0) plen -= 3;
    uint64_t base = 0;
    for (int k = 0; k < 3; k++) {
        ffile_t *f = &files[k];
        f->phase = phases[k];
        f->n = 0;
        snprintf(f->path, sizeof f->path, "%.*s%s", (int)plen, o->std.file, suffixes[k]);
        for (int m = 0; m < NMETA; m++)
            add_dataset(f, meta[m].name, meta[m].is_int, k == 0, meta[m].ndims, meta[m].dims, -1, total, &base);
        hsize_t add = k == 2 ? 1 : 0; /* corners: one more point per direction */
        hsize_t cells[3] = {(hsize_t)o->nzb + add, (hsize_t)o->nyb + add, (hsize_t)o->nxb + add};
        for (int v = 0; v < (k == 0 ? NVAR : NPLOT); v++) {
            int var = k == 0 ? v : plot_vars[v];
            add_dataset(f, unk_names[var], false, k == 0, 3, cells, k == 0 ? var : -1, total, &base);
        }
    }
}

static uint64_t file_bytes(const ffile_t *f, uint64_t blocks)
{
    uint64_t b = 0;
    for (int i = 0; i < f->n; i++) b += blocks * f->d[i].block_elems * f->d[i].elem;
    return b;
}

/* Index in unk[] of interior cell (b, k, j, i) of unknown v. */
static size_t unk_index(const flash_t *fl, uint64_t b, uint64_t k, uint64_t j, uint64_t i, int v)
{
    const hsize_t *n = fl->unk_dims;
    uint64_t g = (uint64_t)fl->o->nguard;
    return (size_t)((((b * n[1] + k + g) * n[2] + j + g) * n[3] + i + g) * NVAR + (uint64_t)v);
}

/* Logical offset of the row (b, k, j) of my blocks in dataset d. */
static uint64_t row_offset(const flash_t *fl, const dset_t *d, uint64_t b, uint64_t k, uint64_t j)
{
    return d->base + (((fl->first + b) * d->dims[1] + k) * d->dims[2] + j) * d->dims[3] * d->elem;
}

/* Fills (check false) or checks the interior cells of unknown d->unk in unk[], one x row at a time. */
static void unk_rows(iotame_run_t *run, flash_t *fl, const dset_t *d, bool check, const char *where)
{
    const flash_opts_t *o = fl->o;
    double *row = fl->buf;
    size_t len = (size_t)o->nxb * sizeof *row;
    for (uint64_t b = 0; b < fl->lnb; b++) {
        for (uint64_t k = 0; k < (uint64_t)o->nzb; k++) {
            for (uint64_t j = 0; j < (uint64_t)o->nyb; j++) {
                size_t at = unk_index(fl, b, k, j, 0, d->unk);
                uint64_t logical = row_offset(fl, d, b, k, j);
                if (check) {
                    for (int64_t i = 0; i < o->nxb; i++) row[i] = fl->unk[at + (size_t)i * NVAR];
                    iotame_data_check(run, where, row, len, IOTAME_H5_WRITER, logical);
                } else {
                    iotame_data_fill(run, row, len, IOTAME_H5_WRITER, logical);
                    for (int64_t i = 0; i < o->nxb; i++) fl->unk[at + (size_t)i * NVAR] = row[i];
                }
            }
        }
    }
}

/* Memory space of unk[] selecting the interior cells of my blocks for unknown v. */
static hid_t unk_space(const flash_t *fl, int v, const char *where)
{
    hsize_t g = (hsize_t)fl->o->nguard;
    hsize_t start[5] = {0, g, g, g, (hsize_t)v};
    hsize_t count[5] = {fl->lnb, (hsize_t)fl->o->nzb, (hsize_t)fl->o->nyb, (hsize_t)fl->o->nxb, 1};
    hid_t space = iotame_h5_check(H5Screate_simple(5, fl->unk_dims, NULL), "H5Screate_simple", where);
    iotame_h5_check(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL), "H5Sselect_hyperslab",
                    where);
    return space;
}

/* Writes or reads (and checks) one file. Returns IOTAME_EXIT_IO on every rank when an input cannot be opened. */
static int flash_pass(iotame_run_t *run, flash_t *fl, const ffile_t *f, bool write)
{
    hid_t file = iotame_h5_file_begin(run, f->path, write);
    if (file < 0) return IOTAME_EXIT_IO;
    char where[PATH_MAX + 64];
    int rc = IOTAME_EXIT_OK;
    for (int i = 0; i < f->n; i++) {
        const dset_t *d = &f->d[i];
        snprintf(where, sizeof where, "%s:/%s", f->path, d->name);
        hid_t dset = iotame_h5_dataset_begin(run, file, write, d->name, d->type, d->ndims, d->dims, NULL, f->path);
        if (dset < 0) {
            rc = IOTAME_EXIT_IO;
            break;
        }
        hsize_t start[4] = {fl->first, 0, 0, 0}, count[4];
        count[0] = fl->lnb;
        for (int k = 1; k < d->ndims; k++) count[k] = d->dims[k];
        hid_t fspace = iotame_h5_select(dset, start, NULL, count, NULL, where);
        if (d->unk >= 0) {
            /* The unknowns were filled before the phase, as FLASH has them in memory. */
            hid_t mspace = unk_space(fl, d->unk, where);
            iotame_h5_io(write, dset, d->type, mspace, fspace, fl->dxpl, fl->unk, where);
            iotame_h5_close(mspace, where);
            if (!write) unk_rows(run, fl, d, true, where);
        } else {
            size_t len = (size_t)(fl->lnb * d->block_elems * d->elem);
            uint64_t logical = d->base + fl->first * d->block_elems * d->elem;
            if (write) iotame_data_fill(run, fl->buf, len, IOTAME_H5_WRITER, logical);
            else memset(fl->buf, 0, len);
            iotame_h5_io(write, dset, d->type, IOTAME_H5_PACKED, fspace, fl->dxpl, fl->buf, where);
            if (!write) iotame_data_check(run, where, fl->buf, len, IOTAME_H5_WRITER, logical);
        }
        iotame_h5_close(fspace, where);
        iotame_h5_close(dset, where);
    }
    iotame_h5_file_end(file, f->path, write);
    return rc;
}

static int flash_run(iotame_run_t *run, int argc, char **argv)
{
    flash_opts_t o;
    const iotame_option_t opts[] = {
        IOTAME_STANDARD_OPTIONS(o.std, "iotame-flashio.h5"),
        {.name = "nxb", .type = IOTAME_OPT_INT, .value = &o.nxb, .def = "8", .min = "1", .max = "1024",
         .help = "cells per block in x (guard cells excluded)"},
        {.name = "nyb", .type = IOTAME_OPT_INT, .value = &o.nyb, .def = "8", .min = "1", .max = "1024",
         .help = "cells per block in y"},
        {.name = "nzb", .type = IOTAME_OPT_INT, .value = &o.nzb, .def = "8", .min = "1", .max = "1024",
         .help = "cells per block in z"},
        {.name = "nguard", .type = IOTAME_OPT_INT, .value = &o.nguard, .def = "4", .min = "0", .max = "64",
         .help = "guard cells on each side of a block in memory (never written)"},
        {.name = "maxblocks", .type = IOTAME_OPT_INT, .value = &o.maxblocks, .def = "10", .min = "2",
         .max = "1000000", .help = "blocks per process in memory; rank r uses 4/5 of them + r mod 3 (FLASH-IO: 100)"},
        {.name = "collective", .type = IOTAME_OPT_FLAG, .value = &o.collective,
         .help = "collective transfers (H5FD_MPIO_COLLECTIVE); default independent, as FLASH-IO"},
        {0}};
    int rc = iotame_options_parse(run, opts, argc, argv);
    if (rc) return rc;
    run->seed = (uint64_t)o.std.seed;
    if (strlen(o.std.file) + 16 > PATH_MAX) return iotame_usage_error("option --file: the name is too long");

    flash_t fl = {.o = &o};
    int64_t m = o.maxblocks, mine = 4 * m / 5 + run->rank % 3; /* FLASH-IO's "vary a little" */
    fl.lnb = (uint64_t)(mine < m ? mine : m);
    fl.total = fl.lnb;
    MPI_Exscan(&fl.lnb, &fl.first, 1, MPI_UINT64_T, MPI_SUM, run->comm);
    if (run->rank == 0) fl.first = 0; /* MPI_Exscan leaves rank 0's undefined */
    MPI_Allreduce(MPI_IN_PLACE, &fl.total, 1, MPI_UINT64_T, MPI_SUM, run->comm);
    hsize_t g2 = 2 * (hsize_t)o.nguard;
    hsize_t unk_dims[5] = {(hsize_t)m, (hsize_t)o.nzb + g2, (hsize_t)o.nyb + g2, (hsize_t)o.nxb + g2, NVAR};
    memcpy(fl.unk_dims, unk_dims, sizeof unk_dims);
    double unk_bytes = 8.0;
    for (int i = 0; i < 5; i++) unk_bytes *= (double)unk_dims[i];
    /* RATIONALE: a usage error naming the options beats an out-of-memory abort. With the unknowns under 64 GiB per
     * process, the logical space of all files stays below 2^63 for any process count MPI can start. */
    if (unk_bytes > 64.0 * (1 << 30))
        return iotame_usage_error("options --maxblocks, --nxb, --nyb, --nzb, --nguard: the unknowns would take "
                                  "%.0f bytes per process, more than 64 GiB", unk_bytes);

    ffile_t *files = iotame_alloc(3 * sizeof *files);
    fl.unk = iotame_alloc((size_t)unk_bytes);
    /* The largest packed dataset of my blocks, or one row of the unknowns. */
    uint64_t buf_len = (uint64_t)o.nxb * 8;
    build_files(&o, fl.total, files);
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < files[k].n; i++) {
            uint64_t len = fl.lnb * files[k].d[i].block_elems * files[k].d[i].elem;
            if (files[k].d[i].unk < 0 && len > buf_len) buf_len = len;
        }
    fl.buf = iotame_alloc((size_t)buf_len);
    fl.dxpl = iotame_h5_dxpl(o.collective);
    iotame_param_int(run, "blocks", (int64_t)fl.total);

    char phase[64];
    if (!o.std.skip_write) {
        /* The application's state: unknowns in memory (guard cells zero), before any timing. */
        memset(fl.unk, 0, (size_t)unk_bytes);
        for (int i = 0; i < files[0].n; i++)
            if (files[0].d[i].unk >= 0) unk_rows(run, &fl, &files[0].d[i], false, files[0].path);
        for (int k = 0; k < 3 && rc == IOTAME_EXIT_OK; k++) {
            snprintf(phase, sizeof phase, "%s_write", files[k].phase);
            iotame_phase_begin(run, phase);
            rc = flash_pass(run, &fl, &files[k], true);
            iotame_phase_end(run, file_bytes(&files[k], fl.lnb));
        }
    }
    /* Nothing of the write may survive in memory to pass for read data. */
    memset(fl.unk, 0, (size_t)unk_bytes);
    for (int k = 0; k < 3 && rc == IOTAME_EXIT_OK; k++) {
        snprintf(phase, sizeof phase, "%s_read", files[k].phase);
        iotame_phase_begin(run, phase);
        rc = flash_pass(run, &fl, &files[k], false);
        if (rc == IOTAME_EXIT_OK) iotame_phase_end(run, file_bytes(&files[k], fl.lnb));
    }

    iotame_h5_close(fl.dxpl, o.std.file);
    MPI_Barrier(run->comm);
    /* RATIONALE: remove only what this run wrote; a --skip-write run leaves its input in place. */
    if (!o.std.skip_write && !o.std.keep && run->rank == 0)
        for (int k = 0; k < 3; k++)
            if (iotame_file_remove(IOTAME_API_POSIX, files[k].path)) rc = IOTAME_EXIT_IO;
    free(fl.buf);
    free(fl.unk);
    free(files);
    return rc;
}

const iotame_kernel_t iotame_kernel_flashio = {
    .name = "flashio",
    .summary = "FLASH-IO: AMR blocks of 24 unknowns to a checkpoint and two plot files (centred, corner), HDF5",
    .run = flash_run,
};
