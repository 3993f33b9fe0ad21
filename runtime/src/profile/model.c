/* model: the cost model of the collective strategies (issue 31; docs/design/cost-model.md). The time of one call is
 * built from the terms that separate the strategies: bytes exchanged within and between nodes (a latency per
 * round, bytes over a node's bandwidth), software passes over the pieces and memory copies (packing), and the
 * requests each storage target receives (their size and whether they position, from the profile's curves; how many
 * streams share a target; what write-back absorbs). Two-phase I/O and data sieving as in Thakur, Gropp and Lusk,
 * "Data sieving and collective I/O in ROMIO" (1999); node_local and target_aligned as Orthrus' core-first and
 * disk-first (Zhang, Ou, Davis and Jiang, ISC 2014); view_based as Garcia Blas, Isaila, Singh and Carretero,
 * "View-based collective I/O for MPI-IO" (CCGrid 2008). Pure arithmetic: no I/O, no state. */
#include <math.h>
#include <stddef.h>

#include "profile.h"

#define MODEL_HOLE_MAX 65536.0    /* the engine fills (writes) or reads over holes up to this (collective/engine.c) */
#define MODEL_WR_SIEVE 524288.0   /* ROMIO's independent write sieving buffer (ind_wr_buffer_size) */
#define MODEL_RD_SIEVE 4194304.0  /* ROMIO's independent read sieving buffer (ind_rd_buffer_size) */
#define MODEL_LIST 16.0           /* bytes of one piece in an offset/length list */
#define MODEL_CB_BUFFER 16777216.0 /* ROMIO's default cb_buffer_size */
#define MODEL_BLOCK 1048576.0     /* view_based's default block */
#define MODEL_STREAMS_REQUEST 1048576.0 /* the request size of the profile's streams curve (iotame calibrate) */

/* The call with its defaults resolved, as doubles. */
typedef struct {
    int write, interleaved, sieves;
    double P, N, ppn, B, k, s, gap, span, T, U, A, C, block;
} model_shape_t;

/* A plan of aggregation: who gathers what, and how its I/O looks. */
typedef struct {
    double nagg, agg_nodes; /* aggregators, and the nodes they run on */
    double cross;           /* share of the bytes an aggregator exchanges with other nodes */
    double self;            /* share of the bytes an aggregator holds itself */
    double domain;          /* bytes of file range one aggregator covers */
    double window;          /* bytes of one round */
    double list;            /* bytes per piece of offset lists sent (0: none) */
    double passes;          /* software passes over each piece at its aggregator */
    double request;         /* bytes of one request when the domain is dense or its holes filled */
    double streams;         /* aggregators that issue I/O */
    int scattered;          /* those requests position */
    int lockstep;           /* the aggregators' rounds are common file ranges, so their requests advance together */
    int fill;               /* holes up to hole_max are read-modify-written (writes) or read over (reads) */
    double times;           /* the device moves the range this many times (0: once): node_local's reads over the
                               other nodes' pieces, each node's aggregator reading the whole range */
    double hole_max;
    int overlap;            /* the exchange of one round overlaps the I/O of another (the engine's lookahead) */
} model_plan_t;

/* Storage traffic of one kind. */
typedef struct {
    int write;
    int cached;     /* a read of pages a write-back cache holds (the read of a read-modify-write) */
    double bytes;   /* moved, all streams */
    double request; /* bytes of one request of a stream */
    int scattered;
    int lockstep;   /* the streams advance together through one range: a target sees them continue each other */
    double streams; /* streams issuing requests at once */
    double nodes;   /* nodes they run on */
    double extent;  /* file range they cover */
} model_io_t;

static double model_min(double a, double b) { return a < b ? a : b; }
static double model_max(double a, double b) { return a > b ? a : b; }

/* y at x: a power law between the points, clamped at the ends. */
static double model_curve(const iotame_model_curve_t *cv, double x)
{
    int n = cv->n;
    if (x <= cv->x[0]) return cv->y[0];
    if (x >= cv->x[n - 1]) return cv->y[n - 1];
    int i = 0;
    while (i + 2 < n && x >= cv->x[i + 1]) i++;
    double t = log(x / cv->x[i]) / log(cv->x[i + 1] / cv->x[i]);
    return exp(log(cv->y[i]) + t * (log(cv->y[i + 1]) - log(cv->y[i])));
}

