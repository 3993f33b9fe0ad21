/* Unit tests of the cost model (runtime/src/profile/model.c) on synthetic machine profiles: the strategy it ranks
 * first where the terms that separate the strategies are clear (a slow network between hosts, a disk that
 * positions per request, a page cache that absorbs writes), its monotonicity (more bytes, a faster network, more
 * targets), and the profile's check. Outcomes only: no test compares against a constant of the equations.
 * `test_model -v` prints every case's predictions. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "profile/profile.h"

#include "check.h"

#define KIB 1024.0
#define MIB (1024.0 * 1024.0)

static int verbose;

/* A curve of throughput against request size from a device's time per request: a fixed cost (positioning, a
 * call) plus the bytes at its streaming rate, at 4 KiB .. 16 MiB. */
static iotame_model_curve_t curve_of(double fixed_seconds, double rate)
{
    iotame_model_curve_t c = {.n = 0};
    for (double r = 4 * KIB; r <= 16 * MIB; r *= 4) {
        c.x[c.n] = r;
        c.y[c.n] = r / (fixed_seconds + r / rate);
        c.n++;
    }
    return c;
}

/* A disk that positions: 8 ms a scattered request, 120 MB/s streaming; concurrent sequential streams make it
 * position between them. Network: shared memory within a node, inter_rate between nodes. */
static iotame_profile_t disk_profile(double inter_rate)
{
    iotame_profile_t p = {
        .write_seq = curve_of(50e-6, 120e6),
        .write_scattered = curve_of(8e-3, 120e6),
        .read_seq = curve_of(50e-6, 120e6),
        .read_scattered = curve_of(8e-3, 120e6),
        .streams = {.n = 5, .x = {1, 2, 4, 8, 16}, .y = {1, 0.7, 0.6, 0.55, 0.5}},
        .writeback_bytes = 0,
        .syscall_seconds = 2e-6,
        .targets = 4,
        .stripe_unit = (int64_t)MIB,
        .intra_latency = 1e-6,
        .intra_rate = 2.5e9,
        .inter_latency = 50e-6,
        .inter_rate = inter_rate,
        .copy_rate = 5e9,
        .piece_seconds = 20e-9,
    };
    return p;
}

/* One node whose page cache absorbs a gigabyte of writes, on one disk. */
static iotame_profile_t cached_profile(void)
{
    iotame_profile_t p = disk_profile(1e9);
    p.writeback_bytes = 1024 * MIB;
    p.targets = 1;
    return p;
}

static const int ALL[] = {IOTAME_MODEL_PASSTHROUGH, IOTAME_MODEL_INDEPENDENT, IOTAME_MODEL_TWO_PHASE,
                          IOTAME_MODEL_NODE_LOCAL, IOTAME_MODEL_TARGET_ALIGNED, IOTAME_MODEL_VIEW_BASED};
/* The strategies the collective side offers a file shared across hosts (independent needs a local disk file
 * system: collective/independent.c). */
static const int SHARED_FS[] = {IOTAME_MODEL_PASSTHROUGH, IOTAME_MODEL_TWO_PHASE, IOTAME_MODEL_NODE_LOCAL,
                                IOTAME_MODEL_TARGET_ALIGNED, IOTAME_MODEL_VIEW_BASED};

/* The fastest of kinds[0..n) for the call (printing the ranking under -v). */
static int best_of(const char *what, const iotame_profile_t *p, const iotame_model_call_t *c, const int *kinds, int n)
{
    int order[IOTAME_MODEL_KINDS];
    double t[IOTAME_MODEL_KINDS];
    CHECK(iotame_model_rank(p, c, kinds, n, order, t) == n);
    if (verbose) {
        printf("%s:", what);
        for (int i = 0; i < n; i++) printf(" %s %.3g s", iotame_model_kind_name(order[i]), t[i]);
        printf("\n");
    }
    for (int i = 1; i < n; i++) CHECK(t[i] >= t[i - 1]);
    return order[0];
}

/* Matrix on the testbed: 4 hosts x 1 rank, 1 MiB blocks interleaved, 4 targets. */
static iotame_model_call_t large_across_hosts(void)
{
    iotame_model_call_t c = {.write = 1, .nprocs = 4, .nodes = 4, .bytes = (int64_t)(64 * MIB), .pieces = 16,
                             .interleaved = 1, .sieves = 1};
    return c;
}

