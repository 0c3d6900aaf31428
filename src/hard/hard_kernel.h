/* hard_kernel.h — the physics of hard disks and spheres, written once and compiled for the CPU
 * backend (gcc) and the GPU backend (nvcc): the MPMC cell update (Anderson et al. 2013,
 * Algorithm 2), the overlap test that decides every acceptance, and the pair scans behind the
 * pressure estimators and overlap checks. Lengths in units of the diameter sigma = 1.
 *
 * One active cell's update: n_M trial moves, visiting the cell's n particles in the order of a
 * uniformly random permutation (drawn afresh every sub-sweep, so the order in storage never
 * matters: MPMC Sec. 2.4, rule 2), each displaced uniformly in a disk (ball) of radius delta,
 * rejected when the centre would leave the cell (rule 1) or overlap another particle.
 *
 * Random numbers (purposes 0x20-0x2f): a cell's permutation is Philox(seed, ORDER, substep,
 * cell, 0..1); in 2D, moves 2k and 2k + 1 share the draw Philox(seed, MOVE, substep, cell, k),
 * mapped onto the unit disk without rejection; in 3D move s draws Philox(seed, MOVE, substep,
 * cell, 2 s and 2 s + 1), mapped into the unit ball without rejection (hard_displacement_raw).
 * The result depends on (seed, substep, cell) only, never on
 * how cells are spread over threads: the CPU and GPU backends agree bit for bit. */
#ifndef CARLO_HARD_KERNEL_H
#define CARLO_HARD_KERNEL_H

#include <math.h>
#include <stdint.h>

#include "core/cells_kernel.h"
#include "core/hd.h"
#include "core/rng.h"
#include "core/tether_kernel.h"

#define HARD_PURPOSE_ORDER  0x20u /* in-cell permutation of each sub-sweep */
#define HARD_PURPOSE_MOVE   0x21u /* trial displacements */
#define HARD_PURPOSE_SETS   0x22u /* order of the checkerboard sets in each sweep */
#define HARD_PURPOSE_SHIFT  0x23u /* the cell shift after each sweep */
#define HARD_PURPOSE_VOLUME 0x24u /* NPT volume moves */
#define HARD_PURPOSE_INIT   0x25u /* random initial positions */
#define HARD_PURPOSE_SERIAL 0x26u /* the serial reference in tests/ */
#define HARD_PURPOSE_TETHER 0x27u /* Metropolis draws of the harmonic tether (Einstein field) */
#define HARD_PURPOSE_INSERT 0x28u /* test insertions (sys:widom) */

/* Cell widths: w >= sigma so that active cells of one set never interact, and small enough
 * that a fixed number of centres fills a cell. Split the cell into boxes whose diagonal is
 * below 1: two centres in one box would overlap, so the cell holds at most as many centres as
 * boxes. A square of side w < sqrt(2) splits into four quarters of diagonal w / sqrt(2) < 1: at
 * most 4 (MPMC Fig. 3). A cube of side w < 2 / sqrt(3) splits into eight octants: at most 8;
 * but that window, [1, 1.1547), leaves boxes of many sizes without an even number of cells
 * (no even m has 9.24 <= m w < 10), which stops compression and NPT in their tracks. Splitting
 * the cube 2 x 2 x 3 instead gives boxes of diagonal w sqrt(1/4 + 1/4 + 1/9) < 1 for
 * w < 1.2792: at most 12 centres, and every box side from 8 up has a grid. A margin of 1e-6
 * keeps the bounds clear of rounding. */
#define HARD_NMAX_2D 4
#define HARD_NMAX_3D 12
#define HARD_NMAX 12
#define HARD_WMAX_2D (1.4142135623730951 * (1.0 - 1e-6))
#define HARD_WMAX_3D (1.2792042981336627 * (1.0 - 1e-6))

/* Loops over a cell's slots and over axes run a compile-time number of times at every call
 * site; unrolled, they keep the cell in registers on the GPU. */
#if defined(__CUDA_ARCH__)
#define HARD_UNROLL _Pragma("unroll")
#else
#define HARD_UNROLL
#endif

/* Neighbour cells are read through the read-only data cache on the GPU (MPMC Sec. 3.2: the
 * texture path); they are never written during a sub-sweep. */
#if defined(__CUDA_ARCH__)
#define HARD_LOAD(p) __ldg(p)
#else
#define HARD_LOAD(p) (*(p))
#endif

typedef struct hard_moves {
    float delta;   /* largest displacement (radius of the disk / ball of trial moves) */
    int moves;     /* n_M: trial moves per active, non-empty cell */
    int shuffle;   /* 1: random permutation in each cell; 0: storage order (MPMC Table 1 only) */
    int skew;      /* 1: a triclinic box, the cells cut in its skew coordinates (core/box.h) */
    float tilt[4]; /* the box's xy, xz, yz, and the reach: a particle whose squared distance in
                      skew coordinates from a cell is reach or more is 1 or more away from every
                      point of it (set by the host with the box, hard_tilt_of) */
} hard_moves;

/* The kernels take the tilts as `tilt` (NULL: an orthorhombic box, where every computation is
 * the one made before triclinic boxes existed). A separation d in skew coordinates is the
 * vector (d0 + xy d1 + xz d2, d1 + yz d2, d2), summed in float without contraction, so the CPU
 * and the GPU decide alike. */
CARLO_HD float hard_r2_tilted(int dim, float dx, float dy, float dz, const float *tilt)
{
    float vx = dx + tilt[0] * dy;
    float vy = dy;
    if (dim == 3) {
        vx = vx + tilt[1] * dz;
        vy = vy + tilt[2] * dz;
    }
    float r2 = vx * vx + vy * vy;
    if (dim == 3)
        r2 = r2 + dz * dz;
    return r2;
}

