/* Storage targets: which server of the file system a request reaches (the unit the throttle limits), from the
 * file's layout (a registered layout hook's, such as the emulated striped storage's, else Lustre's, else the file
 * system as one target), and the node's table of per-target state in the shared segment. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/xattr.h>

#include "posix.h"

#define LUSTRE_SUPER_MAGIC 0x0BD00BD0u

static iotame_posix_layout_hook_t layout_hook;

void iotame_posix_set_layout_hook(iotame_posix_layout_hook_t hook) { __atomic_store_n(&layout_hook, hook, __ATOMIC_RELEASE); }

/* The layout of a regular file, from its descriptor (fd >= 0) or its path: the hook's, else Lustre's, else one
 * stripe. fs_type: the file system's magic (0 unknown). */
static void layout_of(int fd, const char *path, const struct stat *st, uint64_t *fs_type, uint32_t *stripe_size,
                      uint32_t *ost, uint32_t *count)
{
    struct statfs sfs;
    *fs_type = (fd >= 0 ? fstatfs(fd, &sfs) : statfs(path, &sfs)) == 0 ? (uint64_t)(unsigned long)sfs.f_type : 0;
    *count = 1;
    iotame_posix_layout_hook_t hook = __atomic_load_n(&layout_hook, __ATOMIC_ACQUIRE);
    unsigned n = hook ? hook(st->st_dev, st->st_ino, stripe_size, ost, IOTAME_POSIX_MAX_STRIPES) : 0;
    if (n >= 1 && n <= IOTAME_POSIX_MAX_STRIPES && (n == 1 || *stripe_size > 0)) {
        *count = n;
        return;
    }
    if ((uint32_t)*fs_type == LUSTRE_SUPER_MAGIC) {
        unsigned char buf[IOTAME_POSIX_LUSTRE_XATTR_MAX];
        ssize_t len = fd >= 0 ? fgetxattr(fd, "lustre.lov", buf, sizeof buf) : getxattr(path, "lustre.lov", buf, sizeof buf);
        unsigned c = len > 0 ? iotame_posix_lustre_layout(buf, (size_t)len, stripe_size, ost, IOTAME_POSIX_MAX_STRIPES) : 0;
        if (c > 1) *count = c;
    }
}

/* Reads a recorded file's layout from its descriptor (once; racing threads read the same values). */
static void read_layout(iotame_posix_file_t *f, int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        f->stripe_count = 0;
        __atomic_store_n(&f->layout, -1, __ATOMIC_RELEASE); /* not a regular file: no target */
        return;
    }
    layout_of(fd, NULL, &st, &f->fs_type, &f->stripe_size, f->ost, &f->stripe_count);
    __atomic_store_n(&f->layout, 1, __ATOMIC_RELEASE);
}

int iotame_posix_layout(const char *path, iotame_posix_layout_t *l)
{
    struct stat st;
    uint64_t fs_type;
    memset(l, 0, sizeof *l);
    l->count = 1;
    path = iotame_posix_path(path);
    if (stat(path, &st) != 0) return -errno;
    if (!S_ISREG(st.st_mode)) return -EINVAL;
    layout_of(-1, path, &st, &fs_type, &l->unit, l->ost, &l->count);
    if (l->count <= 1) {
        l->count = 1;
        l->unit = 0;
    }
    return 0;
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
