/* Storage targets: which server of the file system a request reaches (the unit the throttle limits), from the
 * file's layout (an active module's layout hook, such as the emulated striped storage's, else Lustre's or CephFS's,
 * else the file system as one target), and the node's table of targets in the shared segment with each module's
 * slot of per-target state. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/xattr.h>

#include "posix.h"

#define LUSTRE_SUPER_MAGIC 0x0BD00BD0u

const char *iotame_posix_from_name(iotame_posix_from_t from)
{
    static const char *const name[] = {"none", "emulated", "lustre", "cephfs"};
    return (unsigned)from < sizeof name / sizeof name[0] ? name[from] : "none";
}

/* The layout of a regular file, from its descriptor (fd >= 0) or its path: the first active module's layout hook
 * that knows it, else Lustre's or CephFS's, else one stripe; with the file system's magic (0 unknown). */
static void target_layout_of(int fd, const char *path, const struct stat *st, iotame_posix_layout_t *l)
{
    struct statfs sfs;
    memset(l, 0, sizeof *l);
    l->fs_type = (fd >= 0 ? fstatfs(fd, &sfs) : statfs(path, &sfs)) == 0 ? (uint64_t)(unsigned long)sfs.f_type : 0;
    l->count = 1;
    for (int i = 0; i < iotame__hooks_layout.n; i++) {
        unsigned n =
            iotame__hooks_layout.m[i]->layout(st->st_dev, st->st_ino, &l->unit, l->ost, IOTAME_POSIX_MAX_STRIPES);
        if (n >= 1 && n <= IOTAME_POSIX_MAX_STRIPES && (n == 1 || l->unit > 0)) {
            l->count = n;
            l->from = IOTAME_POSIX_FROM_EMULATED;
            return;
        }
    }
    l->unit = 0;
    if ((uint32_t)l->fs_type == LUSTRE_SUPER_MAGIC) {
        unsigned char buf[IOTAME_POSIX_LUSTRE_XATTR_MAX];
        ssize_t len = fd >= 0 ? fgetxattr(fd, "lustre.lov", buf, sizeof buf) : getxattr(path, "lustre.lov", buf, sizeof buf);
        unsigned c =
            len > 0 ? iotame_posix_lustre_layout(buf, (size_t)len, &l->unit, l->ost, IOTAME_POSIX_MAX_STRIPES) : 0;
        if (c >= 1) l->count = c, l->from = IOTAME_POSIX_FROM_LUSTRE;
        else l->unit = 0;
        return;
    }
    iotame_posix_cephfs_t ceph;
    if (iotame_posix_cephfs_read(fd, path, l->fs_type, &ceph) == 0) {
        /* A stripe's position among the objects in flight stands for its target: which OSD holds an object is
         * CRUSH's choice from the object's name, which the client cannot cheaply know; the positions are what the
         * client writes to at once, and distinct objects mostly lie on distinct OSDs. */
        l->count = ceph.stripe_count <= IOTAME_POSIX_MAX_STRIPES ? (uint32_t)ceph.stripe_count : 1;
        l->unit = (uint32_t)ceph.stripe_unit;
        l->object_size = (uint32_t)ceph.object_size;
        l->from = IOTAME_POSIX_FROM_CEPHFS;
        for (uint32_t i = 0; i < l->count; i++) l->ost[i] = i;
    }
}

/* Reads a recorded file's layout from its descriptor, of stat st (once; racing threads read the same values). */
static void target_read_layout(iotame_posix_file_t *f, int fd, const struct stat *st)
{
    if (!S_ISREG(st->st_mode)) {
        f->stripes.count = 0;
        __atomic_store_n(&f->layout, -1, __ATOMIC_RELEASE); /* not a regular file: no target */
        return;
    }
    target_layout_of(fd, NULL, st, &f->stripes);
    __atomic_store_n(&f->layout, 1, __ATOMIC_RELEASE);
}

