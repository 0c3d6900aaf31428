/* shape.h — hard convex shapes (polygons, spheropolygons, polyhedra, spheropolyhedra, ellipses,
 * ellipsoids) at k_B T = 1, simulated with checkerboard Metropolis Monte Carlo of translations
 * and rotations (HPMC, Anderson et al. 2016) on the shared cell grid (core/cells.h), in NVT or
 * NPT (isotropic volume moves), on the CPU; and the serial reference chain (one random particle per move) for tests.
 *
 * Particles live in the cells with float coordinates local to their cell, as the hard disks
 * do; each carries its tag (word 0) and its orientation (words 1.., shape_kernel.h). A
 * position is origin + (cell * width + u), wrapped into the box; origin follows the cell
 * shifts. Lengths in the unit of the vertices. Boxes are triclinic (HOOMD's Lx Ly Lz xy xz yz,
 * core/box.h): the cells are cut in the box's skew coordinates, so an orthorhombic box is the
 * special case of zero tilts, computed exactly as before tilts existed. */
#ifndef CARLO_SHAPE_H
#define CARLO_SHAPE_H

#include <stdint.h>

#include "core/box.h"
#include "core/cells.h"
#include "core/frame.h"
#include "core/sys.h"
#include "shape/shape_kernel.h"

#define SHAPE_N_MAX ((int64_t)1 << 28)

/* ---------- shape geometry (host) ---------- */

/* A polygon (dim 2) or polyhedron (dim 3): the convex hull of nv points (nv x 3 doubles, z
 * ignored in 2D), swept by a disk / ball of radius sweep >= 0. The body frame is moved to the
 * hull's centroid (*shift, when not NULL, gets the centroid in the given frame); R, r_in and
 * the volume (area in 2D; the swept volume by Steiner's formula) are computed from the hull.
 * Returns 0, or -1 with a message (too few points, all on a line or plane, more than
 * SHAPE_VMAX). */
int shape_make_poly(shape_def *s, int dim, int nv, const double *v, double sweep, double *volume,
                    double shift[3]);
/* Whether the vertices of a polygon / polyhedron come in pairs v, -v (within 1e-12 of their
 * largest coordinate): if so, each pair is made exactly symmetric (-v copied from the first
 * of the two) and the first of each is listed in s->vs (s->nsym pairs), which halves the
 * support function's search (shape_kernel.h); if not, s->nsym = 0. shape_make_poly calls it. */
void shape_find_pairs(shape_def *s);
/* An ellipse (dim 2, axes[0..1]) or ellipsoid (dim 3). */
int shape_make_ellipsoid(shape_def *s, int dim, const double axes[3], double *volume);

/* ---------- the system ---------- */

