/* The device model: a first-come-first-served queue over `servers` identical servers (a disk: one; a RAID-5 of six
 * disks: the five that hold a stripe's data), each with a head position. A request costs its transfer, plus a
 * positioning (rotation and settle, and a seek growing with the square root of the distance, as in Ruemmler and
 * Wilkes' disk model) unless it continues one of the `streams` sequential streams the device prefetches for (Varki
 * et al.: arrays prefetch a few streams and lose the benefit when more compete). Several such devices are the
 * targets of striped storage, files spread over them in stripe units round robin as Lustre and PVFS2 do. Pure:
 * time is passed in. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "emulate.h"

#define MB 1e6
#define MS 1e6 /* nanoseconds */

int emulate_preset(const char *device, emulate_params_t *p)
{
    memset(p, 0, sizeof *p);
    p->position_ns = 4.2 * MS; /* half a turn at 7,200 rpm */
    p->seek_ns = 8 * MS;
    p->span = (uint64_t)(4096 * MB);
    p->write_behind = 1;
    p->targets = 1;
    p->target_unit = 1u << 20;
    if (device && strcmp(device, "disk") == 0) {
        p->servers = 1;
        p->streams = 1;
        p->bytes_per_ns = 60 * MB / 1e9;
    } else if (device && strcmp(device, "raid5") == 0) {
        p->servers = 5;
        p->streams = 8;
        p->bytes_per_ns = 40 * MB / 1e9;
    } else {
        return -EINVAL;
    }
    return 0;
}

static uint64_t device_mix(uint64_t x) /* splitmix64's finalizer */
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t emulate_params_hash(const emulate_params_t *p)
{
    uint64_t h = 0x656d756c61746531ull, v[9];
    memset(v, 0, sizeof v);
    v[0] = p->servers;
    v[1] = p->streams;
    v[2] = p->write_behind;
    memcpy(&v[3], &p->bytes_per_ns, sizeof(double));
    memcpy(&v[4], &p->position_ns, sizeof(double));
    memcpy(&v[5], &p->seek_ns, sizeof(double));
    v[6] = p->span;
    v[7] = p->targets;
    v[8] = p->target_unit;
    for (int i = 0; i < 9; i++) h = device_mix(h ^ v[i]);
    return h;
}

void emulate_device_init(emulate_device_t *d, const emulate_params_t *p)
{
    memset(d, 0, sizeof *d);
    d->p = *p;
    if (d->p.servers < 1) d->p.servers = 1;
    if (d->p.servers > EMULATE_MAX_SERVERS) d->p.servers = EMULATE_MAX_SERVERS;
    if (d->p.streams > EMULATE_MAX_STREAMS) d->p.streams = EMULATE_MAX_STREAMS;
    if (d->p.span < 1) d->p.span = 1;
}

void emulate_striped_init(emulate_striped_t *s, const emulate_params_t *p)
{
    memset(s, 0, sizeof *s);
    s->p = *p;
    if (s->p.targets < 1) s->p.targets = 1;
    if (s->p.targets > EMULATE_MAX_TARGETS) s->p.targets = EMULATE_MAX_TARGETS;
    if (s->p.target_unit < 1) s->p.target_unit = 1;
    if (s->p.target_unit > UINT32_MAX) s->p.target_unit = UINT32_MAX;
    for (uint32_t t = 0; t < s->p.targets; t++) emulate_device_init(&s->target[t], &s->p);
    s->p = s->target[0].p; /* the device's own limits too */
}

uint32_t emulate_first_target(const emulate_params_t *p, uint64_t file)
{
    return p->targets > 1 ? (uint32_t)(device_mix(file ^ 0x7374726970657331ull) % p->targets) : 0;
}

uint32_t emulate_target_of(const emulate_params_t *p, uint64_t file, uint64_t offset)
{
    if (p->targets <= 1) return 0;
    return (uint32_t)((offset / p->target_unit + emulate_first_target(p, file)) % p->targets);
}

/* Bytes of [0, x) in the stripes k with k % n == r. */
static uint64_t device_class_bytes(uint64_t x, uint64_t unit, uint64_t n, uint64_t r)
{
    uint64_t row = unit * n, rem = x % row, lo = r * unit;
    uint64_t part = rem <= lo ? 0 : rem - lo < unit ? rem - lo : unit;
    return x / row * unit + part;
}

