/* particle_lua.h — helpers of the Lua bindings of the particle models (hard particles, hard
 * shapes): a printf-style error at the caller's position, optional keyword tables, a box as
 * GSD's six numbers, and the sys:steinhardt method's arguments and result. */
#ifndef CARLO_PARTICLE_LUA_H
#define CARLO_PARTICLE_LUA_H

#include <stdint.h>

#include <lauxlib.h>
#include <lua.h>

#include "core/box.h"
#include "core/error.h"

/* luaL_error with the full printf formats (%g, %.9f, %lld), which lua_pushfstring lacks: the
 * message (up to 511 characters) after the position of the calling Lua code. Never returns. */
int carlo_lua_fail(lua_State *L, const char *fmt, ...) CARLO_PRINTF(2, 3);

/* An optional keyword table at idx (absent or nil: an empty one); the stack is cut to idx. */
void carlo_lua_optional_table(lua_State *L, int idx);

/* Push a box as GSD's six numbers { Lx, Ly, Lz, xy, xz, yz }. */
void carlo_lua_push_box(lua_State *L, const carlo_box *b);

/* sys:steinhardt{ rc = 1.2 (sqrt 2 / rho)^(1/3) } -> { Q4 =, Q6 =, rc = } of a system of N
 * particles in box b (3D only: otherwise the error "where: Q4 and Q6 are <what> (3D)"), the
 * keyword table at stack index 2; rc at most half the box's smallest distance between faces.
 * q(s, rc, &Q4, &Q6) computes the order (0, or -1 with the error set). Returns 1 (the table). */
int carlo_lua_steinhardt(lua_State *L, const char *where, const char *what, int dim, int64_t N,
                         const carlo_box *b, int (*q)(void *s, double rc, double *q4, double *q6), void *s);

#endif
