/* lj.h — Lennard-Jones particles in the canonical ensemble (NVT Monte Carlo): N particles in a
 * periodic orthorhombic box (3D, or 2D in the xy plane), u(r) = 4 (r^-12 - r^-6) cut at rc,
 * optionally shifted, with analytic tail corrections. epsilon = sigma = k_B = 1; lengths in
 * sigma, energies in epsilon, pressures in epsilon / sigma^3 (sigma^2 in 2D).
 *
 * Mode "decomposition" (Hailat et al. 2013): one trial move at a time, the energy of the moved
 * particle summed over all particles or over its neighbour cells in the fixed order of
 * lj_kernel.h, so the CPU and GPU chains are identical for the same seed.
 * Mode "checkerboard" (the MPMC scheme of Anderson et al. 2013 on the shared cell grid of
 * core/cells.h): cells at least rc wide, one checkerboard set at a time, every active cell
 * moving its particles in random order with moves that leave the cell rejected, sets shuffled,
 * the grid shifted after each sweep; CPU and GPU chains identical here too. */
#ifndef CARLO_LJ_H
#define CARLO_LJ_H

#include <stdint.h>

#include "core/cells.h"
#include "core/device.h"
#include "core/frame.h"
#include "lj/lj_kernel.h"

#define LJ_N_MAX (1 << 28)

typedef enum lj_mode { LJ_DECOMPOSITION = 0, LJ_CHECKERBOARD = 1 } lj_mode;
/* Where a decomposition move sums: over every particle, or over the 27 (9) cells around the
 * old and the trial position (cells at least rc wide, at least 4 per axis). */
typedef enum lj_sum { LJ_SUM_ALL = 0, LJ_SUM_CELLS = 1 } lj_sum;
/* GPU kernel variants for decomposition moves (benchmarks compare them; the chain is the
 * same with every one). */
typedef enum lj_kernel_variant {
    LJ_KERNEL_PERSISTENT = 0, /* one launch runs many moves (one block, or a cooperative grid) */
    LJ_KERNEL_LAUNCH = 1,     /* one launch per move, the last block decides (the paper) */
    LJ_KERNEL_GRAPH = 2,      /* per-move launches replayed from a CUDA graph */
} lj_kernel_variant;

/* Cell lists of the decomposition "cells" sum, in their canonical exchange form: the members
 * of cell 0 in list order, then of cell 1, ... (order[N]) and count[ncell]. The list order is
 * part of the state: moves remove a particle by moving the last member into its slot and
 * append arrivals at the end, identically on both backends. */
typedef struct lj_cell_lists {
    int32_t *order, *count;
} lj_cell_lists;

/* The checkerboard state besides the cells themselves (which the backend holds). */
typedef struct lj_cb {
    carlo_cell_grid grid;  /* m, widths, nmax (grows when a cell fills), naux = 1: the index */
    lj_cbgeom geom;        /* float widths, the coordinate grid h, cutoff; dmax set per run */
    int passes;            /* trial moves per particle per sweep */
    int lanes_auto;        /* lanes chosen by carlo (not given) */
    double U0, W0;         /* energy and virial when the per-cell sums were last zeroed */
} lj_cb;

struct lj_backend;

typedef struct lj_system {
    uint32_t N;
    int dim;
    lj_geom g;            /* box, cutoff, shift; cell grid when sum = cells */
    double rc, T, beta;
    int shift, tail;
    lj_mode mode;
    lj_sum sum;
    int ncell;            /* cells of the grid (sum = cells), else 0 */
    int cell_cap;         /* room per cell list now (grows when a list fills) */
    carlo_device_kind device;
    lj_kernel_variant kernel;
    uint64_t seed;
    uint64_t moves;       /* decomposition trial moves done: the RNG step of the next move */
    uint64_t step;        /* sweeps done (N moves each in decomposition mode) */
    uint64_t samples;     /* Widom samples drawn: the RNG step of the next insertion batch */
    double delta;         /* maximum displacement per coordinate */
    double U, W;          /* running potential energy and virial sum sum_pairs r.F (no tail) */
    uint64_t tried, accepted; /* trial moves since creation */
    double drift;         /* |running - fresh| / |fresh| of the last recomputation */
    double drift_max;     /* largest drift seen */
    uint64_t checks;      /* recomputations done */
    lj_cb cb;             /* mode = checkerboard */
    const struct lj_backend *be;
    void *impl;
    int dead;
} lj_system;

