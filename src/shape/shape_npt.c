/* shape_npt.c — the hard shapes' changes of box: compression, NPT (isotropic volume moves,
 * length and shear moves of the box, its lattice reduction) and the tuning of every move size.
 * A proposed box is checked for overlaps with the cells re-cut for it (shape.c's grid plan and
 * placement), on the backend that holds them where it can. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h"
#include "core/sys.h"
#include "mpi/cell_split.h"
#include "shape/shape.h"
#include "shape/shape_plain.h"

/* ---------- compression ---------- */

/* delta capped at the width of the grid's narrowest cell (a box change narrowed it). */
static void cap_delta(shape_system *s)
{
    const double wmin = shape_grid_wmin(&s->grid);
    if ((double)s->mv.delta > wmin)
        s->mv.delta = (float)wmin;
}

/* Re-plan the grid for box nb (storage reallocated when its shape changes; a GPU system's
 * device storage too, its counts kept). The particles are placed afterwards. */
static int set_grid(shape_system *s, const carlo_cell_grid *pg, const carlo_box *tilts)
{
    const carlo_cell_grid g = *pg;
    if (!s->serial && (g.ncells != s->grid.ncells || g.nmax != s->grid.nmax)) {
        if (s->be) {
            uint64_t c[4];
            if (shape_counts(s, c))
                return -1;
            memcpy(s->cnt, c, sizeof c);
            memset(s->part, 0, sizeof s->part);
            s->be->destroy(s);
        }
        s->grid = g;
        if (carlo_cell_data_fit(&s->cur, &s->cur_alloc, &g) || carlo_cell_data_fit(&s->spare, &s->spare_alloc, &g))
            return -1;
        if (s->be && s->be->create(s))
            return shape_gpu_failed(s);
    }
    if (!s->serial &&
        (carlo_cell_data_fit(&s->cur, &s->cur_alloc, &g) || carlo_cell_data_fit(&s->spare, &s->spare_alloc, &g)))
        return -1;
    s->grid = g;
    shape_box_of_grid(s, &g, tilts);
    cap_delta(s);
    return 0;
}

/* ---------- NPT ---------- */

int shape_set_pressure(shape_system *s, double pressure)
{
    if (pressure == 0) {
        s->npt = 0;
        s->ops = &shape_ops;
        return 0;
    }
    if (!(pressure > 0) || !isfinite(pressure))
        return carlo_seterr("pressure must be a number > 0 (beta P in the vertices' length unit^-%d), or "
                            "0 for NVT (got %.17g)", s->dim, pressure);
    s->pressure = pressure;
    s->npt = 1;
    s->ops = &shape_ops_npt;
    return 0;
}

/* Centres x of box ob carried to box nb through their fractional coordinates (the skew
 * coordinates scaled by nb's sides over ob's; in orthorhombic boxes the centres scaled). */
static void carry(const carlo_box *ob, const carlo_box *nb, int dim, int64_t N, const double *x, double *y)
{
    if (carlo_box_orthorhombic(ob) && carlo_box_orthorhombic(nb)) {
        for (int64_t k = 0; k < N; k++)
            for (int a = 0; a < 3; a++)
                y[3 * k + a] = a < dim ? x[3 * k + a] * (nb->L[a] / ob->L[a]) : 0.0;
        return;
    }
    for (int64_t k = 0; k < N; k++) {
        double sk[3];
        carlo_box_pos_to_skew(ob, x + 3 * k, sk);
        for (int a = 0; a < 3; a++)
            sk[a] = a < dim ? sk[a] * (nb->L[a] / ob->L[a]) : 0.0;
        carlo_box_skew_to_pos(nb, sk, y + 3 * k);
    }
}

/* The configuration y, o placed into box nb on grid g (checked for overlaps unless
 * overlaps_ok); refused (1) when a pair overlaps (in floats), the system then placed back from
 * xb into its grid and box before (unchecked when back_ok). 0 placed, -1 error. Ctrl-C is held
 * back meanwhile: a placement broken off would leave the cells empty. */
