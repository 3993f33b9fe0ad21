/* Wrappers of every MPI-IO data-access function: explicit offsets, individual and shared file pointers,
 * collective, split collective and nonblocking, each also in its MPI-4 large-count (_c) form.
 * The blocking collective ones go through the collective engine when the file's strategy is not passthrough
 * (collective/); the other collective ones pass through, their reason counted for such files. Independent calls
 * only pass through and are counted: nothing was added to their path.
 * One macro per signature shape keeps the ~80 wrappers identical in behaviour. */
#include "collective/strategy.h"
#include "intercept.h"

/* How a wrapper makes its call (CALL below): straight to the library, counting a pass-through reason for routed
 * files, or through the collective engine when the handle is routed. */
#define PLAIN(NAME, ARGS, LARGE, OFF) PMPI_File_##NAME ARGS
#define NOTE(REASON, NAME, ARGS) (iotame_collective_any() ? iotame_collective_note(fh, REASON) : (void)0, PMPI_File_##NAME ARGS)
#define SHARED(NAME, ARGS, LARGE, OFF) NOTE("shared file pointer", NAME, ARGS)
#define SPLIT(NAME, ARGS, LARGE, OFF) NOTE("split collective", NAME, ARGS)
#define NONBLOCKING(NAME, ARGS, LARGE, OFF) NOTE("nonblocking collective", NAME, ARGS)
#define ROUTE(OP, NAME, ARGS, LARGE, OFF)                                                                      \
    (iotame_collective_any() && iotame_collective_routed(fh)                                                  \
         ? iotame_collective_call(&(iotame_coll_args_t){OP, LARGE, fh, OFF, (void *)buf, count, datatype, status}) \
         : PMPI_File_##NAME ARGS)
#define WRITE_ALL(NAME, ARGS, LARGE, OFF) ROUTE(IOTAME_COLL_WRITE_ALL, NAME, ARGS, LARGE, OFF)
#define READ_ALL(NAME, ARGS, LARGE, OFF) ROUTE(IOTAME_COLL_READ_ALL, NAME, ARGS, LARGE, OFF)
#define WRITE_AT_ALL(NAME, ARGS, LARGE, OFF) ROUTE(IOTAME_COLL_WRITE_AT_ALL, NAME, ARGS, LARGE, OFF)
#define READ_AT_ALL(NAME, ARGS, LARGE, OFF) ROUTE(IOTAME_COLL_READ_AT_ALL, NAME, ARGS, LARGE, OFF)

/* A blocking call: time it and count the bytes it moved. */
#define BLOCKING(NAME, OP, PARAMS, ARGS, CALL)                                                                 \
    IOTAME_WRAPPER int MPI_File_##NAME PARAMS                                                                  \
    {                                                                                                          \
        if (!iotame__enter()) return PMPI_File_##NAME ARGS;                                                    \
        uint64_t t0 = iotame_now();                                                                            \
        int rc = CALL;                                                                                         \
        uint64_t ticks = iotame_now() - t0;                                                                    \
        iotame_stats_record(iotame_stats_lookup(fh), IOTAME_OP_##OP, ticks,                                    \
                            iotame__moved_bytes(status, rc, count, datatype));                                 \
        iotame__leave();                                                                                       \
        return rc;                                                                                             \
    }

/* A call that starts an operation (nonblocking or split-collective begin): count the bytes requested. */
#define STARTING(NAME, OP, PARAMS, ARGS, CALL)                                                                 \
    IOTAME_WRAPPER int MPI_File_##NAME PARAMS                                                                  \
    {                                                                                                          \
        if (!iotame__enter()) return PMPI_File_##NAME ARGS;                                                    \
        uint64_t t0 = iotame_now();                                                                            \
        int rc = CALL;                                                                                         \
        uint64_t ticks = iotame_now() - t0;                                                                    \
        uint64_t bytes = rc == MPI_SUCCESS ? iotame__request_bytes(count, datatype) : 0;                       \
        iotame_stats_record(iotame_stats_lookup(fh), IOTAME_OP_##OP, ticks, bytes);                               \
        iotame__leave();                                                                                       \
        return rc;                                                                                             \
    }

/* The end of a split collective: its bytes were counted at the begin. */
#define ENDING(NAME, CONST)                                                                                    \
    IOTAME_WRAPPER int MPI_File_##NAME(MPI_File fh, CONST void *buf, MPI_Status *status)                                      \
    {                                                                                                          \
        if (!iotame__enter()) return PMPI_File_##NAME(fh, buf, status);                                        \
        uint64_t t0 = iotame_now();                                                                         \
        int rc = PMPI_File_##NAME(fh, buf, status);                                                            \
        iotame_stats_record_time(iotame_stats_lookup(fh), IOTAME_OP_##NAME, iotame_now() - t0);             \
        iotame__leave();                                                                                       \
        return rc;                                                                                             \
    }

/* Parameter lists by shape: explicit offset (AT) or file pointer (PTR); CONST is const for writes. */
#define AT_STATUS(CONST, COUNT)                                                                                \
    (MPI_File fh, MPI_Offset offset, CONST void *buf, COUNT count, MPI_Datatype datatype, MPI_Status *status)
#define PTR_STATUS(CONST, COUNT) (MPI_File fh, CONST void *buf, COUNT count, MPI_Datatype datatype, MPI_Status *status)
#define AT_REQUEST(CONST, COUNT)                                                                               \
    (MPI_File fh, MPI_Offset offset, CONST void *buf, COUNT count, MPI_Datatype datatype, MPI_Request *request)
#define PTR_REQUEST(CONST, COUNT)                                                                              \
    (MPI_File fh, CONST void *buf, COUNT count, MPI_Datatype datatype, MPI_Request *request)
#define AT_BEGIN(CONST, COUNT) (MPI_File fh, MPI_Offset offset, CONST void *buf, COUNT count, MPI_Datatype datatype)
#define PTR_BEGIN(CONST, COUNT) (MPI_File fh, CONST void *buf, COUNT count, MPI_Datatype datatype)

#define AT_STATUS_ARGS (fh, offset, buf, count, datatype, status)
#define PTR_STATUS_ARGS (fh, buf, count, datatype, status)
#define AT_REQUEST_ARGS (fh, offset, buf, count, datatype, request)
#define PTR_REQUEST_ARGS (fh, buf, count, datatype, request)
#define AT_BEGIN_ARGS (fh, offset, buf, count, datatype)
#define PTR_BEGIN_ARGS (fh, buf, count, datatype)
#define AT_STATUS_OFF offset
#define PTR_STATUS_OFF 0
#define AT_REQUEST_OFF offset
#define PTR_REQUEST_OFF 0
#define AT_BEGIN_OFF offset
#define PTR_BEGIN_OFF 0

/* Every data-access function: FORM(name, shape, macro, const, how), generated in both count forms. */
#define DATA_FUNCTIONS(FORM)                                                                                   \
    FORM(read_at, AT_STATUS, BLOCKING, , PLAIN)                                                                \
    FORM(read_at_all, AT_STATUS, BLOCKING, , READ_AT_ALL)                                                      \
    FORM(write_at, AT_STATUS, BLOCKING, const, PLAIN)                                                          \
    FORM(write_at_all, AT_STATUS, BLOCKING, const, WRITE_AT_ALL)                                               \
    FORM(read, PTR_STATUS, BLOCKING, , PLAIN)                                                                  \
    FORM(read_all, PTR_STATUS, BLOCKING, , READ_ALL)                                                           \
    FORM(write, PTR_STATUS, BLOCKING, const, PLAIN)                                                            \
    FORM(write_all, PTR_STATUS, BLOCKING, const, WRITE_ALL)                                                    \
    FORM(read_shared, PTR_STATUS, BLOCKING, , SHARED)                                                          \
    FORM(write_shared, PTR_STATUS, BLOCKING, const, SHARED)                                                    \
    FORM(read_ordered, PTR_STATUS, BLOCKING, , SHARED)                                                         \
    FORM(write_ordered, PTR_STATUS, BLOCKING, const, SHARED)                                                   \
    FORM(iread_at, AT_REQUEST, STARTING, , PLAIN)                                                              \
    FORM(iread_at_all, AT_REQUEST, STARTING, , NONBLOCKING)                                                    \
    FORM(iwrite_at, AT_REQUEST, STARTING, const, PLAIN)                                                        \
    FORM(iwrite_at_all, AT_REQUEST, STARTING, const, NONBLOCKING)                                              \
    FORM(iread, PTR_REQUEST, STARTING, , PLAIN)                                                                \
    FORM(iread_all, PTR_REQUEST, STARTING, , NONBLOCKING)                                                      \
    FORM(iwrite, PTR_REQUEST, STARTING, const, PLAIN)                                                          \
    FORM(iwrite_all, PTR_REQUEST, STARTING, const, NONBLOCKING)                                                \
    FORM(iread_shared, PTR_REQUEST, STARTING, , SHARED)                                                        \
    FORM(iwrite_shared, PTR_REQUEST, STARTING, const, SHARED)                                                  \
    FORM(read_at_all_begin, AT_BEGIN, STARTING, , SPLIT)                                                       \
    FORM(write_at_all_begin, AT_BEGIN, STARTING, const, SPLIT)                                                 \
    FORM(read_all_begin, PTR_BEGIN, STARTING, , SPLIT)                                                         \
    FORM(write_all_begin, PTR_BEGIN, STARTING, const, SPLIT)                                                   \
    FORM(read_ordered_begin, PTR_BEGIN, STARTING, , SHARED)                                                    \
    FORM(write_ordered_begin, PTR_BEGIN, STARTING, const, SHARED)

#define INT_FORM(NAME, SHAPE, MACRO, CONST, HOW)                                                              \
    MACRO(NAME, NAME, SHAPE(CONST, int), SHAPE##_ARGS, HOW(NAME, SHAPE##_ARGS, 0, SHAPE##_OFF))
DATA_FUNCTIONS(INT_FORM)

#if MPI_VERSION >= 4
#define LARGE_COUNT_FORM(NAME, SHAPE, MACRO, CONST, HOW)                                                      \
    MACRO(NAME##_c, NAME, SHAPE(CONST, MPI_Count), SHAPE##_ARGS, HOW(NAME##_c, SHAPE##_ARGS, 1, SHAPE##_OFF))
DATA_FUNCTIONS(LARGE_COUNT_FORM)
#endif

ENDING(read_at_all_end, )
ENDING(write_at_all_end, const)
ENDING(read_all_end, )
ENDING(write_all_end, const)
ENDING(read_ordered_end, )
ENDING(write_ordered_end, const)
