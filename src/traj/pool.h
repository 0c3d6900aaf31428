/* pool.h — a few helper threads that run the numbered tasks of a parallel loop together
 * with the calling thread (the trajectory writer compresses a frame's blocks this way). */
#ifndef CARLO_TRAJ_POOL_H
#define CARLO_TRAJ_POOL_H

#include <stddef.h>

typedef struct traj_pool traj_pool;

/* threads - 1 helpers are started (threads <= 1: none). NULL with the message set. */
traj_pool *traj_pool_new(int threads);
void traj_pool_free(traj_pool *p);

/* Run fn(ctx, i) for i in [0, n) on the helpers and the caller; returns when all are done.
 * One loop at a time per pool. */
void traj_pool_run(traj_pool *p, size_t n, void (*fn)(void *ctx, size_t i), void *ctx);

/* pthread_create with every signal blocked in the new thread: Ctrl-C and the like are
 * handled by the thread that runs the script, never in the middle of a helper's write. */
#include <pthread.h>
int traj_thread_start(pthread_t *th, void *(*fn)(void *), void *arg);

#endif
