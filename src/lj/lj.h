/* lj.h — Lennard-Jones particles in the canonical ensemble (NVT Monte Carlo): N particles in a
 * periodic orthorhombic box (3D, or 2D in the xy plane), u(r) = 4 (r^-12 - r^-6) cut at rc,
 * optionally shifted, with analytic tail corrections. epsilon = sigma = k_B = 1; lengths in
 * sigma, energies in epsilon, pressures in epsilon / sigma^3 (sigma^2 in 2D).
 *
 * Two algorithms, each in its own files with its own backend table, below the system file
 * (lj_sys.c: the system layer's operations, which reach them through the lj_algo table):
 *   decomposition (lj_dec.h; Hailat et al. 2013): one trial move at a time, the energy of the
 *     moved particle summed over all particles or over its neighbour cells in the fixed order
 *     of lj_kernel.h, so the CPU and GPU chains are identical for the same seed;
 *   checkerboard (lj_cb.h; the MPMC scheme of Anderson et al. 2013 on the shared cell grid of
 *     core/cells.h): cells at least rc wide, one checkerboard set at a time, every active cell
 *     moving its particles in random order with moves that leave the cell rejected, sets
 *     shuffled, the grid shifted after each sweep; CPU and GPU chains identical here too.
 * Both count sweeps in s->step (N trial moves, or one checkerboard sweep, each). */
#ifndef CARLO_LJ_H
#define CARLO_LJ_H

#include <stdint.h>

#include "core/device.h"
#include "core/frame.h"
#include "core/sys.h"
#include "lj/lj_kernel.h"

#define LJ_N_MAX (1 << 28)

typedef enum lj_mode { LJ_DECOMPOSITION = 0, LJ_CHECKERBOARD = 1 } lj_mode;

/* The checkerboard's order of a move's sum (lj_cb_kernel.h), named by its lanes: near
 * candidates on 32 lanes, or every candidate of the neighbour cells on 128. */
#define LJ_ORDER_NEAR 32
#define LJ_ORDER_CELL 128

struct lj_algo;

/* What both algorithms' systems hold, first in each (LJ_SYSTEM_HEADER). */
#define LJ_SYSTEM_FIELDS                                                                        \
    CARLO_SYS_HEADER;         /* seed, step (sweeps done), device, dead */                      \
    uint32_t N;                                                                                 \
    int dim;                                                                                    \
    lj_geom g;                /* box, cutoff, shift (decomposition: its cell grid too) */       \
    double rc, T, beta;                                                                         \
    int shift, tail;                                                                            \
    int quiet;                /* the constructor's quiet (tune's warnings) */                   \
    lj_mode mode;                                                                               \
    const struct lj_algo *algo;                                                                 \
    void *impl;               /* the backend's own state */                                     \
    uint64_t samples;         /* Widom samples drawn: the RNG step of the next batch */         \
    double delta;             /* maximum displacement per coordinate */                         \
    double U, W;              /* running potential energy and virial sum_pairs r.F (no tail) */ \
    uint64_t tried, accepted; /* trial moves since creation */                                  \
    double drift;             /* |running - fresh| / |fresh| of the last recomputation */       \
    double drift_max;         /* the largest drift seen */                                      \
    uint64_t checks;          /* recomputations done */

typedef struct lj_system {
    LJ_SYSTEM_FIELDS
} lj_system;

/* The head of an algorithm's system: the common part as `lj`, and its fields by name. */
#define LJ_SYSTEM_HEADER                                                                        \
    union {                                                                                     \
        lj_system lj;                                                                           \
        struct {                                                                                \
            LJ_SYSTEM_FIELDS                                                                    \
        };                                                                                      \
    }

