/* hard.h — hard disks (2D) and hard spheres (3D) of diameter sigma = 1 at k_B T = 1, simulated
 * with massively parallel checkerboard Metropolis Monte Carlo (MPMC, Anderson et al. 2013;
 * HPMC, Anderson et al. 2016), in NVT or NPT. Lengths in sigma; pressures as
 * P* = beta P sigma^d (the 3D figure of HPMC's Table 1 is beta P v0, v0 = pi/6).
 *
 * The particles live in the cells of a carlo_cell_grid (src/core/cells_kernel.h) with float
 * coordinates local to their cell; a particle's position is origin + (cell * width + u),
 * wrapped into the box, where origin follows the random cell shifts so that positions do not
 * drift. Each particle carries its tag (0..N-1) as word 0, so snapshots list particles in a
 * fixed order. Boxes are triclinic (HOOMD's Lx Ly Lz xy xz yz, core/box.h): the cells are cut
 * in the box's skew coordinates, origin and the cells' coordinates are skew coordinates, and the
 * kernels turn separations into vectors with the tilts (hard_moves.tilt); an orthorhombic box is
 * the case of zero tilts, computed exactly as before tilts existed. */
#ifndef CARLO_HARD_H
#define CARLO_HARD_H

#include <stdint.h>

#include "core/box.h"
#include "core/cells.h"
#include "core/device.h"
#include "core/frame.h"
#include "core/sys.h"
#include "hard/hard_kernel.h"

#define HARD_N_MAX ((int64_t)1 << 31)

/* Pressure estimators: g(r) extrapolation (MPMC eqs. 4-6) and the scale distribution function
 * (HPMC's volume perturbation), both a polynomial fit extrapolated to contact. */
typedef struct hard_pressure_params {
    double gr_dr, gr_width; /* bins of width dr on (1, 1 + width]: paper 1e-4, 0.02 */
    int gr_degree;          /* paper: 5 */
    double sdf_dx, sdf_xmax;
    int sdf_degree;
} hard_pressure_params;

void hard_pressure_defaults(hard_pressure_params *p);

struct hard_backend;

/* How the GPU launches a sub-sweep: private backend state, chosen per dimension from
 * measurements (BENCHMARKS.md). Every choice makes the same decisions from the same floats, so
 * none of them changes the chain; sys:launch{} overrides them for benchmarks only. */
typedef struct hard_launch {
    int block[2];           /* the one-thread kernel's thread block (x, y) */
    int variant;            /* cell update: 0 the active cell read in memory, 1 held in registers
                               (default 1 in 2D, 0 in 3D; the CPU follows it too) */
    int gather;             /* 1: each active cell gathers its neighbours once for its n_M moves;
                               0: every move scans the neighbour cells (CPU too) */
    int team;               /* GPU lanes per active cell: 1 (one thread, hard_cell_update) or a team
                               of 2, 4 or 8 (default 1 in 2D, 4 in 3D) */
} hard_launch;

typedef struct hard_system {
    CARLO_SYS_HEADER;       /* seed, step (sweeps since the system was handed over), device, dead */
    int dim;
    int64_t N;
    carlo_box box;          /* L = m * width of the grid, the tilts as given */
    carlo_cell_grid grid;
    double w_pref;          /* preferred cell width (planning); default: the widest allowed */
    double origin[3];       /* where the grid's corner is, in box coordinates from -L/2 */
    uint64_t sweeps;        /* all sweeps ever: the RNG step of set orders and shifts */
    uint64_t substeps;      /* sub-sweeps ever: the RNG step of trial moves */
    uint64_t vsteps;        /* volume moves ever */
    uint64_t icalls;        /* insertion tests ever (hard_insert_test) */
    hard_moves mv;          /* delta, moves per cell n_M, shuffle */
    int npt;                /* 1: a volume move after every sweep, at the pressure */
    double pressure;        /* the imposed beta P sigma^d (NPT) */
    double dlnV;            /* largest change of ln V per volume move */
    int volume_moves;       /* NPT: volume moves after each sweep (1) */
    double lambda;          /* the tether's strength (beta U = lambda sum |r - r0|^2); 0: off */
    double *sites;          /* the tether's sites, N x 3 box coordinates by tag; NULL: none yet */
    carlo_counts counts;    /* host part: volume moves; translations live in the backend */
    hard_launch launch;
    struct carlo_split *split; /* decompose = true: this MPI rank's slab of cells (hard_mpi.h); NULL: whole */
    const struct hard_backend *be;
    void *impl;
} hard_system;

