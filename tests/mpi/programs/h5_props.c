/* HDF5 properties, read back (tests/preload/test_hdf5.py).
 *
 *   h5_props read FILE     rank 0 reopens FILE (default driver) and prints every dataset's creation properties as
 *                          read from the file: {"datasets": {"/name": {"layout", "chunk", "alloc_time", "offset",
 *                          "fill_value_defined", "shape", "type_size"}}}
 *   h5_props app FILE [--serial] [--n N]
 *                          an application with property lists of its own: creates FILE (MPI-IO driver over
 *                          MPI_COMM_WORLD, or the default driver on each rank's FILE.RANK with --serial), datasets
 *                          /a (H5P_DEFAULT creation list), /g/b (its own list: contiguous, fill value 7), /g/c (the
 *                          same list, through H5Dcreate1), /compact (compact layout), /scalar (scalar space), writes
 *                          them with H5P_DEFAULT and with its own independent transfer list, reads them back, and
 *                          reopens the file. After every call it checks that its own lists are unchanged (H5Pequal
 *                          against copies for the creation lists, the values it set for the others) and counts the
 *                          property lists the call left open (see probe()). Rank 0 prints what the open file's
 *                          access list holds and the MPI-IO hints of the MPI file under it (`read` shows the
 *                          datasets of the closed file):
 *                          {"file_access": {...}, "mpi_hints": {...}, "plists_left_open": {"CALL": n, ...,
 *                           "at the end": n}, "actual_io_mode": "independent"|"collective" (of its own transfer
 *                           list after its write), "problems": [...], "problems_all_ranks": n, "verified": bool}
 * Exit status 0 when there were no problems and the data verified.
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank = 0, nprocs = 1, nproblems;
static char problems[8192];

static void problem(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t used = strlen(problems);
    snprintf(problems + used, sizeof problems - used, "%s\"%s\"", nproblems++ ? ", " : "", msg);
}

static hid_t check(hid_t rc, const char *what)
{
    if (rc < 0) {
        fprintf(stderr, "h5_props: %s failed\n", what);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return rc;
}

/* ---- one dataset's creation properties, as JSON ---- */

static const char *alloc_name(H5D_alloc_time_t t)
{
    switch (t) {
    case H5D_ALLOC_TIME_EARLY: return "early";
    case H5D_ALLOC_TIME_LATE: return "late";
    case H5D_ALLOC_TIME_INCR: return "incr";
    default: return "default";
    }
}

static void print_dataset(hid_t dset, const char *name, int first)
{
    hid_t dcpl = check(H5Dget_create_plist(dset), "H5Dget_create_plist");
    hid_t space = check(H5Dget_space(dset), "H5Dget_space"), type = check(H5Dget_type(dset), "H5Dget_type");
    H5D_layout_t layout = H5Pget_layout(dcpl);
    H5D_alloc_time_t at;
    H5Pget_alloc_time(dcpl, &at);
    H5D_fill_value_t fill;
    H5Pfill_value_defined(dcpl, &fill);
    printf("%s\"%s\": {\"layout\": \"%s\", \"alloc_time\": \"%s\", \"fill_value_defined\": %s, \"type_size\": %zu",
           first ? "" : ", ", name,
           layout == H5D_CHUNKED ? "chunked" : layout == H5D_COMPACT ? "compact" : "contiguous", alloc_name(at),
           fill == H5D_FILL_VALUE_USER_DEFINED ? "true" : "false", H5Tget_size(type));
    hsize_t dims[H5S_MAX_RANK];
    int n = H5Sget_simple_extent_dims(space, dims, NULL);
    printf(", \"shape\": [");
    for (int i = 0; i < n; i++) printf("%s%llu", i ? ", " : "", (unsigned long long)dims[i]);
    printf("]");
    if (layout == H5D_CHUNKED) {
        hsize_t chunk[H5S_MAX_RANK];
        int k = H5Pget_chunk(dcpl, H5S_MAX_RANK, chunk);
        printf(", \"chunk\": [");
        for (int i = 0; i < k; i++) printf("%s%llu", i ? ", " : "", (unsigned long long)chunk[i]);
        printf("]");
    }
    haddr_t off = H5Dget_offset(dset);
    if (off != HADDR_UNDEF) printf(", \"offset\": %llu", (unsigned long long)off);
    if (fill == H5D_FILL_VALUE_USER_DEFINED && H5Tget_size(type) == sizeof(int)) {
        int v = 0;
        H5Pget_fill_value(dcpl, H5T_NATIVE_INT, &v);
        printf(", \"fill_value\": %d", v);
    }
    printf("}");
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Tclose(type);
}

