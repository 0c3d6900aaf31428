/* core_lua.c — carlo.devices(), carlo.threads(), carlo.set_device(), carlo.quiet(),
 * carlo.stats(), carlo.clock(). */
#include "core/core_lua.h"

#include <lauxlib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/args.h"
#include "core/array.h"
#include "core/device.h"
#include "core/rng.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/stats.h"

/* carlo.devices() -> { cpu = { threads = }, gpus = { {name, memory, sms, cc}, ... },
 *                      cuda = "CUDA x.y" | "none", default = "auto" } */
static int l_devices(lua_State *L)
{
    lua_createtable(L, 0, 4);
    lua_createtable(L, 0, 1);
    lua_pushinteger(L, carlo_threads_fixed() ? carlo_cpu_threads() : carlo_threads_all());
    lua_setfield(L, -2, "threads");
    lua_pushstring(L, carlo_threads_fixed() ? "fixed" : "auto");
    lua_setfield(L, -2, "threads_mode");
    lua_setfield(L, -2, "cpu");
    int n = carlo_gpu_count();
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        carlo_gpu_info g;
        if (carlo_gpu_info_get(i, &g))
            return carlo_raise(L, "carlo.devices");
        lua_createtable(L, 0, 4);
        lua_pushstring(L, g.name);
        lua_setfield(L, -2, "name");
        lua_pushinteger(L, (lua_Integer)g.memory_bytes);
        lua_setfield(L, -2, "memory");
        lua_pushinteger(L, g.sm_count);
        lua_setfield(L, -2, "sms");
        lua_pushfstring(L, "%d.%d", g.cc_major, g.cc_minor);
        lua_setfield(L, -2, "cc");
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "gpus");
    lua_pushstring(L, carlo_gpu_runtime());
    lua_setfield(L, -2, "cuda");
    lua_pushstring(L, carlo_device_default());
    lua_setfield(L, -2, "default");
    return 1;
}

/* carlo.threads([n | "auto"]) -> the number of CPU threads the CPU backends use at most.
 * n fixes the count; "auto" (the default, unless OMP_NUM_THREADS is set) lets carlo give each
 * system's chunks of work one thread or all, whichever measures faster. */
static int l_threads(lua_State *L)
{
    if (lua_type(L, 1) == LUA_TSTRING && strcmp(lua_tostring(L, 1), "auto") == 0) {
        carlo_threads_fix(0);
    } else if (!lua_isnoneornil(L, 1)) {
        if (!lua_isinteger(L, 1))
            return luaL_error(L, "carlo.threads: give an integer from 1 to 4096 or \"auto\" (got %s)",
                              luaL_tolstring(L, 1, NULL));
        lua_Integer n = lua_tointeger(L, 1);
        if (n < 1 || n > 4096)
            return luaL_error(L, "carlo.threads: n must be from 1 to 4096 (got %I)", n);
        carlo_threads_fix((int)n);
    }
    lua_pushinteger(L, carlo_threads_fixed() ? carlo_cpu_threads() : carlo_threads_all());
    lua_pushstring(L, carlo_threads_fixed() ? "fixed" : "auto");
    return 2;
}

/* carlo.set_device("auto" | "cpu" | "gpu"): the default of device = in constructors. */
static int l_set_device(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    carlo_device_kind kind;
    if (carlo_device_resolve(name, &kind))
        return carlo_raise(L, "carlo.set_device");
    carlo_device_set_default(name);
    return 0;
}

/* carlo.quiet([flag]) -> whether progress lines and notices are suppressed. */
static int l_quiet(lua_State *L)
{
    if (!lua_isnoneornil(L, 1))
        carlo_quiet = lua_toboolean(L, 1);
    lua_pushboolean(L, carlo_quiet);
    return 1;
}

/* carlo.stats(series) -> { mean, err, tau, plateau, n } for a list or a carlo.array. */
static int l_stats(lua_State *L)
{
    carlo_array *a = carlo_array_test(L, 1);
    size_t n;
    if (a)
        n = a->n;
    else {
        luaL_checktype(L, 1, LUA_TTABLE);
        n = lua_rawlen(L, 1);
    }
    double *x = (double *)lua_newuserdatauv(L, (n ? n : 1) * sizeof(double), 0);
    for (size_t i = 0; i < n; i++) {
        if (a)
            x[i] = carlo_array_get(a, i);
        else {
            lua_rawgeti(L, 1, (lua_Integer)i + 1);
            int isnum;
            x[i] = lua_tonumberx(L, -1, &isnum);
            if (!isnum)
                return luaL_error(L, "carlo.stats: element %I is not a number", (lua_Integer)i + 1);
            lua_pop(L, 1);
        }
    }
    carlo_estimate e;
    carlo_blocking(x, n, &e);
    lua_createtable(L, 0, 6);
    lua_pushnumber(L, e.mean);
    lua_setfield(L, -2, "mean");
    lua_pushnumber(L, e.err);
    lua_setfield(L, -2, "err");
    lua_pushnumber(L, e.tau);
    lua_setfield(L, -2, "tau");
    lua_pushnumber(L, carlo_tau_int(x, n));
    lua_setfield(L, -2, "tau_window");
    lua_pushboolean(L, e.plateau);
    lua_setfield(L, -2, "plateau");
    lua_pushinteger(L, (lua_Integer)n);
    lua_setfield(L, -2, "n");
    return 1;
}

