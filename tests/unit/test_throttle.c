/* The throttle's gate and controller without MPI or files: threads of one process (and forked ones, for processes
 * that die) take turns at a gate in shared memory, and the controller is fed the windows of synthetic devices whose
 * throughput per level is known. The storage targets of the POSIX layer (posix/target.c: Lustre's layout, the
 * modules' per-target slots and layout hooks) with a registry of the test's own. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "posix/posix.h"
#include "throttle/throttle.h"

/* ---- the gate ---- */

enum { THREADS = 8, REQUESTS = 150 };
#define NEVER 60000000000ull /* a stall limit no test reaches */
#define STALL 50000000ull    /* the stall limit of the tests that bypass */

static throttle_gate_t *gate; /* in shared memory: forked processes use it too */
static int level_for_test;
static int inside_now, inside_max, entries, worst_overtaking, overtaken_beyond;
static pthread_mutex_t book = PTHREAD_MUTEX_INITIALIZER;

static void gate_fresh(void)
{
    memset(gate, 0, sizeof *gate);
    CHECK(throttle_gate_init(gate) == 0);
}

/* The tickets taken and not yet given back (the holders inside and the waiters, as the gate counts them). */
static int32_t gate_outstanding(void) { return (int32_t)(gate->ticket - gate->done); }

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < REQUESTS; i++) {
        pthread_mutex_lock(&book);
        int arrived_at = entries;
        pthread_mutex_unlock(&book);
        throttle_pass_t pass;
        throttle_gate_enter(gate, level_for_test, NEVER, &pass);
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
        throttle_gate_leave(gate, &pass, 4096, 0, NULL);
    }
    return NULL;
}

/* Eight threads take turns at the gate as it is: exactly `level` of them are inside at once, in arrival order. */
static void gate_load(int level)
{
    level_for_test = level;
    inside_now = inside_max = entries = worst_overtaking = overtaken_beyond = 0;
    int32_t outstanding = gate_outstanding(), bypassed = gate->bypassed;
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    CHECK(entries == THREADS * REQUESTS);
    CHECK(inside_max <= level); /* never more than the level inside */
    CHECK(inside_max == level); /* with 8 threads and sleeps inside, the level is reached */
    /* Arrival order: a waiting thread is overtaken only by tickets taken before its own: the others once each,
     * and once more each for the moment between its look at the count and its ticket. A thread preempted in that
     * moment can see more, so the bound must hold for all but a few entries; an unfair lock lets threads wait
     * through many rounds again and again. */
    CHECK(overtaken_beyond <= THREADS * REQUESTS / 50);
    CHECK(gate_outstanding() == outstanding && gate->bypassed == bypassed); /* every ticket given back once */
    fprintf(stderr, "gate level %d: max inside %d, worst overtaking %d, beyond the bound %d of %d\n", level,
            inside_max, worst_overtaking, overtaken_beyond, entries);
}

static void gate_run(int level)
{
    gate_fresh();
    gate_load(level);
    CHECK(gate->max_inside <= level); /* the gate's own counter agrees */
    CHECK(gate->inside == 0 && gate_outstanding() == 0 && gate->bypassed == 0);
}

/* A counter of the gate read under its lock (threads of the test update it meanwhile). */
static int32_t gate_read(const int32_t *counter)
{
    if (pthread_mutex_lock(&gate->lock) == EOWNERDEAD) pthread_mutex_consistent(&gate->lock);
    int32_t v = *counter;
    pthread_mutex_unlock(&gate->lock);
    return v;
}

/* Waits until the gate counts `n` bypasses (the test's sequencing, not a timing). */
static void gate_await_bypass(int n)
{
    while (gate_read(&gate->bypassed) < n) usleep(1000);
}

typedef struct {
    int level, left;
} slow_t;

/* A waiter at the gate: it goes ahead of the stalled holders after STALL and leaves once a holder left. */
static void *gate_bypasser(void *arg)
{
    slow_t *s = arg;
    throttle_pass_t pass;
    uint64_t waited = throttle_gate_enter(gate, s->level, STALL, &pass);
    CHECK(waited >= STALL);
    while (!__atomic_load_n(&s->left, __ATOMIC_ACQUIRE)) usleep(1000);
    throttle_gate_leave(gate, &pass, 0, 0, NULL);
    return NULL;
}

