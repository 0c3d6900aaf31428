/* error.c — the thread-local error message and the allocators that report sizes. */
#include "core/error.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static _Thread_local char message[1024];

int carlo_seterr(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return -1;
}

const char *carlo_errmsg(void)
{
    return message[0] ? message : "unknown error";
}

size_t carlo_mulsize(size_t a, size_t b)
{
    if (a != 0 && b > SIZE_MAX / a)
        return SIZE_MAX;
    return a * b;
}

static void oom(size_t bytes, const char *what)
{
    if (bytes == SIZE_MAX)
        carlo_seterr("out of host memory: the size of %s overflows", what);
    else
        carlo_seterr("out of host memory: %zu bytes (%.3g GiB) asked for %s", bytes,
                     (double)bytes / 1073741824.0, what);
}

void *carlo_malloc(size_t bytes, const char *what)
{
    void *p = bytes == SIZE_MAX ? NULL : malloc(bytes ? bytes : 1);
    if (!p)
        oom(bytes, what);
    return p;
}

void *carlo_calloc(size_t count, size_t size, const char *what)
{
    size_t bytes = carlo_mulsize(count, size);
    void *p = bytes == SIZE_MAX ? NULL : calloc(count ? count : 1, size ? size : 1);
    if (!p)
        oom(bytes, what);
    return p;
}
