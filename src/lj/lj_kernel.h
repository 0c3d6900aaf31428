/* lj_kernel.h — the physics of a Lennard-Jones trial move, written once and compiled for the
 * CPU backend (gcc) and the GPU backend (nvcc). Every formula that decides acceptance lives
 * here: the pair potential, the minimum image, the trial move drawn from Philox, the
 * exponential of the Metropolis rule and the fixed summation order of a move's energy.
 *
 * Conventions: u(r) = 4 (r^-12 - r^-6) - u_shift for r < rc, 0 beyond; epsilon = sigma =
 * k_B = 1. Positions are doubles in [0, L) per axis; 2D systems keep z = 0. Only +, -, *, /,
 * floor and ldexp are used (all exactly rounded in IEEE 754, and no FMA contraction is
 * allowed by the build), so both compilers produce the same bits.
 *
 * The canonical sum (Hailat et al. 2013, Sec. 5.5-5.8, made deterministic): the candidates of
 * a sum (particles 0..N-1, or the members of the 27 neighbour cells in a fixed order) are cut
 * into tiles of LJ_LANES * C consecutive candidates; candidate k of a tile goes to lane
 * k % LJ_LANES, each lane adds its candidates in increasing k, the lanes of a tile are reduced
 * by a halving tree (lane t += lane t + s, s = LJ_LANES/2 ... 1), and the tile sums by the same
 * tree over the next power of two (missing tiles are 0). A GPU block of LJ_LANES threads is
 * one tile; the CPU backend runs the same lanes in a loop.
 *
 * The checkerboard's float physics (cell-local coordinates, its two sum orders, the visiting
 * order of a cell) is lj_cb_kernel.h, on top of this file; the random-number purposes of both
 * algorithms are registered here. */
#ifndef CARLO_LJ_KERNEL_H
#define CARLO_LJ_KERNEL_H

#include <math.h>
#include <stdint.h>

#include "core/cells_kernel.h"
#include "core/rng.h"

#define LJ_PURPOSE_MOVE   0x30u /* decomposition trial moves: step = move counter */
#define LJ_PURPOSE_RETRY  0x31u /* the astronomically rare re-draw of a particle index */
#define LJ_PURPOSE_WIDOM  0x32u /* test-particle insertions: step = sample counter */
#define LJ_PURPOSE_INIT   0x33u /* random initial configuration */
#define LJ_PURPOSE_CB_SETS  0x34u /* checkerboard: the order of the sets in a sweep */
#define LJ_PURPOSE_CB_MOVE  0x35u /* checkerboard trial moves: step = 8 sweep + set position */
#define LJ_PURPOSE_CB_ORDER 0x36u /* checkerboard: the order of the particles in a cell */
#define LJ_PURPOSE_CB_SHIFT 0x37u /* checkerboard: the cell shift after a sweep */

#define LJ_LANES 128     /* lanes of one tile (threads of a GPU block) */
#define LJ_TILES_MAX 256 /* the all-particle sum uses at most this many tiles */
#define LJ_NEIGH_MAX 27  /* neighbour cells of a cell, itself included */

/* Geometry and potential, identical on both sides (computed once on the host). */
typedef struct lj_geom {
    double L[3], half[3]; /* box lengths and halves; 2D: L[2] = 1, z = 0 */
    double w[3];          /* cell widths (decomposition cells: >= rc) */
    int n[3];             /* cells per axis (1 along z in 2D) */
    int dim;
    double rc2, ushift;   /* rc^2; u(rc) when shifted, else 0 */
} lj_geom;

/* One of the d coordinates' minimum image (|d| < L on entry). */
CARLO_HD double lj_image(double d, double L, double half)
{
    if (d > half)
        return d - L;
    if (d < -half)
        return d + L;
    return d;
}

/* Back into [0, L) after a displacement smaller than L; the second test catches x + L
 * rounding up to L. */
CARLO_HD double lj_wrap(double x, double L)
{
    if (x < 0.0)
        x += L;
    if (x >= L)
        x -= L;
    return x;
}

CARLO_HD double lj_r2(const lj_geom *g, double ax, double ay, double az, double bx, double by,
                      double bz)
{
    double dx = lj_image(bx - ax, g->L[0], g->half[0]);
    double dy = lj_image(by - ay, g->L[1], g->half[1]);
    double dz = lj_image(bz - az, g->L[2], g->half[2]);
    return dx * dx + dy * dy + dz * dz;
}

/* Pair energy u and virial w = -r u'(r) = 24 (2 r^-12 - r^-6) at squared distance r2, inside
 * the cutoff. r2 = 0 gives NaN and tiny r2 gives inf: such moves are always rejected. */
