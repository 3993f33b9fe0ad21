/* Wrappers of every MPI-IO data-access function: explicit offsets, individual and shared file pointers,
 * collective, split collective and nonblocking, each also in its MPI-4 large-count (_c) form. Each one describes
 * the call (iotame_io_t), lets the modules see it before, serve it instead of the library (the collective
 * strategies), and count it after (core/module.h).
 * One macro per signature shape keeps the ~80 wrappers identical in behaviour. */
#include "intercept.h"

/* A data call: seen by the modules before, served by one of them or the library, then counted with its duration
 * and BYTES. */
#define CALL(NAME, ARGS, OP, KIND, WRITE, AT, LARGE, OFF, STATUS, BYTES)                                        \
    {                                                                                                          \
        if (!iotame__enter()) return PMPI_File_##NAME ARGS;                                                    \
        const iotame_io_t io = {IOTAME_OP_##OP, IOTAME_IO_##KIND, WRITE, AT, LARGE, fh, iotame__lookup(fh),   \
                                OFF, (void *)buf, count, datatype, STATUS};                                    \
        iotame_modules_before(&io);                                                                            \
        uint64_t t0 = iotame_now();                                                                            \
        int rc;                                                                                                \
        if (!iotame_modules_serve(&io, &rc)) rc = PMPI_File_##NAME ARGS;                                       \
        uint64_t ticks = iotame_now() - t0;                                                                    \
        iotame_modules_after(&io, rc, ticks, BYTES);                                                           \
        iotame__leave();                                                                                       \
        return rc;                                                                                             \
    }

/* A blocking call: counted with the bytes it moved. */
#define BLOCKING(NAME, OP, PARAMS, ARGS, KIND, WRITE, AT, LARGE, OFF)                                          \
    IOTAME_WRAPPER int MPI_File_##NAME PARAMS                                                                  \
    CALL(NAME, ARGS, OP, KIND, WRITE, AT, LARGE, OFF, status, iotame__moved_bytes(status, rc, count, datatype))

/* A call that starts an operation (nonblocking or split-collective begin): counted with the bytes requested. */
#define STARTING(NAME, OP, PARAMS, ARGS, KIND, WRITE, AT, LARGE, OFF)                                          \
    IOTAME_WRAPPER int MPI_File_##NAME PARAMS                                                                  \
    CALL(NAME, ARGS, OP, KIND, WRITE, AT, LARGE, OFF, MPI_STATUS_IGNORE,                                       \
         rc == MPI_SUCCESS ? iotame__request_bytes(count, datatype) : 0)