static int first_dataset;

static herr_t visit(hid_t group, const char *name, const H5L_info_t *info, void *data)
{
    (void)info;
    (void)data;
    hid_t obj = H5Oopen(group, name, H5P_DEFAULT);
    if (obj < 0) return 0;
    if (H5Iget_type(obj) == H5I_DATASET) {
        char full[1024];
        snprintf(full, sizeof full, "/%s", name);
        print_dataset(obj, full, first_dataset);
        first_dataset = 0;
    }
    H5Oclose(obj);
    return 0;
}

/* {"/name": {...}, ...} of every dataset in the file (default driver, read only). */
static void print_datasets(const char *path)
{
    hid_t file = check(H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), "H5Fopen");
    printf("{");
    first_dataset = 1;
    H5Lvisit(file, H5_INDEX_NAME, H5_ITER_INC, visit, NULL);
    printf("}");
    H5Fclose(file);
}

/* ---- the application ---- */

/* The values the application set on its own lists, checked after every call. */
static hid_t app_fapl, app_dcpl, app_compact, app_dxpl, saved_dcpl, saved_compact;
static int serial;

/* Property list ids come from one counter: a list created before a call and one created after it bracket the
 * ids the call created; those still valid after it are the lists it left open. */
static hid_t probe(void)
{
    hid_t id = check(H5Pcreate(H5P_DATASET_XFER), "H5Pcreate");
    H5Pclose(id);
    return id;
}

static int left_open(hid_t from, hid_t to)
{
    int n = 0;
    for (hid_t id = from + 1; id < to; id++) n += H5Iis_valid(id) > 0;
    return n;
}

static void check_lists(const char *after)
{
    hsize_t t, a, mbs;
    size_t sieve;
    H5Pget_alignment(app_fapl, &t, &a);
    H5Pget_meta_block_size(app_fapl, &mbs);
    H5Pget_sieve_buf_size(app_fapl, &sieve);
    if (t != 1 || a != 512 || mbs != 4096 || sieve != 32768)
        problem("after %s: the application's file access list changed (alignment %llu %llu, meta block %llu, sieve %zu)",
                after, (unsigned long long)t, (unsigned long long)a, (unsigned long long)mbs, sieve);
    if (!serial) {
        MPI_Comm comm;
        MPI_Info info;
        hbool_t coll;
        H5Pget_fapl_mpio(app_fapl, &comm, &info);
        int nkeys = -1, flag = 0;
        char value[64] = "";
        if (info != MPI_INFO_NULL) {
            MPI_Info_get_nkeys(info, &nkeys);
            MPI_Info_get(info, "romio_ds_write", sizeof value - 1, value, &flag);
            MPI_Info_free(&info);
        }
        MPI_Comm_free(&comm);
        if (nkeys != 1 || !flag || strcmp(value, "disable") != 0)
            problem("after %s: the application's MPI_Info changed (%d keys)", after, nkeys);
        H5Pget_all_coll_metadata_ops(app_fapl, &coll);
        if (coll) problem("after %s: the application's collective metadata reads changed", after);
        H5Pget_coll_metadata_write(app_fapl, &coll);
        if (coll) problem("after %s: the application's collective metadata writes changed", after);
    }
    if (H5Pequal(app_dcpl, saved_dcpl) <= 0) problem("after %s: the application's creation list changed", after);
    if (H5Pget_layout(app_dcpl) != H5D_CONTIGUOUS) problem("after %s: the application's layout changed", after);
    if (H5Pequal(app_compact, saved_compact) <= 0) problem("after %s: the application's compact list changed", after);
    /* RATIONALE: not H5Pequal: HDF5 itself writes what a transfer did into the list (H5Pget_mpio_actual_io_mode). */
    size_t tconv = H5Pget_buffer(app_dxpl, NULL, NULL);
    if (tconv != 4096) problem("after %s: the application's transfer list changed (buffer %zu)", after, tconv);
    if (!serial) {
        H5FD_mpio_xfer_t mode;
        H5Pget_dxpl_mpio(app_dxpl, &mode);
        if (mode != H5FD_MPIO_INDEPENDENT) problem("after %s: the application's transfer mode changed", after);
    }
}

