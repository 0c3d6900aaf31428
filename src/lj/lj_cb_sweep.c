/* lj_cb_sweep.c — the pieces of a checkerboard sweep of the Lennard-Jones model that both
 * backends use (lj_cb.h): the sub-sweep of one active cell (the CPU backend runs it over a set
 * with OpenMP; the GPU runs the same sequence per warp or block), the cell shift drawn for
 * both, growing the cells, and the from-scratch energy of host cells. */
#if defined(__GNUC__) && !defined(__clang__)
/* lets gcc if-convert the float selects of cb_lanes_all into SIMD code; it changes no value,
 * and it must cover the inline functions of the headers too, or they would not be inlined */
#pragma GCC optimize("no-trapping-math")
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "lj/lj_cb.h"

double lj_cb_total(const double *acc, int64_t ncells)
{
    double t = 0.0;
    for (int64_t c = 0; c < ncells; c++)
        t += acc[c];
    return t;
}

/* The 27 (9) neighbour offsets in the canonical order: dz, dy, dx from -1 to 1. */
static void offset_of(int dim, int q, int off[3])
{
    off[0] = q % 3 - 1;
    off[1] = (q / 3) % 3 - 1;
    off[2] = dim == 3 ? q / 9 - 1 : 0;
}

/* ---------- from-scratch energy ---------- */

int lj_cb_fresh(const lj_cb_system *s, const carlo_cell_data *d, double *U, double *W)
{
    const carlo_cell_grid *g = &s->grid;
    double *cell = carlo_malloc(carlo_mulsize((size_t)g->ncells, 2 * sizeof(double)), "cell energies");
    if (!cell)
        return -1;
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t c = 0; c < g->ncells; c++)
        lj_cb_cell_energy(g, &s->geom, d, c, &cell[2 * c], &cell[2 * c + 1]);
    double u = 0.0, w = 0.0;
    for (int64_t c = 0; c < g->ncells; c++) {
        u += cell[2 * c];
        w += cell[2 * c + 1];
    }
    free(cell);
    *U = 0.5 * u;
    *W = 0.5 * w;
    if (!isfinite(*U) || !isfinite(*W))
        return carlo_seterr("the energy is not finite (%g): particles overlap", *U);
    return 0;
}

/* ---------- growing the cells ---------- */

int lj_cb_grow(const carlo_cell_grid *g, const carlo_cell_data *src, int nmax, carlo_cell_data *dst)
{
    carlo_cell_grid ng = *g;
    ng.nmax = nmax;
    if (carlo_cell_data_alloc(&ng, dst))
        return -1;
    for (int64_t c = 0; c < g->ncells; c++) {
        for (int i = 0; i < (int)src->count[c]; i++) {
            for (int a = 0; a < g->dim; a++)
                dst->pos[carlo_cell_slot(&ng, c, i, a)] = src->pos[carlo_cell_slot(g, c, i, a)];
            for (int k = 0; k < g->naux; k++)
                dst->aux[carlo_cell_slot(&ng, c, i, k)] = src->aux[carlo_cell_slot(g, c, i, k)];
        }
        dst->count[c] = src->count[c];
    }
    return 0;
}

/* ---------- a sweep's pieces ---------- */

/* The cell shift after sweep `sweep`: an axis, a direction and a distance on the coordinate
 * grid, below half a cell and small enough that a crossing particle's u - d + w stays exact. */
carlo_cell_shift lj_cb_shift(const lj_cb_system *s, uint64_t sweep)
{
    const carlo_cell_grid *g = &s->grid;
    carlo_u32x4 r = carlo_rng(s->seed, LJ_PURPOSE_CB_SHIFT, sweep, 0, 0);
    uint32_t k;
    if (carlo_below_try(r.v[0], 2u * (uint32_t)g->dim, &k))
        k = carlo_below(s->seed, LJ_PURPOSE_CB_SHIFT, sweep, 1, 0, 2u * (uint32_t)g->dim);
    carlo_cell_shift sh;
    sh.axis = (int)(k >> 1);
    sh.dir = (k & 1) ? -1 : 1;
    float w = g->w[sh.axis], h = s->geom.h[sh.axis];
    int e;
    frexpf(w, &e);
    double top = fmin(0.5 * w, ldexp(1.0, e) - w); /* u + d < 2^e: still exact */
    uint32_t K = (uint32_t)(top / h);
    uint32_t j = 0;
    if (K > 1 && carlo_below_try(r.v[1], K, &j))
        j = carlo_below(s->seed, LJ_PURPOSE_CB_SHIFT, sweep, 2, 0, K);
    sh.d = (float)((double)j * (double)h);
    return sh;
}

