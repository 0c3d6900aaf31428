/* stats.h — error bars for correlated Monte Carlo series: running moments, blocking
 * (Flyvbjerg-Petersen), integrated autocorrelation time, jackknife, histograms. */
#ifndef CARLO_STATS_H
#define CARLO_STATS_H

#include <stddef.h>
#include <stdint.h>

/* Welford's running mean and variance (numerically stable in one pass). */
typedef struct carlo_moments {
    double n, mean, m2, min, max;
} carlo_moments;

void carlo_moments_init(carlo_moments *m);
void carlo_moments_add(carlo_moments *m, double x);
double carlo_moments_var(const carlo_moments *m); /* sample variance (n - 1) */

/* An estimate of a mean with its standard error and integrated autocorrelation
 * time tau (in units of the sampling interval; tau = 0.5 for independent samples,
 * so that err^2 = 2 tau var / n). plateau = 0 when the blocking never reached a
 * plateau or the series holds fewer than 25 independent samples (n < 50 tau): the
 * series is too short for its correlation time and err is a lower bound. With a
 * plateau, mean +- err and mean +- 1.96 err cover the true mean 68 % and 95 % of the
 * time to within 2 % (tests/unit/stats.c measures it) once n >= 200 tau. */
typedef struct carlo_estimate {
    double mean, err, tau;
    size_t n;
    int plateau;
    size_t block; /* block length (in samples) at which err was read */
} carlo_estimate;

/* Blocking analysis of x[0..n-1], the covariance of neighbouring blocks included (see
 * stats.c). Needs n >= 2 (err = 0, tau = 0.5 below that). */
void carlo_blocking(const double *x, size_t n, carlo_estimate *out);

/* Integrated autocorrelation time with Sokal's automatic window (c = 6). */
double carlo_tau_int(const double *x, size_t n);

/* Jackknife error of a function of several means. series[k] holds n samples of the
 * k-th quantity (k < nseries <= 8); the samples are cut into nblocks blocks of
 * consecutive samples (choose blocks longer than the correlation time). f receives
 * the nseries means and returns the derived value. value = f(all means). */
typedef double (*carlo_derived_fn)(const double *means, void *ctx);
void carlo_jackknife(const double *const *series, int nseries, size_t n, size_t nblocks,
                     carlo_derived_fn f, void *ctx, double *value, double *err);

/* A fixed-bin histogram on [lo, hi); values outside are counted apart. */
typedef struct carlo_histogram {
    double lo, hi;
    size_t bins;
    uint64_t *count;
    uint64_t below, above, total;
} carlo_histogram;

int carlo_histogram_init(carlo_histogram *h, double lo, double hi, size_t bins);
void carlo_histogram_add(carlo_histogram *h, double x);
void carlo_histogram_free(carlo_histogram *h);

#endif
