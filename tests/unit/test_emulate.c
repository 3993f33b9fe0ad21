/* Unit tests of the storage device model (runtime/src/emulate/device.c), with time passed in: a sequential stream
 * costs its transfer only; more interleaved streams than the device prefetches for pay positioning; a longer seek
 * costs more; servers serve in parallel; write-behind; first come first served; the presets. Striped storage: a
 * request is split at stripe-unit boundaries onto the right targets, files start on different targets, the targets
 * serve in parallel, one target's queue does not delay another, and a sequential reader keeps one stream per
 * target. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "emulate/emulate.h"

#include "check.h"

#define MS 1000000ull
#define KiB 1024ull
#define MiB (1024ull * 1024ull)

static emulate_params_t params_of(const char *preset)
{
    emulate_params_t p;
    CHECK(emulate_preset(preset, &p) == 0);
    return p;
}

static uint64_t transfer(const emulate_params_t *p, uint64_t bytes) { return (uint64_t)llround((double)bytes / p->bytes_per_ns); }

static emulate_result_t req(emulate_device_t *d, uint64_t file, uint64_t offset, uint64_t bytes, int write, uint64_t now)
{
    emulate_request_t r = {.file = file, .offset = offset, .bytes = bytes, .write = write};
    emulate_result_t res;
    emulate_schedule(d, &r, now, &res);
    CHECK(res.done == res.start + res.cost);
    CHECK(res.start >= now);
    return res;
}

static void test_presets(void)
{
    emulate_params_t p;
    CHECK(emulate_preset("none", &p) != 0);
    CHECK(emulate_preset("tape", &p) != 0);
    p = params_of("disk");
    CHECK(p.servers == 1 && p.streams == 1 && p.write_behind);
    CHECK(fabs(p.bytes_per_ns * 1e3 - 60) < 1e-9);
    p = params_of("raid5");
    CHECK(p.servers == 5 && p.streams == 8);
    emulate_params_t q = p;
    CHECK(emulate_params_hash(&p) == emulate_params_hash(&q));
    q.streams = 4;
    CHECK(emulate_params_hash(&p) != emulate_params_hash(&q));
    CHECK(p.targets == 1 && p.target_unit == MiB); /* one target unless asked */
    q = p;
    q.targets = 6;
    CHECK(emulate_params_hash(&p) != emulate_params_hash(&q));
    q = p;
    q.target_unit = 64 * KiB;
    CHECK(emulate_params_hash(&p) != emulate_params_hash(&q));
}

static emulate_params_t striped(uint32_t targets, uint64_t unit)
{
    emulate_params_t p = params_of("disk");
    p.targets = targets;
    p.target_unit = unit;
    return p;
}

static void test_limits_of_striping(void)
{
    static emulate_striped_t s;
    emulate_params_t p = striped(0, 0);
    emulate_striped_init(&s, &p);
    CHECK(s.p.targets == 1 && s.p.target_unit == 1);
    p = striped(1000, 64 * KiB);
    emulate_striped_init(&s, &p);
    CHECK(s.p.targets == EMULATE_MAX_TARGETS && s.p.target_unit == 64 * KiB);
    for (uint32_t t = 0; t < s.p.targets; t++) CHECK(s.target[t].p.servers == 1 && s.target[t].requests == 0);
}

/* Every unit of a range, one at a time: its target by emulate_target_of and its place in the target's object. */
static void check_split(const emulate_params_t *p, uint64_t file, uint64_t offset, uint64_t bytes)
{
    emulate_piece_t piece[EMULATE_MAX_TARGETS];
    unsigned n = emulate_split(p, file, offset, bytes, piece);
    uint64_t seen[EMULATE_MAX_TARGETS] = {0}, total = 0, u = p->target_unit;
    CHECK(n <= p->targets);
    CHECK((n == 0) == (bytes == 0));
    for (unsigned i = 0; i < n; i++) {
        CHECK(piece[i].target < p->targets);
        for (unsigned j = 0; j < i; j++) CHECK(piece[j].target != piece[i].target);
        if (i) CHECK(piece[i].file_offset > piece[i - 1].file_offset); /* in file order */
        CHECK(emulate_target_of(p, file, piece[i].file_offset) == piece[i].target);
        total += piece[i].bytes;
    }
    CHECK(total == bytes);
    for (uint64_t pos = offset; pos < offset + bytes;) {
        uint64_t stop = (pos / u + 1) * u < offset + bytes ? (pos / u + 1) * u : offset + bytes;
        uint32_t t = emulate_target_of(p, file, pos);
        CHECK(t == (pos / u + emulate_first_target(p, file)) % p->targets);
        int k = -1;
        for (unsigned i = 0; i < n; i++)
            if (piece[i].target == t) k = (int)i;
        CHECK(k >= 0);
        if (k < 0) return;
        /* the unit's bytes continue the target's piece where its previous unit of this range ended */
        CHECK(piece[k].offset + seen[t] == pos / u / p->targets * u + pos % u);
        seen[t] += stop - pos;
        pos = stop;
    }
    for (unsigned i = 0; i < n; i++) CHECK(seen[piece[i].target] == piece[i].bytes);
}

