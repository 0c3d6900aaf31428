/* hard_observe.c — what is measured on hard particles: the pressure by g(r) extrapolation
 * (MPMC eqs. 4-6, with the sampling points at the annulus centroids) and by the scale
 * distribution function (HPMC's volume perturbation), positions, overlaps, invariants and the
 * hexatic order parameter. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/steinhardt.h"
#include "hard/hard.h"
#include "hard/hard_plain.h"

#define PI 3.14159265358979323846

void hard_pressure_defaults(hard_pressure_params *p)
{
    p->gr_dr = 1e-4;
    p->gr_width = 0.02;
    p->gr_degree = 5;
    p->sdf_dx = 1e-4;
    p->sdf_xmax = 0.02;
    p->sdf_degree = 5;
}

static int bins_of(double width, double d)
{
    return (int)floor(width / d + 0.5);
}

int hard_scan_from(const hard_pressure_params *pp, hard_scan *sc)
{
    if (!(pp->gr_dr > 0) || !(pp->gr_width > 0) || pp->gr_width > 0.5 || !(pp->sdf_dx > 0) ||
        !(pp->sdf_xmax > 0) || pp->sdf_xmax > 0.3)
        return carlo_seterr("pressure bins need 0 < dr <= width <= 0.5 and 0 < dx <= xmax <= 0.3 (got "
                            "dr %g, width %g, dx %g, xmax %g)", pp->gr_dr, pp->gr_width, pp->sdf_dx,
                            pp->sdf_xmax);
    sc->gr_dr = pp->gr_dr;
    sc->gr_bins = bins_of(pp->gr_width, pp->gr_dr);
    sc->gr_width = sc->gr_bins * pp->gr_dr;
    sc->sdf_dx = pp->sdf_dx;
    sc->sdf_bins = bins_of(pp->sdf_xmax, pp->sdf_dx);
    sc->sdf_xmax = sc->sdf_bins * pp->sdf_dx;
    if (sc->gr_bins < pp->gr_degree + 2 || sc->sdf_bins < pp->sdf_degree + 2 || sc->gr_bins > 100000 ||
        sc->sdf_bins > 100000)
        return carlo_seterr("pressure fits need more bins than the polynomial degree + 1, and at "
                            "most 100000 (got %d and %d bins)", sc->gr_bins, sc->sdf_bins);
    if (pp->gr_degree < 0 || pp->gr_degree > 10 || pp->sdf_degree < 0 || pp->sdf_degree > 10)
        return carlo_seterr("pressure fits take a polynomial degree from 0 to 10 (got %d and %d)",
                            pp->gr_degree, pp->sdf_degree);
    return 0;
}

/* Least squares by modified Gram-Schmidt, run twice: with A = QR (A[i][k] = t_i^k, t scaled to
 * [0, 1]), the fitted value at t = 0 is e0' R^-1 Q' y, so w = Q R^-T e0. */
int hard_extrapolation_weights(const double *x, int n, int degree, double *w)
{
    int k = degree + 1;
    if (n < k)
        return carlo_seterr("a degree-%d fit needs at least %d points (got %d)", degree, k, n);
    double scale = 0;
    for (int i = 0; i < n; i++)
        scale = fmax(scale, fabs(x[i]));
    if (!(scale > 0))
        scale = 1;
    double *Q = carlo_malloc(sizeof(double) * (size_t)n * (size_t)k, "a fit");
    double R[11][11] = {{0}};
    if (!Q)
        return -1;
    for (int i = 0; i < n; i++) {
        double t = x[i] / scale, v = 1;
        for (int j = 0; j < k; j++, v *= t)
            Q[(size_t)j * n + i] = v;
    }
    for (int j = 0; j < k; j++) {
        double *q = Q + (size_t)j * n;
        for (int pass = 0; pass < 2; pass++)
            for (int l = 0; l < j; l++) {
                const double *p = Q + (size_t)l * n;
                double dot = 0;
                for (int i = 0; i < n; i++)
                    dot += p[i] * q[i];
                R[l][j] += dot;
                for (int i = 0; i < n; i++)
                    q[i] -= dot * p[i];
            }
        double norm = 0;
        for (int i = 0; i < n; i++)
            norm += q[i] * q[i];
        norm = sqrt(norm);
        if (!(norm > 0)) {
            free(Q);
            return carlo_seterr("the fit's sample points are degenerate");
        }
        R[j][j] = norm;
        for (int i = 0; i < n; i++)
            q[i] /= norm;
    }
    /* z = R^-T e0: R' is lower triangular */
    double z[11];
    for (int j = 0; j < k; j++) {
        double v = j == 0 ? 1.0 : 0.0;
        for (int l = 0; l < j; l++)
            v -= R[l][j] * z[l];
        z[j] = v / R[j][j];
    }
    for (int i = 0; i < n; i++) {
        double v = 0;
        for (int j = 0; j < k; j++)
            v += Q[(size_t)j * n + i] * z[j];
        w[i] = v;
    }
    free(Q);
    return 0;
}

