/* lj_cb.h — the checkerboard algorithm of the Lennard-Jones model (the MPMC scheme of
 * Anderson et al. 2013 on the shared cell grid of core/cells.h): its system, its backend
 * table (the CPU one in lj_cb_cpu.c, the CUDA one in cuda/lj_cb.cu), the pieces of a sweep
 * both backends share (lj_cb_sweep.c) and the algorithm (lj_cb.c). */
#ifndef CARLO_LJ_CB_H
#define CARLO_LJ_CB_H

#include <stdint.h>

#include "core/cells.h"
#include "lj/lj.h"
#include "lj/lj_cb_kernel.h"

struct lj_cb_backend;

typedef struct lj_cb_system {
    LJ_SYSTEM_HEADER;
    carlo_cell_grid grid;  /* m, widths, nmax (grows when a cell fills), naux = 1: the index */
    lj_cbgeom geom;        /* float widths, the coordinate grid h, cutoff, the sum's lanes */
    int passes;            /* trial moves per particle per sweep */
    unsigned sets_done;    /* bit `set`: the sets of sweep `step` already done by substep */
    double U0, W0;         /* energy and virial when the per-cell sums were last zeroed */
    /* the harmonic tether (lj_cb_kernel.h): on when lambda > 0 (sites are set then) */
    double lambda;
    double *sites;         /* N x 3 in [0, m w), by particle index; NULL: none yet */
    double origin[3];      /* the grid's corner in the sites' frame (moves with the cell
                            * shifts while sites are set; 0 without them) */
    const struct lj_cb_backend *be;
} lj_cb_system;

#define LJ_CB(s) ((lj_cb_system *)(s))

/* A backend. All return 0 or -1 with the message set. */
typedef struct lj_cb_backend {
    const char *name;
    int (*create)(lj_cb_system *s);
    void (*destroy)(lj_cb_system *s);
    /* The cells (host form of grid s->grid) and the per-cell sums of the accepted energy and
     * virial changes. */
    int (*upload)(lj_cb_system *s, const carlo_cell_data *cells, const double *acc_u,
                  const double *acc_w);
    int (*download)(lj_cb_system *s, const carlo_cell_data *cells, double *acc_u, double *acc_w);
    /* n sweeps from sweep s->step: sets in shuffled order, then the cell shift; grows nmax
     * when a shift overfills a cell; updates step, tried, accepted, U and W. */
    int (*sweeps)(lj_cb_system *s, uint64_t n);
    /* The sub-sweep of set `set`, at place `place` of sweep s->step's set order (the random
     * numbers that sweep gives it); updates tried, accepted, U and W, not step. */
    int (*subsweep)(lj_cb_system *s, int set, int place);
    /* The cell shift after sweep s->step (growing nmax when it overfills a cell), step + 1. */
    int (*shift)(lj_cb_system *s);
    /* The energy and virial of the cells from scratch, per cell by lj_cb_cell_energy and then
     * in cell order, so that both backends give the same bits. */
    int (*fresh)(lj_cb_system *s, double *U, double *W);
    int (*sync)(lj_cb_system *s);
    /* s->sites (set or changed) to where the sweeps read them. */
    int (*sites)(lj_cb_system *s);
} lj_cb_backend;

extern const lj_cb_backend lj_cb_cpu_backend;
extern const lj_cb_backend *lj_cb_gpu_backend; /* set by cuda/register.cu, else NULL */

/* The algorithm (lj_cb.c), for the system file. */
lj_system *lj_cb_create(const lj_params *p);
lj_system *lj_cb_restore(const carlo_frame *f, carlo_device_kind device);
int lj_cb_substep(lj_cb_system *s, int set);
/* The order of the 2^dim sets in sweep s->step: substeps in this order are that sweep. */
void lj_cb_set_order(const lj_cb_system *s, int order[8]);
/* N x 3 positions in [0, L) (lj_algo.positions), in the sites' frame when they are set. */
int lj_cb_positions(lj_cb_system *s, double *pos);
/* "near" or "cell": the order of a move's sum (lj_cb_kernel.h). */
const char *lj_cb_order_name(const lj_cb_system *s);

/* The tether (lj_cb_tether.c): the sites (N x 3 positions in the snapshots' frame, [-L/2, L/2);
 * NULL: the positions now), translated so that particle 0 sits on its own; lambda in
 * [0, LJ_LAMBDA_MAX] (switched on without sites: the positions now; with them: re-anchored);
 * the mean squared distance from the sites per particle, particle 0 left out of the sum. */
#define LJ_LAMBDA_MAX 1e7
int lj_cb_set_sites(lj_cb_system *s, const double *sites);
int lj_cb_set_lambda(lj_cb_system *s, double lambda);
int lj_cb_msd_site(lj_cb_system *s, double *msd);
/* The sites in the snapshots' frame (N x dim). */
void lj_cb_sites_out(const lj_cb_system *s, double *out);
/* The tether for the sweeps: NULL when off (lambda = 0 or no sites), else th filled in with the
 * origin now. */
const lj_tether *lj_cb_tether(const lj_cb_system *s, lj_tether *th);
/* Coordinate a of a particle at local u of a cell at x along a, in the sites' frame: (x w +
 * origin) + u, exact (multiples of the grid's quantum), in [0, m w). */
double lj_cb_site_frame(const lj_cb_system *s, int a, int x, float u);
/* The origin after the cell shift sh (when sites are set). */
void lj_cb_origin_shift(const lj_cb_system *s, carlo_cell_shift sh, double origin[3]);

/* ---------- the pieces of a sweep both backends use (lj_cb_sweep.c) ---------- */

static inline int lj_cb_cells_alloc(const lj_cb_system *s, carlo_cell_data *d)
{
    return carlo_cell_data_alloc(&s->grid, d);
}
/* Host storage for the grid, filled with the current cells (positions and counts; no
 * accumulators): freed again, and the system marked failed, when the download fails. */
int lj_cb_fetch_cells(lj_cb_system *s, carlo_cell_data *d);

double lj_cb_total(const double *acc, int64_t ncells); /* sum in cell order */
/* The cell shift after sweep `sweep`. */
carlo_cell_shift lj_cb_shift(const lj_cb_system *s, uint64_t sweep);
/* The particles in the active cells of set `set` (trial moves of a sub-sweep: passes times). */
uint64_t lj_cb_set_members(const carlo_cell_grid *g, const uint32_t *count, int set);
/* One active cell's sub-sweep on host storage (the CPU backend; tests), with the tether th
 * (NULL: none): returns accepted. */
uint64_t lj_cb_cell_subsweep(const lj_cb_system *s, const carlo_cell_data *d, int64_t cell,
                             uint64_t step, const lj_tether *th, double *du, double *dw);
/* The cells of src in storage of nmax slots per cell. */
int lj_cb_grow(const carlo_cell_grid *g, const carlo_cell_data *src, int nmax,
               carlo_cell_data *dst);
/* Energy and virial of host cells from scratch (lj_cb_backend.fresh's sum). */
int lj_cb_fresh(const lj_cb_system *s, const carlo_cell_data *d, double *U, double *W);

#endif