static int put(shape_system *s, const carlo_cell_grid *g, const carlo_box *nb, const double *y, const uint32_t *o,
               int overlaps_ok, const double *xb, int back_ok)
{
    const sig_atomic_t was = carlo_interrupted;
    carlo_interrupted = 0;
    const carlo_cell_grid og = s->grid;
    const carlo_box ob = s->box;
    int r = 0;
    if (set_grid(s, g, nb) || (overlaps_ok ? shape_place_overlapping(s, y, o) : shape_place(s, y, o))) {
        r = 1;
        if (s->dead || set_grid(s, &og, &ob) || (back_ok ? shape_place_overlapping(s, xb, o) : shape_place(s, xb, o)))
            r = -1;
    }
    carlo_interrupted = carlo_interrupted || was;
    return r;
}

/* The configuration carried into box nb (proposed: its sides those of grid g) and described in
 * box rb (nb itself, or its lattice reduction: the same lattice, so the same configuration),
 * the overlap check of the carried centres, and on success the cells re-gridded (grid g for rb)
 * with the particles placed anew (host side, on every backend: the same chain on the CPU and
 * the GPU). *done: 1 when the move was realized. */
static int scale_box(shape_system *s, const carlo_cell_grid *g, const carlo_box *nb, int *done);

static int realize_box(shape_system *s, const carlo_cell_grid *g, const carlo_box *nb, const carlo_box *rb,
                       int *done)
{
    const int64_t N = s->N;
    *done = 0;
    double *x = carlo_malloc(carlo_mulsize((size_t)N, 3 * sizeof(double)), "positions");
    double *y = x ? carlo_malloc(carlo_mulsize((size_t)N, 3 * sizeof(double)), "positions") : NULL;
    uint32_t *o = y ? carlo_malloc(carlo_mulsize((size_t)N, 4 * sizeof(uint32_t)), "orientations") : NULL;
    int rc = o ? shape_state(s, x, o) : -1;
    int64_t count = 0, pairs[2];
    if (rc == 0) {
        carry(&s->box, nb, s->dim, N, x, y);
        rc = shape_overlaps_of(&s->shape, rb, N, y, o, &count, pairs, 1);
    }
    if (rc == 0 && count == 0) { /* refused in single precision: back */
        const int r = put(s, g, rb, y, o, 0, x, 0);
        *done = r == 0;
        rc = r < 0 ? -1 : 0;
    }
    free(x);
    free(y);
    free(o);
    return rc;
}

/* A move of ln V by a uniform amount in [-dlnV, dlnV], realized on the grid planned for the new
 * box (its widths exact, so the realized volume is the one the acceptance sees, as the hard
 * disks do): first the pressure test, then the cells scaled and re-cut for the new grid on the
 * backend (orientations kept) and checked for overlaps there, as the length moves are
 * (scale_box); the serial reference carries its centres and checks them on the host. */
int shape_volume_move(shape_system *s)
{
    if (carlo_sys_alive(&s->sys))
        return -1;
    carlo_u32x4 r = carlo_rng(s->seed, SHAPE_PURPOSE_VOLUME, s->vsteps++, 0, 0);
    const double dl = (2.0 * carlo_u01(r.v[0], r.v[1]) - 1.0) * s->dlnV;
    s->vcnt[0]++;
    carlo_box nb = carlo_box_scaled(&s->box, exp(dl / s->dim));
    carlo_cell_grid g;
    if (shape_plan_grid(&g, &nb, &s->shape, s->volume1)) /* rejecting would truncate the volume distribution */
        return carlo_seterr("NPT: the box side reached %.6g, which has no cell grid of cells %.6g wide: "
                            "simulate more particles", nb.L[0], 2.0 * s->shape.R);
    carlo_box real = carlo_cells_box(&g);
    real.xy = s->box.xy;
    real.xz = s->box.xz;
    real.yz = s->box.yz;
    const double V = carlo_box_volume(&s->box), Vn = carlo_box_volume(&real);
    if (!shape_volume_accept(s->pressure, s->N, V, Vn, carlo_u01(r.v[2], r.v[3])))
        return 0;
    /* the cells scaled on the backend (the GPU's own, no trip through the host), the serial
     * reference's centres carried on the host */
    int done;
    int rc = s->serial ? realize_box(s, &g, &real, &real, &done) : scale_box(s, &g, &real, &done);
    if (done)
        s->vcnt[1]++;
    return rc;
}

