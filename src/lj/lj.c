/* lj.c — the Lennard-Jones system: parameters, initial configurations, tail corrections,
 * from-scratch energies, runs, move-size tuning, observables, Widom insertions, g(r) counts,
 * frames and checkpoints. The trial moves themselves are the backends' (lj_cpu.c, cuda/lj.cu). */
#include "lj/lj.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h"

const lj_backend *lj_gpu_backend;

static const double PI = 3.14159265358979323846;

const char *lj_mode_name(lj_mode m) { return m == LJ_CHECKERBOARD ? "checkerboard" : "decomposition"; }
const char *lj_sum_name(lj_sum s) { return s == LJ_SUM_CELLS ? "cells" : "all"; }
const char *lj_kernel_name(lj_kernel_variant k)
{
    return k == LJ_KERNEL_LAUNCH ? "launch" : k == LJ_KERNEL_GRAPH ? "graph" : "persistent";
}

double lj_volume(const lj_system *s)
{
    return s->dim == 3 ? s->g.L[0] * s->g.L[1] * s->g.L[2] : s->g.L[0] * s->g.L[1];
}

double lj_density(const lj_system *s) { return (double)s->N / lj_volume(s); }

/* ---------- tail corrections (g(r) = 1 beyond rc) ---------- */

/* U_tail / N = (rho / 2) int_rc^inf u(r) dS(r):
 *   3D: (8/3) pi rho (rc^-9 / 3 - rc^-3)      2D: pi rho (0.4 rc^-10 - rc^-4)
 * P_tail = -(rho^2 / 2d) int_rc^inf r u'(r) dS(r):
 *   3D: (16/3) pi rho^2 ((2/3) rc^-9 - rc^-3)  2D: pi rho^2 (2.4 rc^-10 - 3 rc^-4) */
static double tail_u_coef(const lj_system *s)
{
    double rc = s->rc;
    if (s->dim == 3)
        return 8.0 / 3.0 * PI * (pow(rc, -9) / 3.0 - pow(rc, -3));
    return PI * (0.4 * pow(rc, -10) - pow(rc, -4));
}

static double tail_p_coef(const lj_system *s)
{
    double rc = s->rc;
    if (s->dim == 3)
        return 16.0 / 3.0 * PI * (2.0 / 3.0 * pow(rc, -9) - pow(rc, -3));
    return PI * (2.4 * pow(rc, -10) - 3.0 * pow(rc, -4));
}

double lj_tail_energy(const lj_system *s)
{
    return s->tail ? tail_u_coef(s) * lj_density(s) : 0.0;
}

double lj_tail_pressure(const lj_system *s)
{
    double rho = lj_density(s);
    return s->tail ? tail_p_coef(s) * rho * rho : 0.0;
}

/* The tail energy a test particle adds: U_tail(N + 1) - U_tail(N) = coef (2N + 1) / V. */
double lj_widom_tail(const lj_system *s)
{
    return s->tail ? tail_u_coef(s) * (2.0 * (double)s->N + 1.0) / lj_volume(s) : 0.0;
}

/* ---------- a host-side cell grid (energies, g(r), overlaps) ---------- */

typedef struct hgrid {
    lj_geom g;        /* L, half, dim from the system; n, w of this grid */
    int ncell;
    int32_t *start;   /* ncell + 1 */
    int32_t *member;  /* N, by cell, increasing particle index within a cell */
} hgrid;

/* Cells at least `width` wide; returns 1 (and builds nothing) when some axis would have
 * fewer than 3, so that the 27 neighbours are distinct. */
static int hgrid_build(const lj_system *s, const double *pos, double width, hgrid *h)
{
    memset(h, 0, sizeof *h);
    h->g = s->g;
    int64_t ncell = 1;
    for (int a = 0; a < 3; a++) {
        if (a < s->dim) {
            double n = floor(s->g.L[a] / (width * (1.0 + 1e-10)));
            if (n < 3)
                return 1;
            if (n > 1024)
                n = 1024;
            h->g.n[a] = (int)n;
            h->g.w[a] = s->g.L[a] / n;
        } else {
            h->g.n[a] = 1;
            h->g.w[a] = s->g.L[a];
        }
        ncell *= h->g.n[a];
    }
    h->ncell = (int)ncell;
    h->start = carlo_calloc((size_t)ncell + 1, sizeof *h->start, "a cell grid");
    h->member = h->start ? carlo_malloc(sizeof *h->member * s->N, "a cell grid") : NULL;
    int32_t *cell = h->member ? carlo_malloc(sizeof *cell * s->N, "a cell grid") : NULL;
    if (!cell) {
        free(h->start);
        free(h->member);
        return -1;
    }
    for (uint32_t i = 0; i < s->N; i++) {
        cell[i] = lj_cell_of(&h->g, pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]);
        h->start[cell[i] + 1]++;
    }
    for (int c = 0; c < h->ncell; c++)
        h->start[c + 1] += h->start[c];
    int32_t *fill = carlo_malloc(sizeof *fill * (size_t)ncell, "a cell grid");
    if (!fill) {
        free(cell);
        free(h->start);
        free(h->member);
        return -1;
    }
    memcpy(fill, h->start, sizeof *fill * (size_t)ncell);
    for (uint32_t i = 0; i < s->N; i++)
        h->member[fill[cell[i]]++] = (int32_t)i;
    free(fill);
    free(cell);
    return 0;
}

static void hgrid_free(hgrid *h)
{
    free(h->start);
    free(h->member);
    memset(h, 0, sizeof *h);
}

/* Energy and virial of particle i with every other particle (each pair seen from both ends). */
static void particle_energy(const lj_system *s, const hgrid *h, const double *pos, uint32_t i,
                            double *eu, double *ew)
{
    const double *p = pos + 3 * (size_t)i;
    lj_uw acc = {0.0, 0.0};
    if (h) {
        int c = lj_cell_of(&h->g, p[0], p[1], p[2]);
        int nq = lj_neighbour_count(s->dim);
        for (int q = 0; q < nq; q++) {
            int cq = lj_cell_neighbour(&h->g, c, q);
            for (int32_t k = h->start[cq]; k < h->start[cq + 1]; k++) {
                uint32_t j = (uint32_t)h->member[k];
                if (j != i)
                    lj_accumulate(&s->g, p, pos[3 * j], pos[3 * j + 1], pos[3 * j + 2], &acc);
            }
        }
    } else {
        for (uint32_t j = 0; j < s->N; j++)
            if (j != i)
                lj_accumulate(&s->g, p, pos[3 * j], pos[3 * j + 1], pos[3 * j + 2], &acc);
    }
    *eu = acc.u;
    *ew = acc.w;
}

