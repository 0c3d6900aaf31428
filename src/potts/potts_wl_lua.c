/* potts_wl_lua.c — carlo.wang_landau{...}: the Potts density of states by Wang-Landau, returned
 * as a table { E, lng, ... } whose methods give ln Z, <E>, C and F at any beta. */
#include <lauxlib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"
#include "core/array.h"
#include "core/error.h"
#include "potts/potts_kernel.h"
#include "potts/potts_wl.h"

#define WL_MT "carlo.wang_landau"

static const char *const DEVICES[] = {"auto", "cpu", "gpu", NULL};

static int raise_msg(lua_State *L, const char *where)
{
    const char *msg = carlo_errmsg();
    if (strncmp(msg, where, strlen(where)) == 0)
        return luaL_error(L, "%s", msg);
    return luaL_error(L, "%s: %s", where, msg);
}

/* The result's arrays E and lng (self at 1) and beta (at 2). */
typedef struct levels {
    const double *E, *lng;
    size_t n;
    double N, beta;
} levels;

static levels get_levels(lua_State *L, const char *what, int need_beta_nonzero)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    levels v;
    lua_getfield(L, 1, "E");
    carlo_array *E = carlo_array_check(L, -1);
    lua_getfield(L, 1, "lng");
    carlo_array *g = carlo_array_check(L, -1);
    lua_getfield(L, 1, "N");
    v.N = lua_tonumber(L, -1);
    lua_pop(L, 3);
    if (E->type != CARLO_F64 || g->type != CARLO_F64 || E->n != g->n || E->n == 0 || !(v.N > 0))
        luaL_error(L, "%s: not a carlo.wang_landau result", what);
    v.E = (const double *)E->data;
    v.lng = (const double *)g->data;
    v.n = E->n;
    if (lua_type(L, 2) != LUA_TNUMBER || !isfinite(lua_tonumber(L, 2)) ||
        (need_beta_nonzero && lua_tonumber(L, 2) == 0))
        luaL_error(L, "%s: beta must be a finite number%s (got %s)", what,
                   need_beta_nonzero ? " other than 0" : "", carlo_arg_got(L, 2));
    v.beta = lua_tonumber(L, 2);
    return v;
}

/* ln Z = ln sum_E g(E) exp(-beta E), and the mean and variance of E (total energies). */
static double moments(const levels *v, double *mean, double *var)
{
    double top = -INFINITY;
    for (size_t i = 0; i < v->n; i++) {
        double x = v->lng[i] - v->beta * v->E[i];
        if (x > top)
            top = x;
    }
    double z = 0, m = 0;
    for (size_t i = 0; i < v->n; i++) {
        double w = exp(v->lng[i] - v->beta * v->E[i] - top);
        z += w;
        m += w * v->E[i];
    }
    m /= z;
    double s2 = 0;
    for (size_t i = 0; i < v->n; i++) {
        double w = exp(v->lng[i] - v->beta * v->E[i] - top), d = v->E[i] - m;
        s2 += w * d * d;
    }
    *mean = m;
    *var = s2 / z;
    return top + log(z);
}

static int l_lnZ(lua_State *L)
{
    levels v = get_levels(L, "wl:lnZ", 0);
    double m, s2;
    lua_pushnumber(L, moments(&v, &m, &s2));
    return 1;
}

static int l_energy(lua_State *L)
{
    levels v = get_levels(L, "wl:energy", 0);
    double m, s2;
    moments(&v, &m, &s2);
    lua_pushnumber(L, m / v.N);
    return 1;
}

static int l_heat_capacity(lua_State *L)
{
    levels v = get_levels(L, "wl:heat_capacity", 0);
    double m, s2;
    moments(&v, &m, &s2);
    lua_pushnumber(L, v.beta * v.beta * s2 / v.N);
    return 1;
}

static int l_free_energy(lua_State *L)
{
    levels v = get_levels(L, "wl:free_energy", 1);
    double m, s2;
    lua_pushnumber(L, -moments(&v, &m, &s2) / (v.beta * v.N));
    return 1;
}

/* The visited levels, E ascending, into the result table at -1. */
static void push_levels(lua_State *L, potts_wl *r, const double *joined)
{
    int64_t nlev = 2 * (int64_t)r->par.N + 1, n = 0;
    for (int64_t b = 0; b < nlev; b++)
        n += joined[b] > -INFINITY;
    carlo_array *E = carlo_array_push(L, CARLO_F64, n, 0);
    lua_setfield(L, -2, "E");
    carlo_array *g = carlo_array_push(L, CARLO_F64, n, 0);
    lua_setfield(L, -2, "lng");
    int64_t k = 0;
    for (int64_t b = nlev - 1; b >= 0; b--)
        if (joined[b] > -INFINITY) {
            ((double *)E->data)[k] = (double)-b;
            ((double *)g->data)[k] = joined[b];
            k++;
        }
}

/* result.window[k] = { E_min, E_max, steps, halvings, E, lng } (lng as the window walked it:
 * the raw, unshifted values, for checks of the chain itself). */
