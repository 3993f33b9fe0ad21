/* The throttle's gate and controller without MPI or files: threads of one process take turns at a gate (the gate
 * is process-shared, so threads exercise the same code as processes), and the controller is fed the windows of
 * synthetic devices whose throughput per level is known. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "posix/posix.h"
#include "throttle/throttle.h"

/* ---- the gate ---- */

enum { THREADS = 8, REQUESTS = 150 };

static throttle_gate_t gate;
static int level_for_test;
static int inside_now, inside_max, entries, worst_overtaking, overtaken_beyond;
static pthread_mutex_t book = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < REQUESTS; i++) {
        pthread_mutex_lock(&book);
        int arrived_at = entries;
        pthread_mutex_unlock(&book);
        throttle_gate_enter(&gate, level_for_test, 60000000000ull);
        pthread_mutex_lock(&book);
        int overtaken = entries - arrived_at; /* entries by others between this arrival and this entry */
        if (overtaken > worst_overtaking) worst_overtaking = overtaken;
        if (overtaken > 2 * (THREADS - 1) + level_for_test) overtaken_beyond++;
        entries++;
        if (++inside_now > inside_max) inside_max = inside_now;
        pthread_mutex_unlock(&book);
        usleep(100);
        pthread_mutex_lock(&book);
        inside_now--;
        pthread_mutex_unlock(&book);
        throttle_gate_leave(&gate, 4096, 0, NULL);
    }
    return NULL;
}

static void gate_run(int level)
{
    memset(&gate, 0, sizeof gate);
    CHECK(throttle_gate_init(&gate) == 0);
    level_for_test = level;
    inside_now = inside_max = entries = worst_overtaking = overtaken_beyond = 0;
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    CHECK(entries == THREADS * REQUESTS);
    CHECK(inside_max <= level);           /* never more than the level inside */
    CHECK(gate.max_inside <= level);      /* and the gate's own counter agrees */
    CHECK(gate.max_inside == inside_max || gate.max_inside >= inside_max);
    CHECK(inside_max == level);           /* with 8 threads and sleeps inside, the level is reached */
    /* Arrival order: a waiting thread is overtaken only by tickets taken before its own: the others once each,
     * and once more each for the moment between its look at the count and its ticket. A thread preempted in that
     * moment can see more, so the bound must hold for all but a few entries; an unfair lock lets threads wait
     * through many rounds again and again. */
    CHECK(overtaken_beyond <= THREADS * REQUESTS / 50);
    CHECK(gate.inside == 0 && gate.done == gate.ticket && gate.bypassed == 0);
    fprintf(stderr, "gate level %d: max inside %d, worst overtaking %d, beyond the bound %d of %d\n", level,
            inside_max, worst_overtaking, overtaken_beyond, entries);
}

/* A stalled holder: a ticket taken and never given back; a waiter goes ahead after stall_ns and is counted. */
static void gate_stall(void)
{
    memset(&gate, 0, sizeof gate);
    CHECK(throttle_gate_init(&gate) == 0);
    throttle_gate_enter(&gate, 1, 60000000000ull); /* the "dead" holder */
    uint64_t waited = throttle_gate_enter(&gate, 1, 50000000ull);
    CHECK(waited >= 50000000ull);
    CHECK(gate.bypassed == 1);
    throttle_gate_leave(&gate, 0, 0, NULL);
}

/* ---- the controller ---- */

typedef double (*curve_t)(int level);

/* One disk: each stream beyond the first makes the head seek between streams. */
static double disk(int l) { return 60.0 / (1.0 + 0.6 * (l - 1)); }
/* A RAID of five data disks with eight prefetch streams: parallel up to five, flat to eight, seeks beyond. */
static double raid(int l) { return l <= 5 ? 40.0 * l : l <= 8 ? 200.0 : 200.0 * 8.0 / l * 0.7; }
/* A device that throttling only hurts (buffered writes, or flash). */
static double flat(int l) { return 100.0 + l * 0.01; }
static double two(int l) { return l == 2 ? 150.0 : 100.0; }
/* A disk as the emulated one behaves: every reader beyond one positions on every request, so the curve is flat
 * down to two and jumps at one. */
static double cliff(int l) { return l == 1 ? 55.0 : 40.0; }
/* A device that wants every stream (throughput grows with concurrency). */
static double wide(int l) { return 10.0 * l; }

static unsigned noise_state = 12345;
static double noisy(double v, double amplitude)
{
    noise_state = noise_state * 1103515245u + 12345u;
    double r = (double)((noise_state >> 16) & 0x7fff) / 32767.0 * 2 - 1;
    return v * (1 + amplitude * r);
}

/* Runs windows until the controller is steady (or `max_windows`); returns the windows it took, -1 if never. */
static int converge(throttle_ctl_t *c, const throttle_knobs_t *k, curve_t f, double noise, int max_windows)
{
    uint64_t now = 0;
    for (int w = 1; w <= max_windows; w++) {
        double mbs = noisy(f(c->level), noise);
        uint64_t busy = (uint64_t)k->window_ns, bytes = (uint64_t)(mbs * 1e6 * busy * 1e-9);
        now += busy;
        throttle_ctl_window(c, k, bytes, busy, now);
        if (c->state == THROTTLE_STEADY && c->reference > 0) return w;
    }
    return -1;
}

