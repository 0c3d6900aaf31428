/* unit/fe/mbar — MBAR on synthetic samples whose free energies are analytic: harmonic wells
 * (matrix form) and Gaussian energy distributions along a beta ladder (g(E) = exp(-E^2/2s^2),
 * so p_beta(E) is normal with mean -beta s^2, variance s^2 and ln Z = beta^2 s^2 / 2); the
 * covariance against the spread over many independent data sets; histograms against MBAR;
 * reweighted means and variances. `unit_mbar perf` times 64 states x 1e5 samples. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "core/rng.h"
#include "fe/mbar.h"

static double normal(uint64_t seed, uint64_t step, uint32_t i)
{
    double z0, z1;
    carlo_normal2(carlo_rng(seed, CARLO_PURPOSE_CORE_TEST, step, i / 2, 7), &z0, &z1);
    return i % 2 ? z1 : z0;
}

/* A beta ladder of K states, nk samples each, Gaussian energies of variance s2. */
static fe_mbar *ladder(int K, size_t nk, const double *beta, double s2, uint64_t seed, int with_obs)
{
    fe_mbar *m = fe_mbar_new(K, 1, with_obs ? 2 : 0, (size_t)K * nk);
    double s = sqrt(s2);
    for (int k = 0; k < K; k++) {
        m->Nk[k] = (double)nk;
        m->coef[k] = beta[k];
        for (size_t j = 0; j < nk; j++) {
            size_t i = (size_t)k * nk + j;
            m->x[i] = -beta[k] * s2 + s * normal(seed, (uint64_t)k, (uint32_t)j);
            if (with_obs) {
                m->obs[i] = m->x[i];
                m->obs[m->n + i] = m->x[i] * m->x[i];
            }
        }
    }
    return m;
}

/* Harmonic wells u_k(x) = k_k (x - c_k)^2 / 2: f_k - f_0 = ln(k_k / k_0) / 2. */
static fe_mbar *wells(int K, size_t nk, const double *kk, const double *c, uint64_t seed)
{
    fe_mbar *m = fe_mbar_new(K, 0, 0, (size_t)K * nk);
    for (int l = 0; l < K; l++) {
        m->Nk[l] = (double)nk;
        for (size_t j = 0; j < nk; j++) {
            size_t i = (size_t)l * nk + j;
            double x = c[l] + normal(seed, (uint64_t)l, (uint32_t)j) / sqrt(kk[l]);
            for (int k = 0; k < K; k++)
                m->u[(size_t)k * m->n + i] = 0.5 * kk[k] * (x - c[k]) * (x - c[k]);
        }
    }
    return m;
}

static int solve(fe_mbar *m)
{
    double f0[64];
    char err[200];
    fe_mbar_guess(m, f0);
    if (fe_mbar_solve(m, f0, 1e-12, 200, err, sizeof err)) {
        printf("# solve: %s\n", err);
        return -1;
    }
    return 0;
}

static void check_wells(void)
{
    const double kk[4] = {1, 2, 4, 1}, c[4] = {0, 0.5, 1.0, 1.5};
    fe_mbar *m = wells(4, 2000, kk, c, 11);
    int ok = solve(m) == 0;
    double theta[16];
    fe_mbar_theta(m, theta);
    double worst = 0;
    for (int k = 1; k < 4; k++) {
        double exact = 0.5 * log(kk[k] / kk[0]);
        double df = sqrt(theta[k * 4 + k] + theta[0] - 2 * theta[k]);
        double z = fabs(m->f[k] - exact) / df;
        worst = z > worst ? z : worst;
    }
    CHECK("unit/fe/mbar/wells", ok && worst < 4, "worst deviation %.2f error bars", worst);
    CHECK("unit/fe/mbar/converged", ok && m->residual < 1e-10, "residual %.3g after %d passes",
          m->residual, m->iterations);
    fe_mbar_free(m);
}

/* Each state's estimate against the exact value in units of its error, over many data sets:
 * 68 % within one error bar and 95 % within two. */