CARLO_HD void lj_pair_terms(double r2, double ushift, double *u, double *w)
{
    double ir2 = 1.0 / r2;
    double ir6 = ir2 * ir2 * ir2;
    *u = 4.0 * ir6 * (ir6 - 1.0) - ushift;
    *w = 24.0 * ir6 * (2.0 * ir6 - 1.0);
}

/* ... and 0 beyond it (r2 >= rc2). */
CARLO_HD void lj_pair(double r2, double rc2, double ushift, double *u, double *w)
{
    if (r2 < rc2) {
        lj_pair_terms(r2, ushift, u, w);
    } else {
        *u = 0.0;
        *w = 0.0;
    }
}

/* c[0] x^(n-1) + c[1] x^(n-2) + ... + c[n-1] by Horner's rule: n - 1 multiplications and
 * additions in that order (n a constant where it is used: unrolled, c in registers). */
CARLO_HD double lj_horner(const double *c, int n, double x)
{
    double p = c[0];
    for (int i = 1; i < n; i++)
        p = p * x + c[i];
    return p;
}

/* exp(x) to about 1 ulp from +, -, *, floor and ldexp only, so host and device agree bit
 * for bit (libm and CUDA differ in the last bit). Returns 0 for x <= -700 and NaN. */
CARLO_HD double lj_exp(double x)
{
    if (!(x > -700.0))
        return 0.0;
    if (x > 700.0)
        x = 700.0;
    const double ln2_hi = 6.93147180369123816490e-01; /* 32 trailing zero bits: k * ln2_hi exact */
    const double ln2_lo = 1.90821492927058770002e-10;
    double k = floor(x * 1.44269504088896338700e+00 + 0.5);
    double r = (x - k * ln2_hi) - k * ln2_lo; /* |r| <= 0.35 */
    /* Taylor series to r^13: truncation below 1e-17 relative */
    const double c[14] = {1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
                          1.0 / 362880.0,     1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,
                          1.0 / 120.0,        1.0 / 24.0,        1.0 / 6.0,        0.5,
                          1.0,                1.0};
    return ldexp(lj_horner(c, 14, r), (int)k);
}

/* log(u) for u in (0, 1] to about 1 ulp from +, -, *, / and frexp only (host and device
 * agree bit for bit); -inf for u <= 0 and NaN. */
CARLO_HD double lj_log(double u)
{
    if (!(u > 0.0))
        return -HUGE_VAL;
    int e;
    double f = frexp(u, &e); /* u = f 2^e, f in [1/2, 1) */
    if (f < 0.70710678118654752440) {
        f = 2.0 * f;
        e -= 1;
    }
    /* log f = 2 atanh s, |s| <= 0.1716: the series to s^23, truncation below 1e-19 relative */
    const double s = (f - 1.0) / (f + 1.0), z = s * s;
    const double c[12] = {1.0 / 23.0, 1.0 / 21.0, 1.0 / 19.0, 1.0 / 17.0, 1.0 / 15.0, 1.0 / 13.0,
                          1.0 / 11.0, 1.0 / 9.0,  1.0 / 7.0,  1.0 / 5.0,  1.0 / 3.0,  1.0};
    const double p = lj_horner(c, 12, z);
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    return (double)e * ln2_hi + ((2.0 * s) * p + (double)e * ln2_lo);
}

/* Metropolis: accept with min(1, exp(-beta dU)); NaN and +inf are rejected. */
CARLO_HD int lj_accept(double dU, double beta, double u)
{
    if (dU <= 0.0)
        return 1;
    if (!(dU < 1e300))
        return 0;
    return u < lj_exp(-beta * dU);
}

/* A displacement in (-delta, delta), symmetric bit for bit: w and 2^32 - 1 - w give
 * opposite values. */
CARLO_HD double lj_displacement(uint32_t w, double delta)
{
    double r = (double)((int64_t)2 * (int64_t)w + 1 - ((int64_t)1 << 32)) * (1.0 / 4294967296.0);
    return delta * r;
}

/* The trial move number `move` of a decomposition run: particle, displacement, uniform. */
typedef struct lj_trial {
    uint32_t i;
    double d[3];
    double u;
} lj_trial;

CARLO_HD lj_trial lj_draw_trial(uint64_t seed, uint64_t move, uint32_t N, double delta, int dim)
{
    carlo_u32x4 a = carlo_rng(seed, LJ_PURPOSE_MOVE, move, 0, 0);
    carlo_u32x4 b = carlo_rng(seed, LJ_PURPOSE_MOVE, move, 1, 0);
    lj_trial t;
    if (carlo_below_try(a.v[0], N, &t.i) && carlo_below_try(b.v[2], N, &t.i) &&
        carlo_below_try(b.v[3], N, &t.i))
        t.i = carlo_below(seed, LJ_PURPOSE_RETRY, move, 0, 0, N);
    t.d[0] = lj_displacement(a.v[1], delta);
    t.d[1] = lj_displacement(a.v[2], delta);
    t.d[2] = dim == 3 ? lj_displacement(a.v[3], delta) : 0.0;
    t.u = carlo_u01(b.v[0], b.v[1]);
    return t;
}