/* Seconds of one request of r bytes at one target from one stream. Below the smallest measured size a request costs
 * what the smallest does (the device moves whole blocks); above the largest, the largest's throughput holds. */
static double model_request_seconds(const iotame_profile_t *p, int write, int scattered, double r)
{
    const iotame_model_curve_t *cv = write ? (scattered ? &p->write_scattered : &p->write_seq)
                                           : (scattered ? &p->read_scattered : &p->read_seq);
    r = model_max(r, cv->x[0]);
    return r / model_curve(cv, r);
}

/* The share of requests that position when streams share a target and lose throughput to each other (factor < 1,
 * the streams curve): what explains the curve's loss at the size it was measured with, as positionings of the
 * scattered curve, at most every request; -1 when the device does not position (scattered no slower). */
static double model_positioning(const iotame_profile_t *p, int write, double factor)
{
    const double seq = model_request_seconds(p, write, 0, MODEL_STREAMS_REQUEST);
    const double scat = model_request_seconds(p, write, 1, MODEL_STREAMS_REQUEST);
    if (!(scat > seq)) return -1;
    return model_min(1, model_max(0, (seq / factor - seq) / (scat - seq)));
}

/* Seconds the device needs for io: the busiest target's bytes at its rate for the request size it receives (a
 * request longer than the unit is split over targets), and how streams sharing a target change it: where they
 * need its parallelism, a gain in throughput; where they make it position, a share of requests that position
 * (model_positioning), which costs small requests more than large ones.
 * Targets busy at once are bounded by the targets the range covers and by what the streams keep busy. Counts of
 * targets are kept fractional (a range of 1.5 units covers 1.5 targets on average), so that a larger call is never
 * cheaper by a rounding. */
static double model_device(const iotame_profile_t *p, const model_shape_t *m, const model_io_t *io)
{
    if (io->bytes <= 0) return 0;
    double request = model_max(io->request, 1);
    double spans = model_min(m->T, model_max(1, request / m->U)); /* targets one request reaches */
    double rt = request / spans;
    double used = model_min(m->T, model_max(1, io->extent / m->U));
    double busy = model_max(1, model_min(used, io->streams * spans));
    double per_target = model_max(1, io->streams * spans / busy);
    /* streams that share a target make it position between them, unless they advance together; requests that
     * position already lose nothing more */
    double factor = model_curve(&p->streams, per_target);
    if (io->scattered || io->lockstep) factor = model_max(1, factor);
    const double positioning = factor < 1 ? model_positioning(p, io->write, factor) : -1;
    double seconds = model_request_seconds(p, io->write, io->scattered, rt);
    if (positioning >= 0) /* a share of the sequential requests position */
        seconds += positioning * model_max(0, model_request_seconds(p, io->write, 1, rt) - seconds);
    else
        seconds /= factor;
    return io->bytes / busy / (rt / seconds);
}

/* Seconds of io with write-back: a node's first writeback_bytes of writes go at the page cache's speed
 * (writeback_rate, else a copy, and a call per request, the node's streams side by side), the rest at the device's.
 * The read of a read-modify-write (cached) finds its pages in memory alike: they were just written or lie past the
 * file's end. */
static double model_store(const iotame_profile_t *p, const model_shape_t *m, const model_io_t *io)
{
    if (io->bytes <= 0) return 0;
    if (p->writeback_bytes <= 0 || (!io->write && !io->cached)) return model_device(p, m, io);
    double nodes = model_max(1, io->nodes);
    double per_node = io->bytes / nodes;
    double absorbed = model_min(per_node, p->writeback_bytes);
    double side_by_side = model_max(1, io->streams / nodes);
    const double rate = io->write && p->writeback_rate > 0 ? p->writeback_rate : p->copy_rate;
    double mem = (absorbed / rate + ceil(absorbed / model_max(io->request, 1)) * p->syscall_seconds) / side_by_side;
    return mem + (per_node > absorbed ? model_device(p, m, io) * (1 - absorbed / per_node) : 0);
}

