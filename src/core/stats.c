/* stats.c — see stats.h. The blocking analysis follows Flyvbjerg & Petersen,
 * J. Chem. Phys. 91, 461 (1989); the window for tau follows Sokal's lectures (1996). */
#include "core/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

void carlo_moments_init(carlo_moments *m)
{
    m->n = 0;
    m->mean = 0;
    m->m2 = 0;
    m->min = INFINITY;
    m->max = -INFINITY;
}

void carlo_moments_add(carlo_moments *m, double x)
{
    m->n += 1;
    double d = x - m->mean;
    m->mean += d / m->n;
    m->m2 += d * (x - m->mean);
    if (x < m->min) m->min = x;
    if (x > m->max) m->max = x;
}

double carlo_moments_var(const carlo_moments *m)
{
    return m->n > 1 ? m->m2 / (m->n - 1) : 0.0;
}

/* Mean and standard error of the mean of y[0..n-1], treating samples as independent. */
static void naive(const double *y, size_t n, double *mean, double *err)
{
    carlo_moments m;
    carlo_moments_init(&m);
    for (size_t i = 0; i < n; i++)
        carlo_moments_add(&m, y[i]);
    *mean = m.mean;
    *err = n > 1 ? sqrt(carlo_moments_var(&m) / (double)n) : 0.0;
}

/* Fewer blocks than this give an error estimate too uncertain (1/sqrt(2(n-1)) > 18%) to report
 * as a plateau. */
#define MIN_BLOCKS 16

/* The 0.99 quantile of the chi-square distribution with df degrees of freedom: tabulated to
 * 30, Wilson-Hilferty above (relative error < 1e-3 there). */
static double chi2_q99(int df)
{
    static const double q[31] = {0, 6.635, 9.210, 11.345, 13.277, 15.086, 16.812, 18.475, 20.090,
                                 21.666, 23.209, 24.725, 26.217, 27.688, 29.141, 30.578, 32.000,
                                 33.409, 34.805, 36.191, 37.566, 38.932, 40.289, 41.638, 42.980,
                                 44.314, 45.642, 46.963, 48.278, 49.588, 50.892};
    if (df <= 30)
        return q[df < 1 ? 1 : df];
    double h = 2.0 / (9.0 * df), t = 1.0 - h + 2.3263478740 * sqrt(h);
    return df * t * t * t;
}

/* Blocking with the automatic level choice of Jonsson, Phys. Rev. E 98, 043304 (2018): at each
 * level k (n_k blocks) the variance s_k^2 and lag-1 autocovariance g_k of the block means give
 * M_j = sum_{k >= j} n_k ((n_k - 1) s_k^2 / n_k^2 + g_k)^2 / s_k^4, chi-square distributed with
 * one degree of freedom per level once blocks are longer than the correlation time; the first
 * level j with M_j below the 0.99 quantile is the plateau.
 *
 * The plain block variance at that level is biased low: blocks of length b share the
 * correlations across their boundaries, and err^2 falls short by about tau/b (10-20 % at the
 * b ~ 5-10 tau the test accepts; tau = 99.5 was read as 81-91). To leading order in tau/b the
 * deficit is twice the covariance of neighbouring block means, so the error is read as
 * (s^2 + 2 g) / (n_k - 3), the mean-subtraction bias of s^2 and g included; what remains is
 * of order exp(-b / tau). The price is noise: three blocks per degree of freedom, not one.
 *
 * The plateau is flagged (plateau = 0) when the test never passes at a level of at least
 * MIN_BLOCKS blocks, or when the series holds fewer than MIN_INDEPENDENT effectively
 * independent samples (n < 2 MIN_INDEPENDENT tau): the test has no power on so few blocks and
 * the error is then a lower bound. Without a plateau level the error reported is the largest
 * plain estimate among the levels of at least MIN_BLOCKS blocks. */
#define MIN_INDEPENDENT 25

