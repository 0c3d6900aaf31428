/* traj_lua.h — the Lua side of trajectories and checkpoints (carlo.trajectory, carlo.load),
 * and what a model's run loop needs to write a frame every m sweeps from C:
 *
 *   traj_sink sink;                                               -- in sys:run's binding
 *   o.every = traj_lua_sink(L, 2, 1, "lj:run", sys->step, &sink);  -- keys every, trajectory
 *   ... every m sweeps, in C:  if (traj_sink_write(&sink)) stop with carlo_errmsg()
 *
 * The sink writes the system's carlo_model.frame; a model needs no trajectory code. */
#ifndef CARLO_TRAJ_LUA_H
#define CARLO_TRAJ_LUA_H

#include <lua.h>
#include <stdint.h>

#include "core/system.h"
#include "traj/traj.h"

#define TRAJ_MT "carlo.trajectory"

/* The open trajectory at idx, or a Lua error naming where. */
traj_file *traj_lua_check(lua_State *L, int idx, const char *where);

typedef struct traj_sink {
    traj_file *tr;            /* NULL: no trajectory */
    const carlo_model *model;
    void *sys;                /* the system's userdata */
} traj_sink;

/* Keys `trajectory` (a carlo.trajectory opened "w" or "a") and `every` (sweeps between
 * frames) of the keyword table at args, for the system at sys_idx whose step is `step`.
 * Returns every, or 0 when neither key is given; one without the other is a Lua error.
 * A file opened "a" drops here its frames past `step` (a restarted run writes on). The
 * caller lists both keys among its allowed ones; the table must stay on the stack while
 * the sink is used. */
uint64_t traj_lua_sink(lua_State *L, int args, int sys_idx, const char *where, uint64_t step,
                       traj_sink *sink);

/* The `trajectory` key alone, for models whose period is not a count of sweeps (KMC: a
 * time): 1 and the sink set up when given, else 0. */
int traj_lua_sink_target(lua_State *L, int args, int sys_idx, const char *where, uint64_t step,
                         traj_sink *sink);

/* Write the system's current frame: 0, or -1 with the message set. No-op without tr. */
int traj_sink_write(traj_sink *sink);
/* Write a frame the run loop built itself (taking its owned buffers), for models whose frames
 * are finished later than they are due (the Potts GPU backend copies lattices while it runs). */
int traj_sink_take(traj_sink *sink, carlo_frame *f);
int traj_write_system(traj_file *t, const carlo_model *m, void *sys);

/* Save the full state of the system at sys_idx (its carlo_model.checkpoint) to path, atomically;
 * a Lua error prefixed by where on failure. */
void traj_lua_save(lua_State *L, int sys_idx, const char *path, const char *where);

/* What every model's run does when walltime stopped it early: save the checkpoint (when
 * given) and say so on stderr (unless quiet). */
void traj_lua_stopped_early(lua_State *L, int sys_idx, const char *where, uint64_t step,
                            uint64_t done, uint64_t asked, double walltime, const char *ckpt,
                            int quiet);

/* Adds carlo.trajectory and carlo.load to the module table at -1. */
void traj_lua_open(lua_State *L);

#endif
