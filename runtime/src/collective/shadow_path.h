/* The path the engine's shadow handle opens (collective/env.c): the application's, or that path with ROMIO's "ufs:"
 * prefix where ROMIO would resolve the file to its UFS driver anyway. ROMIO resolves the file system of a path
 * without a prefix at every open (statfs and more, each a round trip to the servers on a network file system's
 * client), a part of an engine strategy's first call; a prefix skips it (docs/design/shadow-open.md).
 * Pure: no MPI, no file access. */
#ifndef IOTAME_COLLECTIVE_SHADOW_PATH_H
#define IOTAME_COLLECTIVE_SHADOW_PATH_H

#include <stdint.h>
#include <string.h>

#define IOTAME_COLL_SHADOW_PATH_MAX 4104 /* the prefixed path's buffer: PATH_MAX and the prefix */

/* Whether a statfs magic is a local file system ROMIO has no driver for but UFS: ext2/3/4, btrfs, tmpfs, overlayfs,
 * zfs, f2fs. Not XFS (ROMIO had a driver of its own). */
static inline int iotame_coll_ufs_only_fs(uint64_t fs_type)
{
    static const uint32_t ufs_only[] = {0xEF53, 0x9123683E, 0x01021994, 0x794C7630, 0x2FC12FC1, 0xF2F52010};
    for (size_t i = 0; i < sizeof ufs_only / sizeof ufs_only[0]; i++)
        if ((uint32_t)fs_type == ufs_only[i]) return 1;
    return 0;
}

/* Whether the shadow handle may open "ufs:" + path: the MPI-IO library is ROMIO (`romio`), the application gave no
 * prefix of its own (a ':' before the first '/' may be one), and the file lies where ROMIO has no driver but UFS:
 * iotame_coll_ufs_only_fs (statfs magic `fs_type`), or CephFS (`cephfs`: the file has a CephFS layout, through the
 * kernel's client or ceph-fuse). Not NFS, Lustre, GPFS, PVFS2, PanFS, BeeGFS, XFS (ROMIO has, or had, drivers of
 * their own) nor any other FUSE file system (DAOS's dfuse has one). */
static inline int iotame_coll_shadow_ufs(const char *path, uint64_t fs_type, int cephfs, int romio)
{
    const char *colon = strchr(path, ':'), *slash = strchr(path, '/');
    if (!romio || (colon && (!slash || colon < slash))) return 0;
    return cephfs || iotame_coll_ufs_only_fs(fs_type);
}

#endif
