/* sys.c — see sys.h: controls, observable sets, the model registry and the run driver. */
#include "core/sys.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h"
#include "mpi/mpi.h"
#ifdef _OPENMP
#include <omp.h>
#endif

int carlo_sys_dead(void)
{
    return carlo_seterr("this system died on an earlier device error");
}

int carlo_sys_alive(const carlo_sys *s)
{
    return s->dead ? carlo_sys_dead() : 0;
}

/* ---------- observables ---------- */

int carlo_obs_add(carlo_obs_set *o, const char *name)
{
    if (o->n >= CARLO_OBS_MAX)
        return -1;
    o->name[o->n] = name;
    return o->n++;
}

void carlo_obs_derive(carlo_obs_set *o, const char *name, carlo_derived_of fn, int n,
                      const int *in, const int *pow)
{
    if (o->nderived >= CARLO_DERIVED_MAX || n < 1 || n > CARLO_DERIVED_IN)
        return;
    carlo_derived *d = &o->derived[o->nderived++];
    memset(d, 0, sizeof *d);
    d->name = name;
    d->fn = fn;
    d->n = n;
    for (int k = 0; k < n; k++) {
        d->in[k] = in[k];
        d->pow[k] = pow[k];
    }
}

/* ---------- controls ---------- */

const carlo_control *carlo_control_find(const carlo_sys *s, const char *name)
{
    for (int k = 0; k < s->ops->ncontrols; k++)
        if (strcmp(s->ops->controls[k].name, name) == 0)
            return &s->ops->controls[k];
    return NULL;
}

const char *carlo_control_range(const carlo_control *c, char *buf, size_t size)
{
    if (isinf(c->hi))
        snprintf(buf, size, "%s %s %.17g", c->name, c->lo_closed ? ">=" : ">", c->lo);
    else
        snprintf(buf, size, "%s in %c%.17g, %.17g%c", c->name, c->lo_closed ? '[' : '(', c->lo,
                 c->hi, c->hi_closed ? ']' : ')');
    return buf;
}

int carlo_control_set(carlo_sys *s, const carlo_control *c, double v)
{
    int ok = isfinite(v) && (c->lo_closed ? v >= c->lo : v > c->lo) &&
             (c->hi_closed ? v <= c->hi : v < c->hi);
    if (!ok) {
        char r[128];
        return carlo_seterr("%s must be a number with %s (got %.17g)", c->name,
                            carlo_control_range(c, r, sizeof r), v);
    }
    if (carlo_sys_alive(s))
        return -1;
    return c->set(s, v);
}

/* ---------- registry ---------- */

#define MODELS_MAX 16
static const carlo_ops *models[MODELS_MAX];

void carlo_ops_register(const carlo_ops *ops)
{
    for (int k = 0; k < MODELS_MAX; k++) {
        if (models[k] == ops)
            return;
        if (!models[k]) {
            models[k] = ops;
            return;
        }
    }
}

const carlo_ops *carlo_ops_find(const char *name)
{
    for (int k = 0; k < MODELS_MAX && models[k]; k++)
        if (strcmp(models[k]->name, name) == 0)
            return models[k];
    return NULL;
}

/* ---------- CPU threads ---------- */

/* Below this many seconds per sweep, a parallel region's fork and join cost more than they
 * save: such systems run on one thread without measuring (with all threads, a 16 x 16 Potts
 * lattice sampled every ten sweeps took 1.3 times as long on an idle 16-core machine). */
#define THREADS_SMALL 2e-5
/* How often the choice not taken is measured again (seconds), at most: the first re-measurement
 * comes THREADS_REPROBE_FIRST after the first pair, each later one twice as long after the
 * previous, up to this, so a short run corrects an early misjudgement and a long one measures
 * rarely. */
#define THREADS_REPROBE 2.0
#define THREADS_REPROBE_FIRST 0.02

static int threads_auto(const carlo_sys *s)
{
#ifdef _OPENMP
    if (omp_in_parallel()) /* one of carlo_advance_all's replicas: one thread, not measured */
        return 0;
#endif
    return s->device == CARLO_CPU && carlo_threads_fixed() == 0 && carlo_threads_all() > 1;
}

