/* CephFS's layout (posix/cephfs.c): the "ceph.file.layout" attribute's parser, what CephFS accepts as a layout (its
 * file_layout_t::is_valid: units of 64 KiB, objects a whole number of units, at least one stripe) and the layout the
 * striping hints ask for from a file's current one. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "posix/posix.h"

static int parse(const char *text, iotame_posix_cephfs_t *l)
{
    return iotame_posix_cephfs_parse(text, strlen(text), l);
}

static void parser(void)
{
    iotame_posix_cephfs_t l;
    /* as ceph-fuse gives it (no terminating NUL), with the pool, and the fields in another order */
    CHECK(parse("stripe_unit=4194304 stripe_count=1 object_size=4194304 pool=cephfs_data", &l) == 0);
    CHECK(l.stripe_unit == 4194304 && l.stripe_count == 1 && l.object_size == 4194304);
    CHECK(parse("object_size=4194304 pool=cephfs_data pool_namespace=x stripe_count=6 stripe_unit=65536", &l) == 0);
    CHECK(l.stripe_unit == 65536 && l.stripe_count == 6 && l.object_size == 4194304);
    const char nul[] = "stripe_unit=65536 stripe_count=2 object_size=131072"; /* a NUL-terminated copy */
    CHECK(iotame_posix_cephfs_parse(nul, sizeof nul, &l) == 0 && l.stripe_count == 2 && l.object_size == 131072);
    /* only the first len bytes count */
    CHECK(iotame_posix_cephfs_parse(nul, strlen("stripe_unit=65536 stripe_count=2"), &l) == -EINVAL);
    CHECK(parse("stripe_unit=65536 stripe_count=6", &l) == -EINVAL);                    /* no object size */
    CHECK(parse("stripe_unit=64k stripe_count=6 object_size=4194304", &l) == -EINVAL);  /* not a number */
    CHECK(parse("stripe_unit= stripe_count=6 object_size=4194304", &l) == -EINVAL);     /* empty */
    CHECK(parse("stripe_unit=-65536 stripe_count=6 object_size=4194304", &l) == -EINVAL);
    CHECK(parse("stripe_unit=99999999999 stripe_count=1 object_size=4194304", &l) == -EINVAL); /* past 32 bits */
    CHECK(parse("stripe_unit=1000 stripe_count=1 object_size=4194304", &l) == -EINVAL);  /* not a layout */
    CHECK(parse("stripe_units=65536 stripe_count=1 object_size=65536", &l) == -EINVAL);  /* another key */
    CHECK(parse("", &l) == -EINVAL);
}

static void check(void)
{
    CHECK(iotame_posix_cephfs_check(&(iotame_posix_cephfs_t){65536, 6, 4194304}) == NULL);
    CHECK(iotame_posix_cephfs_check(&(iotame_posix_cephfs_t){0, 1, 4194304}) != NULL);
    CHECK(iotame_posix_cephfs_check(&(iotame_posix_cephfs_t){1000, 1, 4194304}) != NULL);
    CHECK(iotame_posix_cephfs_check(&(iotame_posix_cephfs_t){65536, 0, 4194304}) != NULL);
    CHECK(iotame_posix_cephfs_check(&(iotame_posix_cephfs_t){3 << 20, 1, 4 << 20}) != NULL); /* 4 MiB % 3 MiB */
    CHECK(iotame_posix_cephfs_check(&(iotame_posix_cephfs_t){65536, 1, 0}) != NULL);
}

static void plan(void)
{
    const iotame_posix_cephfs_t dflt = {4194304, 1, 4194304};
    iotame_posix_cephfs_t w;
    CHECK(iotame_posix_cephfs_plan(&dflt, 6, 65536, &w) == NULL);
    CHECK(w.stripe_unit == 65536 && w.stripe_count == 6 && w.object_size == 4194304);
    CHECK(iotame_posix_cephfs_plan(&dflt, 8, 0, &w) == NULL); /* a factor alone keeps the unit */
    CHECK(w.stripe_unit == 4194304 && w.stripe_count == 8 && w.object_size == 4194304);
    CHECK(iotame_posix_cephfs_plan(&dflt, 0, 1 << 20, &w) == NULL); /* a unit alone keeps the count */
    CHECK(w.stripe_unit == 1 << 20 && w.stripe_count == 1 && w.object_size == 4194304);
    /* a unit the object size is not a multiple of: the least multiple of the unit that holds the old object */
    CHECK(iotame_posix_cephfs_plan(&dflt, 2, 3 << 20, &w) == NULL);
    CHECK(w.stripe_unit == 3 << 20 && w.stripe_count == 2 && w.object_size == 6 << 20);
    CHECK(iotame_posix_cephfs_plan(&dflt, 0, 8 << 20, &w) == NULL && w.object_size == 8 << 20);
    /* what CephFS refuses */
    CHECK(iotame_posix_cephfs_plan(&dflt, 6, 1000, &w) != NULL);
    CHECK(strstr(iotame_posix_cephfs_plan(&dflt, 6, 1000, &w), "65536") != NULL); /* says what it takes */
    CHECK(iotame_posix_cephfs_plan(&dflt, 6, 65536 + 4096, &w) != NULL);
    CHECK(iotame_posix_cephfs_plan(&dflt, -1, 65536, &w) != NULL);
    CHECK(iotame_posix_cephfs_plan(&dflt, 1, 1ll << 33, &w) != NULL); /* wider than the field */
}

int main(void)
{
    parser();
    check();
    plan();
    return failures != 0;
}