double hard_pressure_gr(int dim, int64_t N, double V, const hard_pressure_params *pp,
                        const uint64_t *gr, double samples)
{
    hard_scan sc;
    if (hard_scan_from(pp, &sc))
        return NAN;
    int n = sc.gr_bins;
    double *x = malloc(sizeof(double) * (size_t)n * 3);
    if (!x)
        return NAN;
    double *y = x + n, *w = y + n;
    double rho = (double)N / V;
    for (int i = 0; i < n; i++) {
        double r1 = 1.0 + i * sc.gr_dr, r2 = 1.0 + (i + 1) * sc.gr_dr, R, shell;
        if (dim == 2) { /* centroid of the annulus (the corrected eq. 6) and its area */
            R = 2.0 * (r2 * r2 * r2 - r1 * r1 * r1) / (3.0 * (r2 * r2 - r1 * r1));
            shell = PI * (r2 * r2 - r1 * r1);
        } else {        /* centroid of the spherical shell and its volume */
            R = 3.0 * (r2 * r2 * r2 * r2 - r1 * r1 * r1 * r1) / (4.0 * (r2 * r2 * r2 - r1 * r1 * r1));
            shell = 4.0 * PI / 3.0 * (r2 * r2 * r2 - r1 * r1 * r1);
        }
        x[i] = R - 1.0;
        y[i] = (double)gr[i] / (samples * (double)N * rho * shell); /* eq. 5 */
    }
    double P = NAN;
    if (hard_extrapolation_weights(x, n, pp->gr_degree, w) == 0) {
        double g0 = 0;
        for (int i = 0; i < n; i++)
            g0 += w[i] * y[i];
        /* eq. 4: beta P / rho = 1 + (pi/2) rho g(1+) in 2D, 1 + (2 pi / 3) rho g(1+) in 3D */
        P = rho * (1.0 + (dim == 2 ? PI / 2.0 : 2.0 * PI / 3.0) * rho * g0);
    }
    free(x);
    return P;
}

double hard_pressure_sdf(int dim, int64_t N, double V, const hard_pressure_params *pp,
                         const uint64_t *sdf, double samples)
{
    hard_scan sc;
    if (hard_scan_from(pp, &sc))
        return NAN;
    int n = sc.sdf_bins;
    double *x = malloc(sizeof(double) * (size_t)n * 3);
    if (!x)
        return NAN;
    double *y = x + n, *w = y + n;
    for (int i = 0; i < n; i++) {
        x[i] = (i + 0.5) * sc.sdf_dx;
        y[i] = (double)sdf[i] / (samples * (double)N * sc.sdf_dx);
    }
    double P = NAN;
    if (hard_extrapolation_weights(x, n, pp->sdf_degree, w) == 0) {
        double s0 = 0;
        for (int i = 0; i < n; i++)
            s0 += w[i] * y[i];
        /* a compression by x (volume by d x) overlaps a pair with probability N s(0) x / 2:
         * beta P = rho (1 + s(0+) / (2 d)) */
        P = (double)N / V * (1.0 + s0 / (2.0 * dim));
    }
    free(x);
    return P;
}

