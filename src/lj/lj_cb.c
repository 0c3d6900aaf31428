/* lj_cb.c — the checkerboard mode of the Lennard-Jones model on the shared cell grid
 * (core/cells.h): planning the grid, filling it, the sub-sweep of one active cell (the CPU
 * backend runs it over a set with OpenMP; the GPU runs the same sequence per block), the cell
 * shift drawn for both backends, and from-scratch energies, positions and Widom insertions
 * read from the cells. */
#if defined(__GNUC__) && !defined(__clang__)
/* lets gcc if-convert the float selects of cb_lanes_all into SIMD code; it changes no value,
 * and it must cover the inline functions of the headers too, or they would not be inlined */
#pragma GCC optimize("no-trapping-math")
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "lj/lj.h"

/* Lanes per active cell when none are asked for: one warp per cell (32, the near-candidate
 * sum) from this many active cells per sub-sweep (20^3 cells: 32 lanes 1.5 times as fast as
 * 128), 128 below, where one warp per cell leaves the GPU idle (16^3: 128 lanes 7 % faster;
 * H100, rho = 0.8: scripts/bench/lj.lua, BENCHMARKS.md). */
#define LJ_CB_WARP_FROM 1000

int lj_cb_setup(lj_system *s, const lj_params *p)
{
    lj_cb *cb = &s->cb;
    memset(cb, 0, sizeof *cb);
    carlo_box box = carlo_box_make(p->dim, p->box);
    /* a hair above rc: the float width must not round below the cutoff */
    if (carlo_cells_plan(&cb->grid, &box, p->rc * (1.0 + 1e-6), INFINITY, p->rc, 1, 1))
        return carlo_seterr("mode = \"checkerboard\": %s (cells at least rc = %g wide, an even "
                            "number of at least 2 per axis)", carlo_errmsg(), p->rc);
    lj_cbgeom *g = &cb->geom;
    g->dim = p->dim;
    for (int a = 0; a < 3; a++) {
        g->w[a] = cb->grid.w[a];
        g->h[a] = cb->grid.q; /* coordinates within two cells exact in the active cell's frame */
    }
    g->rc2 = (float)(p->rc * p->rc);
    g->rcm = (float)(p->rc + 1e-3 * (1.0 + p->rc));
    if (p->shift) { /* u(rc) by lj_pair_f's operations */
        float ir2 = 1.0f / g->rc2, ir6 = ir2 * ir2 * ir2;
        g->ushift = 4.0f * ir6 * (ir6 - 1.0f);
    }
    int passes = p->passes ? p->passes : 1;
    if (passes < 1 || passes > 1000)
        return carlo_seterr("passes must be an integer from 1 to 1000 (got %d)", p->passes);
    cb->passes = passes;
    if (p->lanes && p->lanes != 32 && p->lanes != 64 && p->lanes != 128)
        return carlo_seterr("lanes must be 32, 64 or 128 (got %d)", p->lanes);
    cb->lanes_auto = p->lanes == 0;
    g->lanes = p->lanes ? p->lanes : carlo_cell_set_size(&cb->grid) >= LJ_CB_WARP_FROM ? 32 : 128;
    return 0;
}

int lj_cb_cells_alloc(const lj_system *s, carlo_cell_data *d)
{
    return carlo_cell_data_alloc(&s->cb.grid, d);
}

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

int lj_cb_fresh(const lj_system *s, const carlo_cell_data *d, double *U, double *W)
{
    const carlo_cell_grid *g = &s->cb.grid;
    double *cell = carlo_malloc(carlo_mulsize((size_t)g->ncells, 2 * sizeof(double)), "cell energies");
    if (!cell)
        return -1;
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t c = 0; c < g->ncells; c++)
        lj_cb_cell_energy(g, &s->cb.geom, d, c, &cell[2 * c], &cell[2 * c + 1]);
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

/* ---------- filling the grid ---------- */

