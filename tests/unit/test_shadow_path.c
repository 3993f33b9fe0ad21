/* Unit test of the shadow handle's path (runtime/src/collective/shadow_path.h): ROMIO's "ufs:" prefix only where
 * ROMIO would drive the file with UFS anyway, never under another MPI-IO or over the application's own prefix. */
#include <stdio.h>

#include "collective/shadow_path.h"

#include "check.h"

#define EXT4 0xEF53u
#define TMPFS 0x01021994u
#define FUSE 0x65735546u
#define NFS 0x6969u
#define LUSTRE 0x0BD00BD0u
#define XFS 0x58465342u

int main(void)
{
    CHECK(iotame_coll_shadow_ufs("/data/run/f.dat", EXT4, 0, 1));
    CHECK(iotame_coll_shadow_ufs("f.dat", TMPFS, 0, 1));             /* a relative path */
    CHECK(iotame_coll_shadow_ufs("/mnt/ceph/f.dat", FUSE, 1, 1));    /* ceph-fuse: a CephFS layout */
    CHECK(iotame_coll_shadow_ufs("/a/b:c/f.dat", EXT4, 0, 1));       /* a colon after a slash is the path's */
    CHECK(!iotame_coll_shadow_ufs("/data/f.dat", EXT4, 0, 0));       /* OMPIO */
    CHECK(!iotame_coll_shadow_ufs("ufs:/data/f.dat", EXT4, 0, 1));   /* the application's prefix */
    CHECK(!iotame_coll_shadow_ufs("nfs:/data/f.dat", EXT4, 0, 1));
    CHECK(!iotame_coll_shadow_ufs("x:f.dat", EXT4, 0, 1));           /* may be a prefix: left as given */
    CHECK(!iotame_coll_shadow_ufs("/mnt/dfuse/f.dat", FUSE, 0, 1));  /* another FUSE file system */
    CHECK(!iotame_coll_shadow_ufs("/nfs/f.dat", NFS, 0, 1));
    CHECK(!iotame_coll_shadow_ufs("/lustre/f.dat", LUSTRE, 0, 1));
    CHECK(!iotame_coll_shadow_ufs("/xfs/f.dat", XFS, 0, 1));
    CHECK(!iotame_coll_shadow_ufs("/unknown/f.dat", 0, 0, 1));
    if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
