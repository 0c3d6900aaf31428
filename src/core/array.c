/* array.c — see array.h. Modelled on liolib's file handles: a userdata with a
 * metatable holding methods and __index/__newindex/__len/__gc. */
#include "core/array.h"

#include <lauxlib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static const struct {
    const char *name;
    size_t size;
    int integer;
    double min, max;
} dtypes[CARLO_NTYPES] = {
    [CARLO_U8] = {"u8", 1, 1, 0, 255},
    [CARLO_I8] = {"i8", 1, 1, -128, 127},
    [CARLO_U16] = {"u16", 2, 1, 0, 65535},
    [CARLO_I16] = {"i16", 2, 1, -32768, 32767},
    [CARLO_U32] = {"u32", 4, 1, 0, 4294967295.0},
    [CARLO_I32] = {"i32", 4, 1, -2147483648.0, 2147483647.0},
    [CARLO_U64] = {"u64", 8, 1, 0, 18446744073709551615.0},
    [CARLO_I64] = {"i64", 8, 1, -9223372036854775808.0, 9223372036854775807.0},
    [CARLO_F32] = {"f32", 4, 0, -INFINITY, INFINITY},
    [CARLO_F64] = {"f64", 8, 0, -INFINITY, INFINITY},
};

size_t carlo_dtype_size(carlo_dtype t) { return dtypes[t].size; }
const char *carlo_dtype_name(carlo_dtype t) { return dtypes[t].name; }

int carlo_dtype_parse(const char *name, carlo_dtype *t)
{
    for (int i = 0; i < CARLO_NTYPES; i++)
        if (strcmp(dtypes[i].name, name) == 0) {
            *t = (carlo_dtype)i;
            return 0;
        }
    return -1;
}

carlo_array *carlo_array_test(lua_State *L, int idx)
{
    return (carlo_array *)luaL_testudata(L, idx, CARLO_ARRAY_MT);
}

carlo_array *carlo_array_check(lua_State *L, int idx)
{
    return (carlo_array *)luaL_checkudata(L, idx, CARLO_ARRAY_MT);
}

carlo_array *carlo_array_push(lua_State *L, carlo_dtype type, int64_t rows, int64_t cols)
{
    if (rows < 0 || cols < 0)
        luaL_error(L, "carlo.array: negative shape");
    size_t n = carlo_mulsize((size_t)rows, (size_t)(cols ? cols : 1));
    carlo_array *a = (carlo_array *)lua_newuserdatauv(L, sizeof *a, 0);
    memset(a, 0, sizeof *a);
    luaL_setmetatable(L, CARLO_ARRAY_MT);
    a->data = carlo_calloc(n, dtypes[type].size, "a carlo.array");
    if (!a->data) {
        luaL_error(L, "carlo.array: %s", carlo_errmsg());
    }
    a->type = type;
    a->ndim = cols ? 2 : 1;
    a->shape[0] = rows;
    a->shape[1] = cols ? cols : 1;
    a->n = n;
    return a;
}

double carlo_array_get(const carlo_array *a, size_t i)
{
    switch (a->type) {
    case CARLO_U8: return ((const uint8_t *)a->data)[i];
    case CARLO_I8: return ((const int8_t *)a->data)[i];
    case CARLO_U16: return ((const uint16_t *)a->data)[i];
    case CARLO_I16: return ((const int16_t *)a->data)[i];
    case CARLO_U32: return ((const uint32_t *)a->data)[i];
    case CARLO_I32: return ((const int32_t *)a->data)[i];
    case CARLO_U64: return (double)((const uint64_t *)a->data)[i];
    case CARLO_I64: return (double)((const int64_t *)a->data)[i];
    case CARLO_F32: return ((const float *)a->data)[i];
    case CARLO_F64: return ((const double *)a->data)[i];
    default: return 0;
    }
}

/* Push element i with the Lua type that represents it exactly. */
static void push_elem(lua_State *L, const carlo_array *a, size_t i)
{
    switch (a->type) {
    case CARLO_U64: lua_pushinteger(L, (lua_Integer)((const uint64_t *)a->data)[i]); break;
    case CARLO_I64: lua_pushinteger(L, (lua_Integer)((const int64_t *)a->data)[i]); break;
    case CARLO_F32:
    case CARLO_F64: lua_pushnumber(L, carlo_array_get(a, i)); break;
    default: lua_pushinteger(L, (lua_Integer)carlo_array_get(a, i)); break;
    }
}