/* The CPU's trial of a box move: the spare storage fit for ng, the cells re-cut into it, every
 * cell checked with the new tilts; a split system's with its slab alone (its own and halo
 * layers re-cut, its own checked) while its other layers are not current, the cut kept. */
static int cpu_scale_trial(shape_system *s, const carlo_cell_grid *ng, const double lam[3], shape_moves mv, int *bad)
{
    *bad = 0;
    if (carlo_cell_data_fit(&s->spare, &s->spare_alloc, ng))
        return -1;
    const int slab = s->split && !s->split->full;
    if (slab ? carlo_split_regrid_host(s->split, &s->grid, &s->cur, ng, &s->spare, lam)
             : carlo_cells_regrid_host(&s->grid, &s->cur, ng, &s->spare, lam)) {
        *bad = 1; /* a cell over its bound on non-overlapping centres */
        return 0;
    }
    const carlo_cell_grid g = *ng;
    const shape_def *sh = &s->shape;
    const float *pos = s->spare.pos;
    const uint32_t *aux = s->spare.aux, *count = s->spare.count;
    int64_t c0 = 0, c1 = g.ncells;
    if (slab)
        carlo_split_cells(s->split, &g, &c0, &c1);
    int over = 0;
#pragma omp parallel for schedule(dynamic, 64) reduction(| : over) if (c1 - c0 > 256)
    for (int64_t c = c0; c < c1; c++) {
        int xyz[3];
        carlo_cell_coords(&g, c, xyz);
        over |= shape_cell_overlaps(sh, &g, pos, aux, count, xyz, &mv);
    }
    *bad = over;
    return 0;
}

/* A box move realized on the cells (no lattice reduction): the cells scaled by the sides' ratios
 * and re-cut into grid g (a pure function of the cells, the same on every backend), checked
 * with the kernels' own overlap test in the new box nb, then made the cells; the grid's origin
 * scales with them, so every centre keeps its fractional coordinates. */
static int scale_box(shape_system *s, const carlo_cell_grid *g, const carlo_box *nb, int *done)
{
    double lam[3] = {1.0, 1.0, 1.0};
    for (int a = 0; a < s->dim; a++)
        lam[a] = nb->L[a] / s->box.L[a];
    shape_moves mv = s->mv;
    mv.skew = !carlo_box_orthorhombic(nb);
    mv.tilt[0] = nb->xy;
    mv.tilt[1] = nb->xz;
    mv.tilt[2] = nb->yz;
    int bad = 0;
    *done = 0;
    /* split: when the cut along the split axis stays, each rank tries its slab and the ranks add
     * up their verdicts; else the whole configuration on every rank (and its device), which
     * then decides alike without talking */
    if (s->split) {
        carlo_split *p = s->split;
        if (carlo_split_fits(p, g))
            return -1;
        const int slab = carlo_split_slab_trial(p, &s->grid, g, lam);
        if (!slab && !p->full && shape_fetch(s))
            return -1;
    }
    if (s->be ? s->be->scale_trial(s, g, lam, mv, &bad) : cpu_scale_trial(s, g, lam, mv, &bad))
        return s->be ? shape_gpu_failed(s) : -1;
    if (s->split) {
        int64_t v = bad;
        if (carlo_split_sum(s->split, &v, 1))
            return -1;
        bad = v != 0;
    }
    if (bad)
        return 0;
    if (!s->be)
        carlo_cell_data_swap(&s->cur, &s->cur_alloc, &s->spare, &s->spare_alloc);
    else if (s->be->scale_commit(s))
        return shape_gpu_failed(s);
    s->grid = *g;
    if (s->split && carlo_split_layout(s->split, g)) /* whole when the whole grid was tried */
        return -1;
    if (s->be && carlo_cell_data_fit(&s->cur, &s->cur_alloc, g)) /* the host copy, fetched on demand */
        return -1;
    shape_box_of_grid(s, g, nb);
    for (int a = 0; a < s->dim; a++)
        s->origin[a] *= lam[a];
    cap_delta(s);
    *done = 1;
    return 0;
}

