/* cells_kernel.h — the checkerboard cell grid of the particle models (MPMC, Anderson et al.
 * 2013), as inline functions compiled for the CPU (gcc) and the GPU (nvcc): the cell index
 * map, neighbours across the periodic boundary, the checkerboard sets and their shuffled order,
 * the random cell shift and the re-gridding of a scaled box. Nothing here knows what a
 * particle is beyond its position and a few 32-bit words it carries along.
 *
 * Storage (Algorithm 3 of the paper, generalised): particles live in the cells, with
 * coordinates local to their cell, u in [0, w) along each axis. Each of the dim position
 * planes and naux word planes holds nmax slots per cell, slot-major:
 *     plane p, slot i, cell c  ->  (p * nmax + i) * ncells + c
 * and the cell index puts even x first, then odd x (x is fastest, then y, then z), so that the
 * threads of one checkerboard set read consecutive addresses:
 *     c = (z * my + y) * mx + (x even ? x / 2 : mx / 2 + x / 2).
 * Slots at and beyond count[c] hold CARLO_CELL_EMPTY (position) and 0xffffffff (words).
 *
 * Exact frames: every local coordinate and every cell width is an integer multiple of a power
 * of two q chosen so that all values within two cells (|x| < 2^24 q) are floats exactly. Then
 * moving a coordinate from one cell's frame to another's (u - d in the cell shift, u + w for a
 * neighbour) is exact, a pair's separation t - (p + s) is the same float in every frame, and an
 * overlap test made in one frame holds in all of them. The grid's box is m w exactly: the box
 * of record (within m q / 2 of the box asked for). */
#ifndef CARLO_CELLS_KERNEL_H
#define CARLO_CELLS_KERNEL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hd.h"
#include "core/rng.h"

/* The local coordinate of an empty slot: so far from every cell that it never interacts. */
#define CARLO_CELL_EMPTY (-1048576.0f)
#define CARLO_CELL_NO_WORD 0xffffffffu
#define CARLO_CELL_NMAX_LIMIT 1024

typedef struct carlo_cell_grid {
    int dim;          /* 2 or 3 */
    int m[3];         /* cells along each axis: even and >= 2 (m[2] = 1 in 2D) */
    int half[3];      /* active cells of one set along each axis: m / 2 (1 along z in 2D) */
    int nmax;         /* particle slots per cell */
    int naux;         /* 32-bit words a particle carries besides its position (0..8) */
    int64_t ncells;   /* m[0] m[1] m[2] */
    double width[3];  /* the cell edge: L / m rounded to a multiple of q (exact as a float) */
    float w[3];       /* the same width as a float: the local frame every kernel computes in */
    float w_in[3];    /* w - q: the largest coordinate a particle can have in its cell */
    float q;          /* the quantum of every coordinate: a power of two */
    int32_t wq[3];    /* w / q */
} carlo_cell_grid;

/* Where the cells are: host or device memory alike. */
typedef struct carlo_cell_data {
    float *pos;       /* dim planes of nmax x ncells */
    uint32_t *aux;    /* naux planes (NULL when naux = 0) */
    uint32_t *count;  /* ncells */
} carlo_cell_data;

CARLO_HD size_t carlo_cell_slot(const carlo_cell_grid *g, int64_t c, int i, int plane)
{
    return ((size_t)plane * (size_t)g->nmax + (size_t)i) * (size_t)g->ncells + (size_t)c;
}

CARLO_HD int carlo_cell_wrap(int x, int m)
{
    return x < 0 ? x + m : (x >= m ? x - m : x);
}

CARLO_HD int64_t carlo_cell_index(const carlo_cell_grid *g, int x, int y, int z)
{
    int q = (x >> 1) + (x & 1) * g->half[0];
    return ((int64_t)z * g->m[1] + y) * g->m[0] + q;
}

