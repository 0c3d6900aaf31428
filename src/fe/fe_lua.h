/* fe_lua.h — the free-energy core's Lua binding: carlo._mbar (MBAR and histogram reweighting),
 * used by lua/carlo/free_energy.lua. */
#ifndef CARLO_FE_LUA_H
#define CARLO_FE_LUA_H

#include <lua.h>

void fe_lua_open(lua_State *L);

#endif