/* Seconds of the software passes and copies: `pieces` passes of piece_seconds and `bytes` copied. */
static double model_copy(const iotame_profile_t *p, double bytes, double passes)
{
    return bytes / p->copy_rate + passes * p->piece_seconds;
}

/* A node's rate to the other nodes when it exchanges `round` bytes with them at once, as every node does: the
 * exchange curve at those bytes per pair of nodes' processes, at most one link's rate (inter_rate). */
static double model_exchange_rate(const iotame_profile_t *p, const model_shape_t *m, double round)
{
    if (!p->exchange.n || m->N <= 1) return p->inter_rate;
    const double per_pair = round / (m->ppn * m->ppn * (m->N - 1));
    return model_min(p->inter_rate, model_curve(&p->exchange, model_max(1, per_pair)));
}

/* Share of the bytes that cross nodes when cb aggregators take even domains of the range, aggregator a on node
 * a mod N (spread over the nodes). Interleaved pieces bring every node's bytes to every domain; otherwise node n's
 * processes hold the n-th N-th of the range. */
static double model_even_cross(const model_shape_t *m, double nagg)
{
    if (m->N <= 1) return 0;
    if (m->interleaved) return (m->N - 1) / m->N;
    double local = 0;
    long n = (long)m->N, a_end = (long)model_min(nagg, 1 << 20);
    for (long a = 0; a < a_end; a++) {
        double lo = a / (double)a_end, hi = (a + 1) / (double)a_end;
        double nlo = (a % n) / m->N, nhi = (a % n + 1) / m->N;
        local += model_max(0, model_min(hi, nhi) - model_max(lo, nlo));
    }
    return model_max(0, 1 - local);
}

/* Seconds of a call under an aggregation plan: the exchange (offset lists and data, a latency per round and the
 * busiest node's bytes over its bandwidth), the packing at the sources and the passes over the pieces at the
 * aggregators, and the aggregators' storage traffic (holes filled: the domain read and written; unfilled holes:
 * one scattered request per piece). */
static double model_aggregate(const iotame_profile_t *p, const model_shape_t *m, const model_plan_t *plan)
{
    const double pieces = m->P * m->k, nagg = model_max(1, plan->nagg), nodes = model_max(1, plan->agg_nodes);
    double windows = model_max(1, plan->domain / plan->window); /* the last one partly filled */
    double rounds = ceil(windows);
    double moved = m->B + plan->list * pieces;
    double inter = plan->cross * moved / nodes;
    double intra = model_max(0, 1 - plan->cross - plan->self) * moved / nodes;
    double lat = m->N > 1 && plan->cross > 0 ? p->inter_latency : intra > 0 ? p->intra_latency : 0;
    double exchange = (rounds + (plan->list > 0 ? 2 : 0)) * lat + inter / model_exchange_rate(p, m, inter / rounds) +
                      intra / p->intra_rate;

    double at_agg = pieces / nagg;
    double cpu = model_copy(p, m->B / m->P, m->k) + model_copy(p, m->B / nagg, at_agg * plan->passes);

    int holes = m->gap > 0, filled = holes && plan->fill && m->gap <= plan->hole_max;
    model_io_t io = {.write = m->write, .streams = model_max(1, plan->streams), .nodes = nodes, .extent = m->span,
                     .bytes = (filled || (!holes) ? m->span : m->B) * model_max(1, plan->times),
                     .request = plan->request,
                     .scattered = plan->scattered, .lockstep = plan->lockstep};
    if (holes && !filled) {
        io.request = model_min(plan->request, m->s);
        io.scattered = 1;
        io.lockstep = 0;
    }
    double storage = model_store(p, m, &io);
    if (filled && m->write) { /* read-modify-write: the domain is read first */
        model_io_t rd = io;
        rd.write = 0;
        rd.cached = 1;
        storage += model_store(p, m, &rd);
    }
    /* a pipeline of rounds: the slower stage's time, and one round of the faster one to fill it */
    if (plan->overlap) return model_max(exchange, storage) + model_min(exchange, storage) / windows + cpu;
    return exchange + storage + cpu;
}

