/* The bytes a replay creates, and --replay-bytes / the free space of --dir as their limit (replay/budget.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "replay/budget.h"

typedef uint64_t replay_range_t[2]; /* [lo, hi) while merging, [offset, length] when returned */

static int budget_cmp(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Sorts [lo, hi) ranges and merges those that touch; returns how many are left. */
static size_t budget_merge(replay_range_t *r, size_t n)
{
    if (n == 0) return 0;
    qsort(r, n, sizeof *r, budget_cmp);
    size_t m = 0;
    for (size_t i = 1; i < n; i++) {
        if (r[i][0] <= r[m][1]) {
            if (r[i][1] > r[m][1]) r[m][1] = r[i][1];
        } else {
            m++;
            r[m][0] = r[i][0];
            r[m][1] = r[i][1];
        }
    }
    return m + 1;
}

/* The extents of this rank's kept read calls of f, one [lo, hi) per repetition, merged. */
static size_t budget_read_spans(const replay_file_t *f, replay_range_t **out)
{
    size_t n = 0;
    for (size_t j = 0; j < f->ncalls; j++)
        if ((f->calls[j].op == 'r' || f->calls[j].op == 'R') && f->calls[j].nat) n += f->calls[j].repeat;
    replay_range_t *r = n ? malloc(n * sizeof *r) : NULL;
    size_t k = 0;
    for (size_t j = 0; j < f->ncalls; j++) {
        const replay_call_t *c = &f->calls[j];
        if ((c->op != 'r' && c->op != 'R') || !c->nat) continue;
        uint64_t span = replay_call_span(c);
        for (uint64_t i = 0; i < c->repeat; i++, k++) {
            r[k][0] = c->at[0].offset + i * c->advance;
            r[k][1] = r[k][0] + span;
        }
    }
    *out = r;
    return budget_merge(r, n);
}

/* True when --scale left every call of this rank's share of f (its data calls as the spec has them). */
static bool budget_whole(const replay_file_t *f)
{
    for (size_t j = 0; j < f->ncalls; j++)
        if (f->calls[j].repeat != f->calls[j].spec_repeat) return false;
    return true;
}

bool *replay_budget_whole(iotame_run_t *run, const replay_spec_t *spec)
{
    int *all = calloc(spec->nfiles ? spec->nfiles : 1, sizeof *all);
    for (size_t i = 0; i < spec->nfiles; i++) all[i] = spec->files[i].me < 0 || budget_whole(&spec->files[i]);
    MPI_Allreduce(MPI_IN_PLACE, all, (int)spec->nfiles, MPI_INT, MPI_LAND, run->comm);
    bool *whole = calloc(spec->nfiles ? spec->nfiles : 1, sizeof *whole);
    for (size_t i = 0; i < spec->nfiles; i++) whole[i] = all[i];
    free(all);
    return whole;
}

size_t replay_budget_preload(const replay_file_t *f, bool whole, uint64_t (**out)[2])
{
    *out = NULL;
    if (f->me < 0 || f->npreload == 0) return 0;
    replay_range_t *spans;
    size_t ns = budget_read_spans(f, &spans);
    replay_range_t *pre = malloc(f->npreload * sizeof *pre);
    for (size_t i = 0; i < f->npreload; i++) {
        pre[i][0] = f->preload[i][0];
        pre[i][1] = f->preload[i][0] + f->preload[i][1];
    }
    size_t np = budget_merge(pre, f->npreload), n = 0, cap = 0;
    uint64_t (*res)[2] = NULL;
    if (whole) {   /* every call of every proc kept: the spec's preload, by the file's first proc */
        free(spans);
        for (size_t i = 0; i < np; i++) pre[i][1] -= pre[i][0];
        if (f->me == 0 && np) {
            *out = pre;
            return np;
        }
        free(pre);
        return 0;
    }
    for (size_t a = 0, b = 0; a < ns && b < np;) {   /* two sorted, merged lists: their intersection */
        uint64_t lo = spans[a][0] > pre[b][0] ? spans[a][0] : pre[b][0];
        uint64_t hi = spans[a][1] < pre[b][1] ? spans[a][1] : pre[b][1];
        if (lo < hi) {
            if (n == cap) res = realloc(res, (cap = cap ? 2 * cap : 16) * sizeof *res);
            res[n][0] = lo;
            res[n][1] = hi - lo;
            n++;
        }
        if (spans[a][1] < pre[b][1]) a++;
        else b++;
    }
    free(spans);
    free(pre);
    *out = res;
    return n;
}

/* Bytes this rank creates in f at the current scale: its kept write calls' bytes and its share of the preload. */
static uint64_t budget_file_bytes(const replay_file_t *f, bool whole)
{
    uint64_t total = 0;
    if (f->me < 0) return 0;
    for (size_t j = 0; j < f->ncalls; j++)
        if (f->calls[j].op == 'w' || f->calls[j].op == 'W') total += f->calls[j].repeat * f->calls[j].bytes;
    uint64_t (*pre)[2];
    size_t n = replay_budget_preload(f, whole, &pre);
    for (size_t k = 0; k < n; k++) total += pre[k][1];
    free(pre);
    return total;
}

uint64_t replay_budget_bytes(const replay_spec_t *spec, const bool *whole)
{
    uint64_t total = 0;
    for (size_t i = 0; i < spec->nfiles; i++) total += budget_file_bytes(&spec->files[i], whole[i]);
    return total;
}

/* Collective: the file that needs the most bytes at the current scale (summed over ranks), and how many. */
static size_t budget_largest(iotame_run_t *run, const replay_spec_t *spec, uint64_t *bytes)
{
    size_t nf = spec->nfiles ? spec->nfiles : 1, best = 0;
    uint64_t *per = calloc(nf, sizeof *per);
    bool *whole = replay_budget_whole(run, spec);
    for (size_t i = 0; i < spec->nfiles; i++) per[i] = budget_file_bytes(&spec->files[i], whole[i]);
    MPI_Allreduce(MPI_IN_PLACE, per, (int)spec->nfiles, MPI_UINT64_T, MPI_SUM, run->comm);
    for (size_t i = 1; i < spec->nfiles; i++)
        if (per[i] > per[best]) best = i;
    *bytes = per[best];
    free(per);
    free(whole);
    return best;
}

static uint64_t budget_total(iotame_run_t *run, replay_spec_t *spec, double scale)
{
    replay_spec_scale(spec, scale);
    bool *whole = replay_budget_whole(run, spec);
    uint64_t mine = replay_budget_bytes(spec, whole);
    free(whole);
    MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_UINT64_T, MPI_SUM, run->comm);
    return mine;
}