int lj_energy_fresh(const lj_system *s, const double *pos, double *U, double *W)
{
    hgrid h;
    int rc = hgrid_build(s, pos, s->rc, &h);
    if (rc < 0)
        return -1;
    double *e = carlo_malloc(sizeof *e * 2 * (size_t)s->N, "per-particle energies");
    if (!e) {
        hgrid_free(&h);
        return -1;
    }
    const hgrid *hp = rc == 0 ? &h : NULL;
#pragma omp parallel for schedule(dynamic, 256)
    for (int64_t i = 0; i < (int64_t)s->N; i++)
        particle_energy(s, hp, pos, (uint32_t)i, &e[2 * i], &e[2 * i + 1]);
    double u = 0.0, w = 0.0;
    for (uint32_t i = 0; i < s->N; i++) {
        u += e[2 * i];
        w += e[2 * i + 1];
    }
    *U = 0.5 * u;
    *W = 0.5 * w;
    /* name an offending pair when the sum is not finite */
    if (!isfinite(*U) || !isfinite(*W)) {
        for (uint32_t i = 0; i < s->N; i++) {
            if (isfinite(e[2 * i]) && isfinite(e[2 * i + 1]))
                continue;
            for (uint32_t j = 0; j < s->N; j++) {
                double uu, ww;
                const double *a = pos + 3 * (size_t)i, *b = pos + 3 * (size_t)j;
                double r2 = lj_r2(&s->g, a[0], a[1], a[2], b[0], b[1], b[2]);
                lj_pair(r2, s->g.rc2, s->g.ushift, &uu, &ww);
                if (j != i && (!isfinite(uu) || !isfinite(ww))) {
                    free(e);
                    hgrid_free(&h);
                    return carlo_seterr("particles %u and %u overlap (distance %g): the energy "
                                        "is not finite", i + 1, j + 1, sqrt(r2));
                }
            }
        }
        free(e);
        hgrid_free(&h);
        return carlo_seterr("the energy is not finite (%g)", *U);
    }
    free(e);
    hgrid_free(&h);
    return 0;
}

int lj_rdf_count(const lj_system *s, const double *pos, double rmax, int bins, uint64_t *count)
{
    hgrid h;
    int rc = hgrid_build(s, pos, rmax, &h);
    if (rc < 0)
        return -1;
    const hgrid *hp = rc == 0 ? &h : NULL;
    double rmax2 = rmax * rmax, dr = rmax / bins;
    memset(count, 0, sizeof *count * (size_t)bins);
#pragma omp parallel
    {
        uint64_t *local = calloc((size_t)bins, sizeof *local);
        if (local) {
#pragma omp for schedule(dynamic, 256)
            for (int64_t ii = 0; ii < (int64_t)s->N; ii++) {
                uint32_t i = (uint32_t)ii;
                const double *p = pos + 3 * (size_t)i;
                if (hp) {
                    int c = lj_cell_of(&hp->g, p[0], p[1], p[2]);
                    int nq = lj_neighbour_count(s->dim);
                    for (int q = 0; q < nq; q++) {
                        int cq = lj_cell_neighbour(&hp->g, c, q);
                        for (int32_t k = hp->start[cq]; k < hp->start[cq + 1]; k++) {
                            uint32_t j = (uint32_t)hp->member[k];
                            if (j <= i)
                                continue;
                            double r2 = lj_r2(&s->g, p[0], p[1], p[2], pos[3 * j], pos[3 * j + 1],
                                              pos[3 * j + 2]);
                            if (r2 < rmax2) {
                                int b = (int)(sqrt(r2) / dr);
                                local[b < bins ? b : bins - 1]++;
                            }
                        }
                    }
                } else {
                    for (uint32_t j = i + 1; j < s->N; j++) {
                        double r2 = lj_r2(&s->g, p[0], p[1], p[2], pos[3 * j], pos[3 * j + 1],
                                          pos[3 * j + 2]);
                        if (r2 < rmax2) {
                            int b = (int)(sqrt(r2) / dr);
                            local[b < bins ? b : bins - 1]++;
                        }
                    }
                }
            }
#pragma omp critical
            for (int b = 0; b < bins; b++)
                count[b] += local[b];
            free(local);
        }
    }
    hgrid_free(&h);
    return 0;
}

/* ---------- cell lists in canonical form ---------- */

int lj_cell_lists_alloc(const lj_system *s, lj_cell_lists *c)
{
    c->order = carlo_malloc(sizeof *c->order * s->N, "cell lists");
    c->count = c->order ? carlo_calloc((size_t)s->ncell, sizeof *c->count, "cell lists") : NULL;
    if (!c->count) {
        free(c->order);
        c->order = NULL;
        return -1;
    }
    return 0;
}

void lj_cell_lists_free(lj_cell_lists *c)
{
    free(c->order);
    free(c->count);
    c->order = c->count = NULL;
}

/* Fresh lists: every particle appended to its cell in index order. */
int lj_cells_canonical(const lj_system *s, const double *pos, lj_cell_lists *out)
{
    int32_t *cell = carlo_malloc(sizeof *cell * s->N, "cell lists");
    int32_t *start = cell ? carlo_calloc((size_t)s->ncell + 1, sizeof *start, "cell lists") : NULL;
    if (!start) {
        free(cell);
        return -1;
    }
    memset(out->count, 0, sizeof *out->count * (size_t)s->ncell);
    for (uint32_t i = 0; i < s->N; i++) {
        cell[i] = lj_cell_of(&s->g, pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]);
        out->count[cell[i]]++;
    }
    for (int c = 0; c < s->ncell; c++)
        start[c + 1] = start[c] + out->count[c];
    for (uint32_t i = 0; i < s->N; i++)
        out->order[start[cell[i]]++] = (int32_t)i;
    free(start);
    free(cell);
    return 0;
}

