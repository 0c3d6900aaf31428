/* error.h — how C code below the Lua bindings reports failure: set a message
 * (thread-local) and return nonzero; the binding turns the message into a Lua error. */
#ifndef CARLO_ERROR_H
#define CARLO_ERROR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CARLO_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CARLO_PRINTF(a, b)
#endif

/* Always returns -1, so `return carlo_seterr(...)` reads naturally. */
int carlo_seterr(const char *fmt, ...) CARLO_PRINTF(1, 2);
const char *carlo_errmsg(void);

/* malloc/calloc that name the size and purpose when they fail (message set, NULL returned). */
void *carlo_malloc(size_t bytes, const char *what);
void *carlo_calloc(size_t count, size_t size, const char *what);

/* a * b, or SIZE_MAX when that overflows size_t (so the allocation fails cleanly). */
size_t carlo_mulsize(size_t a, size_t b);

#ifdef __cplusplus
}
#endif

#endif