/* Cell of a position in [0, L): floor(x / w) per axis, the top cell catching rounding. */
CARLO_HD int lj_cell_axis(double x, double w, int n)
{
    int c = (int)(x / w);
    return c >= n ? n - 1 : c;
}

CARLO_HD int lj_cell_of(const lj_geom *g, double x, double y, double z)
{
    int cx = lj_cell_axis(x, g->w[0], g->n[0]);
    int cy = lj_cell_axis(y, g->w[1], g->n[1]);
    int cz = g->dim == 3 ? lj_cell_axis(z, g->w[2], g->n[2]) : 0;
    return (cz * g->n[1] + cy) * g->n[0] + cx;
}

/* Neighbour q (0..26 in 3D, 0..8 in 2D) of cell c, in the fixed order dz, dy, dx = -1..1. */
CARLO_HD int lj_cell_neighbour(const lj_geom *g, int c, int q)
{
    int nx = g->n[0], ny = g->n[1], nz = g->n[2];
    int cx = c % nx, cy = (c / nx) % ny, cz = c / (nx * ny);
    int dx = q % 3 - 1, dy = (q / 3) % 3 - 1, dz = g->dim == 3 ? q / 9 - 1 : 0;
    cx += dx;
    cy += dy;
    cz += dz;
    cx = cx < 0 ? cx + nx : (cx >= nx ? cx - nx : cx);
    cy = cy < 0 ? cy + ny : (cy >= ny ? cy - ny : cy);
    cz = cz < 0 ? cz + nz : (cz >= nz ? cz - nz : cz);
    return (cz * ny + cy) * nx + cx;
}

CARLO_HD int lj_neighbour_count(int dim) { return dim == 3 ? 27 : 9; }

/* Tiles of the all-particle sum over N candidates: C per lane, G tiles. */
CARLO_HD void lj_tiles(uint32_t N, uint32_t *C, uint32_t *G)
{
    uint32_t per = (uint32_t)LJ_LANES * (uint32_t)LJ_TILES_MAX;
    uint32_t c = (N + per - 1) / per;
    if (c == 0)
        c = 1;
    *C = c;
    *G = (N + (uint32_t)LJ_LANES * c - 1) / ((uint32_t)LJ_LANES * c);
    if (*G == 0)
        *G = 1;
}

CARLO_HD uint32_t lj_pow2_at_least(uint32_t n)
{
    uint32_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

/* A canonical sum in progress: energy u and virial w of one position. */
typedef struct lj_uw {
    double u, w;
} lj_uw;

/* The halving tree over n = 2^k entries (the host side; the GPU does the same additions
 * across threads and warps). */
CARLO_HD void lj_tree(lj_uw *v, uint32_t n)
{
    for (uint32_t s = n / 2; s > 0; s >>= 1)
        for (uint32_t t = 0; t < s; t++) {
            v[t].u = v[t].u + v[t + s].u;
            v[t].w = v[t].w + v[t + s].w;
        }
}

/* Candidate (x, y, z) against position p, added to a lane. */
CARLO_HD void lj_accumulate(const lj_geom *g, const double p[3], double x, double y, double z,
                            lj_uw *acc)
{
    double u, w;
    lj_pair(lj_r2(g, p[0], p[1], p[2], x, y, z), g->rc2, g->ushift, &u, &w);
    acc->u = acc->u + u;
    acc->w = acc->w + w;
}

/* Test particle k of Widom sample `sample`: a uniform position in the box. */
CARLO_HD void lj_widom_position(const lj_geom *g, uint64_t seed, uint64_t sample, uint32_t k,
                                double p[3])
{
    carlo_u32x4 r = carlo_rng(seed, LJ_PURPOSE_WIDOM, sample, k, 0);
    for (int a = 0; a < 3; a++)
        p[a] = a < g->dim ? g->L[a] * ((double)r.v[a] * (1.0 / 4294967296.0)) : 0.0;
}

/* exp(-beta dU) of an insertion with pair energy eu and tail energy tail (0 for overlaps). */
CARLO_HD double lj_widom_factor(double eu, double tail, double beta)
{
    double dU = eu + tail;
    if (!(dU < 1e300))
        return 0.0;
    return lj_exp(-beta * dU);
}

#endif