int shape_box_reduce(carlo_box *b)
{
    int changed = 0;
    if (b->dim == 3 && fabs(b->yz * b->L[2]) > 0.5 * b->L[1]) { /* a3 -= k a2 */
        const double k = rint(b->yz * b->L[2] / b->L[1]);
        b->xz -= k * b->xy * b->L[1] / b->L[2];
        b->yz -= k * b->L[1] / b->L[2];
        changed = 1;
    }
    if (b->dim == 3 && fabs(b->xz * b->L[2]) > 0.5 * b->L[0]) { /* a3 -= k a1 */
        b->xz -= rint(b->xz * b->L[2] / b->L[0]) * b->L[0] / b->L[2];
        changed = 1;
    }
    if (fabs(b->xy * b->L[1]) > 0.5 * b->L[0]) { /* a2 -= k a1 */
        b->xy -= rint(b->xy * b->L[1] / b->L[0]) * b->L[0] / b->L[1];
        changed = 1;
    }
    return changed;
}

/* A length move (ln L of one axis by a uniform amount in [-dlnL, dlnL], tilt factors kept) or,
 * in "triclinic" mode, with equal chance per choice, a shear move (one tilt factor by a uniform
 * amount in [-dtilt, dtilt]); the centres follow through their fractional coordinates. The new
 * box is lattice-reduced before it is cut into cells, so the tilts stay within half a side (the
 * configuration then placed anew from its positions, realize_box; otherwise re-gridded on the
 * backend, scale_box); a
 * box too thin between its faces for two cells along every lattice vector is rejected (the
 * boxes sampled are those that have a cell grid, as HOOMD's box moves keep the minimum image). */
int shape_box_move(shape_system *s)
{
    if (carlo_sys_alive(&s->sys))
        return -1;
    const uint64_t step = s->bsteps++;
    const carlo_u32x4 r0 = carlo_rng(s->seed, SHAPE_PURPOSE_BOX, step, 0, 0);
    const carlo_u32x4 r1 = carlo_rng(s->seed, SHAPE_PURPOSE_BOX, step, 0, 1);
    const int ntilt = s->box_moves == SHAPE_BOX_TRICLINIC ? (s->dim == 2 ? 1 : 3) : 0;
    const int k = (int)carlo_cell_below(r0.v[0], (uint32_t)(s->dim + ntilt), s->seed, SHAPE_PURPOSE_BOX, step, 1,
                                        0);
    const double u = 2.0 * carlo_u01(r0.v[1], r0.v[2]) - 1.0;
    const int shear = k >= s->dim;
    carlo_box nb = s->box;
    if (shear) {
        double *t = k - s->dim == 0 ? &nb.xy : (k - s->dim == 1 ? &nb.xz : &nb.yz);
        *t += u * s->dtilt;
        s->tcnt[0]++;
    } else {
        nb.L[k] *= exp(u * s->dlnL);
        s->lcnt[0]++;
    }
    /* the new box lattice-reduced, cut into cells; its sides of record are the grid's (exact
     * multiples of the widths), with which the reduction is made again */
    carlo_box rb;
    carlo_cell_grid g;
    int reduced = 0;
    for (int pass = 0; pass < 2; pass++) {
        rb = nb;
        reduced = shape_box_reduce(&rb);
        if (shape_plan_grid(&g, &rb, &s->shape, s->volume1))
            return 0; /* too thin for two cells: outside the boxes sampled, rejected */
        const carlo_box gb = carlo_cells_box(&g);
        for (int a = 0; a < s->dim; a++)
            nb.L[a] = rb.L[a] = gb.L[a];
    }
    const double V = carlo_box_volume(&s->box), Vn = carlo_box_volume(&nb);
    if (!shape_box_accept(s->pressure, s->N, V, Vn, shear ? 0 : 1, carlo_u01(r1.v[0], r1.v[1])))
        return 0;
    int done;
    const int rc = reduced ? realize_box(s, &g, &nb, &rb, &done) : scale_box(s, &g, &nb, &done);
    if (done && shear)
        s->tcnt[1]++;
    else if (done)
        s->lcnt[1]++;
    if (done && reduced)
        s->reductions++;
    return rc;
}

