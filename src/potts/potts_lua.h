/* potts_lua.h — registers carlo.potts and carlo.potts_ensemble in the module table at -1. */
#ifndef CARLO_POTTS_LUA_H
#define CARLO_POTTS_LUA_H

#include <lua.h>

void potts_lua_open(lua_State *L);

#endif
