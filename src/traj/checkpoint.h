/* checkpoint.h — save and load a model's full state (a carlo_frame) atomically:
 * written to a temporary file, flushed to disk and renamed over the old checkpoint. */
#ifndef CARLO_CHECKPOINT_H
#define CARLO_CHECKPOINT_H

#include "core/frame.h"

int traj_checkpoint_save(const char *path, const carlo_frame *f);
/* Fills out with owned chunks (carlo_frame_free releases them). */
int traj_checkpoint_load(const char *path, carlo_frame *out);

/* carlo.load, registered in the module table at -1. */
struct lua_State;
void checkpoint_lua_open(struct lua_State *L);

#endif
