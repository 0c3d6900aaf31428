/* lj_dec_cpu.c — the CPU backend of the decomposition algorithm (lj_dec.h): moves one at a
 * time, each energy summed in the canonical lanes-and-tiles order of lj_kernel.h (tiles in
 * parallel with OpenMP when there are many), cell lists kept exactly as the GPU keeps them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h"
#include "lj/lj_dec.h"

typedef struct cpu_impl {
    double *x, *y, *z;   /* N positions */
    /* cell lists (sum = cells): slot[(c * cap + m) * 4 + 0..3] = x, y, z, index */
    int32_t cap;
    int32_t *count;      /* ncell */
    double *slot;
    int32_t *cell_of, *slot_of; /* N */
} cpu_impl;

static cpu_impl *impl(lj_dec_system *s) { return s->impl; }

static void free_cells(cpu_impl *im)
{
    free(im->count);
    free(im->slot);
    free(im->cell_of);
    free(im->slot_of);
    im->count = im->cell_of = im->slot_of = NULL;
    im->slot = NULL;
}

static int cpu_create(lj_dec_system *s)
{
    cpu_impl *im = carlo_calloc(1, sizeof *im, "the Lennard-Jones CPU backend");
    if (!im)
        return -1;
    s->impl = im;
    size_t n = s->N;
    im->x = carlo_malloc(sizeof(double) * n, "positions");
    im->y = im->x ? carlo_malloc(sizeof(double) * n, "positions") : NULL;
    im->z = im->y ? carlo_malloc(sizeof(double) * n, "positions") : NULL;
    return im->z ? 0 : -1;
}

static void cpu_destroy(lj_dec_system *s)
{
    cpu_impl *im = impl(s);
    if (!im)
        return;
    free(im->x);
    free(im->y);
    free(im->z);
    free_cells(im);
    free(im);
    s->impl = NULL;
}

/* Lay the lists out with capacity cap; order/count in canonical form. */
static int layout_cells(lj_dec_system *s, const int32_t *order, const int32_t *count, int32_t cap)
{
    cpu_impl *im = impl(s);
    size_t nc = (size_t)s->ncell;
    int32_t *cnt = carlo_malloc(sizeof *cnt * nc, "cell counts");
    double *slot = cnt ? carlo_malloc(carlo_mulsize(carlo_mulsize(nc, (size_t)cap), 4 * sizeof(double)),
                                      "cell lists") : NULL;
    int32_t *cell_of = slot ? carlo_malloc(sizeof *cell_of * s->N, "cell lists") : NULL;
    int32_t *slot_of = cell_of ? carlo_malloc(sizeof *slot_of * s->N, "cell lists") : NULL;
    if (!slot_of) {
        free(cnt);
        free(slot);
        free(cell_of);
        return -1;
    }
    size_t k = 0;
    for (size_t c = 0; c < nc; c++) {
        cnt[c] = count[c];
        for (int32_t m = 0; m < count[c]; m++, k++) {
            int32_t i = order[k];
            double *e = slot + ((c * (size_t)cap) + (size_t)m) * 4;
            e[0] = im->x[i];
            e[1] = im->y[i];
            e[2] = im->z[i];
            e[3] = (double)i;
            cell_of[i] = (int32_t)c;
            slot_of[i] = m;
        }
    }
    free_cells(im);
    im->cap = cap;
    s->cell_cap = cap;
    im->count = cnt;
    im->slot = slot;
    im->cell_of = cell_of;
    im->slot_of = slot_of;
    return 0;
}

static void canonical_cells(lj_dec_system *s, int32_t *order, int32_t *count)
{
    cpu_impl *im = impl(s);
    size_t k = 0;
    for (int c = 0; c < s->ncell; c++) {
        count[c] = im->count[c];
        for (int32_t m = 0; m < im->count[c]; m++)
            order[k++] = (int32_t)im->slot[(((size_t)c * (size_t)im->cap) + (size_t)m) * 4 + 3];
    }
}

static int cpu_upload(lj_dec_system *s, const double *pos, const lj_cell_lists *cells)
{
    cpu_impl *im = impl(s);
    for (uint32_t i = 0; i < s->N; i++) {
        im->x[i] = pos[3 * i];
        im->y[i] = pos[3 * i + 1];
        im->z[i] = pos[3 * i + 2];
    }
    if (!cells)
        return 0;
    int32_t most = 0;
    for (int c = 0; c < s->ncell; c++)
        most = cells->count[c] > most ? cells->count[c] : most;
    return layout_cells(s, cells->order, cells->count, most + most / 2 + 8);
}

static int cpu_download(lj_dec_system *s, double *pos, lj_cell_lists *cells)
{
    cpu_impl *im = impl(s);
    for (uint32_t i = 0; i < s->N; i++) {
        pos[3 * i] = im->x[i];
        pos[3 * i + 1] = im->y[i];
        pos[3 * i + 2] = im->z[i];
    }
    if (cells && s->sum == LJ_SUM_CELLS)
        canonical_cells(s, cells->order, cells->count);
    return 0;
}

