/* args.c — see args.h. Messages read "carlo.potts: q must be an integer from 2 to 255 (got 300)". */
#include "core/args.h"

#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/progress.h"
#include "core/rng.h"

/* Pushes what the value at idx is, for "(got ...)": numbers, booleans and nil as Lua prints
 * them; strings quoted (their first 40 bytes, control bytes as '?'), "the string "1"" where a
 * string was not what was asked for; anything else by its type ("a table", "a carlo.array"). */
static const char *describe(lua_State *L, int idx, int say_string)
{
    idx = lua_absindex(L, idx);
    switch (lua_type(L, idx)) {
    case LUA_TSTRING: {
        size_t len;
        const char *v = lua_tolstring(L, idx, &len);
        char buf[48];
        size_t k = 0;
        for (; k < len && k < 40; k++)
            buf[k] = (unsigned char)v[k] < 32 || v[k] == 127 ? '?' : v[k];
        buf[k] = 0;
        return lua_pushfstring(L, "%s\"%s%s\"", say_string ? "the string " : "", buf,
                               len > 40 ? "..." : "");
    }
    case LUA_TNUMBER:
    case LUA_TBOOLEAN:
    case LUA_TNIL:
        return luaL_tolstring(L, idx, NULL);
    default: {
        int field = luaL_getmetafield(L, idx, "__name"); /* pushes nothing when absent */
        const char *name = field == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, idx);
        const char *r = lua_pushfstring(L, "a %s", name);
        if (field != LUA_TNIL)
            lua_remove(L, -2);
        return r;
    }
    }
}

const char *carlo_arg_got(lua_State *L, int idx)
{
    return describe(L, idx, 1);
}

void carlo_args_allowed(lua_State *L, int idx, const char *where, const char *const *allowed)
{
    idx = lua_absindex(L, idx);
    luaL_checktype(L, idx, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING)
            luaL_error(L, "%s: keys must be names (got a %s key)", where, luaL_typename(L, -1));
        const char *k = lua_tostring(L, -1);
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            if (strcmp(*a, k) == 0)
                ok = 1;
        if (!ok) {
            luaL_Buffer b;
            luaL_buffinit(L, &b);
            for (const char *const *a = allowed; *a; a++) {
                if (a != allowed)
                    luaL_addstring(&b, ", ");
                luaL_addstring(&b, *a);
            }
            luaL_pushresult(&b);
            luaL_error(L, "%s: unknown key '%s' (allowed: %s)", where, k, lua_tostring(L, -1));
        }
    }
}

int carlo_arg_has(lua_State *L, int idx, const char *key)
{
    int t = lua_getfield(L, idx, key);
    lua_pop(L, 1);
    return t != LUA_TNIL;
}

int64_t carlo_arg_int(lua_State *L, int idx, const char *where, const char *key, int required,
                      int64_t def, int64_t min, int64_t max)
{
    idx = lua_absindex(L, idx);
    int t = lua_getfield(L, idx, key);
    if (t == LUA_TNIL) {
        lua_pop(L, 1);
        if (required)
            luaL_error(L, "%s: %s is required (an integer from %I to %I)", where, key,
                       (lua_Integer)min, (lua_Integer)max);
        return def;
    }
    /* a string is refused like any other wrong type, never converted ("1" is not 1) */
    int isint = 0;
    lua_Integer v = t == LUA_TNUMBER ? lua_tointegerx(L, -1, &isint) : 0;
    if (!isint || v < min || v > max)
        luaL_error(L, "%s: %s must be an integer from %I to %I (got %s)", where, key,
                   (lua_Integer)min, (lua_Integer)max, describe(L, -1, 1));
    lua_pop(L, 1);
    return (int64_t)v;
}

/* The shortest decimal that reads back as x: a bound prints as 0.25, not 0.25000000000000000,
 * and 1/177 to the digit that decides (a rounded bound would let "x = bound" look allowed). */
