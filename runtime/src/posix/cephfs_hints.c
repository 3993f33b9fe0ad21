/* The striping hints on CephFS: ROMIO has no CephFS driver and ignores striping_factor and striping_unit there, so
 * the runtime sets a new file's layout itself, through the "ceph.file.layout" attribute, between the library's
 * create and the first write (CephFS refuses a new layout once a file has data). Rank 0 sets it; a broadcast of the
 * outcome keeps every rank from returning from the open, and writing, before that, and gives every rank the same
 * statistics. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/xattr.h>

#include "posix.h"

typedef enum {
    CEPHFS_NOTHING, /* no striping hint, or not CephFS */
    CEPHFS_SET,     /* the file has the layout the hints ask for */
    CEPHFS_NOT_EMPTY,
    CEPHFS_REFUSED, /* not a layout CephFS takes (our check or the MDS's EINVAL): warned */
    CEPHFS_FAILED,  /* the layout could not be read or set otherwise: warned */
} cephfs_status_t;

typedef struct {
    int32_t status; /* cephfs_status_t */
    iotame_posix_cephfs_t layout; /* CEPHFS_SET: the file's layout */
} cephfs_outcome_t;

/* A hint's value in info: 0 absent, 1 a positive integer (*v), -1 anything else (value holds the text). */
static int cephfs_hint(MPI_Info info, const char *key, char *value, int size, int64_t *v)
{
    int flag = 0;
    *v = 0;
    if (info == MPI_INFO_NULL || PMPI_Info_get(info, key, size - 1, value, &flag) != MPI_SUCCESS || !flag) return 0;
    char *end;
    errno = 0;
    long long n = strtoll(value, &end, 10);
    if (errno || end == value || *end || n <= 0) return -1;
    *v = n;
    return 1;
}

/* Rank 0, info holding a striping hint: applies the hints to the file at path (of file system magic fs_type); warns
 * of what it refused. */
static cephfs_outcome_t cephfs_hints_apply(const char *path, const char *filename, uint64_t fs_type, MPI_Info info)
{
    cephfs_outcome_t o = {CEPHFS_NOTHING, {0, 0, 0}};
    char factor_s[64] = "", unit_s[64] = "";
    int64_t factor, unit;
    int has_factor = cephfs_hint(info, "striping_factor", factor_s, sizeof factor_s, &factor);
    int has_unit = cephfs_hint(info, "striping_unit", unit_s, sizeof unit_s, &unit);
    iotame_posix_cephfs_t cur, want;
    int rc = iotame_posix_cephfs_read(-1, path, fs_type, &cur);
    if (rc == -ENODATA) return o; /* another FUSE file system */
    if (rc < 0) {
        iotame_log_warn("%s: the striping hints are not applied: its CephFS layout (ceph.file.layout) cannot be read "
                        "(%s)\n", filename, strerror(-rc));
        o.status = CEPHFS_FAILED;
        return o;
    }
    if (has_factor < 0 || has_unit < 0) {
        const char *key = has_factor < 0 ? "striping_factor" : "striping_unit";
        iotame_log_warn("%s: hint %s=%s: expected a positive integer; the file keeps its CephFS layout "
                        "(stripe_unit=%llu stripe_count=%llu object_size=%llu)\n", filename, key,
                        has_factor < 0 ? factor_s : unit_s, (unsigned long long)cur.stripe_unit,
                        (unsigned long long)cur.stripe_count, (unsigned long long)cur.object_size);
        o.status = CEPHFS_REFUSED;
        return o;
    }
    const char *why = iotame_posix_cephfs_plan(&cur, factor, unit, &want);
    char text[160];
    snprintf(text, sizeof text, "stripe_unit=%llu stripe_count=%llu object_size=%llu",
             (unsigned long long)want.stripe_unit, (unsigned long long)want.stripe_count,
             (unsigned long long)want.object_size);
    /* the whole layout in one attribute: CephFS checks each per-field attribute on its own, so a new unit with the
     * old object size could be refused halfway */
    int same = memcmp(&want, &cur, sizeof want) == 0;
    if (!why && !same && setxattr(path, IOTAME_POSIX_CEPH_XATTR, text, strlen(text), 0) != 0) {
        if (errno == ENOTEMPTY) {
            o.status = CEPHFS_NOT_EMPTY;
            return o;
        }
        if (errno != EINVAL) {
            iotame_log_warn("%s: the striping hints are not applied: setting its CephFS layout %s failed (%s)\n",
                            filename, text, strerror(errno));
            o.status = CEPHFS_FAILED;
            return o;
        }
        why = "a stripe unit that is a multiple of 65536 bytes, an object size that is a multiple of it, a stripe "
              "count >= 1 and an object size the OSDs take";
    }
    if (why) {
        iotame_log_warn("%s: striping hints%s%s%s%s: CephFS takes %s; the file keeps its layout (stripe_unit=%llu "
                        "stripe_count=%llu object_size=%llu)\n", filename, has_factor ? " striping_factor=" : "",
                        factor_s, has_unit ? " striping_unit=" : "", unit_s, why, (unsigned long long)cur.stripe_unit,
                        (unsigned long long)cur.stripe_count, (unsigned long long)cur.object_size);
        o.status = CEPHFS_REFUSED;
        return o;
    }
    o.status = CEPHFS_SET;
    o.layout = want;
    return o;
}