static void push_windows(lua_State *L, potts_wl *r)
{
    lua_createtable(L, r->W, 0);
    uint64_t moves = 0;
    for (int k = 0; k < r->W; k++) {
        const potts_wl_window *w = &r->win[k];
        const double *g = potts_wl_lng(r, k);
        lua_createtable(L, 0, 6);
        lua_pushinteger(L, -w->hi);
        lua_setfield(L, -2, "E_min");
        lua_pushinteger(L, -w->lo);
        lua_setfield(L, -2, "E_max");
        lua_pushinteger(L, (lua_Integer)w->step);
        lua_setfield(L, -2, "steps");
        lua_pushinteger(L, w->halvings);
        lua_setfield(L, -2, "halvings");
        int64_t n = 0;
        for (int32_t b = w->lo; b <= w->hi; b++)
            n += g[b - w->lo] > 0;
        carlo_array *E = carlo_array_push(L, CARLO_F64, n, 0);
        lua_setfield(L, -2, "E");
        carlo_array *G = carlo_array_push(L, CARLO_F64, n, 0);
        lua_setfield(L, -2, "lng");
        int64_t i = 0;
        for (int32_t b = w->hi; b >= w->lo; b--)
            if (g[b - w->lo] > 0) {
                ((double *)E->data)[i] = (double)-b;
                ((double *)G->data)[i++] = g[b - w->lo];
            }
        lua_rawseti(L, -2, k + 1);
        moves += w->step * r->par.walkers;
    }
    lua_setfield(L, -2, "window");
    lua_pushinteger(L, (lua_Integer)moves);
    lua_setfield(L, -2, "moves");
}

/* The run, owned by a to-be-closed userdata so that an error (Ctrl-C) frees it. */
static int wl_gc(lua_State *L)
{
    potts_wl **box = (potts_wl **)luaL_checkudata(L, 1, "carlo.wang_landau.run");
    potts_wl_destroy(*box);
    *box = NULL;
    return 0;
}

static int l_wang_landau(lua_State *L)
{
    const char *where = "carlo.wang_landau";
    static const char *const keys[] = {"L", "q", "windows", "walkers", "overlap", "flatness",
                                       "final", "seed", "device", "quiet", NULL};
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    carlo_args_allowed(L, 1, where, keys);
    potts_wl_params p;
    memset(&p, 0, sizeof p);
    p.quiet = carlo_arg_bool(L, 1, where, "quiet", 0);
    int64_t Lside = carlo_arg_int(L, 1, where, "L", 1, 0, 2, POTTS_WL_L_MAX);
    if (Lside % 2)
        return luaL_error(L, "%s: L must be an even integer from 2 to %d (got %I)", where,
                          POTTS_WL_L_MAX, (lua_Integer)Lside);
    p.L = (int)Lside;
    p.q = (int)carlo_arg_int(L, 1, where, "q", 1, 0, 2, POTTS_Q_MAX);
    p.windows = (int)carlo_arg_int(L, 1, where, "windows", 0, 1, 1, POTTS_WL_WINDOWS_MAX);
    p.walkers = (int)carlo_arg_int(L, 1, where, "walkers", 0, 1, 1, POTTS_WL_WALKERS_MAX);
    p.overlap = carlo_arg_num(L, 1, where, "overlap", 0, 0.5, 0, 0, 1, 0);
    p.flatness = carlo_arg_num(L, 1, where, "flatness", 0, 0.8, 0, 0, 1, 0);
    p.final = carlo_arg_num(L, 1, where, "final", 0, 1e-8, 0, 0, 1, 0);
    p.seed = carlo_arg_seed(L, 1, where);
    carlo_arg_enum(L, 1, where, "device", carlo_device_default(), DEVICES);
    p.device = carlo_lua_device(L, where, carlo_arg_str(L, 1, where, "device", 0));

    potts_wl **box = (potts_wl **)lua_newuserdatauv(L, sizeof *box, 0);
    *box = NULL;
    if (luaL_newmetatable(L, "carlo.wang_landau.run")) {
        lua_pushcfunction(L, wl_gc);
        lua_setfield(L, -2, "__gc");
        lua_pushcfunction(L, wl_gc);
        lua_setfield(L, -2, "__close");
    }
    lua_setmetatable(L, -2);
    lua_toclose(L, -1);
    potts_wl *r = *box = potts_wl_create(&p);
    if (!r || potts_wl_run(r, p.quiet))
        return raise_msg(L, where);
    double *joined = (double *)lua_newuserdatauv(
        L, sizeof(double) * (2 * (size_t)r->par.N + 1), 0); /* freed by the GC */
    if (potts_wl_join(r, joined))
        return raise_msg(L, where);

    lua_createtable(L, 0, 20);
    push_levels(L, r, joined);
    push_windows(L, r);
    lua_pushinteger(L, p.L);
    lua_setfield(L, -2, "L");
    lua_pushinteger(L, p.q);
    lua_setfield(L, -2, "q");
    lua_pushinteger(L, (lua_Integer)r->par.N);
    lua_setfield(L, -2, "N");
    lua_pushinteger(L, p.windows);
    lua_setfield(L, -2, "windows");
    lua_pushinteger(L, p.walkers);
    lua_setfield(L, -2, "walkers");
    lua_pushnumber(L, p.overlap);
    lua_setfield(L, -2, "overlap");
    lua_pushnumber(L, p.flatness);
    lua_setfield(L, -2, "flatness");
    lua_pushnumber(L, p.final);
    lua_setfield(L, -2, "final");
    lua_pushinteger(L, (lua_Integer)p.seed);
    lua_setfield(L, -2, "seed");
    lua_pushstring(L, carlo_device_name(p.device));
    lua_setfield(L, -2, "device");
    lua_pushnumber(L, r->seconds);
    lua_setfield(L, -2, "seconds");
    luaL_setmetatable(L, WL_MT);
    return 1;
}

void potts_wl_lua_open(lua_State *L)
{
    static const luaL_Reg methods[] = {
        {"lnZ", l_lnZ},
        {"energy", l_energy},
        {"heat_capacity", l_heat_capacity},
        {"free_energy", l_free_energy},
        {NULL, NULL},
    };
    luaL_newmetatable(L, WL_MT);
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    lua_pushcfunction(L, l_wang_landau);
    lua_setfield(L, -2, "wang_landau");
}