typedef struct shape_system {
    CARLO_SYS_HEADER;       /* seed, step (sweeps), device, dead */
    int dim;
    int64_t N;
    shape_def shape;
    double volume1;         /* volume (area) of one particle */
    const char *what;       /* "polygons", "polyhedra", "ellipses", "ellipsoids" */
    carlo_box box;
    carlo_cell_grid grid;
    double origin[3];       /* the grid's corner, in box coordinates from -L/2 */
    uint64_t sweeps;        /* the RNG step of set orders and shifts (serial: of moves) */
    uint64_t substeps;      /* the RNG step of trial moves */
    shape_moves mv;
    int team;               /* GPU launch: lanes per active cell, 1 (one thread) or 2, 4, 8 (a team);
                               0 the backend's default. Never changes the chain (core/sys.h's tuner,
                               sys:launch{}) */
    int capped;             /* GPU launch, 3D teams: 1 their registers bounded for occupancy */
    int serial;             /* 1: the serial reference chain on x / ori */
    double *x;              /* serial: N x 3, box coordinates in [-L/2, L/2) */
    uint32_t *ori;          /* serial: N x 4 orientation words */
    carlo_cell_data cur, spare; /* the cells (GPU: cur is the host copy, fetched on demand) */
    carlo_cell_grid cur_alloc, spare_alloc; /* the grids the host storages were allocated for */
    int npt;                /* 1: NPT, volume moves after each sweep at beta P = pressure */
    double pressure;        /* beta P in the vertices' length unit (1 / length^dim) */
    double dlnV;            /* volume moves: ln V changes by a uniform amount in [-dlnV, dlnV] */
    int volume_moves;       /* volume moves per sweep (NPT) */
    uint64_t vsteps;        /* the RNG step of volume moves */
    uint64_t vcnt[2];       /* volume moves tried, accepted */
    int box_moves;          /* SHAPE_BOX_ISOTROPIC (volume moves), _ANISOTROPIC (length moves) or
                               _TRICLINIC (length and shear moves) */
    double dlnL;            /* length moves: ln L of one axis changes by a uniform amount in [-dlnL, dlnL] */
    double dtilt;           /* shear moves: one tilt factor changes by a uniform amount in [-dtilt, dtilt] */
    uint64_t bsteps;        /* the RNG step of length and shear moves */
    uint64_t lcnt[2];       /* length moves tried, accepted */
    uint64_t tcnt[2];       /* shear moves tried, accepted */
    uint64_t reductions;    /* accepted box moves whose box was lattice-reduced */
    uint64_t cnt[4];        /* translations tried, accepted; rotations tried, accepted (GPU: those
                               counted on the device come on top, shape_counts) */
    struct carlo_split *split; /* decompose = true: this MPI rank's slab of cells (mpi/cell_split.h);
                               NULL: whole */
    uint64_t part[4];       /* split, CPU: the moves of this rank's cells (a GPU's are counted on
                               the device), summed over the ranks by shape_counts on top of cnt */
    const struct shape_backend *be; /* NULL: the CPU */
    void *impl;
} shape_system;

/* The GPU backend (cuda/shape.cu, plugged in by cuda/register.cu; NULL in a CPU build). Cells
 * cross as host carlo_cell_data laid out for s->grid. All return 0, or -1 with the message. */
typedef struct shape_backend {
    int (*create)(shape_system *s);   /* device storage for s->grid, counters at 0 */
    void (*destroy)(shape_system *s);
    int (*upload)(shape_system *s, const carlo_cell_data *h);
    int (*download)(shape_system *s, carlo_cell_data *h);
    int (*subsweep)(shape_system *s, int set, uint64_t step); /* shape_cell_update per active cell */
    int (*shift)(shape_system *s, carlo_cell_shift sh);
    int (*counts)(shape_system *s, uint64_t c[4]);          /* counted on the device so far */
    int (*sync)(shape_system *s);
    /* A box move's trial: the cells scaled by lam (skew coordinates, about the grid's corner)
     * and re-cut into grid ng in the spare storage, then checked with the tilts of mv
     * (shape_cell_overlaps over every cell): *bad = 1 on an overlap or an overflowing cell. A split
     * system's whose other layers are not current (split->full = 0): its own and halo layers
     * re-cut, its own cells checked (the caller adds up the ranks' verdicts). */
    int (*scale_trial)(shape_system *s, const carlo_cell_grid *ng, const double lam[3], shape_moves mv, int *bad);
    int (*scale_commit)(shape_system *s); /* the trial's cells become the cells */
} shape_backend;
extern const shape_backend *shape_gpu_backend;

/* Moves tried and accepted since the system was made: translations [0, 1], rotations [2, 3]
 * (a split system's: summed over the ranks, collectively). */
int shape_counts(shape_system *s, uint64_t c[4]);
/* After the host copy of the cells changed (placing, restore, a re-cut grid): hand it to the
 * device; a split system's is then whole and current on every rank (its layers laid out anew). */
int shape_push(shape_system *s);
/* The host copy brought up to date: from the device (GPU systems), or from every rank (a split
 * system, collectively: the gather of mpi/cell_split.h); nothing otherwise. */
int shape_fetch(shape_system *s);

