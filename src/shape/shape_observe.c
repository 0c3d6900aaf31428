/* shape_observe.c — observables of hard shapes from a configuration: the 2D orientational and
 * bond-orientational order psi_n, and the pressure from the scale distribution function (HPMC's
 * volume perturbation: the smallest compression of the centre separations at which each
 * particle first overlaps a neighbour, histogrammed and extrapolated to zero compression). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h"
#include "shape/shape.h"
#include "shape/shape_plain.h"
#include "core/steinhardt.h"

typedef struct config {
    double *x;
    uint32_t *o;
} config;

static int config_get(shape_system *s, config *c)
{
    c->x = carlo_malloc(carlo_mulsize((size_t)s->N, 3 * sizeof(double)), "positions");
    c->o = c->x ? carlo_malloc(carlo_mulsize((size_t)s->N, 4 * sizeof(uint32_t)), "orientations") : NULL;
    if (!c->o || shape_state(s, c->x, c->o)) {
        free(c->x);
        free(c->o);
        return -1;
    }
    return 0;
}

static void config_free(config *c)
{
    free(c->x);
    free(c->o);
}

typedef struct bond_ctx {
    int n;
    double re, im;
    int64_t bonds;
} bond_ctx;

static void bond_one(void *v, int64_t j, const double d[3])
{
    (void)j;
    bond_ctx *b = v;
    double t = atan2(d[1], d[0]);
    b->re += cos(b->n * t);
    b->im += sin(b->n * t);
    b->bonds++;
}

int shape_psi(shape_system *s, int n, int m, double rc, double *orient, double *bond)
{
    if (s->dim != 2)
        return carlo_seterr("psi is the order of a 2D system");
    config c;
    if (config_get(s, &c))
        return -1;
    double re = 0, im = 0;
    for (int64_t k = 0; k < s->N; k++) {
        double v[4];
        shape_orient_values(2, c.o + 4 * k, v);
        re += cos(n * v[0]);
        im += sin(n * v[0]);
    }
    *orient = hypot(re, im) / (double)s->N;
    shape_plain pl;
    if (shape_plain_init(&pl, &s->box, s->N, rc, c.x)) {
        config_free(&c);
        return -1;
    }
    for (int64_t k = 0; k < s->N; k++)
        shape_plain_insert(&pl, k);
    bond_ctx b = {m, 0, 0, 0};
    for (int64_t k = 0; k < s->N; k++)
        shape_plain_around(&pl, c.x + 3 * k, k, rc, bond_one, &b);
    *bond = b.bonds ? hypot(b.re, b.im) / (double)b.bonds : 0;
    shape_plain_free(&pl);
    config_free(&c);
    return 0;
}

/* ---------- the scale distribution function ---------- */

typedef struct sdf_ctx {
    const shape_def *s;
    shape_rot ri;
    const uint32_t *o;
    double xmax, xmin; /* the smallest compression found so far */
} sdf_ctx;

static int overlap_at(const sdf_ctx *c, const shape_rot *rj, const double d[3], double x)
{
    double e[3] = {d[0] * (1 - x), d[1] * (1 - x), d[2] * (1 - x)};
    return shape_overlap(c->s, &c->ri, c->s, rj, e);
}

/* The pair's compression of first overlap, by bisection (the overlapping compressions of a
 * convex pair form an interval up from it). */
static void sdf_one(void *v, int64_t j, const double d[3])
{
    sdf_ctx *c = v;
    shape_rot rj;
    shape_rot_of(c->s->dim, c->o + 4 * j, &rj);
    double hi = fmin(c->xmax, c->xmin);
    if (!overlap_at(c, &rj, d, hi))
        return;
    double lo = 0;
    for (int it = 0; it < 40; it++) {
        double mid = 0.5 * (lo + hi);
        if (overlap_at(c, &rj, d, mid))
            hi = mid;
        else
            lo = mid;
    }
    c->xmin = fmin(c->xmin, hi);
}

/* Least-squares polynomial of the given degree through (t, y), its value at 0 (t scaled to
 * [0, 1], normal equations in double: degrees up to 6). */
static double fit_at_zero(const double *t, const double *y, int n, int degree)
{
    double A[7][8];
    int k = degree + 1;
    memset(A, 0, sizeof A);
    for (int i = 0; i < n; i++) {
        double p[7];
        p[0] = 1;
        for (int j = 1; j < k; j++)
            p[j] = p[j - 1] * t[i];
        for (int r = 0; r < k; r++) {
            for (int q = 0; q < k; q++)
                A[r][q] += p[r] * p[q];
            A[r][k] += p[r] * y[i];
        }
    }
    for (int col = 0; col < k; col++) { /* Gauss-Jordan with partial pivoting */
        int piv = col;
        for (int r = col + 1; r < k; r++)
            if (fabs(A[r][col]) > fabs(A[piv][col]))
                piv = r;
        for (int q = 0; q <= k; q++) {
            double tmp = A[col][q];
            A[col][q] = A[piv][q];
            A[piv][q] = tmp;
        }
        if (A[col][col] == 0)
            return NAN;
        for (int r = 0; r < k; r++) {
            if (r == col)
                continue;
            double f = A[r][col] / A[col][col];
            for (int q = col; q <= k; q++)
                A[r][q] -= f * A[col][q];
        }
    }
    return A[0][k] / A[0][0];
}

