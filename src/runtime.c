/* runtime.c — the Lua state and the carlo module: luaopen_carlo registers the core, every
 * model and the compiled-in pure-Lua layer; carlo_open/carlo_dofile/... embed it (carlo.h). */
#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carlo.h"
#include "core/array.h"
#include "core/core_lua.h"
#include "core/device.h"
#include "fe/fe_lua.h"
#include "hard/hard_lua.h"
#include "kmc/kmc_lua.h"
#include "lj/lj_lua.h"
#include "mpi/mpi_lua.h"
#include "potts/potts_lua.h"
#include "potts/potts_wl.h"
#include "shape/shape_lua.h"
#include "system/system_lua.h"
#include "traj/traj_lua.h"
#include "runtime.h"

#define CARLO_VERSION "0.1.0"

const char *carlo_version(void) { return CARLO_VERSION; }

/* The models and services, each adding its functions to the module table at -1. */
static void (*const openers[])(lua_State *L) = {
    carlo_array_open,
    carlo_core_lua_open,
    carlo_system_lua_open,
    potts_lua_open,
    potts_wl_lua_open,
    traj_lua_open,
    hard_lua_open,
    lj_lua_open,
    kmc_lua_open,
    fe_lua_open,
    carlo_mpi_lua_open,
    shape_lua_open,
};

struct carlo_lua_source {
    const char *name;
    const char *src;
    size_t len;
};
extern const struct carlo_lua_source carlo_lua_sources[];

static int load_embedded(lua_State *L)
{
    const struct carlo_lua_source *m = lua_touserdata(L, lua_upvalueindex(1));
    char chunkname[96];
    snprintf(chunkname, sizeof chunkname, "@lua/carlo/%s.lua", m->name + 6);
    if (luaL_loadbufferx(L, m->src, m->len, chunkname, "t") != LUA_OK)
        return lua_error(L);
    lua_pushstring(L, m->name);
    lua_call(L, 1, 1);
    return 1;
}

int luaopen_carlo(lua_State *L)
{
    static int gpu_registered;
    if (!gpu_registered) {
        carlo_register_gpu_backends();
        gpu_registered = 1;
    }
    lua_newtable(L);
    lua_pushstring(L, CARLO_VERSION);
    lua_setfield(L, -2, "version");
    for (size_t i = 0; i < sizeof openers / sizeof openers[0]; i++)
        openers[i](L);
    /* visible to the Lua layer while it loads, so it can require "carlo" */
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, "carlo");
    lua_pop(L, 1);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    for (const struct carlo_lua_source *m = carlo_lua_sources; m->name; m++) {
        lua_pushlightuserdata(L, (void *)m);
        lua_pushcclosure(L, load_embedded, 1);
        lua_setfield(L, -2, m->name);
    }
    lua_pop(L, 1);
    lua_getglobal(L, "require");
    lua_pushliteral(L, "carlo.module");
    lua_call(L, 1, 0);
    return 1;
}

/* ---------- embedding ---------- */

struct carlo_runtime {
    lua_State *L;
    char *error;
};

int carlo_msghandler(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
            return 1;
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    luaL_traceback(L, L, msg, 1);
    return 1;
}

int carlo_pcall(lua_State *L, int nargs, int nresults)
{
    int base = lua_gettop(L) - nargs;
    lua_pushcfunction(L, carlo_msghandler);
    lua_insert(L, base);
    int status = lua_pcall(L, nargs, nresults, base);
    lua_remove(L, base);
    return status;
}

static void set_error(carlo_runtime *rt, const char *msg)
{
    free(rt->error);
    rt->error = msg ? strdup(msg) : NULL;
}

static int finish(carlo_runtime *rt, int status)
{
    if (status == LUA_OK) {
        set_error(rt, NULL);
        return 0;
    }
    set_error(rt, lua_tostring(rt->L, -1));
    lua_pop(rt->L, 1);
    return 1;
}

carlo_runtime *carlo_open(void)
{
    carlo_runtime *rt = calloc(1, sizeof *rt);
    if (!rt)
        return NULL;
    rt->L = luaL_newstate();
    if (!rt->L) {
        free(rt);
        return NULL;
    }
    luaL_openlibs(rt->L);
    lua_pushcfunction(rt->L, luaopen_carlo);
    if (carlo_pcall(rt->L, 0, 1) != LUA_OK) {
        fprintf(stderr, "carlo: %s\n", lua_tostring(rt->L, -1));
        lua_close(rt->L);
        free(rt);
        return NULL;
    }
    lua_setglobal(rt->L, "carlo");
    return rt;
}

int carlo_dofile(carlo_runtime *rt, const char *path, int argc, char **argv)
{
    lua_State *L = rt->L;
    lua_createtable(L, argc, 1);
    lua_pushstring(L, path ? path : "stdin");
    lua_rawseti(L, -2, 0);
    for (int i = 0; i < argc; i++) {
        lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setglobal(L, "arg");
    int status = luaL_loadfile(L, path);
    if (status == LUA_OK) {
        for (int i = 0; i < argc; i++)
            lua_pushstring(L, argv[i]);
        status = carlo_pcall(L, argc, 0);
    }
    return finish(rt, status);
}

int carlo_dostring(carlo_runtime *rt, const char *chunk, const char *chunkname)
{
    int status = luaL_loadbuffer(rt->L, chunk, strlen(chunk), chunkname ? chunkname : "=(string)");
    if (status == LUA_OK)
        status = carlo_pcall(rt->L, 0, 0);
    return finish(rt, status);
}

int carlo_eval_number(carlo_runtime *rt, const char *expression, double *out)
{
    lua_State *L = rt->L;
    lua_pushfstring(L, "return %s", expression);
    int status = luaL_loadbuffer(L, lua_tostring(L, -1), lua_rawlen(L, -1), "=(expression)");
    lua_remove(L, -2);
    if (status == LUA_OK)
        status = carlo_pcall(L, 0, 1);
    if (status != LUA_OK)
        return finish(rt, status);
    int isnum;
    *out = lua_tonumberx(L, -1, &isnum);
    lua_pop(L, 1);
    if (!isnum) {
        set_error(rt, "the expression did not give a number");
        return 1;
    }
    set_error(rt, NULL);
    return 0;
}

const char *carlo_error(const carlo_runtime *rt)
{
    return rt->error ? rt->error : "";
}

lua_State *carlo_lua(carlo_runtime *rt) { return rt->L; }

void carlo_close(carlo_runtime *rt)
{
    if (!rt)
        return;
    lua_close(rt->L);
    free(rt->error);
    free(rt);
}