uint64_t lj_cb_set_members(const carlo_cell_grid *g, const uint32_t *count, int set)
{
    uint64_t n = 0;
    for (int64_t t = 0; t < carlo_cell_set_size(g); t++) {
        int xyz[3];
        carlo_cell_active(g, set, t, xyz);
        n += count[carlo_cell_index(g, xyz[0], xyz[1], xyz[2])];
    }
    return n;
}

/* Which of the M candidates (at c[0..2], the active cell's frame) are near the move with
 * midpoint m and squared near radius r2: lj_cb_near, in SIMD (clones with fused multiply-adds). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void cb_near_flags(int M, const float *const c[3], const float m[3], float r2, uint8_t *flag)
{
    const float *cx = c[0], *cy = c[1], *cz = c[2];
#pragma omp simd
    for (int k = 0; k < M; k++)
        flag[k] = lj_cb_near(m, cx[k], cy[k], cz[k], r2);
}

/* One trial move's T lanes over all M candidates (at c[0..2], the active cell's frame),
 * skipping candidate `me`: written for SIMD, every lane one sequence of exactly rounded
 * operations, a skipped or distant candidate adding +0 (which changes no lane). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void cb_lanes_all(const lj_cbgeom *G, int M, const float *const c[3], const float o[3],
                         const float n[3], int me, int T, double *lu, double *lw)
{
    const float *cx = c[0], *cy = c[1], *cz = c[2];
    const float rc2 = G->rc2, ushift = G->ushift;
    for (int base = 0; base < M; base += T) {
        int len = M - base < T ? M - base : T;
#pragma omp simd
        for (int l = 0; l < len; l++) {
            int kk = base + l;
            float uo, wo, un, wn;
            float ro = lj_cb_r2x(o, cx[kk], cy[kk], cz[kk]);
            float rn = lj_cb_r2x(n, cx[kk], cy[kk], cz[kk]);
            /* the terms inside the cutoff, computed for every lane (SIMD), kept where wanted */
            lj_pair_f_terms(ro, ushift, &uo, &wo);
            lj_pair_f_terms(rn, ushift, &un, &wn);
            int ko = (ro < rc2) & (kk != me), kn = (rn < rc2) & (kk != me);
            double du = (double)(kn ? un : 0.0f) - (double)(ko ? uo : 0.0f);
            double dw = (double)(kn ? wn : 0.0f) - (double)(ko ? wo : 0.0f);
            lu[l] = lu[l] + du;
            lw[l] = lw[l] + dw;
        }
    }
}

/* One trial move (o -> n by d) on the 32 lanes of the near-candidate order (lj_kernel.h). c:
 * the M candidates in the active cell's frame (SoA), flag: room for M near flags, near: for M
 * indices. */
static void cb_lanes_near(const lj_cbgeom *G, int M, const float *const c[3], const float o[3],
                          const float d[3], const float n[3], int me, uint8_t *flag, int *near,
                          double *lu, double *lw)
{
    float m[3];
    lj_cb_mid(o, d, m);
    cb_near_flags(M, c, m, lj_cb_near_r2(G, d), flag);
    flag[me] = 0;
    int h = 0;
    for (int k = 0; k < M; k++) { /* branch-free compaction */
        near[h] = k;
        h += flag[k];
    }
    for (int l = 0; l < LJ_CB_WARP; l++)
        lu[l] = lw[l] = 0.0;
    for (int i = 0; i < h; i++) {
        const int k = near[i], l = i % LJ_CB_WARP;
        lj_cb_candidate(G, o, n, c[0][k], c[1][k], c[2][k], &lu[l], &lw[l]);
    }
}

/* One active cell's sub-sweep: its particles visited `passes` times in a random order, each
 * trial move's energy change summed over the members of the neighbour cells in the canonical
 * lanes of lj_kernel.h. du, dw: the sum of the accepted changes in order. Returns the number accepted. */