static void check_coverage(void)
{
    const double beta[3] = {0.8, 0.9, 1.0}, s2 = 100;
    int in1 = 0, in2 = 0, total = 0;
    double z2 = 0;
    for (int rep = 0; rep < 400; rep++) {
        fe_mbar *m = ladder(3, 200, beta, s2, 1000 + (uint64_t)rep, 0);
        if (solve(m)) {
            fe_mbar_free(m);
            continue;
        }
        double theta[9];
        fe_mbar_theta(m, theta);
        for (int k = 1; k < 3; k++) {
            double exact = -0.5 * (beta[k] * beta[k] - beta[0] * beta[0]) * s2;
            double df = sqrt(theta[k * 3 + k] + theta[0] - 2 * theta[k]);
            double z = (m->f[k] - exact) / df;
            in1 += fabs(z) < 1;
            in2 += fabs(z) < 2;
            z2 += z * z;
            total++;
        }
        fe_mbar_free(m);
    }
    /* 800 estimates (two per set, correlated): +-4 binomial standard deviations of 400 */
    double p1 = (double)in1 / total, p2 = (double)in2 / total;
    printf("# coverage: %d estimates, %.3f within 1 error bar, %.3f within 2, <z^2> = %.3f\n", total, p1, p2, z2 / total);
    CHECK("unit/fe/mbar/coverage", total == 800 && fabs(p1 - 0.683) < 0.094 && fabs(p2 - 0.954) < 0.042,
          "%d estimates: %.3f within 1 error bar, %.3f within 2, <z^2> = %.3f", total, p1, p2,
          z2 / total);
}

static void check_ladder(void)
{
    const int K = 6;
    const double beta[6] = {0.50, 0.55, 0.60, 0.65, 0.70, 0.75}, s2 = 400;
    fe_mbar *m = ladder(K, 5000, beta, s2, 5, 1);
    int ok = solve(m) == 0;
    double theta[36];
    fe_mbar_theta(m, theta);
    double worst = 0;
    for (int k = 1; k < K; k++) {
        double exact = -0.5 * (beta[k] * beta[k] - beta[0] * beta[0]) * s2;
        double df = sqrt(theta[k * K + k] + theta[0] - 2 * theta[k]);
        double z = fabs(m->f[k] - exact) / df;
        worst = z > worst ? z : worst;
    }
    CHECK("unit/fe/mbar/ladder", ok && worst < 4, "worst deviation %.2f error bars", worst);

    /* reweighting to a beta between the states: <E> = -beta s^2, var E = s^2, f exact */
    double bt = 0.625, ft, dft, mean[2], cov[4];
    int which[2] = {0, 1};
    fe_mbar_expect(m, &bt, NULL, 2, which, &ft, &dft, mean, cov);
    double fexact = -0.5 * (bt * bt - beta[0] * beta[0]) * s2;
    CHECK("unit/fe/mbar/reweight-f", fabs(ft - fexact) < 4 * dft && dft > 0, "f %.6g vs %.6g (err %.3g)",
          ft, fexact, dft);
    double eE = sqrt(cov[0]);
    CHECK("unit/fe/mbar/reweight-mean", fabs(mean[0] + bt * s2) < 4 * eE && eE > 0,
          "<E> %.6g vs %.6g (err %.3g)", mean[0], -bt * s2, eE);
    double var = mean[1] - mean[0] * mean[0];
    /* d var = d<E^2> - 2 <E> d<E> */
    double g0 = -2 * mean[0], g1 = 1;
    double evar = sqrt(g0 * g0 * cov[0] + 2 * g0 * g1 * cov[1] + g1 * g1 * cov[3]);
    CHECK("unit/fe/mbar/reweight-variance", fabs(var - s2) < 4 * evar && evar > 0,
          "var %.6g vs %.6g (err %.3g)", var, s2, evar);
    /* at a sampled state, the reweighted free energy is that state's */
    double b3 = beta[3];
    fe_mbar_expect(m, &b3, NULL, 0, which, &ft, &dft, mean, cov);
    CHECK("unit/fe/mbar/reweight-sampled", fabs(ft - m->f[3]) < 1e-9 && fabs(dft * dft -
          (theta[3 * K + 3] + theta[0] - 2 * theta[3])) < 1e-6 * dft * dft,
          "f %.12g vs %.12g, err %.6g vs %.6g", ft, m->f[3], dft,
          sqrt(theta[3 * K + 3] + theta[0] - 2 * theta[3]));

    /* the multiple-histogram method: bins -> 0 gives MBAR's f; wide bins stay within errors */
    double fm[6];
    memcpy(fm, m->f, sizeof fm);
    double d_fine = 0, d_wide = 0, z_wide = 0;
    for (int pass = 0; pass < 2; pass++) {
        fe_mbar *h = ladder(K, 5000, beta, s2, 5, 0);
        double f0[6];
        char err[200];
        fe_mbar_guess(h, f0);
        fe_mbar_bin(h, pass == 0 ? 1e-7 : 1.0);
        fe_mbar_solve(h, f0, 1e-12, 200, err, sizeof err);
        for (int k = 1; k < K; k++) {
            double d = fabs(h->f[k] - fm[k]);
            double df = sqrt(theta[k * K + k] + theta[0] - 2 * theta[k]);
            if (pass == 0)
                d_fine = d > d_fine ? d : d_fine;
            else {
                d_wide = d > d_wide ? d : d_wide;
                z_wide = d / df > z_wide ? d / df : z_wide;
            }
        }
        fe_mbar_free(h);
    }
    CHECK("unit/fe/histogram/fine-bins", d_fine < 1e-6, "max |f_hist - f_mbar| = %.3g", d_fine);
    CHECK("unit/fe/histogram/wide-bins", z_wide < 0.5 && d_wide > d_fine,
          "bins of s/20: max |f_hist - f_mbar| = %.3g (%.2f error bars)", d_wide, z_wide);
    fe_mbar_free(m);
}

