/* lj_lua.h — registers carlo.lj in the module table at -1. */
#ifndef CARLO_LJ_LUA_H
#define CARLO_LJ_LUA_H

#include <lua.h>

void lj_lua_open(lua_State *L);

#endif