/* Double the capacity, keeping every list's order. */
static int grow_cells(lj_dec_system *s)
{
    cpu_impl *im = impl(s);
    lj_cell_lists c;
    if (lj_cell_lists_alloc(s, &c))
        return -1;
    canonical_cells(s, c.order, c.count);
    int rc = layout_cells(s, c.order, c.count, im->cap * 2);
    lj_cell_lists_free(&c);
    return rc;
}

/* ---------- the canonical sums ---------- */

/* One tile of the sum over every particle but `skip`. The lane loop is written for SIMD:
 * every candidate's terms are computed and those beyond rc (or `skip`) add +0, which leaves a
 * lane's bits unchanged (a lane sum is never -0), so the lanes hold exactly what
 * lj_accumulate would give. Wider vectors change nothing either: each lane is one sequence
 * of exactly rounded operations, and the build forbids FMA contraction. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static lj_uw tile_sum(const lj_dec_system *s, const cpu_impl *im, const double p[3], uint32_t skip,
                      uint32_t t, uint32_t C)
{
    const lj_geom *g = &s->g;
    const double L0 = g->L[0], L1 = g->L[1], L2 = g->L[2];
    const double h0 = g->half[0], h1 = g->half[1], h2 = g->half[2];
    const double rc2 = g->rc2, ushift = g->ushift, p0 = p[0], p1 = p[1], p2 = p[2];
    const double *X = im->x, *Y = im->y, *Z = im->z;
    double lu[LJ_LANES], lw[LJ_LANES];
    for (int l = 0; l < LJ_LANES; l++)
        lu[l] = lw[l] = 0.0;
    uint32_t base = t * LJ_LANES * C;
    for (uint32_t k = 0; k < C; k++) {
        uint32_t j0 = base + k * LJ_LANES;
        uint32_t n = j0 >= s->N ? 0 : (s->N - j0 < LJ_LANES ? s->N - j0 : LJ_LANES);
#pragma omp simd
        for (uint32_t l = 0; l < n; l++) {
            uint32_t j = j0 + l;
            double dx = lj_image(X[j] - p0, L0, h0);
            double dy = lj_image(Y[j] - p1, L1, h1);
            double dz = lj_image(Z[j] - p2, L2, h2);
            double r2 = dx * dx + dy * dy + dz * dz;
            double u, w;
            lj_pair_terms(r2, ushift, &u, &w);
            int in = r2 < rc2 && j != skip;
            lu[l] = lu[l] + (in ? u : 0.0);
            lw[l] = lw[l] + (in ? w : 0.0);
        }
    }
    lj_uw lane[LJ_LANES];
    for (int l = 0; l < LJ_LANES; l++) {
        lane[l].u = lu[l];
        lane[l].w = lw[l];
    }
    lj_tree(lane, LJ_LANES);
    return lane[0];
}

/* Over every particle but `skip`: tiles of LJ_LANES * C, then the tree over the tiles. */
static lj_uw sum_all(const lj_dec_system *s, const cpu_impl *im, const double p[3], uint32_t skip)
{
    uint32_t C, G;
    lj_tiles(s->N, &C, &G);
    uint32_t Gp = lj_pow2_at_least(G);
    lj_uw tiles[LJ_TILES_MAX];
#pragma omp parallel for schedule(static) if (G >= 16)
    for (uint32_t t = 0; t < G; t++)
        tiles[t] = tile_sum(s, im, p, skip, t, C);
    for (uint32_t t = G; t < Gp; t++)
        tiles[t].u = tiles[t].w = 0.0;
    lj_tree(tiles, Gp);
    return tiles[0];
}

/* The halving tree over the first `used` of LJ_LANES lanes, the rest being +0: a stride whose
 * upper half lies wholly in the zero lanes only adds +0, which changes nothing (a lane sum
 * is never -0 in round-to-nearest), so skipping it gives the bits of the full tree. */
static void tree_used(lj_uw *lane, uint32_t used)
{
    for (uint32_t s = LJ_LANES / 2; s > 0; s >>= 1) {
        if (s >= used)
            continue;
        uint32_t top = used - s < s ? used - s : s;
        for (uint32_t t = 0; t < top; t++) {
            lane[t].u = lane[t].u + lane[t + s].u;
            lane[t].w = lane[t].w + lane[t + s].w;
        }
        used = s;
    }
}

/* Over the members of the neighbour cells of `cell`, in neighbour order then list order;
 * `skip` still takes its place in the count. (A SIMD version of this loop, like tile_sum's,
 * measured no faster: the lists are short.) */