/* The passes over a piece at its aggregator: its list entry received, sorted among the aggregator's pieces (the
 * engine's sort; ROMIO merges the processes' sorted lists: log2 of the processes), grouped, copied. */
static double model_sort_passes(double pieces_at_aggregator)
{
    return 3 + log2(model_max(2, pieces_at_aggregator));
}

/* ---- the strategies' equations ---- */

/* The library's collective call (ROMIO): cb_nodes aggregators on even, unaligned domains, rounds of cb_buffer_size
 * that exchange, then write (no overlap), holes in a round's range sieved when the library sieves. */
static double model_passthrough(const iotame_profile_t *p, const model_shape_t *m)
{
    model_plan_t plan = {.nagg = m->A, .agg_nodes = model_min(m->A, m->N), .cross = model_even_cross(m, m->A),
                         .self = 1 / m->P, .domain = m->span / m->A, .window = m->C, .list = MODEL_LIST,
                         .passes = model_sort_passes(m->P), .request = model_min(m->C, m->span / m->A),
                         .streams = m->A, .fill = m->write ? m->sieves : 1, .hole_max = m->C};
    return model_aggregate(p, m, &plan);
}

/* Each process's part through the library's independent call. Pieces that follow one another make one request;
 * otherwise each process reads (and, where the library sieves writes, rewrites) its whole range in sieve-buffer
 * requests, whatever the size of the pieces and holes (ROMIO's data sieving with its hints at their defaults);
 * writes without sieving (OMPIO) are one scattered request a piece. */
static double model_independent(const iotame_profile_t *p, const model_shape_t *m)
{
    double b = m->B / m->P;
    model_io_t io = {.write = m->write, .streams = m->P, .nodes = m->N, .extent = m->span, .bytes = m->B};
    if (m->k <= 1 || (!m->interleaved && m->gap <= 0)) {
        io.request = b;
        return model_store(p, m, &io);
    }
    double range = m->interleaved ? m->span : b + (m->k - 1) * m->gap;
    double buffer = m->write ? MODEL_WR_SIEVE : MODEL_RD_SIEVE;
    if (m->write && !m->sieves) {
        io.request = m->s;
        io.scattered = 1;
        return model_store(p, m, &io);
    }
    io.bytes = m->P * range;
    io.request = model_min(range, buffer);
    double cpu = model_copy(p, b, 2 * m->k); /* per piece: the view walked, the piece copied */
    model_io_t rd = io;
    rd.write = 0;
    rd.cached = m->write;
    if (!(m->write && m->interleaved && m->P > 1))
        return model_store(p, m, &rd) + (m->write ? model_store(p, m, &io) : 0) + cpu;
    /* Overlapping ranges: ROMIO locks each buffer's worth while it reads, fills and writes it, so the processes
     * sweep the range one behind the other, a pipeline of chunks + P - 1 steps of one process's chunk; the device
     * still moves every process's bytes. */
    double chunks = ceil(range / buffer);
    model_io_t one_rd = rd, one_wr = io;
    one_rd.bytes = one_wr.bytes = range;
    one_rd.streams = one_wr.streams = one_rd.nodes = one_wr.nodes = 1;
    double pipeline = (model_store(p, m, &one_rd) + model_store(p, m, &one_wr) + cpu) * (chunks + m->P - 1) / chunks;
    rd.streams = io.streams = model_min(m->P, chunks);
    return model_max(pipeline, model_store(p, m, &rd) + model_store(p, m, &io));
}

/* The engine with ROMIO's domains: cb_nodes aggregators on even stripe-aligned domains, rounds of cb_buffer_size
 * overlapped with the exchange, holes up to 64 KiB filled. */
static double model_two_phase(const iotame_profile_t *p, const model_shape_t *m)
{
    model_plan_t plan = {.nagg = m->A, .agg_nodes = model_min(m->A, m->N), .cross = model_even_cross(m, m->A),
                         .self = 1 / m->P, .domain = m->span / m->A, .window = m->C, .list = MODEL_LIST,
                         .passes = model_sort_passes(m->P * m->k / m->A), .request = model_min(m->C, m->span / m->A),
                         .streams = m->A, .fill = 1, .hole_max = MODEL_HOLE_MAX, .overlap = 1};
    return model_aggregate(p, m, &plan);
}

