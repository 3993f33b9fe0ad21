/* Storage targets: which server of the file system a request reaches (the unit the throttle limits and the
 * emulated device serves), and the node's table of per-target state in the shared segment. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/xattr.h>

#include "posix.h"

#define LUSTRE_SUPER_MAGIC 0x0BD00BD0u
/* Reads a recorded file's layout from its descriptor (once; racing threads read the same values). */
static void read_layout(iotame_posix_file_t *f, int fd)
{
    struct stat st;
    struct statfs sfs;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        f->stripe_count = 0;
        __atomic_store_n(&f->layout, -1, __ATOMIC_RELEASE); /* not a regular file: no target */
        return;
    }
    f->fs_type = fstatfs(fd, &sfs) == 0 ? (uint64_t)(unsigned long)sfs.f_type : 0;
    f->stripe_count = 1;
    if ((uint32_t)f->fs_type == LUSTRE_SUPER_MAGIC) {
        unsigned char buf[IOTAME_POSIX_LUSTRE_XATTR_MAX];
        ssize_t n = fgetxattr(fd, "lustre.lov", buf, sizeof buf);
        unsigned count = n > 0 ? iotame_posix_lustre_layout(buf, (size_t)n, &f->stripe_size, f->ost,
                                                            IOTAME_POSIX_MAX_STRIPES) : 0;
        if (count > 1) f->stripe_count = count;
    }
    __atomic_store_n(&f->layout, 1, __ATOMIC_RELEASE);
}

static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h ? h : 1;
}

uint64_t iotame_posix_target_of(const iotame_posix_io_t *io)
{
    iotame_posix_file_t *f = io->file;
    if (!f) return 0;
    int layout = __atomic_load_n(&f->layout, __ATOMIC_ACQUIRE);
    if (!layout) {
        read_layout(f, io->fd);
        layout = f->layout;
    }
    if (layout < 0) return 0;
    uint64_t server = 0;
    if (f->stripe_count > 1) server = 1 + f->ost[(uint64_t)io->offset / f->stripe_size % f->stripe_count];
    return mix(((uint64_t)f->dev << 20) ^ server);
}

uint64_t iotame_posix_fs_type(const iotame_posix_file_t *f) { return __atomic_load_n(&f->layout, __ATOMIC_ACQUIRE) > 0 ? f->fs_type : 0; }

iotame_posix_target_t *iotame_posix_target(uint64_t key)
{
    iotame_posix_segment_t *s = iotame_posix_segment();
    if (!s || !key) return NULL;
    for (unsigned i = 0; i < IOTAME_POSIX_TARGETS; i++) {
        iotame_posix_target_t *t = &s->target[(key + i) % IOTAME_POSIX_TARGETS];
        uint64_t k = __atomic_load_n(&t->key, __ATOMIC_ACQUIRE), zero = 0;
        if (k == key) return t;
        if (k == 0 && (__atomic_compare_exchange_n(&t->key, &zero, key, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) ||
                       zero == key))
            return t;
    }
    return NULL;
}