static void test_large_pieces_across_hosts_slow_network(void)
{
    iotame_profile_t slow = disk_profile(50e6), fast = disk_profile(10e9);
    for (int write = 1; write >= 0; write--) {
        iotame_model_call_t c = large_across_hosts();
        c.write = write;
        CHECK(best_of("1 MiB, 4 hosts, slow network", &slow, &c, SHARED_FS, 5) == IOTAME_MODEL_NODE_LOCAL);
        /* node_local sends nothing between the hosts: the network between them does not change its time */
        CHECK(iotame_model_predict(&slow, &c, IOTAME_MODEL_NODE_LOCAL) ==
              iotame_model_predict(&fast, &c, IOTAME_MODEL_NODE_LOCAL));
        /* the network is what decides: with 16 KiB pieces node_local's requests are small, which a slow network
         * still makes worth it and a fast one does not */
        c.pieces = 1024;
        CHECK(best_of("16 KiB, 4 hosts, slow network", &slow, &c, SHARED_FS, 5) == IOTAME_MODEL_NODE_LOCAL);
        CHECK(best_of("16 KiB, 4 hosts, fast network", &fast, &c, SHARED_FS, 5) != IOTAME_MODEL_NODE_LOCAL);
    }
}

static int exchanging(int kind)
{
    return kind == IOTAME_MODEL_TWO_PHASE || kind == IOTAME_MODEL_VIEW_BASED || kind == IOTAME_MODEL_PASSTHROUGH;
}

/* Small interleaved pieces on a disk that positions per request: an exchange that turns them into large sequential
 * requests beats each process's own requests, with sieving or without, on one node or two. */
static void test_small_interleaved_on_positioning_disk(void)
{
    iotame_profile_t p = disk_profile(1e9);
    p.targets = 1;
    const int kinds[] = {IOTAME_MODEL_PASSTHROUGH, IOTAME_MODEL_TWO_PHASE, IOTAME_MODEL_VIEW_BASED};
    for (int nodes = 1; nodes <= 2; nodes++)
        for (int sieves = 0; sieves <= 1; sieves++)
            for (int write = 0; write <= 1; write++) {
                iotame_model_call_t c = {.write = write, .nprocs = 2, .nodes = nodes, .bytes = (int64_t)(2 * MIB),
                                         .pieces = 4096, .interleaved = 1, .sieves = sieves};
                double ind = iotame_model_predict(&p, &c, IOTAME_MODEL_INDEPENDENT);
                int best = best_of("256 B interleaved, positioning disk", &p, &c, kinds, 3);
                CHECK(exchanging(best));
                CHECK(iotame_model_predict(&p, &c, best) < ind);
            }
    /* positioning is what independent loses by without sieving: on a device whose scattered requests cost what
     * sequential ones do, its gap to the exchange is smaller */
    iotame_profile_t flat = p;
    flat.write_scattered = flat.write_seq;
    flat.read_scattered = flat.read_seq;
    for (int nodes = 1; nodes <= 2; nodes++) { /* writes, under a library that does not sieve them */
        iotame_model_call_t c = {.write = 1, .nprocs = 2, .nodes = nodes, .bytes = (int64_t)(2 * MIB),
                                 .pieces = 512, .interleaved = 1, .sieves = 0};
        double on_disk = iotame_model_predict(&p, &c, IOTAME_MODEL_INDEPENDENT) /
                         iotame_model_predict(&p, &c, IOTAME_MODEL_TWO_PHASE);
        double on_flat = iotame_model_predict(&flat, &c, IOTAME_MODEL_INDEPENDENT) /
                         iotame_model_predict(&flat, &c, IOTAME_MODEL_TWO_PHASE);
        CHECK(on_disk > on_flat);
    }
}

/* One node whose page cache absorbs the writes: small pieces are best written by each process with sieving (no
 * exchange, no aggregator doing every process's pieces); without sieving (one call per piece) they are not. */
static void test_one_node_page_cache(void)
{
    iotame_profile_t p = cached_profile();
    iotame_model_call_t c = {.write = 1, .nprocs = 2, .nodes = 1, .bytes = (int64_t)(2 * MIB), .pieces = 16384,
                             .interleaved = 1, .sieves = 1};
    CHECK(best_of("64 B, one node, page cache, sieving", &p, &c, ALL, 6) == IOTAME_MODEL_INDEPENDENT);
    c.pieces = 256; /* 4 KiB pieces */
    CHECK(best_of("4 KiB, one node, page cache, sieving", &p, &c, ALL, 6) == IOTAME_MODEL_INDEPENDENT);
    c.pieces = 16384;
    c.sieves = 0;
    CHECK(best_of("64 B, one node, page cache, no sieving", &p, &c, ALL, 6) != IOTAME_MODEL_INDEPENDENT);
}

