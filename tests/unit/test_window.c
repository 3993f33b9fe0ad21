/* Unit tests of the auto strategy's window protocol (runtime/src/collective/window.c) with the real policy and a
 * gather in memory that plays a second rank: the opening window learns the signature of its calls one window late,
 * a call of another shape or ranks that move otherwise leave a window unmeasured and end the windows, a library
 * candidate is examined in a window of its turn's calls, a window under way at the close is posted as far as it went,
 * and a window whose entry another handle's reset took away is left alone. No MPI calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective/window.h"

#include "check.h"

enum { PT, TP, NL, TA, IND }; /* strategy ids as the registry numbers them */

/* ---- the gather: this rank's row, and the other rank's made from it ---- */

typedef struct {
    int64_t rows[2 * IOTAME_WINDOW_FIELDS];
    int posted, waited, tested;
    int64_t shift;       /* the other rank's calls start this many bytes after ours */
    int64_t other_delta; /* added to the other rank's step between starts (0: the same) */
} gather_t;

static void gather_post(void *arg, const int64_t *row)
{
    gather_t *g = arg;
    int64_t *mine = g->rows, *other = g->rows + IOTAME_WINDOW_FIELDS;
    memcpy(mine, row, IOTAME_WINDOW_FIELDS * sizeof *row);
    memcpy(other, row, IOTAME_WINDOW_FIELDS * sizeof *row);
    other[IOTAME_WROW_START] += g->shift;
    other[IOTAME_WROW_END] += g->shift;
    other[IOTAME_WROW_DELTA] += g->other_delta;
    g->posted++;
}

static const int64_t *gather_wait(void *arg, int64_t *took_ns)
{
    gather_t *g = arg;
    g->waited++;
    *took_ns = 20000; /* 20 us */
    return g->rows;
}

static void gather_test(void *arg) { ((gather_t *)arg)->tested++; }

/* ---- a handle's window state: two ranks, candidates independent then two_phase ---- */

static iotame_select_knobs_t K = {0.5, 4, 0.8, 4, 1};

static void window_init(iotame_window_t *w, gather_t *g, double budget, int opening)
{
    memset(w, 0, sizeof *w);
    memset(g, 0, sizeof *g);
    g->shift = 512;
    w->sel = iotame_select_new();
    w->nprocs = 2;
    w->gather = (iotame_window_gather_t){gather_post, gather_wait, gather_test, g};
    w->set.knobs = K;
    w->set.conf = (iotame_select_conf_t){.exam_calls = 3, .threshold = 0.15, .budget = budget,
                                         .window_seconds = budget < 1 ? 0.01 : 0, .knobs = &w->set.knobs};
    for (int op = 0; op < 2; op++) {
        w->set.order[op][0] = IND;
        w->set.order[op][1] = PT;
        w->set.order[op][2] = TP;
        w->set.norder[op] = 3;
        w->set.opening[op] = opening;
    }
    w->set.library[PT] = w->set.library[IND] = 1;
    w->set.shortest = w->tally.next_calls = 4 * 3;
    w->tally.cost_ns = 1000000;
}

/* This rank's call k: 8 pieces of 512 bytes, 1024 apart, the next call 8192 further (the other rank's fill the
 * gaps: shift 512). */
static void call_extents(iotame_extents_t *x, int64_t k, int pieces)
{
    x->n = 0;
    for (int i = 0; i < pieces; i++) x->v[x->n++] = (iotame_extent_t){k * 8192 + i * 1024, 512};
}

/* Serves call k in the window under way (it must be one). */
static void serve(iotame_window_t *w, iotame_extents_t *x, int64_t k, int pieces)
{
    CHECK(iotame_window_serving(w, 1) >= 0);
    call_extents(x, k, pieces);
    iotame_window_served(w, 1, 1, 512 * pieces, x, 1e-4);
}

static int64_t decided_calls(const iotame_window_t *w)
{
    const iotame_sel_entry_t *e = iotame_select_first(w->sel);
    return e ? (int64_t)iotame_select_decision(e)->calls : -1;
}

/* ---- tests ---- */