int shape_set_box_moves(shape_system *s, int mode)
{
    if (mode != SHAPE_BOX_ISOTROPIC && mode != SHAPE_BOX_ANISOTROPIC && mode != SHAPE_BOX_TRICLINIC)
        return carlo_seterr("box_moves must be \"isotropic\", \"anisotropic\" or \"triclinic\"");
    if (mode == SHAPE_BOX_TRICLINIC && s->split)
        return carlo_seterr("box_moves = \"triclinic\" tilts the box, which decompose = true cannot split");
    if (mode != SHAPE_BOX_ISOTROPIC && s->serial)
        return carlo_seterr("box_moves = \"%s\" needs the cells (not the serial reference)",
                            mode == SHAPE_BOX_ANISOTROPIC ? "anisotropic" : "triclinic");
    s->box_moves = mode;
    return 0;
}

/* The deepest overlap a compression lets a pair reach on its way, as a fraction of the pair's
 * centre separation: every pair overlaps nothing once the separations are scaled by
 * 1 / (1 - COMPRESS_DEPTH), so cells planned for that spread (shape_plan_grid_spread) still
 * bound their counts. A step past the closest pair shrinks the sides by at most
 * COMPRESS_DEPTH / 4, and is taken when the pairs then keep a tenth of that depth in hand
 * (the float cells round the centres by far less). */
#define COMPRESS_DEPTH 0.01

/* Centres x scaled by lam into y, and the overlapping pairs of y in the box scaled by lam. */
static int overlaps_scaled(shape_system *s, const double *x, const uint32_t *o, double lam, double *y,
                           int64_t *count)
{
    const carlo_box nb = carlo_box_scaled(&s->box, lam);
    for (int64_t k = 0; k < 3 * s->N; k++)
        y[k] = x[k] * lam;
    int64_t pairs[2];
    return shape_overlaps_of(&s->shape, &nb, s->N, y, o, count, pairs, 1);
}

/* A compression left with overlapping pairs: the box grown by the least factor (bisected, at
 * most 1 / (1 - COMPRESS_DEPTH)) at which none overlaps, on its usual grid. Ctrl-C is held
 * back meanwhile, so that an interrupted compression still leaves a valid system. */
static int compress_settle(shape_system *s, double *x, double *y, uint32_t *o)
{
    const sig_atomic_t was = carlo_interrupted;
    carlo_interrupted = 0;
    int rc = shape_state(s, x, o);
    double lo = 1.0, hi = 1.0 / (1.0 - COMPRESS_DEPTH);
    int64_t count = 0;
    if (rc == 0)
        rc = overlaps_scaled(s, x, o, 1.0, y, &count);
    if (rc == 0 && count == 0)
        hi = 1.0;
    for (int k = 0; rc == 0 && hi > 1.0 && k < 16; k++) { /* to 1e-7 of the side */
        const double mid = 0.5 * (lo + hi);
        rc = overlaps_scaled(s, x, o, mid, y, &count);
        *(count ? &lo : &hi) = mid;
    }
    int r = 1;
    for (int tries = 0; rc == 0 && r == 1 && tries < 8; tries++) {
        const double lam = hi * (1.0 + 1e-6 * (double)((1 << tries) - 1));
        const carlo_box nb = carlo_box_scaled(&s->box, lam);
        carlo_cell_grid g;
        rc = overlaps_scaled(s, x, o, lam, y, &count);
        if (rc == 0 && (shape_plan_grid(&g, &nb, &s->shape, s->volume1) || count))
            rc = carlo_seterr("compression could not leave a box without overlaps (a bug)");
        if (rc == 0 && (r = put(s, &g, &nb, y, o, 0, x, 1)) < 0)
            rc = -1;
    }
    if (rc == 0 && r)
        rc = carlo_seterr("compression could not leave a box without overlaps (a bug)");
    carlo_interrupted = carlo_interrupted || was;
    return rc;
}