static void set_elem(lua_State *L, carlo_array *a, size_t i, int vidx)
{
    if (dtypes[a->type].integer) {
        int isint;
        lua_Integer v = lua_tointegerx(L, vidx, &isint);
        if (!isint)
            luaL_error(L, "carlo.array: a %s element must be an integer (got %s)",
                       dtypes[a->type].name, luaL_tolstring(L, vidx, NULL));
        int fits = a->type == CARLO_U64 ? v >= 0
                   : a->type == CARLO_I64 ? 1
                   : (double)v >= dtypes[a->type].min && (double)v <= dtypes[a->type].max;
        if (!fits)
            luaL_error(L, "carlo.array: %I does not fit a %s element", v, dtypes[a->type].name);
        switch (a->type) {
        case CARLO_U8: ((uint8_t *)a->data)[i] = (uint8_t)v; break;
        case CARLO_I8: ((int8_t *)a->data)[i] = (int8_t)v; break;
        case CARLO_U16: ((uint16_t *)a->data)[i] = (uint16_t)v; break;
        case CARLO_I16: ((int16_t *)a->data)[i] = (int16_t)v; break;
        case CARLO_U32: ((uint32_t *)a->data)[i] = (uint32_t)v; break;
        case CARLO_I32: ((int32_t *)a->data)[i] = (int32_t)v; break;
        case CARLO_U64: ((uint64_t *)a->data)[i] = (uint64_t)v; break;
        case CARLO_I64: ((int64_t *)a->data)[i] = (int64_t)v; break;
        default: break;
        }
    } else {
        int isnum;
        lua_Number v = lua_tonumberx(L, vidx, &isnum);
        if (!isnum)
            luaL_error(L, "carlo.array: a %s element must be a number (got %s)",
                       dtypes[a->type].name, luaL_tolstring(L, vidx, NULL));
        if (a->type == CARLO_F32)
            ((float *)a->data)[i] = (float)v;
        else
            ((double *)a->data)[i] = v;
    }
}

static size_t check_index(lua_State *L, carlo_array *a, int idx)
{
    int isint;
    lua_Integer i = lua_tointegerx(L, idx, &isint);
    if (!isint || i < 1 || (size_t)i > a->n)
        luaL_error(L, "carlo.array: index %s out of range 1..%I", luaL_tolstring(L, idx, NULL),
                   (lua_Integer)a->n);
    return (size_t)(i - 1);
}

static int a_index(lua_State *L)
{
    carlo_array *a = carlo_array_check(L, 1);
    if (lua_type(L, 2) == LUA_TSTRING) {
        const char *k = lua_tostring(L, 2);
        if (strcmp(k, "shape") == 0) {
            lua_createtable(L, a->ndim, 0);
            for (int d = 0; d < a->ndim; d++) {
                lua_pushinteger(L, a->shape[d]);
                lua_rawseti(L, -2, d + 1);
            }
            return 1;
        }
        if (strcmp(k, "type") == 0) {
            lua_pushstring(L, dtypes[a->type].name);
            return 1;
        }
        luaL_getmetatable(L, CARLO_ARRAY_MT);
        lua_getfield(L, -1, "methods");
        lua_getfield(L, -1, k);
        return 1;
    }
    if (lua_type(L, 2) != LUA_TNUMBER)
        return luaL_error(L, "carlo.array: index must be an integer (got a %s)",
                          luaL_typename(L, 2));
    push_elem(L, a, check_index(L, a, 2));
    return 1;
}

static int a_newindex(lua_State *L)
{
    carlo_array *a = carlo_array_check(L, 1);
    if (lua_type(L, 2) != LUA_TNUMBER)
        return luaL_error(L, "carlo.array: fields are read-only; elements take integer indices");
    set_elem(L, a, check_index(L, a, 2), 3);
    return 0;
}

static int a_len(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)carlo_array_check(L, 1)->n);
    return 1;
}

static int a_gc(lua_State *L)
{
    carlo_array *a = carlo_array_check(L, 1);
    free(a->data);
    a->data = NULL;
    a->n = 0;
    return 0;
}

static int a_tostring(lua_State *L)
{
    carlo_array *a = carlo_array_check(L, 1);
    if (a->ndim == 2)
        lua_pushfstring(L, "carlo.array(%s, %I x %I)", dtypes[a->type].name, (lua_Integer)a->shape[0],
                        (lua_Integer)a->shape[1]);
    else
        lua_pushfstring(L, "carlo.array(%s, %I)", dtypes[a->type].name, (lua_Integer)a->shape[0]);
    return 1;
}