/* 0: one thread, 1: all. */
static int threads_best(const carlo_thread_pick *p)
{
    return p->cost[1] > 0 && p->cost[1] < p->cost[0];
}

int carlo_threads_begin(carlo_sys *s)
{
#ifdef _OPENMP
    int restore = omp_get_max_threads();
    if (!threads_auto(s))
        return restore;
    carlo_thread_pick *p = &s->threads;
    int pick;
    if (p->cost[0] == 0)
        pick = 0;
    else if (p->cost[1] == 0)
        pick = 1;
    else
        pick = threads_best(p);
    p->probing = 0;
    if (p->cost[0] > 0 && p->cost[1] > 0 && p->cost[1] < INFINITY && carlo_now() >= p->probe_at) {
        pick = !pick; /* measure the other choice again */
        p->probing = 1;
    }
    if (pick && p->cost[1] == 0) {
        /* the first chunk on all threads: start the team before the clock counts (the pool's
         * threads are created at their first region), so its cost is not charged to the choice */
        omp_set_num_threads(carlo_threads_all());
#pragma omp parallel
        {
        }
    }
    omp_set_num_threads(pick ? carlo_threads_all() : 1);
    return restore;
#else
    (void)s;
    return 1;
#endif
}

void carlo_threads_end(carlo_sys *s, int restore, double units, double seconds, int sweeps)
{
#ifdef _OPENMP
    if (!threads_auto(s)) {
        omp_set_num_threads(restore);
        return;
    }
    carlo_thread_pick *p = &s->threads;
    int used = omp_get_max_threads() > 1;
    omp_set_num_threads(restore);
    if (!(units > 0) || !(seconds >= 0))
        return;
    double c = seconds / units;
    if (c <= 0)
        c = 1e-12;
    int first = p->cost[used] == 0;
    /* a fresh measurement replaces the old one when it is a probe; the choice in use is
     * averaged, so that one slow chunk does not flip it */
    p->cost[used] = first || p->probing ? c : 0.5 * (p->cost[used] + c);
    /* too little work per sweep for threads to pay: from any one-thread chunk (a busy machine
     * only ever slows a chunk down, so one fast chunk proves it, even when the first was
     * preempted), and for good: the other choice is not measured again */
    if (sweeps && !used && c < THREADS_SMALL)
        p->cost[1] = INFINITY;
    if (p->probing || (p->cost[0] > 0 && p->cost[1] > 0 && p->probe_at == 0)) {
        /* the next measurement of the choice not taken: after at least 50 times what this
         * chunk took (a probe that ran slow on a busy machine costs at most 2% of the time),
         * and after a back-off that doubles from THREADS_REPROBE_FIRST to THREADS_REPROBE */
        p->backoff = p->backoff > 0 ? 2.0 * p->backoff : THREADS_REPROBE_FIRST;
        if (p->backoff > THREADS_REPROBE)
            p->backoff = THREADS_REPROBE;
        double wait = 50.0 * seconds;
        p->probe_at = carlo_now() + (wait > p->backoff ? wait : p->backoff);
        p->probing = 0;
    }
#else
    (void)s;
    (void)restore;
    (void)units;
    (void)seconds;
    (void)sweeps;
#endif
}

const char *carlo_threads_describe(const carlo_sys *s, char *buf, size_t size)
{
    int fixed = carlo_threads_fixed();
    if (s->device != CARLO_CPU)
        snprintf(buf, size, "gpu");
    else if (fixed)
        snprintf(buf, size, "%d (fixed)", fixed);
    else if (!threads_auto(s))
        snprintf(buf, size, "1");
    else
        snprintf(buf, size, "%d of %d (chosen by measurement)",
                 threads_best(&s->threads) ? carlo_threads_all() : 1, carlo_threads_all());
    return buf;
}

/* ---------- GPU launch shapes ---------- */

static int tuning(const carlo_sys *s)
{
    return s->device == CARLO_GPU && s->ops->launch_candidates && !s->tuner.fixed &&
           !s->tuner.done && s->ops->launch_candidates(s) > 1;
}

static int candidates(const carlo_sys *s)
{
    int n = s->ops->launch_candidates(s);
    return n < CARLO_TUNE_MAX ? n : CARLO_TUNE_MAX;
}