/* What an algorithm does for the system file; all return 0 or -1 with the message set. */
typedef struct lj_algo {
    const char *name; /* "decomposition" */
    /* n sweeps from s->step: step += n; U, W, tried, accepted follow (the GPU may queue). */
    int (*sweeps)(lj_system *s, uint64_t n);
    int (*sync)(lj_system *s);
    int (*positions)(lj_system *s, double *pos); /* N x 3 in [0, L), z = 0 in 2D */
    /* Energy and virial from scratch in the algorithm's own pair arithmetic. */
    int (*fresh)(lj_system *s, double *U, double *W);
    /* n test-particle insertions of RNG step `sample`: exp(-beta dU) of each in out. */
    int (*widom)(lj_system *s, uint32_t n, uint64_t sample, double *out);
    double (*delta_max)(const lj_system *s);
    int (*tune_chunk)(lj_system *s); /* the trial moves between two tuning steps */
    int (*checkpoint)(lj_system *s, carlo_frame *f); /* everything (lj_checkpoint_head first) */
    void (*destroy)(lj_system *s);
} lj_algo;

typedef enum lj_init { LJ_INIT_FCC = 0, LJ_INIT_RANDOM = 1, LJ_INIT_POSITIONS = 2 } lj_init;

typedef struct lj_params {
    uint32_t N;
    int dim;
    double box[3];        /* Lx, Ly, Lz (Lz ignored in 2D) */
    double rc, T, delta;
    int shift, tail, quiet;
    lj_mode mode;
    int sum;              /* decomposition: -1 (choose), else an lj_sum (lj_dec.h) */
    int order;            /* checkerboard: 0 (by the system's size), LJ_ORDER_NEAR or _CELL */
    int passes;           /* checkerboard trial moves per particle per sweep (>= 1) */
    carlo_device_kind device;
    uint64_t seed;
    uint64_t step;        /* the step to start from (a snapshot's) */
    lj_init init;
    const double *positions; /* LJ_INIT_POSITIONS: N x 3 in [-L/2, L/2), any periodic image */
} lj_params;

/* ---------- the system (lj_sys.c) ---------- */

/* Checks every parameter (messages name the key), builds the system and its configuration. */
lj_system *lj_create(const lj_params *p);
void lj_destroy(lj_system *s);

/* The system layer's operations (core/sys.h): runs go through carlo_run, with the periodic
 * energy check as a hook (lj_check_hook). */
extern const carlo_ops lj_ops;
int lj_check_hook(carlo_sys *s, void *ctx);
int lj_run(lj_system *s, uint64_t sweeps); /* n sweeps, quiet, no hooks */
/* Decomposition only: n single trial moves (the step follows: moves / N). */
int lj_trial_moves(lj_system *s, uint64_t n);
/* Checkerboard only: the sub-sweep of set `set` of the sweep under way (lj_cb.h). */
int lj_substep(lj_system *s, int set);

int lj_set_temperature(lj_system *s, double T);
/* The harmonic tether of Frenkel-Ladd runs (checkerboard only; lj_cb.h): lambda in [0, 1e7]
 * (0 in decomposition mode), and the sites (N x 3 in [-L/2, L/2); NULL: the positions now). */
int lj_set_lambda(lj_system *s, double lambda);
int lj_set_sites(lj_system *s, const double *sites);
int lj_set_delta(lj_system *s, double delta);
double lj_delta_max(const lj_system *s);

/* Move-size tuning (equilibration only): `chunks` tuning steps (a sweep each; decomposition:
 * max(200, N) trial moves), delta scaled after each towards the target acceptance within
 * [1e-6, delta_max]. *reached = 0 when delta ends at a bound that keeps the acceptance from
 * the target (moves too easy at delta_max, too hard at the floor). */
int lj_tune(lj_system *s, uint64_t chunks, double target, int *reached);

/* What the system looks like now. */
typedef struct lj_obs {
    double U;        /* potential energy per particle, tail included when on */
    double P;        /* virial pressure rho T + W / (d V), tail included when on */
    double W;        /* the virial sum */
    double acceptance;
} lj_obs;

int lj_observe(lj_system *s, lj_obs *o);

/* The options of the observe operation (Lua: observe and sample's widom = n, rdf = ...): with
 * widom > 0 a Boltzmann factor of that many insertions joins U and P (and mu_ex derives from
 * it); with rdf, every observation adds its pair distances to the histogram. */
