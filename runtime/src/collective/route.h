/* The collective module's record of a handle, shared by route.c (the calls, sync, close) and route_open.c (the
 * open and its agreement); private to collective/. */
#ifndef IOTAME_COLLECTIVE_ROUTE_H
#define IOTAME_COLLECTIVE_ROUTE_H

#include "strategy.h"

struct iotame_coll_file {
    MPI_File fh;
    iotame_file_stats_t *fs;
    char *path;
    int amode, atomic, written;
    const iotame_strategy_t *st; /* the file's strategy when fixed, else NULL */
    const iotame_chooser_t *ch;  /* the file's chooser when it has one, else NULL */
    int fixed;                   /* st's registry index; -1 with a chooser */
    void *choice;                /* the chooser's state of the handle */
    void *state[IOTAME_STRATEGY_MAX]; /* every strategy's own state of the handle (iotame_strategy_t.open) */
    unsigned ready;              /* the strategies set up (bit s: iotame_strategies[s]->setup ran) */
    const char *off; /* why every call now goes to the library (the engine could not be set up), or NULL */
    const char *lost; /* this rank's agreement at open lost its message: why it declines every gathered call */
    iotame_coll_view_t view;
    iotame_coll_env_t env;
    /* the call under way: this rank's extents, packed data, and every rank's row of facts */
    struct {
        iotame_extents_t ext;
        char *pack;
        size_t pack_cap;
        int64_t *info;
    } call;
    /* the block consumer the handle's record names, once bound (core/module.h), and the agreement of a handed
     * write (its 2 fields, then every rank's position after its puts) */
    const iotame_block_consumer_t *consumer;
    void *consumer_arg;
    int64_t *ends;
    double model_error; /* collective.model_error: handed to the consumer with a call's facts */
    /* the agreement after a call a library strategy served for the chooser, posted and not yet waited for (req not
     * MPI_REQUEST_NULL): the call's facts and strategy, whether the post failed, and the nanoseconds from the call's
     * entry (reduced to the slowest rank's) */
    struct {
        MPI_Request req;
        iotame_coll_facts_t g;
        int s, lost;
        int64_t slowest_ns;
    } later;
    /* calls served without a collective of ours (a fixed library strategy, or a choosing strategy's direct calls):
     * this rank's calls, bytes and seconds per strategy, into the statistics at close (merged over the ranks at the
     * end) */
    struct {
        int64_t calls[IOTAME_STRATEGY_MAX], bytes[IOTAME_STRATEGY_MAX];
        double seconds[IOTAME_STRATEGY_MAX];
    } own;
};

/* Frees the handle's state and the strategies' (the chooser's is the chooser's: closed, or finalized). */
void iotame__coll_route_free(iotame_coll_file_t *f);

#endif