int hard_pressure_now(hard_system *s, const hard_pressure_params *pp, double *P_gr, double *P_sdf)
{
    hard_scan sc;
    if (hard_scan_from(pp, &sc))
        return -1;
    uint64_t *h = carlo_calloc((size_t)(sc.gr_bins + sc.sdf_bins), sizeof(uint64_t),
                               "pressure histograms");
    if (!h)
        return -1;
    if (carlo_sys_alive(&s->sys)) {
        free(h);
        return -1;
    }
    if (s->be->histograms(s, &sc, h, h + sc.gr_bins)) {
        s->dead = s->device == CARLO_GPU;
        free(h);
        return -1;
    }
    double V = carlo_box_volume(&s->box);
    *P_gr = hard_pressure_gr(s->dim, s->N, V, pp, h, 1.0);
    *P_sdf = hard_pressure_sdf(s->dim, s->N, V, pp, h + sc.gr_bins, 1.0);
    free(h);
    return 0;
}

/* ---------- plain positions ---------- */

typedef struct hist_ctx {
    const hard_scan *sc;
    uint64_t *gr;
    double r2min;
} hist_ctx;

static void hist_pair(void *ctx, int64_t j, const double d[3], double r2)
{
    (void)j;
    (void)d;
    hist_ctx *h = ctx;
    if (r2 < h->r2min)
        h->r2min = r2;
    double r = sqrt(r2);
    if (r >= 1.0 && r < 1.0 + h->sc->gr_width) {
        int b = (int)((r - 1.0) / h->sc->gr_dr);
        if (b < h->sc->gr_bins)
            h->gr[b]++;
    }
}

static double *wrapped_copy(const carlo_box *b, int64_t N, const double *x)
{
    double *y = carlo_malloc(carlo_mulsize((size_t)N, 3 * sizeof(double)), "positions");
    if (!y)
        return NULL;
    for (int64_t k = 0; k < N; k++) {
        for (int a = 0; a < 3; a++)
            y[3 * k + a] = a < b->dim ? x[3 * k + a] : 0.0;
        carlo_box_wrap(b, y + 3 * k);
    }
    return y;
}

int hard_histograms_positions(int dim, const carlo_box *b, int64_t N, const double *x,
                              const hard_scan *sc, uint64_t *gr, uint64_t *sdf)
{
    double *y = wrapped_copy(b, N, x);
    if (!y)
        return -1;
    hard_plain p;
    double rc = fmax(1.0 + sc->gr_width, 1.0 / (1.0 - sc->sdf_xmax)) + 1e-9;
    if (hard_plain_init(&p, dim, b, N, y, rc, 1)) {
        free(y);
        return -1;
    }
    for (int64_t k = 0; k < N; k++) {
        hist_ctx h = {sc, gr, INFINITY};
        hard_plain_around(&p, y + 3 * k, k, rc * rc, hist_pair, &h);
        if (h.r2min >= 1.0) {
            double xs = 1.0 - 1.0 / sqrt(h.r2min);
            if (xs < sc->sdf_xmax) {
                int bin = (int)(xs / sc->sdf_dx);
                if (bin < sc->sdf_bins)
                    sdf[bin]++;
            }
        }
    }
    hard_plain_free(&p);
    free(y);
    return 0;
}

typedef struct over_ctx {
    int64_t self, count, max, *pairs;
} over_ctx;

static void over_pair(void *ctx, int64_t j, const double d[3], double r2)
{
    (void)d;
    (void)r2;
    over_ctx *o = ctx;
    if (j <= o->self)
        return;
    if (o->count < o->max) {
        o->pairs[2 * o->count] = o->self;
        o->pairs[2 * o->count + 1] = j;
    }
    o->count++;
}

int hard_overlaps_positions(int dim, const carlo_box *b, int64_t N, const double *x,
                            int64_t *count, int64_t *pairs, int64_t max)
{
    double *y = wrapped_copy(b, N, x);
    if (!y)
        return -1;
    hard_plain p;
    if (hard_plain_init(&p, dim, b, N, y, 1.0, 1)) {
        free(y);
        return -1;
    }
    over_ctx o = {0, 0, max, pairs};
    for (int64_t k = 0; k < N; k++) {
        o.self = k;
        hard_plain_around(&p, y + 3 * k, k, 1.0, over_pair, &o);
    }
    *count = o.count;
    hard_plain_free(&p);
    free(y);
    return 0;
}

/* ---------- positions from the cells ---------- */

/* Host copy of the cells (caller frees with carlo_cell_data_free). */
static int download(hard_system *s, carlo_cell_data *h)
{
    if (carlo_sys_alive(&s->sys))
        return -1;
    if (carlo_cell_data_alloc(&s->grid, h))
        return -1;
    if (s->be->download(s, h)) {
        s->dead = s->device == CARLO_GPU;
        carlo_cell_data_free(h);
        return -1;
    }
    return 0;
}