/* One aggregator per node takes its node's pieces: nothing crosses nodes. Interleaved, its runs are the node's
 * adjacent pieces (ppn of them) with other nodes' between, which it skips (holes never filled). Nothing keeps the
 * nodes' aggregators in step (they exchange nothing), so a target their streams share positions between them. */
static double model_node_local(const iotame_profile_t *p, const model_shape_t *m)
{
    const int spread = m->interleaved && m->N > 1;
    double run = spread ? m->ppn * m->s : m->span / m->N;
    model_plan_t plan = {.nagg = m->N, .agg_nodes = m->N, .self = 1 / m->ppn,
                         .domain = m->interleaved ? m->span : m->span / m->N, .window = m->C, .list = MODEL_LIST,
                         .passes = model_sort_passes(m->P * m->k / m->N), .request = model_min(m->C, run),
                         .streams = m->N, .overlap = 1};
    const double skipping = model_aggregate(p, m, &plan);
    /* A read goes over the other nodes' pieces between its own when they are small holes (the engine reads over
     * holes up to 64 KiB): each node's aggregator then reads the whole range. Where that is slower than skipping
     * them the skipping time is taken, so that a larger call is never predicted faster across the 64 KiB edge. */
    if (!spread || m->write || (m->N - 1) * m->ppn * m->s + m->gap > MODEL_HOLE_MAX) return skipping;
    plan.request = model_min(m->C, m->span);
    plan.times = m->N;
    plan.fill = 1;
    plan.hole_max = MODEL_HOLE_MAX;
    return model_min(skipping, model_aggregate(p, m, &plan));
}

/* One aggregator per target (at most one per process): each target receives unit-sized requests of one stream in
 * ascending offset; aggregators without a stripe of the range issue nothing. */
static double model_target_aligned(const iotame_profile_t *p, const model_shape_t *m)
{
    double nagg = model_min(m->T, m->P), units = model_max(1, ceil(m->span / m->U));
    double window = model_max(m->U, floor(m->C / m->U) * m->U);
    model_plan_t plan = {.nagg = nagg, .agg_nodes = model_min(nagg, m->N), .cross = (m->N - 1) / m->N,
                         .self = 1 / m->P, .domain = m->span / nagg, .window = window, .list = MODEL_LIST,
                         .passes = model_sort_passes(m->P * m->k / nagg),
                         .request = nagg > 1 ? m->U : model_min(window, m->span), .streams = model_min(nagg, units),
                         .fill = 1, .hole_max = MODEL_HOLE_MAX, .overlap = 1};
    return model_aggregate(p, m, &plan);
}

/* One aggregator per node, blocks round robin over them, extents mapped from cached views (no offset lists): a
 * pass to map a piece, one to group it, one to copy it. A stream's blocks skip the others', which its rounds (file
 * ranges common to the aggregators) write at the same time. */
static double model_view_based(const iotame_profile_t *p, const model_shape_t *m)
{
    double window = model_max(m->block, floor(m->C / m->block) * m->block);
    /* a call of fewer blocks than nodes reaches as many aggregators: one node receives a one-block call whole */
    double active = model_min(m->N, model_max(1, m->span / m->block));
    model_plan_t plan = {.nagg = active, .agg_nodes = active, .cross = (m->N - 1) / m->N, .self = 1 / m->P,
                         .domain = m->span / active, .window = window, .passes = 3,
                         .request = m->N > 1 ? m->block : model_min(window, m->span), .streams = active,
                         .lockstep = m->N > 1, .fill = 1, .hole_max = MODEL_HOLE_MAX, .overlap = 1};
    return model_aggregate(p, m, &plan);
}

/* ---- staged collective writes (aggregator caching) ---- */

/* A staged collective write (docs/design/aggregator-caching.md, section 6). node: each process copies its part
 * into its node's ring, and each node's flusher writes what the node's processes staged, merged within the node
 * only: with interleaved pieces, runs of the node's ppn consecutive ranks' pieces, each positioning when the
 * other nodes' pieces lie between them. cached: view_based's exchange ((N - 1) / N of the bytes cross nodes, a
 * latency per window round) and the aggregators' copy, then each aggregator's flusher writes whole blocks, one
 * stream per node walking its blocks in order. Returns the seconds the application sees; *behind: the flushers'
 * device seconds (hidden by computation between the calls, else paid at sync or close). */