/* Runs one call, then checks the application's lists and records how many property lists the call left open
 * (compared by the test with a run without the runtime: HDF5 keeps copies of its own for an open file). */
static hid_t before_call;
static char deltas[8192];

static hid_t after_call(hid_t rc, const char *what)
{
    check(rc, what);
    size_t used = strlen(deltas);
    snprintf(deltas + used, sizeof deltas - used, "%s\"%s\": %d", used ? ", " : "", what,
             left_open(before_call, probe()));
    check_lists(what);
    return rc;
}

#define CALL(expr, what) (before_call = probe(), after_call((hid_t)(expr), what))

static void print_access(hid_t file)
{
    hid_t fapl = check(H5Fget_access_plist(file), "H5Fget_access_plist");
    hsize_t t, a, mbs;
    size_t sieve;
    H5Pget_alignment(fapl, &t, &a);
    H5Pget_meta_block_size(fapl, &mbs);
    H5Pget_sieve_buf_size(fapl, &sieve);
    if (rank != 0) {
        H5Pclose(fapl);
        return;
    }
    printf("{\"file_access\": {\"alignment\": [%llu, %llu], \"meta_block_size\": %llu, \"sieve_buf_size\": %zu",
           (unsigned long long)t, (unsigned long long)a, (unsigned long long)mbs, sieve);
    if (!serial) {
        hbool_t reads, writes;
        H5Pget_all_coll_metadata_ops(fapl, &reads);
        H5Pget_coll_metadata_write(fapl, &writes);
        printf(", \"coll_metadata_reads\": %s, \"coll_metadata_writes\": %s", reads ? "true" : "false",
               writes ? "true" : "false");
    }
    printf("}");
    H5Pclose(fapl);
}

/* The hints ROMIO uses for the MPI file under the HDF5 file. */
static void print_mpi_hints(hid_t file)
{
    if (rank != 0) return;
    printf(", \"mpi_hints\": {");
    MPI_File *fh = NULL;
    if (!serial && H5Fget_vfd_handle(file, H5P_DEFAULT, (void **)&fh) >= 0 && fh) {
        MPI_Info info;
        MPI_File_get_info(*fh, &info);
        const char *keys[] = {"cb_buffer_size", "romio_ds_write", "romio_cb_write"};
        for (int i = 0; i < 3; i++) {
            char value[MPI_MAX_INFO_VAL + 1];
            int flag;
            MPI_Info_get(info, keys[i], MPI_MAX_INFO_VAL, value, &flag);
            if (flag) printf("%s\"%s\": \"%s\"", i ? ", " : "", keys[i], value);
        }
        MPI_Info_free(&info);
    }
    printf("}");
}