/* Dead holders (processes that died inside their request): after STALL without progress a waiter goes ahead of
 * one of them, and its ticket is given back for good; with every dead one's given back, the gate admits exactly
 * `level` at once again, without another bypass. */
static void gate_dead(int level)
{
    gate_fresh();
    for (int i = 0; i < level; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            throttle_pass_t pass;
            throttle_gate_enter(gate, level, NEVER, &pass);
            _exit(0); /* dies inside its request */
        }
        CHECK(pid > 0 && waitpid(pid, NULL, 0) == pid);
    }
    slow_t s = {level, 0};
    pthread_t t[THREADS];
    for (int i = 0; i < level; i++) { /* each waiter meets a full gate: the dead and the waiters before it */
        pthread_create(&t[i], NULL, gate_bypasser, &s);
        gate_await_bypass(i + 1);
    }
    __atomic_store_n(&s.left, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < level; i++) pthread_join(t[i], NULL);
    CHECK(gate->bypassed == level);
    CHECK(gate->inside == level);   /* the dead are inside for good */
    CHECK(gate_outstanding() == 0); /* and their tickets were given back, once each */
    gate_load(level);
    CHECK(gate->bypassed == level);
}

/* A slow holder (alive, inside longer than the stall limit): a waiter goes ahead of it; when the slow holder then
 * leaves, its ticket was already given back by the bypass and is not given back again, so the gate admits exactly
 * `level` at once afterwards, not one more for every bypass. */