/* Squared distance between point t and the particle at p of a cell whose frame is s away (with
 * tilt: of the vector the skew separation stands for, hard_r2_tilted). The one formula for every
 * overlap decision (acceptance, volume moves, checks). */
CARLO_HD float hard_d2(int dim, const float t[3], const float p[3], const float s[3], const float *tilt)
{
    float dx = t[0] - (p[0] + s[0]);
    float dy = t[1] - (p[1] + s[1]);
    if (tilt)
        return hard_r2_tilted(dim, dx, dy, dim == 3 ? t[2] - (p[2] + s[2]) : 0.0f, tilt);
    float r2 = dx * dx + dy * dy;
    if (dim == 3) {
        float dz = t[2] - (p[2] + s[2]);
        r2 = r2 + dz * dz;
    }
    return r2;
}

/* hard_d2 for a particle in the same frame (s = 0): t - p equals t - (p + 0) up to the sign of
 * a zero, so the squares, and every decision, are the same; the additions of zero are not made. */
CARLO_HD float hard_d2_here(int dim, const float t[3], const float p[3], const float *tilt)
{
    float dx = t[0] - p[0];
    float dy = t[1] - p[1];
    if (tilt)
        return hard_r2_tilted(dim, dx, dy, dim == 3 ? t[2] - p[2] : 0.0f, tilt);
    float r2 = dx * dx + dy * dy;
    if (dim == 3) {
        float dz = t[2] - p[2];
        r2 = r2 + dz * dz;
    }
    return r2;
}

#define HARD_IDENTITY 0xba9876543210ull

/* A uniformly random permutation of 0..n-1 (n <= 12) as 4-bit entries of one word: a
 * Fisher-Yates shuffle, one Philox word per swap. */
CARLO_HD uint64_t hard_permutation(int n, uint64_t seed, uint64_t step, uint32_t cell)
{
    uint64_t perm = HARD_IDENTITY;
    if (n < 2)
        return perm;
    carlo_u32x4 r[3];
    r[0] = carlo_rng(seed, HARD_PURPOSE_ORDER, step, cell, 0);
    r[1] = n > 5 ? carlo_rng(seed, HARD_PURPOSE_ORDER, step, cell, 1) : r[0];
    r[2] = n > 9 ? carlo_rng(seed, HARD_PURPOSE_ORDER, step, cell, 2) : r[0];
    for (int i = n - 1, k = 0; i > 0; i--, k++) {
        uint32_t j = carlo_cell_below(r[k >> 2].v[k & 3], (uint32_t)(i + 1), seed, HARD_PURPOSE_ORDER,
                                      step, cell, 3u + (uint32_t)k);
        uint64_t a = perm >> (4 * i) & 15u, b = perm >> (4 * j) & 15u;
        perm &= ~((15ull << (4 * i)) | (15ull << (4 * j)));
        perm |= a << (4 * j) | b << (4 * i);
    }
    return perm;
}

/* A coordinate of the unit square from one word: the odd multiples of 2^-24 in (-1, 1), a set
 * symmetric under negation, so a move and its reverse are proposed equally often. */
CARLO_HD float hard_unit(uint32_t w)
{
    return (float)(2 * (int32_t)(w >> 8) + 1 - 16777216) * (1.0f / 16777216.0f);
}

/* sin x and cos x for |x| <= pi/4: Taylor polynomials (errors below 4e-8) in additions and
 * multiplications only, so every backend computes the same floats; sin is exactly odd in x and
 * cos exactly even. */
CARLO_HD void hard_sincos_quarter(float x, float *s, float *c)
{
    const float x2 = x * x;
    *s = x * (1.0f + x2 * (-1.0f / 6.0f + x2 * (1.0f / 120.0f + x2 * (-1.0f / 5040.0f + x2 * (1.0f / 362880.0f)))));
    *c = 1.0f + x2 * (-0.5f + x2 * (1.0f / 24.0f + x2 * (-1.0f / 720.0f + x2 * (1.0f / 40320.0f))));
}

/* A point of the unit disk from a point (a, b) of the open square (-1, 1)^2 by Shirley and
 * Chiu's concentric map, which preserves area: the square ring of half-width r goes onto the
 * circle of radius r. No draw is rejected, so the threads of a warp never wait for one
 * another's second draw. The map is exactly odd ((-a, -b) gives the negated point, float for
 * float), so a displacement and its reverse are proposed equally often: detailed balance holds
 * whatever the rounding, which only makes the density uniform to float precision.
 * hard_disk_turn gives the map's two parts (the point is r u), hard_disk_point the point. */
CARLO_HD float hard_disk_turn(float a, float b, float u[2])
{
    const int wide = fabsf(a) > fabsf(b); /* the ring's vertical (wide) or horizontal sides */
    const float r = wide ? a : b, other = wide ? b : a;
    float s, c;
    hard_sincos_quarter(0.785398163f * (other / r), &s, &c);
    u[0] = wide ? c : s;
    u[1] = wide ? s : c;
    return r; /* the point is r u: r is odd in (a, b), u even; r is never 0 (hard_unit) */
}

CARLO_HD void hard_disk_point(float a, float b, float out[2])
{
    float u[2];
    const float r = hard_disk_turn(a, b, u);
    out[0] = r * u[0];
    out[1] = r * u[1];
}

/* A coordinate of (0, 1) from one word: the odd multiples of 2^-25. */
CARLO_HD float hard_unit_pos(uint32_t w)
{
    return (float)(2 * (w >> 8) + 1) * (1.0f / 33554432.0f);
}

/* A point of the unit ball without rejection: the direction by Archimedes (the height z
 * uniform in (-1, 1), the azimuth that of the concentric map of (a, b), which is uniform),
 * the radius rho the largest of three uniforms (P(rho < x) = x^3, a ball's). Negating a, b
 * and z negates the point float for float, so a displacement and its reverse are proposed
 * equally often, as in 2D; sqrtf is correctly rounded on every backend. */