static void test_split_at_unit_boundaries(void)
{
    emulate_params_t p = striped(4, 64 * KiB);
    uint64_t f = emulate_file_key(9, 1234);
    uint32_t first = emulate_first_target(&p, f);
    emulate_piece_t piece[EMULATE_MAX_TARGETS];
    /* 300 KiB from 32 KiB: half a unit, three units, a unit back on the first target, 12 KiB on the second */
    unsigned n = emulate_split(&p, f, 32 * KiB, 300 * KiB, piece);
    CHECK(n == 4);
    CHECK(piece[0].target == first && piece[0].offset == 32 * KiB && piece[0].bytes == 32 * KiB + 64 * KiB);
    CHECK(piece[1].target == (first + 1) % 4 && piece[1].offset == 0 && piece[1].bytes == 64 * KiB + 12 * KiB);
    CHECK(piece[2].target == (first + 2) % 4 && piece[2].offset == 0 && piece[2].bytes == 64 * KiB);
    CHECK(piece[3].target == (first + 3) % 4 && piece[3].offset == 0 && piece[3].bytes == 64 * KiB);
    /* within one unit: one piece; a request ending on a boundary does not touch the next target */
    CHECK(emulate_split(&p, f, 5 * 64 * KiB + 100, 1000, piece) == 1 && piece[0].target == (first + 1) % 4 &&
          piece[0].offset == 64 * KiB + 100);
    CHECK(emulate_split(&p, f, 64 * KiB, 64 * KiB, piece) == 1 && piece[0].target == (first + 1) % 4);
    CHECK(emulate_split(&p, f, 64 * KiB, 0, piece) == 0);
    /* one target: the file is its object */
    emulate_params_t one = striped(1, 64 * KiB);
    CHECK(emulate_first_target(&one, f) == 0);
    CHECK(emulate_split(&one, f, 12345, 10 * MiB, piece) == 1 && piece[0].offset == 12345 && piece[0].bytes == 10 * MiB);
    /* every unit of many ranges, against the definition */
    uint64_t x = 88172645463325252ull; /* xorshift64 */
    for (int i = 0; i < 3000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint32_t targets = 1 + (uint32_t)(x % 7);
        uint64_t unit = (uint64_t)4096 << (x >> 8) % 6;
        emulate_params_t q = striped(targets, unit);
        uint64_t offset = (x >> 16) % (64 * MiB), bytes = (x >> 40) % (unit * (targets + 3)) + (i % 5 == 0);
        check_split(&q, emulate_file_key(2, (uint64_t)i), offset, bytes);
    }
}

static void test_files_start_on_different_targets(void)
{
    emulate_params_t p = striped(6, MiB);
    int started[6] = {0};
    for (uint64_t i = 0; i < 120; i++) {
        uint32_t t = emulate_first_target(&p, emulate_file_key(3, i));
        CHECK(t < 6);
        if (t < 6) started[t]++;
        CHECK(emulate_target_of(&p, emulate_file_key(3, i), 0) == t);
        CHECK(emulate_target_of(&p, emulate_file_key(3, i), 7 * MiB + 5) == (t + 7) % 6);
    }
    for (int t = 0; t < 6; t++) CHECK(started[t] > 0);
}

/* Schedules a whole request on striped storage as the module does with time standing still: each piece on its
 * target; returns when the last piece completes. */
