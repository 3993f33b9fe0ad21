/* emulate: a storage device model on the POSIX layer, for experiments only (docs/emulate.md, docs/design/emulate.md).
 * Every request on a recorded file is scheduled on a modelled disk or RAID-5 (positioning, transfer, prefetched
 * sequential streams), first come first served over every process that uses the device, and the process sleeps
 * until the modelled completion before the real system call moves the data. With several targets the files are
 * striped over that many such devices as a parallel file system stripes them (Lustre's round robin), and the
 * layout is given to the POSIX layer, where the throttle and the collective strategies read a file's striping. The
 * only interface of runtime/src/emulate/. */
#ifndef IOTAME_EMULATE_H
#define IOTAME_EMULATE_H

#include <stdint.h>

#include "core/module.h"

/* ---- the model (device.c): no MPI, no clock, no files; times are passed in ---- */

#define EMULATE_MAX_SERVERS 64
#define EMULATE_MAX_STREAMS 64
#define EMULATE_STREAM_GAP (128u * 1024u) /* a request at most this far after a stream's end continues it */
/* The largest request the device sees: a larger system call reaches it in pieces of this size, each queued after
 * the previous one completed, so that concurrent large requests interleave at the device as the block layer
 * splits them (Linux's max_sectors_kb), instead of being served whole one after another. */
#define EMULATE_SEGMENT (512u * 1024u)
/* The most storage targets (each a device of the parameters below). The POSIX layer's node table holds 32 targets
 * for every file system the job uses, so wider striping would leave the throttle without entries. */
#define EMULATE_MAX_TARGETS 32

/* The parameters in force (settings emulate.*; times in nanoseconds, sizes in bytes). */
typedef struct {
    uint32_t servers, streams; /* 1..EMULATE_MAX_SERVERS; 0..EMULATE_MAX_STREAMS */
    uint32_t write_behind;
    uint32_t targets; /* 1..EMULATE_MAX_TARGETS: devices the files are striped over */
    double bytes_per_ns; /* one server's transfer rate */
    double position_ns, seek_ns;
    uint64_t span;        /* bytes of the device's address space that a full-stroke seek crosses */
    uint64_t target_unit; /* bytes of a stripe unit (1..UINT32_MAX: the POSIX layer's layouts hold 32 bits) */
} emulate_params_t;

typedef struct {
    uint64_t busy_until; /* when the server finishes the last request scheduled on it */
    uint64_t head;       /* device address after that request */
} emulate_server_t;

typedef struct {
    uint64_t file; /* the file's key (never 0); 0: an unused entry */
    uint64_t end;  /* file offset where the stream's last request ended */
    uint64_t used; /* the device's request counter when it was last used (least recently used is replaced) */
} emulate_stream_t;

/* The device's schedule: lives in the shared state file, guarded by its mutex. */
typedef struct {
    emulate_params_t p;
    uint64_t requests;
    emulate_server_t server[EMULATE_MAX_SERVERS];
    emulate_stream_t stream[EMULATE_MAX_STREAMS];
} emulate_device_t;

/* The striped storage: `targets` devices, each with its own queue, servers, heads and streams. Lives in the shared
 * state file. */
typedef struct {
    emulate_params_t p;
    emulate_device_t target[EMULATE_MAX_TARGETS];
} emulate_striped_t;

/* A system call's part on one target: the bytes of its stripe units there, which are contiguous in the target's
 * object of the file (stripe k of a file is unit k / targets of its object on target (k + first) % targets). */
typedef struct {
    uint32_t target;
    uint64_t offset;      /* in the target's object of the file */
    uint64_t bytes;
    uint64_t file_offset; /* the piece's first byte in the file */
} emulate_piece_t;

/* One request as a device sees it: a file key (hash of device and inode, never 0) and a byte range of the file's
 * object on the device (the file itself with one target). */
typedef struct {
    uint64_t file, offset, bytes;
    int write;
} emulate_request_t;

typedef struct {
    uint64_t start, done; /* when the device starts and completes the request */
    uint64_t cost;        /* done - start */
    int server;
    int positioned; /* paid positioning */
    int stream_hit; /* continued a prefetched stream (no positioning) */
} emulate_result_t;

/* A preset's parameters ("disk", "raid5"); returns 0, or -EINVAL for another name. */
int emulate_preset(const char *device, emulate_params_t *p);
/* A hash of the parameters (the state file's header keeps it: different parameters re-initialize the state). */
uint64_t emulate_params_hash(const emulate_params_t *p);
/* Starts an idle device: every server free at time 0 with its head at address 0, no streams. */
void emulate_device_init(emulate_device_t *d, const emulate_params_t *p);
/* Starts idle striped storage: p's limits applied (targets 1..EMULATE_MAX_TARGETS, unit at least 1), every
 * target an idle device of p. */
void emulate_striped_init(emulate_striped_t *s, const emulate_params_t *p);
/* A file's key from its device and inode (never 0). */
uint64_t emulate_file_key(uint64_t dev, uint64_t ino);
/* The device address of a file offset: a per-file base spread over the span, plus the offset. */
uint64_t emulate_address(const emulate_params_t *p, uint64_t file, uint64_t offset);
/* The positioning cost between two device addresses: position + seek * sqrt(min(1, distance / span)). */
double emulate_position_ns(const emulate_params_t *p, uint64_t from, uint64_t to);
/* The target of a file's first stripe: a hash of its key, so that files start on different targets as Lustre's
 * allocator spreads them (0 with one target). */
uint32_t emulate_first_target(const emulate_params_t *p, uint64_t file);
/* The target holding byte `offset` of a file: (offset / target_unit + first) % targets. */
uint32_t emulate_target_of(const emulate_params_t *p, uint64_t file, uint64_t offset);
/* Splits a system call's byte range at stripe-unit boundaries and gathers the units of each target into one piece
 * (they are contiguous in its object): at most `targets` pieces into out[], in the order of their first byte in the
 * file; returns how many (0 for no bytes). */
unsigned emulate_split(const emulate_params_t *p, uint64_t file, uint64_t offset, uint64_t bytes,
                       emulate_piece_t out[EMULATE_MAX_TARGETS]);
/* Schedules a request that arrives at time `now` (FIFO: after everything scheduled before it) and updates the
 * device: the server that frees first serves it. */
void emulate_schedule(emulate_device_t *d, const emulate_request_t *r, uint64_t now, emulate_result_t *out);

/* This part's module table (core/modules.c registers it). */
extern const iotame_module_t iotame_module_emulate;

#endif
