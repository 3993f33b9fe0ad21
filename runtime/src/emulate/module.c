/* PLACEHOLDER until the device model lands: the module is never active. */
#include "emulate.h"

static int start(const iotame_config_t *cfg)
{
    (void)cfg;
    return 0;
}

const iotame_module_t iotame_module_emulate = {
    .name = "emulate",
    .settings = "emulate",
    .start = start,
};
