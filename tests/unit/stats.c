/* unit/core/stats — blocking errors and autocorrelation times on an AR(1) series whose
 * exact values are known: x_t = a x_{t-1} + sqrt(1 - a^2) z_t has variance 1 and
 * tau_int = (1 + a) / (2 (1 - a)). */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "core/rng.h"
#include "core/stats.h"

static double *ar1(size_t n, double a, uint64_t seed)
{
    double *x = malloc(n * sizeof *x), prev = 0;
    for (size_t i = 0; i < n; i += 2) {
        double z0, z1;
        carlo_normal2(carlo_rng(seed, CARLO_PURPOSE_CORE_TEST, 9, (uint32_t)(i / 2), 0), &z0, &z1);
        prev = a * prev + sqrt(1 - a * a) * z0;
        x[i] = prev;
        if (i + 1 < n) {
            prev = a * prev + sqrt(1 - a * a) * z1;
            x[i + 1] = prev;
        }
    }
    return x;
}

static double mean_fn(const double *mu, void *ctx)
{
    (void)ctx;
    return mu[0];
}

int main(void)
{
    const size_t n = 1 << 20;
    for (int c = 0; c < 2; c++) {
        double a = c == 0 ? 0.0 : 0.9;
        double tau = (1 + a) / (2 * (1 - a));
        double *x = ar1(n, a, 11 + (uint64_t)c);
        carlo_estimate e;
        carlo_blocking(x, n, &e);
        double err_exact = sqrt(2 * tau / (double)n);
        char name[80];
        snprintf(name, sizeof name, "unit/core/stats/blocking-err-a%.1f", a);
        /* the blocking error itself scatters by ~1/sqrt(2 n_blocks): 15% is > 3 sigma here */
        CHECK(name, fabs(e.err / err_exact - 1) < 0.15 && e.plateau, "err %.4g, exact %.4g, plateau %d",
              e.err, err_exact, e.plateau);
        snprintf(name, sizeof name, "unit/core/stats/blocking-tau-a%.1f", a);
        CHECK(name, fabs(e.tau / tau - 1) < 0.3, "tau %.3g, exact %.3g", e.tau, tau);
        snprintf(name, sizeof name, "unit/core/stats/window-tau-a%.1f", a);
        double tw = carlo_tau_int(x, n);
        CHECK(name, fabs(tw / tau - 1) < 0.1, "tau %.3g, exact %.3g", tw, tau);
        snprintf(name, sizeof name, "unit/core/stats/mean-a%.1f", a);
        CHECK(name, fabs(e.mean) < 4 * err_exact, "mean %.4g, err %.4g", e.mean, err_exact);
        snprintf(name, sizeof name, "unit/core/stats/jackknife-a%.1f", a);
        const double *ser[1] = {x};
        double v, jerr;
        carlo_jackknife(ser, 1, n, 64, mean_fn, NULL, &v, &jerr);
        CHECK(name, fabs(v - e.mean) < 1e-12 && fabs(jerr / err_exact - 1) < 0.3,
              "value %.4g vs %.4g, err %.4g vs %.4g", v, e.mean, jerr, err_exact);
        free(x);
    }
    /* too short a series for its correlation time is flagged, not trusted */
    double *x = ar1(256, 0.999, 3);
    carlo_estimate e;
    carlo_blocking(x, 256, &e);
    CHECK("unit/core/stats/no-plateau-flagged", !e.plateau, "a 256-sample series with tau ~ 1000 "
          "claims a plateau (err %.3g)", e.err);
    free(x);

    /* the level chosen by Jonsson's test: blocks several correlation times long (tau = 9.5
     * for a = 0.9, so the block correlation has died out by 8 tau), and not absurdly long */
    {
        double *y = ar1(1 << 20, 0.9, 12);
        carlo_blocking(y, 1 << 20, &e);
        CHECK("unit/core/stats/blocking-level", e.block >= 64 && e.block <= 8192,
              "blocks of %zu samples for tau = 9.5", e.block);
        free(y);
    }

    carlo_moments m;
    carlo_moments_init(&m);
    for (int i = 1; i <= 5; i++)
        carlo_moments_add(&m, i);
    CHECK("unit/core/stats/moments", m.mean == 3 && fabs(carlo_moments_var(&m) - 2.5) < 1e-12 &&
                                         m.min == 1 && m.max == 5, "mean %g var %g", m.mean,
          carlo_moments_var(&m));

    carlo_histogram h;
    carlo_histogram_init(&h, 0, 1, 4);
    double vals[] = {-1, 0, 0.2, 0.25, 0.99, 1.0, NAN};
    for (int i = 0; i < 7; i++)
        carlo_histogram_add(&h, vals[i]);
    CHECK("unit/core/stats/histogram", h.count[0] == 2 && h.count[1] == 1 && h.count[3] == 1 &&
                                           h.below == 2 && h.above == 1 && h.total == 7,
          "counts %llu %llu %llu %llu below %llu above %llu", (unsigned long long)h.count[0],
          (unsigned long long)h.count[1], (unsigned long long)h.count[2],
          (unsigned long long)h.count[3], (unsigned long long)h.below, (unsigned long long)h.above);
    carlo_histogram_free(&h);
    return check_failed;
}
