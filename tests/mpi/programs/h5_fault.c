/* The HDF5 fault cases' program (tests/preload/test_hdf5_faults.py), the HDF5 counterpart of fault_job.c.
 *
 *   h5_fault DIR SET own|config   writes DIR/keep.h5 whole and closes it; arms the faults (iotame_fault_arm() of the
 *                                 preloaded test injector, when it is there); then creates DIR/fault.h5, creates
 *                                 the dataset, writes it in CALLS H5Dwrite calls, H5Fflush, H5Dclose, H5Fclose.
 *   h5_fault check FILE           reads FILE's dataset and prints {"parts": [[1 when rank r's part of call c holds
 *                                 its values, ...] per rank]}, or {"parts": null, "error": "..."} when unreadable.
 *
 * The dataset is /d, ints [CALLS][nprocs * ROW]: call c writes row c, rank r the ROW ints from r * ROW, holding
 * value(r, c, j). SET names HDF5 properties: `meta` (alignment, metadata blocks, sieve buffer, collective metadata
 * reads and writes; collective transfers) or `chunked` (chunks of one rank's part of a row, early allocation,
 * independent transfers). With `own` the program sets them itself (the library's run, without the runtime); with
 * `config` it sets none (collective transfers, HDF5's defaults otherwise) and the runtime's hdf5 configuration of
 * the test gives the same ones.
 * Every rank notes each step: rank 0 prints {"nprocs": N, "steps": [names], "failed": [[0|1 per step] per rank],
 * "what": [[per step: "" or the MPI error class under the HDF5 error, e.g. "MPI_ERR_IO", else "hdf5: " and the
 * innermost HDF5 message] per rank]}. Exit status 0 whatever failed: the caller judges (HDF5 itself may die in
 * MPI_Finalize after a failed H5Fclose; the result is out before). */
#include <dlfcn.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ROW = 16384, CALLS = 4, MAX_STEPS = 16, WHAT = 160 };

static int rank, nprocs, nsteps, own, chunked, failed[MAX_STEPS];
static const char *steps[MAX_STEPS];
static char what[MAX_STEPS][WHAT];

static int value(int r, int c, int j) { return 1 + j + 100003 * (c + 16 * r); }

/* The HDF5 error stack's messages, API call first, walked before the next call clears the stack. */
typedef struct {
    char all[8192];  /* every message, to find a quoted MPI error string in any of them */
    char inner[512]; /* the last: where the error was detected */
} h5_fault_stack_t;

static herr_t h5_fault_entry(unsigned n, const H5E_error2_t *err, void *data)
{
    (void)n;
    h5_fault_stack_t *st = data;
    snprintf(st->inner, sizeof st->inner, "%s", err->desc ? err->desc : "");
    size_t used = strlen(st->all);
    snprintf(st->all + used, sizeof st->all - used, "%s", err->desc ? err->desc : "");
    return 0;
}

/* What made the call fail: the MPI error class whose message an HDF5 entry quotes (H5FD_mpio quotes
 * MPI_Error_string), else the innermost HDF5 message. */
static void h5_fault_describe(char *out)
{
    static const struct { const char *name; int cls; } classes[] = {
        {"MPI_ERR_NO_SPACE", MPI_ERR_NO_SPACE}, {"MPI_ERR_QUOTA", MPI_ERR_QUOTA}, {"MPI_ERR_ACCESS", MPI_ERR_ACCESS},
        {"MPI_ERR_FILE", MPI_ERR_FILE}, {"MPI_ERR_IO", MPI_ERR_IO}, {"MPI_ERR_OTHER", MPI_ERR_OTHER}};
    h5_fault_stack_t st = {"", ""};
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, h5_fault_entry, &st);
    for (size_t i = 0; i < sizeof classes / sizeof *classes; i++) {
        char msg[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(classes[i].cls, msg, &len);
        if (strstr(st.all, msg)) {
            snprintf(out, WHAT, "%s", classes[i].name);
            return;
        }
    }
    snprintf(out, WHAT, "hdf5: %.150s", st.inner);
}