/* A backend: the CPU one in hard_cpu.c, the CUDA one in cuda/hard.cu. All return 0, or -1 with
 * the message set. Cell data crosses as host carlo_cell_data laid out for s->grid. */
typedef struct hard_backend {
    const char *name;
    int (*create)(hard_system *s);                  /* storage for s->grid; cells empty */
    void (*destroy)(hard_system *s);
    int (*upload)(hard_system *s, const carlo_cell_data *h);
    int (*download)(hard_system *s, carlo_cell_data *h);
    /* One checkerboard set: the update of every active cell with RNG step `step`. */
    int (*subsweep)(hard_system *s, int set, uint64_t step);
    int (*shift)(hard_system *s, carlo_cell_shift sh);
    /* Scale by lam and re-cut into grid ng in the spare storage, then count overlapping pairs
     * there (-1: a cell overflowed, which means overlaps). */
    int (*scale_trial)(hard_system *s, const carlo_cell_grid *ng, const double lam[3],
                       int64_t *overlaps);
    int (*scale_commit)(hard_system *s, const carlo_cell_grid *ng); /* the trial becomes current */
    /* Overlapping pairs now, and the smallest squared pair distance (float, as computed). */
    int (*pair_check)(hard_system *s, int64_t *overlaps, double *r2min);
    /* Histograms of one configuration: gr (sc->gr_bins), sdf (sc->sdf_bins); added to. */
    int (*histograms)(hard_system *s, const hard_scan *sc, uint64_t *gr, uint64_t *sdf);
    int (*translation_counts)(hard_system *s, uint64_t *tried, uint64_t *accepted);
    int (*sync)(hard_system *s);
    /* s->sites changed: take a copy where the subsweeps read them (the GPU's memory). */
    int (*sites)(hard_system *s);
} hard_backend;

extern const hard_backend hard_cpu_backend;
extern const hard_backend *hard_gpu_backend; /* set by cuda/register.cu, else NULL */

/* The kernels' tilts of a system (NULL in an orthorhombic box). */
static inline const float *hard_tilt(const hard_system *s) { return s->mv.skew ? s->mv.tilt : NULL; }
/* mv's skew and tilts for box b (hard_moves.tilt: the reach from the tilts). */
void hard_tilt_of(const carlo_box *b, hard_moves *mv);
/* 0, or -1 with a message naming the tilts a hard-particle system cannot run with. */
int hard_tilt_check(const carlo_box *b);

/* ---------- making systems ---------- */

typedef enum hard_init { HARD_INIT_RANDOM = 0, HARD_INIT_LATTICE = 1, HARD_INIT_POSITIONS = 2 } hard_init;

typedef struct hard_params {
    int dim;
    int64_t N;
    carlo_box box;           /* the target box */
    carlo_device_kind device;
    uint64_t seed;
    hard_init init;
    const double *positions; /* HARD_INIT_POSITIONS: N x 3, box coordinates (any image) */
    double delta;            /* trial move radius (0.16) */
    int moves_per_cell;      /* n_M (4) */
    int shuffle;             /* 1 */
    double w_pref;           /* 0: the widest cells allowed */
    int quiet;               /* no progress line during compression */
    double pressure;         /* > 0: NPT at this beta P sigma^d; 0: NVT */
    double dlnV;             /* 0: 0.1 / N */
} hard_params;

/* Close packing: pi / (2 sqrt 3) in 2D, pi / (3 sqrt 2) in 3D. */
double hard_close_packing(int dim);
double hard_particle_volume(int dim); /* pi/4 or pi/6 */
double hard_phi(const hard_system *s);
double hard_phi_of(int dim, int64_t N, const carlo_box *b);

/* A system: random (sequential addition at low density, then compressed to the box),
 * lattice (hexagonal rows in 2D, fcc in 3D, filling the box exactly) or given positions
 * (refused with the overlapping pairs named). NULL with the message set. */
hard_system *hard_create(const hard_params *p);
void hard_destroy(hard_system *s);

/* An empty system on the grid planned for box (the parts of hard_create that hard_restore
 * shares): cells allocated on the device, move parameters at their defaults, NVT. */