/* a:totable() -> flat table for 1-D arrays, table of rows for 2-D ones. */
static int a_totable(lua_State *L)
{
    carlo_array *a = carlo_array_check(L, 1);
    if (a->ndim == 1) {
        lua_createtable(L, (int)(a->n < 1u << 30 ? a->n : 0), 0);
        for (size_t i = 0; i < a->n; i++) {
            push_elem(L, a, i);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        return 1;
    }
    lua_createtable(L, (int)a->shape[0], 0);
    for (int64_t r = 0; r < a->shape[0]; r++) {
        lua_createtable(L, (int)a->shape[1], 0);
        for (int64_t c = 0; c < a->shape[1]; c++) {
            push_elem(L, a, (size_t)(r * a->shape[1] + c));
            lua_rawseti(L, -2, c + 1);
        }
        lua_rawseti(L, -2, r + 1);
    }
    return 1;
}

/* a:sum() and a:count(v): cheap reductions so scripts need not loop in Lua. */
static int a_sum(lua_State *L)
{
    carlo_array *a = carlo_array_check(L, 1);
    double s = 0;
    for (size_t i = 0; i < a->n; i++)
        s += carlo_array_get(a, i);
    lua_pushnumber(L, s);
    return 1;
}

static int a_count(lua_State *L)
{
    carlo_array *a = carlo_array_check(L, 1);
    double v = luaL_checknumber(L, 2);
    lua_Integer c = 0;
    for (size_t i = 0; i < a->n; i++)
        c += carlo_array_get(a, i) == v;
    lua_pushinteger(L, c);
    return 1;
}

/* a:copy() -> a new array with the same contents. */
static int a_copy(lua_State *L)
{
    carlo_array *a = carlo_array_check(L, 1);
    carlo_array *b = carlo_array_push(L, a->type, a->shape[0], a->ndim == 2 ? a->shape[1] : 0);
    memcpy(b->data, a->data, a->n * dtypes[a->type].size);
    return 1;
}

/* a == b compares type, shape and every element (bit for bit). */
static int a_eq(lua_State *L)
{
    carlo_array *a = carlo_array_test(L, 1), *b = carlo_array_test(L, 2);
    lua_pushboolean(L, a && b && a->type == b->type && a->ndim == b->ndim &&
                           a->shape[0] == b->shape[0] && a->shape[1] == b->shape[1] &&
                           memcmp(a->data, b->data, a->n * dtypes[a->type].size) == 0);
    return 1;
}

/* carlo.array(type, n | {rows, cols} | table [, fill]) */
static int a_new(lua_State *L)
{
    carlo_dtype t;
    const char *tn = luaL_checkstring(L, 1);
    if (carlo_dtype_parse(tn, &t))
        return luaL_error(L, "carlo.array: unknown element type '%s' (allowed: u8, i8, u16, i16, "
                             "u32, i32, u64, i64, f32, f64)", tn);
    int64_t rows = 0, cols = 0;
    int from_values = 0;
    if (lua_type(L, 2) == LUA_TNUMBER) {
        rows = luaL_checkinteger(L, 2);
    } else if (lua_type(L, 2) == LUA_TTABLE) {
        if (lua_getfield(L, 2, "shape") == LUA_TTABLE) { /* { shape = {rows, cols} } */
            lua_rawgeti(L, -1, 1);
            lua_rawgeti(L, -2, 2);
            rows = luaL_checkinteger(L, -2);
            cols = lua_isnil(L, -1) ? 0 : luaL_checkinteger(L, -1);
            lua_pop(L, 2);
        } else { /* a list of values */
            rows = (int64_t)lua_rawlen(L, 2);
            from_values = 1;
        }
        lua_pop(L, 1);
    } else {
        return luaL_error(L, "carlo.array: second argument must be a length, { shape = {rows, cols} } "
                             "or a table of values");
    }
    if (rows < 0 || cols < 0 || rows > (int64_t)1 << 40 || cols > (int64_t)1 << 40)
        return luaL_error(L, "carlo.array: shape out of range");
    int fill = !lua_isnoneornil(L, 3); /* before the push: the new array lands at index 3 */
    carlo_array *a = carlo_array_push(L, t, rows, cols);
    int out = lua_gettop(L);
    if (from_values) {
        for (size_t i = 0; i < a->n; i++) {
            lua_rawgeti(L, 2, (lua_Integer)i + 1);
            set_elem(L, a, i, -1);
            lua_pop(L, 1);
        }
    } else if (fill) {
        for (size_t i = 0; i < a->n; i++)
            set_elem(L, a, i, 3);
    }
    lua_settop(L, out);
    return 1;
}

void carlo_array_open(lua_State *L)
{
    static const luaL_Reg meta[] = {
        {"__index", a_index}, {"__newindex", a_newindex}, {"__len", a_len}, {"__gc", a_gc},
        {"__tostring", a_tostring}, {"__eq", a_eq}, {NULL, NULL}};
    static const luaL_Reg methods[] = {
        {"totable", a_totable}, {"sum", a_sum}, {"count", a_count}, {"copy", a_copy}, {NULL, NULL}};
    if (luaL_newmetatable(L, CARLO_ARRAY_MT)) {
        luaL_setfuncs(L, meta, 0);
        luaL_newlib(L, methods);
        lua_setfield(L, -2, "methods");
    }
    lua_pop(L, 1);
    lua_pushcfunction(L, a_new);
    lua_setfield(L, -2, "array");
}
