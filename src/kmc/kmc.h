/* kmc.h — exact lattice kinetic Monte Carlo (Darkins, Duffy, Ford 2024) on an m x n periodic
 * lattice: the sos_growth crystal-growth model (a site's height grows by one at rate
 * k(n_b) = k2 exp((2 n_b - 4) phi)) and user models given as a table of events for every
 * neighbourhood configuration. Time in units of 1/k2 (sos_growth) or of the user's rates.
 *
 * Three algorithms share one system type and one backend table:
 *   tiled  — the paper's parallel scheme (kmc_kernel.h), CPU (OpenMP) or GPU;
 *   serial — the plain waiting-time method: the same random numbers, the same trajectory
 *            bit for bit (the reference of the tests);
 *   bkl    — Bortz-Kalos-Lebowitz with a binary tree of rates: statistically equivalent,
 *            its own random numbers (the paper's CPU baseline). */
#ifndef CARLO_KMC_H
#define CARLO_KMC_H

#include <stdint.h>

#include "core/device.h"
#include "core/frame.h"
#include "kmc/kmc_kernel.h"

#define KMC_SIDE_MAX 65536
#define KMC_SITES_MAX ((int64_t)1 << 31)
#define KMC_CONFIGS_MAX (1u << 20) /* user-model table entries */
#define KMC_EVENTS_MAX (1u << 24)
#define KMC_TPB_MAX 8 /* tiles (warps) per GPU block: 256 threads, the step kernel's bound */

typedef enum kmc_algorithm { KMC_TILED = 0, KMC_SERIAL = 1, KMC_BKL = 2 } kmc_algorithm;

struct kmc_backend;

typedef struct kmc_system {
    int m, n;
    kmc_algorithm algorithm;
    carlo_device_kind device;
    uint64_t seed;
    kmc_model model;             /* host copy: table pointers below */
    kmc_config *configs;         /* user models: S^(nbh + 1) */
    kmc_event *events;
    double *event_rates;         /* the rates as given (checkpoints rebuild the table from them) */
    uint32_t nconfigs, nevents;
    double phi, k2;              /* sos_growth */
    kmc_geom geom;
    kmc_ctrl ctrl;               /* time, counters, the adaptive step (host copy) */
    int tiles_per_block;         /* GPU launch shape (no effect on results) */
    const struct kmc_backend *be;
    void *impl;
    int dead;                    /* a device error left the system unusable */
} kmc_system;

/* A backend. All return 0, or -1 with the message set. Lattices cross as row-major m x n. */
typedef struct kmc_backend {
    const char *name;
    int (*create)(kmc_system *s);
    void (*destroy)(kmc_system *s);
    /* tau and draws may be NULL on both calls (bkl has no clocks: get fills nothing) */
    int (*set_state)(kmc_system *s, const int32_t *x, const double *tau, const uint32_t *draws);
    int (*get_state)(kmc_system *s, int32_t *x, double *tau, uint32_t *draws);
    /* Work towards s->ctrl's stop (t_stop, ev_stop, or one TRY step) until s->ctrl.done, at
     * most `budget` steps (tiled) or events (serial, bkl) per call. */
    int (*advance)(kmc_system *s, uint64_t budget);
    int (*min_tau)(kmc_system *s, double *out); /* the earliest pending event (inf: none) */
    int (*sync)(kmc_system *s);
} kmc_backend;

extern const kmc_backend kmc_cpu_backend;    /* tiled, OpenMP */
extern const kmc_backend kmc_serial_backend; /* kmc_serial.c */
extern const kmc_backend kmc_bkl_backend;    /* kmc_bkl.c */
extern const kmc_backend *kmc_gpu_backend;   /* tiled on the GPU: set by cuda/register.cu */