/* carlo.interactive() -> whether progress lines are shown (stderr a terminal, not quiet). */
static int l_interactive(lua_State *L)
{
    lua_pushboolean(L, !carlo_quiet && isatty(2));
    return 1;
}

/* carlo.histogram(series, { lo =, hi =, bins = }) -> { counts = u64 array, lo =, hi =,
 * bins =, width =, below =, above =, total = } */
static int l_histogram(lua_State *L)
{
    static const char *const keys[] = {"lo", "hi", "bins", NULL};
    const char *where = "carlo.histogram";
    carlo_array *a = carlo_array_test(L, 1);
    if (!a)
        luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checktype(L, 2, LUA_TTABLE);
    carlo_args_allowed(L, 2, where, keys);
    double lo = carlo_arg_num(L, 2, where, "lo", 1, 0, -INFINITY, 0, INFINITY, 0);
    double hi = carlo_arg_num(L, 2, where, "hi", 1, 0, lo, 0, INFINITY, 0);
    int64_t bins = carlo_arg_int(L, 2, where, "bins", 1, 0, 1, (int64_t)1 << 26);
    carlo_histogram h;
    if (carlo_histogram_init(&h, lo, hi, (size_t)bins))
        return carlo_raise(L, where);
    size_t n = a ? a->n : lua_rawlen(L, 1);
    for (size_t i = 0; i < n; i++) {
        double x;
        if (a) {
            x = carlo_array_get(a, i);
        } else {
            lua_rawgeti(L, 1, (lua_Integer)i + 1);
            int isnum;
            x = lua_tonumberx(L, -1, &isnum);
            lua_pop(L, 1);
            if (!isnum) {
                carlo_histogram_free(&h);
                return luaL_error(L, "%s: element %I is not a number", where, (lua_Integer)i + 1);
            }
        }
        carlo_histogram_add(&h, x);
    }
    lua_createtable(L, 0, 8);
    carlo_array *c = carlo_array_push(L, CARLO_U64, bins, 0);
    memcpy(c->data, h.count, (size_t)bins * sizeof *h.count);
    lua_setfield(L, -2, "counts");
    lua_pushnumber(L, lo);
    lua_setfield(L, -2, "lo");
    lua_pushnumber(L, hi);
    lua_setfield(L, -2, "hi");
    lua_pushinteger(L, bins);
    lua_setfield(L, -2, "bins");
    lua_pushnumber(L, (hi - lo) / (double)bins);
    lua_setfield(L, -2, "width");
    lua_pushinteger(L, (lua_Integer)h.below);
    lua_setfield(L, -2, "below");
    lua_pushinteger(L, (lua_Integer)h.above);
    lua_setfield(L, -2, "above");
    lua_pushinteger(L, (lua_Integer)h.total);
    lua_setfield(L, -2, "total");
    carlo_histogram_free(&h);
    return 1;
}

/* Philox for the protocols written in Lua (exchanges, resampling), so that they are as
 * reproducible as the kernels: a pure function of (seed, step, index, draw).
 *   carlo.uniform(seed, step, index [, draw]) -> a double in [0, 1)
 *   carlo.replica_seed(seed, r) -> the seed of replica r of an ensemble made with seed */
static uint64_t seed_arg(lua_State *L, int idx, const char *where)
{
    lua_Integer v = luaL_checkinteger(L, idx);
    if (v < 0)
        luaL_error(L, "%s: argument %d must be an integer >= 0 (got %I)", where, idx, v);
    return (uint64_t)v;
}

static int l_uniform(lua_State *L)
{
    const char *where = "carlo.uniform";
    uint64_t seed = seed_arg(L, 1, where), step = seed_arg(L, 2, where), index = seed_arg(L, 3, where);
    uint64_t draw = lua_isnoneornil(L, 4) ? 0 : seed_arg(L, 4, where);
    if (step >= (uint64_t)1 << 48 || index > UINT32_MAX || draw > UINT32_MAX)
        return luaL_error(L, "%s: step must be below 2^48, index and draw below 2^32", where);
    carlo_u32x4 r = carlo_rng(seed, CARLO_PURPOSE_PROTOCOL, step, (uint32_t)index, (uint32_t)draw);
    lua_pushnumber(L, carlo_u01(r.v[0], r.v[1]));
    return 1;
}

static int l_replica_seed(lua_State *L)
{
    const char *where = "carlo.replica_seed";
    uint64_t seed = seed_arg(L, 1, where), r = seed_arg(L, 2, where);
    if (r > UINT32_MAX)
        return luaL_error(L, "%s: the replica index must be below 2^32", where);
    carlo_u32x4 d = carlo_rng(seed, CARLO_PURPOSE_PROTOCOL, (uint64_t)1 << 47, (uint32_t)r, 0);
    lua_pushinteger(L, (lua_Integer)((((uint64_t)d.v[0] << 32) | d.v[1]) >> 1));
    return 1;
}

/* carlo.clock() -> monotonic seconds, for timing from scripts. */
static int l_clock(lua_State *L)
{
    lua_pushnumber(L, carlo_now());
    return 1;
}

void carlo_core_lua_open(lua_State *L)
{
    static const luaL_Reg f[] = {
        {"devices", l_devices}, {"threads", l_threads}, {"set_device", l_set_device},
        {"quiet", l_quiet}, {"stats", l_stats}, {"clock", l_clock},
        {"interactive", l_interactive}, {"histogram", l_histogram}, {"uniform", l_uniform},
        {"replica_seed", l_replica_seed}, {NULL, NULL}};
    luaL_setfuncs(L, f, 0);
}