typedef struct blocking_level {
    size_t m;        /* blocks */
    double mean;
    double s2, g;    /* variance and lag-1 autocovariance of the block means (divided by m) */
    double stat;     /* this level's term of Jonsson's M_j */
} blocking_level;

/* Fills lv[0..] level by level, halving y in place; returns the number of levels. */
static int blocking_levels(double *y, size_t n, blocking_level *lv, int max_levels)
{
    int levels = 0;
    size_t m = n;
    while (m >= 2 && levels < max_levels) {
        /* four partial sums: the additions' latency, not their count, bounds these loops */
        double p[4] = {0, 0, 0, 0}, q[4] = {0, 0, 0, 0}, r[4] = {0, 0, 0, 0};
        size_t i = 0;
        for (; i + 4 <= m; i += 4)
            for (int j = 0; j < 4; j++)
                p[j] += y[i + j];
        for (; i < m; i++)
            p[0] += y[i];
        double mu = ((p[0] + p[1]) + (p[2] + p[3])) / (double)m;
        for (i = 0; i + 5 <= m; i += 4)
            for (int j = 0; j < 4; j++) {
                double d = y[i + j] - mu;
                q[j] += d * d;
                r[j] += d * (y[i + j + 1] - mu);
            }
        for (; i < m; i++) {
            double d = y[i] - mu;
            q[0] += d * d;
            if (i + 1 < m)
                r[0] += d * (y[i + 1] - mu);
        }
        double s2 = ((q[0] + q[1]) + (q[2] + q[3])) / (double)m;
        double g = ((r[0] + r[1]) + (r[2] + r[3])) / (double)m;
        double t = (double)(m - 1) * s2 / ((double)m * (double)m) + g;
        lv[levels] = (blocking_level){m, mu, s2, g, s2 > 0 ? (double)m * t * t / (s2 * s2) : 0.0};
        levels++;
        size_t half = m / 2; /* an odd last sample is dropped */
        for (i = 0; i < half; i++)
            y[i] = 0.5 * (y[2 * i] + y[2 * i + 1]);
        m = half;
    }
    return levels;
}

/* The plain standard error of the mean from level k's blocks. */
static double level_err(const blocking_level *l)
{
    return sqrt(l->s2 / (double)(l->m - 1));
}

/* The error from level k with the neighbouring blocks' covariance added back (m >= MIN_BLOCKS). */
static double level_err_corrected(const blocking_level *l)
{
    double v = (l->s2 + 2 * l->g) / (double)(l->m - 3);
    return v > 0 ? sqrt(v) : level_err(l);
}

void carlo_blocking(const double *x, size_t n, carlo_estimate *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    out->tau = 0.5;
    out->block = 1;
    out->plateau = 1;
    if (n == 0)
        return;
    if (n < 2) {
        out->mean = x[0];
        return;
    }
    double *y = malloc(n * sizeof *y);
    if (!y) { /* fall back to the naive error; never fail on a statistics call */
        naive(x, n, &out->mean, &out->err);
        out->plateau = 0;
        return;
    }
    memcpy(y, x, n * sizeof *y);
    blocking_level lv[64];
    int levels = blocking_levels(y, n, lv, 64);
    free(y);
    out->mean = lv[0].mean;
    double err0 = level_err(&lv[0]);
    int chosen = -1;
    double M = 0, Mj[64];
    for (int k = levels - 1; k >= 0; k--) { /* M_j accumulates from the top level down */
        M += lv[k].stat;
        Mj[k] = M;
    }
    for (int j = 0; j < levels && chosen < 0; j++)
        if (Mj[j] < chi2_q99(levels - j))
            chosen = j;
    if (chosen >= 0 && lv[chosen].m >= MIN_BLOCKS) {
        out->err = level_err_corrected(&lv[chosen]);
    } else {
        out->plateau = 0;
        int best = 0;
        for (int k = 1; k < levels && lv[k].m >= MIN_BLOCKS; k++)
            if (level_err(&lv[k]) > level_err(&lv[best]))
                best = k;
        chosen = best;
        out->err = level_err(&lv[best]);
    }
    out->block = n / lv[chosen].m;
    out->tau = err0 > 0 ? 0.5 * (out->err * out->err) / (err0 * err0) : 0.5;
    if ((double)n < 2.0 * MIN_INDEPENDENT * out->tau)
        out->plateau = 0;
}