static void gate_slow(int level)
{
    gate_fresh();
    throttle_pass_t pass[THREADS];
    for (int i = 0; i < level; i++) throttle_gate_enter(gate, level, NEVER, &pass[i]); /* the slow: this thread */
    slow_t s = {level, 0};
    pthread_t t;
    pthread_create(&t, NULL, gate_bypasser, &s);
    gate_await_bypass(1);
    for (int i = 0; i < level; i++) throttle_gate_leave(gate, &pass[i], 0, 0, NULL); /* the slow holders leave */
    __atomic_store_n(&s.left, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    CHECK(gate->bypassed == 1);
    CHECK(gate->inside == 0);
    CHECK(gate_outstanding() == 0); /* each ticket given back once: by its leave or by the bypass */
    gate_load(level);
}

/* A waiter that dies (killed while it waits) behind two holders of a gate of level 2, one of which stays inside
 * past the stall limit: the waiter that goes ahead gives back the dead one's ticket, not the slow holder's, so the
 * slow one is counted when it leaves and the gate admits two at once afterwards. */
static void gate_dead_waiter(void)
{
    gate_fresh();
    throttle_pass_t first, slow;
    throttle_gate_enter(gate, 2, NEVER, &first);
    throttle_gate_enter(gate, 2, NEVER, &slow);
    pid_t pid = fork();
    if (pid == 0) {
        throttle_pass_t pass;
        throttle_gate_enter(gate, 2, NEVER, &pass);
        _exit(0);
    }
    while (gate_read(&gate->waiting) < 1) usleep(1000);
    kill(pid, SIGKILL);
    CHECK(pid > 0 && waitpid(pid, NULL, 0) == pid);
    throttle_gate_leave(gate, &first, 0, 0, NULL); /* the dead waiter's turn comes */
    slow_t s = {2, 0};
    pthread_t t;
    pthread_create(&t, NULL, gate_bypasser, &s);
    gate_await_bypass(1);
    throttle_gate_leave(gate, &slow, 0, 0, NULL);
    __atomic_store_n(&s.left, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    CHECK(gate->bypassed == 1);
    CHECK(gate->inside == 0 && gate_outstanding() == 0);
    gate_load(2);
    CHECK(gate->bypassed == 1);
}

/* A slow holder and a dead one inside a gate of level 2, the slow one first: the waiter that goes ahead counts the
 * dead one's ticket (its process is gone), so when the slow one leaves it is counted, and the gate admits two at
 * once afterwards. */
static void gate_slow_and_dead(void)
{
    gate_fresh();
    throttle_pass_t pass;
    throttle_gate_enter(gate, 2, NEVER, &pass); /* the slow holder: this thread */
    pid_t pid = fork();
    if (pid == 0) {
        throttle_gate_enter(gate, 2, NEVER, &pass);
        _exit(0);
    }
    CHECK(pid > 0 && waitpid(pid, NULL, 0) == pid);
    slow_t s = {2, 0};
    pthread_t t;
    pthread_create(&t, NULL, gate_bypasser, &s);
    gate_await_bypass(1);
    throttle_gate_leave(gate, &pass, 0, 0, NULL);
    __atomic_store_n(&s.left, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    CHECK(gate->bypassed == 1);
    CHECK(gate->inside == 1); /* the dead one */
    gate_load(2);
    CHECK(gate->bypassed == 1);
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
            throttle_ctl_init(&c, cases[i].nmax, 0, 0, NULL);
            int w = converge(&c, &k, cases[i].f, noise ? 0.08 : 0, 200);
            CHECK(w > 0);
            /* the level kept is within tolerance (and the noise) of the best there is */
            CHECK(cases[i].f(c.level) >= best_of(cases[i].f, cases[i].nmax) * (1 - k.tolerance - (noise ? 0.16 : 0)));
            fprintf(stderr, "curve %zu nmax %d noise %d: level %d after %d windows\n", i, cases[i].nmax, noise, c.level, w);
        }
    }
    /* Ties go to the higher level: on a flat device nothing is throttled. */
    throttle_ctl_init(&c, 16, 0, 0, NULL);
    converge(&c, &k, flat, 0, 200);
    CHECK(c.level == 16);

    /* A budget: the search takes longer but still ends at the best; with no budget it never leaves the default
     * once a level lost. */
    k.budget = 0.1;
    throttle_ctl_init(&c, 16, 0, 0, NULL);
    int slow = converge(&c, &k, raid, 0, 1000);
    CHECK(slow > 0 && raid(c.level) >= 200.0 * 0.95);
    k.budget = 0;
    throttle_ctl_init(&c, 16, 0, 0, NULL);
    converge(&c, &k, wide, 0, 100); /* level 8 loses against 16: nothing more is examined */
    CHECK(c.level == 16 && c.state == THROTTLE_SEARCH);
    k.budget = 1.0;

    /* A remembered level: steady at once, no search. */
    throttle_ctl_init(&c, 16, 4, 0, NULL);
    CHECK(c.state == THROTTLE_STEADY && c.level == 4 && c.known);
    converge(&c, &k, raid, 0, 3);
    CHECK(c.searches == 1 && c.level == 4);

    /* A change of device after the search: two deviating windows start a new search, which finds the new best. */
    throttle_ctl_init(&c, 16, 0, 0, NULL);
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

/* ---- the level a profile predicts, and the climb from it ---- */

/* The emulated RAID-5's streams curve as calibrated (relative to one stream): up to five streams in parallel,
 * eight prefetched, sixteen thrash. */
static const throttle_curve_t raid_curve = {5, 0, {1, 2, 4, 8, 16}, {1.0, 2.0, 3.9, 4.8, 3.4}};
/* The emulated disk's reads: one stream prefetched, every other positions. */
static const throttle_curve_t cliff_curve = {5, 0, {1, 2, 4, 8, 16}, {1.0, 0.7, 0.7, 0.69, 0.68}};
/* Write-behind: every count the same within noise. */
static const throttle_curve_t level_curve = {5, 0, {1, 2, 4, 8, 16}, {1.0, 1.01, 0.99, 1.0, 0.98}};

/* The curve's first n points. */
static throttle_curve_t first_points(throttle_curve_t c, int n)
{
    c.n = n;
    return c;
}

static void predicted_level(void)
{
    throttle_curve_t three = first_points(raid_curve, 3), one = first_points(raid_curve, 1),
                     none = first_points(raid_curve, 0);
    CHECK(throttle_predict_level(&raid_curve, 16, 0.05) == 8);
    CHECK(throttle_predict_level(&raid_curve, 4, 0.05) == 4);   /* rising up to the node's processes */
    CHECK(throttle_predict_level(&raid_curve, 12, 0.05) == 8);  /* 12 lies inside: 4.0, below 8's 4.8 */
    CHECK(throttle_predict_level(&cliff_curve, 16, 0.05) == 1);
    CHECK(throttle_predict_level(&level_curve, 16, 0.05) == 16); /* ties: the highest, nothing throttled */
    CHECK(throttle_predict_level(&level_curve, 6, 0.05) == 6);   /* nmax inside the curve is a candidate */
    CHECK(throttle_predict_level(&raid_curve, 1, 0.05) == 1);
    /* A curve that ends below the node's processes predicts no level it has not measured. */
    CHECK(throttle_predict_level(&three, 16, 0.05) == 4);
    /* A tolerance wide enough takes the higher levels in. */
    CHECK(throttle_predict_level(&raid_curve, 16, 0.35) == 16);
    CHECK(throttle_predict_level(&none, 16, 0.05) == 0); /* no curve, no prediction */
    CHECK(throttle_predict_level(&one, 16, 0.05) == 0);  /* nor from one stream alone */
    CHECK(throttle_predict_level(NULL, 16, 0.05) == 0);
}

/* The levels a controller measured (mbs > 0), as a bit set of levels < 32. */
static unsigned measured_levels(const throttle_ctl_t *c)
{
    unsigned set = 0;
    for (int i = 0; i < c->ncand; i++)
        if (c->mbs[i] > 0) set |= 1u << c->level_cand[i];
    return set;
}

#define BIT(l) (1u << (l))

static void climb(void)
{
    throttle_knobs_t k = {.window_ns = 250e6, .threshold = 0.25, .tolerance = 0.05, .budget = 1.0};
    throttle_ctl_t c;
    /* A right prediction: starts at 8, measures its neighbours 16 and 4, keeps 8. */
    throttle_ctl_init(&c, 16, 0, 8, NULL);
    CHECK(c.level == 8 && c.state == THROTTLE_SEARCH && c.predicted == 8);
    CHECK(converge(&c, &k, raid, 0, 50) == 3);
    CHECK(c.level == 8 && c.found == 8);
    CHECK(measured_levels(&c) == (BIT(16) | BIT(8) | BIT(4)));
    CHECK(c.phase[0].level == 8 && c.phase[0].searching);

    /* The disk's reads predicted at one reader: only two is examined. */
    throttle_ctl_init(&c, 16, 0, 1, NULL);
    CHECK(converge(&c, &k, cliff, 0, 50) == 2);
    CHECK(c.level == 1 && measured_levels(&c) == (BIT(1) | BIT(2)));

    /* Write-behind predicted unthrottled: only the level below is examined, and ties keep the higher. */
    throttle_ctl_init(&c, 16, 0, 16, NULL);
    CHECK(converge(&c, &k, flat, 0, 50) == 2);
    CHECK(c.level == 16 && measured_levels(&c) == (BIT(16) | BIT(8)));

    /* A wrong prediction is corrected: the disk predicted at sixteen climbs down level by level to one. */
    throttle_ctl_init(&c, 16, 0, 16, NULL);
    CHECK(converge(&c, &k, disk, 0, 50) > 0);
    CHECK(c.level == 1 && measured_levels(&c) == (BIT(16) | BIT(8) | BIT(4) | BIT(2) | BIT(1)));
    /* and upwards through ties (a curve that ended below the node's processes predicted four) */
    throttle_ctl_init(&c, 16, 0, 4, NULL);
    converge(&c, &k, flat, 0, 50);
    CHECK(c.level == 16 && measured_levels(&c) == (BIT(4) | BIT(8) | BIT(16)));

    /* A predicted level outside the plan's powers of two is a candidate of its own: 6 ties with 8 (kept, the
     * higher), whose other neighbour 16 is worse. */
    throttle_ctl_init(&c, 16, 0, 6, NULL);
    converge(&c, &k, raid, 0, 50);
    CHECK(c.level == 8 && measured_levels(&c) == (BIT(6) | BIT(8) | BIT(16)));

    /* With noise the kept level stays within tolerance (and the noise) of the best. */
    for (int i = 0; i < 20; i++) {
        throttle_ctl_init(&c, 16, 0, 8, NULL);
        CHECK(converge(&c, &k, raid, 0.08, 50) > 0);
        CHECK(raid(c.level) >= 200.0 * (1 - k.tolerance - 0.16));
    }

    /* A remembered level keeps priority over the prediction. */
    throttle_ctl_init(&c, 16, 2, 8, NULL);
    CHECK(c.state == THROTTLE_STEADY && c.level == 2 && c.known);

    /* The budget: a level is examined only while the loss so far is within it; meanwhile the kept level serves. */
    k.budget = 0;
    throttle_ctl_init(&c, 16, 0, 8, NULL);
    converge(&c, &k, raid, 0, 20); /* 16 loses against 8: 4 is never examined, 8 serves */
    CHECK(c.level == 8 && c.state == THROTTLE_SEARCH && measured_levels(&c) == (BIT(8) | BIT(16)));
    k.budget = 1.0;

    /* With the curve, a neighbour it expects to lose waits until the budget affords its window's expected loss:
     * the RAID predicted at 8 examines 16 (expected to lose 29 % of a window) only once the I/O time seen is
     * 0.29 / 0.05 windows, and 4 (19 %) once the losses so far and its own are within the budget. */
    k.budget = 0.05;
    throttle_ctl_init(&c, 16, 0, 8, &raid_curve);
    CHECK(converge(&c, &k, raid, 0, 4) < 0 && measured_levels(&c) == BIT(8)); /* 4 windows: not yet */
    CHECK(converge(&c, &k, raid, 0, 100) > 0);
    CHECK(c.level == 8 && measured_levels(&c) == (BIT(16) | BIT(8) | BIT(4)));
    /* the write-behind curve expects nothing lost below: the neighbour is examined at once */
    throttle_ctl_init(&c, 16, 0, 16, &level_curve);
    CHECK(converge(&c, &k, flat, 0, 2) == 2 && c.level == 16);
    /* a curve that expects a loss the job never affords: its I/O time is too short, the prediction serves alone */
    throttle_ctl_init(&c, 4, 0, 4, &raid_curve);
    CHECK(converge(&c, &k, raid, 0, 6) < 0 && c.level == 4 && measured_levels(&c) == BIT(4));
    k.budget = 1.0;

    /* A re-search after a deviation starts from the prediction again. */
    throttle_ctl_init(&c, 16, 0, 8, NULL);
    converge(&c, &k, raid, 0, 50);
    for (int w = 0; w < 2; w++) throttle_ctl_window(&c, &k, (uint64_t)(disk(c.level) * 1e6 * 0.25), 250000000, 0);
    CHECK(c.searches == 2 && c.state == THROTTLE_SEARCH && c.level == 8);
    converge(&c, &k, disk, 0, 50);
    CHECK(c.level == 1);
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

/* ---- storage targets: the modules' slots and layout hooks (posix/target.c with a registry of its own) ---- */

static unsigned layout_none(dev_t dev, ino_t ino, uint32_t *stripe_size, uint32_t *target, unsigned max)
{
    (void)dev, (void)ino, (void)stripe_size, (void)target, (void)max;
    return 0; /* knows no file */
}

static ino_t striped_ino; /* the one file the striping modules know */

static unsigned layout_four(dev_t dev, ino_t ino, uint32_t *stripe_size, uint32_t *target, unsigned max)
{
    (void)dev;
    if (ino != striped_ino || max < 4) return 0;
    for (unsigned i = 0; i < 4; i++) target[i] = 10 + i;
    *stripe_size = 65536;
    return 4;
}

static unsigned layout_two(dev_t dev, ino_t ino, uint32_t *stripe_size, uint32_t *target, unsigned max)
{
    (void)dev;
    if (ino != striped_ino || max < 2) return 0;
    target[0] = 7, target[1] = 8;
    *stripe_size = 4096;
    return 2;
}

static const iotame_module_t mod_small = {.name = "small", .posix_target_bytes = 100, .layout = layout_none},
                             mod_none = {.name = "none", .layout = layout_four},
                             mod_huge = {.name = "huge", .posix_target_bytes = IOTAME_POSIX_TARGET_STATE},
                             mod_page = {.name = "page", .posix_target_bytes = 4096, .layout = layout_two};
const iotame_module_t *const iotame_modules[] = {&mod_small, &mod_none, &mod_huge, &mod_page, NULL};
iotame_hooks_t iotame__hooks_layout;
static iotame_posix_segment_t test_segment;
static const char *test_reasons[8];
static int test_nreasons;

int iotame_module_index(const iotame_module_t *m)
{
    for (int i = 0; iotame_modules[i]; i++)
        if (iotame_modules[i] == m) return i;
    return -1;
}
iotame_posix_segment_t *iotame_posix_segment(void) { return &test_segment; }
const char *iotame_posix_path(const char *path) { return path; }
/* record.c's last recorded open, as the test sets it */
static iotame_posix_file_t *test_last;
static int test_last_fd = -1;
iotame_posix_file_t *iotame__posix_last_opened(const char *path, int *fd, struct stat *st)
{
    if (!test_last || strcmp(test_last->path, path) != 0) return NULL;
    *fd = test_last_fd;
    *st = test_last->opened;
    return test_last;
}
void iotame_stats_passthrough(iotame_file_stats_t *fs, const char *reason)
{
    (void)fs;
    if (test_nreasons < 8) test_reasons[test_nreasons++] = reason;
}

/* Each module that asks for per-target state gets its own slot, in registry order, 64-byte aligned, while they fit;
 * one that does not fit gets none and the statistics say so. */
static void target_slots(void)
{
    iotame__posix_target_layout(&test_segment);
    iotame__posix_target_check(&test_segment);
    iotame_posix_target_t *t = &test_segment.target[5];
    unsigned char *small = iotame_posix_target_state(t, &mod_small), *page = iotame_posix_target_state(t, &mod_page);
    CHECK(small == t->state);
    CHECK(page == t->state + 128); /* after the first, rounded up to a cache line */
    CHECK(iotame_posix_target_state(t, &mod_none) == NULL); /* asked for none */
    CHECK(iotame_posix_target_state(t, &mod_huge) == NULL); /* did not fit after the first */
    CHECK(iotame_posix_target_state(NULL, &mod_small) == NULL);
    CHECK(test_nreasons == 1 && test_reasons[0] && strstr(test_reasons[0], "huge"));
}

/* The layout of a file: the first active module's hook that knows it, in registry order, over the file system's. */
static void target_layout_hooks(void)
{
    char path[] = "/tmp/iotame-test-throttle-XXXXXX";
    int fd = mkstemp(path);
    struct stat st;
    CHECK(fd >= 0 && fstat(fd, &st) == 0);
    striped_ino = st.st_ino;
    iotame_posix_layout_t l;
    CHECK(iotame_posix_layout(path, &l, NULL) == 0 && l.count == 1 && l.unit == 0); /* no hooks: the file system */
    CHECK(l.from == IOTAME_POSIX_FROM_NONE && strcmp(iotame_posix_from_name(l.from), "none") == 0);
    iotame__hooks_layout = (iotame_hooks_t){3, {&mod_small, &mod_none, &mod_page}};
    CHECK(iotame_posix_layout(path, &l, NULL) == 0 && l.count == 4 && l.unit == 65536 && l.ost[3] == 13);
    CHECK(l.from == IOTAME_POSIX_FROM_EMULATED && strcmp(iotame_posix_from_name(l.from), "emulated") == 0);
    iotame__hooks_layout = (iotame_hooks_t){2, {&mod_small, &mod_page}}; /* mod_none is not active */
    CHECK(iotame_posix_layout(path, &l, NULL) == 0 && l.count == 2 && l.unit == 4096 && l.ost[1] == 8);
    striped_ino++; /* a file no module knows */
    CHECK(iotame_posix_layout(path, &l, NULL) == 0 && l.count == 1);
    /* the file the library opened last (a record of the POSIX layer): through its descriptor, read once */
    striped_ino--;
    iotame_posix_file_t rec = {.path = path, .opened = st};
    test_last = &rec;
    test_last_fd = fd;
    struct stat got;
    CHECK(iotame_posix_layout(path, &l, &got) == 0 && l.count == 2 && l.unit == 4096 && got.st_ino == st.st_ino);
    CHECK(rec.layout == 1 && rec.stripes.count == 2 && rec.stripes.ost[1] == 8);
    iotame__hooks_layout.n = 0; /* read once per record: the record's still */
    CHECK(iotame_posix_layout(path, &l, NULL) == 0 && l.count == 2 && l.unit == 4096);
    char other[] = "/tmp/iotame-test-throttle-other";
    CHECK(iotame_posix_layout(other, &l, NULL) == -ENOENT && l.count == 1); /* another path: by the path */
    test_last = NULL;
    CHECK(iotame_posix_layout(path, &l, NULL) == 0 && l.count == 1 && l.unit == 0);
    close(fd);
    unlink(path);
}

int main(void)
{
    gate = mmap(NULL, sizeof *gate, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (gate == MAP_FAILED) return 1;
    lustre();
    target_slots();
    target_layout_hooks();
    gate_run(1);
    gate_run(3);
    gate_run(8);
    gate_dead(1);
    gate_dead(2);
    gate_slow(1);
    gate_slow(3);
    gate_slow_and_dead();
    gate_dead_waiter();
    controller();
    predicted_level();
    climb();
    return failures != 0;
}