static int retune_moves(shape_system *s, const uint64_t c0[4], const uint64_t c1[4], double target,
                        double *acc_t, double *acc_r);

int shape_compress(shape_system *s, double phi, uint64_t between, uint64_t max_sweeps, int quiet)
{
    if (!(phi > 0) || !(phi < 1) || between < 1)
        return carlo_seterr("compress needs phi in (0, 1) and sweeps_between >= 1 (got %g, %llu)", phi,
                            (unsigned long long)between);
    const int64_t N = s->N;
    double *x = carlo_malloc(carlo_mulsize((size_t)N, 3 * sizeof(double)), "positions");
    double *y = x ? carlo_malloc(carlo_mulsize((size_t)N, 3 * sizeof(double)), "positions") : NULL;
    uint32_t *o = y ? carlo_malloc(carlo_mulsize((size_t)N, 4 * sizeof(uint32_t)), "orientations") : NULL;
    if (!o) {
        free(x);
        free(y);
        return -1;
    }
    /* The shrink that leaves no overlap: at most step (adapted). Past it, in an orthorhombic
     * box and until it stalls: by up to eps a step while every pair keeps within
     * COMPRESS_DEPTH of parting, on cells planned for that; the sweeps part the overlapping
     * pairs (a move is taken only into a place where it overlaps nothing, so no overlap forms
     * or deepens in a sweep). The closest of N pairs comes closer as N grows, so the shrink
     * without overlaps alone makes large systems crawl. */
    const double eps = COMPRESS_DEPTH / 4, spread = 1.0 - COMPRESS_DEPTH;
    int deep_ok = carlo_box_orthorhombic(&s->box);
    int narrow = 0; /* on cells planned for overlaps: pairs may overlap */
    /* Rounds counted in moves a particle (per: sweeps for one): a sweep tries moves_per_cell
     * moves in each cell, which for shapes of a long reach (cells of many particles) is far
     * below one a particle. Stalled: no shrink over `stall` such rounds on narrowed cells
     * (caged pairs); jammed: less than 1e-6 relative gain over `window`, or, without the steps
     * past the closest pair, no shrink while the step halved to 1e-9. */
    const uint64_t stall = 200, window = 1000;
    double step = 0.01, mark_phi = 0.0;
    uint64_t done = 0, shrunk = 0, mark = 0;
    const int active = carlo_compress_active(quiet);
    const double start = carlo_now();
    double last = start;
    enum { RUNNING, DONE, JAMMED, STOPPED, INTERRUPTED, FAILED } why = RUNNING;
    uint64_t c0[4];
    if (shape_counts(s, c0))
        why = FAILED;
    while (why == RUNNING) {
        const double now = (double)N * s->volume1 / carlo_box_volume(&s->box);
        carlo_compress_line(active, now, phi, start, done, &last);
        const int there = now >= phi * (1 - 1e-6);
        if (there && !narrow) {
            why = DONE;
            break;
        }
        if (carlo_interrupted) {
            why = INTERRUPTED;
            break;
        }
        if (max_sweeps && done >= max_sweeps) {
            why = STOPPED;
            break;
        }
        uint64_t c1[4];
        if (carlo_advance(&s->sys, between) || shape_state(s, x, o) || shape_counts(s, c1)) {
            why = carlo_interrupted ? INTERRUPTED : FAILED;
            break;
        }
        done += between;
        /* the move sizes follow the density: retuned towards an acceptance of 0.3 once the
         * particles have tried a move each (overlapping pairs part by moves that are taken) */
        if ((c1[0] - c0[0]) + (c1[2] - c0[2]) >= (uint64_t)N) {
            double acc_t, acc_r;
            if (retune_moves(s, c0, c1, 0.3, &acc_t, &acc_r)) {
                why = FAILED;
                break;
            }
            memcpy(c0, c1, sizeof c0);
        }
        const double lam_goal = there ? 1.0 : pow(now / phi, 1.0 / s->dim);
        const carlo_box ob = s->box;
        int64_t count = 0;
        int r = 1; /* 0 once a shrink (or at the goal, the usual cells) is taken */
        /* without overlaps after it; on narrowed cells only at the goal, as the way back to the
         * usual cells (before it, the steps past the closest pair go on) */
        const double lam = fmax(lam_goal, 1.0 - step);
        if ((!narrow || there) && overlaps_scaled(s, x, o, lam, y, &count)) {
            why = carlo_interrupted ? INTERRUPTED : FAILED;
            break;
        }
        if ((!narrow || there) && count == 0) {
            const carlo_box nb = carlo_box_scaled(&ob, lam);
            carlo_cell_grid g;
            r = shape_plan_grid(&g, &nb, &s->shape, s->volume1) ? 1 : put(s, &g, &nb, y, o, 0, x, narrow);
        }
        if (r == 0) {
            step = fmin(1.5 * step, 0.05);
            narrow = 0;
        } else if (!narrow && lam < 1.0)
            step = fmax(0.5 * step, deep_ok ? eps : 0.0);
        /* past the closest pair */
        const double lam_deep = fmax(lam_goal, 1.0 - eps);
        if (r == 1 && deep_ok && lam_deep < 1.0) {
            if (overlaps_scaled(s, x, o, lam_deep / (1.0 - 0.9 * COMPRESS_DEPTH), y, &count)) {
                why = carlo_interrupted ? INTERRUPTED : FAILED;
                break;
            }
            const carlo_box nb = carlo_box_scaled(&ob, lam_deep);
            carlo_cell_grid g;
            if (shape_plan_grid_spread(&g, &nb, &s->shape, s->volume1, spread))
                deep_ok = 0; /* no grid for it: the shrinks without overlaps only */
            else if (count == 0) {
                for (int64_t k = 0; k < 3 * N; k++)
                    y[k] = x[k] * lam_deep;
                r = put(s, &g, &nb, y, o, 1, x, narrow);
                if (r == 0)
                    narrow = 1;
            }
        }
        if (r < 0) {
            why = FAILED;
            break;
        }
        if (r == 0)
            shrunk = done;
        const double per = fmax(1.0, (double)N / ((double)s->mv.moves * (double)s->grid.ncells));
        if (narrow && (double)(done - shrunk) >= (double)stall * (double)between * per) {
            /* the overlaps stay: part them by growing the box (by less than 1%), and go on
             * without overlaps (slower, but a dense packing then still orders its way on) */
            if (compress_settle(s, x, y, o)) {
                why = FAILED;
                break;
            }
            narrow = deep_ok = 0;
            step = 0.01;
        }
        if ((double)(done - mark) >= (double)window * (double)between * per) {
            const double phi_now = (double)N * s->volume1 / carlo_box_volume(&s->box);
            if (phi_now < mark_phi * (1.0 + 1e-6))
                why = JAMMED;
            mark = done;
            mark_phi = phi_now;
        }
        if (!deep_ok && step < 1e-9)
            why = JAMMED;
    }
    carlo_compress_line_end(active, start);
    int rc = why == DONE ? 0 : -1;
    if (why != DONE && why != FAILED && narrow && compress_settle(s, x, y, o))
        why = FAILED;
    const double now = (double)N * s->volume1 / carlo_box_volume(&s->box);
    if (why == JAMMED)
        carlo_seterr("compress: jammed at phi = %.6f (target %.6f)", now, phi);
    else if (why == STOPPED)
        carlo_seterr("compress: phi = %.6f after %llu sweeps, not yet %.6f (give more max_sweeps)", now,
                     (unsigned long long)done, phi);
    else if (why == INTERRUPTED)
        carlo_seterr("interrupted");
    free(x);
    free(y);
    free(o);
    return rc;
}

