/* lj_cb_kernel.h — the physics of a checkerboard trial move of the Lennard-Jones model (float
 * cell-local coordinates, the two summation orders of a move's energy change, the visiting
 * order of a cell), compiled for the CPU backend (gcc) and the GPU backend (nvcc). The pair
 * potential, the exponential and logarithm and the random-number purposes are lj_kernel.h's. */
#ifndef CARLO_LJ_CB_KERNEL_H
#define CARLO_LJ_CB_KERNEL_H

#include "core/cells_kernel.h"
#include "core/tether_kernel.h"
#include "lj/lj_kernel.h"

/* Particles sit in cells at least rc wide, with float coordinates local to their cell. Every
 * coordinate is a multiple of h, the grid's quantum q (a power of two with every value within
 * two cell widths of 0 exact in float), and so are the cell widths, trial displacements and
 * cell shifts: a neighbour cell's member at b (offset s, each component -w, 0 or w) sits at
 * x = b + s in the active cell's frame, exactly, and differences of coordinates in one frame
 * are exact for every pair closer than rc. A pair's separation therefore does not depend on
 * which cell frame it is computed in, and a cell shift changes no energy at all. Pair terms
 * are computed in float and their differences summed in double.
 *
 * The sum of one trial move (o -> n, midpoint m = o + d/2) runs over the candidates: the
 * members of the neighbour cells in canonical order (cells by lj_neighbour_count's offsets,
 * members in slot order) at their positions x in the active cell's frame, the moved particle
 * left out. Two orders, the model's sum_order (lj_cbgeom.lanes):
 *   near (32 lanes)  a candidate is near when it lies within rc + |d|/2 (plus a margin) of m
 *            (lj_cb_near, lj_cb_near_r2): every candidate within rc of o or n is near. Near
 *            candidate number i goes to lane i % 32. A GPU warp is the 32 lanes (one warp
 *            per active cell).
 *   cell (128 lanes)  candidate k goes to lane k % 128. A GPU block of 128 threads per active
 *            cell.
 * Each lane adds its candidates' differences in increasing order, and the lanes are reduced
 * by the halving tree (lj_tree); the CPU backend runs the lanes in a loop. */

#define LJ_CB_WARP 32 /* the lanes of the near-candidate order */

/* 1 / x correctly rounded, for x at least 1e-18 and below 2^125. On the GPU the fast path
 * of nvcc's IEEE reciprocal (the approximate reciprocal and one Newton step), without the
 * range test that sends other x to its slow path: the same float as the division. */
CARLO_HD float lj_rcp(float x)
{
#ifdef __CUDA_ARCH__
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    const float e = __fmaf_rn(x, r, -1.0f);
    return __fmaf_rn(r, -e, r);
#else
    return 1.0f / x;
#endif
}

/* Float pair energy and virial inside the cutoff (overlaps give inf and are rejected)... A
 * separation below 1e-18 is taken as 1e-18: both terms overflow to inf either way. */
CARLO_HD void lj_pair_f_terms(float r2, float ushift, float *u, float *w)
{
    float ir2 = lj_rcp(r2 > 1e-18f ? r2 : 1e-18f);
    float ir6 = ir2 * ir2 * ir2;
    *u = 4.0f * ir6 * (ir6 - 1.0f) - ushift;
    *w = 24.0f * ir6 * (2.0f * ir6 - 1.0f);
}

/* ... and 0 beyond it. */
CARLO_HD void lj_pair_f(float r2, float rc2, float ushift, float *u, float *w)
{
    if (r2 < rc2) {
        lj_pair_f_terms(r2, ushift, u, w);
    } else {
        *u = 0.0f;
        *w = 0.0f;
    }
}

/* The float geometry of a checkerboard system. */
typedef struct lj_cbgeom {
    int dim, lanes; /* lanes of a move's sum: 32 (near candidates) or 128 (all) */
    float w[3];     /* cell widths (float, as the grid's w) */
    float h[3];     /* the coordinate grid: every coordinate along a is a multiple of h[a] */
    float rc2, ushift;
    double dmax[3]; /* the maximum displacement in units of h[a] (delta / h[a]) */
    float rcm;      /* rc and a margin of 1e-3 (1 + rc): lj_cb_near_r2 */
} lj_cbgeom;

/* The trial displacement's size: dmax on both sides. */
static inline void lj_cb_set_delta(lj_cbgeom *g, double delta)
{
    for (int a = 0; a < 3; a++)
        g->dmax[a] = delta / (double)g->h[a];
}

/* Squared separation of two cell-local positions a and b, b in a neighbour cell offset by s
 * (its components exact, see above). */
CARLO_HD float lj_cb_r2(const float a[3], const float b[3], const float s[3])
{
    float dx = (b[0] - a[0]) + s[0];
    float dy = (b[1] - a[1]) + s[1];
    float dz = (b[2] - a[2]) + s[2];
    return dx * dx + dy * dy + dz * dz;
}

