/* check.h — assertions for the C unit tests, printing the lines tests/run counts. */
#ifndef CARLO_TEST_CHECK_H
#define CARLO_TEST_CHECK_H

#include <stdio.h>

static int check_failed;

#define CHECK(name, cond, ...)                                \
    do {                                                      \
        if (cond) {                                           \
            printf("PASS %s\n", name);                        \
        } else {                                              \
            printf("FAIL %s: ", name);                        \
            printf(__VA_ARGS__);                              \
            printf("\n");                                     \
            check_failed = 1;                                 \
        }                                                     \
    } while (0)

#endif