/* Split s over the MPI ranks (decompose = true, carlo-mpi(7)): each rank sweeps the cell
 * layers of one slab along the last axis and exchanges halo layers after each set and shift
 * (mpi/cell_split.h; a GPU system stages them through the host), the chain that of the whole
 * system bit for bit. A box move that keeps the cut along the split axis is tried on each
 * rank's slab and decided by the sum of their verdicts; everything else (other box moves,
 * observables, frames, checkpoints) gathers the whole grid on every rank first (and a GPU
 * system hands it to its device). With frozen (decompose = "frozen") each slab's first and
 * last layer sit out the sets, which then exchange nothing (the chain is the ranks' own, its
 * distribution the whole system's). Every rank calls it; refused for the serial reference, a
 * tilted box or triclinic box moves, and a grid of too few layers for the ranks. */
int shape_split_on(shape_system *s, int frozen);

typedef enum shape_init {
    SHAPE_INIT_RANDOM = 0,
    SHAPE_INIT_LATTICE = 1, /* hexagonal rows (2D), simple cubic (3D) */
    SHAPE_INIT_GIVEN = 2,
    SHAPE_INIT_BCC = 3,     /* 3D: body-centred cubic, N = 2 n^3 */
    SHAPE_INIT_FCC = 4      /* 3D: face-centred cubic, N = 4 n^3 */
} shape_init;

typedef struct shape_params {
    const shape_def *shape;
    double volume1;
    const char *what;
    int64_t N;
    carlo_box box;
    uint64_t seed;
    shape_init init;
    const double *positions;  /* SHAPE_INIT_GIVEN: N x 3 box coordinates */
    const uint32_t *orients;  /* SHAPE_INIT_GIVEN: N x 4 orientation words */
    double delta, rotate;
    int moves_per_cell;
    int serial;
    carlo_device_kind device;
} shape_params;

/* A system, or NULL with the message set: random (sequential addition with random
 * orientations), lattice (circumspheres on a hexagonal / simple cubic lattice, all at the
 * identity orientation; refused above the density where circumspheres touch) or given
 * positions and orientations (refused with the overlapping pairs named). */
shape_system *shape_create(const shape_params *p);
/* The box of a lattice start of N particles of volume v1 at packing fraction phi. */
void shape_lattice_box(int dim, int64_t N, double v1, double phi, carlo_box *b);
/* n when N = 2 n^3 (a bcc start), else 0. */
int64_t shape_bcc_n(int64_t N);
/* n when N = 4 n^3 (an fcc start), else 0. */
int64_t shape_fcc_n(int64_t N);
void shape_destroy(shape_system *s);
/* A system with its grid planned and storage allocated but no particle placed (restore). */
shape_system *shape_alloc(const shape_params *p);

/* The largest n_M, delta, rotate: the bounds the constructor and the setters check. */
#define SHAPE_MOVES_MAX 4096
#define SHAPE_ROTATE_MAX 3.141592653589793
int shape_set_moves(shape_system *s, double delta, double rotate);

int shape_subsweep(shape_system *s, int set);
int shape_shift_cells(shape_system *s);
int shape_sweep(shape_system *s); /* sets in shuffled order and a cell shift; serial: N moves;
                                     NPT: then volume_moves volume moves */

/* NPT: beta P > 0 makes the system NPT, 0 makes it NVT. */
#define SHAPE_VOLUME_MOVES_MAX 1024
int shape_set_pressure(shape_system *s, double pressure);
/* One isotropic volume move (shape_volume_accept, then the overlap check of the scaled
 * configuration on the grid planned for the new box). */
int shape_volume_move(shape_system *s);

/* What an NPT box move is (the volume_moves of each sweep). */
enum { SHAPE_BOX_ISOTROPIC = 0, SHAPE_BOX_ANISOTROPIC = 1, SHAPE_BOX_TRICLINIC = 2 };
int shape_set_box_moves(shape_system *s, int mode);
/* One length move, or in triclinic mode a length or a shear move (shape_box_accept, then the
 * overlap check of the configuration carried through its fractional coordinates: the cells
 * re-cut and checked on the backend, scale_trial; on the host when the box is reduced). */