static uint64_t striped_req(emulate_striped_t *s, uint64_t file, uint64_t offset, uint64_t bytes, uint64_t now,
                            int *positioned)
{
    emulate_piece_t piece[EMULATE_MAX_TARGETS];
    unsigned n = emulate_split(&s->p, file, offset, bytes, piece);
    uint64_t done = now;
    for (unsigned i = 0; i < n; i++) {
        emulate_request_t r = {.file = file, .offset = piece[i].offset, .bytes = piece[i].bytes};
        emulate_result_t res;
        emulate_schedule(&s->target[piece[i].target], &r, now, &res);
        CHECK(res.start == now); /* idle targets: every piece starts at once */
        if (positioned) *positioned += res.positioned;
        if (res.done > done) done = res.done;
    }
    return done;
}

static void test_targets_serve_in_parallel(void)
{
    static emulate_striped_t s;
    emulate_params_t p = striped(4, MiB);
    p.position_ns = 0;
    p.seek_ns = 0;
    emulate_striped_init(&s, &p);
    uint64_t f = emulate_file_key(4, 1);
    /* 4 MiB over four targets takes a quarter of what 4 MiB on one takes */
    uint64_t wide = striped_req(&s, f, 0, 4 * MiB, 1000, NULL) - 1000;
    CHECK(wide == transfer(&p, MiB));
    emulate_params_t q = striped(1, MiB);
    q.position_ns = q.seek_ns = 0;
    emulate_striped_init(&s, &q);
    uint64_t narrow = striped_req(&s, f, 0, 4 * MiB, 1000, NULL) - 1000;
    CHECK(narrow == transfer(&q, 4 * MiB));
    CHECK(narrow + 4 >= 4 * wide && narrow <= 4 * wide + 4); /* rounding of the four transfers */
}

static void test_one_queue_does_not_delay_another(void)
{
    static emulate_striped_t s;
    emulate_params_t p = striped(3, MiB);
    emulate_striped_init(&s, &p);
    uint64_t f = emulate_file_key(5, 1), t0 = (0 + emulate_first_target(&p, f)) % 3;
    /* ten requests queued on the first stripe's target */
    uint64_t end = 0;
    for (int i = 0; i < 10; i++) {
        emulate_request_t r = {.file = emulate_file_key(5, 100 + (uint64_t)i), .offset = 0, .bytes = MiB};
        emulate_result_t res;
        emulate_schedule(&s.target[t0], &r, 0, &res);
        end = res.done;
    }
    /* a request on the second stripe's target starts at once; one on the first waits for the ten */
    emulate_piece_t piece[EMULATE_MAX_TARGETS];
    CHECK(emulate_split(&p, f, MiB, 4096, piece) == 1 && piece[0].target == (t0 + 1) % 3);
    emulate_request_t r = {.file = f, .offset = piece[0].offset, .bytes = 4096};
    emulate_result_t other, same;
    emulate_schedule(&s.target[piece[0].target], &r, 5, &other);
    CHECK(other.start == 5);
    CHECK(emulate_split(&p, f, 0, 4096, piece) == 1 && piece[0].target == t0);
    r.offset = piece[0].offset;
    emulate_schedule(&s.target[t0], &r, 5, &same);
    CHECK(same.start == end);
    uint64_t t1 = (t0 + 1) % 3;
    CHECK(s.target[t0].requests == 11 && s.target[t1].requests == 1 && s.target[(t0 + 2) % 3].requests == 0);
}

static void test_a_sequential_reader_keeps_a_stream_per_target(void)
{
    static emulate_striped_t s;
    emulate_params_t p = striped(4, 64 * KiB); /* one stream per target */
    emulate_striped_init(&s, &p);
    uint64_t f = emulate_file_key(6, 1), now = 0;
    int positioned = 0;
    /* 64 KiB reads, one unit each, in order: each target's object is read in order, so only the first read on
     * each target positions (stripe k is unit k / 4 of its object) */
    for (int i = 0; i < 32; i++) now = striped_req(&s, f, (uint64_t)i * 64 * KiB, 64 * KiB, now, &positioned);
    CHECK(positioned == 4);
    /* 1 MiB reads span every target: the same */
    emulate_striped_init(&s, &p);
    positioned = 0;
    now = 0;
    for (int i = 0; i < 8; i++) now = striped_req(&s, f, (uint64_t)i * MiB, MiB, now, &positioned);
    CHECK(positioned == 4);
}