/* Absorbed writes at the page cache's own speed (a new file's pages allocated as they are written): where that is
 * well below a copy, rewriting each process's whole interleaved range (independent's sieving) costs more than the
 * library's collective call writing the range once; at copy speed sieving stays ahead. */
static void test_page_cache_writes_at_their_own_speed(void)
{
    iotame_profile_t p = cached_profile();
    iotame_model_call_t c = {.write = 1, .nprocs = 2, .nodes = 1, .bytes = (int64_t)(2 * MIB), .pieces = 256,
                             .interleaved = 1, .sieves = 1};
    CHECK(best_of("4 KiB, page cache at copy speed", &p, &c, ALL, 6) == IOTAME_MODEL_INDEPENDENT);
    p.writeback_rate = p.copy_rate / 4;
    CHECK(iotame_model_predict(&p, &c, IOTAME_MODEL_INDEPENDENT) >
          iotame_model_predict(&p, &c, IOTAME_MODEL_PASSTHROUGH));
    p.writeback_rate = -1;
    CHECK(iotame_model_profile_problem(&p) && strstr(iotame_model_profile_problem(&p), "writeback_rate"));
}

/* An engine strategy's first call on a handle pays for its set-up (the shadow handle): the engine kinds, and only
 * they, take it, so that a file written in one call goes to a library strategy unless the engine saves more. */
static void test_engine_setup_is_charged_to_the_engine_only(void)
{
    iotame_profile_t p = disk_profile(1e9);
    iotame_model_call_t c = {.write = 1, .nprocs = 4, .nodes = 2, .bytes = (int64_t)(4 * MIB), .pieces = 64,
                             .interleaved = 1, .sieves = 1};
    double before[IOTAME_MODEL_KINDS];
    for (int k = IOTAME_MODEL_PASSTHROUGH; k < IOTAME_MODEL_KINDS; k++) before[k] = iotame_model_predict(&p, &c, k);
    c.setup_seconds = 0.25;
    for (int k = IOTAME_MODEL_PASSTHROUGH; k < IOTAME_MODEL_KINDS; k++) {
        const int engine = k != IOTAME_MODEL_PASSTHROUGH && k != IOTAME_MODEL_INDEPENDENT;
        CHECK(fabs(iotame_model_predict(&p, &c, k) - before[k] - (engine ? 0.25 : 0)) < 1e-12);
    }
}

/* Holes that a write fills cost reading the range first (read-modify-write) where nothing holds its pages: more
 * than writing the whole range densely, for the aggregators' fill and for the library's sieving alike. */
static void test_filled_holes_cost_a_read(void)
{
    iotame_profile_t p = disk_profile(1e9);
    p.targets = 1;
    iotame_model_call_t holes = {.write = 1, .nprocs = 2, .nodes = 1, .bytes = (int64_t)(32 * MIB), .pieces = 1024,
                                 .gap = 4096, .sieves = 1};
    iotame_model_call_t dense = holes;
    dense.gap = 0;
    dense.bytes = holes.bytes + (holes.nprocs * holes.pieces - 1) * holes.gap; /* the same range, no holes */
    const int kinds[] = {IOTAME_MODEL_PASSTHROUGH, IOTAME_MODEL_INDEPENDENT, IOTAME_MODEL_TWO_PHASE};
    for (int i = 0; i < 3; i++)
        CHECK(iotame_model_predict(&p, &holes, kinds[i]) > iotame_model_predict(&p, &dense, kinds[i]));
}

/* A set of calls to check monotonicity on: shapes and sizes the strategies treat differently. */
static iotame_model_call_t shape(int i, int write)
{
    iotame_model_call_t c = {.write = write, .nprocs = 8, .nodes = 2, .pieces = 64, .sieves = 1};
    c.interleaved = i % 2;
    c.gap = (i / 2) % 3 == 0 ? 0 : (i / 2) % 3 == 1 ? 4096 : 1 << 20;
    c.nodes = i / 6 % 2 ? 1 : 4;
    c.nprocs = c.nodes * 2;
    return c;
}

/* More bytes are never predicted faster, from calls that reach every target on: below that a larger call may reach
 * more targets and run faster, as it does on a striped file system. */
