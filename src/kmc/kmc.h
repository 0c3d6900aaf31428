/* kmc.h — exact lattice kinetic Monte Carlo (Darkins, Duffy, Ford 2024) on an m x n periodic
 * lattice: the sos_growth crystal-growth model (a site's height grows by one at rate
 * k(n_b) = k2 exp((2 n_b - 4) bond), the paper's phi being our bond) and user models given
 * as a table of events for every neighbourhood configuration. Time in units of 1/k2
 * (sos_growth) or of the user's rates.
 *
 * Three algorithms share one system type and one backend table:
 *   tiled  — the paper's parallel scheme, with mismatched tiles repaired (kmc_kernel.h):
 *            kmc_cpu.c (OpenMP) or cuda/kmc.cu;
 *   serial — the plain waiting-time method: the same random numbers, the same trajectory
 *            bit for bit (the reference of the tests; kmc_serial.c);
 *   bkl    — Bortz-Kalos-Lebowitz with a binary tree of rates: statistically equivalent,
 *            its own random numbers (the paper's CPU baseline; kmc_serial.c).
 * The system is a continuous-time model of the system layer (core/sys.h, kmc_sys.c): runs
 * go through carlo_run with kmc_ops' advance_to. */
#ifndef CARLO_KMC_H
#define CARLO_KMC_H

#include <stdint.h>

#include "core/device.h"
#include "core/frame.h"
#include "core/sys.h"
#include "kmc/kmc_kernel.h"

#define KMC_SIDE_MAX 65536
#define KMC_SITES_MAX ((int64_t)1 << 31)
#define KMC_CONFIGS_MAX (1u << 20) /* user-model table entries */
#define KMC_EVENTS_MAX (1u << 24)
#define KMC_TPB_MAX 8 /* tiles (warps) per GPU block: 256 threads, the step kernel's bound */
#define KMC_TPB_DEFAULT 2
/* sos_growth's bond energy: every rate k2 exp((2 n_b - 4) bond) is finite and > 0 for k2 = 1
 * (other k2 may refuse a little more) */
#define KMC_BOND_MAX 177.0
/* The longest single step sys:try_step takes: this many events per site at the lattice's mean
 * rate (a longer one is no test of anything and could run for hours). */
#define KMC_TRY_EVENTS_MAX 65536.0

typedef enum kmc_algorithm { KMC_TILED = 0, KMC_SERIAL = 1, KMC_BKL = 2 } kmc_algorithm;

struct kmc_backend;

typedef struct kmc_system {
    CARLO_SYS_HEADER;            /* seed, step (tiled steps tried; serial, bkl: events), device,
                                    dead, replicas = 1 */
    int m, n;
    kmc_algorithm algorithm;
    kmc_model model;             /* host copy: table pointers below */
    kmc_config *configs;         /* user models: S^(nbh + 1) */
    kmc_event *events;
    double *event_rates;         /* the rates as given (checkpoints rebuild the table from them) */
    uint32_t nconfigs, nevents;
    double bond, k2;             /* sos_growth */
    double rate_max;             /* the largest total rate of any configuration */
    kmc_geom geom;
    kmc_geom geom_repair;        /* the domains of tiles stepped again (KMC_REPAIR_HALO) */
    kmc_ctrl ctrl;               /* time, counters, the adaptive step (host copy) */
    int tiles_per_block;         /* GPU launch shape, private (sys:launch): never changes the chain */
    /* the run segment under way (kmc_sys.c): its stops, NaN when none */
    double seg_t_stop;
    uint64_t seg_ev_stop;
    /* decompose = true (tiled, CPU or GPU): the tile rows split over the MPI ranks as row slabs, this
     * rank's tile rows tile_row0 .. tile_row0 + tile_rows - 1 (all of them when not split);
     * slab_rows[r] the lattice rows of rank r (gathers). */
    int split;
    int tile_row0, tile_rows;
    int *slab_rows;
    const struct kmc_backend *be;
    void *impl;
} kmc_system;

/* A backend. All return 0, or -1 with the message set. Lattices cross as row-major m x n; on a
 * split system every rank passes and gets the whole lattice (get_state gathers it from every
 * rank, so every rank calls it), and advance and min_tau are collective too. */
typedef struct kmc_backend {
    const char *name;
    int (*create)(kmc_system *s);
    void (*destroy)(kmc_system *s);
    /* tau and draws may be NULL on both calls (bkl has no clocks: get fills nothing) */
    int (*set_state)(kmc_system *s, const int32_t *x, const double *tau, const uint32_t *draws);
    int (*get_state)(kmc_system *s, int32_t *x, double *tau, uint32_t *draws);
    /* Work towards s->ctrl's stop (t_stop, ev_stop, or one TRY step) until s->ctrl.done, at
     * most `budget` steps (tiled) or events (serial, bkl) per call. A step cut short by
     * Ctrl-C is not decided: the state stays, ctrl.done stays 0. */
    int (*advance)(kmc_system *s, uint64_t budget);
    int (*min_tau)(kmc_system *s, double *out); /* the earliest pending event (inf: none) */
    int (*sync)(kmc_system *s);
    /* Optional: check and take a launch shape (NULL: the shape means nothing here). */
    int (*launch)(kmc_system *s, int tiles_per_block);
    /* A split system's own rows with the row above and the row below them (periodic): row-major
     * (8 tile_rows + 2) x n states of the accepted state, this rank's alone (tiled backends). */
    int (*slab_states)(kmc_system *s, int32_t *x);
} kmc_backend;

