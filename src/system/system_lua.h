/* system_lua.h — the system layer's Lua half: one binding for the verbs every model shares
 * (run, sample, observe, snapshot, save, sync, close, step, device, seed, controls as fields,
 * tostring, __gc/__close) and carlo.load's restore. A model's binding fills a carlo_lua_model
 * and keeps only its constructor keys and its own methods (sweep_color, tune, widom, ...). */
#ifndef CARLO_SYSTEM_LUA_H
#define CARLO_SYSTEM_LUA_H

#include <lauxlib.h>
#include <lua.h>

#include "core/sys.h"

typedef struct carlo_lua_model {
    const carlo_ops *ops;
    const char *metatable;   /* "carlo.potts" */
    const luaL_Reg *methods; /* the model's own methods (NULL-terminated), or NULL */
    /* sys.key for a key that is neither common nor a control: push it and return 1, or 0 */
    int (*index)(lua_State *L, carlo_sys *s, const char *key);
    /* What tostring shows inside the parentheses ("L = 64, q = 3, T = 1"): pushes a string. */
    void (*describe)(lua_State *L, carlo_sys *s);
    /* sys:snapshot([k]): push the table of replica k (0-based, in control order). */
    void (*snapshot)(lua_State *L, carlo_sys *s, int replica);
    /* run: the model's own keys, read from the table at args into the run's hooks. */
    const char *const *run_keys;
    void (*run_args)(lua_State *L, int args, carlo_sys *s, carlo_run_opts *o, const char *where);
    /* observe and sample: the model's own keys, read into an options block of opt_size bytes
     * (zeroed first; NULL keys: none), handed to the ops' observables and observe. */
    const char *const *observe_keys;
    size_t opt_size;
    void (*observe_args)(lua_State *L, int args, carlo_sys *s, void *opt, const char *where);
    /* After a sample and an observe: add the model's own fields (the replica's temperature)
     * to the replica's result table at -1. */
    void (*sample_extra)(lua_State *L, carlo_sys *s, int replica, const void *opt);
    /* After an observe: add fields computed from the replica's values (exact counts). */
    void (*observe_extra)(lua_State *L, carlo_sys *s, int replica, const double *values);
    /* Seconds kept in hand for the checkpoint of a walltime-limited run (NULL: 0.5 s). */
    double (*reserve)(const carlo_sys *s);
    /* Old field names still read and written one release: {"old", "new", ..., NULL}; each
     * warns once per process. */
    const char *const *aliases;
    /* Optional: sys.key = value (at stack index value) for the model's own settable fields,
     * asked before the controls: returns 1 when it took the key, 0 to leave it to the
     * controls. settable names those fields for the message that lists what can be set. */
    int (*newindex)(lua_State *L, carlo_sys *s, const char *key, int value);
    const char *const *settable;
    /* Optional: the device carlo.load asks for when its call names none, from the checkpoint
     * (NULL: the default device); KMC's serial algorithms run on the CPU only. */
    const char *(*load_device)(const carlo_frame *f);
    /* Optional: keys run and sample refuse with the model's words, {"key", "message", ...,
     * NULL}: an old key whose work another verb does now (LJ's moves = is sys:trial). */
    const char *const *refused;
} carlo_lua_model;

/* Register the model: its metatable with the common metamethods and verbs, its methods,
 * and the model for carlo.load. Call once per Lua state (from the model's _open). */
void carlo_lua_model_register(lua_State *L, const carlo_lua_model *m);
/* Push a new system userdata that owns s (closed by close, __gc or __close). */
void carlo_lua_push_system(lua_State *L, const carlo_lua_model *m, carlo_sys *s);
/* The open system at idx: of model m (NULL: of any model), else a Lua error. */
carlo_sys *carlo_lua_check(lua_State *L, int idx, const carlo_lua_model *m);
/* The system at idx, or NULL when the value is no open carlo system. */
carlo_sys *carlo_lua_tosys(lua_State *L, int idx);

/* Adds carlo.advance (every system of a list n units, together) to the module table at -1. */
void carlo_system_lua_open(lua_State *L);

/* Helpers for bindings. */
void carlo_lua_setnum(lua_State *L, const char *key, double v);
void carlo_lua_setint(lua_State *L, const char *key, long long v);
/* A one-time warning on stderr ("carlo: X is renamed Y; X goes in the next release"). */
void carlo_lua_renamed(const char *where, const char *old, const char *new_name);
/* Constructor keys shared by every model: the old name of the initial configuration
 * (e.g. "start"), when given, read as `init` with a warning; returns the index of the value
 * of `init` in names (def when absent) or -1 when it is a table (a snapshot), which is left
 * on the stack top. Tables only where allow_table. */
int carlo_lua_init_arg(lua_State *L, int args, const char *where, const char *old,
                       const char *def, const char *const *names, int allow_table);

#endif