CARLO_HD void hard_ball_point(float a, float b, float z, float rho, float out[3])
{
    float u[2];
    const float r = hard_disk_turn(a, b, u);
    const float ring = rho * sqrtf(1.0f - z * z);
    const float side = r > 0.0f ? ring : -ring;
    out[0] = side * u[0];
    out[1] = side * u[1];
    out[2] = rho * z;
}

/* A 3D trial displacement of size d from the move's two draws (hard_displacement_raw): words 2
 * and 3 of r1 stay unused (the tether's Metropolis test takes them, hard_tether_u). */
CARLO_HD void hard_ball_move(float d, carlo_u32x4 r0, carlo_u32x4 r1, float out[3])
{
    const float rho = fmaxf(fmaxf(hard_unit_pos(r0.v[3]), hard_unit_pos(r1.v[0])), hard_unit_pos(r1.v[1]));
    float p[3];
    hard_ball_point(hard_unit(r0.v[0]), hard_unit(r0.v[1]), hard_unit(r0.v[2]), rho, p);
    out[0] = d * p[0];
    out[1] = d * p[1];
    out[2] = d * p[2];
}

/* Trial displacement of move s, before rounding. 2D: the concentric map of the point (words 0,
 * 1) or (2, 3) of Philox(seed, MOVE, substep, cell, s / 2), for even and odd s: two moves per
 * draw. 3D: hard_ball_point of words 0, 1, 2 of Philox(seed, MOVE, substep, cell, 2 s), the
 * radius from its word 3 and words 0, 1 of Philox(..., 2 s + 1). No draw is rejected, so the
 * threads of a warp never wait for one another's next draw (with rejection, 48% of the 3D
 * draws missed the ball, and a warp waited for its unluckiest thread). */
CARLO_HD void hard_displacement_raw(int dim, float d, uint64_t seed, uint64_t step,
                                       uint32_t cell, uint32_t s, float out[3])
{
    out[0] = out[1] = out[2] = 0.0f;
    if (dim == 2) {
        carlo_u32x4 r = carlo_rng(seed, HARD_PURPOSE_MOVE, step, cell, s >> 1);
        float p[2];
        hard_disk_point(hard_unit(r.v[(s & 1) * 2]), hard_unit(r.v[(s & 1) * 2 + 1]), p);
        out[0] = d * p[0];
        out[1] = d * p[1];
        return;
    }
    hard_ball_move(d, carlo_rng(seed, HARD_PURPOSE_MOVE, step, cell, 2 * s),
                   carlo_rng(seed, HARD_PURPOSE_MOVE, step, cell, 2 * s + 1), out);
}

/* The displacements of 2D moves s and s + 1 (s even) from their one draw, rounded to the
 * cells' quantum q (symmetrically), so that the trial position is exact in every frame. */
CARLO_HD void hard_displacement_pair(const carlo_cell_grid *g, float d, uint64_t seed, uint64_t step,
                                        uint32_t cell, uint32_t s, float out[2][3])
{
    carlo_u32x4 r = carlo_rng(seed, HARD_PURPOSE_MOVE, step, cell, s >> 1);
    for (int k = 0; k < 2; k++) {
        float p[2];
        hard_disk_point(hard_unit(r.v[2 * k]), hard_unit(r.v[2 * k + 1]), p);
        out[k][0] = carlo_cell_quantize(g, d * p[0]);
        out[k][1] = carlo_cell_quantize(g, d * p[1]);
        out[k][2] = 0.0f;
    }
}

/* Trial displacement of move s, rounded to the quantum as hard_displacement_pair rounds. */
CARLO_HD void hard_displacement(const carlo_cell_grid *g, int dim, float d, uint64_t seed,
                                   uint64_t step, uint32_t cell, uint32_t s, float out[3])
{
    hard_displacement_raw(dim, d, seed, step, cell, s, out);
    for (int a = 0; a < dim; a++)
        out[a] = carlo_cell_quantize(g, out[a]);
}

/* Whether a particle of the neighbour of cell xyz at offset off (at most nmax of its count)
 * overlaps the position t of cell xyz: the per-cell step of hard_overlaps_neighbors, and of the
 * GPU team kernel's scan when its neighbour list overflowed. */
CARLO_HD int hard_overlaps_cell(const int dim, const int nmax, const carlo_cell_grid *g, const float *pos,
                                   const uint32_t *count, const int xyz[3], const int off[3],
                                   const float t[3], const float *tilt)
{
    float s[3];
    const int64_t cn = carlo_cell_neighbor(g, xyz, off, s);
    int n = (int)HARD_LOAD(&count[cn]);
    if (n > nmax)
        n = nmax;
    for (int j = 0; j < n; j++) {
        float p[3] = {0.0f, 0.0f, 0.0f};
        for (int a = 0; a < dim; a++)
            p[a] = HARD_LOAD(&pos[carlo_cell_slot(g, cn, j, a)]);
        if (hard_d2(dim, t, p, s, tilt) < 1.0f)
            return 1;
    }
    return 0;
}

/* Whether the point t, inside cell xyz, overlaps a particle of one of the neighbouring cells.
 * A neighbour is skipped when the nearest point of its cell is at least 1 away: the squared
 * distances to the faces crossed, summed in the order hard_d2 sums, bound every particle's
 * computed distance from below (all values are exact multiples of q, rounding is monotonic),
 * so the pruning changes no decision. In a triclinic box (tilt) those are distances in skew
 * coordinates, and a cell is skipped from tilt[3] on (hard_moves), which bounds them for every
 * point within 1 with a margin far above the rounding. */