/* A backend: the CPU one in lj_cpu.c, the CUDA one in cuda/lj.cu. All return 0 or -1 with
 * the message set. Positions cross as N x 3 doubles (x, y, z) in [0, L). */
typedef struct lj_backend {
    const char *name;
    int (*create)(lj_system *s);
    void (*destroy)(lj_system *s);
    /* Replace the configuration; cells are the lists in canonical form when sum = cells. */
    int (*upload)(lj_system *s, const double *pos, const lj_cell_lists *cells);
    /* Read it back (cells may be NULL). */
    int (*download)(lj_system *s, double *pos, lj_cell_lists *cells);
    /* n decomposition trial moves numbered s->moves, s->moves + 1, ...: updates s->moves,
     * s->U, s->W, s->tried and s->accepted before returning. */
    int (*moves)(lj_system *s, uint64_t n);
    /* n test-particle insertions with RNG step `sample`: the Boltzmann factor of each
     * (exp(-beta dU), tail included) in out[n]. */
    int (*widom)(lj_system *s, uint32_t n, uint64_t sample, double *out);
    int (*sync)(lj_system *s);
    /* Checkerboard: the cells (host form of grid s->cb.grid) and the per-cell sums of the
     * accepted energy and virial changes. */
    int (*cb_upload)(lj_system *s, const carlo_cell_data *cells, const double *acc_u,
                     const double *acc_w);
    int (*cb_download)(lj_system *s, const carlo_cell_data *cells, double *acc_u, double *acc_w);
    /* n sweeps from sweep s->step: sets in shuffled order, then the cell shift; grows nmax
     * when a shift overfills a cell; updates step, tried, accepted, U and W. */
    int (*cb_sweeps)(lj_system *s, uint64_t n);
    /* The energy and virial of the cells from scratch, per cell by lj_cb_cell_energy
     * (lj_kernel.h) and then in cell order, so that both backends give the same bits. */
    int (*cb_fresh)(lj_system *s, double *U, double *W);
} lj_backend;

extern const lj_backend lj_cpu_backend;
extern const lj_backend *lj_gpu_backend; /* set by cuda/register.cu, else NULL */

typedef enum lj_init { LJ_INIT_FCC = 0, LJ_INIT_RANDOM = 1, LJ_INIT_POSITIONS = 2 } lj_init;

typedef struct lj_params {
    uint32_t N;
    int dim;
    double box[3];        /* Lx, Ly, Lz (Lz ignored in 2D) */
    double rc, T, delta;
    int shift, tail;
    lj_mode mode;
    int sum;              /* -1: choose, else an lj_sum */
    int lanes;            /* checkerboard lanes per active cell: 0 (choose), 32, 64, 128 */
    int passes;           /* checkerboard trial moves per particle per sweep (>= 1) */
    carlo_device_kind device;
    uint64_t seed;
    lj_init init;
    const double *positions; /* LJ_INIT_POSITIONS: N x 3, any periodic image */
} lj_params;

/* Checks every parameter (messages name the key), builds the system and its configuration. */
lj_system *lj_create(const lj_params *p);
void lj_destroy(lj_system *s);

/* Analytic tail corrections (g(r) = 1 beyond rc) at density rho: energy per particle and
 * pressure; 0 when tail is off. */
double lj_tail_energy(const lj_system *s);
double lj_tail_pressure(const lj_system *s);
double lj_density(const lj_system *s);
double lj_widom_tail(const lj_system *s); /* the tail energy one inserted particle adds */
double lj_volume(const lj_system *s);

int lj_set_temperature(lj_system *s, double T);
int lj_set_delta(lj_system *s, double delta);
double lj_delta_max(const lj_system *s);

/* Runs: n trial moves, or sweeps (N moves each). */
int lj_moves(lj_system *s, uint64_t n);

typedef struct lj_run_opts {
    uint64_t sweeps;
    uint64_t every;            /* callback period in sweeps (0: none) */
    int (*callback)(void *ctx, lj_system *s);
    void *ctx;
    uint64_t check_every;      /* recompute the energy every so many sweeps (0: never) */
    double walltime, reserve;
    int quiet;
} lj_run_opts;