/* Lists from a checkpoint are untrusted: a permutation, and every particle in its own cell. */
static int check_cell_lists(const lj_system *s, const double *pos, const lj_cell_lists *c)
{
    uint8_t *seen = carlo_calloc(s->N, 1, "a permutation check");
    if (!seen)
        return -1;
    int64_t k = 0;
    int rc = 0;
    for (int cell = 0; cell < s->ncell && rc == 0; cell++) {
        if (c->count[cell] < 0 || k + c->count[cell] > (int64_t)s->N) {
            rc = carlo_seterr("cell %d has a bad count %d", cell, c->count[cell]);
            break;
        }
        for (int32_t m = 0; m < c->count[cell]; m++, k++) {
            int32_t i = c->order[k];
            if (i < 0 || (uint32_t)i >= s->N || seen[i]) {
                rc = carlo_seterr("the cell lists are not a permutation of the particles");
                break;
            }
            seen[i] = 1;
            if (lj_cell_of(&s->g, pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]) != cell) {
                rc = carlo_seterr("particle %d is listed in cell %d but lies elsewhere", i + 1, cell);
                break;
            }
        }
    }
    if (rc == 0 && k != (int64_t)s->N)
        rc = carlo_seterr("the cell lists hold %lld of %u particles", (long long)k, s->N);
    free(seen);
    return rc;
}

/* ---------- initial configurations ---------- */

/* fcc in 3D (4 sites per cubic cell), the centred square lattice in 2D (2 per cell); m[a]
 * cells per axis in proportion to the box, the first N sites in order. */