/* Notes a step's outcome (HDF5: negative is a failure); the value passes through. */
static long long note(const char *step, long long rc)
{
    if (nsteps >= MAX_STEPS) return rc;
    steps[nsteps] = step;
    failed[nsteps] = rc < 0;
    what[nsteps][0] = '\0';
    if (rc < 0) h5_fault_describe(what[nsteps]);
    nsteps++;
    return rc;
}

static hid_t file_access(void)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    if (own && !chunked) { /* the values of the test's `meta` configuration */
        H5Pset_alignment(fapl, 4096, 65536);
        H5Pset_meta_block_size(fapl, 65536);
        H5Pset_sieve_buf_size(fapl, 131072);
        H5Pset_all_coll_metadata_ops(fapl, 1);
        H5Pset_coll_metadata_write(fapl, 1);
    }
    return fapl;
}

static hid_t dataset_create(void)
{
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (own && chunked) { /* the test's `chunked` configuration */
        hsize_t chunk[2] = {1, ROW};
        H5Pset_chunk(dcpl, 2, chunk);
        H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY);
    }
    return dcpl;
}

static hid_t transfer(void)
{
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, own && chunked ? H5FD_MPIO_INDEPENDENT : H5FD_MPIO_COLLECTIVE);
    return dxpl;
}

static const char *const write_steps[CALLS] = {"write 0", "write 1", "write 2", "write 3"};

/* One file: created, its dataset written in CALLS calls, flushed and closed (keep: the steps named "keep ...",
 * the writes noted as one step). */
static void write_file(const char *dir, const char *name, int keep, int *buf)
{
    static const char *const keep_steps[] = {"keep create", "keep dcreate", "keep write", "keep flush",
                                             "keep dclose", "keep close"};
    static const char *const fault_steps[] = {"create", "dcreate", NULL, "flush", "dclose", "close"};
    const char *const *s = keep ? keep_steps : fault_steps;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    hid_t fapl = file_access(), dcpl = dataset_create(), dxpl = transfer();
    hid_t file = note(s[0], H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
    if (file >= 0) {
        hsize_t dims[2] = {CALLS, (hsize_t)nprocs * ROW}, count[2] = {1, ROW};
        hid_t space = H5Screate_simple(2, dims, NULL), mem = H5Screate_simple(2, count, NULL);
        hid_t dset = note(s[1], H5Dcreate2(file, "d", H5T_NATIVE_INT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT));
        int bad = 0;
        for (int c = 0; dset >= 0 && c < CALLS; c++) {
            for (int j = 0; j < ROW; j++) buf[j] = value(rank, c, j);
            hsize_t start[2] = {(hsize_t)c, (hsize_t)rank * ROW};
            H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
            herr_t rc = H5Dwrite(dset, H5T_NATIVE_INT, mem, space, dxpl, buf);
            if (!keep) note(write_steps[c], rc);
            bad |= rc < 0;
        }
        if (keep) note(s[2], bad ? -1 : 0);
        note(s[3], H5Fflush(file, H5F_SCOPE_GLOBAL));
        if (dset >= 0) note(s[4], H5Dclose(dset));
        H5Sclose(mem);
        H5Sclose(space);
        note(s[5], H5Fclose(file));
    }
    H5Pclose(fapl);
    H5Pclose(dcpl);
    H5Pclose(dxpl);
}

static void arm(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    void (*arm_faults)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "iotame_fault_arm");
    if (arm_faults) arm_faults();
    MPI_Barrier(MPI_COMM_WORLD);
}