typedef struct lj_run_result {
    uint64_t sweeps;
    double seconds;
    int stopped_early;
} lj_run_result;

int lj_run_ex(lj_system *s, const lj_run_opts *o, lj_run_result *res);
int lj_run(lj_system *s, uint64_t sweeps); /* quiet */

/* Move-size tuning (equilibration only): `sweeps` sweeps in chunks, scaling delta after each
 * chunk towards the target acceptance. */
int lj_tune(lj_system *s, uint64_t sweeps, double target);

/* What the system looks like now. */
typedef struct lj_obs {
    double U;        /* potential energy per particle, tail included when on */
    double P;        /* virial pressure rho T + W / (d V), tail included when on */
    double W;        /* the virial sum */
    double acceptance;
} lj_obs;

int lj_observe(lj_system *s, lj_obs *o);

/* From-scratch energy and virial of a configuration (positions N x 3), in an order that does
 * not depend on the thread count. */
int lj_energy_fresh(const lj_system *s, const double *pos, double *U, double *W);
/* Recompute, compare with the running sums (s->drift, s->drift_max: the larger relative
 * difference of energy and virial) and report the energies (and virials when W_fresh). */
int lj_recompute(lj_system *s, double *U_running, double *U_fresh);
int lj_recompute_w(lj_system *s, double *U_fresh, double *W_fresh);

/* Widom: the mean Boltzmann factor of n insertions (mu_ex = -T ln of it). */
int lj_widom(lj_system *s, uint32_t n, double *mean_boltzmann);

/* Pair distances r < rmax histogrammed into bins (counts of unordered pairs). */
int lj_rdf_count(const lj_system *s, const double *pos, double rmax, int bins, uint64_t *count);

int lj_positions(lj_system *s, double *pos);            /* N x 3 */
int lj_cells_canonical(const lj_system *s, const double *pos, lj_cell_lists *out); /* fresh lists */
int lj_cell_lists_alloc(const lj_system *s, lj_cell_lists *c);
void lj_cell_lists_free(lj_cell_lists *c);

/* Frames for trajectories and checkpoints; a system back from a checkpoint frame. */
int lj_frame(lj_system *s, carlo_frame *f);
int lj_checkpoint(lj_system *s, carlo_frame *f);
lj_system *lj_restore(const carlo_frame *f, carlo_device_kind device);

/* Reference implementation for tests: n decomposition moves with the same random draws, done
 * the plain way (every other particle in index order, one running sum, libm exp). Positions
 * N x 3 are updated in place; U and W are running sums. Small and obvious. */
void lj_serial_moves(const lj_geom *g, uint32_t N, double beta, double delta, uint64_t seed,
                     uint64_t first_move, uint64_t n, double *pos, double *U, double *W,
                     uint64_t *accepted);

/* Checkerboard helpers (lj_cb.c), shared by the backends. */
int lj_cb_setup(lj_system *s, const lj_params *p);
int lj_cb_install(lj_system *s, const double *pos);
carlo_cell_shift lj_cb_shift(const lj_system *s, uint64_t sweep);
double lj_cb_total(const double *acc, int64_t ncells); /* sum in cell order */
int lj_cb_cells_alloc(const lj_system *s, carlo_cell_data *d);
/* One active cell's sub-sweep on host storage (the CPU backend; tests): returns accepted. */
uint64_t lj_cb_cell_subsweep(const lj_system *s, const carlo_cell_data *d, int64_t cell,
                             uint64_t step, double *du, double *dw);
int lj_cb_grow(const carlo_cell_grid *g, const carlo_cell_data *src, int nmax,
               carlo_cell_data *dst);
int lj_cb_fresh(const lj_system *s, const carlo_cell_data *d, double *U, double *W);

int lj_cb_positions(lj_system *s, double *pos);
int lj_cb_widom(lj_system *s, uint32_t n, uint64_t sample, double *out);

const char *lj_mode_name(lj_mode m);
const char *lj_sum_name(lj_sum s);
const char *lj_kernel_name(lj_kernel_variant k);

#endif