int hard_positions(hard_system *s, double *x)
{
    carlo_cell_data h;
    if (download(s, &h))
        return -1;
    double *r = carlo_malloc(carlo_mulsize((size_t)s->N, 3 * sizeof(double)), "positions");
    uint32_t *tag = r ? carlo_malloc(carlo_mulsize((size_t)s->N, sizeof(uint32_t)), "tags") : NULL;
    if (!tag) {
        free(r);
        carlo_cell_data_free(&h);
        return -1;
    }
    int64_t n = carlo_cells_extract(&s->grid, &h, r, tag);
    int rc = 0;
    if (n != s->N)
        rc = carlo_seterr("the cells hold %lld particles, not %lld", (long long)n, (long long)s->N);
    for (int64_t k = 0; k < n && rc == 0; k++) {
        if (tag[k] >= (uint32_t)s->N) {
            rc = carlo_seterr("a particle carries tag %u (N = %lld)", tag[k], (long long)s->N);
            break;
        }
        /* cell position + origin, both in [0, L), wrapped by adding or subtracting L: exact
         * (every term a multiple of the cells' quantum), so that a system made from a snapshot
         * holds the very same positions */
        double *out = x + 3 * (int64_t)tag[k];
        for (int a = 0; a < 3; a++) {
            const double L = s->box.L[a];
            double v = a < s->dim ? r[3 * k + a] + s->origin[a] - 0.5 * L : 0.0;
            while (a < s->dim && v >= 0.5 * L)
                v -= L;
            while (a < s->dim && v < -0.5 * L)
                v += L;
            out[a] = v;
        }
        if (s->mv.skew) { /* skew coordinates into the position (core/box.h) */
            const double sk[3] = {out[0], out[1], out[2]};
            carlo_box_skew_to_pos(&s->box, sk, out);
        }
    }
    free(r);
    free(tag);
    carlo_cell_data_free(&h);
    return rc;
}

int hard_positions_f32(hard_system *s, float *x)
{
    double *d = carlo_malloc(carlo_mulsize((size_t)s->N, 3 * sizeof(double)), "positions");
    if (!d)
        return -1;
    int rc = hard_positions(s, d);
    for (int64_t k = 0; rc == 0 && k < 3 * s->N; k++)
        x[k] = (float)d[k];
    free(d);
    return rc;
}

/* Overlaps by the kernels' float test, listed by tag, each pair once. */
int hard_overlaps(hard_system *s, int64_t *count, int64_t *pairs, int64_t max)
{
    carlo_cell_data h;
    if (download(s, &h))
        return -1;
    const carlo_cell_grid *g = &s->grid;
    int64_t found = 0;
    for (int64_t c = 0; c < g->ncells; c++) {
        int xyz[3];
        carlo_cell_coords(g, c, xyz);
        int n = (int)h.count[c];
        for (int i = 0; i < n; i++) {
            float t[3] = {0, 0, 0};
            for (int a = 0; a < g->dim; a++)
                t[a] = h.pos[carlo_cell_slot(g, c, i, a)];
            uint32_t ti = h.aux[carlo_cell_slot(g, c, i, 0)];
            const int zr = g->dim == 3 ? 1 : 0;
            for (int oz = -zr; oz <= zr; oz++)
                for (int oy = -1; oy <= 1; oy++)
                    for (int ox = -1; ox <= 1; ox++) {
                        int off[3] = {ox, oy, oz};
                        float sv[3];
                        int64_t cn = carlo_cell_neighbor(g, xyz, off, sv);
                        int nn = (int)h.count[cn];
                        if (nn > g->nmax)
                            nn = g->nmax;
                        for (int j = 0; j < nn; j++) {
                            uint32_t tj = h.aux[carlo_cell_slot(g, cn, j, 0)];
                            if (tj <= ti) /* each pair once, from its lower tag */
                                continue;
                            float p[3] = {0, 0, 0};
                            for (int a = 0; a < g->dim; a++)
                                p[a] = h.pos[carlo_cell_slot(g, cn, j, a)];
                            if (hard_d2(g->dim, t, p, sv, hard_tilt(s)) < 1.0f) {
                                if (found < max) {
                                    pairs[2 * found] = ti;
                                    pairs[2 * found + 1] = tj;
                                }
                                found++;
                            }
                        }
                    }
        }
    }
    carlo_cell_data_free(&h);
    *count = found;
    return 0;
}