static lj_uw sum_cells(const lj_dec_system *s, const cpu_impl *im, const double p[3], int cell,
                       uint32_t skip)
{
    lj_uw lane[LJ_LANES];
    int nq = lj_neighbour_count(s->dim), cq[LJ_NEIGH_MAX];
    uint32_t M = 0;
    for (int q = 0; q < nq; q++) {
        cq[q] = lj_cell_neighbour(&s->g, cell, q);
        M += (uint32_t)im->count[cq[q]];
    }
    uint32_t used = M < LJ_LANES ? M : LJ_LANES;
    memset(lane, 0, sizeof lane[0] * (used ? used : 1));
    uint32_t k = 0;
    for (int q = 0; q < nq; q++) {
        int c = cq[q];
        const double *e = im->slot + (size_t)c * (size_t)im->cap * 4;
        for (int32_t m = 0; m < im->count[c]; m++, k++, e += 4)
            if ((uint32_t)e[3] != skip)
                lj_accumulate(&s->g, p, e[0], e[1], e[2], &lane[k % LJ_LANES]);
    }
    tree_used(lane, used);
    if (used == 0)
        lane[0].u = lane[0].w = 0.0;
    return lane[0];
}

/* ---------- moves ---------- */

static int cpu_moves(lj_dec_system *s, uint64_t n)
{
    cpu_impl *im = impl(s);
    const lj_geom *g = &s->g;
    double U = s->U, W = s->W;
    uint64_t accepted = 0;
    int rc = 0;
    for (uint64_t m = 0; m < n; m++) {
        lj_trial t = lj_draw_trial(s->seed, s->moves + m, s->N, s->delta, s->dim);
        uint32_t i = t.i;
        double o[3] = {im->x[i], im->y[i], im->z[i]};
        double p[3];
        for (int a = 0; a < 3; a++)
            p[a] = lj_wrap(o[a] + t.d[a], g->L[a]);
        lj_uw before, after;
        int co = 0, cn = 0;
        if (s->sum == LJ_SUM_ALL) {
            before = sum_all(s, im, o, i);
            after = sum_all(s, im, p, i);
        } else {
            co = im->cell_of[i];
            cn = lj_cell_of(g, p[0], p[1], p[2]);
            before = sum_cells(s, im, o, co, i);
            after = sum_cells(s, im, p, cn, i);
        }
        double dU = after.u - before.u;
        if (!lj_accept(dU, s->beta, t.u))
            continue;
        if (s->sum == LJ_SUM_CELLS && cn != co && im->count[cn] == im->cap &&
            (rc = grow_cells(s))) {
            n = m; /* nothing of this move was applied */
            break;
        }
        accepted++;
        U = U + dU;
        W = W + (after.w - before.w);
        im->x[i] = p[0];
        im->y[i] = p[1];
        im->z[i] = p[2];
        if (s->sum == LJ_SUM_CELLS) {
            if (cn != co) { /* the last member fills the hole; i goes to the end of cn */
                int32_t last = im->count[co] - 1, si = im->slot_of[i];
                double *from = im->slot + (((size_t)co * (size_t)im->cap) + (size_t)last) * 4;
                double *to = im->slot + (((size_t)co * (size_t)im->cap) + (size_t)si) * 4;
                if (si != last) {
                    memcpy(to, from, 4 * sizeof(double));
                    im->slot_of[(uint32_t)to[3]] = si;
                }
                im->count[co]--;
                int32_t sn = im->count[cn]++;
                im->cell_of[i] = cn;
                im->slot_of[i] = sn;
            }
            double *e = im->slot + (((size_t)cn * (size_t)im->cap) + (size_t)im->slot_of[i]) * 4;
            e[0] = p[0];
            e[1] = p[1];
            e[2] = p[2];
            e[3] = (double)i;
        }
    }
    s->U = U;
    s->W = W;
    s->moves += n;
    s->tried += n;
    s->accepted += accepted;
    return rc;
}

static int cpu_widom(lj_dec_system *s, uint32_t n, uint64_t sample, double *out)
{
    const cpu_impl *im = impl(s);
    double tail = lj_widom_tail(&s->lj);
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < (int64_t)n; k++) {
        if (carlo_interrupted) /* Ctrl-C: the rest is skipped, lj_widom reports it */
            continue;
        double p[3];
        lj_widom_position(&s->g, s->seed, sample, (uint32_t)k, p);
        lj_uw e = s->sum == LJ_SUM_ALL
                      ? sum_all(s, im, p, UINT32_MAX)
                      : sum_cells(s, im, p, lj_cell_of(&s->g, p[0], p[1], p[2]), UINT32_MAX);
        out[k] = lj_widom_factor(e.u, tail, s->beta);
    }
    return 0;
}

static int cpu_sync(lj_dec_system *s)
{
    (void)s;
    return 0;
}

const lj_dec_backend lj_dec_cpu_backend = {
    .name = "cpu",
    .create = cpu_create,
    .destroy = cpu_destroy,
    .upload = cpu_upload,
    .download = cpu_download,
    .moves = cpu_moves,
    .widom = cpu_widom,
    .sync = cpu_sync,
};