static void test_more_bytes_never_faster(void)
{
    iotame_profile_t profiles[] = {disk_profile(100e6), disk_profile(10e9), cached_profile()};
    profiles[1].streams = (iotame_model_curve_t){.n = 3, .x = {1, 4, 16}, .y = {1, 2.5, 4}}; /* needs parallelism */
    for (size_t pi = 0; pi < sizeof profiles / sizeof *profiles; pi++)
        for (int i = 0; i < 12; i++)
            for (int write = 0; write <= 1; write++)
                for (int kind = IOTAME_MODEL_PASSTHROUGH; kind < IOTAME_MODEL_KINDS; kind++) {
                    iotame_model_call_t c = shape(i, write);
                    double last = 0, reach = (double)profiles[pi].targets * (double)profiles[pi].stripe_unit;
                    for (double b = reach; b <= 4096 * MIB; b *= 2) { /* larger pieces */
                        c.bytes = (int64_t)b;
                        double t = iotame_model_predict(&profiles[pi], &c, kind);
                        if (!(t >= last))
                            fprintf(stderr, "profile %zu shape %d write %d %s: %.0f bytes %g s < %g s\n", pi, i,
                                    write, iotame_model_kind_name(kind), b, t, last);
                        CHECK(t >= last);
                        last = t;
                    }
                    last = 0;
                    c.piece_size = 4096;
                    for (int64_t k = 1; k <= 1 << 16; k *= 2) { /* more pieces of one size */
                        if ((double)(k * c.nprocs * c.piece_size) < reach) continue;
                        c.pieces = k;
                        c.bytes = k * c.nprocs * c.piece_size;
                        double t = iotame_model_predict(&profiles[pi], &c, kind);
                        if (!(t >= last))
                            fprintf(stderr, "profile %zu shape %d write %d %s: %lld pieces %g s < %g s\n", pi, i,
                                    write, iotame_model_kind_name(kind), (long long)k, t, last);
                        CHECK(t >= last);
                        last = t;
                    }
                }
}

static void test_faster_network_never_slower(void)
{
    const int kinds[] = {IOTAME_MODEL_PASSTHROUGH, IOTAME_MODEL_TWO_PHASE, IOTAME_MODEL_NODE_LOCAL,
                         IOTAME_MODEL_TARGET_ALIGNED, IOTAME_MODEL_VIEW_BASED};
    for (int i = 0; i < 12; i++)
        for (int write = 0; write <= 1; write++)
            for (int k = 0; k < 5; k++) {
                iotame_model_call_t c = shape(i, write);
                c.bytes = (int64_t)(256 * MIB);
                double last = INFINITY;
                for (double rate = 10e6; rate <= 100e9; rate *= 3) {
                    iotame_profile_t p = disk_profile(rate);
                    p.intra_rate = 2 * rate;
                    p.inter_latency = p.intra_latency = 1e3 / rate;
                    double t = iotame_model_predict(&p, &c, kinds[k]);
                    CHECK(t <= last);
                    last = t;
                }
            }
}

static void test_more_targets_never_slower_for_target_aligned(void)
{
    iotame_profile_t profiles[] = {disk_profile(100e6), disk_profile(10e9)};
    for (size_t pi = 0; pi < 2; pi++)
        for (int i = 0; i < 12; i++)
            for (int write = 0; write <= 1; write++)
                for (double b = MIB; b <= 1024 * MIB; b *= 8) {
                    iotame_model_call_t c = shape(i, write);
                    c.bytes = (int64_t)b;
                    double last = INFINITY;
                    for (int64_t t = 1; t <= 32; t++) {
                        c.targets = t;
                        double s = iotame_model_predict(&profiles[pi], &c, IOTAME_MODEL_TARGET_ALIGNED);
                        if (!(s <= last))
                            fprintf(stderr, "profile %zu shape %d write %d %.0f bytes: %lld targets %g s > %g s\n",
                                    pi, i, write, b, (long long)t, s, last);
                        CHECK(s <= last);
                        last = s;
                    }
                }
    /* and they help: a large call on 8 processes runs faster on 8 targets than on 1 */
    iotame_model_call_t c = {.write = 1, .nprocs = 8, .nodes = 2, .bytes = (int64_t)(512 * MIB), .pieces = 1,
                             .sieves = 1, .targets = 1};
    double one = iotame_model_predict(&profiles[1], &c, IOTAME_MODEL_TARGET_ALIGNED);
    c.targets = 8;
    CHECK(iotame_model_predict(&profiles[1], &c, IOTAME_MODEL_TARGET_ALIGNED) < one);
}

