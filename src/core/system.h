/* system.h — what every model's Lua userdata offers generic code: its trajectory frame,
 * its checkpoint, and a way back from a checkpoint (carlo.load). A model registers one
 * carlo_model; its metatable then carries it, so trajectories need not know models. */
#ifndef CARLO_SYSTEM_H
#define CARLO_SYSTEM_H

#include <lua.h>

#include "core/frame.h"

typedef struct carlo_model {
    const char *name;      /* "potts": stored in checkpoints as chunk carlo/model */
    const char *metatable; /* "carlo.potts" */
    /* The current configuration as a trajectory frame (configuration/step, lattice/..., particles/...). */
    int (*frame)(void *sys, carlo_frame *out);
    /* The full state for a checkpoint: everything needed to continue bit-identically. */
    int (*checkpoint)(void *sys, carlo_frame *out);
    /* Build a system from a checkpoint frame on the device asked for ("auto", "cpu", "gpu";
     * NULL: the default) and push it; raises a Lua error on bad data. */
    int (*restore)(lua_State *L, const carlo_frame *f, const char *device);
} carlo_model;

/* Register the model (once per Lua state) and set __carlo_model in its metatable, which
 * must already exist. */
void carlo_model_register(lua_State *L, const carlo_model *m);
const carlo_model *carlo_model_find(lua_State *L, const char *name);
/* The model of the value at idx and its userdata, or NULL when it is no carlo system. */
const carlo_model *carlo_model_of(lua_State *L, int idx, void **sys);

#endif