/* Squared separation of a and x in one frame. */
CARLO_HD float lj_cb_r2x(const float a[3], float x, float y, float z)
{
    float dx = x - a[0], dy = y - a[1], dz = z - a[2];
    return dx * dx + dy * dy + dz * dz;
}

/* One candidate at x (the active cell's frame) against the old position o and the trial
 * position n of the moved particle: the exact double differences of the float pair terms,
 * each term kept inside the cutoff only. A candidate beyond the cutoff from both adds
 * 0.0 - 0.0 = +0.0, which leaves any sum unchanged (a sum started at +0.0 is never -0.0: exact
 * cancellation rounds to +0.0), so every lane may add every candidate it is given (no branch). */
CARLO_HD void lj_cb_candidate(const lj_cbgeom *g, const float o[3], const float n[3], float x,
                              float y, float z, double *du, double *dw)
{
    const float r2o = lj_cb_r2x(o, x, y, z), r2n = lj_cb_r2x(n, x, y, z);
    float uo, wo, un, wn;
    lj_pair_f_terms(r2o, g->ushift, &uo, &wo);
    lj_pair_f_terms(r2n, g->ushift, &un, &wn);
    const int ko = r2o < g->rc2, kn = r2n < g->rc2;
    *du = *du + ((double)(kn ? un : 0.0f) - (double)(ko ? uo : 0.0f));
    *dw = *dw + ((double)(kn ? wn : 0.0f) - (double)(ko ? wo : 0.0f));
}

/* The midpoint of a move from o by d. */
CARLO_HD void lj_cb_mid(const float o[3], const float d[3], float m[3])
{
    for (int a = 0; a < 3; a++)
        m[a] = o[a] + 0.5f * d[a];
}

/* The squared near radius of a move by d: rc + |d| / 2 and the margin rcm - rc, which covers
 * every pair within rc of either end by far more than the float rounding of lj_cb_near. */
CARLO_HD float lj_cb_near_r2(const lj_cbgeom *g, const float d[3])
{
    const float r = g->rcm + 0.5f * sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    return r * r;
}

/* Whether the candidate at x is near the move with midpoint m and squared near radius r2 (the
 * squares summed by fused multiply-adds: fewer operations in the GPU's vote; the CPU's SIMD
 * code has them too, cb_near_flags). */
CARLO_HD int lj_cb_near(const float m[3], float x, float y, float z, float r2)
{
    const float dx = x - m[0], dy = y - m[1], dz = z - m[2];
    return fmaf(dx, dx, fmaf(dy, dy, dz * dz)) < r2;
}

/* Trial move k of cell `cell` in sub-sweep `step`: a displacement on the grid (symmetric,
 * |d| <= delta); returns the log of a uniform in [0, 1) (lj_cb_accept). */
CARLO_HD double lj_cb_trial(const lj_cbgeom *g, uint64_t seed, uint64_t step, uint32_t cell,
                            uint32_t k, float d[3])
{
    carlo_u32x4 r = carlo_rng(seed, LJ_PURPOSE_CB_MOVE, step, cell, k);
    for (int a = 0; a < 3; a++)
        d[a] = a < g->dim ? (float)(rint(g->dmax[a] * lj_displacement(r.v[a], 1.0)) * (double)g->h[a])
                          : 0.0f;
    return lj_log((double)r.v[3] * (1.0 / 4294967296.0));
}

/* Metropolis for a checkerboard move, with log u drawn by lj_cb_trial: accept when
 * log u < -beta dU, that is u < exp(-beta dU) (no exponential per move); NaN and +inf are
 * rejected. */
CARLO_HD int lj_cb_accept(double dU, double beta, double logu)
{
    return -beta * dU > logu;
}

/* ---------- the harmonic tether (Einstein crystal, Frenkel-Ladd) ----------
 * beta U_t = lambda sum_i |r_i - r0_i|^2 by the minimum image of the grid's box (m w), sites r0
 * by particle index (the cells' word plane 0), in the frame of the positions: a particle at
 * local u of cell xyz is at xyz w + u + origin, origin following the cell shifts. A move's
 * acceptance takes beta dU + lambda (|n - r0|^2 - |o - r0|^2) (lj_cb_accept_tether); the
 * particle of index 0 (the Einstein molecule's reference) never moves. The distances and the
 * energy change are core/tether_kernel.h's, the sites' offsets uncentred (x w + origin) - r0:
 * everything in double, one order of operations without fused multiply-adds, so CPU and GPU
 * decide alike. */
typedef struct lj_tether {
    double lambda;      /* > 0 (a tether of 0 is never consulted) */
    double origin[3];   /* the grid's corner in the sites' frame, in [0, L) */
    double L[3];        /* the grid's box, m w */
    const double *site; /* N x 3 in [0, L) */
} lj_tether;

