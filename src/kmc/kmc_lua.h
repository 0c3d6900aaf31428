/* kmc_lua.h — registers carlo.kmc (lattice kinetic Monte Carlo) in the module table at -1. */
#ifndef CARLO_KMC_LUA_H
#define CARLO_KMC_LUA_H

#include <lua.h>

void kmc_lua_open(lua_State *L);

#endif