static void test_sequential_stream_costs_transfer_only(void)
{
    emulate_params_t p = params_of("disk");
    emulate_device_t d;
    emulate_device_init(&d, &p);
    uint64_t f = emulate_file_key(1, 42), now = 0, bs = MiB;
    emulate_result_t first = req(&d, f, 0, bs, 0, now);
    CHECK(first.positioned && !first.stream_hit);
    CHECK(first.cost > transfer(&p, bs));
    now = first.done;
    for (int i = 1; i < 16; i++) {
        emulate_result_t r = req(&d, f, (uint64_t)i * bs, bs, 0, now);
        CHECK(r.stream_hit && !r.positioned);
        CHECK(r.cost == transfer(&p, bs));
        CHECK(r.start == now);
        now = r.done;
    }
    /* a small skip forward (within the gap) still continues the stream; going back does not */
    emulate_result_t skip = req(&d, f, 16 * bs + 64 * KiB, bs, 0, now);
    CHECK(skip.stream_hit);
    emulate_result_t back = req(&d, f, 0, bs, 0, skip.done);
    CHECK(back.positioned);
}

static void test_interleaved_streams_beyond_the_table_position(void)
{
    for (uint32_t streams = 1; streams <= 4; streams++) {
        emulate_params_t p = params_of("disk");
        p.streams = streams;
        emulate_device_t d;
        emulate_device_init(&d, &p);
        /* two, then five interleaved readers of their own files, round robin */
        for (int readers = 2; readers <= 5; readers += 3) {
            int positioned = 0, hits = 0;
            uint64_t now = 0;
            for (int i = 0; i < 8; i++)
                for (int k = 0; k < readers; k++) {
                    emulate_result_t r = req(&d, emulate_file_key(7, 100 + (uint64_t)readers * 10 + (uint64_t)k),
                                             (uint64_t)i * MiB, MiB, 0, now);
                    positioned += r.positioned;
                    hits += r.stream_hit;
                    now = r.done;
                }
            if ((uint32_t)readers <= streams) { /* each stream's first request positions, the rest continue */
                CHECK(positioned == readers);
                CHECK(hits == 8 * readers - readers);
            } else { /* LRU replacement under round robin: every request evicts the stream it needs next */
                CHECK(positioned == 8 * readers);
                CHECK(hits == 0);
            }
        }
    }
    /* no stream table: every read positions */
    emulate_params_t p = params_of("disk");
    p.streams = 0;
    emulate_device_t d;
    emulate_device_init(&d, &p);
    uint64_t now = 0;
    for (int i = 0; i < 4; i++) {
        emulate_result_t r = req(&d, 5, (uint64_t)i * MiB, MiB, 0, now);
        CHECK(r.positioned && !r.stream_hit);
        now = r.done;
    }
    CHECK(d.requests == 4);
}

static void test_longer_distance_costs_more(void)
{
    emulate_params_t p = params_of("disk");
    double near = emulate_position_ns(&p, 0, 1 * MiB), mid = emulate_position_ns(&p, 0, 256 * MiB),
           far = emulate_position_ns(&p, 0, 2048 * MiB), full = emulate_position_ns(&p, 0, p.span),
           beyond = emulate_position_ns(&p, 0, 4 * p.span);
    CHECK(emulate_position_ns(&p, 5, 5) == p.position_ns);
    CHECK(near > p.position_ns && near < mid && mid < far && far < full);
    CHECK(fabs(full - (p.position_ns + p.seek_ns)) < 1);
    CHECK(beyond == full);
    CHECK(emulate_position_ns(&p, 1 * MiB, 0) == near); /* either direction */

    /* through the schedule: a request far from the head waits longer than one near it */
    emulate_device_t d;
    emulate_device_init(&d, &p);
    uint64_t f = 99, base = emulate_address(&p, f, 0);
    CHECK(emulate_address(&p, f, 12345) == base + 12345);
    CHECK(base < p.span);
    emulate_result_t a = req(&d, f, 0, 4096, 0, 0);
    emulate_result_t b = req(&d, f, 2 * MiB, 4096, 0, a.done);           /* near: 2 MiB on */
    emulate_result_t c = req(&d, f, 2 * MiB + 2048 * MiB, 4096, 0, b.done); /* far */
    CHECK(b.positioned && c.positioned);
    CHECK(c.cost > b.cost);
}