/* Free bytes of dir's file system for an unprivileged writer; UINT64_MAX when it cannot be asked (then only
 * --replay-bytes limits). Rank 0 asks, every rank gets the answer. */
static uint64_t budget_free(iotame_run_t *run, const char *dir)
{
    uint64_t avail = UINT64_MAX;
    struct statvfs st;
    if (run->rank == 0 && statvfs(dir, &st) == 0) avail = (uint64_t)st.f_bavail * st.f_frsize;
    MPI_Bcast(&avail, 1, MPI_UINT64_T, 0, run->comm);
    return avail;
}

int replay_budget_fit(iotame_run_t *run, replay_spec_t *spec, double scale, uint64_t limit, const char *dir,
                      double *chosen, uint64_t *created)
{
    uint64_t need = budget_total(run, spec, scale);
    if (limit && need > limit) {
        /* Bisection on the scale: the bytes grow with it (each file keeps ceil(f*n) calls of a kind). */
        double lo = 0.0, hi = scale;
        uint64_t least = budget_total(run, spec, 1e-15), most;
        if (least > limit) {
            size_t big = budget_largest(run, spec, &most);
            replay_spec_scale(spec, scale);
            return iotame_usage_error("the replay would write %llu bytes (its write calls and the preload its reads "
                                      "need) even with one call per file and kind, more than --replay-bytes %llu "
                                      "(%s alone needs %llu); raise --replay-bytes to at least %llu, or leave the "
                                      "largest files out of the spec (`iotame replay spec SRC --out SPEC`, then "
                                      "edit its \"files\")", (unsigned long long)least, (unsigned long long)limit,
                                      spec->files[big].name, (unsigned long long)most, (unsigned long long)least);
        }
        for (int it = 0; it < 60 && hi - lo > 1e-12 * scale; it++) {
            double mid = (lo + hi) / 2;
            if (budget_total(run, spec, mid) <= limit) lo = mid;
            else hi = mid;
        }
        scale = lo > 0 ? lo : 1e-15;
        need = budget_total(run, spec, scale);
    }
    uint64_t avail = budget_free(run, dir);
    *chosen = scale;
    *created = need;
    if (need > avail)
        return iotame_usage_error("the replay would write %llu bytes in %s (its write calls and the preload its "
                                  "reads need, at scale %g), more than the %llu bytes free there; use --scale or "
                                  "--replay-bytes, or another --dir", (unsigned long long)need, dir, scale,
                                  (unsigned long long)avail);
    return IOTAME_EXIT_OK;
}