CARLO_HD void carlo_cell_coords(const carlo_cell_grid *g, int64_t c, int xyz[3])
{
    int q = (int)(c % g->m[0]);
    int64_t rest = c / g->m[0];
    xyz[0] = q < g->half[0] ? 2 * q : 2 * (q - g->half[0]) + 1;
    xyz[1] = (int)(rest % g->m[1]);
    xyz[2] = (int)(rest / g->m[1]);
}

/* The checkerboard set of a cell: bit a is the parity of its coordinate along axis a
 * (4 sets in 2D, 8 in 3D). */
CARLO_HD int carlo_cell_set_of(const int xyz[3])
{
    return (xyz[0] & 1) | (xyz[1] & 1) << 1 | (xyz[2] & 1) << 2;
}

CARLO_HD int64_t carlo_cell_set_size(const carlo_cell_grid *g)
{
    return g->ncells >> g->dim;
}

/* The t-th cell of set `set` (t < carlo_cell_set_size): x runs fastest, so consecutive t
 * are consecutive addresses. */
CARLO_HD void carlo_cell_active(const carlo_cell_grid *g, int set, int64_t t, int xyz[3])
{
    int a = (int)(t % g->half[0]);
    int64_t rest = t / g->half[0];
    int b = (int)(rest % g->half[1]);
    int c = (int)(rest / g->half[1]);
    xyz[0] = 2 * a + (set & 1);
    xyz[1] = 2 * b + (set >> 1 & 1);
    xyz[2] = g->dim == 3 ? 2 * c + (set >> 2 & 1) : 0;
}

/* The neighbour of cell xyz at offset off (each -1, 0 or 1), and the vector s from this cell's
 * local frame to the neighbour's: a particle at u there is at u + s here. */
CARLO_HD int64_t carlo_cell_neighbor(const carlo_cell_grid *g, const int xyz[3], const int off[3],
                                     float s[3])
{
    int n[3] = {0, 0, 0};
    for (int a = 0; a < 3; a++) {
        if (a < g->dim) {
            n[a] = carlo_cell_wrap(xyz[a] + off[a], g->m[a]);
            s[a] = off[a] == 0 ? 0.0f : (off[a] > 0 ? g->w[a] : -g->w[a]);
        } else {
            s[a] = 0.0f;
        }
    }
    return carlo_cell_index(g, n[0], n[1], n[2]);
}

/* Keep a local coordinate inside [0, w) (a guard: exact frames never need it); w_in = w - q. */
CARLO_HD float carlo_cell_clamp_to(float w, float w_in, float u)
{
    if (!(u < w))
        return w_in;
    if (!(u >= 0.0f))
        return 0.0f;
    return u;
}

CARLO_HD float carlo_cell_clamp(const carlo_cell_grid *g, int axis, float u)
{
    return carlo_cell_clamp_to(g->w[axis], g->w_in[axis], u);
}

/* The multiple of q nearest to x (ties to even, the same on host and device; symmetric under
 * negation). */
CARLO_HD float carlo_cell_quantize(const carlo_cell_grid *g, float x)
{
    return rintf(x * (1.0f / g->q)) * g->q;
}

/* Cut an offset r >= 0 from the origin along axis a (double, any size) into a cell k and a
 * local coordinate u, rounding r to a multiple of q first; integer arithmetic from there, so
 * the cut is exact and the same everywhere. */
CARLO_HD void carlo_cell_cut(const carlo_cell_grid *g, int a, double r, int *k, float *u)
{
    int64_t rq = (int64_t)rint(r / (double)g->q);
    int64_t wq = g->wq[a], L = (int64_t)g->m[a] * wq;
    rq %= L;
    if (rq < 0)
        rq += L;
    *k = (int)(rq / wq);
    *u = (float)(rq - (int64_t)*k * wq) * g->q;
}

/* An unbiased integer in [0, n) from word r, falling back to the stream (seed, purpose, step,
 * index, draw) in the rare case Lemire's method rejects the word. */