void iotame_posix_cephfs_create(MPI_Comm comm, const char *filename, MPI_Info info, iotame_file_stats_t *fs)
{
    /* Only a create with striping hints takes part: ROMIO fails an open whose striping hints differ between the
     * ranks, so every rank of one that succeeded decides alike, and other creates cost no collective. Only rank 0
     * looks at the file system, and every rank takes part in the broadcast whatever it would find: ranks that saw
     * different mounts at one path must not disagree on a collective call. */
    int flag = 0, len = 0;
    if (info == MPI_INFO_NULL) return;
    PMPI_Info_get_valuelen(info, "striping_factor", &len, &flag);
    if (!flag) PMPI_Info_get_valuelen(info, "striping_unit", &len, &flag);
    if (!flag) return;
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    cephfs_outcome_t o = {CEPHFS_NOTHING, {0, 0, 0}};
    if (rank == 0) {
        const char *path = iotame_posix_path(filename);
        struct statfs sfs;
        uint64_t fs_type = statfs(path, &sfs) == 0 ? (uint64_t)(unsigned long)sfs.f_type : 0;
        if ((uint32_t)fs_type == IOTAME_POSIX_FUSE_MAGIC || (uint32_t)fs_type == IOTAME_POSIX_CEPH_MAGIC)
            o = cephfs_hints_apply(path, filename, fs_type, info);
    }
    PMPI_Bcast(&o, (int)sizeof o, MPI_BYTE, 0, comm);
    switch ((cephfs_status_t)o.status) {
    case CEPHFS_SET: {
        json_t *section = iotame_stats_section(fs, &iotame_module_posix);
        if (section)
            json_object_set_new(section, "storage_layout",
                                json_pack("{s:I,s:I,s:I,s:s}", "stripe_unit", (json_int_t)o.layout.stripe_unit,
                                          "stripe_count", (json_int_t)o.layout.stripe_count, "object_size",
                                          (json_int_t)o.layout.object_size, "from", "hints"));
        break;
    }
    case CEPHFS_NOT_EMPTY:
        iotame_stats_passthrough(fs, "posix: striping hints not applied: the file has data (CephFS sets the layout "
                                     "of empty files only)");
        break;
    case CEPHFS_REFUSED:
        iotame_stats_passthrough(fs, "posix: striping hints not applied: not a layout CephFS takes (rank 0's warning "
                                     "says why)");
        break;
    case CEPHFS_FAILED:
        iotame_stats_passthrough(fs, "posix: striping hints not applied: the CephFS layout could not be read "
                                     "or set");
        break;
    case CEPHFS_NOTHING:
        break;
    }
}
