/* Shared by the datatype test programs (flatten_check, random_collective): deterministic randomness that every
 * rank draws alike, small datatype queries, and a readable dump of a datatype's construction. Header-only: each
 * test program is built from its one .c file. */
#ifndef IOTAME_TEST_TYPE_HELPERS_H
#define IOTAME_TEST_TYPE_HELPERS_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    uint64_t s;
} rng_t;

static inline uint64_t next(rng_t *g)
{
    g->s += 0x9E3779B97F4A7C15ull;
    uint64_t z = g->s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline int rnd(rng_t *g, int lo, int hi) { return lo + (int)(next(g) % (uint64_t)(hi - lo + 1)); }

static inline MPI_Aint extent_of(MPI_Datatype t, MPI_Aint *lb)
{
    MPI_Aint l, e;
    MPI_Type_get_extent(t, &l, &e);
    if (lb) *lb = l;
    return e;
}

static inline int size_of(MPI_Datatype t)
{
    int s;
    MPI_Type_size(t, &s);
    return s;
}

static inline int is_named(MPI_Datatype t)
{
    int ni, na, nd, c;
    MPI_Type_get_envelope(t, &ni, &na, &nd, &c);
    return c == MPI_COMBINER_NAMED;
}

static inline void drop(MPI_Datatype *t)
{
    if (!is_named(*t)) MPI_Type_free(t);
}

/* The construction of a type, indented, on stderr (for reproducing a failing case). */
static inline void dump_type(MPI_Datatype t, int indent)
{
    int ni, na, nd, comb, size;
    MPI_Aint lb, ext = extent_of(t, &lb);
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    MPI_Type_size(t, &size);
    fprintf(stderr, "%*scombiner %d size %d lb %ld extent %ld", indent, "", comb, size, (long)lb, (long)ext);
    if (comb == MPI_COMBINER_NAMED) {
        fprintf(stderr, "\n");
        return;
    }
    int *ints = malloc(sizeof *ints * (size_t)(ni + 1));
    MPI_Aint *addrs = malloc(sizeof *addrs * (size_t)(na + 1));
    MPI_Datatype *types = malloc(sizeof *types * (size_t)(nd + 1));
    MPI_Type_get_contents(t, ni, na, nd, ints, addrs, types);
    fprintf(stderr, " ints");
    for (int i = 0; i < ni; i++) fprintf(stderr, " %d", ints[i]);
    fprintf(stderr, " addrs");
    for (int i = 0; i < na; i++) fprintf(stderr, " %ld", (long)addrs[i]);
    fprintf(stderr, "\n");
    for (int i = 0; i < nd; i++) dump_type(types[i], indent + 2);
    free(ints);
    free(addrs);
    free(types);
}

#endif