CARLO_HD int hard_overlaps_neighbors(const int dim, const int nmax, const carlo_cell_grid *g,
                                        const float *pos, const uint32_t *count, const int xyz[3],
                                        const float t[3], const float *tilt)
{
    float lo2[3], hi2[3]; /* squared distances to the low and high faces */
    for (int a = 0; a < 3; a++) {
        float l = a < dim ? t[a] : 0.0f, h = a < dim ? g->w[a] - t[a] : 0.0f;
        lo2[a] = l * l;
        hi2[a] = h * h;
    }
    const int zmin = dim == 3 ? -1 : 0, zmax = dim == 3 ? 1 : 0;
    for (int oz = zmin; oz <= zmax; oz++) {
        const float fz = oz < 0 ? lo2[2] : (oz > 0 ? hi2[2] : 0.0f);
        for (int oy = -1; oy <= 1; oy++) {
            const float fy = oy < 0 ? lo2[1] : (oy > 0 ? hi2[1] : 0.0f);
            for (int ox = -1; ox <= 1; ox++) {
                if (ox == 0 && oy == 0 && oz == 0)
                    continue;
                const float fx = ox < 0 ? lo2[0] : (ox > 0 ? hi2[0] : 0.0f);
                float near2 = fx + fy;
                if (dim == 3)
                    near2 = near2 + fz;
                if (!(near2 < (tilt ? tilt[3] : 1.0f)))
                    continue;
                const int off[3] = {ox, oy, oz};
                if (hard_overlaps_cell(dim, nmax, g, pos, count, xyz, off, t, tilt))
                    return 1;
            }
        }
    }
    return 0;
}

/* The neighbour list of one active cell: every particle of the surrounding cells that can reach
 * into it, stored as p + s, its position in the active cell's frame, the very float hard_d2
 * forms (so a test against the list decides exactly as hard_overlaps_neighbors does). A trial
 * position t lies in [0, w) along every axis; a particle whose distance to that box is 1 or
 * more can overlap none of them (in a triclinic box: whose skew distance reaches tilt[3]). The
 * box distance is computed in float and compared with a margin far above its rounding, so no
 * particle that could overlap is ever left out. Inactive
 * cells do not change during a sub-sweep: the list, gathered once, serves all n_M moves, and
 * its loads are independent, where the per-move scan waits on one cell after another. Entry k,
 * axis a is nb[(k * dim + a) * stride] (stride: the threads sharing the buffer). Returns the
 * number of entries, or -1 when more than cap particles qualify (then the moves scan the cells
 * directly: same decisions, only slower). */
#define HARD_EAGER 4 /* at most this many slots of a neighbour cell read before its count (GPU) */
#define HARD_EAGER_3D 3 /* 3D cells of width 1.12 hold 1.3 spheres at phi = 0.5; the H100 ran
                         * 2^20 of them at 4.57e9 / 4.82e9 / 4.70e9 moves/s with 4 / 3 / 2 */
#define HARD_EAGER_N(dim) ((dim) == 2 ? HARD_EAGER : HARD_EAGER_3D)
#if defined(__CUDA_ARCH__)
#define HARD_EAGER_ON 1
#else
#define HARD_EAGER_ON 0 /* the CPU waits on no count: its caches serve the loads it needs */
#endif

/* The first HARD_EAGER_N(dim) slots of cell cn, empty or not (a cell holds one or two
 * particles at the densities of interest): the loads need not wait for the cell's count, which
 * is what a neighbour gather's time goes to (H100: disks +21% at 1520^2). */
CARLO_HD void hard_load_eager(const int dim, const int nmax, const carlo_cell_grid *g,
                                 const float *pos, int64_t cn, float slot[HARD_EAGER][3])
{
    HARD_UNROLL
    for (int j = 0; j < HARD_EAGER; j++)
        HARD_UNROLL
        for (int a = 0; a < 3; a++)
            slot[j][a] = j < nmax && j < HARD_EAGER_N(dim) && a < dim
                             ? HARD_LOAD(&pos[carlo_cell_slot(g, cn, j, a)])
                             : 0.0f;
}

/* A neighbour's particle, at p in its own frame, seen from the active cell: ps = p + s, its
 * position in the active frame (p itself along the axes where the offset is 0), and the
 * return value, its squared distance to the active cell's box, summed over the axes crossed in
 * axis order. Exact frames make p + w - w = p and -(p - w) = w - p, so the sum is the one the
 * clamped differences of ps give; with the offset a literal constant (unrolled loops), only
 * the crossed axes cost anything. An empty slot is a million away along every axis, and every
 * neighbour crosses one, so it never comes near. */
CARLO_HD float hard_reach2(const int dim, const int off[3], const float p[3], const float s[3],
                              const float w[3], float ps[3])
{
    float b2 = 0.0f;
    HARD_UNROLL
    for (int a = 0; a < 3; a++) {
        if (a >= dim) {
            ps[a] = 0.0f;
            continue;
        }
        if (off[a] == 0) {
            ps[a] = p[a];
            continue;
        }
        ps[a] = p[a] + s[a];
        const float e = off[a] > 0 ? p[a] : w[a] - p[a];
        b2 += e * e;
    }
    return b2;
}

/* List room per active cell. 2D: the particles that reach a cell of width below sqrt(2) number
 * about 8 at phi = 0.7 and under 20 at any density (8 cells x 4 slots = 32 is the hard bound);
 * a list of 16 overflows, to the per-move scan, practically never, and halves the GPU list's
 * shared memory: the one-thread kernel then holds 1024 threads per SM (its register bound)
 * where 32 entries allowed 832 (H100, disks 1520^2: +8%). */
