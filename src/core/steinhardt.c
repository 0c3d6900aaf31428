/* steinhardt.c — Q4, Q6 from the bonds within a cutoff, and the nematic order of axes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h"
#include "shape/shape_plain.h"
#include "core/steinhardt.h"

double carlo_steinhardt_rc(double rho)
{
    return 1.2 * cbrt(sqrt(2.0) / rho);
}

/* sqrt((l - m)! / (l + m)!) P_l^m(z) / (1 - z^2)^(m/2) for l = 4, 6 and m = 0..l: the bond's
 * Y_lm up to the factor sqrt((2l + 1) / 4 pi) and ((x + i y) / r)^m, which the caller applies. */
static void legendre(double z, int l, double *p)
{
    for (int m = 0; m <= l; m++) {
        double pmm = 1; /* (2m - 1)!! (the Condon-Shortley sign drops out of |.|^2 sums) */
        for (int k = 1; k <= m; k++)
            pmm *= 2 * k - 1;
        double a = pmm, b = z * (2 * m + 1) * pmm, v = m == l ? a : b;
        for (int n = m + 2; n <= l; n++) {
            double c = ((2 * n - 1) * z * b - (n + m - 1) * a) / (n - m);
            a = b;
            b = c;
            v = c;
        }
        double f = 1; /* (l - m)! / (l + m)! */
        for (int k = l - m + 1; k <= l + m; k++)
            f /= k;
        p[m] = v * sqrt(f);
    }
}

typedef struct bond_acc {
    int n;
    double re[2][7], im[2][7];
} bond_acc;

static void bond_add(void *v, int64_t j, const double d[3])
{
    (void)j;
    bond_acc *a = v;
    const double r = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    if (!(r > 0))
        return;
    const double z = d[2] / r, cx = d[0] / r, cy = d[1] / r;
    static const int ls[2] = {4, 6};
    for (int t = 0; t < 2; t++) {
        double p[7];
        legendre(z, ls[t], p);
        double er = 1, ei = 0; /* ((x + i y) / r)^m */
        for (int m = 0; m <= ls[t]; m++) {
            a->re[t][m] += p[m] * er;
            a->im[t][m] += p[m] * ei;
            const double nr = er * cx - ei * cy;
            ei = er * cy + ei * cx;
            er = nr;
        }
    }
    a->n++;
}

int carlo_steinhardt(const carlo_box *b, int64_t N, const double *x, double rc, double *q4, double *q6)
{
    if (b->dim != 3)
        return carlo_seterr("Q4 and Q6 are the bond order of a 3D system");
    double h[3];
    carlo_box_heights(b, h); /* L for an orthorhombic box */
    const double half = 0.5 * fmin(h[0], fmin(h[1], h[2]));
    if (!(rc > 0) || rc > half)
        return carlo_seterr("the Steinhardt cutoff rc must be > 0 and at most half the box, %g (got %g)",
                            half, rc);
    shape_plain pl;
    if (shape_plain_init(&pl, b, N, rc, x))
        return -1;
    for (int64_t k = 0; k < N; k++)
        shape_plain_insert(&pl, k);
    double re[2][7] = {{0}}, im[2][7] = {{0}};
    for (int64_t k = 0; k < N; k++) {
        if ((k & 65535) == 0 && carlo_interrupted) {
            shape_plain_free(&pl);
            return carlo_seterr("interrupted");
        }
        bond_acc a;
        memset(&a, 0, sizeof a);
        shape_plain_around(&pl, x + 3 * k, k, rc, bond_add, &a);
        if (!a.n)
            continue;
        for (int t = 0; t < 2; t++)
            for (int m = 0; m < 7; m++) {
                re[t][m] += a.re[t][m] / a.n;
                im[t][m] += a.im[t][m] / a.n;
            }
    }
    shape_plain_free(&pl);
    double q[2];
    static const int ls[2] = {4, 6};
    for (int t = 0; t < 2; t++) {
        double s = 0; /* |q_l,-m| = |q_lm|: the m > 0 terms twice */
        for (int m = 0; m <= ls[t]; m++) {
            const double r = re[t][m] / (double)N, i = im[t][m] / (double)N;
            s += (m ? 2 : 1) * (r * r + i * i);
        }
        q[t] = N > 0 ? sqrt(s) : 0;
    }
    *q4 = q[0];
    *q6 = q[1];
    return 0;
}

void carlo_sym3_eigen(const double M[3][3], double val[3], double vec[3][3])
{
    double A[3][3], V[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    memcpy(A, M, sizeof A);
    for (int sweep = 0; sweep < 50; sweep++) { /* Jacobi rotations */
        const double off = fabs(A[0][1]) + fabs(A[0][2]) + fabs(A[1][2]);
        const double diag = fabs(A[0][0]) + fabs(A[1][1]) + fabs(A[2][2]);
        if (off <= 1e-15 * diag || off == 0)
            break;
        for (int p = 0; p < 2; p++)
            for (int q = p + 1; q < 3; q++) {
                if (A[p][q] == 0)
                    continue;
                const double th = 0.5 * atan2(2 * A[p][q], A[q][q] - A[p][p]);
                const double c = cos(th), s = sin(th);
                for (int k = 0; k < 3; k++) { /* A <- A J */
                    const double akp = A[k][p], akq = A[k][q];
                    A[k][p] = c * akp - s * akq;
                    A[k][q] = s * akp + c * akq;
                }
                for (int k = 0; k < 3; k++) { /* A <- J^T A */
                    const double apk = A[p][k], aqk = A[q][k];
                    A[p][k] = c * apk - s * aqk;
                    A[q][k] = s * apk + c * aqk;
                }
                for (int k = 0; k < 3; k++) {
                    const double vkp = V[k][p], vkq = V[k][q];
                    V[k][p] = c * vkp - s * vkq;
                    V[k][q] = s * vkp + c * vkq;
                }
            }
    }
    for (int k = 0; k < 3; k++) {
        val[k] = A[k][k];
        for (int a = 0; a < 3; a++)
            vec[k][a] = V[a][k];
    }
}

double carlo_nematic(int64_t N, const double *u, double director[3])
{
    if (N <= 0)
        return 0;
    double Q[3][3] = {{0}};
    for (int64_t k = 0; k < N; k++) {
        const double *v = u + 3 * k;
        const double n2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
        for (int a = 0; a < 3; a++)
            for (int c = 0; c < 3; c++)
                Q[a][c] += 1.5 * v[a] * v[c] / n2 - (a == c ? 0.5 : 0);
    }
    for (int a = 0; a < 3; a++)
        for (int c = 0; c < 3; c++)
            Q[a][c] /= (double)N;
    double val[3], vec[3][3];
    carlo_sym3_eigen(Q, val, vec);
    int best = 0;
    for (int k = 1; k < 3; k++)
        if (val[k] > val[best])
            best = k;
    if (director)
        memcpy(director, vec[best], sizeof vec[best]);
    return val[best];
}