CARLO_HD uint32_t carlo_cell_below(uint32_t r, uint32_t n, uint64_t seed, uint32_t purpose,
                                   uint64_t step, uint32_t index, uint32_t draw)
{
    uint32_t v;
    if (carlo_below_try(r, n, &v))
        v = carlo_below(seed, purpose, step, index, draw, n);
    return v;
}

/* The order of the 2^dim checkerboard sets in one sweep (MPMC Algorithm 1, line 2): a
 * Fisher-Yates shuffle from the stream (seed, purpose, step). */
CARLO_HD void carlo_cells_set_order(int dim, uint64_t seed, uint32_t purpose, uint64_t step,
                                    int order[8])
{
    int n = 1 << dim;
    for (int i = 0; i < n; i++)
        order[i] = i;
    carlo_u32x4 r[2] = {carlo_rng(seed, purpose, step, 0, 0), carlo_rng(seed, purpose, step, 0, 1)};
    for (int i = n - 1, k = 0; i > 0; i--, k++) {
        uint32_t j = carlo_cell_below(r[k >> 2].v[k & 3], (uint32_t)(i + 1), seed, purpose, step,
                                      1, 16u + (uint32_t)k);
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* The random cell shift after a sweep (Algorithm 1, lines 15-16): an axis and a direction
 * (one of +-x, +-y, +-z) and a distance d uniform in [0, w/2). Drawn on the host and handed to
 * the backends as it is, so that every backend shifts by the same float. */
typedef struct carlo_cell_shift {
    int axis;  /* 0..dim-1 */
    int dir;   /* +1 or -1: the grid moves by dir * d, the particles by -dir * d */
    float d;
} carlo_cell_shift;

CARLO_HD carlo_cell_shift carlo_cells_shift_draw(const carlo_cell_grid *g, uint64_t seed,
                                                 uint32_t purpose, uint64_t step)
{
    carlo_u32x4 r = carlo_rng(seed, purpose, step, 0, 0);
    uint32_t k = carlo_cell_below(r.v[0], 2u * (uint32_t)g->dim, seed, purpose, step, 1, 0);
    carlo_cell_shift sh;
    sh.axis = (int)(k >> 1);
    sh.dir = (k & 1) ? -1 : 1;
    /* a multiple of q, so that u - d is exact */
    sh.d = carlo_cell_quantize(g, carlo_u01f(r.v[1]) * (0.5f * g->w[sh.axis]));
    return sh;
}

/* Mark slots from..nmax-1 of cell c empty and set its count. */
CARLO_HD void carlo_cell_close(const carlo_cell_grid *g, const carlo_cell_data *dst, int64_t c,
                               int from)
{
    for (int j = from; j < g->nmax; j++) {
        for (int a = 0; a < g->dim; a++)
            dst->pos[carlo_cell_slot(g, c, j, a)] = CARLO_CELL_EMPTY;
        for (int k = 0; k < g->naux; k++)
            dst->aux[carlo_cell_slot(g, c, j, k)] = CARLO_CELL_NO_WORD;
    }
    dst->count[c] = (uint32_t)(from < g->nmax ? from : g->nmax);
}

/* Loops over a fixed, small number of slots or planes: unrolled on the GPU, where the arrays
 * they index then live in registers. */
#if defined(__CUDA_ARCH__)
#define CARLO_CELL_UNROLL _Pragma("unroll")
#else
#define CARLO_CELL_UNROLL
#endif

/* Slots the cell shift reads at a time: all of a chunk's loads are issued before any of its
 * values is needed, and the first chunk's before the cell counts are known (on the GPU a load
 * costs a round trip to memory, which one dependent load after another would pay per slot). */
#define CARLO_CELL_CHUNK 4

typedef struct carlo_cell_chunk {
    float p[CARLO_CELL_CHUNK][3];
    uint32_t w[CARLO_CELL_CHUNK][8];
} carlo_cell_chunk;

/* Slots i0 .. i0 + CARLO_CELL_CHUNK - 1 of cell c (those below nmax), dim position planes and
 * naux word planes, whether occupied or not. */
CARLO_HD void carlo_cell_chunk_load(const carlo_cell_grid *g, const carlo_cell_data *src, int64_t c,
                                    int i0, const int dim, const int naux, carlo_cell_chunk *k)
{
    CARLO_CELL_UNROLL
    for (int j = 0; j < CARLO_CELL_CHUNK; j++) {
        if (i0 + j >= g->nmax)
            break;
        CARLO_CELL_UNROLL
        for (int a = 0; a < 3; a++)
            k->p[j][a] = a < dim ? src->pos[carlo_cell_slot(g, c, i0 + j, a)] : 0.0f;
        CARLO_CELL_UNROLL
        for (int b = 0; b < 8; b++)
            k->w[j][b] = b < naux ? src->aux[carlo_cell_slot(g, c, i0 + j, b)] : 0u;
    }
}

/* Store a particle (dim floats, naux words) into slot j of cell c of dst. */
CARLO_HD void carlo_cell_store(const carlo_cell_grid *g, const carlo_cell_data *dst, int64_t c, int j,
                               const int dim, const int naux, const float p[3], const uint32_t w[8])
{
    CARLO_CELL_UNROLL
    for (int a = 0; a < 3; a++)
        if (a < dim)
            dst->pos[carlo_cell_slot(g, c, j, a)] = p[a];
    CARLO_CELL_UNROLL
    for (int b = 0; b < 8; b++)
        if (b < naux)
            dst->aux[carlo_cell_slot(g, c, j, b)] = w[b];
}

/* One side of the shift's gather: the n particles of cell `cell` of src (chunk k holds its
 * first slots), those that stay (arrivals = 0: the new cell's own) or those that cross
 * (arrivals = 1: its neighbour's, moved into its frame), appended to cell dc of dst from slot
 * got on; returns the new count. On the last side, the cell is closed. */
CARLO_HD int carlo_cell_shift_take(const carlo_cell_grid *g, const carlo_cell_data *src, int64_t cell,
                                   int n, const int arrivals, carlo_cell_chunk *k, carlo_cell_shift sh,
                                   const int dim, const int naux, const carlo_cell_grid *dg,
                                   const carlo_cell_data *dst, int64_t dc, int got)
{
    const int ax = sh.axis;
    const float delta = sh.dir > 0 ? sh.d : -sh.d;
    /* the grid's arrays indexed by constants only (a GPU thread would copy the grid to local
     * memory to index it by ax) */
    const float w = ax == 0 ? g->w[0] : (ax == 1 ? g->w[1] : g->w[2]);
    const float w_in = ax == 0 ? g->w_in[0] : (ax == 1 ? g->w_in[1] : g->w_in[2]);
    const float s_ax = sh.dir > 0 ? w : -w; /* the neighbour's frame, seen from the new cell */
    for (int i0 = 0; i0 < n && i0 < g->nmax; i0 += CARLO_CELL_CHUNK) {
        if (i0 > 0)
            carlo_cell_chunk_load(g, src, cell, i0, dim, naux, k);
        CARLO_CELL_UNROLL
        for (int j = 0; j < CARLO_CELL_CHUNK; j++) {
            if (i0 + j >= n || i0 + j >= g->nmax)
                break;
            const float *p = k->p[j];
            const float u = (ax == 0 ? p[0] : (ax == 1 ? p[1] : p[2])) - delta;
            if ((u >= 0.0f && u < w) == (arrivals != 0)) /* the other side takes it */
                continue;
            const float v = arrivals ? carlo_cell_clamp_to(w, w_in, u + s_ax) : u;
            const float q[3] = {ax == 0 ? v : p[0], ax == 1 ? v : p[1], ax == 2 ? v : p[2]};
            if (got < g->nmax)
                carlo_cell_store(dg, dst, dc, got, dim, naux, q, k->w[j]);
            got++;
        }
    }
    if (arrivals)
        carlo_cell_close(dg, dst, dc, got);
    return got;
}

/* Algorithm 4: cell xyz of the shifted grid, gathered from the same cell of src (the particles
 * that stay) and from its neighbour in direction dir (the particles that cross). Both gathers
 * compute u - dir*d with the same operands and test it with the same predicate, so each
 * particle is taken by exactly one new cell: none is lost or doubled, whatever the rounding.
 * The cell's own particles keep their order and come first, then the arrivals in theirs.
 * Returns the number of particles the new cell received (more than nmax: an overflow, the
 * extra ones are not stored). dim and naux are g's; a GPU kernel passes them as literal
 * constants, so that the chunks stay in registers. The new cell is written to cell dc of
 * storage dst laid out by grid dg (g itself and the cell's own index, or a scratch storage of
 * the same nmax that a GPU kernel then copies out slot by slot). */
CARLO_HD int carlo_cell_shift_gather_into(const carlo_cell_grid *g, const carlo_cell_data *src,
                                          const int xyz[3], carlo_cell_shift sh, const int dim,
                                          const int naux, const carlo_cell_grid *dg,
                                          const carlo_cell_data *dst, int64_t dc)
{
    const int ax = sh.axis;
    const int64_t c = carlo_cell_index(g, xyz[0], xyz[1], xyz[2]);
    int nxyz[3] = {xyz[0], xyz[1], xyz[2]};
    if (ax == 0)
        nxyz[0] = carlo_cell_wrap(xyz[0] + sh.dir, g->m[0]);
    else if (ax == 1)
        nxyz[1] = carlo_cell_wrap(xyz[1] + sh.dir, g->m[1]);
    else
        nxyz[2] = carlo_cell_wrap(xyz[2] + sh.dir, g->m[2]);
    const int64_t cn = carlo_cell_index(g, nxyz[0], nxyz[1], nxyz[2]);
    carlo_cell_chunk own, nb;
    carlo_cell_chunk_load(g, src, c, 0, dim, naux, &own);
    carlo_cell_chunk_load(g, src, cn, 0, dim, naux, &nb);
    const int n_own = (int)src->count[c], n_nb = (int)src->count[cn];
    int got = carlo_cell_shift_take(g, src, c, n_own, 0, &own, sh, dim, naux, dg, dst, dc, 0);
    return carlo_cell_shift_take(g, src, cn, n_nb, 1, &nb, sh, dim, naux, dg, dst, dc, got);
}

/* The same, written in place: cell xyz of dst (grid g). */
CARLO_HD int carlo_cell_shift_gather_n(const carlo_cell_grid *g, const carlo_cell_data *src,
                                       const carlo_cell_data *dst, const int xyz[3],
                                       carlo_cell_shift sh, const int dim, const int naux)
{
    return carlo_cell_shift_gather_into(g, src, xyz, sh, dim, naux, g, dst,
                                        carlo_cell_index(g, xyz[0], xyz[1], xyz[2]));
}

CARLO_HD int carlo_cell_shift_gather(const carlo_cell_grid *g, const carlo_cell_data *src,
                                     const carlo_cell_data *dst, const int xyz[3],
                                     carlo_cell_shift sh)
{
    return carlo_cell_shift_gather_n(g, src, dst, xyz, sh, g->dim, g->naux);
}

/* Where a particle goes when the box is scaled by lam[a] along each axis (about the grid's
 * origin) and re-cut into the cells of grid ng: its offset from the origin r = c w + u (exact
 * in double) is scaled, then cut again (carlo_cell_cut). Used by volume moves and compression;
 * a pure function, so whichever thread evaluates it gets the same answer. */
CARLO_HD void carlo_cell_regrid_map(const carlo_cell_grid *og, const carlo_cell_grid *ng,
                                    const double lam[3], const int c[3], const float u[3],
                                    int cn[3], float un[3])
{
    for (int a = 0; a < og->dim; a++) {
        double r = ((double)c[a] * og->width[a] + (double)u[a]) * lam[a];
        carlo_cell_cut(ng, a, r, &cn[a], &un[a]);
    }
    if (og->dim == 2) {
        cn[2] = 0;
        un[2] = 0.0f;
    }
}

/* Cell xyz of grid ng, gathered from the cells of og whose particles can land in it after the
 * scaling (a range of old cells per axis, walked in index order so the result is the same on
 * every backend). To scale the box itself, lam[a] is ng's side over og's. Returns the number received (more than nmax: an overflow, which for hard
 * particles can only mean overlaps). */
CARLO_HD int carlo_cell_regrid_gather(const carlo_cell_grid *og, const carlo_cell_data *src,
                                      const carlo_cell_grid *ng, const carlo_cell_data *dst,
                                      const double lam[3], const int xyz[3])
{
    int lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (int a = 0; a < og->dim; a++) {
        double Lo = (double)og->m[a] * og->width[a], Ln = (double)ng->m[a] * ng->width[a];
        if (og->m[a] == ng->m[a] && lam[a] >= 0.75 && fabs(lam[a] * Lo - Ln) <= 0.25 * ng->q) {
            /* the same cut, scaled to the new box: r' = lam (c w + u) is within q/4 of
             * c w' + u w'/w, and u <= w - q keeps that more than q/2 from either edge, so the
             * particle stays in cell c and only the same old cell can contribute */
            lo[a] = hi[a] = xyz[a];
            continue;
        }
        lo[a] = (int)((int64_t)xyz[a] * og->m[a] / ng->m[a]) - 1;
        hi[a] = (int)((int64_t)(xyz[a] + 1) * og->m[a] / ng->m[a]) + 1;
        if (hi[a] - lo[a] + 1 >= og->m[a]) { /* the range wraps onto itself: take each once */
            lo[a] = 0;
            hi[a] = og->m[a] - 1;
        }
    }
    const int64_t cnew = carlo_cell_index(ng, xyz[0], xyz[1], xyz[2]);
    int got = 0;
    for (int k = lo[2]; k <= hi[2]; k++)
        for (int j = lo[1]; j <= hi[1]; j++)
            for (int i = lo[0]; i <= hi[0]; i++) {
                int oc[3] = {carlo_cell_wrap(i, og->m[0]), carlo_cell_wrap(j, og->m[1]),
                             og->dim == 3 ? carlo_cell_wrap(k, og->m[2]) : 0};
                int64_t c = carlo_cell_index(og, oc[0], oc[1], oc[2]);
                int n = (int)src->count[c];
                for (int s = 0; s < n; s++) {
                    float u[3] = {0.0f, 0.0f, 0.0f}, un[3];
                    int cn[3];
                    for (int a = 0; a < og->dim; a++)
                        u[a] = src->pos[carlo_cell_slot(og, c, s, a)];
                    carlo_cell_regrid_map(og, ng, lam, oc, u, cn, un);
                    if (cn[0] != xyz[0] || cn[1] != xyz[1] || cn[2] != xyz[2])
                        continue;
                    if (got < ng->nmax) {
                        for (int a = 0; a < ng->dim; a++)
                            dst->pos[carlo_cell_slot(ng, cnew, got, a)] = un[a];
                        for (int w = 0; w < ng->naux; w++)
                            dst->aux[carlo_cell_slot(ng, cnew, got, w)] =
                                src->aux[carlo_cell_slot(og, c, s, w)];
                    }
                    got++;
                }
            }
    carlo_cell_close(ng, dst, cnew, got);
    return got;
}

#endif
