/* CephFS's file layout as its virtual extended attribute "ceph.file.layout" gives it, what CephFS accepts as a
 * layout, and the layout the striping hints ask for. The parser, the check and the plan are pure, so the unit tests
 * run them without a cluster; the reader asks the file system. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <string.h>
#include <sys/xattr.h>

#include "posix.h"

#define CEPHFS_FIELD_MAX 0xffffffffull /* the layout's fields are 32-bit on the wire */

/* The decimal number of text[0..len), or -1 (empty, not digits, or wider than a field). */
static int64_t cephfs_number(const char *text, size_t len)
{
    if (!len || len > 10) return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] < '0' || text[i] > '9') return -1;
        v = v * 10 + (uint64_t)(text[i] - '0');
    }
    return v <= CEPHFS_FIELD_MAX ? (int64_t)v : -1;
}

int iotame_posix_cephfs_parse(const char *text, size_t len, iotame_posix_cephfs_t *out)
{
    static const char *const key[] = {"stripe_unit", "stripe_count", "object_size"};
    int64_t v[3] = {-1, -1, -1};
    size_t i = 0;
    while (i < len) {
        while (i < len && (text[i] == ' ' || text[i] == '\0')) i++;
        size_t start = i;
        while (i < len && text[i] != ' ' && text[i] != '\0') i++;
        const char *word = text + start, *eq = memchr(word, '=', i - start);
        if (!eq) continue; /* a word without a value: not ours */
        for (int k = 0; k < 3; k++)
            if ((size_t)(eq - word) == strlen(key[k]) && memcmp(word, key[k], strlen(key[k])) == 0)
                v[k] = cephfs_number(eq + 1, (size_t)(text + i - eq - 1));
    }
    if (v[0] < 0 || v[1] < 0 || v[2] < 0) return -EINVAL;
    out->stripe_unit = (uint64_t)v[0];
    out->stripe_count = (uint64_t)v[1];
    out->object_size = (uint64_t)v[2];
    return iotame_posix_cephfs_check(out) ? -EINVAL : 0;
}

const char *iotame_posix_cephfs_check(const iotame_posix_cephfs_t *l)
{
    if (!l->stripe_unit || l->stripe_unit % IOTAME_POSIX_CEPH_MIN_UNIT || l->stripe_unit > CEPHFS_FIELD_MAX)
        return "a stripe unit that is a positive multiple of 65536 bytes, below 4 GiB";
    if (!l->stripe_count || l->stripe_count > CEPHFS_FIELD_MAX) return "a stripe count from 1 to 4294967295";
    if (!l->object_size || l->object_size % l->stripe_unit || l->object_size > CEPHFS_FIELD_MAX)
        return "an object size that is a multiple of the stripe unit, below 4 GiB";
    return NULL;
}

const char *iotame_posix_cephfs_plan(const iotame_posix_cephfs_t *cur, int64_t factor, int64_t unit,
                                     iotame_posix_cephfs_t *want)
{
    *want = *cur;
    if (factor < 0) return "a stripe count from 1 to 4294967295";
    if (unit < 0) return "a stripe unit that is a positive multiple of 65536 bytes, below 4 GiB";
    if (factor > 0) want->stripe_count = (uint64_t)factor;
    if (unit > 0) {
        want->stripe_unit = (uint64_t)unit;
        if (want->object_size % want->stripe_unit) /* the least multiple of the unit that holds the old object */
            want->object_size = (want->object_size / want->stripe_unit + 1) * want->stripe_unit;
    }
    return iotame_posix_cephfs_check(want);
}

int iotame_posix_cephfs_read(int fd, const char *path, uint64_t fs_type, iotame_posix_cephfs_t *out)
{
    if ((uint32_t)fs_type != IOTAME_POSIX_FUSE_MAGIC && (uint32_t)fs_type != IOTAME_POSIX_CEPH_MAGIC) return -ENODATA;
    /* One attribute holds the three fields: one request to the client instead of three. */
    char text[256];
    ssize_t n = fd >= 0 ? fgetxattr(fd, IOTAME_POSIX_CEPH_XATTR, text, sizeof text)
                        : getxattr(path, IOTAME_POSIX_CEPH_XATTR, text, sizeof text);
    if (n < 0) return errno == ENOTSUP || errno == EOPNOTSUPP ? -ENODATA : -errno;
    return iotame_posix_cephfs_parse(text, (size_t)n, out);
}