/* ---------- tuning ---------- */

static double retune(double size, double acc, double target, double lo, double hi)
{
    double f = acc / target;
    f = f < 0.5 ? 0.5 : (f > 1.5 ? 1.5 : f);
    double v = size * f;
    return v > hi ? hi : (v < lo ? lo : v);
}

/* delta and rotate retuned towards the acceptance target from the moves counted between c0 and
 * c1 (shape_counts: translations tried, taken, rotations tried, taken), delta within the
 * narrowest cell of the grid as it is now; *acc_t, *acc_r: those acceptances, where moves were
 * tried (else left as they are). */
static int retune_moves(shape_system *s, const uint64_t c0[4], const uint64_t c1[4], double target,
                        double *acc_t, double *acc_r)
{
    const uint64_t tt = c1[0] - c0[0], ta = c1[1] - c0[1], rt = c1[2] - c0[2], ra = c1[3] - c0[3];
    double d = s->mv.delta, rot = s->mv.rotate;
    if (tt) {
        *acc_t = (double)ta / (double)tt;
        d = retune(d, *acc_t, target, 1e-6, shape_grid_wmin(&s->grid));
    }
    if (rt) {
        *acc_r = (double)ra / (double)rt;
        rot = retune(rot, *acc_r, target, 1e-6, SHAPE_ROTATE_MAX);
    }
    return shape_set_moves(s, d, rot);
}

