/* Wrappers of the MPI-IO functions that open, close and describe files. MPI_File_open is where the
 * configuration meets a file: the matching rule's hints are merged into the application's MPI_Info. */
#include "intercept.h"
#include "profile/profile.h"

/* A metadata call on an open handle: time it, hand it to the modules. */
#define META(NAME, PARAMS, ARGS)                                                                               \
    IOTAME_WRAPPER int MPI_File_##NAME PARAMS                                                                  \
    {                                                                                                          \
        if (!iotame__enter()) return PMPI_File_##NAME ARGS;                                                    \
        uint64_t t0 = iotame_now();                                                                            \
        int rc = PMPI_File_##NAME ARGS;                                                                        \
        iotame_file_stats_t *fs = iotame__lookup(fh)->fs;                                                  \
        iotame_modules_meta(fs, IOTAME_OP_##NAME, iotame_now() - t0);                                          \
        iotame_stats_record_error(fs, IOTAME_OP_##NAME, rc);                                                   \
        iotame__leave();                                                                                       \
        return rc;                                                                                             \
    }

/* A call that observes or changes the file's size: the modules first make the size what the application wrote. */
#define SIZING(NAME, PARAMS, ARGS)                                                                             \
    IOTAME_WRAPPER int MPI_File_##NAME PARAMS                                                                  \
    {                                                                                                          \
        if (!iotame__enter()) return PMPI_File_##NAME ARGS;                                                    \
        uint64_t t0 = iotame_now();                                                                            \
        iotame_file_t *f = iotame__lookup(fh);                                                             \
        iotame_modules_sizing(f);                                                                              \
        int rc = PMPI_File_##NAME ARGS;                                                                        \
        iotame_modules_meta(f->fs, IOTAME_OP_##NAME, iotame_now() - t0);                                       \
        iotame_stats_record_error(f->fs, IOTAME_OP_##NAME, rc);                                                \
        iotame__leave();                                                                                       \
        return rc;                                                                                             \
    }

SIZING(set_size, (MPI_File fh, MPI_Offset size), (fh, size))
SIZING(preallocate, (MPI_File fh, MPI_Offset size), (fh, size))
SIZING(get_size, (MPI_File fh, MPI_Offset *size), (fh, size))
META(get_info, (MPI_File fh, MPI_Info *info_used), (fh, info_used))
META(seek, (MPI_File fh, MPI_Offset offset, int whence), (fh, offset, whence))
META(seek_shared, (MPI_File fh, MPI_Offset offset, int whence), (fh, offset, whence))

IOTAME_WRAPPER int MPI_File_set_atomicity(MPI_File fh, int flag)
{
    if (!iotame__enter()) return PMPI_File_set_atomicity(fh, flag);
    uint64_t t0 = iotame_now();
    iotame_file_t *f = iotame__lookup(fh);
    int rc = PMPI_File_set_atomicity(fh, flag);
    if (rc == MPI_SUCCESS) iotame_modules_set_atomicity(f, flag);
    iotame_modules_meta(f->fs, IOTAME_OP_set_atomicity, iotame_now() - t0);
    iotame_stats_record_error(f->fs, IOTAME_OP_set_atomicity, rc);
    iotame__leave();
    return rc;
}

IOTAME_WRAPPER int MPI_File_sync(MPI_File fh)
{
    if (!iotame__enter()) return PMPI_File_sync(fh);
    uint64_t t0 = iotame_now();
    iotame_file_t *f = iotame__lookup(fh);
    int mine = iotame_modules_sync(f); /* first: the library's sync then covers what the modules wrote */
    int rc = PMPI_File_sync(fh);
    if (rc == MPI_SUCCESS) rc = mine;
    iotame_modules_meta(f->fs, IOTAME_OP_sync, iotame_now() - t0);
    iotame_stats_record_error(f->fs, IOTAME_OP_sync, rc);
    iotame__leave();
    return rc;
}

/* The machine profile of a file the modules predict for: every rank finds its own (profile/, one search per file
 * system for the job's life) and a nonblocking reduction agrees on it beside the library's open, which makes
 * collectives of its own on comm anyway; the record keeps it only when every rank found the same. Whether to search
 * is the configuration's (iotame_modules_predict), so every rank joins the reduction or none. */
typedef struct {
    const iotame_profile_found_t *found;
    const char *refused;
    int64_t hash[2]; /* the profile's hash (0: none) and its negation, reduced with MPI_MAX */
    MPI_Request req;
} file_profile_t;

static void file_profile_begin(file_profile_t *p, MPI_Comm comm, const char *path, const iotame_file_config_t *fc)
{
    *p = (file_profile_t){.req = MPI_REQUEST_NULL};
    if (!fc || !iotame_modules_predict(fc)) return;
    p->found = iotame_profile_for(path, fc, &p->refused);
    p->hash[0] = p->found ? p->found->hash : 0;
    p->hash[1] = -p->hash[0];
    if (PMPI_Iallreduce(MPI_IN_PLACE, p->hash, 2, MPI_INT64_T, MPI_MAX, comm, &p->req) != MPI_SUCCESS)
        p->req = MPI_REQUEST_NULL;
}

static void file_profile_keep(file_profile_t *p, iotame_file_t *f)
{
    if (p->req == MPI_REQUEST_NULL) return;
    const int done = PMPI_Wait(&p->req, MPI_STATUS_IGNORE) == MPI_SUCCESS, same = done && p->hash[0] == -p->hash[1];
    if (!f) return;
    f->profile = (iotame_file_profile_t){.found = same && p->hash[0] ? p->found : NULL, .refused = p->refused,
                                         .asked = 1, .differs = !same};
}

IOTAME_WRAPPER int MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh)
{
    if (!iotame__enter()) return PMPI_File_open(comm, filename, amode, info, fh);
    uint64_t t0 = iotame_now();
    iotame_msg_error_take(); /* the set-up messages of this open from here on: the modules' agreements fold them */
    iotame_file_stats_t *fs = iotame_stats_file(filename);
    /* Every rank holds the same configuration and the collective open names the same file, so every rank
     * merges the same hints. */
    MPI_Info merged = MPI_INFO_NULL;
    iotame_file_config_t fc;
    int have_fc = iotame_core_config() && iotame_config_for_file(iotame_core_config(), filename, &fc) == 0;
    if (have_fc) {
        if (fc.nhints && iotame_hints_merge(info, &fc, &merged) != MPI_SUCCESS)
            iotame_stats_passthrough(fs, "configured hints could not be merged into the MPI_Info");
        iotame_stats_set_config(fs, &fc);
    }
    iotame_open_t o = {MPI_FILE_NULL, comm, filename, amode, fs, have_fc ? &fc : NULL, NULL, 0,
                       merged != MPI_INFO_NULL ? merged : info};
    iotame_modules_opening(&o);
    file_profile_t profile;
    file_profile_begin(&profile, comm, filename, o.fc);
    const uint64_t t_library = iotame_monotonic_ns(); /* once per open: the clock, not the hot path's ticks */
    int rc = PMPI_File_open(comm, filename, amode, o.info, fh);
    o.open_ns = iotame_monotonic_ns() - t_library;
    if (rc == MPI_SUCCESS) o.fh = *fh;
    if (rc == MPI_SUCCESS) iotame_stats_set_taken(fs, *fh);
    /* A new file takes the properties modules set at creation (CephFS's layout) before anyone can write it, the
     * modules' open hooks included: they may read them. */
    if (rc == MPI_SUCCESS && (amode & MPI_MODE_CREATE)) iotame_modules_created(&o);
    o.info = MPI_INFO_NULL;
    if (merged != MPI_INFO_NULL) PMPI_Info_free(&merged);
    if (rc == MPI_SUCCESS) {
        o.file = iotame_file_open(*fh, fs, fs ? iotame_stats_path(fs) : filename, amode, o.fc); /* takes fc over */
        if (o.file) have_fc = 0;
        else iotame_stats_passthrough(fs, "out of memory (the handle's record): no module acts on it");
    }
    file_profile_keep(&profile, o.file);
    if (rc == MPI_SUCCESS) {
        iotame_modules_open(&o); /* collective, like the open */
    }
    if (have_fc) iotame_config_file_release(&fc);
    iotame_modules_meta(fs, IOTAME_OP_open, iotame_now() - t0);
    iotame_stats_record_error(fs, IOTAME_OP_open, rc);
    iotame__leave();
    return rc;
}

/* With posix.sync_at_close, a file the process may have written is made durable before it is closed: staged data
 * too (the modules' sync first). Each sync reports its own errors through the file's handler, as the library does. */
static int file_close_durable(iotame_file_t *f)
{
    if (!iotame_core_sync_at_close() || !iotame_file_known(f) || (f->amode & MPI_MODE_RDONLY)) return MPI_SUCCESS;
    int durable = iotame_modules_sync(f);
    int library = PMPI_File_sync(f->fh);
    return durable == MPI_SUCCESS ? library : durable;
}

IOTAME_WRAPPER int MPI_File_close(MPI_File *fh)
{
    if (!iotame__enter()) return PMPI_File_close(fh);
    iotame_file_t *f = iotame__lookup(*fh); /* the library sets *fh to MPI_FILE_NULL */
    iotame_file_stats_t *fs = f->fs;
    uint64_t t0 = iotame_now();
    int durable = file_close_durable(f);
    int mine = iotame_modules_close(f); /* collective, like the close */
    if (mine == MPI_SUCCESS) mine = durable;
    int rc = PMPI_File_close(fh);
    if (rc == MPI_SUCCESS) rc = mine;
    iotame_modules_meta(fs, IOTAME_OP_close, iotame_now() - t0);
    iotame_stats_record_error(fs, IOTAME_OP_close, rc);
    if (*fh == MPI_FILE_NULL) iotame_file_close(f); /* closed: the modules' slots were freed by their close hooks */
    iotame__leave();
    return rc;
}

IOTAME_WRAPPER int MPI_File_delete(const char *filename, MPI_Info info)
{
    if (!iotame__enter()) return PMPI_File_delete(filename, info);
    uint64_t t0 = iotame_now();
    int rc = PMPI_File_delete(filename, info);
    iotame_modules_meta(iotame_stats_file(filename), IOTAME_OP_delete, iotame_now() - t0);
    iotame__leave();
    return rc;
}

/* With "override": true the configured hints also replace those the application passes later. */
static MPI_Info file_override_hints(MPI_Info info, const iotame_file_t *f)
{
    MPI_Info merged = MPI_INFO_NULL;
    if (f->fc && f->fc->override && f->fc->nhints && info != MPI_INFO_NULL &&
        iotame_hints_merge(info, f->fc, &merged) != MPI_SUCCESS)
        iotame_stats_passthrough(f->fs, "configured hints could not be merged into the MPI_Info");
    return merged;
}

IOTAME_WRAPPER int MPI_File_set_info(MPI_File fh, MPI_Info info)
{
    if (!iotame__enter()) return PMPI_File_set_info(fh, info);
    uint64_t t0 = iotame_now();
    iotame_file_t *f = iotame__lookup(fh);
    MPI_Info merged = file_override_hints(info, f);
    int rc = PMPI_File_set_info(fh, merged != MPI_INFO_NULL ? merged : info);
    if (merged != MPI_INFO_NULL) PMPI_Info_free(&merged);
    if (rc == MPI_SUCCESS) iotame_modules_set_info(f);
    iotame_modules_meta(f->fs, IOTAME_OP_set_info, iotame_now() - t0);
    iotame__leave();
    return rc;
}

IOTAME_WRAPPER int MPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                                     const char *datarep, MPI_Info info)
{
    if (!iotame__enter()) return PMPI_File_set_view(fh, disp, etype, filetype, datarep, info);
    uint64_t t0 = iotame_now();
    iotame_file_t *f = iotame__lookup(fh);
    MPI_Info merged = file_override_hints(info, f);
    int rc = PMPI_File_set_view(fh, disp, etype, filetype, datarep, merged != MPI_INFO_NULL ? merged : info);
    if (merged != MPI_INFO_NULL) PMPI_Info_free(&merged);
    if (rc == MPI_SUCCESS) iotame_modules_set_view(f, disp, etype, filetype, datarep);
    iotame_modules_meta(f->fs, IOTAME_OP_set_view, iotame_now() - t0);
    iotame__leave();
    return rc;
}