int shape_box_move(shape_system *s);
/* Lattice reduction: tilts beyond half a side (|xy Ly| > Lx / 2, |xz Lz| > Lx / 2, |yz Lz| > Ly / 2)
 * brought back by lattice vectors; the same lattice. Returns 1 when a tilt changed. */
int shape_box_reduce(carlo_box *b);

/* Positions (N x 3, box coordinates in [-L/2, L/2), z = 0 in 2D) and orientation words
 * (N x 4) by tag; either may be NULL. */
int shape_state(shape_system *s, double *x, uint32_t *ori);
/* The orientation as numbers: 2D the angle in radians [0, 2 pi), 3D the quaternion (w, x, y, z). */
void shape_orient_values(int dim, const uint32_t o[4], double out[4]);
/* Orientation words from those numbers (the quaternion normalised); -1 when a quaternion is 0. */
int shape_orient_words(int dim, const double in[4], uint32_t o[4]);

/* Overlapping pairs of a configuration (brute force over neighbours within 2R, minimum
 * image; the kernels' test): count, and up to max pairs (0-based tags). */
int shape_overlaps_of(const shape_def *sh, const carlo_box *b, int64_t N, const double *x,
                      const uint32_t *ori, int64_t *count, int64_t *pairs, int64_t max);
int shape_verify(shape_system *s);

/* Compress isotropically to packing fraction phi: sweeps_between sweeps, then the box and every
 * centre scaled by the largest shrink (at most 5%, adapted) that creates no overlap, or, in an
 * orthorhombic box, past the closest pair by up to 0.25% while no pair overlaps deeper than 1%
 * of its separation (on cells planned for that; the sweeps part the overlaps, and the target is
 * left without any). Errors when it jams or max_sweeps (0: no limit) pass, or on Ctrl-C, the box
 * then grown until no pair overlaps. delta is capped at the new cell width. quiet: no progress
 * line. */
int shape_compress(shape_system *s, double phi, uint64_t sweeps_between, uint64_t max_sweeps, int quiet);

/* Tune delta and rotate towards a target acceptance over rounds of sweeps (equilibration only). */
int shape_tune(shape_system *s, double target, int rounds, uint64_t sweeps, double *acc_t,
               double *acc_r);
/* NPT: dlnV towards vol_target as well (*acc_v: the last round's volume acceptance). */
int shape_tune_npt(shape_system *s, double target, double vol_target, int rounds, uint64_t sweeps,
                   double *acc_t, double *acc_r, double *acc_v);
/* The targets and last rounds' acceptances of the box moves (NAN: none tried). */
typedef struct shape_box_tune {
    double volume_target, length_target, shear_target;
    double volume_acc, length_acc, shear_acc;
} shape_box_tune;
int shape_tune_box(shape_system *s, double target, shape_box_tune *bt, int rounds, uint64_t sweeps,
                   double *acc_t, double *acc_r);

/* ---------- observables (shape_observe.c) ---------- */

/* 2D order: the p-atic order of the orientations |<exp(i n phi_j)>| (n = 5 for pentagons), and
 * the bond-orientational order |<exp(i m theta_jk)>| over the pairs of centres closer than rc
 * (m = 6: hexatic; an odd m vanishes, each bond being seen both ways). */
int shape_psi(shape_system *s, int n, int m, double rc, double *orient, double *bond);
/* Pressure from the scale distribution function: beta P = rho (1 + s(0+) / (2 d)), s the
 * density of the smallest relative compression x of the centre separations at which a
 * particle first overlaps a neighbour, fitted on [0, xmax) and extrapolated to 0. */
