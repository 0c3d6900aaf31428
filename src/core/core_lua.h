/* core_lua.h — the core functions of the carlo module: devices, threads, quiet, statistics. */
#ifndef CARLO_CORE_LUA_H
#define CARLO_CORE_LUA_H

#include <lua.h>

void carlo_core_lua_open(lua_State *L);

#endif