/* Whether yes holds on every rank of a collective system (a system split over the MPI ranks,
 * whose chunks must be the same on every rank: the launch tuner reduces over the ranks once a
 * chunk), or on this process otherwise. */
static int all_agree(const carlo_sys *s, int yes)
{
    if (!s->collective)
        return yes;
    double no = yes ? 0 : 1;
    return carlo_mpi_max_f64(&no, 1) == 0 && no == 0;
}

/* Before a chunk: the candidate under measurement (the default during the warm-up), with the
 * queue drained so that the chunk is timed alone. 1 when this chunk is being timed. A system
 * split over MPI ranks tunes only while it does on every rank (its timing reduces over them):
 * a launch set by hand on one rank alone, or a tuning over, ends it on all. */
static int tune_begin(carlo_sys *s)
{
    carlo_launch_tune *t = &s->tuner;
    if (s->collective && s->device == CARLO_GPU && s->ops->launch_candidates) {
        if (t->settled)
            return 0;
        if (!all_agree(s, tuning(s))) {
            t->settled = 1;
            return 0;
        }
    } else if (!tuning(s)) {
        return 0;
    }
    if (!t->started) {
        t->started = 1;
        t->k = -1;
    }
    if (s->ops->sync(s) || s->ops->launch_pick(s, t->k < 0 ? 0 : t->k)) {
        t->done = 1; /* keep whatever is set; an error surfaces in the run */
        return 0;
    }
    return 1;
}

static void tune_end(carlo_sys *s, double units, double t0)
{
    carlo_launch_tune *t = &s->tuner;
    if (s->ops->sync(s)) {
        t->done = 1;
        return;
    }
    /* A system split over ranks (collective) runs at the pace of its slowest rank: each chunk
     * counts the longest time of any rank, and a candidate its largest cost, so that every
     * rank moves on, and chooses, alike (each on its own could keep another launch). */
    double dt = carlo_now() - t0;
    if (s->collective && carlo_mpi_max_f64(&dt, 1)) {
        t->done = 1;
        return;
    }
    t->seconds += dt;
    t->units += units;
    if (t->seconds < CARLO_TUNE_SECONDS)
        return; /* the same candidate again on the next chunk */
    double cost = t->seconds / t->units;
    if (s->collective && carlo_mpi_max_f64(&cost, 1)) {
        t->done = 1;
        return;
    }
    t->seconds = t->units = 0;
    if (t->k >= 0 && (t->round == 0 || cost < t->cost[t->k]))
        t->cost[t->k] = cost;
    if (++t->k < candidates(s))
        return;
    t->k = 0;
    if (++t->round < CARLO_TUNE_ROUNDS)
        return;
    int best = 0;
    for (int k = 1; k < candidates(s); k++)
        if (t->cost[k] < t->cost[best])
            best = k;
    if (!(t->cost[best] < 0.97 * t->cost[0]))
        best = 0; /* the default unless another is clearly faster */
    t->done = 1;
    s->ops->launch_pick(s, best);
}

/* ---------- the run driver ---------- */

static int fail(carlo_sys *s)
{
    s->dead |= s->device == CARLO_GPU;
    return -1;
}

/* A frame whose slow part (lattices on their way from the device) joins it later. */
typedef struct pending {
    int on;
    carlo_frame f;
} pending;

static int pending_finish(carlo_sys *s, const carlo_run_opts *o, pending *p, int wait)
{
    if (!p->on)
        return 0;
    int got = s->ops->frame_fetch(s, &p->f, wait);
    if (got == 0)
        return 0;
    p->on = 0;
    int rc = got < 0 ? fail(s) : o->write(o->ctx, &p->f);
    carlo_frame_free(&p->f);
    return rc;
}

static int frame_due(carlo_sys *s, const carlo_run_opts *o, pending *p)
{
    if (pending_finish(s, o, p, 1))
        return -1;
    carlo_frame_init(&p->f);
    int rc = 1;
    if (s->ops->frame_start) {
        rc = s->ops->frame_start(s, &p->f);
        if (rc == 0) {
            p->on = 1;
            return 0;
        }
        if (rc < 0)
            fail(s);
        carlo_frame_free(&p->f);
        carlo_frame_init(&p->f);
    }
    if (rc > 0) /* the plain way */
        rc = s->ops->frame(s, &p->f) || o->write(o->ctx, &p->f) ? -1 : 0;
    carlo_frame_free(&p->f);
    return rc;
}

/* Units until the next stop: the end, a hook, a frame, or a poll. */
static uint64_t next_stop(uint64_t step, uint64_t left, uint64_t every)
{
    if (every) {
        uint64_t to = every - step % every;
        if (to < left)
            left = to;
    }
    return left;
}

static int run_steps(carlo_sys *s, const carlo_run_opts *o, carlo_run_result *res,
                     carlo_progress *pr)
{
    const double t0 = carlo_now();
    double per_unit = 0;
    uint64_t chunk = 1, done = 0;
    int growing = 1; /* chunks double until 0.05 s have passed */
    const uint64_t frames = o->write ? o->every : 0;
    int rc = 0;
    pending pf = {0};
    while (done < o->n) {
        uint64_t m = next_stop(s->step, o->n - done < chunk ? o->n - done : chunk, frames);
        for (int h = 0; h < 2; h++)
            m = next_stop(s->step, m, o->hook[h].fn ? o->hook[h].every : 0);
        if (o->walltime > 0 && per_unit > 0) {
            /* stop while the rest of the budget still covers this chunk and the reserve */
            double left = o->walltime - (carlo_now() - t0) - o->reserve;
            if (left < per_unit * (double)m) {
                uint64_t fit = left > 0 ? (uint64_t)(left / per_unit) : 0;
                if (fit == 0) {
                    res->stopped_early = 1;
                    break;
                }
                m = fit < m ? fit : m;
            }
        }
        const int timed = tune_begin(s);
        const double a0 = carlo_now();
        const int restore = carlo_threads_begin(s);
        const int arc = s->ops->advance(s, m);
        carlo_threads_end(s, restore, (double)m, carlo_now() - a0, 1);
        if (timed && !arc)
            tune_end(s, (double)m, a0);
        if (arc) {
            rc = -1; /* the model marks itself dead on a device error */
            break;
        }
        done += m;
        if (o->walltime > 0) { /* time what really ran, not what was queued */
            if (s->ops->sync(s)) {
                rc = fail(s);
                break;
            }
            per_unit = (carlo_now() - t0) / (double)done;
        }
        for (int h = 0; h < 2 && rc == 0; h++)
            if (o->hook[h].fn && o->hook[h].every && s->step % o->hook[h].every == 0)
                rc = o->hook[h].fn(s, o->hook[h].ctx);
        if (rc)
            break;
        if (pf.on && (rc = pending_finish(s, o, &pf, 0)))
            break;
        if (frames && s->step % frames == 0 && (rc = frame_due(s, o, &pf)))
            break;
        if (carlo_interrupted) {
            s->ops->sync(s);
            rc = carlo_seterr("interrupted");
            break;
        }
        carlo_progress_update(pr, (double)done);
        if (growing && chunk < ((uint64_t)1 << 40) &&
            (growing = all_agree(s, carlo_now() - t0 < 0.05)))
            chunk *= 2;
    }
    if (pf.on) { /* the last frame: nothing finished is lost, not even after Ctrl-C */
        if (s->dead) {
            carlo_frame_free(&pf.f);
        } else {
            int prc = pending_finish(s, o, &pf, 1);
            if (prc && rc == 0)
                rc = prc;
        }
    }
    res->done = done;
    return rc;
}