#define HARD_NB_2D 16
#define HARD_NB_3D 32 /* 26 x 12 could; by volume, about 23 qualify at phi = 0.5 and 28 at 0.6 */
#define HARD_NB_MAX 32

/* Neighbour number q (0 .. 3^dim - 2) of a cell: its offset, ox fastest, the centre skipped. */
CARLO_HD void hard_nb_offset(const int dim, int q, int off[3])
{
    const int qq = q < (dim == 3 ? 13 : 4) ? q : q + 1;
    off[0] = qq % 3 - 1;
    off[1] = (qq / 3) % 3 - 1;
    off[2] = dim == 3 ? qq / 9 - 1 : 0;
}

/* A neighbour cell on its way into a list: where it is, and (GPU) its count and first slots,
 * loaded before the previous cell is sifted, so that no load waits on another cell's tests. */
typedef struct hard_nbcell {
    int off[3];
    int64_t cn;
    float s[3];
    int n;
    float slot[HARD_EAGER][3];
} hard_nbcell;

CARLO_HD void hard_nbcell_load(const int dim, const int nmax, const carlo_cell_grid *g,
                                  const float *pos, const uint32_t *count, const int xyz[3], int q,
                                  hard_nbcell *c)
{
    hard_nb_offset(dim, q, c->off);
    c->cn = carlo_cell_neighbor(g, xyz, c->off, c->s);
    /* on the GPU the eager slots are tested whether occupied or not (an empty slot is far from
     * every cell and never qualifies); where every slot is eager (2D), the count is not read */
    c->n = HARD_EAGER_ON && nmax <= HARD_EAGER_N(dim) ? nmax : (int)HARD_LOAD(&count[c->cn]);
    if (HARD_EAGER_ON)
        hard_load_eager(dim, nmax, g, pos, c->cn, c->slot);
}

/* The particles of a loaded neighbour cell that can reach the active cell, into the list after
 * its k entries: returns the new number of entries, or -1 when the list would hold more than
 * cap (never tested where the cells cannot fill it). */
CARLO_HD int hard_nbcell_sift(const int dim, const int nmax, const carlo_cell_grid *g,
                                 const float *pos, const hard_nbcell *c, float *nb, int stride,
                                 int cap, int k, const float *tilt)
{
    HARD_UNROLL
    for (int j = 0; j < nmax; j++) {
        if (j >= c->n && !(HARD_EAGER_ON && j < HARD_EAGER_N(dim)))
            break;
        float p[3] = {0.0f, 0.0f, 0.0f}, ps[3];
        HARD_UNROLL
        for (int a = 0; a < dim; a++)
            p[a] = HARD_EAGER_ON && j < HARD_EAGER_N(dim) ? c->slot[j < HARD_EAGER ? j : 0][a]
                                                          : HARD_LOAD(&pos[carlo_cell_slot(g, c->cn, j, a)]);
        if (!(hard_reach2(dim, c->off, p, c->s, g->w, ps) < (tilt ? tilt[3] : 1.001f)))
            continue;
        if (cap < (dim == 3 ? 26 : 8) * nmax && k == cap)
            return -1;
        HARD_UNROLL
        for (int a = 0; a < dim; a++)
            nb[(k * dim + a) * stride] = ps[a];
        k++;
    }
    return k;
}

/* Neighbour cells q0, q0 + step, ... (numbered as hard_nb_offset numbers them) into the list
 * nb: returns its number of entries, or -1 when more than cap particles qualify. Each cell's
 * loads are issued before the previous cell is sifted. In 2D, with q0 and step constants, the
 * eight cells unroll and their offsets become constants. */
CARLO_HD int hard_gather_cells(const int dim, const int nmax, const carlo_cell_grid *g,
                                  const float *pos, const uint32_t *count, const int xyz[3], int q0,
                                  int step, float *nb, int stride, int cap, const float *tilt)
{
    const int nq = dim == 3 ? 26 : 8;
    int k = 0;
    if (q0 >= nq)
        return 0;
    hard_nbcell cur, next;
    hard_nbcell_load(dim, nmax, g, pos, count, xyz, q0, &cur);
    next = cur; /* defined, though the last cell's copy of it is never used */
    if (dim == 2)
        HARD_UNROLL
        for (int q = q0; q < 8; q += step) {
            if (q + step < 8)
                hard_nbcell_load(dim, nmax, g, pos, count, xyz, q + step, &next);
            if ((k = hard_nbcell_sift(dim, nmax, g, pos, &cur, nb, stride, cap, k, tilt)) < 0)
                return -1;
            cur = next; /* after the last cell, a copy never used */
        }
    else /* 26 unrolled copies would crowd the instruction cache */
        for (int q = q0; q < nq; q += step) {
            if (q + step < nq)
                hard_nbcell_load(dim, nmax, g, pos, count, xyz, q + step, &next);
            if ((k = hard_nbcell_sift(dim, nmax, g, pos, &cur, nb, stride, cap, k, tilt)) < 0)
                return -1;
            cur = next;
        }
    return k;
}

/* ---------- the harmonic tether (Einstein crystal, Frenkel-Ladd) ---------- */

/* beta U = lambda sum_i |r_i - r0_i|^2, lengths in sigma, dr by the periodic minimum image.
 * Sites r0 are box coordinates in [-L/2, L/2) (as snapshots give positions), N x 3 by tag;
 * the particle of tag 0 is the Einstein molecule's reference (Vega & Noya 2007): while the
 * tether is on it never moves. Everything in double, in one order of operations with no fused
 * multiply-add, so the CPU and the GPU decide every move alike. */
typedef struct hard_tether {
    double lambda;         /* > 0 (the tether is off at 0, and then never consulted) */
    double origin[3];      /* the grid's corner (hard_system.origin) */
    double L[3];           /* the box */
    const double *site;    /* N x 3 */
    const uint32_t *tag;   /* the cells' word plane 0: each slot's tag */
} hard_tether;

