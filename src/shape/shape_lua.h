/* shape_lua.h — registers carlo.hard_polygons, carlo.hard_polyhedra, carlo.hard_ellipses,
 * carlo.hard_ellipsoids and carlo.shape_hull in the module table at -1. */
#ifndef CARLO_SHAPE_LUA_H
#define CARLO_SHAPE_LUA_H

#include <lua.h>

void shape_lua_open(lua_State *L);

#endif
