/* args.h — keyword-table checking for the Lua bindings: every constructor and method
 * that takes { key = value } validates each key, and errors name the key and range. */
#ifndef CARLO_ARGS_H
#define CARLO_ARGS_H

#include <lua.h>
#include <stdint.h>

/* Raise "<where>: unknown key 'k' (allowed: a, b, c)" for any key of the table at idx
 * not in allowed (NULL-terminated); also rejects non-string keys. */
void carlo_args_allowed(lua_State *L, int idx, const char *where, const char *const *allowed);

/* Presence test (nil counts as absent). */
int carlo_arg_has(lua_State *L, int idx, const char *key);

/* An integer in [min, max]; when absent: def, or an error when required. */
int64_t carlo_arg_int(lua_State *L, int idx, const char *where, const char *key, int required,
                      int64_t def, int64_t min, int64_t max);

/* A finite number with lo < x (or lo <= x when lo_closed), x < hi (or <= when hi_closed).
 * carlo_arg_int and carlo_arg_num never convert strings: T = "1" is refused like any other
 * wrong type, and every refusal names the key and the value received. */
double carlo_arg_num(lua_State *L, int idx, const char *where, const char *key, int required,
                     double def, double lo, int lo_closed, double hi, int hi_closed);

/* The same for item k of the list at idx (a list-valued key such as temperatures): the error
 * reads "<where>: temperatures[2] must be a number > 0 (got the string "2")". */
double carlo_arg_item_num(lua_State *L, int idx, const char *where, const char *key, lua_Integer k,
                          double lo, int lo_closed, double hi, int hi_closed);

/* Pushes a short description of the value at idx for a "(got ...)" clause and returns it:
 * 1.5, true, nil, the string "1", a table, a carlo.array. */
const char *carlo_arg_got(lua_State *L, int idx);

/* One of the NULL-terminated names; returns its index. def may be NULL only if required. */
int carlo_arg_enum(lua_State *L, int idx, const char *where, const char *key, const char *def,
                   const char *const *names);

int carlo_arg_bool(lua_State *L, int idx, const char *where, const char *key, int def);

/* decompose (the cell-grid particle models', carlo-mpi(7)): false or absent 0, true 1 (the
 * undecomposed chain), "frozen" 2 (each slab's first and last cell layer sit out the sweep). */
int carlo_arg_decompose(lua_State *L, int idx, const char *where);

/* A string or NULL when absent. The string stays valid while the table is on the stack. */
const char *carlo_arg_str(lua_State *L, int idx, const char *where, const char *key, int required);

/* A seed: an integer in [0, 2^63), or absent, in which case one is drawn from the
 * system's entropy and printed once on stderr (unless quiet). */
uint64_t carlo_arg_seed(lua_State *L, int idx, const char *where);

/* Resolve a device request ("auto", "cpu", "gpu"; NULL: the default) or raise an error
 * prefixed by where. */
#include "core/device.h"
carlo_device_kind carlo_lua_device(lua_State *L, const char *where, const char *request);

/* Raise a Lua error with the message of the last failed C call, prefixed by where. */
int carlo_raise(lua_State *L, const char *where);

#endif