/* |r - r0|^2 of a particle at local u of cell xyz whose site is r0. */
CARLO_HD double hard_tether_r2(const hard_tether *th, const carlo_cell_grid *g, int dim, const int xyz[3],
                               const float u[3], const double *r0)
{
    double r2 = 0.0;
    for (int a = 0; a < dim; a++) {
        const double L = th->L[a];
        double d = (double)xyz[a] * g->width[a] + (double)u[a];
        d = d + th->origin[a];
        d = d - 0.5 * L;
        d = d - r0[a];
        /* the minimum image; within a quarter box of the site (nearly always) d / L rounds to
         * 0 and d - L * 0 is d (up to the sign of a zero, which the square drops): d is kept,
         * without the division */
        if (!(fabs(d) < 0.25 * L))
            d = d - L * rint(d / L);
        r2 = r2 + d * d;
    }
    return r2;
}

/* exp(-x) for x >= 0 in additions, multiplications and an exact power of two: x = k ln 2 + r
 * with r in [0, ln 2) (up to rounding), exp(-r) by its Taylor polynomial to degree 17: within
 * a few ulp of exp(-x), and the same double on every backend. */
CARLO_HD double hard_exp_neg(double x)
{
    if (!(x < 700.0))
        return 0.0;
    if (!(x > 0.0))
        return 1.0;
    /* ln 2 in two parts (Cody and Waite): k ln2_hi is exact for k < 2^11 */
    const double ln2 = 0.69314718055994530942, ln2_hi = 0.693145751953125, ln2_lo = 1.4286068203094172321e-6;
    const int k = (int)(x / ln2);
    const double r = (x - (double)k * ln2_hi) - (double)k * ln2_lo;
    double p = 1.0;
    for (int n = 17; n >= 1; n--)
        p = 1.0 - r * p / (double)n;
    return ldexp(p, -k);
}

/* The tether's energy change beta dE = lambda (|t - r0|^2 - |old - r0|^2) of the particle of tag
 * `tag` of cell xyz going from old to t (local coordinates of its cell): core/tether_kernel.h's,
 * the site's offset taken from the box's centre, ((x w + origin) - L / 2) - r0, as hard_tether_r2
 * takes it (the cell's part is summed first, so a move's two distances share it: they agree with
 * hard_tether_r2's within rounding). */
CARLO_HD double hard_tether_dE(const hard_tether *th, const carlo_cell_grid *g, int dim, const int xyz[3],
                               uint32_t tag, const float old[3], const float t[3])
{
    double c[3];
    carlo_tether_offset(g, dim, xyz, th->origin, th->L, 1, th->site + 3 * (size_t)tag, c);
    return carlo_tether_dE(th->lambda, th->L, dim, c, old, t);
}

/* The uniform number of move s's Metropolis test. 3D: words 2 and 3 of the move's second
 * draw, Philox(seed, MOVE, substep, cell, 2 s + 1), which the displacement leaves unused
 * (hard_displacement_raw); 2D, where the displacements use every word: Philox(seed, TETHER,
 * substep, cell, s). */
CARLO_HD double hard_tether_u(int dim, uint64_t seed, uint64_t step, uint32_t cell, uint32_t s)
{
    if (dim == 3) {
        const carlo_u32x4 r = carlo_rng(seed, HARD_PURPOSE_MOVE, step, cell, 2 * s + 1);
        return carlo_u01(r.v[2], r.v[3]);
    }
    const carlo_u32x4 r = carlo_rng(seed, HARD_PURPOSE_TETHER, step, cell, s);
    return carlo_u01(r.v[0], r.v[1]);
}

/* hard_displacement and hard_tether_u of move s together: in 3D from the same two draws. */
CARLO_HD void hard_displacement_tether(const carlo_cell_grid *g, int dim, float d, uint64_t seed, uint64_t step,
                                       uint32_t cell, uint32_t s, float out[3], double *u)
{
    if (dim != 3) {
        hard_displacement(g, dim, d, seed, step, cell, s, out);
        *u = hard_tether_u(dim, seed, step, cell, s);
        return;
    }
    const carlo_u32x4 r1 = carlo_rng(seed, HARD_PURPOSE_MOVE, step, cell, 2 * s + 1);
    hard_ball_move(d, carlo_rng(seed, HARD_PURPOSE_MOVE, step, cell, 2 * s), r1, out);
    for (int a = 0; a < 3; a++)
        out[a] = carlo_cell_quantize(g, out[a]);
    *u = carlo_u01(r1.v[2], r1.v[3]);
}

/* The Metropolis rule of the tether: accepted when !(dE > 0) or u < hard_exp_neg(dE), given
 * nlu = -log(u) (+inf for u = 0). Mathematically u < exp(-dE) is dE < -log(u); the library's log
 * (within an ulp or two on every backend, and nlu <= 37) and hard_exp_neg (within 4e-15 of
 * exp(-dE): tests/unit/hard_tether.c) err by far less than 1e-9 in the exponent, so dE more
 * than 1e-9 away from nlu gets hard_exp_neg's answer without it; closer (about one test in
 * 1e9) asks hard_exp_neg. The decisions are hard_exp_neg's on every backend; the GPU team
 * kernel draws u and its logarithm ahead of the move, off the path the move waits on. */
CARLO_HD int hard_tether_metropolis(double dE, double u, double nlu)
{
    if (!(dE > 0.0))
        return 1;
    if (!(dE < 700.0)) /* hard_exp_neg is 0 there */
        return 0;
    if (dE < nlu - 1e-9)
        return 1;
    if (dE > nlu + 1e-9)
        return 0;
    return u < hard_exp_neg(dE);
}