typedef struct kmc_params {
    int m, n;
    kmc_algorithm algorithm;
    carlo_device_kind device;
    uint64_t seed;
    int kind;                    /* KMC_SOS or KMC_TABLE */
    double phi, k2;              /* KMC_SOS */
    int S, nbh;                  /* KMC_TABLE */
    const double *rates;         /* KMC_TABLE: nevents rates (> 0) ... */
    const int32_t *targets;      /* ... and new states, listed configuration by configuration */
    const uint32_t *counts;      /* events of each of the S^(nbh + 1) configurations */
    uint32_t nevents;
    int halo;                    /* 1..7 */
    int tiles_per_block;         /* 1..32 */
    double alpha_initial, alpha_after, beta;
    const int32_t *initial;      /* m x n row-major states, or NULL for all zero */
} kmc_params;

/* Validates p (messages name the parameter and its range), builds the rate tables and the
 * backend, and draws every site's first waiting time at t = 0. */
kmc_system *kmc_create(const kmc_params *p);
void kmc_destroy(kmc_system *s);

/* The sos_growth rates k2 exp((2 n_b - 4) phi), n_b = 0..4; -1 with a message when one is not
 * a finite number > 0. */
int kmc_sos_rates(double phi, double k2, double rate[5]);

/* Give the state x (m x n row-major) fresh clocks at time s->ctrl.t: every site's waiting
 * time uses draw index `draw` (0 at creation). */
int kmc_set_states(kmc_system *s, const int32_t *x, uint32_t draw);

/* Runs. Stops are absolute: time t_stop and events ev_stop (UINT64_MAX: none). every > 0
 * calls callback at each multiple of `every` in time (trajectory frames); Ctrl-C is polled
 * between chunks (returns -1, "interrupted"). */
typedef struct kmc_run_opts {
    double time;                 /* run this long (0: no time limit) */
    uint64_t events;             /* or until this many more events (0: no event limit) */
    double every;
    int (*callback)(void *ctx, kmc_system *s);
    void *ctx;
    int quiet;
} kmc_run_opts;

typedef struct kmc_run_result {
    uint64_t events, steps, rejected;
    double seconds;
} kmc_run_result;

int kmc_run_ex(kmc_system *s, const kmc_run_opts *o, kmc_run_result *res);

/* One step of length dt from the accepted state (tiled only): *accepted when every strip
 * matched (or force), *matched whether they did, *events the tile events of that step. The
 * adaptive dt is left alone. */
int kmc_try_step(kmc_system *s, double dt, int force, int *accepted, int *matched,
                 uint64_t *events);

/* sos_growth observables from the heights; user models: the population of each state. */
typedef struct kmc_obs {
    double mean, width;          /* mean state (height) and its rms deviation */
    double step_fraction;        /* sos_growth: sites with a higher neighbour (n_b >= 1) */
    int64_t min, max;
} kmc_obs;

int kmc_observe(kmc_system *s, kmc_obs *o, uint64_t *counts /* S entries or NULL */);

/* Frames for trajectories and checkpoints. */
int kmc_frame(kmc_system *s, carlo_frame *f);
int kmc_checkpoint(kmc_system *s, carlo_frame *f);
/* Rebuild from a checkpoint (device as resolved by the caller). */
kmc_system *kmc_restore(const carlo_frame *f, carlo_device_kind device);

/* Row-major <-> tile-major conversions shared by the tiled backends. */
void kmc_to_tiles(const kmc_geom *g, const void *rowmajor, void *tiles, size_t elem);
void kmc_from_tiles(const kmc_geom *g, const void *tiles, void *rowmajor, size_t elem);

/* The earliest clock of each tile (tile-major clocks in, one value per tile out). */
void kmc_tile_minima(const kmc_geom *g, const double *tau_tiles, double *tmin);

/* The domain geometry for a halo (row stride chosen so an event's cells have distinct lanes). */
void kmc_geom_init(kmc_geom *g, int m, int n, int halo, int nbh);

const char *kmc_algorithm_name(kmc_algorithm a);

#endif