static int run_continuous(carlo_sys *s, const carlo_run_opts *o, carlo_run_result *res,
                          carlo_progress *pr)
{
    double t;
    uint64_t ev;
    s->ops->clock(s, &t, &ev);
    const double t_begin = t;
    const uint64_t ev_begin = ev;
    double t_final = INFINITY;
    uint64_t ev_final = UINT64_MAX;
    if (o->clock == CARLO_CLOCK_TIME) {
        if (!(o->time > 0) || !isfinite(o->time))
            return carlo_seterr("time must be a finite number > 0 (got %g)", o->time);
        t_final = t + o->time;
        if (!(t_final > t))
            return carlo_seterr("time = %g is below the resolution of t = %.17g", o->time, t);
    } else {
        if (!o->n)
            return carlo_seterr("events must be at least 1");
        ev_final = ev + o->n < ev ? UINT64_MAX - 1 : ev + o->n;
    }
    const double every = o->write && o->every_time > 0 ? o->every_time : 0;
    double next_k = 0;
    if (every > 0) {
        next_k = floor(t / every) + 1;
        while (next_k * every <= t)
            next_k += 1;
    }
    if (every > 0 && t == 0) { /* the initial configuration: a run from t = 0 starts with it */
        carlo_frame f0;
        carlo_frame_init(&f0);
        int frc = s->ops->frame(s, &f0) || o->write(o->ctx, &f0) ? -1 : 0;
        carlo_frame_free(&f0);
        if (frc)
            return -1;
    }
    const double t0 = carlo_now();
    uint64_t budget = 1;
    double chunk_seconds = 0;
    int rc = 0;
    for (;;) {
        double stop = t_final;
        int at_frame = 0;
        if (every > 0 && next_k * every <= stop) {
            stop = next_k * every;
            at_frame = 1;
        }
        int reached = 0;
        while (!reached) {
            if (o->walltime > 0 &&
                carlo_now() - t0 + o->reserve + chunk_seconds > o->walltime) {
                res->stopped_early = 1;
                goto out;
            }
            const int timed = tune_begin(s);
            const double w0 = carlo_now();
            const uint64_t ev0 = ev;
            const int restore = carlo_threads_begin(s);
            const int arc = s->ops->advance_to(s, stop, ev_final, budget, &reached);
            chunk_seconds = carlo_now() - w0;
            s->ops->clock(s, &t, &ev);
            carlo_threads_end(s, restore, (double)(ev - ev0), chunk_seconds, 0);
            if (timed && !arc && ev > ev0)
                tune_end(s, (double)(ev - ev0), w0);
            if (arc) {
                rc = -1; /* the model marks itself dead on a device error */
                goto out;
            }
            if (carlo_interrupted) {
                rc = carlo_seterr("interrupted");
                goto out;
            }
            s->ops->clock(s, &t, &ev);
            carlo_progress_update(pr, o->clock == CARLO_CLOCK_TIME ? t - t_begin
                                                                   : (double)(ev - ev_begin));
            if (chunk_seconds < 0.02 && budget < ((uint64_t)1 << 24))
                budget *= 2;
        }
        s->ops->clock(s, &t, &ev);
        if (at_frame && t == stop) {
            next_k += 1;
            carlo_frame f;
            carlo_frame_init(&f);
            rc = s->ops->frame(s, &f) || o->write(o->ctx, &f) ? -1 : 0;
            carlo_frame_free(&f);
            if (rc)
                goto out;
        }
        if (!(t < t_final) || ev >= ev_final)
            break;
    }
out:
    s->ops->clock(s, &t, &ev);
    res->done = ev - ev_begin;
    res->time_done = t - t_begin;
    return rc;
}

int carlo_run(carlo_sys *s, const carlo_run_opts *o, carlo_run_result *res)
{
    memset(res, 0, sizeof *res);
    if (carlo_sys_alive(s))
        return -1;
    if ((o->clock == CARLO_CLOCK_STEP) == (s->ops->continuous != 0))
        return carlo_seterr("%s counts %s", s->ops->name, s->ops->unit);
    carlo_progress pr;
    const char *label = o->label ? o->label : s->ops->name;
    if (o->clock == CARLO_CLOCK_TIME)
        carlo_progress_start(&pr, label, "time", o->time, o->quiet);
    else
        carlo_progress_start(&pr, label, o->clock == CARLO_CLOCK_EVENTS ? "events" : s->ops->unit,
                             (double)o->n, o->quiet);
    double t0 = carlo_now();
    int rc = s->ops->continuous ? run_continuous(s, o, res, &pr) : run_steps(s, o, res, &pr);
    carlo_progress_end(&pr);
    res->seconds = carlo_now() - t0;
    return rc;
}