int hard_verify(hard_system *s)
{
    carlo_cell_data h;
    if (download(s, &h))
        return -1;
    int rc = carlo_cells_verify(&s->grid, &h, s->N);
    if (rc == 0) {
        char *seen = carlo_calloc((size_t)s->N, 1, "tag check");
        if (!seen)
            rc = -1;
        for (int64_t c = 0; rc == 0 && c < s->grid.ncells; c++)
            for (uint32_t i = 0; rc == 0 && i < h.count[c]; i++) {
                uint32_t t = h.aux[carlo_cell_slot(&s->grid, c, (int)i, 0)];
                if (t >= (uint32_t)s->N || seen[t])
                    rc = carlo_seterr("tag %u is out of range or held twice", t);
                else
                    seen[t] = 1;
            }
        free(seen);
    }
    carlo_cell_data_free(&h);
    if (rc)
        return -1;
    int64_t over, pair[2];
    if (hard_overlaps(s, &over, pair, 1))
        return -1;
    if (over)
        return carlo_seterr("%lld overlapping pairs, the first particles %lld and %lld", (long long)over,
                            (long long)pair[0] + 1, (long long)pair[1] + 1);
    return 0;
}

/* ---------- hexatic order ---------- */

typedef struct psi_ctx {
    double re, im;
    int n;
} psi_ctx;

/* exp(6 i theta) = ((dx + i dy) / r)^6, without trigonometry */
static void psi_pair(void *ctx, int64_t j, const double d[3], double r2)
{
    (void)j;
    psi_ctx *p = ctx;
    double a = d[0] / sqrt(r2), b = d[1] / sqrt(r2);
    double a2 = a * a - b * b, b2 = 2 * a * b;        /* z^2 */
    double a3 = a2 * a - b2 * b, b3 = a2 * b + b2 * a; /* z^3 */
    p->re += a3 * a3 - b3 * b3;                        /* (z^3)^2 */
    p->im += 2 * a3 * b3;
    p->n++;
}

int hard_psi6(hard_system *s, double rc, double *global, double *local, double *psi)
{
    if (s->dim != 2)
        return carlo_seterr("psi6 is the hexatic order of disks (2D)");
    double h[3];
    carlo_box_heights(&s->box, h); /* L in an orthorhombic box */
    if (!(rc > 0) || rc > 0.5 * fmin(h[0], h[1]))
        return carlo_seterr("rc must be > 0 and below half the box's width, %g (got %g)", 0.5 * fmin(h[0], h[1]), rc);
    double *x = carlo_malloc(carlo_mulsize((size_t)s->N, 3 * sizeof(double)), "positions");
    if (!x)
        return -1;
    hard_plain p;
    if (hard_positions(s, x) || hard_plain_init(&p, 2, &s->box, s->N, x, rc, 1)) {
        free(x);
        return -1;
    }
    double gre = 0, gim = 0, loc = 0;
    for (int64_t k = 0; k < s->N; k++) {
        psi_ctx c = {0, 0, 0};
        hard_plain_around(&p, x + 3 * k, k, rc * rc, psi_pair, &c);
        double re = c.n ? c.re / c.n : 0, im = c.n ? c.im / c.n : 0;
        gre += re;
        gim += im;
        loc += sqrt(re * re + im * im);
        if (psi) {
            psi[2 * k] = re;
            psi[2 * k + 1] = im;
        }
    }
    *global = sqrt(gre * gre + gim * gim) / (double)s->N;
    *local = loc / (double)s->N;
    hard_plain_free(&p);
    free(x);
    return 0;
}

int hard_steinhardt(hard_system *s, double rc, double *q4, double *q6)
{
    double *x = carlo_malloc(carlo_mulsize((size_t)s->N, 3 * sizeof(double)), "positions");
    int r = !x || hard_positions(s, x) || carlo_steinhardt(&s->box, s->N, x, rc, q4, q6);
    free(x);
    return r ? -1 : 0;
}