/* Whether the tether lets the particle of tag `tag` go from old to t (local coordinates of
 * cell xyz): hard_tether_metropolis of hard_tether_dE, the uniform number drawn only for a rise
 * in energy. The reference particle (tag 0) stays. */
CARLO_HD int hard_tether_accept(const hard_tether *th, const carlo_cell_grid *g, int dim, const int xyz[3],
                                uint32_t tag, const float old[3], const float t[3], uint64_t seed,
                                uint64_t step, uint32_t cell, uint32_t s)
{
    if (tag == 0u)
        return 0;
    const double dE = hard_tether_dE(th, g, dim, xyz, tag, old, t);
    if (!(dE > 0.0))
        return 1;
    const double u = hard_tether_u(dim, seed, step, cell, s);
    return hard_tether_metropolis(dE, u, -log(u));
}

/* MPMC Algorithm 2 for one active cell: n_M trial moves. Returns the number accepted; the cell
 * was empty when *tried stays 0. dim, nmax and cache are literal constants at every call site,
 * so the compilers unroll the slot loops. With cache = 1 the cell's particles are held in
 * registers (the paper keeps them in shared memory); with cache = 0 they are read from and
 * written to the cell storage directly (no other thread touches an active cell), which saves
 * registers where a cell has many slots. Given a buffer nb (nb_cap entries of dim floats,
 * nb_stride apart), the neighbours are gathered into it once (hard_gather_cells); with
 * nb = NULL every move scans the neighbour cells. All forms make the same decisions from the
 * same floats. With a tether th (NULL: none), a move that passes the cell bounds must also pass
 * hard_tether_accept before the overlap tests. */
CARLO_HD uint32_t hard_cell_update(const int dim, const int nmax, const int cache,
                                      const carlo_cell_grid *g, float *pos, const uint32_t *count,
                                      const int xyz[3], hard_moves mv, uint64_t seed, uint64_t step,
                                      float *nb, int nb_stride, int nb_cap, const hard_tether *th,
                                      const float *tilt, uint32_t *tried)
{
    const int64_t c = carlo_cell_index(g, xyz[0], xyz[1], xyz[2]);
    float own[HARD_NMAX][3];
    if (cache) { /* every slot, before the count is known (the loads need not wait for it) */
        HARD_UNROLL
        for (int i = 0; i < nmax; i++)
            HARD_UNROLL
            for (int a = 0; a < 3; a++)
                own[i][a] = a < dim ? pos[carlo_cell_slot(g, c, i, a)] : 0.0f;
    }
    int n = (int)count[c];
    *tried = 0;
    if (n <= 0)
        return 0;
    if (n > nmax)
        n = nmax;
    const int nbn = nb ? hard_gather_cells(dim, nmax, g, pos, count, xyz, 0, 1, nb, nb_stride, nb_cap, tilt) : -1;
    const uint64_t perm = mv.shuffle ? hard_permutation(n, seed, step, (uint32_t)c) : HARD_IDENTITY;
    uint32_t accepted = 0;
    int k = 0;
    float pair[2][3] = {{0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f}};
    for (int s = 0; s < mv.moves; s++) {
        const int i = (int)(perm >> (4 * k) & 15u);
        if (++k == n)
            k = 0;
        float t[3] = {0.0f, 0.0f, 0.0f}, disp[3];
        if (dim == 2) { /* one draw for two moves */
            if ((s & 1) == 0)
                hard_displacement_pair(g, mv.delta, seed, step, (uint32_t)c, (uint32_t)s, pair);
            HARD_UNROLL
            for (int a = 0; a < 3; a++)
                disp[a] = (s & 1) ? pair[1][a] : pair[0][a];
        } else {
            hard_displacement(g, dim, mv.delta, seed, step, (uint32_t)c, (uint32_t)s, disp);
        }
        float was[3] = {0.0f, 0.0f, 0.0f};
        if (cache) {
            HARD_UNROLL
            for (int j = 0; j < nmax; j++) /* t = own[i] + disp, without indexing by i */
                if (j == i)
                    HARD_UNROLL
                    for (int a = 0; a < dim; a++) {
                        was[a] = own[j][a];
                        t[a] = own[j][a] + disp[a];
                    }
        } else {
            HARD_UNROLL
            for (int a = 0; a < dim; a++) {
                was[a] = pos[carlo_cell_slot(g, c, i, a)];
                t[a] = was[a] + disp[a];
            }
        }
        int ok = 1;
        HARD_UNROLL
        for (int a = 0; a < dim; a++)
            ok &= t[a] >= 0.0f && t[a] < g->w[a];
        if (!ok)
            continue;
        if (th) { /* the tether first: it needs no neighbour */
            if (!hard_tether_accept(th, g, dim, xyz, th->tag[carlo_cell_slot(g, c, i, 0)], was, t, seed,
                                    step, (uint32_t)c, (uint32_t)s))
                continue;
        }
        if (cache) {
            HARD_UNROLL
            for (int j = 0; j < nmax; j++) /* full loops with static indices keep own[] in registers */
                if (ok && j != i && j < n && hard_d2_here(dim, t, own[j], tilt) < 1.0f)
                    ok = 0;
        } else {
            for (int j = 0; j < n && ok; j++) {
                if (j == i)
                    continue;
                float p[3] = {0.0f, 0.0f, 0.0f};
                HARD_UNROLL
                for (int a = 0; a < dim; a++)
                    p[a] = pos[carlo_cell_slot(g, c, j, a)];
                if (hard_d2_here(dim, t, p, tilt) < 1.0f)
                    ok = 0;
            }
        }
        if (ok && nbn >= 0) {
            const float *e = nb; /* entry k2 */
            for (int k2 = 0; k2 < nbn; k2++, e += dim * nb_stride) {
                float p[3] = {0.0f, 0.0f, 0.0f};
                HARD_UNROLL
                for (int a = 0; a < dim; a++)
                    p[a] = e[a * nb_stride];
                if (hard_d2_here(dim, t, p, tilt) < 1.0f) {
                    ok = 0;
                    break;
                }
            }
        } else if (ok && hard_overlaps_neighbors(dim, nmax, g, pos, count, xyz, t, tilt)) {
            ok = 0;
        }
        if (!ok)
            continue;
        if (cache) {
            HARD_UNROLL
            for (int j = 0; j < nmax; j++)
                if (j == i)
                    HARD_UNROLL
                    for (int a = 0; a < dim; a++)
                        own[j][a] = t[a];
        } else {
            HARD_UNROLL
            for (int a = 0; a < dim; a++)
                pos[carlo_cell_slot(g, c, i, a)] = t[a];
        }
        accepted++;
    }
    if (cache && accepted)
        HARD_UNROLL
        for (int i = 0; i < nmax; i++)
            if (i < n)
                HARD_UNROLL
                for (int a = 0; a < dim; a++)
                    pos[carlo_cell_slot(g, c, i, a)] = own[i][a];
    *tried = (uint32_t)mv.moves;
    return accepted;
}

