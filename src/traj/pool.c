/* pool.c — see pool.h. Tasks are handed out by an atomic counter; a generation number
 * tells sleeping helpers that a new loop has started. */
#include "traj/pool.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

struct traj_pool {
    int nhelpers;
    pthread_t *th;
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    unsigned long generation;
    int stop;
    int active;              /* helpers still inside the current loop */
    size_t n;
    _Atomic size_t next;
    void (*fn)(void *, size_t);
    void *ctx;
};

static void drain(traj_pool *p)
{
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n)
            return;
        p->fn(p->ctx, i);
    }
}

static void *helper(void *arg)
{
    traj_pool *p = arg;
    unsigned long seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->generation == seen)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->stop)
            break;
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        drain(p);
        pthread_mutex_lock(&p->mu);
        if (--p->active == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

traj_pool *traj_pool_new(int threads)
{
    traj_pool *p = carlo_calloc(1, sizeof *p, "a thread pool");
    if (!p)
        return NULL;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    int want = threads > 1 ? threads - 1 : 0;
    p->th = carlo_calloc((size_t)(want ? want : 1), sizeof *p->th, "a thread pool");
    if (!p->th) {
        traj_pool_free(p);
        return NULL;
    }
    for (int i = 0; i < want; i++) {
        if (traj_thread_start(&p->th[i], helper, p))
            break; /* fewer helpers is still correct */
        p->nhelpers++;
    }
    return p;
}

int traj_thread_start(pthread_t *th, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the new thread inherits the mask */
    int rc = pthread_create(th, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

void traj_pool_free(traj_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nhelpers; i++)
        pthread_join(p->th[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    free(p->th);
    free(p);
}

void traj_pool_run(traj_pool *p, size_t n, void (*fn)(void *ctx, size_t i), void *ctx)
{
    if (n == 0)
        return;
    if (!p || p->nhelpers == 0 || n == 1) {
        for (size_t i = 0; i < n; i++)
            fn(ctx, i);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    atomic_store(&p->next, 0);
    p->active = p->nhelpers;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    drain(p);
    pthread_mutex_lock(&p->mu);
    while (p->active > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