static void shortest(char *buf, size_t n, double x)
{
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(buf, n, "%.*g", digits, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}

static void num_range(char *range, size_t n, double lo, int lo_closed, double hi, int hi_closed)
{
    char a[32], b[32];
    shortest(a, sizeof a, lo);
    shortest(b, sizeof b, hi);
    if (isinf(hi))
        snprintf(range, n, "a number %s %s", lo_closed ? ">=" : ">", a);
    else if (isinf(lo))
        snprintf(range, n, "a number %s %s", hi_closed ? "<=" : "<", b);
    else
        snprintf(range, n, "a number in %c%s, %s%c", lo_closed ? '[' : '(', a, b,
                 hi_closed ? ']' : ')');
}

/* The number at the top of the stack, popped, or an error naming what (a key, "list[k]"). */
static double check_num(lua_State *L, const char *where, const char *what, double lo, int lo_closed,
                        double hi, int hi_closed)
{
    double v = lua_type(L, -1) == LUA_TNUMBER ? lua_tonumber(L, -1) : NAN; /* "1" is not 1 */
    int ok = isfinite(v) && (lo_closed ? v >= lo : v > lo) && (hi_closed ? v <= hi : v < hi);
    if (!ok) {
        char range[96];
        num_range(range, sizeof range, lo, lo_closed, hi, hi_closed);
        luaL_error(L, "%s: %s must be %s (got %s)", where, what, range, describe(L, -1, 1));
    }
    lua_pop(L, 1);
    return v;
}

double carlo_arg_num(lua_State *L, int idx, const char *where, const char *key, int required,
                     double def, double lo, int lo_closed, double hi, int hi_closed)
{
    idx = lua_absindex(L, idx);
    if (lua_getfield(L, idx, key) == LUA_TNIL) {
        lua_pop(L, 1);
        if (required) {
            char range[96];
            num_range(range, sizeof range, lo, lo_closed, hi, hi_closed);
            luaL_error(L, "%s: %s is required (%s)", where, key, range);
        }
        return def;
    }
    return check_num(L, where, key, lo, lo_closed, hi, hi_closed);
}

double carlo_arg_item_num(lua_State *L, int idx, const char *where, const char *key, lua_Integer k,
                          double lo, int lo_closed, double hi, int hi_closed)
{
    lua_geti(L, idx, k);
    char what[96];
    snprintf(what, sizeof what, "%s[%lld]", key, (long long)k);
    return check_num(L, where, what, lo, lo_closed, hi, hi_closed);
}

int carlo_arg_enum(lua_State *L, int idx, const char *where, const char *key, const char *def,
                   const char *const *names)
{
    idx = lua_absindex(L, idx);
    int t = lua_getfield(L, idx, key);
    const char *v = def;
    if (t != LUA_TNIL) {
        if (t != LUA_TSTRING)
            v = NULL;
        else
            v = lua_tostring(L, -1);
    } else if (!def) {
        v = NULL;
    }
    int found = -1;
    for (int i = 0; v && names[i]; i++)
        if (strcmp(names[i], v) == 0)
            found = i;
    if (found < 0) {
        /* the value itself (at -1), not whatever lies below it */
        const char *got = t == LUA_TNIL ? NULL : describe(L, -1, 0);
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        for (int i = 0; names[i]; i++) {
            if (i)
                luaL_addstring(&b, ", ");
            luaL_addchar(&b, '"');
            luaL_addstring(&b, names[i]);
            luaL_addchar(&b, '"');
        }
        luaL_pushresult(&b);
        if (!got)
            luaL_error(L, "%s: %s is required (one of %s)", where, key, lua_tostring(L, -1));
        luaL_error(L, "%s: %s must be one of %s (got %s)", where, key, lua_tostring(L, -1), got);
    }
    lua_pop(L, 1);
    return found;
}

int carlo_arg_bool(lua_State *L, int idx, const char *where, const char *key, int def)
{
    int t = lua_getfield(L, idx, key);
    int v = def;
    if (t == LUA_TBOOLEAN)
        v = lua_toboolean(L, -1);
    else if (t != LUA_TNIL)
        luaL_error(L, "%s: %s must be true or false (got %s)", where, key, describe(L, -1, 1));
    lua_pop(L, 1);
    return v;
}

int carlo_arg_decompose(lua_State *L, int idx, const char *where)
{
    int t = lua_getfield(L, idx, "decompose");
    int v = 0;
    if (t == LUA_TBOOLEAN)
        v = lua_toboolean(L, -1);
    else if (t == LUA_TSTRING && strcmp(lua_tostring(L, -1), "frozen") == 0)
        v = 2;
    else if (t != LUA_TNIL)
        luaL_error(L, "%s: decompose must be true, false or \"frozen\" (got %s)", where, describe(L, -1, 1));
    lua_pop(L, 1);
    return v;
}

const char *carlo_arg_str(lua_State *L, int idx, const char *where, const char *key, int required)
{
    int t = lua_getfield(L, idx, key);
    if (t == LUA_TNIL) {
        lua_pop(L, 1);
        if (required)
            luaL_error(L, "%s: %s is required (a string)", where, key);
        return NULL;
    }
    if (t != LUA_TSTRING)
        luaL_error(L, "%s: %s must be a string (got %s)", where, key, describe(L, -1, 0));
    const char *s = lua_tostring(L, -1);
    lua_pop(L, 1); /* still referenced by the table */
    return s;
}

static uint64_t entropy_seed(void)
{
    uint64_t s = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (f) {
        if (fread(&s, sizeof s, 1, f) != 1)
            s = 0;
        fclose(f);
    }
    if (s == 0) { /* no /dev/urandom: mix the clock and the pid through Philox */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        carlo_u32x4 r = carlo_rng((uint64_t)ts.tv_sec * 1000000007u + (uint64_t)ts.tv_nsec,
                                  CARLO_PURPOSE_CORE_SEED, (uint64_t)getpid(), 0, 0);
        s = (uint64_t)r.v[0] << 32 | r.v[1];
    }
    return s & 0x7fffffffffffffffull;
}

uint64_t carlo_arg_seed(lua_State *L, int idx, const char *where)
{
    if (carlo_arg_has(L, idx, "seed"))
        return (uint64_t)carlo_arg_int(L, idx, where, "seed", 1, 0, 0, INT64_MAX);
    uint64_t s = entropy_seed();
    if (!carlo_quiet)
        fprintf(stderr, "carlo: %s drew seed = %llu (pass seed = to reproduce this run)\n", where,
                (unsigned long long)s);
    return s;
}

int carlo_raise(lua_State *L, const char *where)
{
    return luaL_error(L, "%s: %s", where, carlo_errmsg());
}

carlo_device_kind carlo_lua_device(lua_State *L, const char *where, const char *request)
{
    carlo_device_kind kind = CARLO_CPU;
    if (carlo_device_resolve(request, &kind))
        carlo_raise(L, where);
    return kind;
}
