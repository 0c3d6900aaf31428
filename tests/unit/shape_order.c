/* unit/shape/order — Steinhardt's Q4 and Q6 (src/shape/steinhardt.c) of perfect sc, bcc, fcc
 * crystals against the published values of their first shells (bcc: one and two shells), the
 * crystals rotated by a quarter turn and shifted, and uniform random points
 * (Q ~ N^-1/2); the nematic order of aligned, planar and random axes. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/rng.h"
#include "core/steinhardt.h"

static uint64_t draws;

static double uni(void)
{
    carlo_u32x4 r = carlo_rng(99, CARLO_PURPOSE_CORE_TEST, 5, (uint32_t)(draws >> 32), (uint32_t)draws);
    draws++;
    return carlo_u01(r.v[0], r.v[1]);
}

/* n^3 cells of a cubic lattice with the given basis (in cell units), spacing a; shift added. */
static int64_t cubic(int n, double a, const double (*basis)[3], int nb, double shift, double *x)
{
    int64_t k = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            for (int l = 0; l < n; l++)
                for (int q = 0; q < nb; q++) {
                    x[3 * k] = (i + basis[q][0]) * a + shift;
                    x[3 * k + 1] = (j + basis[q][1]) * a + 0.5 * shift;
                    x[3 * k + 2] = (l + basis[q][2]) * a + 0.25 * shift;
                    k++;
                }
    return k;
}

static void crystal(const char *name, const double (*basis)[3], int nb, double rc_over_a, double q4e, double q6e)
{
    const int n = 4;
    const double a = 1.3;
    double *x = malloc(sizeof(double) * 3 * n * n * n * nb);
    carlo_box b = {3, {n * a, n * a, n * a}, 0, 0, 0};
    for (int shifted = 0; shifted < 2; shifted++) {
        int64_t N = cubic(n, a, basis, nb, shifted ? 0.37 : 0, x);
        if (shifted) /* a quarter turn about z: x -> y, y -> -x (the box is a cube) */
            for (int64_t k = 0; k < N; k++) {
                double t = x[3 * k];
                x[3 * k] = fmod(b.L[0] - x[3 * k + 1] + 10 * b.L[0], b.L[0]);
                x[3 * k + 1] = t;
            }
        double q4, q6;
        char label[64];
        int rc = carlo_steinhardt(&b, N, x, rc_over_a * a, &q4, &q6);
        snprintf(label, sizeof label, "steinhardt_%s%s", name, shifted ? "_turned" : "");
        CHECK(label, rc == 0 && fabs(q4 - q4e) < 5e-5 && fabs(q6 - q6e) < 5e-5,
              "Q4 %.6f (want %.5f), Q6 %.6f (want %.5f)", q4, q4e, q6, q6e);
    }
    free(x);
}

int main(void)
{
    static const double sc[1][3] = {{0, 0, 0}};
    static const double bcc[2][3] = {{0, 0, 0}, {0.5, 0.5, 0.5}};
    static const double fcc[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
    crystal("sc", sc, 1, 1.2, 0.76376, 0.35355);
    /* bcc: the first shell (8 at 0.866 a) alone, and with the second (6 at a): Q4 = 0.03637,
     * Q6 = 0.51069 are the 14-neighbour values (Steinhardt et al. 1983) */
    crystal("bcc8", bcc, 2, 0.95, 0.50918, 0.62854);
    crystal("bcc14", bcc, 2, 1.2, 0.03637, 0.51069);
    crystal("fcc", fcc, 4, 0.85, 0.19094, 0.57452); /* 0.707 a, then a */

    /* the default cutoff at the crystal's density keeps fcc's first shell */
    {
        const int n = 4;
        double x[3 * 256];
        const double a = 1.5;
        int64_t N = cubic(n, a, fcc, 4, 0, x);
        carlo_box b = {3, {n * a, n * a, n * a}, 0, 0, 0};
        double q4, q6, rc = carlo_steinhardt_rc((double)N / (b.L[0] * b.L[1] * b.L[2]));
        int r = carlo_steinhardt(&b, N, x, rc, &q4, &q6);
        CHECK("steinhardt_default_rc_fcc", r == 0 && fabs(q6 - 0.57452) < 5e-5 && rc > a / sqrt(2) && rc < a,
              "rc %g, Q6 %g", rc, q6);
        /* an rc beyond half the box is refused */
        CHECK("steinhardt_rc_refused", carlo_steinhardt(&b, N, x, 0.6 * n * a, &q4, &q6) != 0, "accepted");
    }

    /* uniform random points: Q_l ~ N^-1/2 */
    {
        const int64_t N = 4000;
        double *x = malloc(sizeof(double) * 3 * N);
        const double L = cbrt((double)N / 0.5);
        for (int64_t k = 0; k < 3 * N; k++)
            x[k] = uni() * L;
        carlo_box b = {3, {L, L, L}, 0, 0, 0};
        double q4, q6;
        int r = carlo_steinhardt(&b, N, x, 1.5, &q4, &q6);
        CHECK("steinhardt_random", r == 0 && q4 < 5 / sqrt((double)N) && q6 < 5 / sqrt((double)N) && q6 > 0,
              "Q4 %g, Q6 %g, 5/sqrt(N) %g", q4, q6, 5 / sqrt((double)N));
        free(x);
    }

    /* nematic order */
    {
        const int64_t N = 20000;
        double *u = malloc(sizeof(double) * 3 * N), d[3];
        for (int64_t k = 0; k < N; k++) { /* aligned with (1, 2, 2) / 3, either sign */
            const double s = k % 2 ? 1 : -1;
            u[3 * k] = s / 3.0;
            u[3 * k + 1] = s * 2 / 3.0;
            u[3 * k + 2] = s * 2 / 3.0;
        }
        double S = carlo_nematic(N, u, d);
        CHECK("nematic_aligned", fabs(S - 1) < 1e-12 && fabs(fabs(d[0]) - 1 / 3.0) < 1e-9, "S %.15f, d %g %g %g", S,
              d[0], d[1], d[2]);
        for (int64_t k = 0; k < N; k++) { /* isotropic: S ~ N^-1/2 */
            double z = 2 * uni() - 1, p = 2 * 3.141592653589793 * uni(), r = sqrt(1 - z * z);
            u[3 * k] = r * cos(p);
            u[3 * k + 1] = r * sin(p);
            u[3 * k + 2] = z;
        }
        S = carlo_nematic(N, u, NULL);
        CHECK("nematic_random", S >= 0 && S < 5 / sqrt((double)N), "S %g", S);
        for (int64_t k = 0; k < N; k++) { /* in the xy plane: S = 1/4, director z, eigenvalue -1/2 */
            double p = 2 * 3.141592653589793 * uni();
            u[3 * k] = cos(p);
            u[3 * k + 1] = sin(p);
            u[3 * k + 2] = 0;
        }
        S = carlo_nematic(N, u, NULL);
        CHECK("nematic_planar", fabs(S - 0.25) < 5 / sqrt((double)N), "S %g (want 0.25)", S);
        free(u);
    }
    return check_failed;
}