static void test_profile_problems_and_kinds(void)
{
    iotame_profile_t p = disk_profile(1e9);
    CHECK(iotame_model_profile_problem(&p) == NULL);
    p.read_seq.x[2] = p.read_seq.x[1];
    CHECK(iotame_model_profile_problem(&p) && strstr(iotame_model_profile_problem(&p), "read_seq"));
    p = disk_profile(1e9);
    p.streams.n = 0;
    CHECK(iotame_model_profile_problem(&p) && strstr(iotame_model_profile_problem(&p), "streams"));
    p = disk_profile(1e9);
    p.inter_rate = 0;
    CHECK(iotame_model_profile_problem(&p) && strstr(iotame_model_profile_problem(&p), "inter_rate"));
    p = disk_profile(1e9);
    p.copy_rate = NAN;
    CHECK(iotame_model_profile_problem(&p) && strstr(iotame_model_profile_problem(&p), "copy_rate"));

    p = disk_profile(1e9);
    iotame_model_call_t c = large_across_hosts();
    CHECK(iotame_model_predict(&p, &c, IOTAME_MODEL_KINDS) < 0);
    CHECK(iotame_model_predict(&p, &c, -1) < 0);
    int bad[] = {IOTAME_MODEL_TWO_PHASE, 99}, order[2];
    CHECK(iotame_model_rank(&p, &c, bad, 2, order, NULL) == -1);
    const char *name = iotame_model_kind_name(IOTAME_MODEL_NODE_LOCAL);
    CHECK(name && strcmp(name, "node_local") == 0);
    CHECK(iotame_model_kind_name(IOTAME_MODEL_KINDS) == NULL);
    /* a strategy that declares no term (IOTAME_MODEL_NONE) is never predicted */
    CHECK(iotame_model_predict(&p, &c, IOTAME_MODEL_NONE) < 0);
    CHECK(iotame_model_kind_name(IOTAME_MODEL_NONE) == NULL);
    for (int k = IOTAME_MODEL_PASSTHROUGH; k < IOTAME_MODEL_KINDS; k++) {
        double t = iotame_model_predict(&p, &c, k);
        CHECK(t > 0 && isfinite(t));
    }
}

/* Staged collective writes (aggregator caching against node staging), decided with the model's error of 0.2. Small
 * pieces interleaved across nodes on a disk that positions: caching at the aggregators (whole blocks) leaves a small
 * fraction of node staging's device time behind (one positioning write per node's run), and pays even over a slow
 * network. Large interleaved pieces: it pays over a fast network, not over a slow one, whose exchange costs more
 * than the positioning it saves. Each node's part in one region: node staging, which exchanges nothing. The
 * application itself sees less with node staging (a copy alone) in every case. */
static void test_staged_cached_or_node(void)
{
    for (int fast = 0; fast <= 1; fast++) {
        iotame_profile_t p = disk_profile(fast ? 1e9 : 10e6);
        p.targets = 1;
        iotame_model_call_t small = {.write = 1, .nprocs = 8, .nodes = 4, .bytes = (int64_t)(32 * MIB),
                                     .pieces = 4096, .interleaved = 1, .block_size = (int64_t)MIB};
        iotame_model_call_t large = small, apart = small;
        large.pieces = 4;
        apart.interleaved = 0;
        const iotame_model_call_t *calls[] = {&small, &large, &apart};
        for (int i = 0; i < 3; i++) {
            double node_behind, cached_behind, node_total, cached_total;
            const double node = iotame_model_staged(&p, calls[i], 0, &node_behind);
            const double cached = iotame_model_staged(&p, calls[i], 1, &cached_behind);
            const int pays = iotame_model_cache_pays(&p, calls[i], 0.2, &node_total, &cached_total);
            if (verbose)
                printf("staged %s, network %s: node %.4f + %.4f s, cached %.4f + %.4f s: %s\n",
                       i == 0 ? "small interleaved" : i == 1 ? "large interleaved" : "apart", fast ? "fast" : "slow",
                       node, node_behind, cached, cached_behind, pays ? "cached" : "node");
            CHECK(node > 0 && cached > node && node_behind > 0 && cached_behind > 0);
            CHECK(fabs(node_total - (node + node_behind)) < 1e-9);
            CHECK(fabs(cached_total - (cached + cached_behind)) < 1e-9);
            CHECK(pays == (i == 0 || (i == 1 && fast)));
            if (i == 0) CHECK(cached_behind < node_behind / 4);
        }
    }
}

int main(int argc, char **argv)
{
    verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
    test_large_pieces_across_hosts_slow_network();
    test_small_interleaved_on_positioning_disk();
    test_one_node_page_cache();
    test_page_cache_writes_at_their_own_speed();
    test_engine_setup_is_charged_to_the_engine_only();
    test_filled_holes_cost_a_read();
    test_more_bytes_never_faster();
    test_faster_network_never_slower();
    test_more_targets_never_slower_for_target_aligned();
    test_profile_problems_and_kinds();
    test_staged_cached_or_node();
    if (failures) fprintf(stderr, "%d checks failed\n", failures);
    return failures != 0;
}