/* The end of a split collective: its bytes were counted at the begin. */
#define ENDING(NAME, CONST)                                                                                    \
    IOTAME_WRAPPER int MPI_File_##NAME(MPI_File fh, CONST void *buf, MPI_Status *status)                       \
    {                                                                                                          \
        if (!iotame__enter()) return PMPI_File_##NAME(fh, buf, status);                                        \
        uint64_t t0 = iotame_now();                                                                            \
        int rc = PMPI_File_##NAME(fh, buf, status);                                                            \
        iotame_file_stats_t *fs = iotame__lookup(fh)->fs;                                                  \
        iotame_modules_meta(fs, IOTAME_OP_##NAME, iotame_now() - t0);                                          \
        iotame_stats_record_error(fs, IOTAME_OP_##NAME, rc);                                                   \
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
#define AT_STATUS_AT 1
#define PTR_STATUS_AT 0
#define AT_REQUEST_AT 1
#define PTR_REQUEST_AT 0
#define AT_BEGIN_AT 1
#define PTR_BEGIN_AT 0

/* Every data-access function: FORM(name, shape, macro, const, kind, write), generated in both count forms. */
#define DATA_FUNCTIONS(FORM)                                                                                   \
    FORM(read_at, AT_STATUS, BLOCKING, , INDEPENDENT, 0)                                                       \
    FORM(read_at_all, AT_STATUS, BLOCKING, , COLLECTIVE, 0)                                                    \
    FORM(write_at, AT_STATUS, BLOCKING, const, INDEPENDENT, 1)                                                 \
    FORM(write_at_all, AT_STATUS, BLOCKING, const, COLLECTIVE, 1)                                              \
    FORM(read, PTR_STATUS, BLOCKING, , INDEPENDENT, 0)                                                         \
    FORM(read_all, PTR_STATUS, BLOCKING, , COLLECTIVE, 0)                                                      \
    FORM(write, PTR_STATUS, BLOCKING, const, INDEPENDENT, 1)                                                   \
    FORM(write_all, PTR_STATUS, BLOCKING, const, COLLECTIVE, 1)                                                \
    FORM(read_shared, PTR_STATUS, BLOCKING, , SHARED, 0)                                                       \
    FORM(write_shared, PTR_STATUS, BLOCKING, const, SHARED, 1)                                                 \
    FORM(read_ordered, PTR_STATUS, BLOCKING, , SHARED, 0)                                                      \
    FORM(write_ordered, PTR_STATUS, BLOCKING, const, SHARED, 1)                                                \
    FORM(iread_at, AT_REQUEST, STARTING, , NONBLOCKING, 0)                                                     \
    FORM(iread_at_all, AT_REQUEST, STARTING, , NONBLOCKING_COLLECTIVE, 0)                                      \
    FORM(iwrite_at, AT_REQUEST, STARTING, const, NONBLOCKING, 1)                                               \
    FORM(iwrite_at_all, AT_REQUEST, STARTING, const, NONBLOCKING_COLLECTIVE, 1)                                \
    FORM(iread, PTR_REQUEST, STARTING, , NONBLOCKING, 0)                                                       \
    FORM(iread_all, PTR_REQUEST, STARTING, , NONBLOCKING_COLLECTIVE, 0)                                        \
    FORM(iwrite, PTR_REQUEST, STARTING, const, NONBLOCKING, 1)                                                 \
    FORM(iwrite_all, PTR_REQUEST, STARTING, const, NONBLOCKING_COLLECTIVE, 1)                                  \
    FORM(iread_shared, PTR_REQUEST, STARTING, , SHARED, 0)                                                     \
    FORM(iwrite_shared, PTR_REQUEST, STARTING, const, SHARED, 1)                                               \
    FORM(read_at_all_begin, AT_BEGIN, STARTING, , SPLIT, 0)                                                    \
    FORM(write_at_all_begin, AT_BEGIN, STARTING, const, SPLIT, 1)                                              \
    FORM(read_all_begin, PTR_BEGIN, STARTING, , SPLIT, 0)                                                      \
    FORM(write_all_begin, PTR_BEGIN, STARTING, const, SPLIT, 1)                                                \
    FORM(read_ordered_begin, PTR_BEGIN, STARTING, , SHARED, 0)                                                 \
    FORM(write_ordered_begin, PTR_BEGIN, STARTING, const, SHARED, 1)

#define INT_FORM(NAME, SHAPE, MACRO, CONST, KIND, WRITE)                                                       \
    MACRO(NAME, NAME, SHAPE(CONST, int), SHAPE##_ARGS, KIND, WRITE, SHAPE##_AT, 0, SHAPE##_OFF)
DATA_FUNCTIONS(INT_FORM)

#if MPI_VERSION >= 4
#define LARGE_COUNT_FORM(NAME, SHAPE, MACRO, CONST, KIND, WRITE)                                               \
    MACRO(NAME##_c, NAME, SHAPE(CONST, MPI_Count), SHAPE##_ARGS, KIND, WRITE, SHAPE##_AT, 1, SHAPE##_OFF)
DATA_FUNCTIONS(LARGE_COUNT_FORM)
#endif

ENDING(read_at_all_end, )
ENDING(write_at_all_end, const)
ENDING(read_all_end, )
ENDING(write_all_end, const)
ENDING(read_ordered_end, )
ENDING(write_ordered_end, const)
