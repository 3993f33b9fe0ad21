/* Logging to stderr, prefixed by nothing: messages carry their own "iotame:" prefix. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "iotame.h"

void iotame_log_info(const char *fmt, ...)
{
    const char *v = getenv(IOTAME_ENV_VERBOSE);
    if (!v || strcmp(v, "1") != 0 || iotame_core_rank() != 0) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

void iotame_log_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "iotame: warning (rank %d): ", iotame_core_rank());
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}