typedef struct lj_rdf_acc {
    int bins;
    double rmax;
    double frames;       /* configurations added */
    uint64_t *count;     /* bins (and as many more: scratch) */
    double *pos;         /* N x 3 scratch */
} lj_rdf_acc;
typedef struct lj_observe_opt {
    uint32_t widom;
    lj_rdf_acc *rdf;     /* NULL: none */
} lj_observe_opt;

/* Recompute, compare with the running sums (s->drift, s->drift_max: the larger relative
 * difference of energy and virial) and report the energies (and virials when W_fresh). */
int lj_recompute(lj_system *s, double *U_running, double *U_fresh);
int lj_recompute_w(lj_system *s, double *U_fresh, double *W_fresh);

/* Widom: the mean Boltzmann factor of n insertions (mu_ex = -T ln of it). */
int lj_widom(lj_system *s, uint32_t n, double *mean_boltzmann);

int lj_positions(lj_system *s, double *pos); /* N x 3 */

/* Frames for trajectories and checkpoints; a system back from a checkpoint frame. */
int lj_frame(lj_system *s, carlo_frame *f);
int lj_checkpoint(lj_system *s, carlo_frame *f);
lj_system *lj_restore(const carlo_frame *f, carlo_device_kind device);

/* ---------- shared by both algorithms (lj.c) ---------- */

const char *lj_mode_name(lj_mode m);

/* Analytic tail corrections (g(r) = 1 beyond rc) at density rho: energy per particle and
 * pressure; 0 when tail is off. */
double lj_tail_energy(const lj_system *s);
double lj_tail_pressure(const lj_system *s);
double lj_density(const lj_system *s);
double lj_widom_tail(const lj_system *s); /* the tail energy one inserted particle adds */
double lj_volume(const lj_system *s);
double lj_min_box(const lj_system *s);

/* The parameters every algorithm checks, and the common part of a new system from them. */
int lj_check_params(const lj_params *p);
void lj_setup(lj_system *s, const lj_params *p, const lj_algo *algo);
/* The initial configuration p->init asks for: N x 3 positions in [0, L). */
int lj_initial_positions(const lj_system *s, const lj_params *p, double *pos);
/* -1, marking a GPU system dead (a device error). */
int lj_fail(lj_system *s);

/* From-scratch energy and virial of a configuration (positions N x 3), in an order that does
 * not depend on the thread count. */
int lj_energy_fresh(const lj_system *s, const double *pos, double *U, double *W);

/* Pair distances r < rmax histogrammed into bins (counts of unordered pairs). */
int lj_rdf_count(const lj_system *s, const double *pos, double rmax, int bins, uint64_t *count);

/* Checkpoints: the chunks every algorithm writes first (carlo/model, configuration/step,
 * carlo/seed, lj/shape, lj/params, lj/counters) with the algorithm's entries given; and the
 * parameters and counters read back from them. */
typedef struct lj_head {
    lj_params p;
    int32_t sum, kernel;   /* lj/shape's decomposition entries */
    double U, W;           /* lj/params' running sums (checkerboard: at the last zeroing) */
    double drift, drift_max;
    uint64_t moves, step, samples, tried, accepted; /* lj/counters */
} lj_head;
int lj_checkpoint_head(lj_system *s, carlo_frame *f, int32_t sum, int32_t kernel, uint64_t moves,
                       double U, double W);
int lj_restore_head(const carlo_frame *f, carlo_device_kind device, lj_head *h);
void lj_restore_counters(lj_system *s, const lj_head *h);

/* Reference implementation for tests: n decomposition moves with the same random draws, done
 * the plain way (every other particle in index order, one running sum, libm exp). Positions
 * N x 3 are updated in place; U and W are running sums. Small and obvious. */
void lj_serial_moves(const lj_geom *g, uint32_t N, double beta, double delta, uint64_t seed,
                     uint64_t first_move, uint64_t n, double *pos, double *U, double *W,
                     uint64_t *accepted);

#endif
