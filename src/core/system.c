/* system.c — see system.h. Models live in registry["carlo.models"][name] as light userdata. */
#include "core/system.h"

#include <lauxlib.h>

#define MODELS_KEY "carlo.models"

void carlo_model_register(lua_State *L, const carlo_model *m)
{
    if (luaL_getsubtable(L, LUA_REGISTRYINDEX, MODELS_KEY) < 0)
        return;
    lua_pushlightuserdata(L, (void *)m);
    lua_setfield(L, -2, m->name);
    lua_pop(L, 1);
    luaL_getmetatable(L, m->metatable);
    lua_pushlightuserdata(L, (void *)m);
    lua_setfield(L, -2, "__carlo_model");
    lua_pop(L, 1);
}

const carlo_model *carlo_model_find(lua_State *L, const char *name)
{
    luaL_getsubtable(L, LUA_REGISTRYINDEX, MODELS_KEY);
    lua_getfield(L, -1, name);
    const carlo_model *m = (const carlo_model *)lua_touserdata(L, -1);
    lua_pop(L, 2);
    return m;
}

const carlo_model *carlo_model_of(lua_State *L, int idx, void **sys)
{
    if (lua_type(L, idx) != LUA_TUSERDATA || !lua_getmetatable(L, idx))
        return NULL;
    lua_getfield(L, -1, "__carlo_model");
    const carlo_model *m = (const carlo_model *)lua_touserdata(L, -1);
    lua_pop(L, 2);
    if (m && sys)
        *sys = lua_touserdata(L, idx);
    return m;
}
