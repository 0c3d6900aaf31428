/* checkpoint.h — a model's full state (a carlo_frame) saved atomically as a one-frame .ctr
 * file: written to a temporary file beside it, flushed to disk (fsync) and renamed over
 * the old checkpoint, so a crash leaves either the old or the new one, never a mixture. */
#ifndef CARLO_CHECKPOINT_H
#define CARLO_CHECKPOINT_H

#include "core/frame.h"

int traj_checkpoint_save(const char *path, const carlo_frame *f);
/* The last complete frame of the file, as owned chunks (carlo_frame_free releases them). */
int traj_checkpoint_load(const char *path, carlo_frame *out);

#endif
