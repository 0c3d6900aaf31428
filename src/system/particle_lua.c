/* particle_lua.c — helpers of the particle models' Lua bindings (particle_lua.h). */
#include "system/particle_lua.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "core/args.h"
#include "core/steinhardt.h"
#include "system/system_lua.h"

int carlo_lua_fail(lua_State *L, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    luaL_where(L, 1);
    lua_pushstring(L, msg);
    lua_concat(L, 2);
    return lua_error(L);
}

void carlo_lua_optional_table(lua_State *L, int idx)
{
    lua_settop(L, idx);
    if (lua_isnil(L, idx)) {
        lua_newtable(L);
        lua_replace(L, idx);
    }
    luaL_checktype(L, idx, LUA_TTABLE);
}

void carlo_lua_push_box(lua_State *L, const carlo_box *b)
{
    double v[6];
    carlo_box_gsd(b, v);
    lua_createtable(L, 6, 0);
    for (int k = 0; k < 6; k++) {
        lua_pushnumber(L, v[k]);
        lua_rawseti(L, -2, k + 1);
    }
}

int carlo_lua_steinhardt(lua_State *L, const char *where, const char *what, int dim, int64_t N,
                         const carlo_box *b, int (*q)(void *s, double rc, double *q4, double *q6), void *s)
{
    static const char *const keys[] = {"rc", NULL};
    carlo_lua_optional_table(L, 2);
    carlo_args_allowed(L, 2, where, keys);
    if (dim != 3)
        return luaL_error(L, "%s: Q4 and Q6 are %s (3D)", where, what);
    double h[3];
    carlo_box_heights(b, h); /* the widths between faces: L in an orthorhombic box */
    const double half = 0.5 * fmin(h[0], fmin(h[1], h[2]));
    const double rc =
        carlo_arg_num(L, 2, where, "rc", 0, carlo_steinhardt_rc((double)N / carlo_box_volume(b)), 0, 0, half, 1);
    double q4, q6;
    if (q(s, rc, &q4, &q6))
        return carlo_raise(L, where);
    lua_createtable(L, 0, 3);
    carlo_lua_setnum(L, "Q4", q4);
    carlo_lua_setnum(L, "Q6", q6);
    carlo_lua_setnum(L, "rc", rc);
    return 1;
}