int shape_tune(shape_system *s, double target, int rounds, uint64_t sweeps, double *acc_t, double *acc_r)
{
    double acc_v;
    return shape_tune_npt(s, target, 0.3, rounds, sweeps, acc_t, acc_r, &acc_v);
}

int shape_tune_npt(shape_system *s, double target, double vol_target, int rounds, uint64_t sweeps,
                   double *acc_t, double *acc_r, double *acc_v)
{
    shape_box_tune bt = {vol_target, vol_target, vol_target, NAN, NAN, NAN};
    int rc = shape_tune_box(s, target, &bt, rounds, sweeps, acc_t, acc_r);
    *acc_v = bt.volume_acc;
    return rc;
}

/* A box move size retuned from the moves of one round (tried, accepted since c0). */
static void retune_box(double *size, double *acc, const uint64_t c0[2], const uint64_t c1[2], double target)
{
    const uint64_t t = c1[0] - c0[0], a = c1[1] - c0[1];
    if (!t)
        return;
    *acc = (double)a / (double)t;
    *size = retune(*size, *acc, target, 1e-12, 1.0);
}

int shape_tune_box(shape_system *s, double target, shape_box_tune *bt, int rounds, uint64_t sweeps,
                   double *acc_t, double *acc_r)
{
    const double vol_target = bt->volume_target;
    if (!(target > 0 && target < 1) || !(vol_target > 0 && vol_target < 1) ||
        !(bt->length_target > 0 && bt->length_target < 1) || !(bt->shear_target > 0 && bt->shear_target < 1) ||
        rounds < 1 || sweeps < 1)
        return carlo_seterr("tuning needs targets in (0, 1), rounds >= 1 and sweeps >= 1 (got target %g, "
                            "volume target %g, length target %g, shear target %g, %d, %llu)", target,
                            vol_target, bt->length_target, bt->shear_target, rounds, (unsigned long long)sweeps);
    double *acc_v = &bt->volume_acc;
    *acc_v = bt->length_acc = bt->shear_acc = NAN;
    *acc_t = *acc_r = NAN;
    for (int r = 0; r < rounds; r++) {
        uint64_t c0[4], c1[4], v0[2] = {s->vcnt[0], s->vcnt[1]};
        const uint64_t l0[2] = {s->lcnt[0], s->lcnt[1]}, t0[2] = {s->tcnt[0], s->tcnt[1]};
        if (shape_counts(s, c0) || carlo_advance(&s->sys, sweeps) || shape_counts(s, c1))
            return -1;
        const uint64_t vt = s->vcnt[0] - v0[0], va = s->vcnt[1] - v0[1];
        if (s->npt && vt) {
            *acc_v = (double)va / (double)vt;
            s->dlnV = retune(s->dlnV, *acc_v, vol_target, 1e-12, 1.0);
        }
        if (s->npt) {
            retune_box(&s->dlnL, &bt->length_acc, l0, s->lcnt, bt->length_target);
            retune_box(&s->dtilt, &bt->shear_acc, t0, s->tcnt, bt->shear_target);
        }
        if (retune_moves(s, c0, c1, target, acc_t, acc_r)) /* after the round: NPT moves the grid */
            return -1;
    }
    return 0;
}
