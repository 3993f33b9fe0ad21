/* emulate: a storage device model on the POSIX layer, for experiments only (docs/emulate.md, docs/design/emulate.md).
 * Every request on a recorded file is scheduled on a modelled disk or RAID-5 (positioning, transfer, prefetched
 * sequential streams), first come first served over every process that uses the device, and the process sleeps
 * until the modelled completion before the real system call moves the data. The only interface of
 * runtime/src/emulate/. */
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

/* The parameters in force (settings emulate.*; times in nanoseconds, sizes in bytes). */
typedef struct {
    uint32_t servers, streams; /* 1..EMULATE_MAX_SERVERS; 0..EMULATE_MAX_STREAMS */
    uint32_t write_behind, pad;
    double bytes_per_ns; /* one server's transfer rate */
    double position_ns, seek_ns;
    uint64_t span; /* bytes of the device's address space that a full-stroke seek crosses */
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

/* One request as the model sees it: a file key (hash of device and inode, never 0) and a byte range. */
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
/* A file's key from its device and inode (never 0). */
uint64_t emulate_file_key(uint64_t dev, uint64_t ino);
/* The device address of a file offset: a per-file base spread over the span, plus the offset. */
uint64_t emulate_address(const emulate_params_t *p, uint64_t file, uint64_t offset);
/* The positioning cost between two device addresses: position + seek * sqrt(min(1, distance / span)). */
double emulate_position_ns(const emulate_params_t *p, uint64_t from, uint64_t to);
/* Schedules a request that arrives at time `now` (FIFO: after everything scheduled before it) and updates the
 * device: the server that frees first serves it. */
void emulate_schedule(emulate_device_t *d, const emulate_request_t *r, uint64_t now, emulate_result_t *out);

/* This part's module table (core/modules.c registers it). */
extern const iotame_module_t iotame_module_emulate;

#endif