static void test_servers_serve_in_parallel(void)
{
    emulate_params_t p = params_of("raid5");
    emulate_device_t d;
    emulate_device_init(&d, &p);
    /* five requests at once on five servers start at once; the sixth waits for the first server to free */
    emulate_result_t r[6];
    for (int i = 0; i < 6; i++) r[i] = req(&d, emulate_file_key(1, (uint64_t)i), 0, MiB, 0, 1000);
    int used[5] = {0};
    for (int i = 0; i < 5; i++) {
        CHECK(r[i].start == 1000);
        CHECK(r[i].server >= 0 && r[i].server < 5);
        used[r[i].server]++;
    }
    for (int i = 0; i < 5; i++) CHECK(used[i] == 1);
    uint64_t first_free = r[0].done;
    for (int i = 1; i < 5; i++)
        if (r[i].done < first_free) first_free = r[i].done;
    CHECK(r[5].start == first_free);

    /* one disk: the same six requests run one after another */
    emulate_params_t q = params_of("disk");
    emulate_device_init(&d, &q);
    uint64_t end = 0;
    for (int i = 0; i < 6; i++) {
        emulate_result_t x = req(&d, emulate_file_key(1, (uint64_t)i), 0, MiB, 0, 1000);
        CHECK(x.server == 0);
        CHECK(x.start == (i ? end : 1000));
        end = x.done;
    }
}

static void test_write_behind(void)
{
    emulate_params_t p = params_of("disk");
    emulate_device_t d;
    emulate_device_init(&d, &p);
    /* a reader's stream survives writes to other files in between, and writes never position */
    uint64_t reader = emulate_file_key(3, 1), now = 0;
    now = req(&d, reader, 0, MiB, 0, now).done;
    for (int i = 0; i < 4; i++) {
        emulate_result_t w = req(&d, emulate_file_key(3, 2 + (uint64_t)i), 77 * MiB * (uint64_t)i, MiB, 1, now);
        CHECK(!w.positioned && !w.stream_hit);
        CHECK(w.cost == transfer(&p, MiB));
        now = w.done;
        emulate_result_t r = req(&d, reader, (uint64_t)(i + 1) * MiB, MiB, 0, now);
        CHECK(r.stream_hit);
        now = r.done;
    }
    /* without write-behind, writes position like reads */
    p.write_behind = 0;
    emulate_device_init(&d, &p);
    now = req(&d, reader, 0, MiB, 0, 0).done;
    emulate_result_t w = req(&d, emulate_file_key(3, 9), 0, MiB, 1, now);
    CHECK(w.positioned && w.cost > transfer(&p, MiB));
    CHECK(req(&d, reader, MiB, MiB, 0, w.done).positioned); /* the write took the only stream entry */
}

static void test_first_come_first_served(void)
{
    emulate_params_t p = params_of("disk");
    emulate_device_t d;
    emulate_device_init(&d, &p);
    /* requests arriving while the disk is busy complete in arrival order, each after the one before */
    uint64_t prev_done = 0;
    for (int i = 0; i < 10; i++) {
        uint64_t bytes = (uint64_t)(10 - i) * 64 * KiB; /* later ones are shorter: no shortest-first reordering */
        emulate_result_t r = req(&d, emulate_file_key(8, (uint64_t)i % 3), (uint64_t)i * 7 * MiB, bytes, 0, (uint64_t)i);
        if (i) CHECK(r.start == prev_done);
        prev_done = r.done;
    }
    /* an idle device starts a request at its arrival */
    emulate_result_t late = req(&d, 8, 0, 4096, 0, prev_done + 5 * MS);
    CHECK(late.start == prev_done + 5 * MS);
}

int main(void)
{
    test_presets();
    test_limits_of_striping();
    test_split_at_unit_boundaries();
    test_files_start_on_different_targets();
    test_targets_serve_in_parallel();
    test_one_queue_does_not_delay_another();
    test_a_sequential_reader_keeps_a_stream_per_target();
    test_sequential_stream_costs_transfer_only();
    test_interleaved_streams_beyond_the_table_position();
    test_longer_distance_costs_more();
    test_servers_serve_in_parallel();
    test_write_behind();
    test_first_come_first_served();
    if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
    return failures != 0;
}
