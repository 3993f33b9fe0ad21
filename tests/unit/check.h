/* The unit tests' check: reports a failed condition with its place and goes on (main returns failures != 0). */
#ifndef IOTAME_TEST_CHECK_H
#define IOTAME_TEST_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond)                                                                                            \
    do {                                                                                                       \
        if (!(cond)) {                                                                                         \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                           \
            failures++;                                                                                        \
        }                                                                                                      \
    } while (0)

#endif