/* Metropolis with the tether: accept when log u < -(beta dU + beta dU_t); NaN and +inf
 * rejected. */
CARLO_HD int lj_cb_accept_tether(double dU, double beta, double dT, double logu)
{
    return -(beta * dU + dT) > logu;
}

/* Whether a trial position stays in its cell (moves that leave are rejected). A 2D system's z
 * is 0 and its cells are 1 deep (core/cells.c), so every axis is tested alike, without a
 * branch. */
CARLO_HD int lj_cb_inside(const lj_cbgeom *g, const float n[3])
{
    return (n[0] >= 0.0f) & (n[0] < g->w[0]) & (n[1] >= 0.0f) & (n[1] < g->w[1]) & (n[2] >= 0.0f) &
           (n[2] < g->w[2]);
}

/* The visiting order of the n particles of a cell in one sub-sweep. Up to LJ_CB_KEYED of them
 * (a warp's lanes): particle i draws a key (word i & 3 of draw i >> 2) and goes to the place
 * counted by lj_cb_before, the number of particles with a smaller key or an equal key and a
 * smaller index: a uniform random order, one key per lane on the GPU. More: Fisher-Yates. */
#define LJ_CB_KEYED 32

CARLO_HD uint32_t lj_cb_order_key(uint64_t seed, uint64_t step, uint32_t cell, int i)
{
    return carlo_u32x4_at(carlo_rng(seed, LJ_PURPOSE_CB_ORDER, step, cell, (uint32_t)(i >> 2)), i & 3);
}

/* Whether particle j (key kj) goes before particle i (key ki). */
CARLO_HD int lj_cb_before(uint32_t kj, int j, uint32_t ki, int i)
{
    return kj < ki || (kj == ki && j < i);
}

CARLO_HD void lj_cb_order(uint64_t seed, uint64_t step, uint32_t cell, int n, int *perm)
{
    if (n <= LJ_CB_KEYED) {
        uint32_t key[LJ_CB_KEYED];
        for (int i = 0; i < n; i++)
            key[i] = lj_cb_order_key(seed, step, cell, i);
        for (int i = 0; i < n; i++) {
            int place = 0;
            for (int j = 0; j < n; j++)
                place += lj_cb_before(key[j], j, key[i], i);
            perm[place] = i;
        }
        return;
    }
    for (int i = 0; i < n; i++)
        perm[i] = i;
    carlo_u32x4 r = {{0, 0, 0, 0}};
    for (int i = n - 1, k = 0; i > 0; i--, k++) {
        if ((k & 3) == 0)
            r = carlo_rng(seed, LJ_PURPOSE_CB_ORDER, step, cell, (uint32_t)(k >> 2));
        uint32_t j;
        if (carlo_below_try(carlo_u32x4_at(r, k & 3), (uint32_t)(i + 1), &j))
            j = carlo_below(seed, LJ_PURPOSE_CB_ORDER, step, cell, 0x10000u + (uint32_t)k,
                            (uint32_t)(i + 1));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* Cell c's particles against every other particle, in float pair terms summed in double
 * (each pair is seen from both ends): particles in slot order, neighbours in canonical order. */
CARLO_HD void lj_cb_cell_energy(const carlo_cell_grid *g, const lj_cbgeom *G,
                                const carlo_cell_data *d, int64_t c, double *eu, double *ew)
{
    int xyz[3];
    carlo_cell_coords(g, c, xyz);
    const int nq = lj_neighbour_count(g->dim);
    double su = 0.0, sw = 0.0;
    for (int i = 0; i < (int)d->count[c]; i++) {
        float a[3] = {0, 0, 0};
        for (int k = 0; k < g->dim; k++)
            a[k] = d->pos[carlo_cell_slot(g, c, i, k)];
        double pu = 0.0, pw = 0.0;
        for (int q = 0; q < nq; q++) {
            int off[3] = {q % 3 - 1, (q / 3) % 3 - 1, g->dim == 3 ? q / 9 - 1 : 0};
            float sh[3];
            int64_t cq = carlo_cell_neighbor(g, xyz, off, sh);
            int self = off[0] == 0 && off[1] == 0 && off[2] == 0;
            for (int j = 0; j < (int)d->count[cq]; j++) {
                if (self && j == i)
                    continue;
                float b[3] = {0, 0, 0};
                for (int k = 0; k < g->dim; k++)
                    b[k] = d->pos[carlo_cell_slot(g, cq, j, k)];
                float u, w;
                lj_pair_f(lj_cb_r2(a, b, sh), G->rc2, G->ushift, &u, &w);
                pu += (double)u;
                pw += (double)w;
            }
        }
        su += pu;
        sw += pw;
    }
    *eu = su;
    *ew = sw;
}

#endif