static void init_fcc(const lj_system *s, double *pos)
{
    static const double basis3[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
    static const double basis2[2][3] = {{0, 0, 0}, {0.5, 0.5, 0}};
    int nb = s->dim == 3 ? 4 : 2;
    double a = pow(lj_volume(s) * nb / s->N, 1.0 / s->dim);
    int64_t m[3] = {1, 1, 1};
    for (int d = 0; d < s->dim; d++) {
        m[d] = (int64_t)floor(s->g.L[d] / a + 0.5);
        if (m[d] < 1)
            m[d] = 1;
    }
    while (m[0] * m[1] * m[2] * nb < (int64_t)s->N) { /* grow the axis with the widest spacing */
        int best = 0;
        for (int d = 1; d < s->dim; d++)
            if (s->g.L[d] / m[d] > s->g.L[best] / m[best])
                best = d;
        m[best]++;
    }
    uint32_t i = 0;
    for (int64_t cz = 0; cz < m[2] && i < s->N; cz++)
        for (int64_t cy = 0; cy < m[1] && i < s->N; cy++)
            for (int64_t cx = 0; cx < m[0] && i < s->N; cx++)
                for (int b = 0; b < nb && i < s->N; b++, i++) {
                    const double *bb = s->dim == 3 ? basis3[b] : basis2[b];
                    double c[3] = {(double)cx, (double)cy, (double)cz};
                    for (int d = 0; d < 3; d++)
                        pos[3 * i + d] = d < s->dim
                            ? lj_wrap((c[d] + bb[d] + 0.25) * s->g.L[d] / (double)m[d], s->g.L[d])
                            : 0.0;
                }
}

/* Random sequential addition with a minimum distance that shrinks when a particle finds no
 * place in 2000 tries: a pure function of the seed, and free of overlaps. */
static int init_random(const lj_system *s, double *pos)
{
    double spacing = pow(lj_volume(s) / s->N, 1.0 / s->dim);
    double dmin = fmin(0.9, 0.85 * spacing);
    /* a fixed grid at least dmin wide holds the placed particles (linked per cell) */
    int n[3] = {1, 1, 1};
    double w[3];
    int64_t ncell = 1;
    for (int a = 0; a < 3; a++) {
        if (a < s->dim) {
            double k = floor(s->g.L[a] / dmin);
            n[a] = k < 3 ? 1 : (int)fmin(k, 512);
        }
        w[a] = s->g.L[a] / n[a];
        ncell *= n[a];
    }
    int32_t *head = carlo_malloc(sizeof *head * (size_t)ncell, "the random start");
    int32_t *next = head ? carlo_malloc(sizeof *next * s->N, "the random start") : NULL;
    if (!next) {
        free(head);
        return -1;
    }
    for (int64_t c = 0; c < ncell; c++)
        head[c] = -1;
    lj_geom g = s->g;
    for (int a = 0; a < 3; a++) {
        g.n[a] = n[a];
        g.w[a] = w[a];
    }
    int small = n[0] < 3 || n[1] < 3 || (s->dim == 3 && n[2] < 3);
    uint64_t attempt = 0;
    for (uint32_t i = 0; i < s->N; i++) {
        int tries = 0;
        for (;;) {
            carlo_u32x4 r = carlo_rng(s->seed, LJ_PURPOSE_INIT, attempt++, i, 0);
            double p[3];
            for (int a = 0; a < 3; a++)
                p[a] = a < s->dim ? s->g.L[a] * ((double)r.v[a] * (1.0 / 4294967296.0)) : 0.0;
            double d2 = dmin * dmin;
            int ok = 1;
            if (small) {
                for (uint32_t j = 0; j < i && ok; j++)
                    ok = lj_r2(&s->g, p[0], p[1], p[2], pos[3 * j], pos[3 * j + 1], pos[3 * j + 2]) >= d2;
            } else {
                int c = lj_cell_of(&g, p[0], p[1], p[2]);
                for (int q = 0; q < lj_neighbour_count(s->dim) && ok; q++)
                    for (int32_t j = head[lj_cell_neighbour(&g, c, q)]; j >= 0 && ok; j = next[j])
                        ok = lj_r2(&s->g, p[0], p[1], p[2], pos[3 * j], pos[3 * j + 1],
                                   pos[3 * j + 2]) >= d2;
            }
            if (ok) {
                memcpy(pos + 3 * (size_t)i, p, sizeof p);
                if (!small) {
                    int c = lj_cell_of(&g, p[0], p[1], p[2]);
                    next[i] = head[c];
                    head[c] = (int32_t)i;
                }
                break;
            }
            if (++tries == 2000) {
                dmin *= 0.9;
                tries = 0;
            }
        }
    }
    free(head);
    free(next);
    return 0;
}

/* ---------- creation ---------- */

static int check_params(const lj_params *p)
{
    if (p->N < 2 || p->N > LJ_N_MAX)
        return carlo_seterr("N must be an integer from 2 to %d (got %u)", LJ_N_MAX, p->N);
    if (p->dim != 2 && p->dim != 3)
        return carlo_seterr("dim must be 2 or 3 (got %d)", p->dim);
    double Lmin = INFINITY;
    for (int a = 0; a < p->dim; a++) {
        if (!(p->box[a] > 0) || !isfinite(p->box[a]))
            return carlo_seterr("box[%d] must be a number > 0 (got %g)", a + 1, p->box[a]);
        Lmin = fmin(Lmin, p->box[a]);
    }
    if (!(p->T > 0) || !isfinite(p->T) || !isfinite(1.0 / p->T))
        return carlo_seterr("T must be a number > 0 (got %g)", p->T);
    if (!(p->rc > 0) || !isfinite(p->rc))
        return carlo_seterr("rc must be a number > 0 (got %g)", p->rc);
    if (p->rc > 0.5 * Lmin)
        return carlo_seterr("rc must be at most half the shortest box length, %.17g (got %g): "
                            "the minimum image would miss pairs", 0.5 * Lmin, p->rc);
    if (!(p->delta > 0) || !(p->delta <= 0.25 * Lmin))
        return carlo_seterr("delta must be a number in (0, %.17g], a quarter of the shortest box "
                            "length (got %g)", 0.25 * Lmin, p->delta);
    if (p->shift && p->tail)
        return carlo_seterr("tail must be false when shift = true: the analytic tail corrections "
                            "belong to the plain truncated potential");
    return 0;
}

static double min_box(const lj_system *s)
{
    double m = s->g.L[0];
    for (int a = 1; a < s->dim; a++)
        m = fmin(m, s->g.L[a]);
    return m;
}

/* A quarter of the box (decomposition), half the narrowest cell (checkerboard: longer moves
 * nearly all leave the cell). */
double lj_delta_max(const lj_system *s)
{
    if (s->mode == LJ_CHECKERBOARD) {
        double w = s->cb.geom.w[0];
        for (int a = 1; a < s->dim; a++)
            w = fmin(w, s->cb.geom.w[a]);
        return 0.5 * w;
    }
    return 0.25 * min_box(s);
}

int lj_set_temperature(lj_system *s, double T)
{
    if (!(T > 0) || !isfinite(T) || !isfinite(1.0 / T))
        return carlo_seterr("T must be a number > 0 (got %g)", T);
    s->T = T;
    s->beta = 1.0 / T;
    return 0;
}

int lj_set_delta(lj_system *s, double delta)
{
    if (!(delta > 0) || !(delta <= lj_delta_max(s)))
        return carlo_seterr("delta must be a number in (0, %.17g] (got %g)", lj_delta_max(s), delta);
    s->delta = delta;
    return 0;
}

/* Geometry, cutoff, shift and the decomposition sum's cell grid. */
static int setup_geometry(lj_system *s, const lj_params *p)
{
    lj_geom *g = &s->g;
    memset(g, 0, sizeof *g);
    g->dim = p->dim;
    for (int a = 0; a < 3; a++) {
        g->L[a] = a < p->dim ? p->box[a] : 1.0;
        g->half[a] = 0.5 * g->L[a];
        g->n[a] = 1;
        g->w[a] = g->L[a];
    }
    g->rc2 = p->rc * p->rc;
    if (p->shift) { /* u(rc), by the same operations as lj_pair */
        double ir2 = 1.0 / g->rc2, ir6 = ir2 * ir2 * ir2;
        g->ushift = 4.0 * ir6 * (ir6 - 1.0);
    }
    int n[3] = {1, 1, 1};
    int fits3 = 1, fits4 = 1;
    for (int a = 0; a < p->dim; a++) {
        double k = floor(g->L[a] / (p->rc * (1.0 + 1e-10)));
        n[a] = k > 1024 ? 1024 : (int)k;
        fits3 &= n[a] >= 3;
        fits4 &= n[a] >= 4;
    }
    int sum = p->sum;
    if (p->mode == LJ_CHECKERBOARD)
        sum = LJ_SUM_ALL; /* the checkerboard has its own grid (lj_cb.c) */
    else if (sum < 0)
        sum = fits4 ? LJ_SUM_CELLS : LJ_SUM_ALL;
    if (sum == LJ_SUM_CELLS && !fits3)
        return carlo_seterr("energy_sum = \"cells\" needs at least 3 cells at least rc wide per "
                            "axis: the box is too small for rc = %g", p->rc);
    s->sum = (lj_sum)sum;
    s->ncell = 0;
    if (s->sum == LJ_SUM_CELLS) {
        int64_t nc = 1;
        for (int a = 0; a < p->dim; a++) {
            g->n[a] = n[a];
            g->w[a] = g->L[a] / n[a];
            nc *= n[a];
        }
        if (nc > (1 << 28))
            return carlo_seterr("too many cells (%lld)", (long long)nc);
        s->ncell = (int)nc;
    }
    return 0;
}

static void to_box(const lj_system *s, const double *in, double *out)
{
    for (uint32_t i = 0; i < s->N; i++)
        for (int a = 0; a < 3; a++) {
            double x = a < s->dim ? in[3 * i + a] : 0.0;
            if (a < s->dim) {
                x = fmod(x, s->g.L[a]);
                x = lj_wrap(x, s->g.L[a]);
            }
            out[3 * i + a] = x;
        }
}

/* Hand positions (and cell lists, given or fresh) to the backend; U and W from scratch. */
static int install(lj_system *s, const double *pos, const lj_cell_lists *given)
{
    if (lj_energy_fresh(s, pos, &s->U, &s->W))
        return -1;
    lj_cell_lists cells = {0};
    const lj_cell_lists *use = NULL;
    if (s->sum == LJ_SUM_CELLS) {
        if (given) {
            if (check_cell_lists(s, pos, given))
                return -1;
            use = given;
        } else {
            if (lj_cell_lists_alloc(s, &cells) || lj_cells_canonical(s, pos, &cells)) {
                lj_cell_lists_free(&cells);
                return -1;
            }
            use = &cells;
        }
    }
    int rc = s->be->upload(s, pos, use);
    lj_cell_lists_free(&cells);
    return rc;
}

static lj_system *create_bare(const lj_params *p)
{
    if (check_params(p))
        return NULL;
    const lj_backend *be = &lj_cpu_backend;
    if (p->device == CARLO_GPU) {
        if (!lj_gpu_backend) {
            carlo_seterr("this carlo was built without CUDA");
            return NULL;
        }
        be = lj_gpu_backend;
    }
    lj_system *s = carlo_calloc(1, sizeof *s, "a Lennard-Jones system");
    if (!s)
        return NULL;
    s->N = p->N;
    s->dim = p->dim;
    s->rc = p->rc;
    s->T = p->T;
    s->beta = 1.0 / p->T;
    s->shift = p->shift;
    s->tail = p->tail;
    s->mode = p->mode;
    s->device = p->device;
    s->kernel = LJ_KERNEL_PERSISTENT;
    s->seed = p->seed;
    s->delta = p->delta;
    s->be = be;
    if (setup_geometry(s, p) || (s->mode == LJ_CHECKERBOARD && lj_cb_setup(s, p))) {
        lj_destroy(s);
        return NULL;
    }
    if (s->delta > lj_delta_max(s)) {
        carlo_seterr("delta must be a number in (0, %.17g], half the narrowest cell (got %g)",
                     lj_delta_max(s), s->delta);
        lj_destroy(s);
        return NULL;
    }
    if (be->create(s)) {
        lj_destroy(s);
        return NULL;
    }
    return s;
}

lj_system *lj_create(const lj_params *p)
{
    lj_system *s = create_bare(p);
    if (!s)
        return NULL;
    double *pos = carlo_malloc(carlo_mulsize(sizeof(double) * 3, s->N), "initial positions");
    int rc = pos ? 0 : -1;
    if (rc == 0) {
        if (p->init == LJ_INIT_FCC)
            init_fcc(s, pos);
        else if (p->init == LJ_INIT_RANDOM)
            rc = init_random(s, pos);
        else
            to_box(s, p->positions, pos);
    }
    if (rc == 0)
        rc = s->mode == LJ_CHECKERBOARD ? lj_cb_install(s, pos) : install(s, pos, NULL);
    free(pos);
    if (rc) {
        lj_destroy(s);
        return NULL;
    }
    return s;
}

void lj_destroy(lj_system *s)
{
    if (!s)
        return;
    if (s->be && s->impl)
        s->be->destroy(s);
    free(s);
}

/* ---------- runs ---------- */

static int fail_dead(lj_system *s)
{
    s->dead = s->device == CARLO_GPU;
    return -1;
}

int lj_moves(lj_system *s, uint64_t n)
{
    if (s->dead)
        return carlo_seterr("this system died on an earlier device error");
    if (s->mode == LJ_CHECKERBOARD)
        return carlo_seterr("single trial moves belong to mode = \"decomposition\"; the "
                            "checkerboard runs whole sweeps");
    if (n == 0)
        return 0;
    if (s->be->moves(s, n))
        return fail_dead(s);
    s->step = s->moves / s->N;
    return 0;
}

/* n sweeps of either mode. */
static int sweeps(lj_system *s, uint64_t n)
{
    if (s->mode == LJ_DECOMPOSITION)
        return lj_moves(s, n * s->N);
    if (s->dead)
        return carlo_seterr("this system died on an earlier device error");
    if (n && s->be->cb_sweeps(s, n))
        return fail_dead(s);
    return 0;
}

int lj_positions(lj_system *s, double *pos)
{
    if (s->dead)
        return carlo_seterr("this system died on an earlier device error");
    if (s->mode == LJ_CHECKERBOARD ? lj_cb_positions(s, pos) : s->be->download(s, pos, NULL))
        return fail_dead(s);
    return 0;
}

/* From-scratch energy of the configuration now, in the mode's own pair arithmetic. */
static int fresh_now(lj_system *s, double *U, double *W)
{
    if (s->mode == LJ_CHECKERBOARD)
        return s->be->cb_fresh(s, U, W);
    double *pos = carlo_malloc(carlo_mulsize(sizeof(double) * 3, s->N), "positions");
    if (!pos)
        return -1;
    int rc = lj_positions(s, pos) || lj_energy_fresh(s, pos, U, W);
    free(pos);
    return rc;
}

int lj_recompute_w(lj_system *s, double *U_fresh, double *W_fresh)
{
    if (s->dead)
        return carlo_seterr("this system died on an earlier device error");
    double U, W;
    if (fresh_now(s, &U, &W))
        return -1;
    double du = fabs(s->U - U) / fmax(fabs(U), 1e-300);
    double dw = fabs(s->W - W) / fmax(fabs(W), 1e-300);
    s->drift = du > dw ? du : dw;
    s->checks++;
    if (s->drift > s->drift_max)
        s->drift_max = s->drift;
    if (U_fresh)
        *U_fresh = U;
    if (W_fresh)
        *W_fresh = W;
    return 0;
}

int lj_recompute(lj_system *s, double *U_running, double *U_fresh)
{
    if (U_running)
        *U_running = s->U;
    return lj_recompute_w(s, U_fresh, NULL);
}

/* Moves until the next stop (the end, a callback, a check, a progress/Ctrl-C poll), in moves. */
static uint64_t next_stop(uint64_t at, uint64_t left, uint64_t period, uint64_t chunk)
{
    uint64_t m = left < chunk ? left : chunk;
    if (period) {
        uint64_t to = period - at % period;
        if (to < m)
            m = to;
    }
    return m;
}

int lj_run_ex(lj_system *s, const lj_run_opts *o, lj_run_result *res)
{
    memset(res, 0, sizeof *res);
    if (s->dead)
        return carlo_seterr("this system died on an earlier device error");
    /* the run counts in moves (decomposition) or sweeps (checkerboard) */
    const int cb = s->mode == LJ_CHECKERBOARD;
    const uint64_t per = cb ? 1 : s->N;
    if (o->sweeps > UINT64_MAX / per)
        return carlo_seterr("too many sweeps");
    uint64_t total = o->sweeps * per, done = 0;
    uint64_t every = o->every * per, check = o->check_every * per;
    carlo_progress pr;
    carlo_progress_start(&pr, "lj", "sweeps", (double)o->sweeps, o->quiet);
    double t0 = carlo_now(), per_unit = 0;
    uint64_t chunk = cb ? 1 : (per < 1024 ? 1024 : per);
    int rc = 0;
    while (done < total) {
        uint64_t at = cb ? s->step : s->moves;
        uint64_t m = next_stop(at, total - done, every, chunk);
        m = next_stop(at, m, check, m);
        if (o->walltime > 0 && per_unit > 0) {
            double left = o->walltime - (carlo_now() - t0) - o->reserve;
            if (left < per_unit * (double)m) {
                uint64_t fit = left > 0 ? (uint64_t)(left / per_unit) : 0;
                if (fit == 0) {
                    res->stopped_early = 1;
                    break;
                }
                m = fit < m ? fit : m;
            }
        }
        if ((rc = cb ? sweeps(s, m) : lj_moves(s, m)))
            break;
        done += m;
        per_unit = (carlo_now() - t0) / (double)done;
        at = cb ? s->step : s->moves;
        if (check && at % check == 0 && (rc = lj_recompute(s, NULL, NULL)))
            break;
        if (every && at % every == 0 && o->callback && (rc = o->callback(o->ctx, s)))
            break;
        if (carlo_interrupted) {
            rc = carlo_seterr("interrupted");
            break;
        }
        carlo_progress_update(&pr, (double)done / (double)per);
        if (carlo_now() - t0 < 0.05 && chunk < ((uint64_t)1 << 40))
            chunk *= 2;
    }
    carlo_progress_end(&pr);
    res->sweeps = done / per;
    res->seconds = carlo_now() - t0;
    return rc;
}

int lj_run(lj_system *s, uint64_t sweeps)
{
    lj_run_opts o = {.sweeps = sweeps, .quiet = 1};
    lj_run_result r;
    return lj_run_ex(s, &o, &r);
}

int lj_tune(lj_system *s, uint64_t n, double target)
{
    if (!(target > 0 && target < 1))
        return carlo_seterr("target must be a number in (0, 1) (got %g)", target);
    uint64_t chunk = s->N < 200 ? 200 : s->N;
    for (uint64_t k = 0; k < n; k++) {
        uint64_t t0 = s->tried, a0 = s->accepted;
        if (s->mode == LJ_CHECKERBOARD ? sweeps(s, 1) : lj_moves(s, chunk))
            return -1;
        double acc = (double)(s->accepted - a0) / (double)(s->tried - t0);
        double f = acc / target;
        f = f < 0.5 ? 0.5 : (f > 1.5 ? 1.5 : f);
        double d = s->delta * f;
        s->delta = d > lj_delta_max(s) ? lj_delta_max(s) : (d < 1e-6 ? 1e-6 : d);
        if (carlo_interrupted)
            return carlo_seterr("interrupted");
    }
    return 0;
}

int lj_observe(lj_system *s, lj_obs *o)
{
    if (s->dead)
        return carlo_seterr("this system died on an earlier device error");
    double rho = lj_density(s);
    o->U = s->U / (double)s->N + lj_tail_energy(s);
    o->W = s->W;
    o->P = rho * s->T + s->W / ((double)s->dim * lj_volume(s)) + lj_tail_pressure(s);
    o->acceptance = s->tried ? (double)s->accepted / (double)s->tried : 0.0;
    return 0;
}

int lj_widom(lj_system *s, uint32_t n, double *mean)
{
    if (s->dead)
        return carlo_seterr("this system died on an earlier device error");
    double *b = carlo_malloc(sizeof *b * (n ? n : 1), "Widom insertions");
    if (!b)
        return -1;
    if (s->mode == LJ_CHECKERBOARD ? lj_cb_widom(s, n, s->samples, b)
                                   : s->be->widom(s, n, s->samples, b)) {
        free(b);
        return fail_dead(s);
    }
    s->samples++;
    double sum = 0.0;
    for (uint32_t k = 0; k < n; k++)
        sum += b[k];
    free(b);
    *mean = sum / (double)n;
    return 0;
}

/* ---------- frames and checkpoints ---------- */

int lj_frame(lj_system *s, carlo_frame *f)
{
    double *pos = carlo_malloc(carlo_mulsize(sizeof(double) * 3, s->N), "a frame");
    float *p32 = pos ? carlo_malloc(carlo_mulsize(sizeof(float) * 3, s->N), "a frame") : NULL;
    uint32_t *typeid = p32 ? carlo_calloc(s->N, sizeof *typeid, "a frame") : NULL;
    if (!typeid || lj_positions(s, pos)) {
        free(pos);
        free(p32);
        free(typeid);
        return -1;
    }
    /* GSD convention: positions in [-L/2, L/2) */
    for (uint32_t i = 0; i < s->N; i++)
        for (int a = 0; a < 3; a++)
            p32[3 * i + a] = a < s->dim ? (float)(pos[3 * i + a] - s->g.half[a]) : 0.0f;
    free(pos);
    float box[6] = {(float)s->g.L[0], (float)s->g.L[1], s->dim == 3 ? (float)s->g.L[2] : 0.0f,
                    0, 0, 0};
    uint8_t dims = (uint8_t)s->dim;
    int8_t types[2] = {'A', 0};
    uint32_t n = s->N;
    if (carlo_frame_add_u64(f, "configuration/step", s->step) ||
        carlo_frame_add_copy(f, "configuration/dimensions", CARLO_U8, 1, 1, &dims) ||
        carlo_frame_add_copy(f, "configuration/box", CARLO_F32, 6, 1, box) ||
        carlo_frame_add_copy(f, "particles/N", CARLO_U32, 1, 1, &n) ||
        carlo_frame_add_copy(f, "particles/types", CARLO_I8, 1, 2, types)) {
        free(p32);
        free(typeid);
        return -1;
    }
    if (carlo_frame_add_owned(f, "particles/position", CARLO_F32, s->N, 3, p32)) {
        free(typeid);
        return -1;
    }
    return carlo_frame_add_owned(f, "particles/typeid", CARLO_U32, s->N, 1, typeid);
}

/* The checkerboard's cells as they are: lj/cb_shape (i32: m0 m1 m2 nmax lanes passes),
 * lj/cb_pos (f32, dim nmax x ncells), lj/cb_index (u32, nmax x ncells), lj/cb_count (u32),
 * lj/cb_acc (f64, 2 x ncells: the per-cell energy and virial sums). */
static int cb_checkpoint(lj_system *s, carlo_frame *f)
{
    const carlo_cell_grid *g = &s->cb.grid;
    carlo_cell_data d;
    if (lj_cb_cells_alloc(s, &d))
        return -1;
    double *acc = carlo_malloc(carlo_mulsize((size_t)g->ncells, 2 * sizeof(double)), "a checkpoint");
    if (!acc || s->dead || s->be->cb_download(s, &d, acc, acc + g->ncells)) {
        if (acc && !s->dead)
            fail_dead(s);
        else if (acc)
            carlo_seterr("this system died on an earlier device error");
        free(acc);
        carlo_cell_data_free(&d);
        return -1;
    }
    int32_t shape[6] = {g->m[0], g->m[1], g->m[2], g->nmax, s->cb.geom.lanes, s->cb.passes};
    uint64_t nc = (uint64_t)g->ncells, nm = (uint64_t)g->nmax;
    float *pos = d.pos;
    uint32_t *aux = d.aux, *count = d.count;
    if (carlo_frame_add_copy(f, "lj/cb_shape", CARLO_I32, 6, 1, shape) ||
        carlo_frame_add_owned(f, "lj/cb_acc", CARLO_F64, 2, nc, acc)) {
        carlo_cell_data_free(&d);
        return -1;
    }
    d.pos = NULL;
    if (carlo_frame_add_owned(f, "lj/cb_pos", CARLO_F32, (uint64_t)g->dim * nm, nc, pos)) {
        carlo_cell_data_free(&d);
        return -1;
    }
    d.aux = NULL;
    if (carlo_frame_add_owned(f, "lj/cb_index", CARLO_U32, nm, nc, aux)) {
        carlo_cell_data_free(&d);
        return -1;
    }
    return carlo_frame_add_owned(f, "lj/cb_count", CARLO_U32, nc, 1, count);
}

/* Checkerboard cells from a checkpoint: every invariant checked before they are used. */
static int cb_restore(lj_system *s, const carlo_frame *f)
{
    carlo_cell_grid *g = &s->cb.grid;
    const int32_t *shape = carlo_frame_expect(f, "lj/cb_shape", CARLO_I32, 6, 1);
    if (!shape)
        return -1;
    if (shape[0] != g->m[0] || shape[1] != g->m[1] || shape[2] != g->m[2] || shape[3] < 1 ||
        shape[3] > CARLO_CELL_NMAX_LIMIT || shape[4] != s->cb.geom.lanes || shape[5] != s->cb.passes)
        return carlo_seterr("lj/cb_shape does not match the box, rc, lanes and passes");
    g->nmax = shape[3];
    uint64_t nc = (uint64_t)g->ncells, nm = (uint64_t)g->nmax;
    const double *acc = carlo_frame_expect(f, "lj/cb_acc", CARLO_F64, 2, nc);
    const float *pos = carlo_frame_expect(f, "lj/cb_pos", CARLO_F32, (uint64_t)g->dim * nm, nc);
    const uint32_t *aux = carlo_frame_expect(f, "lj/cb_index", CARLO_U32, nm, nc);
    const uint32_t *count = carlo_frame_expect(f, "lj/cb_count", CARLO_U32, nc, 1);
    if (!acc || !pos || !aux || !count)
        return -1;
    carlo_cell_data d = {(float *)pos, (uint32_t *)aux, (uint32_t *)count};
    if (carlo_cells_verify(g, &d, s->N))
        return -1;
    uint8_t *seen = carlo_calloc(s->N, 1, "a permutation check");
    if (!seen)
        return -1;
    int rc = 0;
    for (int64_t c = 0; c < g->ncells && rc == 0; c++)
        for (int i = 0; i < (int)count[c] && rc == 0; i++) {
            uint32_t idx = aux[carlo_cell_slot(g, c, i, 0)];
            if (idx >= s->N || seen[idx])
                rc = carlo_seterr("the cells' particle indices are not a permutation");
            else
                seen[idx] = 1;
            for (int a = 0; a < g->dim && rc == 0; a++) {
                double u = pos[carlo_cell_slot(g, c, i, a)], h = s->cb.geom.h[a];
                if (u / h != floor(u / h))
                    rc = carlo_seterr("a position is off the coordinate grid");
            }
        }
    free(seen);
    for (uint64_t c = 0; c < 2 * nc && rc == 0; c++)
        if (!isfinite(acc[c]))
            rc = carlo_seterr("bad per-cell sums");
    if (rc == 0)
        rc = s->be->cb_upload(s, &d, acc, acc + nc);
    if (rc == 0) {
        s->U = s->cb.U0 + lj_cb_total(acc, g->ncells);
        s->W = s->cb.W0 + lj_cb_total(acc + nc, g->ncells);
    }
    return rc;
}

/* lj/shape (i32): N, dim, shift, tail, mode, sum, kernel
 * lj/params (f64): Lx, Ly, Lz, rc, T, delta, U, W, drift, drift_max
 * lj/counters (u64): moves, step, samples, tried, accepted */
int lj_checkpoint(lj_system *s, carlo_frame *f)
{
    int32_t shape[7] = {(int32_t)s->N, s->dim, s->shift, s->tail, (int32_t)s->mode,
                        (int32_t)s->sum, (int32_t)s->kernel};
    int cb = s->mode == LJ_CHECKERBOARD;
    double params[10] = {s->g.L[0], s->g.L[1], s->g.L[2], s->rc, s->T, s->delta,
                         cb ? s->cb.U0 : s->U, cb ? s->cb.W0 : s->W, s->drift, s->drift_max};
    uint64_t counters[5] = {s->moves, s->step, s->samples, s->tried, s->accepted};
    if (carlo_frame_add_string(f, "carlo/model", "lj") ||
        carlo_frame_add_u64(f, "configuration/step", s->step) ||
        carlo_frame_add_u64(f, "carlo/seed", s->seed) ||
        carlo_frame_add_copy(f, "lj/shape", CARLO_I32, 7, 1, shape) ||
        carlo_frame_add_copy(f, "lj/params", CARLO_F64, 10, 1, params) ||
        carlo_frame_add_copy(f, "lj/counters", CARLO_U64, 5, 1, counters))
        return -1;
    if (s->mode == LJ_CHECKERBOARD)
        return cb_checkpoint(s, f);
    double *pos = carlo_malloc(carlo_mulsize(sizeof(double) * 3, s->N), "a checkpoint");
    if (!pos)
        return -1;
    lj_cell_lists cells = {0};
    if (s->sum == LJ_SUM_CELLS && lj_cell_lists_alloc(s, &cells)) {
        free(pos);
        return -1;
    }
    if (s->dead || s->be->download(s, pos, s->sum == LJ_SUM_CELLS ? &cells : NULL)) {
        if (!s->dead)
            fail_dead(s);
        else
            carlo_seterr("this system died on an earlier device error");
        free(pos);
        lj_cell_lists_free(&cells);
        return -1;
    }
    if (carlo_frame_add_owned(f, "lj/position", CARLO_F64, s->N, 3, pos)) {
        lj_cell_lists_free(&cells);
        return -1;
    }
    if (s->sum == LJ_SUM_CELLS) {
        int32_t *order = cells.order, *count = cells.count;
        cells.order = cells.count = NULL;
        if (carlo_frame_add_owned(f, "lj/cell_order", CARLO_I32, s->N, 1, order)) {
            free(count);
            return -1;
        }
        if (carlo_frame_add_owned(f, "lj/cell_count", CARLO_I32, (uint64_t)s->ncell, 1, count))
            return -1;
    }
    return 0;
}

lj_system *lj_restore(const carlo_frame *f, carlo_device_kind device)
{
    const int32_t *shape = carlo_frame_expect(f, "lj/shape", CARLO_I32, 7, 1);
    const double *params = carlo_frame_expect(f, "lj/params", CARLO_F64, 10, 1);
    const uint64_t *counters = carlo_frame_expect(f, "lj/counters", CARLO_U64, 5, 1);
    const uint64_t *seed = carlo_frame_expect(f, "carlo/seed", CARLO_U64, 1, 1);
    if (!shape || !params || !counters || !seed)
        return NULL;
    if (shape[0] < 2 || shape[0] > LJ_N_MAX || shape[4] < 0 || shape[4] > 1 || shape[5] < 0 ||
        shape[5] > 1 || shape[6] < 0 || shape[6] > 2) {
        carlo_seterr("bad lj/shape");
        return NULL;
    }
    lj_params p = {.N = (uint32_t)shape[0], .dim = shape[1], .box = {params[0], params[1], params[2]},
                   .rc = params[3], .T = params[4], .delta = params[5], .shift = shape[2] != 0,
                   .tail = shape[3] != 0, .mode = (lj_mode)shape[4], .sum = shape[5],
                   .device = device, .seed = *seed, .init = LJ_INIT_POSITIONS, .passes = 1};
    if (p.mode == LJ_CHECKERBOARD) {
        const int32_t *cs = carlo_frame_expect(f, "lj/cb_shape", CARLO_I32, 6, 1);
        if (!cs)
            return NULL;
        p.lanes = cs[4];
        p.passes = cs[5];
        lj_system *s = create_bare(&p);
        if (!s)
            return NULL;
        s->cb.U0 = params[6];
        s->cb.W0 = params[7];
        if (!isfinite(s->cb.U0) || !isfinite(s->cb.W0) ||
            (carlo_seterr("bad running energy"), 0) || cb_restore(s, f)) {
            lj_destroy(s);
            return NULL;
        }
        s->drift = params[8];
        s->drift_max = params[9];
        s->moves = counters[0];
        s->step = counters[1];
        s->samples = counters[2];
        s->tried = counters[3];
        s->accepted = counters[4];
        return s;
    }
    const double *pos = carlo_frame_expect(f, "lj/position", CARLO_F64, (uint64_t)shape[0], 3);
    if (!pos)
        return NULL;
    p.positions = pos;
    lj_system *s = create_bare(&p);
    if (!s)
        return NULL;
    for (uint32_t i = 0; i < s->N; i++)
        for (int a = 0; a < 3; a++) {
            double x = pos[3 * i + a];
            if (!(a < s->dim ? x >= 0 && x < s->g.L[a] : x == 0)) {
                carlo_seterr("position %u is outside the box", i + 1);
                lj_destroy(s);
                return NULL;
            }
        }
    lj_cell_lists cells = {0};
    if (s->sum == LJ_SUM_CELLS) {
        cells.order = (int32_t *)carlo_frame_expect(f, "lj/cell_order", CARLO_I32, s->N, 1);
        cells.count = cells.order ? (int32_t *)carlo_frame_expect(f, "lj/cell_count", CARLO_I32,
                                                                  (uint64_t)s->ncell, 1)
                                  : NULL;
        if (!cells.count) {
            lj_destroy(s);
            return NULL;
        }
    }
    if (install(s, pos, s->sum == LJ_SUM_CELLS ? &cells : NULL)) {
        lj_destroy(s);
        return NULL;
    }
    /* the running sums continue as they were, not from scratch */
    s->kernel = (lj_kernel_variant)shape[6];
    s->U = params[6];
    s->W = params[7];
    s->drift = params[8];
    s->drift_max = params[9];
    s->moves = counters[0];
    s->step = counters[1];
    s->samples = counters[2];
    s->tried = counters[3];
    s->accepted = counters[4];
    if (!isfinite(s->U) || !isfinite(s->W)) {
        carlo_seterr("bad running energy");
        lj_destroy(s);
        return NULL;
    }
    return s;
}
