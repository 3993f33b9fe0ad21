/* The configuration (IOTAME_CONFIG): parsing, validation against runtime/settings.json, and per-file rules.
 * This part has no MPI in it so that unit tests and tools can use it alone; core.h includes it. */
#ifndef IOTAME_CORE_CONFIG_H
#define IOTAME_CORE_CONFIG_H

#include <stddef.h>

typedef struct json_t json_t;

typedef struct {
    char *key;
    char *value; /* as MPI expects it: integers printed in decimal */
} iotame_kv_t;

/* `defaults` or one entry of `files`. */
typedef struct {
    char *match;  /* glob; NULL for defaults */
    int override; /* -1: not set by this rule */
    iotame_kv_t *hints; /* mpiio_hints then mpiio_hints_extra, in file order */
    size_t nhints;
    json_t *json; /* the rule object (borrowed from the config's root), for the sections later parts read */
} iotame_rule_t;

typedef struct {
    char *path;
    json_t *root;
    iotame_rule_t defaults;
    iotame_rule_t *rules;
    size_t nrules;
} iotame_config_t;

/* What applies to one file: defaults overlaid with the first matching rule. */
typedef struct {
    const iotame_rule_t *rule;     /* NULL when no rule matched */
    const iotame_rule_t *defaults; /* the configuration's defaults; NULL without a configuration */
    int override;
    const iotame_kv_t **hints; /* pointers into the config; later keys already replaced earlier ones */
    size_t nhints;
} iotame_file_config_t;

/* Reads a whole file. Returns 0, or -errno with *errors set to a message (free it). */
int iotame_config_read_file(const char *path, char **text, size_t *len, char **errors);

/* Parses and validates `text` (named `path` in messages). On success returns 0 and *out; otherwise returns
 * -EINVAL and *errors holds every problem found, one "iotame: config PATH: KEY: message" per line. */
int iotame_config_parse(const char *path, const char *text, size_t len, iotame_config_t **out, char **errors);

void iotame_config_free(iotame_config_t *cfg);

/* Validates against the settings description `text` (the shape of runtime/settings.json) instead of the embedded
 * one, from now on in this process: for tools and tests only (iotame-config --settings), never the runtime.
 * Returns 0, or -EINVAL with *errors set to a one-line message (free it). */
int iotame_config_use_settings(const char *text, size_t len, char **errors);

/* The settings for the file `path` (as given to MPI_File_open; a ROMIO "fs:" prefix is ignored).
 * Returns 0 or -ENOMEM; free with iotame_config_file_release(). */
int iotame_config_for_file(const iotame_config_t *cfg, const char *path, iotame_file_config_t *out);
void iotame_config_file_release(iotame_file_config_t *fc);

/* The JSON value of `key` in section `section` for a file: the matching rule's, else the defaults', else NULL
 * (borrowed from the configuration). The configuration's own value: modules read settings through
 * iotame_config_setting (or iotame_file_setting), which add settings.json's defaults. */
const json_t *iotame_config_value(const iotame_file_config_t *fc, const char *section, const char *key);
/* The default of a setting as runtime/settings.json gives it, or NULL when it has none (borrowed). */
const json_t *iotame_config_default(const char *section, const char *key);
/* The file's value of a setting (fc may be NULL), else its default in runtime/settings.json, else NULL (borrowed). */
const json_t *iotame_config_setting(const iotame_file_config_t *fc, const char *section, const char *key);
/* Whether some file can have pred true of its value of section.key: the defaults' value (else the setting's default
 * in runtime/settings.json), or a rule's. For a module's start hook (is it needed at all); cfg may be NULL. */
int iotame_config_any(const iotame_config_t *cfg, const char *section, const char *key, int (*pred)(const json_t *v));

#endif