/* ---------- NPT volume moves ---------- */

/* Whether a move of the box from volume V to Vn, every particle scaled along, is accepted at
 * pressure beta P sigma^d (u uniform in [0, 1), drawn for the move whether needed or not), its
 * scaled configuration free of overlaps: log-volume sampling, min(1, exp(-beta P (Vn - V) +
 * (N + 1) ln(Vn / V))), so that the stationary measure is exp(-beta P V) dV times the
 * configurational weight. The one formula, decided on the host for every backend. */
CARLO_HD int hard_volume_accept(double pressure, int64_t N, double V, double Vn, double u)
{
    const double arg = -pressure * (Vn - V) + (double)(N + 1) * log(Vn / V);
    return !(arg < 0) || u < exp(arg);
}

/* ---------- pair scans: observables and checks ---------- */

/* What the pair scan of one particle looks at: pairs closer than r2cut (squared, float) go to
 * the pair-distance histogram, the nearest neighbour to the scale-distribution histogram. */
typedef struct hard_scan {
    double gr_dr, gr_width;   /* g(r) bins of width dr on [1, 1 + width) */
    int gr_bins;
    double sdf_dx, sdf_xmax;  /* scale-factor bins of width dx on [0, xmax) */
    int sdf_bins;
} hard_scan;

/* Visit every neighbour (any cell within one step, this cell included, itself excluded) of the
 * particle in slot i of cell xyz: returns the squared distances' minimum, counts those below 1
 * into *overlaps and, when hist is given, bins pairs for g(r). HIST_ADD increments a bin: an
 * atomic on the GPU, a plain increment into a thread's own array on the CPU. */
#if defined(__CUDA_ARCH__)
#define HARD_HIST_ADD(h, b) atomicAdd(&(h)[b], 1u)
#else
#define HARD_HIST_ADD(h, b) ((h)[b]++)
#endif

CARLO_HD float hard_particle_scan(const int dim, const int nmax, const carlo_cell_grid *g,
                                     const float *pos, const uint32_t *count, const int xyz[3],
                                     int i, uint32_t *overlaps, const hard_scan *sc,
                                     uint32_t *gr_hist, const float *tilt)
{
    const int64_t c = carlo_cell_index(g, xyz[0], xyz[1], xyz[2]);
    float t[3] = {0.0f, 0.0f, 0.0f};
    for (int a = 0; a < dim; a++)
        t[a] = pos[carlo_cell_slot(g, c, i, a)];
    float best = 3.0e38f;
    const int zmin = dim == 3 ? -1 : 0, zmax = dim == 3 ? 1 : 0;
    const double rcut = sc ? 1.0 + sc->gr_width : 0.0;
    for (int oz = zmin; oz <= zmax; oz++)
        for (int oy = -1; oy <= 1; oy++)
            for (int ox = -1; ox <= 1; ox++) {
                int off[3] = {ox, oy, oz};
                float s[3];
                int64_t cn = carlo_cell_neighbor(g, xyz, off, s);
                int n = (int)count[cn];
                if (n > nmax)
                    n = nmax;
                for (int j = 0; j < n; j++) {
                    if (cn == c && j == i && ox == 0 && oy == 0 && oz == 0)
                        continue;
                    float p[3] = {0.0f, 0.0f, 0.0f};
                    for (int a = 0; a < dim; a++)
                        p[a] = pos[carlo_cell_slot(g, cn, j, a)];
                    float r2 = hard_d2(dim, t, p, s, tilt);
                    if (r2 < best)
                        best = r2;
                    if (r2 < 1.0f)
                        (*overlaps)++;
                    if (gr_hist && r2 < 4.0f) {
                        double r = sqrt((double)r2);
                        if (r >= 1.0 && r < rcut) {
                            int b = (int)((r - 1.0) / sc->gr_dr);
                            if (b < sc->gr_bins)
                                HARD_HIST_ADD(gr_hist, b);
                        }
                    }
                }
            }
    return best;
}

/* The scale-distribution bin of a particle whose nearest neighbour is at squared distance
 * r2min: x = 1 - 1/r, the fractional compression that would make the pair touch; -1 when
 * outside [0, xmax). */
CARLO_HD int hard_sdf_bin(float r2min, const hard_scan *sc)
{
    if (!(r2min >= 1.0f) || r2min > 4.0f)
        return -1;
    double x = 1.0 - 1.0 / sqrt((double)r2min);
    if (x >= sc->sdf_xmax)
        return -1;
    int b = (int)(x / sc->sdf_dx);
    return b < sc->sdf_bins ? b : -1;
}

#endif