static void test_the_opening_window_learns_its_signature_one_window_late(void)
{
    iotame_window_t w;
    gather_t g;
    iotame_extents_t x = {calloc(16, sizeof(iotame_extent_t)), 0, 16};
    window_init(&w, &g, 0.05, -1);
    CHECK(iotame_window_opening(&w, 1) == IND); /* nothing known: the first candidate, a library strategy */
    iotame_select_free(w.sel);
    window_init(&w, &g, 0.05, IND);
    for (int k = 0; k < 12; k++) serve(&w, &x, k, 8);
    /* the opening window ended: posted, not waited for; the next window goes on with its shape */
    CHECK(g.posted == 1 && g.waited == 0 && w.posted.pending && w.run.left == 12);
    CHECK(iotame_select_first(w.sel) == NULL && w.tally.served == 12);
    for (int k = 12; k < 24; k++) serve(&w, &x, k, 8);
    CHECK(g.posted == 2 && g.waited == 1 && w.tally.measured == 1 && w.tally.unmeasured == 0);
    CHECK(g.tested == 12); /* every call while a gather was posted let it progress */
    const iotame_sel_entry_t *e = iotame_select_first(w.sel);
    CHECK(e != NULL && iotame_select_next(e) == NULL);
    const iotame_select_decision_t *d = iotame_select_decision(e);
    const iotame_sig_t expect = iotame_select_sig(1, 2, 2 * 4096, 16, 0, 7 * 1024 + 512 + 512);
    CHECK(d->sig.write == 1 && d->sig.nprocs == 2 && d->sig.bytes == 8192 && d->sig.requests == 16);
    CHECK(d->sig.gap == expect.gap);
    /* the opening window's 12 calls are the first candidate's: its transition call, 3 measured, then it serves on
     * while two_phase's turn waits for credit */
    CHECK(d->calls == 12 && d->strategy == IND && d->examination_calls == 3 && d->deferred_calls == 8);
    CHECK(w.run.left > 0 && w.run.strategy == IND && w.run.kind == IOTAME_WINDOW_MONITOR && w.run.entry == e);
    CHECK(w.run.calls >= 12); /* long enough for the gather to cost at most the budget's share of the calls */
    iotame_select_free(w.sel);
    free(x.v);
}

static void test_a_call_of_another_shape_ends_the_windows(void)
{
    iotame_window_t w;
    gather_t g;
    iotame_extents_t x = {calloc(16, sizeof(iotame_extent_t)), 0, 16};
    window_init(&w, &g, 0.05, IND);
    for (int k = 0; k < 24; k++) serve(&w, &x, k, k == 5 ? 4 : 8);
    /* the opening window (call 5 had half the pieces) is not measured; the window after it is, but nothing goes on
     * from a window that changed: the next call is measured on its own */
    CHECK(w.tally.unmeasured == 1 && w.tally.measured == 1 && !w.posted.pending);
    CHECK(iotame_window_serving(&w, 1) == -1);
    CHECK(decided_calls(&w) == 12);
    iotame_select_free(w.sel);
    free(x.v);
}

static void test_ranks_that_move_otherwise_are_not_measured(void)
{
    iotame_window_t w;
    gather_t g;
    iotame_extents_t x = {calloc(16, sizeof(iotame_extent_t)), 0, 16};
    window_init(&w, &g, 0.05, IND);
    g.other_delta = 64; /* the other rank's calls step otherwise than ours */
    for (int k = 0; k < 24; k++) serve(&w, &x, k, 8);
    CHECK(w.tally.unmeasured == 2 && w.tally.measured == 0 && iotame_select_first(w.sel) == NULL);
    CHECK(iotame_window_serving(&w, 1) == -1);
    iotame_select_free(w.sel);
    free(x.v);
}

