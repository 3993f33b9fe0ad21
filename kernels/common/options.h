/* Command-line options of the kernels: a declarative table of long options (`--name value`, `--name=value`).
 *
 *   static struct { int64_t bsize, nbuf; int api; bool nopix; const char *file; } o;
 *   static const char *const apis[] = {"posix", "mpiio", NULL};
 *   const iotame_option_t opts[] = {
 *       {.name = "bsize", .type = IOTAME_OPT_SIZE, .value = &o.bsize, .def = "1m", .min = "1", .help = "..."},
 *       {.name = "nbuf",  .type = IOTAME_OPT_INT,  .value = &o.nbuf,  .def = "4", .min = "1", .max = "64"},
 *       {.name = "api",   .type = IOTAME_OPT_ENUM, .value = &o.api,   .def = "mpiio", .choices = apis},
 *       {.name = "no-pix", .type = IOTAME_OPT_FLAG, .value = &o.nopix},
 *       {.name = "file",  .type = IOTAME_OPT_STRING, .value = &o.file, .def = "data.out"},
 *       {0}};
 *   int rc = iotame_options_parse(run, opts, argc, argv);
 *   if (rc != 0) return rc;
 *
 * Every option lands in run->params under its name (sizes and integers as integers, enums as the chosen name,
 * flags as booleans), defaults included. Errors name the option and what was expected, are printed by rank 0
 * only, and every rank returns IOTAME_EXIT_USAGE (argv is the same on all ranks, so all agree).
 */
#ifndef IOTAME_KERNELS_OPTIONS_H
#define IOTAME_KERNELS_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "run.h"

typedef enum {
    IOTAME_OPT_FLAG,   /* bool *: --name sets true; default false */
    IOTAME_OPT_INT,    /* int64_t * */
    IOTAME_OPT_SIZE,   /* int64_t *: bytes, suffixes k/m/g (K/M/G) are powers of 1024 */
    IOTAME_OPT_DOUBLE, /* double * */
    IOTAME_OPT_STRING, /* const char **: points into argv or .def */
    IOTAME_OPT_ENUM,   /* int *: index into .choices (matched case-insensitively) */
} iotame_opt_type_t;

typedef struct iotame_option {
    const char *name;            /* without the leading "--"; also the key in "params" */
    iotame_opt_type_t type;
    void *value;                 /* where the parsed value goes; type as listed above */
    const char *def;             /* default, written as on the command line ("1m", "4", "mpiio"); NULL: 0 / NULL */
    const char *min, *max;       /* inclusive bounds for INT, SIZE, DOUBLE in the same syntax; NULL: none */
    const char *const *choices;  /* ENUM: NULL-terminated names */
    const char *help;            /* one line for --help */
} iotame_option_t;

/* The options every long-option kernel shares, so that scripts and tests drive them all alike:
 *   --file PATH     the file (a prefix for kernels with several files; file per process appends ".%08d" rank)
 *   --seed N        the data pattern's seed (set run->seed from it)
 *   --keep          leave the files at the end (default: remove what this run wrote)
 *   --skip-write    write nothing: read and verify files an earlier --keep run with the same options wrote
 * Put IOTAME_STANDARD_OPTIONS(o, "iotame-foo.dat") in a kernel's table, with `iotame_standard_options_t o`. */
typedef struct {
    const char *file;
    int64_t seed;
    bool keep, skip_write;
} iotame_standard_options_t;

#define IOTAME_STANDARD_OPTIONS(o, default_file)                                                               \
    {.name = "file", .type = IOTAME_OPT_STRING, .value = &(o).file, .def = default_file,                       \
     .help = "file name (prefix when the kernel writes several files)"},                                       \
    {.name = "seed", .type = IOTAME_OPT_INT, .value = &(o).seed, .def = "42", .min = "0",                      \
     .help = "seed of the data pattern"},                                                                      \
    {.name = "keep", .type = IOTAME_OPT_FLAG, .value = &(o).keep, .help = "keep the files at the end"},         \
    {.name = "skip-write", .type = IOTAME_OPT_FLAG, .value = &(o).skip_write,                                  \
     .help = "write nothing; read and verify the files of an earlier --keep run"}

/* Parses argv[1..argc-1] (argv[0] is the kernel name) against a table ended by {0}. Returns 0, IOTAME_EXIT_HELP
 * after printing --help (or --describe: the table as JSON, for `iotame bench` and the tuner) on rank 0, or IOTAME_EXIT_USAGE after printing the error on rank 0. */
int iotame_options_parse(iotame_run_t *run, const iotame_option_t *opts, int argc, char **argv);

/* Value parsers, for kernels with their own syntax (ior's short options). Return 0, or -1 when s is not a
 * well-formed value in range of int64_t. */
int iotame_parse_size(const char *s, int64_t *out); /* "4096", "64k", "1M", "2g" */
int iotame_parse_int(const char *s, int64_t *out);

/* Wording for messages: "expected " IOTAME_SIZE_SYNTAX ", got ..." */
#define IOTAME_SIZE_SYNTAX "a size (bytes, or with a k, m or g suffix: 4096, 64k, 1m, 2g)"

#endif