static double model_staged(const iotame_profile_t *p, const model_shape_t *m, int cached, double *behind)
{
    model_io_t io = {.write = 1, .streams = m->N, .nodes = m->N, .extent = m->span, .bytes = m->B};
    double visible;
    if (cached) {
        const double cross = m->N > 1 ? m->B / m->N * (m->N - 1) / m->N : 0;
        const double rounds = ceil(m->B / m->N / model_max(m->C, m->block));
        visible = cross / model_exchange_rate(p, m, model_min(m->C, m->B / m->N)) + rounds * p->inter_latency +
                  model_copy(p, m->B / m->N, m->k * m->ppn);
        io.request = model_min(m->block, model_max(1, m->span / m->N));
        io.lockstep = 1;
    } else {
        visible = model_copy(p, m->B / m->P, 1);
        const int apart = m->interleaved && m->N > 1; /* the node's runs have the other nodes' between them */
        io.request = apart ? m->ppn * m->s : m->B / m->N;
        io.scattered = apart || m->gap > 0;
    }
    *behind = model_store(p, m, &io);
    return visible;
}

/* ---- the interface ---- */

static model_shape_t model_shape(const iotame_profile_t *p, const iotame_model_call_t *c)
{
    model_shape_t m = {.write = c->write, .interleaved = c->interleaved, .sieves = c->sieves};
    m.P = model_max(1, (double)c->nprocs);
    m.N = model_min(m.P, model_max(1, (double)c->nodes));
    m.ppn = c->ppn > 0 ? (double)c->ppn : m.P / m.N;
    m.B = model_max(1, (double)c->bytes);
    m.k = model_max(1, (double)c->pieces);
    m.s = c->piece_size > 0 ? (double)c->piece_size : m.B / (m.P * m.k);
    m.gap = model_max(0, (double)c->gap);
    m.span = m.B + (m.P * m.k - 1) * m.gap;
    m.T = model_max(1, (double)(c->targets > 0 ? c->targets : p->targets));
    m.U = model_max(1, (double)(c->unit > 0 ? c->unit : p->stripe_unit));
    m.A = c->cb_nodes > 0 ? model_min((double)c->cb_nodes, m.P) : m.N;
    m.C = c->cb_buffer_size > 0 ? model_max(4096, (double)c->cb_buffer_size) : MODEL_CB_BUFFER;
    m.block = c->block_size > 0 ? (double)c->block_size : MODEL_BLOCK;
    return m;
}

double iotame_model_predict(const iotame_profile_t *p, const iotame_model_call_t *c, int kind)
{
    model_shape_t m = model_shape(p, c);
    const double setup = model_max(0, c->setup_seconds); /* the engine's, once per handle */
    switch (kind) {
    case IOTAME_MODEL_PASSTHROUGH: return model_passthrough(p, &m);
    case IOTAME_MODEL_INDEPENDENT: return model_independent(p, &m);
    case IOTAME_MODEL_TWO_PHASE: return setup + model_two_phase(p, &m);
    case IOTAME_MODEL_NODE_LOCAL: return setup + model_node_local(p, &m);
    case IOTAME_MODEL_TARGET_ALIGNED: return setup + model_target_aligned(p, &m);
    case IOTAME_MODEL_VIEW_BASED: return setup + model_view_based(p, &m);
    default: return -1;
    }
}

double iotame_model_staged(const iotame_profile_t *p, const iotame_model_call_t *c, int cached, double *behind)
{
    const model_shape_t m = model_shape(p, c);
    return model_staged(p, &m, cached, behind);
}

int iotame_model_cache_pays(const iotame_profile_t *p, const iotame_model_call_t *c, double error, double *node,
                            double *cached)
{
    double behind;
    *node = iotame_model_staged(p, c, 0, &behind) + behind;
    *cached = iotame_model_staged(p, c, 1, &behind) + behind;
    return *cached * (1 + model_max(0, error)) < *node;
}

