/* emulate: a storage device model on the POSIX layer, for experiments only (docs/emulate.md). The only interface of
 * runtime/src/emulate/. */
#ifndef IOTAME_EMULATE_H
#define IOTAME_EMULATE_H

#include "core/module.h"

/* This part's module table (core/modules.c registers it). */
extern const iotame_module_t iotame_module_emulate;

#endif