hard_system *hard_alloc(int dim, int64_t N, const carlo_box *box, carlo_device_kind device,
                        uint64_t seed, double w_pref);

/* The lattice a box can hold N particles on: 0, or -1 naming what does not fit. */
int hard_lattice_box(int dim, int64_t N, double phi, carlo_box *out);

/* ---------- running ---------- */

/* The system layer's operations (core/sys.h): runs go through carlo_run (n sweeps per advance),
 * observables through the shared sample. An NVT system has no control; an NPT one has the
 * pressure. hard_set_pressure moves a system between the two. */
extern const carlo_ops hard_ops_nvt, hard_ops_npt;

int hard_subsweep(hard_system *s, int set);  /* one set, as the kernels do it */
int hard_shift_cells(hard_system *s);        /* one random cell shift */
int hard_sweep(hard_system *s);              /* shuffled sets, shift, then a volume move in NPT */
int hard_volume_move(hard_system *s);        /* one NPT volume move at s->pressure */
/* NPT at beta P sigma^d = pressure > 0, or NVT for pressure = 0. */
int hard_set_pressure(hard_system *s, double pressure);

/* The harmonic tether of Einstein crystals (Frenkel-Ladd, the Einstein-molecule variant of
 * Vega & Noya 2007): beta U = lambda sum_i |r_i - r0_i|^2 in sigma, with the particle of tag 0
 * held fixed while lambda > 0. hard_set_lambda turns it on (sites: those set before, or the
 * positions now when none were) or off (lambda = 0: the chain of an untethered system); NVT
 * only. hard_set_sites takes sites x (N x 3, box coordinates; NULL: the positions now),
 * translated so that the reference particle sits on its own site. */
int hard_set_lambda(hard_system *s, double lambda);
int hard_set_sites(hard_system *s, const double *x);
/* sum_i |r_i - r0_i|^2 / N by the minimum image (0 without sites). */
int hard_tether_msd(hard_system *s, double *msd);

/* Inside the model's own files: a failed backend call marks a GPU system dead (its state is
 * no longer known) and returns -1; HARD_ALIVE returns -1 from the caller when s is dead. */
int hard_fail_dead(hard_system *s);
#define HARD_ALIVE(s)                                                              \
    do {                                                                           \
        if (carlo_sys_alive(&(s)->sys))                                            \
            return -1;                                                             \
    } while (0)

/* Free-volume (Widom) insertion: n (1 .. 2^32 - 1) test points uniform in the box, from the
 * stream (seed, INSERT, call, k); *free_points = how many overlap no particle (the kernels'
 * float test). Each call draws new points (s->icalls counts the calls). Ctrl-C stops it. */
int hard_insert_test(hard_system *s, uint64_t n, uint64_t *free_points);

/* NPT: k volume moves after every sweep (1 to 1024). */
int hard_set_volume_moves(hard_system *s, int k);

/* Compress isotropically to packing fraction phi: sweeps of MC moves, each followed by the
 * largest shrink no pair prevents (MPMC Sec. 4) or, in an orthorhombic box, a shrink that lets
 * pairs overlap a little, which the next sweeps part (HOOMD's quick compression); it ends with
 * no overlap. Errors when the packing jams (no progress; the box then grows until no pair
 * overlaps) or phi is not below close packing. */
typedef struct hard_compress_opts {
    double phi;
    uint64_t sweeps_between; /* MC sweeps between two shrinks (1) */
    int quiet;
    uint64_t max_sweeps;     /* 0: no limit besides jamming */
} hard_compress_opts;
int hard_compress(hard_system *s, const hard_compress_opts *o);

/* Tune delta (and dlnV in NPT) towards target acceptances over `rounds` rounds of `sweeps`
 * sweeps: for equilibration only — a move size that follows the chain's history breaks balance.
 * The result: the last round's acceptances, and whether they came within reach of the targets
 * (reached = 0 also when a move size sits at its bound, HARD_DELTA_TUNE_MAX or the dlnV
 * bounds, with the acceptance still on the far side of the target: capped says which). */
