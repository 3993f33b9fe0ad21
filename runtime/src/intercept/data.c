/* Wrappers of every MPI-IO data-access function: explicit offsets, individual and shared file pointers,
 * collective, split collective and nonblocking, each also in its MPI-4 large-count (_c) form.
 * Today they all pass through to the library and are counted; later parts route the collective ones.
 * One macro per signature shape keeps the ~80 wrappers identical in behaviour. */
#include "intercept.h"

/* A blocking call: time it and count the bytes it moved. */
#define BLOCKING(NAME, OP, PARAMS, ARGS)                                                                       \
    IOTAME_WRAPPER int MPI_File_##NAME PARAMS                                                                  \
    {                                                                                                          \
        if (!iotame__enter()) return PMPI_File_##NAME ARGS;                                                    \
        uint64_t t0 = iotame_now();                                                                            \
        int rc = PMPI_File_##NAME ARGS;                                                                        \
        uint64_t ticks = iotame_now() - t0;                                                                    \
        iotame_stats_record(iotame_stats_lookup(fh), IOTAME_OP_##OP, ticks,                                    \
                            iotame__moved_bytes(status, rc, count, datatype));                                 \
        iotame__leave();                                                                                       \
        return rc;                                                                                             \
    }

/* A call that starts an operation (nonblocking or split-collective begin): count the bytes requested. */
#define STARTING(NAME, OP, PARAMS, ARGS)                                                                       \
    IOTAME_WRAPPER int MPI_File_##NAME PARAMS                                                                                 \
    {                                                                                                          \
        if (!iotame__enter()) return PMPI_File_##NAME ARGS;                                                    \
        uint64_t t0 = iotame_now();                                                                         \
        int rc = PMPI_File_##NAME ARGS;                                                                        \
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

/* Every data-access function: FORM(name, shape, macro, const), generated in both count forms. */
#define DATA_FUNCTIONS(FORM)                                                                                   \
    FORM(read_at, AT_STATUS, BLOCKING, )                                                              \
    FORM(read_at_all, AT_STATUS, BLOCKING, )                                                      \
    FORM(write_at, AT_STATUS, BLOCKING, const)                                                       \
    FORM(write_at_all, AT_STATUS, BLOCKING, const)                                               \
    FORM(read, PTR_STATUS, BLOCKING, )                                                                   \
    FORM(read_all, PTR_STATUS, BLOCKING, )                                                           \
    FORM(write, PTR_STATUS, BLOCKING, const)                                                            \
    FORM(write_all, PTR_STATUS, BLOCKING, const)                                                    \
    FORM(read_shared, PTR_STATUS, BLOCKING, )                                                     \
    FORM(write_shared, PTR_STATUS, BLOCKING, const)                                              \
    FORM(read_ordered, PTR_STATUS, BLOCKING, )                                                   \
    FORM(write_ordered, PTR_STATUS, BLOCKING, const)                                            \
    FORM(iread_at, AT_REQUEST, STARTING, )                                                           \
    FORM(iread_at_all, AT_REQUEST, STARTING, )                                                   \
    FORM(iwrite_at, AT_REQUEST, STARTING, const)                                                    \
    FORM(iwrite_at_all, AT_REQUEST, STARTING, const)                                            \
    FORM(iread, PTR_REQUEST, STARTING, )                                                                \
    FORM(iread_all, PTR_REQUEST, STARTING, )                                                        \
    FORM(iwrite, PTR_REQUEST, STARTING, const)                                                         \
    FORM(iwrite_all, PTR_REQUEST, STARTING, const)                                                 \
    FORM(iread_shared, PTR_REQUEST, STARTING, )                                                  \
    FORM(iwrite_shared, PTR_REQUEST, STARTING, const)                                           \
    FORM(read_at_all_begin, AT_BEGIN, STARTING, )                                           \
    FORM(write_at_all_begin, AT_BEGIN, STARTING, const)                                    \
    FORM(read_all_begin, PTR_BEGIN, STARTING, )                                                \
    FORM(write_all_begin, PTR_BEGIN, STARTING, const)                                         \
    FORM(read_ordered_begin, PTR_BEGIN, STARTING, )                                        \
    FORM(write_ordered_begin, PTR_BEGIN, STARTING, const)

#define INT_FORM(NAME, SHAPE, MACRO, CONST) MACRO(NAME, NAME, SHAPE(CONST, int), SHAPE##_ARGS)
DATA_FUNCTIONS(INT_FORM)

#if MPI_VERSION >= 4
#define LARGE_COUNT_FORM(NAME, SHAPE, MACRO, CONST) MACRO(NAME##_c, NAME, SHAPE(CONST, MPI_Count), SHAPE##_ARGS)
DATA_FUNCTIONS(LARGE_COUNT_FORM)
#endif

ENDING(read_at_all_end, )
ENDING(write_at_all_end, const)
ENDING(read_all_end, )
ENDING(write_all_end, const)
ENDING(read_ordered_end, )
ENDING(write_ordered_end, const)