static int max_count(const lj_system *s, const double *pos, int *most)
{
    const carlo_cell_grid *g = &s->cb.grid;
    uint32_t *cnt = carlo_calloc((size_t)g->ncells, sizeof *cnt, "cell counts");
    if (!cnt)
        return -1;
    *most = 0;
    for (uint32_t i = 0; i < s->N; i++) {
        int xyz[3] = {0, 0, 0};
        for (int a = 0; a < g->dim; a++) {
            int k = (int)floor(pos[3 * i + a] / g->width[a]);
            xyz[a] = k < 0 ? 0 : (k >= g->m[a] ? g->m[a] - 1 : k);
        }
        int64_t c = carlo_cell_index(g, xyz[0], xyz[1], xyz[2]);
        if ((int)++cnt[c] > *most)
            *most = (int)cnt[c];
    }
    free(cnt);
    return 0;
}

int lj_cb_install(lj_system *s, const double *pos)
{
    carlo_cell_grid *g = &s->cb.grid;
    int most;
    if (max_count(s, pos, &most))
        return -1;
    /* room for fluctuations; a shift that overfills a cell makes every cell larger. Kept
     * small: a GPU block stages 27 cells of nmax slots in shared memory */
    int nmax = most + most / 2 + 8;
    if (nmax > CARLO_CELL_NMAX_LIMIT)
        nmax = CARLO_CELL_NMAX_LIMIT;
    if (most > nmax)
        return carlo_seterr("a cell would hold %d particles, more than %d", most, CARLO_CELL_NMAX_LIMIT);
    g->nmax = nmax;
    carlo_cell_data d;
    uint32_t *index = carlo_malloc(sizeof *index * s->N, "particle indices");
    if (!index || lj_cb_cells_alloc(s, &d)) {
        free(index);
        return -1;
    }
    for (uint32_t i = 0; i < s->N; i++)
        index[i] = i;
    int rc = carlo_cells_fill(g, &d, s->N, pos, index);
    free(index);
    /* onto the coordinate grid (a displacement of at most h / 2) */
    for (int64_t c = 0; rc == 0 && c < g->ncells; c++)
        for (int i = 0; i < (int)d.count[c]; i++)
            for (int a = 0; a < g->dim; a++) {
                float *u = &d.pos[carlo_cell_slot(g, c, i, a)];
                float h = s->cb.geom.h[a];
                float v = (float)(rint((double)*u / (double)h) * (double)h);
                if (!(v < g->w[a]))
                    v = g->w[a] - h;
                *u = v;
            }
    if (rc == 0)
        rc = lj_cb_fresh(s, &d, &s->cb.U0, &s->cb.W0);
    double *acc = rc ? NULL : carlo_calloc((size_t)g->ncells * 2, sizeof *acc, "per-cell sums");
    if (!rc && !acc)
        rc = -1;
    if (!rc)
        rc = s->be->cb_upload(s, &d, acc, acc + g->ncells);
    s->U = s->cb.U0;
    s->W = s->cb.W0;
    free(acc);
    carlo_cell_data_free(&d);
    return rc;
}

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
carlo_cell_shift lj_cb_shift(const lj_system *s, uint64_t sweep)
{
    const carlo_cell_grid *g = &s->cb.grid;
    carlo_u32x4 r = carlo_rng(s->seed, LJ_PURPOSE_CB_SHIFT, sweep, 0, 0);
    uint32_t k;
    if (carlo_below_try(r.v[0], 2u * (uint32_t)g->dim, &k))
        k = carlo_below(s->seed, LJ_PURPOSE_CB_SHIFT, sweep, 1, 0, 2u * (uint32_t)g->dim);
    carlo_cell_shift sh;
    sh.axis = (int)(k >> 1);
    sh.dir = (k & 1) ? -1 : 1;
    float w = g->w[sh.axis], h = s->cb.geom.h[sh.axis];
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
uint64_t lj_cb_cell_subsweep(const lj_system *s, const carlo_cell_data *d, int64_t cell,
                             uint64_t step, double *du, double *dw)
{
    const carlo_cell_grid *g = &s->cb.grid;
    lj_cbgeom G = s->cb.geom;
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
    const int moves = n * s->cb.passes;
    for (int k = 0; k < moves; k++) {
        const int slot = perm[k % n], me = start[centre] + slot;
        float dd[3];
        double logu = lj_cb_trial(&G, s->seed, step, (uint32_t)cell, (uint32_t)k, dd);
        float o[3] = {c[0][me], c[1][me], c[2][me]};
        float nw[3] = {o[0] + dd[0], o[1] + dd[1], o[2] + dd[2]};
        if (!lj_cb_inside(&G, nw))
            continue;
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
        if (lj_cb_accept(lane[0].u, s->beta, logu)) {
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

/* ---------- reading the cells ---------- */

int lj_cb_positions(lj_system *s, double *pos)
{
    const carlo_cell_grid *g = &s->cb.grid;
    carlo_cell_data d;
    if (lj_cb_cells_alloc(s, &d))
        return -1;
    if (s->be->cb_download(s, &d, NULL, NULL)) {
        carlo_cell_data_free(&d);
        return -1;
    }
    int64_t k = 0;
    for (int64_t c = 0; c < g->ncells; c++) {
        int xyz[3];
        carlo_cell_coords(g, c, xyz);
        for (int i = 0; i < (int)d.count[c]; i++, k++) {
            uint32_t idx = d.aux[carlo_cell_slot(g, c, i, 0)];
            if (idx >= s->N)
                continue;
            for (int a = 0; a < 3; a++)
                pos[3 * (size_t)idx + a] =
                    a < g->dim ? lj_wrap((double)xyz[a] * g->width[a] +
                                             (double)d.pos[carlo_cell_slot(g, c, i, a)], s->g.L[a])
                               : 0.0;
        }
    }
    carlo_cell_data_free(&d);
    if (k != (int64_t)s->N)
        return carlo_seterr("the cells hold %lld particles, not %u", (long long)k, s->N);
    return 0;
}

int lj_cb_widom(lj_system *s, uint32_t n, uint64_t sample, double *out)
{
    const carlo_cell_grid *g = &s->cb.grid;
    const lj_cbgeom *G = &s->cb.geom;
    carlo_cell_data d;
    if (lj_cb_cells_alloc(s, &d))
        return -1;
    if (s->be->cb_download(s, &d, NULL, NULL)) {
        carlo_cell_data_free(&d);
        return -1;
    }
    double tail = lj_widom_tail(s);
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < (int64_t)n; k++) {
        double p[3];
        lj_widom_position(&s->g, s->seed, sample, (uint32_t)k, p);
        int xyz[3] = {0, 0, 0};
        float a[3] = {0, 0, 0};
        for (int x = 0; x < g->dim; x++) {
            int c = (int)floor(p[x] / g->width[x]);
            c = c < 0 ? 0 : (c >= g->m[x] ? g->m[x] - 1 : c);
            xyz[x] = c;
            a[x] = carlo_cell_clamp(g, x, (float)(p[x] - (double)c * g->width[x]));
        }
        double su = 0.0;
        for (int q = 0; q < lj_neighbour_count(g->dim); q++) {
            int off[3];
            float sh[3];
            offset_of(g->dim, q, off);
            int64_t cq = carlo_cell_neighbor(g, xyz, off, sh);
            for (int j = 0; j < (int)d.count[cq]; j++) {
                float b[3] = {0, 0, 0};
                for (int x = 0; x < g->dim; x++)
                    b[x] = d.pos[carlo_cell_slot(g, cq, j, x)];
                float u, w;
                lj_pair_f(lj_cb_r2(a, b, sh), G->rc2, G->ushift, &u, &w);
                su += (double)u;
            }
        }
        out[k] = lj_widom_factor(su, tail, s->beta);
    }
    carlo_cell_data_free(&d);
    return 0;
}