int shape_pressure_sdf(shape_system *s, double dx, double xmax, int degree, double *P)
{
    const int bins = (int)floor(xmax / dx + 0.5);
    if (!(dx > 0) || !(xmax > dx) || xmax >= 0.5 || bins < degree + 2 || degree < 0 || degree > 6)
        return carlo_seterr("the scale distribution needs 0 < dx < xmax < 0.5, a degree 0 to 6 and at "
                            "least degree + 2 bins (got dx %g, xmax %g, degree %d)", dx, xmax, degree);
    config c;
    if (config_get(s, &c))
        return -1;
    double *h = carlo_calloc((size_t)bins * 3, sizeof(double), "a histogram");
    shape_plain pl;
    const double rc = 2.0 * s->shape.R / (1.0 - xmax);
    if (!h || shape_plain_init(&pl, &s->box, s->N, rc, c.x)) {
        free(h);
        config_free(&c);
        return -1;
    }
    for (int64_t k = 0; k < s->N; k++)
        shape_plain_insert(&pl, k);
    /* particles in blocks, each block over the threads (a histogram per thread, summed), the
     * interrupt flag between blocks; the bins are counts, so the sum is exact in any order */
    for (int64_t k0 = 0; k0 < s->N; k0 += 4096) {
        if (carlo_interrupted) {
            shape_plain_free(&pl);
            free(h);
            config_free(&c);
            return carlo_seterr("interrupted");
        }
        const int64_t k1 = k0 + 4096 < s->N ? k0 + 4096 : s->N;
#pragma omp parallel for schedule(dynamic, 64) reduction(+ : h[:bins]) if (k1 - k0 > 256)
        for (int64_t k = k0; k < k1; k++) {
            sdf_ctx ctx = {&s->shape, {{{0}}}, c.o, xmax, INFINITY};
            shape_rot_of(s->dim, c.o + 4 * k, &ctx.ri);
            shape_plain_around(&pl, c.x + 3 * k, k, rc, sdf_one, &ctx);
            if (ctx.xmin < xmax) {
                int b = (int)(ctx.xmin / dx);
                if (b < bins)
                    h[b] += 1;
            }
        }
    }
    double *t = h + bins, *y = t + bins;
    for (int b = 0; b < bins; b++) {
        t[b] = (b + 0.5) / bins;
        y[b] = h[b] / ((double)s->N * dx);
    }
    const double s0 = fit_at_zero(t, y, bins, degree);
    const double rho = (double)s->N / carlo_box_volume(&s->box);
    *P = rho * (1.0 + s0 / (2.0 * s->dim)); /* beta P = rho (1 + s(0+) / (2 d)) */
    shape_plain_free(&pl);
    free(h);
    config_free(&c);
    return 0;
}

/* ---------- 3D order: Steinhardt's Q4, Q6 and the nematic order ---------- */

int shape_steinhardt(shape_system *s, double rc, double *q4, double *q6)
{
    if (s->dim != 3)
        return carlo_seterr("Q4 and Q6 are the bond order of a 3D system");
    double *x = carlo_malloc(carlo_mulsize((size_t)s->N, 3 * sizeof(double)), "positions");
    if (!x || shape_state(s, x, NULL)) {
        free(x);
        return -1;
    }
    if (!(rc > 0))
        rc = carlo_steinhardt_rc((double)s->N / carlo_box_volume(&s->box));
    int r = carlo_steinhardt(&s->box, s->N, x, rc, q4, q6);
    free(x);
    return r;
}

void shape_axis(const shape_def *d, double u[3])
{
    double G[3][3] = {{0}};
    if (d->kind == SHAPE_ELLIPSOID) {
        for (int a = 0; a < 3; a++)
            G[a][a] = d->axes[a] * d->axes[a];
    } else {
        for (int k = 0; k < d->nv; k++)
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++)
                    G[a][b] += d->v[k][a] * d->v[k][b];
    }
    double val[3], vec[3][3];
    carlo_sym3_eigen(G, val, vec);
    const double mean = (val[0] + val[1] + val[2]) / 3;
    int best = 0; /* farthest from the mean; ties to the lowest body axis */
    for (int k = 1; k < 3; k++)
        if (fabs(val[k] - mean) > fabs(val[best] - mean) * (1 + 1e-9) + 1e-12 * fabs(mean))
            best = k;
    for (int a = 0; a < 3; a++)
        u[a] = vec[best][a];
}

int shape_nematic(shape_system *s, double *S, double director[3])
{
    if (s->dim != 3)
        return carlo_seterr("the nematic order is that of a 3D system");
    uint32_t *o = carlo_malloc(carlo_mulsize((size_t)s->N, 4 * sizeof(uint32_t)), "orientations");
    double *u = o ? carlo_malloc(carlo_mulsize((size_t)s->N, 3 * sizeof(double)), "axes") : NULL;
    if (!u || shape_state(s, NULL, o)) {
        free(o);
        free(u);
        return -1;
    }
    double u0[3];
    shape_axis(&s->shape, u0);
    for (int64_t k = 0; k < s->N; k++) {
        shape_rot r;
        shape_rot_of(3, o + 4 * k, &r);
        for (int a = 0; a < 3; a++)
            u[3 * k + a] = r.m[a][0] * u0[0] + r.m[a][1] * u0[1] + r.m[a][2] * u0[2];
    }
    *S = carlo_nematic(s->N, u, director);
    free(o);
    free(u);
    return 0;
}
