/* array.h — carlo.array: a typed, flat, host array handed to Lua (snapshots, frames).
 * 1-based a[i], #a, a.shape, a.type, a:totable(); writes are bounds- and range-checked. */
#ifndef CARLO_ARRAY_H
#define CARLO_ARRAY_H

#include <lua.h>
#include <stddef.h>
#include <stdint.h>

typedef enum carlo_dtype {
    CARLO_U8, CARLO_I8, CARLO_U16, CARLO_I16, CARLO_U32, CARLO_I32, CARLO_U64, CARLO_I64,
    CARLO_F32, CARLO_F64, CARLO_NTYPES
} carlo_dtype;

typedef struct carlo_array {
    carlo_dtype type;
    int ndim;          /* 1 or 2 */
    int64_t shape[2];  /* shape[1] = 1 when ndim = 1 */
    size_t n;          /* elements */
    void *data;        /* owned; freed by __gc */
} carlo_array;

#define CARLO_ARRAY_MT "carlo.array"

size_t carlo_dtype_size(carlo_dtype t);
const char *carlo_dtype_name(carlo_dtype t);          /* "u8", "f32", ... */
int carlo_dtype_parse(const char *name, carlo_dtype *t);

/* Push a new zero-filled array (rows x cols; cols = 0 makes it 1-D). Raises a Lua
 * error naming the size when memory runs out. */
carlo_array *carlo_array_push(lua_State *L, carlo_dtype type, int64_t rows, int64_t cols);
carlo_array *carlo_array_check(lua_State *L, int idx);
carlo_array *carlo_array_test(lua_State *L, int idx); /* NULL when not an array */

/* Element i (0-based) as a double / stored from a double (no checks). */
double carlo_array_get(const carlo_array *a, size_t i);

/* Registers the metatable and sets carlo.array (the constructor) in the table at -1. */
void carlo_array_open(lua_State *L);

#endif