static void test_a_library_candidate_is_examined_in_a_window_of_its_turn(void)
{
    iotame_window_t w;
    gather_t g;
    iotame_extents_t x = {calloc(16, sizeof(iotame_extent_t)), 0, 16};
    window_init(&w, &g, 1, -1); /* the paper's examination at once: no opening window */
    CHECK(iotame_window_opening(&w, 1) == -1 && iotame_window_serving(&w, 1) == -1);
    const iotame_sig_t sig = iotame_select_sig(1, 2, 8192, 16, 0, 8192);
    iotame_sel_entry_t *e = iotame_window_entry(&w, &sig, 0);
    CHECK(e != NULL && iotame_select_choose(e) == IND);
    call_extents(&x, 0, 8);
    iotame_window_measured(&w, e, IND, 100, 1, 4096, &x); /* its transition call, measured on its own */
    CHECK(iotame_window_serving(&w, 1) == IND && w.run.kind == IOTAME_WINDOW_EXAM && w.run.calls == 3);
    for (int k = 1; k <= 3; k++) serve(&w, &x, k, 8);
    /* its turn's 3 calls were one window, finished at once; passthrough's turn is a window too: a transition call
     * and 3 measured calls */
    CHECK(!w.posted.pending && g.waited == 1 && w.tally.measured == 1);
    CHECK(iotame_select_decision(e)->examination_calls == 3 && iotame_select_decision(e)->calls == 4);
    CHECK(iotame_window_serving(&w, 1) == PT && w.run.kind == IOTAME_WINDOW_EXAM && w.run.calls == 4);
    iotame_select_free(w.sel);
    free(x.v);
}

static void test_a_window_at_the_close_is_posted_as_far_as_it_went(void)
{
    iotame_window_t w;
    gather_t g;
    iotame_extents_t x = {calloc(16, sizeof(iotame_extent_t)), 0, 16};
    window_init(&w, &g, 0.05, IND);
    for (int k = 0; k < 5; k++) serve(&w, &x, k, 8);
    iotame_window_post_last(&w);
    CHECK(g.posted == 1 && w.posted.pending && w.posted.calls == 5 && w.run.left == 0);
    iotame_window_complete(&w);
    CHECK(!w.posted.pending && w.tally.measured == 1 && decided_calls(&w) == 5);
    iotame_window_complete(&w); /* nothing posted: nothing to do */
    CHECK(g.waited == 1);
    iotame_select_free(w.sel);
    free(x.v);
}

static void test_a_window_whose_entry_a_reset_took_is_left_alone(void)
{
    iotame_window_t w;
    gather_t g;
    iotame_extents_t x = {calloc(16, sizeof(iotame_extent_t)), 0, 16};
    window_init(&w, &g, 0.05, IND);
    for (int k = 0; k < 24; k++) serve(&w, &x, k, 8); /* the opening window, measured: a monitoring window runs */
    CHECK(w.run.entry != NULL && w.run.left > 0);
    iotame_select_reset(w.sel); /* another handle of the file saw the ranks diverge */
    const int left = w.run.left;
    for (int k = 0; k < left; k++) serve(&w, &x, 24 + k, 8);
    iotame_window_complete(&w);
    /* the window before (going on from the opening one, its entry still to come) is measured into the selector as it
     * is now; the window of the entry that is gone is not, and nothing goes on from it */
    CHECK(w.tally.measured == 2 && w.tally.unmeasured == 1 && decided_calls(&w) == 12);
    CHECK(iotame_window_serving(&w, 1) == -1);
    iotame_select_free(w.sel);
    free(x.v);
}

static void test_the_opening_window_runs_a_known_library_winner(void)
{
    iotame_window_t w;
    gather_t g;
    window_init(&w, &g, 0.05, -1);
    iotame_select_known_t k = {.sig = iotame_select_sig(1, 2, 8192, 16, 0, 8192), .winner = PT, .first = -1};
    w.set.knowledge = (iotame_select_knowledge_t){&k, 1};
    CHECK(iotame_window_opening(&w, 1) == PT);
    k.winner = TP; /* an engine strategy: every call measured by the router */
    CHECK(iotame_window_opening(&w, 1) == -1);
    CHECK(iotame_window_opening(&w, 0) == IND); /* nothing known of reads */
    iotame_select_free(w.sel);
}

int main(void)
{
    test_the_opening_window_learns_its_signature_one_window_late();
    test_a_call_of_another_shape_ends_the_windows();
    test_ranks_that_move_otherwise_are_not_measured();
    test_a_library_candidate_is_examined_in_a_window_of_its_turn();
    test_a_window_at_the_close_is_posted_as_far_as_it_went();
    test_a_window_whose_entry_a_reset_took_is_left_alone();
    test_the_opening_window_runs_a_known_library_winner();
    if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