int carlo_observe(carlo_sys *s, const void *opt, double *values)
{
#ifdef _OPENMP
    /* the measurement's parallel loops take the thread count the chunks run with (one thread
     * until the choice is measured): a small lattice observed between short runs on a busy
     * machine must not wait in a barrier for a thread the system scheduler parked */
    if (threads_auto(s)) {
        const int restore = omp_get_max_threads();
        omp_set_num_threads(threads_best(&s->threads) ? carlo_threads_all() : 1);
        const int rc = s->ops->observe(s, opt, values);
        omp_set_num_threads(restore);
        return rc;
    }
#endif
    return s->ops->observe(s, opt, values);
}

int carlo_advance(carlo_sys *s, uint64_t n)
{
    carlo_run_opts o = {.clock = s->ops->continuous ? CARLO_CLOCK_EVENTS : CARLO_CLOCK_STEP,
                        .n = n, .quiet = 1};
    carlo_run_result r;
    return n ? carlo_run(s, &o, &r) : 0;
}

/* The most host threads carlo_advance_all gives GPU systems (one each, waiting on the device
 * most of the time). */
#define ADVANCE_ALL_GPU_THREADS 256

int carlo_advance_all(carlo_sys **s, int R, uint64_t n, int *failed)
{
    if (failed)
        *failed = -1;
    int gpu = 0, collective = 0;
    for (int i = 0; i < R; i++) {
        if (carlo_sys_alive(s[i])) {
            if (failed)
                *failed = i;
            return -1;
        }
        gpu += s[i]->device == CARLO_GPU;
        collective += s[i]->collective;
    }
    /* work the calling thread queued must be done before other threads' streams go on */
    for (int i = 0; i < R; i++)
        if (s[i]->device == CARLO_GPU && s[i]->ops->sync(s[i])) {
            if (failed)
                *failed = i;
            return -1;
        }
    int threads = 1;
#ifdef _OPENMP
    const int fixed = carlo_threads_fixed();
    const int all = fixed ? fixed : carlo_threads_all();
    if (!omp_in_parallel() && !collective) {
        if (gpu == R)
            threads = R < ADVANCE_ALL_GPU_THREADS ? R : ADVANCE_ALL_GPU_THREADS;
        else if (gpu == 0 && R >= all)
            threads = all; /* across the replicas; each runs on one thread, no barriers */
    }
#endif
    if (R < 2 || threads < 2 || n == 0) {
        for (int i = 0; i < R; i++)
            if (carlo_advance(s[i], n)) {
                if (failed)
                    *failed = i;
                return -1;
            }
        return 0;
    }
    /* messages are thread-local: each failing replica's is kept and the first re-raised here */
    char(*msg)[256] = carlo_calloc((size_t)R, sizeof *msg, "the replicas' messages");
    int *rc = carlo_calloc((size_t)R, sizeof *rc, "the replicas' results");
    if (!msg || !rc) {
        free(msg);
        free(rc);
        return -1;
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
#endif
    for (int i = 0; i < R; i++) {
#ifdef _OPENMP
        omp_set_num_threads(1); /* no parallel region inside a replica's work */
#endif
        /* a GPU system's work goes on this thread's own stream (built with per-thread
         * default streams), so the replicas' kernels run side by side; the sync leaves
         * nothing queued on a stream another thread will not wait for */
        /* the current GPU is per host thread: this process's (carlo_gpu_pick) on this one too */
        rc[i] = s[i]->device == CARLO_GPU ? carlo_gpu_bind() : 0;
        if (rc[i] == 0)
            rc[i] = carlo_advance(s[i], n);
        if (rc[i] == 0 && s[i]->device == CARLO_GPU)
            rc[i] = s[i]->ops->sync(s[i]);
        if (rc[i])
            snprintf(msg[i], sizeof msg[i], "%s", carlo_errmsg());
    }
    int bad = -1;
    for (int i = 0; i < R && bad < 0; i++)
        if (rc[i])
            bad = i;
    if (bad >= 0) {
        if (failed)
            *failed = bad;
        carlo_seterr("%s", msg[bad]);
    }
    free(msg);
    free(rc);
    return bad >= 0 ? -1 : 0;
}
