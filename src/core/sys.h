/* sys.h — the system layer's C half: the header every model's system struct starts with, the
 * operations table a model fills, and the one run driver (chunks, frames, walltime, Ctrl-C,
 * progress) that every model's run goes through. No Lua here: C hosts use it as it is.
 *
 * A model's system struct begins with CARLO_SYS_HEADER, so that s->step and (&s->sys) both
 * work on it:
 *     typedef struct potts_system { CARLO_SYS_HEADER; int L, q; ... } potts_system;
 * and the generic code sees a carlo_sys *. */
#ifndef CARLO_SYS_H
#define CARLO_SYS_H

#include <stddef.h>
#include <stdint.h>

#include "core/device.h"
#include "core/frame.h"

#ifdef __cplusplus
extern "C" {
#endif

struct carlo_ops;

/* How many CPU threads a system's chunks of work get when the count is left to carlo
 * (carlo_threads_fixed() == 0): one or all, whichever measured faster per unit of work, the
 * other measured again now and then (soon at first, then every couple of seconds), since a
 * shared machine's load changes; a sweep too small for threads to pay (THREADS_SMALL) stays on
 * one thread without re-measuring. Never changes
 * a result (the chains do not depend on the thread count). */
typedef struct carlo_thread_pick {
    int probing;       /* the chunk under way measures the other choice */
    double cost[2];    /* seconds per unit with one thread, with all; 0: not measured yet */
    double probe_at;   /* carlo_now() of the next measurement of the other choice */
    double backoff;    /* the least wait before it (seconds): doubles up to a limit */
} carlo_thread_pick;

/* The GPU launch shape of a system, chosen by measurement at first use (HOOMD's autotuner
 * pattern): after a warm-up with the default, the model's candidates (ops->launch_candidates,
 * the default first) are tried in CARLO_TUNE_ROUNDS rounds on the first chunks of real work,
 * each timed over at least CARLO_TUNE_SECONDS; the fastest (its best round) is kept when it
 * beats the default by more than 3%. A system split over MPI ranks (collective) times each chunk
 * on its slowest rank, so that all its ranks choose alike, and tunes only while all do. Launch
 * shapes never change the chain, so the sweeps spent tuning are ordinary sweeps. sys:launch{}
 * (benchmarks) sets fixed and stops it. */
#define CARLO_TUNE_SECONDS 0.01
#define CARLO_TUNE_ROUNDS 2
#define CARLO_TUNE_MAX 8
typedef struct carlo_launch_tune {
    int fixed;         /* set by hand: no tuning */
    int done;          /* the choice is made */
    int settled;       /* split over MPI ranks: their tuning is over on every rank (sys.c) */
    int k;             /* the candidate being measured; -1: the warm-up */
    int round;
    int started;
    double cost[CARLO_TUNE_MAX]; /* best seconds per unit of each candidate */
    double seconds, units; /* measured so far for candidate k */
} carlo_launch_tune;

#define CARLO_SYS_FIELDS                                                                       \
    const struct carlo_ops *ops; /* the model's operations */                                 \
    uint64_t seed;                                                                             \
    uint64_t step;               /* units of advance done: sweeps (KMC: tiled steps) */        \
    carlo_device_kind device;                                                                  \
    int dead;                    /* a device error left the system unusable */                 \
    int replicas;                /* copies observed together: 1, or R of an ensemble */     \
    int collective;              /* its work calls MPI (a split lattice): one thread only */ \
    carlo_thread_pick threads;   /* CPU threads per chunk (carlo_run) */                  \
    carlo_launch_tune tuner;     /* GPU launch shape (carlo_run) */

typedef struct carlo_sys {
    CARLO_SYS_FIELDS
} carlo_sys;

/* The common header: carlo_sys as `sys`, and its fields by name. */
#define CARLO_SYS_HEADER                                                                       \
    union {                                                                                    \
        carlo_sys sys;                                                                         \
        struct {                                                                               \
            CARLO_SYS_FIELDS                                                                   \
        };                                                                                     \
    }

/* The message for every call on a system a device error killed: -1. */
int carlo_sys_dead(void);
/* -1 with that message when s is dead, else 0. */
int carlo_sys_alive(const carlo_sys *s);

/* ---------- what a model declares ---------- */

/* A control parameter, settable by name (sys.T = 1.2) with a range check done for the model. */
typedef struct carlo_control {
    const char *name;            /* "T" */
    double lo, hi;               /* the range ... */
    int lo_closed, hi_closed;    /* ... with or without its ends */
    int (*get)(carlo_sys *s, double *v);
    int (*set)(carlo_sys *s, double v); /* may refuse more (-1 with a message) */
} carlo_control;

/* Observables: names of the values observe() writes, and derived quantities whose value is
 * a function of means (fluctuations: C, chi, V_L, ...), computed by the shared code with a
 * jackknife error. Input k is the mean of value in[k] raised to pow[k]. */
#define CARLO_OBS_MAX 264 /* room for the population of each of a KMC user model's 256 states */
#define CARLO_DERIVED_MAX 8
#define CARLO_DERIVED_IN 4
typedef double (*carlo_derived_of)(const double *means, const carlo_sys *s, int replica);
typedef struct carlo_derived {
    const char *name;
    int n;
    int in[CARLO_DERIVED_IN], pow[CARLO_DERIVED_IN];
    carlo_derived_of fn;
} carlo_derived;
typedef struct carlo_obs_set {
    int n;
    const char *name[CARLO_OBS_MAX];
    int nderived;
    carlo_derived derived[CARLO_DERIVED_MAX];
} carlo_obs_set;
/* Add a value's name (its index returned) or a derived quantity of up to four inputs. */
int carlo_obs_add(carlo_obs_set *o, const char *name);
void carlo_obs_derive(carlo_obs_set *o, const char *name, carlo_derived_of fn, int n,
                      const int *in, const int *pow);

/* Move counters since the system was made (0 where a model has none). */
typedef struct carlo_counts {
    uint64_t tried, accepted;               /* trial moves (or events) */
    uint64_t volume_tried, volume_accepted; /* box moves (NPT) */
} carlo_counts;

/* How a model counts its progress. */
typedef enum carlo_clock {
    CARLO_CLOCK_STEP = 0, /* whole units: sweeps */
    CARLO_CLOCK_EVENTS,   /* events of a continuous-time model */
    CARLO_CLOCK_TIME,     /* model time of a continuous-time model */
} carlo_clock;

typedef struct carlo_ops {
    const char *name;  /* "potts": the model's name in checkpoints (carlo/model) */
    const char *unit;  /* "sweeps": what advance counts */
    int continuous;    /* 1: advance_to and clock, not advance (KMC) */
    /* Step models: exactly n more units (sweeps), step += n. May queue work (GPU). */
    int (*advance)(carlo_sys *s, uint64_t n);
    /* Continuous models: towards model time t_stop or event count ev_stop, whichever comes
     * first, at most `budget` units of work per call; *reached = 1 once there (or once no
     * event can happen before t_stop). */
    int (*advance_to)(carlo_sys *s, double t_stop, uint64_t ev_stop, uint64_t budget,
                      int *reached);
    void (*clock)(const carlo_sys *s, double *t, uint64_t *events);
    /* Wait for the work the calling thread queued (a GPU system's goes on the thread's own
     * stream); reports late device errors. */
    int (*sync)(carlo_sys *s);
    /* The names observe writes for these options (opt: the model's own, may be NULL), and
     * the values now: replicas x n, in the order of the replicas' controls (temperatures). */
    int (*observables)(carlo_sys *s, const void *opt, carlo_obs_set *out);
    int (*observe)(carlo_sys *s, const void *opt, double *values);
    int (*counts)(carlo_sys *s, carlo_counts *c); /* may be NULL */
    const carlo_control *controls;
    int ncontrols;
    /* A trajectory frame of the configuration; a checkpoint (everything to continue
     * bit-identically); and a new system from a checkpoint on a device. */
    int (*frame)(carlo_sys *s, carlo_frame *f);
    int (*checkpoint)(carlo_sys *s, carlo_frame *f);
    carlo_sys *(*restore)(const carlo_frame *f, carlo_device_kind device);
    /* Optional: frames taken while the run goes on. frame_start adds to f what is known now
     * and starts the copy of the rest (0), or returns 1 (take the frame the plain way);
     * frame_fetch adds the rest once it arrived (1), or returns 0 while it has not (only
     * with wait = 0). One frame at a time. */
    int (*frame_start)(carlo_sys *s, carlo_frame *f);
    int (*frame_fetch)(carlo_sys *s, carlo_frame *f, int wait);
    void (*destroy)(carlo_sys *s);
    /* Optional (GPU systems): how many launch shapes to choose among, and set shape k
     * (0: today's default). Never changes the chain. */
    int (*launch_candidates)(const carlo_sys *s);
    int (*launch_pick)(carlo_sys *s, int k);
} carlo_ops;

const carlo_control *carlo_control_find(const carlo_sys *s, const char *name);
/* Check the range and set: 0, or -1 with "name must be ... (got v)". */
int carlo_control_set(carlo_sys *s, const carlo_control *c, double v);
/* "T > 0", "beta in [0, 177]": the range in words, into buf. */
const char *carlo_control_range(const carlo_control *c, char *buf, size_t size);

/* Models known to this process, for restoring checkpoints by name (carlo_load in C). */
void carlo_ops_register(const carlo_ops *ops);
const carlo_ops *carlo_ops_find(const char *name);

/* ---------- the run driver ---------- */

/* Something to do when the step is a multiple of `every` (exchanges, energy checks). */
typedef struct carlo_hook {
    uint64_t every;
    int (*fn)(carlo_sys *s, void *ctx);
    void *ctx;
} carlo_hook;

typedef struct carlo_run_opts {
    carlo_clock clock;   /* STEP for step models; EVENTS or TIME for continuous ones */
    uint64_t n;          /* STEP, EVENTS: this many more units */
    double time;         /* TIME: this much more model time */
    /* Frames: when the step is a multiple of every (step models) or at every multiple of
     * every_time in model time (continuous ones, from t = 0: a run that starts at t = 0
     * writes the initial configuration first), handed to write (which may take the frame's
     * owned buffers). */
    uint64_t every;
    double every_time;
    int (*write)(void *ctx, carlo_frame *f);
    void *ctx;
    carlo_hook hook[2];
    double walltime, reserve; /* stop before walltime - reserve seconds (stopped_early) */
    int quiet;
    const char *label;        /* progress line; the model's name when NULL */
} carlo_run_opts;

typedef struct carlo_run_result {
    uint64_t done;       /* STEP: units done; EVENTS: events */
    double time_done;    /* continuous models: model time advanced */
    double seconds;
    int stopped_early;   /* walltime */
} carlo_run_result;

/* Run: Ctrl-C polled between chunks (returns -1, "interrupted", every frame due before it
 * written), a progress line on long runs, hooks and frames at absolute step multiples. */
int carlo_run(carlo_sys *s, const carlo_run_opts *o, carlo_run_result *res);
/* ops->observe with the CPU thread count s's chunks run with (carlo_threads_begin's choice,
 * not measured): what the bindings call to measure. */
int carlo_observe(carlo_sys *s, const void *opt, double *values);
/* n more units (or that much time), quiet, nothing else. */
int carlo_advance(carlo_sys *s, uint64_t n);

/* Every system of the list n more units (continuous models: n events), together: GPU systems
 * in flight at once (a host thread each, so each queues on its own stream), CPU systems
 * across threads, one thread each, when there are at least as many as threads (otherwise one
 * after the other, each with its threads; so too when one of them is collective, since MPI
 * is called from the main thread only). Every system ends synchronised. The chains are
 * those of carlo_advance on each. On failure: -1 with the first failing system's message,
 * its index in *failed (may be NULL); the others have done their work. */
int carlo_advance_all(carlo_sys **s, int R, uint64_t n, int *failed);

/* The thread count for the next chunk of s's work (sets OpenMP's; returns the count to
 * restore), and what that chunk cost: how carlo_run picks one or all threads. sweeps: the
 * units are sweeps (else events of a continuous model, whose cost per unit says nothing of
 * the cost of a parallel region). */
int carlo_threads_begin(carlo_sys *s);
void carlo_threads_end(carlo_sys *s, int restore, double units, double seconds, int sweeps);
/* "1 of 2" or "2 of 2": the choice s runs with now, into buf. */
const char *carlo_threads_describe(const carlo_sys *s, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif
