/* iotame public C API: the version and the names of every environment variable the runtime reads.
 * The runtime needs no API calls: load libiotame.so with LD_PRELOAD (or link it) and set these variables. */
#ifndef IOTAME_H
#define IOTAME_H

#define IOTAME_CONFIG_VERSION 1 /* "version" of the configuration files this runtime reads */
#define IOTAME_STATS_VERSION 1  /* "version" of the statistics files it writes */

#define IOTAME_ENV_CONFIG "IOTAME_CONFIG"     /* path of the JSON configuration */
#define IOTAME_ENV_STATS "IOTAME_STATS"       /* path of the statistics rank 0 writes at MPI_Finalize */
#define IOTAME_ENV_DISABLE "IOTAME_DISABLE"   /* "1": every wrapper is a pure pass-through */
#define IOTAME_ENV_ON_ERROR "IOTAME_ON_ERROR" /* "passthrough": a bad configuration warns and is ignored */
#define IOTAME_ENV_VERBOSE "IOTAME_VERBOSE"   /* "1": rank 0 logs what the runtime applies */

/* Exit status of every rank when the configuration is invalid (and IOTAME_ON_ERROR is not passthrough). */
#define IOTAME_EXIT_BAD_CONFIG 3

/* The runtime's version string, e.g. "0.1.0". */
__attribute__((visibility("default"))) const char *iotame_version(void);
/* The registered modules and what they register (the collective strategies), as JSON text:
 * {"modules": [{"name": "stats", "settings": null}, {"name": "collective", "settings": "collective",
 * "strategies": [{"name": "passthrough", "options": []}, ...]}, ...]}. Needs no MPI. */
__attribute__((visibility("default"))) const char *iotame_registry(void);

#endif