int iotame_model_rank(const iotame_profile_t *p, const iotame_model_call_t *c, const int *kinds, int n, int *order,
                      double *seconds)
{
    double t[IOTAME_MODEL_KINDS * 4];
    if (n < 0 || n > (int)(sizeof t / sizeof *t)) return -1;
    for (int i = 0; i < n; i++) {
        t[i] = iotame_model_predict(p, c, kinds[i]);
        if (t[i] < 0) return -1;
        order[i] = kinds[i];
    }
    for (int i = 1; i < n; i++) /* insertion sort: stable, n is a handful */
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double tt = t[j];
            t[j] = t[j - 1];
            t[j - 1] = tt;
            int o = order[j];
            order[j] = order[j - 1];
            order[j - 1] = o;
        }
    if (seconds)
        for (int i = 0; i < n; i++) seconds[i] = t[i];
    return n;
}

const char *iotame_model_kind_name(int kind)
{
    static const char *const names[IOTAME_MODEL_KINDS] = {
        [IOTAME_MODEL_PASSTHROUGH] = "passthrough",       [IOTAME_MODEL_INDEPENDENT] = "independent",
        [IOTAME_MODEL_TWO_PHASE] = "two_phase",           [IOTAME_MODEL_NODE_LOCAL] = "node_local",
        [IOTAME_MODEL_TARGET_ALIGNED] = "target_aligned", [IOTAME_MODEL_VIEW_BASED] = "view_based"};
    return kind > IOTAME_MODEL_NONE && kind < IOTAME_MODEL_KINDS ? names[kind] : NULL;
}

/* Why a curve cannot be used, or NULL. */
static const char *model_curve_problem(const iotame_model_curve_t *cv)
{
    if (cv->n < 1 || cv->n > IOTAME_MODEL_POINTS) return "between 1 and 16 points";
    for (int i = 0; i < cv->n; i++) {
        if (!(cv->x[i] > 0) || !(cv->y[i] > 0) || !isfinite(cv->x[i]) || !isfinite(cv->y[i]))
            return "x and y finite and above 0";
        if (i > 0 && !(cv->x[i] > cv->x[i - 1])) return "x ascending";
    }
    return NULL;
}

const char *iotame_model_profile_problem(const iotame_profile_t *p)
{
    static const struct {
        size_t off;
        const char *problem;
    } curves[] = {
        {offsetof(iotame_profile_t, write_seq), "write_seq: a curve with x (bytes) ascending, y (bytes/s) above 0"},
        {offsetof(iotame_profile_t, write_scattered), "write_scattered: a curve with x ascending, y above 0"},
        {offsetof(iotame_profile_t, read_seq), "read_seq: a curve with x ascending, y above 0"},
        {offsetof(iotame_profile_t, read_scattered), "read_scattered: a curve with x ascending, y above 0"},
        {offsetof(iotame_profile_t, streams), "streams: a curve with x (streams) ascending, y (relative) above 0"},
    };
    for (size_t i = 0; i < sizeof curves / sizeof *curves; i++)
        if (model_curve_problem((const iotame_model_curve_t *)((const char *)p + curves[i].off)))
            return curves[i].problem;
    if (p->targets < 1) return "targets: an integer >= 1";
    if (p->stripe_unit < 1) return "stripe_unit: bytes >= 1";
    if (!(p->intra_rate > 0) || !(p->inter_rate > 0)) return "intra_rate, inter_rate: bytes/s above 0";
    if (!(p->intra_latency >= 0) || !(p->inter_latency >= 0)) return "intra_latency, inter_latency: seconds >= 0";
    if (!(p->copy_rate > 0)) return "copy_rate: bytes/s above 0";
    if (!(p->piece_seconds >= 0) || !(p->syscall_seconds >= 0)) return "piece_seconds, syscall_seconds: seconds >= 0";
    if (!(p->writeback_bytes >= 0)) return "writeback_bytes: bytes >= 0";
    if (!(p->writeback_rate >= 0)) return "writeback_rate: bytes/s >= 0";
    if (p->exchange.n && model_curve_problem(&p->exchange))
        return "exchange: no points, or a curve with x (bytes per pair) ascending, y (bytes/s) above 0";
    return NULL;
}