uint64_t lj_cb_cell_subsweep(const lj_cb_system *s, const carlo_cell_data *d, int64_t cell,
                             uint64_t step, const lj_tether *th, double *du, double *dw)
{
    const carlo_cell_grid *g = &s->grid;
    lj_cbgeom G = s->geom;
    lj_cb_set_delta(&G, s->delta);
    const int n = (int)d->count[cell];
    *du = *dw = 0.0;
    if (n == 0)
        return 0;
    int xyz[3];
    carlo_cell_coords(g, cell, xyz);
    /* the candidates: members of the neighbour cells in canonical order, with their cells */
    const int nq = lj_neighbour_count(g->dim);
    int start[LJ_NEIGH_MAX + 1];
    float sh[LJ_NEIGH_MAX][3];
    int64_t cq[LJ_NEIGH_MAX];
    start[0] = 0;
    int centre = -1;
    for (int q = 0; q < nq; q++) {
        int off[3];
        offset_of(g->dim, q, off);
        cq[q] = carlo_cell_neighbor(g, xyz, off, sh[q]);
        start[q + 1] = start[q] + (int)d->count[cq[q]];
        if (off[0] == 0 && off[1] == 0 && off[2] == 0)
            centre = q;
    }
    const int M = start[nq];
    float *buf = malloc(sizeof(float) * 3 * (size_t)(M ? M : 1));
    uint8_t *flag = malloc((size_t)(M ? M : 1));
    int *near = malloc(sizeof(int) * (size_t)(M ? M : 1));
    int *perm = malloc(sizeof(int) * (size_t)n);
    if (!buf || !flag || !near || !perm) { /* cannot happen for cells of at most 1024: keep the state whole */
        free(buf);
        free(flag);
        free(near);
        free(perm);
        return 0;
    }
    float *c[3]; /* the candidates in the active cell's frame: b + s, exact (lj_kernel.h) */
    for (int a = 0; a < 3; a++)
        c[a] = buf + (size_t)a * (size_t)M;
    for (int q = 0; q < nq; q++)
        for (int j = 0; j < (int)d->count[cq[q]]; j++) {
            int k = start[q] + j;
            for (int a = 0; a < 3; a++)
                c[a][k] = a < g->dim ? d->pos[carlo_cell_slot(g, cq[q], j, a)] + sh[q][a] : 0.0f;
        }
    lj_cb_order(s->seed, step, (uint32_t)cell, n, perm);
    const int T = G.lanes;
    double lu[LJ_LANES], lw[LJ_LANES];
    lj_uw lane[LJ_LANES];
    uint64_t accepted = 0;
    const int moves = n * s->passes;
    for (int k = 0; k < moves; k++) {
        const int slot = perm[k % n], me = start[centre] + slot;
        float dd[3];
        double logu = lj_cb_trial(&G, s->seed, step, (uint32_t)cell, (uint32_t)k, dd);
        float o[3] = {c[0][me], c[1][me], c[2][me]};
        float nw[3] = {o[0] + dd[0], o[1] + dd[1], o[2] + dd[2]};
        if (!lj_cb_inside(&G, nw))
            continue;
        double dT = 0.0;
        if (th) { /* the tether: particle 0 stays; the others' change in beta U_t */
            const uint32_t tag = d->aux[carlo_cell_slot(g, cell, slot, 0)];
            if (tag == 0u)
                continue;
            double cc[3];
            carlo_tether_offset(g, g->dim, xyz, th->origin, th->L, 0, th->site + 3 * (size_t)tag, cc);
            dT = carlo_tether_dE(th->lambda, th->L, g->dim, cc, o, nw);
        }
        if (T == LJ_CB_WARP) {
            cb_lanes_near(&G, M, (const float *const *)c, o, dd, nw, me, flag, near, lu, lw);
        } else {
            for (int l = 0; l < T; l++)
                lu[l] = lw[l] = 0.0;
            cb_lanes_all(&G, M, (const float *const *)c, o, nw, me, T, lu, lw);
        }
        for (int l = 0; l < T; l++) {
            lane[l].u = lu[l];
            lane[l].w = lw[l];
        }
        lj_tree(lane, (uint32_t)T);
        if (th ? lj_cb_accept_tether(lane[0].u, s->beta, dT, logu) : lj_cb_accept(lane[0].u, s->beta, logu)) {
            c[0][me] = nw[0];
            c[1][me] = nw[1];
            c[2][me] = nw[2];
            *du = *du + lane[0].u;
            *dw = *dw + lane[0].w;
            accepted++;
        }
    }
    for (int i = 0; i < n; i++)
        for (int a = 0; a < g->dim; a++)
            d->pos[carlo_cell_slot(g, cell, i, a)] = c[a][start[centre] + i];
    free(buf);
    free(flag);
    free(near);
    free(perm);
    return accepted;
}