static double best_of(curve_t f, int nmax)
{
    double b = 0;
    for (int l = 1; l <= nmax; l++)
        if (f(l) > b) b = f(l);
    return b;
}

static void controller(void)
{
    throttle_knobs_t k = {.window_ns = 250e6, .threshold = 0.25, .tolerance = 0.05, .budget = 1.0};
    throttle_ctl_t c;
    struct {
        curve_t f;
        int nmax;
    } cases[] = {{disk, 16}, {raid, 16}, {flat, 16}, {two, 16}, {wide, 16}, {cliff, 16}, {disk, 4}, {raid, 4},
                 {raid, 12}, {cliff, 8}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int noise = 0; noise < 2; noise++) {
            throttle_ctl_init(&c, cases[i].nmax, 0);
            int w = converge(&c, &k, cases[i].f, noise ? 0.08 : 0, 200);
            CHECK(w > 0);
            /* the level kept is within tolerance (and the noise) of the best there is */
            CHECK(cases[i].f(c.level) >= best_of(cases[i].f, cases[i].nmax) * (1 - k.tolerance - (noise ? 0.16 : 0)));
            fprintf(stderr, "curve %zu nmax %d noise %d: level %d after %d windows\n", i, cases[i].nmax, noise, c.level, w);
        }
    }
    /* Ties go to the higher level: on a flat device nothing is throttled. */
    throttle_ctl_init(&c, 16, 0);
    converge(&c, &k, flat, 0, 200);
    CHECK(c.level == 16);

    /* A budget: the search takes longer but still ends at the best; with no budget it never leaves the default
     * once a level lost. */
    k.budget = 0.1;
    throttle_ctl_init(&c, 16, 0);
    int slow = converge(&c, &k, raid, 0, 1000);
    CHECK(slow > 0 && raid(c.level) >= 200.0 * 0.95);
    k.budget = 0;
    throttle_ctl_init(&c, 16, 0);
    converge(&c, &k, wide, 0, 100); /* level 8 loses against 16: nothing more is examined */
    CHECK(c.level == 16 && c.state == THROTTLE_SEARCH);
    k.budget = 1.0;

    /* A remembered level: steady at once, no search. */
    throttle_ctl_init(&c, 16, 4);
    CHECK(c.state == THROTTLE_STEADY && c.level == 4 && c.known);
    converge(&c, &k, raid, 0, 3);
    CHECK(c.searches == 1 && c.level == 4);

    /* A change of device after the search: two deviating windows start a new search, which finds the new best. */
    throttle_ctl_init(&c, 16, 0);
    converge(&c, &k, raid, 0, 200);
    int before = (int)c.searches, kept = c.level;
    CHECK(c.found == kept && !c.known);
    for (int w = 0; w < 3; w++) throttle_ctl_window(&c, &k, (uint64_t)(disk(c.level) * 1e6 * 0.25), 250000000, 0);
    CHECK((int)c.searches == before + 1);
    CHECK(c.state == THROTTLE_SEARCH && c.found == kept); /* the last finished search's level until the next ends */
    converge(&c, &k, disk, 0, 200);
    CHECK(c.level == 1 && c.found == 1);

    /* Phases: the log holds the levels in force, the search's first. */
    CHECK(c.nphases >= 2 && c.phase[0].level == 16 && c.phase[0].searching);
}

/* ---- storage targets: Lustre's layout ---- */

static void put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }

static size_t layout(unsigned char *buf, uint32_t magic, uint16_t count, uint32_t stripe_size, const uint32_t *ost)
{
    size_t objects = magic == 0x0BD30BD0u ? 48 : 32;
    memset(buf, 0, objects + (size_t)count * 24);
    put32(buf, magic);
    put32(buf + 24, stripe_size);
    memcpy(buf + 28, &count, 2);
    for (unsigned i = 0; i < count; i++) put32(buf + objects + i * 24 + 20, ost[i]);
    return objects + (size_t)count * 24;
}

static void lustre(void)
{
    unsigned char buf[IOTAME_POSIX_LUSTRE_XATTR_MAX];
    uint32_t osts[4] = {7, 2, 11, 5}, size = 0, got[64];
    size_t n = layout(buf, 0x0BD10BD0u, 4, 1 << 20, osts);
    CHECK(iotame_posix_lustre_layout(buf, n, &size, got, 64) == 4);
    CHECK(size == 1u << 20 && got[0] == 7 && got[1] == 2 && got[2] == 11 && got[3] == 5);
    n = layout(buf, 0x0BD30BD0u, 3, 4 << 20, osts); /* v3: a pool name before the objects */
    CHECK(iotame_posix_lustre_layout(buf, n, &size, got, 64) == 3 && size == 4u << 20 && got[2] == 11);
    CHECK(iotame_posix_lustre_layout(buf, n - 1, &size, got, 64) == 0); /* truncated */
    CHECK(iotame_posix_lustre_layout(buf, n, &size, got, 2) == 0);      /* wider than the caller takes */
    n = layout(buf, 0x0BD60BD0u, 2, 1 << 20, osts);                    /* composite (PFL): not a plain layout */
    CHECK(iotame_posix_lustre_layout(buf, n, &size, got, 64) == 0);
}

int main(void)
{
    lustre();
    gate_run(1);
    gate_run(3);
    gate_run(8);
    gate_stall();
    controller();
    return failures != 0;
}