/* The layout as the MPI-IO layer sees it: a file system's own keeps its unit with one stripe, else one stripe is
 * none. */
static void target_as_seen(iotame_posix_layout_t *l)
{
    if (l->count <= 1 && (l->from == IOTAME_POSIX_FROM_NONE || l->from == IOTAME_POSIX_FROM_EMULATED)) {
        l->count = 1;
        l->unit = 0;
    }
}

int iotame_posix_layout(const char *path, iotame_posix_layout_t *l, struct stat *st)
{
    struct stat own;
    if (!st) st = &own;
    memset(l, 0, sizeof *l);
    l->count = 1;
    /* The descriptor the library opened the file with, where this thread's last recorded open was of this path:
     * its stat is the open's, its layout the record's (read once per file), and what remains to ask goes through
     * the descriptor, without the path's lookups (on a parallel file system, round trips to its metadata server). */
    int fd;
    iotame_posix_file_t *f = iotame__posix_last_opened(path, &fd, st);
    if (f) {
        if (!S_ISREG(st->st_mode)) return -EINVAL;
        if (!__atomic_load_n(&f->layout, __ATOMIC_ACQUIRE)) target_read_layout(f, fd, st);
        *l = f->stripes;
        target_as_seen(l);
        return 0;
    }
    path = iotame_posix_path(path);
    if (stat(path, st) != 0) return -errno;
    if (!S_ISREG(st->st_mode)) return -EINVAL;
    target_layout_of(-1, path, st, l);
    target_as_seen(l);
    return 0;
}

static uint64_t target_mix(uint64_t h)
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
        struct stat st;
        if (fstat(io->fd, &st) != 0) st.st_mode = 0; /* no regular file: no target */
        target_read_layout(f, io->fd, &st);
        layout = f->layout;
    }
    if (layout < 0) return 0;
    const iotame_posix_layout_t *l = &f->stripes;
    uint64_t server = 0;
    if (l->count > 1) server = 1 + l->ost[(uint64_t)io->offset / l->unit % l->count];
    return target_mix(((uint64_t)f->dev << 20) ^ server);
}

uint64_t iotame_posix_fs_type(const iotame_posix_file_t *f)
{
    return __atomic_load_n(&f->layout, __ATOMIC_ACQUIRE) > 0 ? f->stripes.fs_type : 0;
}

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

/* ---- the modules' slots ---- */

void iotame__posix_target_layout(iotame_posix_segment_t *s)
{
    size_t used = 0;
    for (int i = 0; iotame_modules[i] && i < IOTAME_MODULE_MAX; i++) {
        size_t bytes = iotame_modules[i]->posix_target_bytes;
        if (!bytes || bytes > IOTAME_POSIX_TARGET_STATE - used) continue;
        s->target_slot[i] = (uint32_t)used + 1;
        used += (bytes + 63) / 64 * 64;
    }
}

void iotame__posix_target_check(const iotame_posix_segment_t *s)
{
    static char why[IOTAME_MODULE_MAX][160]; /* the statistics keep the reason's pointer */
    for (int i = 0; iotame_modules[i] && i < IOTAME_MODULE_MAX; i++) {
        size_t bytes = iotame_modules[i]->posix_target_bytes;
        if (!bytes || s->target_slot[i]) continue;
        snprintf(why[i], sizeof why[i], "posix: %s's %zu bytes of per-target state do not fit a target's %d; it has none",
                 iotame_modules[i]->name, bytes, IOTAME_POSIX_TARGET_STATE);
        iotame_stats_passthrough(NULL, why[i]);
    }
}

void *iotame_posix_target_state(iotame_posix_target_t *t, const iotame_module_t *m)
{
    iotame_posix_segment_t *s = iotame_posix_segment();
    int i = iotame_module_index(m);
    if (!s || !t || i < 0 || i >= IOTAME_MODULE_MAX || !s->target_slot[i]) return NULL;
    return t->state + s->target_slot[i] - 1;
}
