/* Lustre's file layout as the "lustre.lov" extended attribute gives it (struct lov_user_md v1/v3 of Lustre's
 * user API): the stripe size and the index of the server (OST) of each stripe. Pure, so the unit tests can run it
 * on a built layout: this machine has no Lustre. */
#include <string.h>

#include "posix.h"

#define LOV_MAGIC_V1 0x0BD10BD0u
#define LOV_MAGIC_V3 0x0BD30BD0u
#define LOV_HEADER_V1 32u /* magic, pattern, object id (16), stripe size, stripe count (16 bits), offset (16 bits) */
#define LOV_POOL_NAME 16u /* v3: the pool's name follows the v1 header */
#define LOV_OBJECT 24u    /* per stripe: object id (16), generation, server index */
_Static_assert(IOTAME_POSIX_LUSTRE_XATTR_MAX == LOV_HEADER_V1 + LOV_POOL_NAME + IOTAME_POSIX_MAX_STRIPES * LOV_OBJECT,
               "the attribute buffer holds the widest layout parsed");

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