unsigned emulate_split(const emulate_params_t *p, uint64_t file, uint64_t offset, uint64_t bytes,
                       emulate_piece_t out[EMULATE_MAX_TARGETS])
{
    const uint64_t unit = p->target_unit, n = p->targets > 1 ? p->targets : 1, end = offset + bytes;
    const uint32_t first = emulate_first_target(p, file);
    unsigned count = 0;
    /* the first n units of the range name the pieces in file order; each piece then takes every byte of the range
     * in its stripes, which are contiguous in its object (stripe k is unit k / n there) */
    for (uint64_t pos = offset; pos < end && count < n; count++) {
        uint64_t stripe = pos / unit, r = stripe % n;
        out[count] = (emulate_piece_t){.target = (uint32_t)((r + first) % n), .offset = stripe / n * unit + pos % unit,
                                       .bytes = device_class_bytes(end, unit, n, r) - device_class_bytes(offset, unit, n, r),
                                       .file_offset = pos};
        pos = (stripe + 1) * unit;
    }
    return count;
}

uint64_t emulate_file_key(uint64_t dev, uint64_t ino)
{
    uint64_t k = device_mix(device_mix(dev) ^ ino);
    return k ? k : 1;
}

/* Files start at 1 MiB boundaries spread over the span (the span itself when it is smaller): files far apart in
 * the hash are far apart on the device, as separately allocated files usually are. */
uint64_t emulate_address(const emulate_params_t *p, uint64_t file, uint64_t offset)
{
    const uint64_t unit = 1u << 20;
    uint64_t base = p->span >= 2 * unit ? device_mix(file) % (p->span / unit) * unit : device_mix(file) % p->span;
    return base + offset;
}

double emulate_position_ns(const emulate_params_t *p, uint64_t from, uint64_t to)
{
    double distance = from > to ? (double)(from - to) : (double)(to - from);
    double x = distance / (double)p->span;
    return p->position_ns + p->seek_ns * sqrt(x < 1 ? x : 1);
}

/* The stream the request continues (same file, starting at or at most EMULATE_STREAM_GAP after where the stream
 * ended), or NULL. */
static emulate_stream_t *device_stream_of(emulate_device_t *d, const emulate_request_t *r)
{
    for (uint32_t i = 0; i < d->p.streams; i++) {
        emulate_stream_t *s = &d->stream[i];
        if (s->file == r->file && r->offset >= s->end && r->offset - s->end <= EMULATE_STREAM_GAP) return s;
    }
    return NULL;
}

/* The entry a new stream takes: an unused one, else the least recently used. */
static emulate_stream_t *device_stream_victim(emulate_device_t *d)
{
    emulate_stream_t *v = NULL;
    for (uint32_t i = 0; i < d->p.streams; i++) {
        emulate_stream_t *s = &d->stream[i];
        if (!s->file) return s;
        if (!v || s->used < v->used) v = s;
    }
    return v;
}

void emulate_schedule(emulate_device_t *d, const emulate_request_t *r, uint64_t now, emulate_result_t *out)
{
    const emulate_params_t *p = &d->p;
    int k = 0;
    for (uint32_t i = 1; i < p->servers; i++)
        if (d->server[i].busy_until < d->server[k].busy_until) k = (int)i;
    emulate_server_t *srv = &d->server[k];
    uint64_t seq = ++d->requests;
    double cost = (double)r->bytes / p->bytes_per_ns;
    memset(out, 0, sizeof *out);
    out->server = k;
    /* Write-behind: the operating system's write-back sorts the data before it reaches the device, so a write costs
     * its transfer only and leaves the heads and the streams of the synchronous readers as they were. */
    if (!(r->write && p->write_behind)) {
        emulate_stream_t *s = device_stream_of(d, r);
        uint64_t addr = emulate_address(p, r->file, r->offset);
        if (s) {
            out->stream_hit = 1;
        } else {
            out->positioned = 1;
            cost += emulate_position_ns(p, srv->head, addr);
            s = device_stream_victim(d);
            if (s) s->file = r->file;
        }
        if (s) {
            s->end = r->offset + r->bytes;
            s->used = seq;
        }
        srv->head = addr + r->bytes;
    }
    out->start = now > srv->busy_until ? now : srv->busy_until;
    out->cost = (uint64_t)llround(cost);
    out->done = out->start + out->cost;
    srv->busy_until = out->done;
}