static int app(const char *path, int n)
{
    char mine[4096];
    MPI_Comm comm = serial ? MPI_COMM_SELF : MPI_COMM_WORLD;
    int crank = serial ? 0 : rank, cprocs = serial ? 1 : nprocs;
    if (serial) snprintf(mine, sizeof mine, "%s.%d", path, rank);
    else snprintf(mine, sizeof mine, "%s", path);

    hid_t at_start = probe();
    app_fapl = check(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate");
    if (!serial) {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "romio_ds_write", "disable");
        check(H5Pset_fapl_mpio(app_fapl, comm, info), "H5Pset_fapl_mpio");
        MPI_Info_free(&info);
    }
    check(H5Pset_alignment(app_fapl, 1, 512), "H5Pset_alignment");
    check(H5Pset_meta_block_size(app_fapl, 4096), "H5Pset_meta_block_size");
    check(H5Pset_sieve_buf_size(app_fapl, 32768), "H5Pset_sieve_buf_size");
    app_dcpl = check(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate");
    int seven = 7;
    check(H5Pset_fill_value(app_dcpl, H5T_NATIVE_INT, &seven), "H5Pset_fill_value");
    app_compact = check(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate");
    check(H5Pset_layout(app_compact, H5D_COMPACT), "H5Pset_layout");
    app_dxpl = check(H5Pcreate(H5P_DATASET_XFER), "H5Pcreate");
    check(H5Pset_buffer(app_dxpl, 4096, NULL, NULL), "H5Pset_buffer");
    if (!serial) check(H5Pset_dxpl_mpio(app_dxpl, H5FD_MPIO_INDEPENDENT), "H5Pset_dxpl_mpio");
    saved_dcpl = H5Pcopy(app_dcpl);
    saved_compact = H5Pcopy(app_compact);

    hid_t file = CALL(H5Fcreate(mine, H5F_ACC_TRUNC, H5P_DEFAULT, app_fapl), "H5Fcreate");
    hid_t group = check(H5Gcreate2(file, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "H5Gcreate2");
    hsize_t total = (hsize_t)n * (hsize_t)cprocs, start = (hsize_t)n * (hsize_t)crank, count = (hsize_t)n;
    hsize_t small[2] = {4, 4};
    hid_t space = check(H5Screate_simple(1, &total, NULL), "H5Screate_simple");
    hid_t space2 = check(H5Screate_simple(2, small, NULL), "H5Screate_simple");
    hid_t scalar = check(H5Screate(H5S_SCALAR), "H5Screate");
    hid_t ds[3];
    ds[0] = CALL(H5Dcreate2(file, "a", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "H5Dcreate2 /a");
    ds[1] = CALL(H5Dcreate2(group, "b", H5T_NATIVE_INT, space, H5P_DEFAULT, app_dcpl, H5P_DEFAULT), "H5Dcreate2 /g/b");
    ds[2] = CALL(H5Dcreate1(group, "c", H5T_NATIVE_INT, space, app_dcpl), "H5Dcreate1 /g/c");
    hid_t compact = CALL(H5Dcreate2(file, "compact", H5T_NATIVE_INT, space2, H5P_DEFAULT, app_compact, H5P_DEFAULT),
                         "H5Dcreate2 /compact");
    hid_t sc = CALL(H5Dcreate2(file, "scalar", H5T_NATIVE_INT, scalar, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                    "H5Dcreate2 /scalar");

    int *buf = malloc((size_t)n * sizeof *buf), *back = malloc((size_t)n * sizeof *back);
    hid_t fspace = check(H5Dget_space(ds[0]), "H5Dget_space");
    check(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &count, NULL), "H5Sselect_hyperslab");
    hid_t mspace = check(H5Screate_simple(1, &count, NULL), "H5Screate_simple");
    int verified = 1;
    H5D_mpio_actual_io_mode_t actual_io_mode = H5D_MPIO_NO_COLLECTIVE;
    for (int d = 0; d < 3; d++) {
        for (int i = 0; i < n; i++) buf[i] = (int)(start + (hsize_t)i) * 3 + d;
        hid_t dxpl = d == 1 ? app_dxpl : H5P_DEFAULT;
        CALL(H5Dwrite(ds[d], H5T_NATIVE_INT, mspace, fspace, dxpl, buf), "H5Dwrite");
        if (d == 1 && !serial) H5Pget_mpio_actual_io_mode(app_dxpl, &actual_io_mode);
    }
    int cells[16];
    for (int i = 0; i < 16; i++) cells[i] = i;
    CALL(H5Dwrite(compact, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, cells), "H5Dwrite /compact");
    CALL(H5Dwrite(sc, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, &seven), "H5Dwrite /scalar");
    for (int d = 0; d < 3; d++) {
        memset(back, 0, (size_t)n * sizeof *back);
        hid_t dxpl = d == 1 ? app_dxpl : H5P_DEFAULT;
        CALL(H5Dread(ds[d], H5T_NATIVE_INT, mspace, fspace, dxpl, back), "H5Dread");
        for (int i = 0; i < n; i++)
            if (back[i] != (int)(start + (hsize_t)i) * 3 + d) verified = 0;
    }
    /* Every rank: H5Fget_access_plist duplicates the file's communicator (collective). */
    print_access(file);
    print_mpi_hints(file);
    for (int d = 0; d < 3; d++) H5Dclose(ds[d]);
    H5Dclose(compact);
    H5Dclose(sc);
    H5Sclose(fspace);
    H5Sclose(mspace);
    H5Sclose(space);
    H5Sclose(space2);
    H5Sclose(scalar);
    H5Gclose(group);
    ssize_t open = H5Fget_obj_count(file, H5F_OBJ_ALL);
    if (open != 1) problem("%zd objects open in the file before H5Fclose, expected 1 (the file)", open);
    check(H5Fclose(file), "H5Fclose");

    /* Reopened through H5Fopen (wrapped too), the data is still there. */
    file = CALL(H5Fopen(mine, H5F_ACC_RDONLY, app_fapl), "H5Fopen");
    hid_t a = check(H5Dopen2(file, "a", H5P_DEFAULT), "H5Dopen2");
    fspace = check(H5Dget_space(a), "H5Dget_space");
    check(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &count, NULL), "H5Sselect_hyperslab");
    mspace = check(H5Screate_simple(1, &count, NULL), "H5Screate_simple");
    memset(back, 0, (size_t)n * sizeof *back);
    CALL(H5Dread(a, H5T_NATIVE_INT, mspace, fspace, app_dxpl, back), "H5Dread after H5Fopen");
    for (int i = 0; i < n; i++)
        if (back[i] != (int)(start + (hsize_t)i) * 3) verified = 0;
    H5Dclose(a);
    H5Sclose(mspace);
    H5Sclose(fspace);
    H5Fclose(file);
    MPI_Allreduce(MPI_IN_PLACE, &verified, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    int all_problems = nproblems;
    MPI_Allreduce(MPI_IN_PLACE, &all_problems, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

    H5Pclose(app_fapl);
    H5Pclose(app_dcpl);
    H5Pclose(app_compact);
    H5Pclose(app_dxpl);
    H5Pclose(saved_dcpl);
    H5Pclose(saved_compact);
    int left = left_open(at_start, probe());
    free(buf);
    free(back);
    if (rank == 0) {
        printf(", \"plists_left_open\": {%s, \"at the end\": %d}", deltas, left);
        printf(", \"actual_io_mode\": \"%s\"", actual_io_mode == H5D_MPIO_NO_COLLECTIVE ? "independent" : "collective");
        printf(", \"problems\": [%s], \"problems_all_ranks\": %d, \"verified\": %s}\n", problems, all_problems,
               verified ? "true" : "false");
    }
    return all_problems == 0 && verified ? 0 : 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    int rc = 0, n = 1000;
    if (argc >= 3 && strcmp(argv[1], "read") == 0) {
        if (rank == 0) {
            printf("{\"datasets\": ");
            print_datasets(argv[2]);
            printf("}\n");
        }
    } else if (argc >= 3 && strcmp(argv[1], "app") == 0) {
        for (int i = 3; i < argc; i++) {
            if (strcmp(argv[i], "--serial") == 0) serial = 1;
            else if (strcmp(argv[i], "--n") == 0 && i + 1 < argc) n = atoi(argv[++i]);
        }
        rc = app(argv[2], n);
    } else {
        if (rank == 0) fprintf(stderr, "usage: h5_props read FILE | h5_props app FILE [--serial] [--n N]\n");
        rc = 2;
    }
    MPI_Finalize();
    return rc;
}
