/* Unit tests of the storage device model (runtime/src/emulate/device.c), with time passed in: a sequential stream
 * costs its transfer only; more interleaved streams than the device prefetches for pay positioning; a longer seek
 * costs more; servers serve in parallel; write-behind; first come first served; the presets. */
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
    test_sequential_stream_costs_transfer_only();
    test_interleaved_streams_beyond_the_table_position();
    test_longer_distance_costs_more();
    test_servers_serve_in_parallel();
    test_write_behind();
    test_first_come_first_served();
    if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
    return failures != 0;
}