#define HARD_DELTA_TUNE_MAX 1.0
typedef struct hard_tune_result {
    double acceptance, volume_acceptance; /* NAN when no such move was tried */
    int reached, volume_reached;
    int capped, volume_capped;           /* -1 at the lower bound, 1 at the upper, else 0 */
} hard_tune_result;
int hard_tune(hard_system *s, double target, double vol_target, int rounds, uint64_t sweeps,
              hard_tune_result *res);

/* Change the box with every particle scaled along (one shrink or stretch, refused when it
 * creates an overlap): returns 1 when done, 0 when refused. */
int hard_scale_to(hard_system *s, const carlo_box *target, int *done);

/* ---------- observing ---------- */

/* Moves tried and accepted since the system was made (translations and volume moves). */
int hard_counts_get(hard_system *s, carlo_counts *out);

/* What observe measures besides phi and rho (and the volume in NPT): the options of
 * sys:observe{} and sys:sample{}; a zeroed block (or NULL) asks for the defaults. */
typedef struct hard_observe_opt {
    int no_pressure;         /* 1: no P_gr, P_sdf, P_diff, P (pressure = false) */
    int psi6;                /* 1: psi6 and psi6_local (2D) */
    double rc;               /* psi6's neighbour cutoff (0: 1.4) */
    int fit;                 /* 1: the fits of pp; 0: hard_pressure_defaults */
    hard_pressure_params pp;
    uint32_t widom;          /* > 0: p_insert from this many test insertions (and mu_ex) */
    int steinhardt;          /* 1: Q4 and Q6 (3D), the default cutoff (core/steinhardt.h) */
} hard_observe_opt;

/* Pressure of the current configuration by both estimators. */
int hard_pressure_now(hard_system *s, const hard_pressure_params *pp, double *P_gr, double *P_sdf);

/* Least-squares polynomial weights: the fitted value at x = 0 is sum_i w[i] y[i]. */
int hard_extrapolation_weights(const double *x, int n, int degree, double *w);

/* Pressures from histograms of `samples` configurations of N particles in volume V
 * (gr: ordered pair counts per bin; sdf: per-particle nearest-neighbour scale-factor counts). */
double hard_pressure_gr(int dim, int64_t N, double V, const hard_pressure_params *pp,
                        const uint64_t *gr, double samples);
double hard_pressure_sdf(int dim, int64_t N, double V, const hard_pressure_params *pp,
                         const uint64_t *sdf, double samples);
int hard_scan_from(const hard_pressure_params *pp, hard_scan *sc);

/* Histograms from plain positions (N x 3 in the box, tilted or not): a reference for tests and
 * for analysing snapshots. Distances in double. */
int hard_histograms_positions(int dim, const carlo_box *b, int64_t N, const double *x,
                              const hard_scan *sc, uint64_t *gr, uint64_t *sdf);

/* Positions by tag: N x 3 in box coordinates [-L/2, L/2), z = 0 in 2D. */
int hard_positions(hard_system *s, double *x);
int hard_positions_f32(hard_system *s, float *x);

/* Overlapping pairs by tag (0-based) as computed by the kernels' float test: count, and up to
 * max pairs into pairs[2 * k]. */
int hard_overlaps(hard_system *s, int64_t *count, int64_t *pairs, int64_t max);
/* Overlapping pairs of plain positions (double, minimum image). */
int hard_overlaps_positions(int dim, const carlo_box *b, int64_t N, const double *x,
                            int64_t *count, int64_t *pairs, int64_t max);

/* Invariants: N particles, each inside its cell, no overlapping pair, tags a permutation. */
int hard_verify(hard_system *s);

/* Hexatic order (2D): neighbours within rc; global |<psi6>| and mean |psi6_j|; per-particle
 * values (N x 2, real and imaginary) when psi is not NULL. */
int hard_psi6(hard_system *s, double rc, double *global, double *local, double *psi);
/* Steinhardt's global Q4 and Q6 of the centres with neighbours closer than rc (spheres;
 * core/steinhardt.h): the positions fetched (from the device too) and handed on. */
int hard_steinhardt(hard_system *s, double rc, double *q4, double *q6);

/* ---------- frames (hard_sys.c) ---------- */

int hard_frame(hard_system *s, carlo_frame *f);
int hard_checkpoint(hard_system *s, carlo_frame *f);
/* The system a checkpoint describes, on the device asked for. */
hard_system *hard_restore(const carlo_frame *f, carlo_device_kind device);

#endif
