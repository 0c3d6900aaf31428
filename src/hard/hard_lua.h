/* hard_lua.h — registers carlo.hard_disks and carlo.hard_spheres in the module table at -1. */
#ifndef CARLO_HARD_LUA_H
#define CARLO_HARD_LUA_H

#include <lua.h>

void hard_lua_open(lua_State *L);

#endif
