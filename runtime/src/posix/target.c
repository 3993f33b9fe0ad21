/* Storage targets: which server of the file system a request reaches (the unit the throttle limits and the
 * emulated device serves), and the node's table of per-target state in the shared segment. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/xattr.h>

#include "posix.h"

#define LUSTRE_SUPER_MAGIC 0x0BD00BD0u
#define LOV_MAGIC_V1 0x0BD10BD0u
#define LOV_MAGIC_V3 0x0BD30BD0u
#define LOV_HEADER_V1 32u /* magic, pattern, object id (16), stripe size, stripe count (16 bits), offset (16 bits) */
#define LOV_POOL_NAME 16u /* v3: the pool's name follows the v1 header */
#define LOV_OBJECT 24u    /* per stripe: object id (16), generation, server index */

static uint32_t u32_at(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

unsigned iotame_posix_lustre_layout(const void *xattr, size_t len, uint32_t *stripe_size, uint32_t *ost, unsigned max)
{
    const unsigned char *p = xattr;
    if (len < LOV_HEADER_V1) return 0;
    uint32_t magic = u32_at(p);
    size_t objects = magic == LOV_MAGIC_V1 ? LOV_HEADER_V1 : magic == LOV_MAGIC_V3 ? LOV_HEADER_V1 + LOV_POOL_NAME : 0;
    if (!objects) return 0;
    uint16_t count;
    memcpy(&count, p + 28, sizeof count);
    *stripe_size = u32_at(p + 24);
    if (!count || count > max || !*stripe_size || len < objects + (size_t)count * LOV_OBJECT) return 0;
    for (unsigned i = 0; i < count; i++) ost[i] = u32_at(p + objects + (size_t)i * LOV_OBJECT + 20);
    return count;
}

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
        unsigned char buf[LOV_HEADER_V1 + LOV_POOL_NAME + IOTAME_POSIX_MAX_STRIPES * LOV_OBJECT];
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