static void print_results(void)
{
    int *all = malloc(sizeof(int) * MAX_STEPS * nprocs);
    char *whats = malloc((size_t)MAX_STEPS * WHAT * nprocs);
    MPI_Gather(failed, MAX_STEPS, MPI_INT, all, MAX_STEPS, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Gather(what, MAX_STEPS * WHAT, MPI_CHAR, whats, MAX_STEPS * WHAT, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("{\"nprocs\": %d, \"steps\": [", nprocs);
        for (int s = 0; s < nsteps; s++) printf("%s\"%s\"", s ? ", " : "", steps[s]);
        printf("], \"failed\": [");
        for (int r = 0; r < nprocs; r++) {
            printf("%s[", r ? ", " : "");
            for (int s = 0; s < nsteps; s++) printf("%s%d", s ? ", " : "", all[r * MAX_STEPS + s]);
            printf("]");
        }
        printf("], \"what\": [");
        for (int r = 0; r < nprocs; r++) {
            printf("%s[", r ? ", " : "");
            for (int s = 0; s < nsteps; s++) {
                printf("%s\"", s ? ", " : "");
                for (const char *p = whats + ((size_t)r * MAX_STEPS + s) * WHAT; *p; p++)
                    if (*p >= ' ' && *p != '"' && *p != '\\') putchar(*p); /* JSON-safe: drop what needs escaping */
                printf("\"");
            }
            printf("]");
        }
        printf("]}\n");
        fflush(stdout); /* before MPI_Finalize, where HDF5 may die after a failed H5Fclose and the launcher end us */
    }
    free(all);
    free(whats);
}

/* check mode: which parts of which calls FILE holds (one process, HDF5's default driver). */
static void check(const char *path)
{
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t dset = file >= 0 ? H5Dopen2(file, "d", H5P_DEFAULT) : -1;
    hid_t space = dset >= 0 ? H5Dget_space(dset) : -1;
    hsize_t dims[2] = {0, 0};
    if (space < 0 || H5Sget_simple_extent_ndims(space) != 2 || H5Sget_simple_extent_dims(space, dims, NULL) < 0 ||
        dims[0] != CALLS || dims[1] % ROW) {
        printf("{\"parts\": null, \"error\": \"%s\"}\n", file < 0 ? "the file does not open" : "no dataset /d of "
               "the expected shape");
        return;
    }
    int n = (int)(dims[1] / ROW), *data = malloc(sizeof(int) * CALLS * dims[1]);
    if (H5Dread(dset, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
        printf("{\"parts\": null, \"error\": \"the dataset does not read\"}\n");
    } else {
        printf("{\"parts\": [");
        for (int r = 0; r < n; r++) {
            printf("%s[", r ? ", " : "");
            for (int c = 0; c < CALLS; c++) {
                const int *part = data + (size_t)c * dims[1] + (size_t)r * ROW;
                int ok = 1;
                for (int j = 0; ok && j < ROW; j++) ok = part[j] == value(r, c, j);
                printf("%s%d", c ? ", " : "", ok);
            }
            printf("]");
        }
        printf("]}\n");
    }
    free(data);
    H5Sclose(space);
    H5Dclose(dset);
    H5Fclose(file);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* failures are reported in the output, not printed */
    if (argc == 3 && !strcmp(argv[1], "check")) {
        if (rank == 0) check(argv[2]);
        MPI_Finalize();
        return 0;
    }
    if (argc != 4 || (strcmp(argv[2], "meta") && strcmp(argv[2], "chunked")) ||
        (strcmp(argv[3], "own") && strcmp(argv[3], "config"))) {
        if (rank == 0) fprintf(stderr, "usage: h5_fault DIR meta|chunked own|config, or h5_fault check FILE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    chunked = !strcmp(argv[2], "chunked");
    own = !strcmp(argv[3], "own");
    int *buf = malloc(sizeof(int) * ROW);
    write_file(argv[1], "keep.h5", 1, buf);
    arm();
    write_file(argv[1], "fault.h5", 0, buf);
    print_results();
    free(buf);
    MPI_Finalize();
    return 0;
}