int shape_pressure_sdf(shape_system *s, double dx, double xmax, int degree, double *P);
/* 3D bond order: Steinhardt's global Q4 and Q6 of the centres (steinhardt.h) with neighbours
 * closer than rc (0: carlo_steinhardt_rc of the density, 1.2 fcc nearest-neighbour distances). */
int shape_steinhardt(shape_system *s, double rc, double *q4, double *q6);
/* The shape's axis in the body frame: the eigenvector of the vertices' gyration tensor (an
 * ellipsoid's diag(a^2, b^2, c^2)) whose eigenvalue lies farthest from their mean — a rod's
 * long axis, a plate's normal; for shapes of cubic symmetry one of the equivalent axes. */
void shape_axis(const shape_def *d, double u[3]);
/* 3D nematic order S (largest eigenvalue of Q = <3/2 u u - 1/2 I> over the particles' axes u,
 * shape_axis rotated) and the director (may be NULL). */
int shape_nematic(shape_system *s, double *S, double director[3]);

/* What observe measures besides phi and rho: the options of sys:observe{} and sys:sample{}
 * (a zeroed block: the SDF pressure with the defaults, no psi, Q4, Q6 or S). */
typedef struct shape_observe_opt {
    int no_pressure;        /* 1: no P */
    int psi;                /* n > 0: psi (orientational, order n) and psi6 (bonds) (2D) */
    int steinhardt;         /* 1: Q4 and Q6 (3D) */
    int nematic;            /* 1: S, the nematic order (3D) */
    double rc;              /* the neighbour cutoff of psi6 and Q4, Q6 (0: 2.4 R in 2D,
                               carlo_steinhardt_rc in 3D) */
    int fit;                /* 1: dx, xmax, degree below; 0: the defaults */
    double dx, xmax;        /* SDF bins of width dx on [0, xmax) (1e-4, 0.02) */
    int degree;             /* the fit's degree (5) */
} shape_observe_opt;
void shape_observe_defaults(shape_observe_opt *o);

/* A 2D configuration as a PNG of size pixels along the longer box side: each shape filled with
 * the hue of its angle times period / 2 pi (period 0: the vertex count, 2 for an ellipse) and
 * outlined, periodic images wrapped (shape_png.c). */
int shape_png(shape_system *s, const char *path, int size, int period);

/* ---------- frames and checkpoints (shape_sys.c) ---------- */

/* HOOMD's shape specification of the shape as JSON (a frame's particles/type_shapes):
 * Polygon, ConvexPolyhedron or Ellipsoid; a malloc'd string, or NULL with the message. */
char *shape_type_json(const shape_def *d);
extern const carlo_ops shape_ops;     /* NVT */
extern const carlo_ops shape_ops_npt; /* NPT: the control "pressure", the volume observable */
int shape_checkpoint(shape_system *s, carlo_frame *f);
shape_system *shape_restore(const carlo_frame *f, carlo_device_kind device);

/* Inside the model's own files (shape.c, shape_npt.c): the cell grid planned for box b (cells
 * at least a circumdiameter wide, a bound on the centres a cell holds; _spread: the bound for
 * centres that overlap nothing once their separations are scaled by 1 / spread, orthorhombic
 * boxes only), the box of record from a grid, a backend failure that marks the system dead
 * (returns -1), and positions with orientations placed into the cells (refused when a pair
 * overlaps; _overlapping: not checked, for a compression on cells planned for its overlaps). */
int shape_plan_grid(carlo_cell_grid *g, const carlo_box *b, const shape_def *s, double v1);
int shape_plan_grid_spread(carlo_cell_grid *g, const carlo_box *b, const shape_def *s, double v1, double spread);
double shape_grid_wmin(const carlo_cell_grid *g); /* the narrowest cell width: delta's bound */
void shape_box_of_grid(shape_system *s, const carlo_cell_grid *g, const carlo_box *b);
int shape_gpu_failed(shape_system *s);
int shape_place(shape_system *s, const double *x, const uint32_t *ori);
int shape_place_overlapping(shape_system *s, const double *x, const uint32_t *ori);

#endif