/* The chunked sums make the result independent of the number of threads, bit for bit. */
static void check_threads(void)
{
    const double beta[4] = {0.5, 0.55, 0.6, 0.65};
    double f[2][4], th[2][16];
    int ok = 1;
    for (int r = 0; r < 2; r++) {
        omp_set_num_threads(r + 1);
        fe_mbar *m = ladder(4, 20000, beta, 400, 8, 0);
        ok &= solve(m) == 0;
        memcpy(f[r], m->f, sizeof f[r]);
        fe_mbar_theta(m, th[r]);
        fe_mbar_free(m);
    }
    CHECK("unit/fe/mbar/threads-bitwise", ok && memcmp(f[0], f[1], sizeof f[0]) == 0 &&
          memcmp(th[0], th[1], sizeof th[0]) == 0, "f_3 %.17g vs %.17g", f[0][3], f[1][3]);
}

/* Identical states: f = 0 and the two samples sets pooled. */
static void check_identical(void)
{
    const double beta[2] = {1.0, 1.0};
    fe_mbar *m = ladder(2, 1000, beta, 100, 3, 0);
    int ok = solve(m) == 0;
    CHECK("unit/fe/mbar/identical", ok && fabs(m->f[1]) < 1e-12, "f_1 = %.3g", m->f[1]);
    fe_mbar_free(m);
}

static void perf(void)
{
    const int K = 64;
    const size_t nk = 100000;
    double beta[64];
    for (int k = 0; k < K; k++)
        beta[k] = 0.5 + 0.01 * k;
    fe_mbar *m = ladder(K, nk, beta, 1e4, 77, 0);
    /* processor time: the solver's cost on one core whatever else the machine runs */
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    int ok = solve(m) == 0;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    double theta[64 * 64];
    fe_mbar_theta(m, theta);
    double worst = 0;
    for (int k = 1; k < K; k++) {
        double exact = -0.5 * (beta[k] * beta[k] - beta[0] * beta[0]) * 1e4;
        double df = sqrt(theta[k * K + k] + theta[0] - 2 * theta[k]);
        worst = fabs(m->f[k] - exact) / df > worst ? fabs(m->f[k] - exact) / df : worst;
    }
    printf("# 64 states x 1e5 samples: %.2f s, %d passes, residual %.2g, worst %.2f error bars\n", s,
           m->iterations, m->residual, worst);
    CHECK("unit/fe/mbar/perf", ok && s < 5 && worst < 5, "%.2f s", s);
    fe_mbar_free(m);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "perf") == 0) {
        perf();
        return check_failed;
    }
    check_wells();
    check_ladder();
    check_identical();
    check_threads();
    check_coverage();
    return check_failed;
}