extern const kmc_backend kmc_cpu_backend;    /* tiled, OpenMP: kmc_cpu.c */
extern const kmc_backend kmc_serial_backend; /* kmc_serial.c */
extern const kmc_backend kmc_bkl_backend;    /* kmc_serial.c */
extern const kmc_backend *kmc_gpu_backend;   /* tiled on the GPU: set by cuda/register.cu */

typedef struct kmc_params {
    int m, n;
    kmc_algorithm algorithm;
    carlo_device_kind device;
    uint64_t seed;
    int kind;                    /* KMC_SOS or KMC_TABLE */
    double bond, k2;             /* KMC_SOS */
    int S, nbh;                  /* KMC_TABLE */
    const double *rates;         /* KMC_TABLE: nevents rates (> 0) ... */
    const int32_t *targets;      /* ... and new states, listed configuration by configuration */
    const uint32_t *counts;      /* events of each of the S^(nbh + 1) configurations */
    uint32_t nevents;
    int halo;                    /* 1..7 */
    int repair;                  /* step mismatched tiles again with halo 7 before rejecting a
                                    step (kmc_kernel.h); nothing to do when halo = 7. Lua's
                                    default is 1; 0 (a zeroed struct) is the paper's scheme */
    int tiles_per_block;         /* 1..KMC_TPB_MAX (0: the default) */
    double grow_initial, grow, shrink; /* the adaptive step's factors (Algorithm 1) */
    const int32_t *initial;      /* m x n row-major states, or NULL for all zero */
    int split;                   /* decompose = true: tile rows over the MPI ranks */
} kmc_params;

/* Validates p (messages name the parameter and its range), builds the rate tables and the
 * backend, and draws every site's first waiting time at t = 0. */
kmc_system *kmc_create(const kmc_params *p);
void kmc_destroy(kmc_system *s);

/* The sos_growth rates k2 exp((2 n_b - 4) bond), n_b = 0..4; -1 with a message when one is
 * not a finite number > 0. */
int kmc_sos_rates(double bond, double k2, double rate[5]);

/* Give the state x (m x n row-major) fresh clocks at time s->ctrl.t: every site's waiting
 * time uses draw index `draw` (0 at creation). */
int kmc_set_states(kmc_system *s, const int32_t *x, uint32_t draw);

/* sos_growth: new bond and k2 from now on. Sites whose total rate changed draw a new waiting
 * time (their next draw), the others keep theirs (the exponential is memoryless); the
 * adaptive step starts again from the earliest clock. */
int kmc_set_sos(kmc_system *s, double bond, double k2);

/* One step of length dt from the accepted state (tiled only): *accepted when every strip
 * matched after the repair's rounds (or force), *matched whether they did, *events the tile events of that step. The
 * adaptive dt is left alone. dt at most KMC_TRY_EVENTS_MAX / (the mean total rate of a site). */
int kmc_try_step(kmc_system *s, double dt, int force, int *accepted, int *matched,
                 uint64_t *events);
/* One step of the adaptive scheme (tiled only): its dt, accepted or rejected, dt adapted. */
int kmc_substep(kmc_system *s, int *accepted, int *matched, uint64_t *events);
/* The GPU launch shape (1..KMC_TPB_MAX tiles per block): benchmarks only, never the chain. */
int kmc_set_launch(kmc_system *s, int tiles_per_block);
/* b^e, or UINT32_MAX when that overflows (the configuration count S^(nbh + 1)). */
uint32_t kmc_ipow(uint32_t b, int e);

/* sos_growth observables from the heights; user models: the population of each state. */
typedef struct kmc_obs {
    double mean, width;          /* mean state (height) and its rms deviation */
    double step_fraction;        /* sos_growth: sites with a higher neighbour (n_b >= 1) */
    int64_t min, max;
} kmc_obs;

int kmc_observe(kmc_system *s, kmc_obs *o, uint64_t *counts /* S entries or NULL */);

/* The system layer's operations (kmc_sys.c): kmc_ops for sos_growth (controls bond and k2),
 * kmc_user_ops for user models (no controls); both named "kmc". */
extern const carlo_ops kmc_ops, kmc_user_ops;
/* s->step from the counters: tiled steps tried (serial, bkl: events). */
void kmc_sync_step(kmc_system *s);
/* -1 with the message; marks a GPU system dead. */
int kmc_fail(kmc_system *s);

/* Frames for trajectories (configuration/step = s->step, log/t, log/events, lattice/height
 * or lattice/state) and checkpoints; a system rebuilt from a checkpoint (device as resolved
 * by the caller). */
int kmc_frame(kmc_system *s, carlo_frame *f);
int kmc_checkpoint(kmc_system *s, carlo_frame *f);
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