double carlo_tau_int(const double *x, size_t n)
{
    if (n < 4)
        return 0.5;
    double mean = 0;
    for (size_t i = 0; i < n; i++)
        mean += x[i];
    mean /= (double)n;
    double c0 = 0;
    for (size_t i = 0; i < n; i++)
        c0 += (x[i] - mean) * (x[i] - mean);
    c0 /= (double)n;
    if (c0 <= 0)
        return 0.5;
    double tau = 0.5;
    for (size_t t = 1; t < n / 2; t++) {
        double ct = 0;
        for (size_t i = 0; i + t < n; i++)
            ct += (x[i] - mean) * (x[i + t] - mean);
        ct /= (double)(n - t);
        tau += ct / c0;
        if ((double)t >= 6.0 * tau)
            break;
    }
    return tau > 0.5 ? tau : 0.5;
}

void carlo_jackknife(const double *const *series, int nseries, size_t n, size_t nblocks,
                     carlo_derived_fn f, void *ctx, double *value, double *err)
{
    double total[8] = {0}, means[8];
    if (nseries > 8)
        nseries = 8;
    for (int k = 0; k < nseries; k++) {
        for (size_t i = 0; i < n; i++)
            total[k] += series[k][i];
        means[k] = n ? total[k] / (double)n : 0.0;
    }
    *value = f(means, ctx);
    *err = 0;
    if (nblocks < 2 || n < nblocks)
        return;
    size_t blen = n / nblocks, used = blen * nblocks;
    double *est = malloc(nblocks * sizeof *est);
    if (!est)
        return;
    double sum_used[8] = {0};
    for (int k = 0; k < nseries; k++)
        for (size_t i = 0; i < used; i++)
            sum_used[k] += series[k][i];
    double mean_est = 0;
    for (size_t b = 0; b < nblocks; b++) {
        double leave[8];
        for (int k = 0; k < nseries; k++) {
            double s = 0;
            for (size_t i = b * blen; i < (b + 1) * blen; i++)
                s += series[k][i];
            leave[k] = (sum_used[k] - s) / (double)(used - blen);
        }
        est[b] = f(leave, ctx);
        mean_est += est[b];
    }
    mean_est /= (double)nblocks;
    double v = 0;
    for (size_t b = 0; b < nblocks; b++)
        v += (est[b] - mean_est) * (est[b] - mean_est);
    *err = sqrt(v * (double)(nblocks - 1) / (double)nblocks);
    free(est);
}

int carlo_histogram_init(carlo_histogram *h, double lo, double hi, size_t bins)
{
    memset(h, 0, sizeof *h);
    if (!(hi > lo) || bins == 0)
        return carlo_seterr("histogram needs lo < hi and bins >= 1");
    h->count = carlo_calloc(bins, sizeof *h->count, "histogram bins");
    if (!h->count)
        return -1;
    h->lo = lo;
    h->hi = hi;
    h->bins = bins;
    return 0;
}

void carlo_histogram_add(carlo_histogram *h, double x)
{
    h->total++;
    if (!(x >= h->lo)) { /* NaN counts below */
        h->below++;
        return;
    }
    if (x >= h->hi) {
        h->above++;
        return;
    }
    size_t b = (size_t)((x - h->lo) / (h->hi - h->lo) * (double)h->bins);
    if (b >= h->bins)
        b = h->bins - 1;
    h->count[b]++;
}

void carlo_histogram_free(carlo_histogram *h)
{
    free(h->count);
    h->count = NULL;
}
