/* mbar.c — the MBAR solver, its covariance and reweighting (see mbar.h). Every sum over rows
 * is cut into a fixed number of chunks added in order, so a result does not depend on the
 * number of threads; terms below exp(-CUT) of a row's largest are left out (they change no
 * sum by more than K exp(-CUT) of its value, below double precision). */
#include "fe/mbar.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/progress.h"

#define CUT 40.0
/* The second moments (Hessian, Gram matrix) keep the pairs whose weights both exceed
 * PAIR_MIN: they steer the Newton steps and give the error bars, to 1e-7 relative or better;
 * the free energies themselves come from the full sums. */
#define PAIR_MIN 1e-8
#define MAX_CHUNKS 64
#define CHUNK_ROWS 4096

fe_mbar *fe_mbar_new(int K, int M, int nobs, size_t n)
{
    fe_mbar *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->K = K;
    m->M = M;
    m->nobs = nobs;
    m->n = n;
    size_t rows = n ? n : 1;
    m->count = malloc(rows * sizeof(double));
    m->Nk = calloc((size_t)K, sizeof(double));
    m->f = calloc((size_t)K, sizeof(double));
    m->lnD = malloc(rows * sizeof(double));
    m->gram = calloc((size_t)K * (size_t)K, sizeof(double));
    if (M > 0) {
        m->coef = calloc((size_t)K * (size_t)M, sizeof(double));
        m->x = malloc((size_t)M * rows * sizeof(double));
    } else {
        m->u = malloc((size_t)K * rows * sizeof(double));
    }
    if (nobs > 0)
        m->obs = malloc((size_t)nobs * rows * sizeof(double));
    if (!m->count || !m->Nk || !m->f || !m->lnD || !m->gram || (M > 0 && (!m->coef || !m->x))
        || (M == 0 && !m->u) || (nobs > 0 && !m->obs)) {
        fe_mbar_free(m);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        m->count[i] = 1.0;
    return m;
}

void fe_mbar_free(fe_mbar *m)
{
    if (!m)
        return;
    free(m->count);
    free(m->Nk);
    free(m->coef);
    free(m->x);
    free(m->u);
    free(m->obs);
    free(m->f);
    free(m->lnD);
    free(m->gram);
    free(m);
}

double fe_mbar_u(const fe_mbar *m, int k, size_t i)
{
    if (m->M == 0)
        return m->u[(size_t)k * m->n + i];
    double s = 0.0;
    for (int j = 0; j < m->M; j++)
        s += m->coef[(size_t)k * (size_t)m->M + (size_t)j] * m->x[(size_t)j * m->n + i];
    return s;
}

void fe_mbar_guess(const fe_mbar *m, double *f0)
{
    size_t start = 0;
    f0[0] = 0.0;
    for (int k = 0; k + 1 < m->K; k++) {
        size_t nk = (size_t)m->Nk[k], nl = (size_t)m->Nk[k + 1];
        double s1 = 0.0, s2 = 0.0;
        for (size_t i = start; i < start + nk; i++)
            s1 += fe_mbar_u(m, k + 1, i) - fe_mbar_u(m, k, i);
        for (size_t i = start + nk; i < start + nk + nl; i++)
            s2 += fe_mbar_u(m, k + 1, i) - fe_mbar_u(m, k, i);
        double d = 0.5 * (nk ? s1 / (double)nk : 0.0) + 0.5 * (nl ? s2 / (double)nl : 0.0);
        f0[k + 1] = f0[k] + (isfinite(d) ? d : 0.0);
        start += nk;
    }
}

/* ---------- binning: the multiple-histogram method ---------- */

typedef struct keyed {
    double x;
    size_t i;
} keyed;

static int cmp_keyed(const void *a, const void *b)
{
    const keyed *p = a, *q = b;
    if (p->x < q->x)
        return -1;
    if (p->x > q->x)
        return 1;
    return p->i < q->i ? -1 : p->i > q->i;
}

int fe_mbar_bin(fe_mbar *m, double width)
{
    size_t n = m->n;
    if (m->M != 1 || n == 0)
        return 0;
    keyed *ks = malloc(n * sizeof *ks);
    if (!ks)
        return -1;
    for (size_t i = 0; i < n; i++) {
        ks[i].x = m->x[i];
        ks[i].i = i;
    }
    qsort(ks, n, sizeof *ks, cmp_keyed);
    double lo = ks[0].x;
    double *nx = malloc(n * sizeof(double)), *nc = malloc(n * sizeof(double));
    double *no = m->nobs ? calloc((size_t)m->nobs * n, sizeof(double)) : NULL;
    if (!nx || !nc || (m->nobs && !no)) {
        free(ks);
        free(nx);
        free(nc);
        free(no);
        return -1;
    }
    size_t rows = 0;
    double cur = -1.0;
    for (size_t j = 0; j < n; j++) {
        double b = floor((ks[j].x - lo) / width);
        size_t i = ks[j].i;
        if (rows == 0 || b != cur) {
            cur = b;
            nx[rows] = lo + (b + 0.5) * width;
            nc[rows] = 0.0;
            rows++;
        }
        size_t r = rows - 1;
        double c = m->count[i];
        nc[r] += c;
        for (int a = 0; a < m->nobs; a++)
            no[(size_t)a * n + r] += c * m->obs[(size_t)a * n + i];
    }
    for (size_t r = 0; r < rows; r++)
        for (int a = 0; a < m->nobs; a++)
            no[(size_t)a * n + r] /= nc[r];
    for (int a = 0; a < m->nobs; a++)
        memmove(no + (size_t)a * rows, no + (size_t)a * n, rows * sizeof(double));
    free(ks);
    free(m->x);
    free(m->count);
    free(m->obs);
    m->x = nx;
    m->count = nc;
    m->obs = no;
    m->n = rows;
    return 0;
}

/* ---------- one pass over the rows ---------- */

/* Chunks of at least CHUNK_ROWS rows, at most MAX_CHUNKS, and few enough that their partial
 * K x K sums stay within 2^22 doubles (32 MB): a function of n and K only, never of the
 * number of threads. */
static size_t chunks_of(size_t n, int K)
{
    size_t c = (n + CHUNK_ROWS - 1) / CHUNK_ROWS;
    size_t kk = (size_t)K * (size_t)K, cap = ((size_t)1 << 22) / (kk ? kk : 1);
    if (c > MAX_CHUNKS)
        c = MAX_CHUNKS;
    if (c > cap)
        c = cap;
    return c ? c : 1;
}

/* The row's log terms a_k = ln N_k + f_k - u_k(i) (lnNf = ln N_k + f_k); returns the largest. */
static double row_terms(const fe_mbar *m, const double *lnNf, size_t i, double *a)
{
    int K = m->K;
    double amax = -INFINITY;
    if (m->M == 1) {
        double x = m->x[i];
        const double *restrict c = m->coef;
        for (int k = 0; k < K; k++) {
            a[k] = lnNf[k] - c[k] * x;
            amax = a[k] > amax ? a[k] : amax;
        }
    } else if (m->M == 0) {
        for (int k = 0; k < K; k++) {
            a[k] = lnNf[k] - m->u[(size_t)k * m->n + i];
            amax = a[k] > amax ? a[k] : amax;
        }
    } else {
        for (int k = 0; k < K; k++) {
            a[k] = lnNf[k] - fe_mbar_u(m, k, i);
            amax = a[k] > amax ? a[k] : amax;
        }
    }
    return amax;
}

/* The row's significant weights p_k = N_k W_ik (summing to 1) in idx/p; returns their count
 * and sets *lnD. */
static int row_weights(const fe_mbar *m, const double *lnNf, size_t i, double *a, int *idx,
                       double *p, double *lnD)
{
    double amax = row_terms(m, lnNf, i, a);
    double s = 0.0;
    int ns = 0;
    for (int k = 0; k < m->K; k++) {
        double d = a[k] - amax;
        if (d > -CUT) {
            double e = exp(d);
            idx[ns] = k;
            p[ns] = e;
            ns++;
            s += e;
        }
    }
    *lnD = amax + log(s);
    double inv = 1.0 / s;
    for (int j = 0; j < ns; j++)
        p[j] *= inv;
    return ns;
}

/* At f: F, Fabs (the sum of the magnitudes of its terms), S1_k = sum_i c_i p_ik and
 * S2_kl = sum_i c_i p_ik p_il (upper triangle, l >= k); lnD of every row. */
static int pass(fe_mbar *m, const double *f, double *F, double *Fabs, double *S1, double *S2)
{
    int K = m->K;
    size_t n = m->n, nc = chunks_of(n, K);
    size_t per = 2 + (size_t)K + (size_t)K * (size_t)K;
    double *part = calloc(nc * per, sizeof(double));
    double *lnNf = malloc((size_t)K * sizeof(double));
    if (!part || !lnNf) {
        free(part);
        free(lnNf);
        return -1;
    }
    for (int k = 0; k < K; k++)
        lnNf[k] = log(m->Nk[k]) + f[k];
    int failed = 0;
#pragma omp parallel for schedule(dynamic, 1) if (n > 65536)
    for (size_t c = 0; c < nc; c++) {
        double *a = malloc((size_t)K * (sizeof(double) * 2 + sizeof(int)));
        if (!a) {
#pragma omp atomic write
            failed = 1;
            continue;
        }
        double *p = a + K;
        int *idx = (int *)(p + K);
        double *out = part + c * per, *s1 = out + 2, *s2 = s1 + K;
        size_t lo = c * n / nc, hi = (c + 1) * n / nc;
        if (carlo_interrupted) /* Ctrl-C: the pass is abandoned, fe_mbar_solve reports it */
            hi = lo;
        for (size_t i = lo; i < hi; i++) {
            double lnD;
            int ns = row_weights(m, lnNf, i, a, idx, p, &lnD);
            m->lnD[i] = lnD;
            double w = m->count[i];
            out[0] += w * lnD;
            out[1] += w * fabs(lnD);
            int np = 0;
            for (int j = 0; j < ns; j++) {
                s1[idx[j]] += w * p[j];
                if (p[j] >= PAIR_MIN) { /* compact the pair list in place (idx stays sorted) */
                    idx[np] = idx[j];
                    p[np++] = p[j];
                }
            }
            if (np == idx[np - 1] - idx[0] + 1) { /* a contiguous window: dense rows */
                for (int j = 0; j < np; j++) {
                    double cp = w * p[j];
                    double *restrict row = s2 + (size_t)idx[j] * (size_t)K + idx[0];
                    const double *restrict pp = p;
#pragma omp simd
                    for (int l = j; l < np; l++)
                        row[l] += cp * pp[l];
                }
            } else {
                for (int j = 0; j < np; j++) {
                    double cp = w * p[j];
                    double *row = s2 + (size_t)idx[j] * (size_t)K;
                    for (int l = j; l < np; l++)
                        row[idx[l]] += cp * p[l];
                }
            }
        }
        free(a);
    }
    if (failed) {
        free(part);
        free(lnNf);
        return -1;
    }
    *F = 0.0;
    *Fabs = 0.0;
    memset(S1, 0, (size_t)K * sizeof(double));
    memset(S2, 0, (size_t)K * (size_t)K * sizeof(double));
    for (size_t c = 0; c < nc; c++) {
        const double *out = part + c * per;
        *F += out[0];
        *Fabs += out[1];
        for (int k = 0; k < K; k++)
            S1[k] += out[2 + k];
        for (size_t j = 0; j < (size_t)K * (size_t)K; j++)
            S2[j] += out[2 + (size_t)K + j];
    }
    for (int k = 0; k < K; k++) {
        *F -= m->Nk[k] * f[k];
        *Fabs += fabs(m->Nk[k] * f[k]);
    }
    free(part);
    free(lnNf);
    return 0;
}

/* Cholesky solve of the symmetric positive definite a (D x D, destroyed) x = b; -1 if not PD. */
static int cholesky_solve(int D, double *a, const double *b, double *x)
{
    for (int j = 0; j < D; j++) {
        double s = a[j * D + j];
        for (int k = 0; k < j; k++)
            s -= a[j * D + k] * a[j * D + k];
        if (!(s > 0.0))
            return -1;
        double d = sqrt(s);
        a[j * D + j] = d;
        for (int i = j + 1; i < D; i++) {
            double t = a[i * D + j];
            for (int k = 0; k < j; k++)
                t -= a[i * D + k] * a[j * D + k];
            a[i * D + j] = t / d;
        }
    }
    for (int i = 0; i < D; i++) {
        double t = b[i];
        for (int k = 0; k < i; k++)
            t -= a[i * D + k] * x[k];
        x[i] = t / a[i * D + i];
    }
    for (int i = D - 1; i >= 0; i--) {
        double t = x[i];
        for (int k = i + 1; k < D; k++)
            t -= a[k * D + i] * x[k];
        x[i] = t / a[i * D + i];
    }
    return 0;
}

static double residual_of(const fe_mbar *m, const double *S1)
{
    double r = 0.0;
    for (int k = 0; k < m->K; k++) {
        double d = fabs(S1[k] / m->Nk[k] - 1.0);
        r = d > r || d != d ? d : r;
    }
    return r;
}

/* The first state not joined to state 0 by a chain of overlapping pairs (a nonzero Gram
 * entry), or -1: without overlap the free-energy difference is not determined by the data
 * (the equations hold for any value) and the covariance would wrongly read zero. */
static int disconnected(const fe_mbar *m)
{
    int K = m->K, *seen = calloc((size_t)K, sizeof(int)), *queue = malloc((size_t)K * sizeof(int));
    if (!seen || !queue) {
        free(seen);
        free(queue);
        return -1;
    }
    int head = 0, tail = 0, apart = -1;
    seen[0] = 1;
    queue[tail++] = 0;
    while (head < tail) {
        int k = queue[head++];
        for (int l = 0; l < K; l++)
            if (!seen[l] && m->gram[(size_t)k * K + l] > 0.0) {
                seen[l] = 1;
                queue[tail++] = l;
            }
    }
    for (int k = 0; k < K && apart < 0; k++)
        if (!seen[k])
            apart = k;
    free(seen);
    free(queue);
    return apart;
}

int fe_mbar_solve(fe_mbar *m, const double *f0, double tol, int maxit, char *err, size_t errlen)
{
    int K = m->K, D = K - 1;
    size_t KK = (size_t)K * (size_t)K;
    double *buf = malloc((6 * (size_t)K + 3 * KK) * sizeof(double));
    if (!buf) {
        snprintf(err, errlen, "out of memory (%zu bytes)", (6 * (size_t)K + 3 * KK) * sizeof(double));
        return -1;
    }
    double *f = buf, *fn = f + K, *S1 = fn + K, *S1n = S1 + K, *g = S1n + K, *d = g + K;
    double *S2 = d + K, *S2n = S2 + KK, *H = S2n + KK;
    for (int k = 0; k < K; k++)
        f[k] = f0 ? f0[k] - f0[0] : 0.0;
    double F, Fabs, Fn, Fabsn;
    int rc = -1;
    m->iterations = 0;
    if (pass(m, f, &F, &Fabs, S1, S2)) {
        snprintf(err, errlen, "out of memory in a pass over %zu samples", m->n);
        goto done;
    }
    m->iterations = 1;
    for (;;) {
        if (carlo_interrupted) {
            snprintf(err, errlen, "interrupted");
            break;
        }
        double res = residual_of(m, S1);
        m->residual = res;
        if (res <= tol || K == 1) {
            rc = 0;
            break;
        }
        if (m->iterations >= maxit) {
            snprintf(err, errlen, "no convergence after %d passes (normalisation residual %.3g, "
                     "tolerance %.3g)", m->iterations, res, tol);
            break;
        }
        /* Newton step on f_1..f_{K-1}: H_kl = delta_kl S1_k - S2_kl, g_k = S1_k - N_k */
        double gd = 0.0;
        for (double shift = 0.0;; shift = shift > 0.0 ? shift * 10.0 : 1e-10) {
            for (int i = 0; i < D; i++) {
                int k = i + 1;
                g[i] = S1[k] - m->Nk[k];
                for (int j = 0; j < D; j++) {
                    int l = j + 1;
                    double s2 = k <= l ? S2[(size_t)k * K + l] : S2[(size_t)l * K + k];
                    H[i * D + j] = (i == j ? S1[k] * (1.0 + shift) : 0.0) - s2;
                }
            }
            for (int i = 0; i < D; i++)
                g[i] = -g[i];
            if (cholesky_solve(D, H, g, d) == 0)
                break;
            if (shift > 1e6) {
                snprintf(err, errlen, "the states do not overlap (singular Hessian)");
                goto done;
            }
        }
        for (int i = 0; i < D; i++)
            gd -= g[i] * d[i]; /* g holds -gradient */
        /* backtracking on the convex objective; a change within rounding is accepted */
        double t = 1.0;
        int accepted = 0;
        for (int tries = 0; tries < 40; tries++, t *= 0.25) {
            fn[0] = 0.0;
            for (int i = 0; i < D; i++)
                fn[i + 1] = f[i + 1] + t * d[i];
            if (pass(m, fn, &Fn, &Fabsn, S1n, S2n)) {
                snprintf(err, errlen, "out of memory in a pass over %zu samples", m->n);
                goto done;
            }
            m->iterations++;
            if (carlo_interrupted) {
                snprintf(err, errlen, "interrupted");
                goto done;
            }
            if (Fn <= F + 1e-4 * t * gd + 1e-13 * (Fabs + Fabsn)) {
                accepted = 1;
                break;
            }
        }
        if (!accepted) {
            snprintf(err, errlen, "line search failed (normalisation residual %.3g)", res);
            goto done;
        }
        memcpy(f, fn, (size_t)K * sizeof(double));
        memcpy(S1, S1n, (size_t)K * sizeof(double));
        memcpy(S2, S2n, KK * sizeof(double));
        F = Fn;
        Fabs = Fabsn;
    }
done:
    if (rc == 0) {
        memcpy(m->f, f, (size_t)K * sizeof(double));
        for (int k = 0; k < K; k++)
            for (int l = k; l < K; l++) {
                double v = S2[(size_t)k * K + l] / (m->Nk[k] * m->Nk[l]);
                m->gram[(size_t)k * K + l] = m->gram[(size_t)l * K + k] = v;
            }
        int apart = disconnected(m);
        if (apart >= 0) {
            snprintf(err, errlen, "state %d does not overlap the others: no sample has weight "
                     "(above 1e-8) both in its group of states and in state 1's; add states "
                     "between them", apart + 1);
            rc = -1;
        }
    }
    free(buf);
    return rc;
}

/* ---------- covariance ---------- */

void fe_eigen_sym(int D, double *a, double *w, double *v)
{
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++)
            v[i * D + j] = i == j;
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0.0, diag = 0.0;
        for (int i = 0; i < D; i++) {
            diag += a[i * D + i] * a[i * D + i];
            for (int j = i + 1; j < D; j++)
                off += a[i * D + j] * a[i * D + j];
        }
        if (off <= 1e-30 * diag || off == 0.0)
            break;
        for (int p = 0; p < D; p++)
            for (int q = p + 1; q < D; q++) {
                double apq = a[p * D + q];
                if (apq == 0.0)
                    continue;
                double theta = (a[q * D + q] - a[p * D + p]) / (2.0 * apq);
                double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
                double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
                for (int k = 0; k < D; k++) { /* columns p, q */
                    double akp = a[k * D + p], akq = a[k * D + q];
                    a[k * D + p] = c * akp - s * akq;
                    a[k * D + q] = s * akp + c * akq;
                }
                for (int k = 0; k < D; k++) { /* rows p, q */
                    double apk = a[p * D + k], aqk = a[q * D + k];
                    a[p * D + k] = c * apk - s * aqk;
                    a[q * D + k] = s * apk + c * aqk;
                }
                for (int k = 0; k < D; k++) {
                    double vkp = v[k * D + p], vkq = v[k * D + q];
                    v[k * D + p] = c * vkp - s * vkq;
                    v[k * D + q] = s * vkp + c * vkq;
                }
            }
    }
    for (int i = 0; i < D; i++)
        w[i] = a[i * D + i];
}

int fe_theta_from_gram(int D, const double *G, const double *N, double *theta)
{
    size_t DD = (size_t)D * (size_t)D;
    double *buf = malloc((5 * DD + 2 * (size_t)D) * sizeof(double));
    if (!buf)
        return -1;
    double *a = buf, *V = a + DD, *B = V + DD, *U = B + DD, *T = U + DD, *w = T + DD, *sg = w + D;
    memcpy(a, G, DD * sizeof(double));
    fe_eigen_sym(D, a, w, V);
    for (int j = 0; j < D; j++)
        sg[j] = w[j] > 0.0 ? sqrt(w[j]) : 0.0;
    /* B = I - S^1/2 V^T N V S^1/2 */
    for (int j = 0; j < D; j++)
        for (int l = 0; l < D; l++) {
            double s = 0.0;
            for (int k = 0; k < D; k++)
                s += V[k * D + j] * N[k] * V[k * D + l];
            B[j * D + l] = (j == l) - sg[j] * s * sg[l];
        }
    for (int j = 0; j < D; j++) /* symmetrise against rounding */
        for (int l = j + 1; l < D; l++)
            B[j * D + l] = B[l * D + j] = 0.5 * (B[j * D + l] + B[l * D + j]);
    /* B's null vector is known: z = S^1/2 V^T N 1 (W N 1 = 1 and W^T 1 = 1 make C z = z). Its
     * direction is taken out explicitly, B + z z^T / |z|^2 inverted, then z z^T / |z|^2
     * subtracted again, so that weights truncated at PAIR_MIN (B z = O(1e-8), not 0) change
     * theta by as little, instead of turning into a huge inverse eigenvalue. */
    double *z = T, zz = 0.0;
    for (int j = 0; j < D; j++) {
        double s = 0.0;
        for (int k = 0; k < D; k++)
            s += V[k * D + j] * N[k];
        z[j] = sg[j] * s;
        zz += z[j] * z[j];
    }
    for (int j = 0; j < D; j++)
        for (int l = 0; l < D; l++)
            B[j * D + l] += z[j] * z[l] / zz;
    fe_eigen_sym(D, B, w, U);
    double big = 0.0;
    for (int j = 0; j < D; j++)
        big = fabs(w[j]) > big ? fabs(w[j]) : big;
    /* pseudo-inverse of what is left: directions of no information (rounding-level values)
     * dropped */
    for (int j = 0; j < D; j++)
        w[j] = fabs(w[j]) > 1e-10 * big ? 1.0 / w[j] : 0.0;
    /* T = S^1/2 B^+ S^1/2, B^+ = (B + z z^T/|z|^2)^-1 - z z^T/|z|^2 (z lives in T until here) */
    for (int j = 0; j < D; j++)
        for (int l = 0; l < D; l++) {
            double s = 0.0;
            for (int k = 0; k < D; k++)
                s += U[j * D + k] * w[k] * U[l * D + k];
            a[j * D + l] = sg[j] * (s - z[j] * z[l] / zz) * sg[l];
        }
    memcpy(T, a, DD * sizeof(double));
    /* theta = V T V^T */
    for (int i = 0; i < D; i++)
        for (int l = 0; l < D; l++) {
            double s = 0.0;
            for (int j = 0; j < D; j++)
                s += V[i * D + j] * T[j * D + l];
            B[i * D + l] = s;
        }
    for (int i = 0; i < D; i++)
        for (int k = 0; k < D; k++) {
            double s = 0.0;
            for (int l = 0; l < D; l++)
                s += B[i * D + l] * V[k * D + l];
            theta[i * D + k] = s;
        }
    free(buf);
    return 0;
}

int fe_mbar_theta(const fe_mbar *m, double *theta)
{
    return fe_theta_from_gram(m->K, m->gram, m->Nk, theta);
}

/* ---------- reweighting ---------- */

static double target_u(const fe_mbar *m, const double *tcoef, const double *tu, size_t i)
{
    if (!tcoef)
        return tu[i];
    double s = 0.0;
    for (int j = 0; j < m->M; j++)
        s += tcoef[j] * m->x[(size_t)j * m->n + i];
    return s;
}

int fe_mbar_expect(const fe_mbar *m, const double *tcoef, const double *tu, int na,
                   const int *which, double *ft, double *dft, double *mean, double *cov)
{
    int K = m->K, D = K + 1 + na;
    size_t n = m->n, DD = (size_t)D * (size_t)D;
    double *lt = malloc((n ? n : 1) * sizeof(double));
    double *shift = malloc((size_t)(na + 1) * sizeof(double));
    double *G = calloc(DD, sizeof(double)), *N = calloc((size_t)D, sizeof(double));
    double *theta = malloc(DD * sizeof(double));
    size_t nc = chunks_of(n, K), per = (size_t)(1 + na) * (size_t)(K + 1 + na);
    double *part = calloc(nc * per, sizeof(double));
    double *lnNf = malloc((size_t)K * sizeof(double));
    int rc = -1;
    if (!lt || !shift || !G || !N || !theta || !part || !lnNf)
        goto done;
    /* the target's log weights, its normalisation and the shifted observables' means */
    double lmax = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        lt[i] = -target_u(m, tcoef, tu, i) - m->lnD[i];
        lmax = lt[i] > lmax ? lt[i] : lmax;
    }
    for (int a = 0; a < na; a++) {
        const double *A = m->obs + (size_t)which[a] * n;
        double lo = INFINITY;
        for (size_t i = 0; i < n; i++)
            lo = A[i] < lo ? A[i] : lo;
        shift[a] = lo - 1.0; /* A - shift >= 1: a positive weight column */
    }
    double St = 0.0;
    for (int a = 0; a < na; a++)
        mean[a] = 0.0;
    for (size_t i = 0; i < n; i++) {
        double e = m->count[i] * exp(lt[i] - lmax);
        St += e;
        for (int a = 0; a < na; a++)
            mean[a] += e * (m->obs[(size_t)which[a] * n + i] - shift[a]);
    }
    for (int a = 0; a < na; a++)
        mean[a] /= St;
    *ft = -(lmax + log(St));
    /* Gram matrix of the augmented columns: W_k (sampled), w_t and w_a = (A_a - shift) w_t / mean */
    for (int k = 0; k < K; k++)
        lnNf[k] = log(m->Nk[k]) + m->f[k];
    int failed = 0;
#pragma omp parallel for schedule(dynamic, 1) if (n > 65536)
    for (size_t c = 0; c < nc; c++) {
        double *a = malloc((size_t)K * (sizeof(double) * 2 + sizeof(int)) + (size_t)(na + 1) * sizeof(double));
        if (!a) {
#pragma omp atomic write
            failed = 1;
            continue;
        }
        double *p = a + K, *col = p + K;
        int *idx = (int *)(col + na + 1);
        double *out = part + c * per;
        size_t lo = c * n / nc, hi = (c + 1) * n / nc;
        if (carlo_interrupted)
            hi = lo;
        for (size_t i = lo; i < hi; i++) {
            double lnD;
            int ns = row_weights(m, lnNf, i, a, idx, p, &lnD);
            double wt = exp(lt[i] - lmax) / St;
            col[0] = wt;
            for (int b = 0; b < na; b++)
                col[b + 1] = (m->obs[(size_t)which[b] * n + i] - shift[b]) * wt / mean[b];
            double w = m->count[i];
            for (int b = 0; b <= na; b++) {
                double *row = out + (size_t)b * (size_t)(K + 1 + na);
                double cb = w * col[b];
                for (int j = 0; j < ns; j++)
                    row[idx[j]] += cb * p[j] / m->Nk[idx[j]];
                for (int e = 0; e <= na; e++)
                    row[K + e] += cb * col[e];
            }
        }
        free(a);
    }
    if (failed)
        goto done;
    if (carlo_interrupted) {
        rc = -2;
        goto done;
    }
    for (int k = 0; k < K; k++) {
        N[k] = m->Nk[k];
        for (int l = 0; l < K; l++)
            G[(size_t)k * D + l] = m->gram[(size_t)k * K + l];
    }
    for (size_t c = 0; c < nc; c++)
        for (int b = 0; b <= na; b++)
            for (int j = 0; j < K + 1 + na; j++)
                G[(size_t)(K + b) * D + j] += part[c * per + (size_t)b * (size_t)(K + 1 + na) + j];
    for (int b = 0; b <= na; b++)
        for (int j = 0; j < K; j++)
            G[(size_t)j * D + K + b] = G[(size_t)(K + b) * D + j];
    if (fe_theta_from_gram(D, G, N, theta))
        goto done;
    double v = theta[(size_t)K * D + K] + theta[0] - 2.0 * theta[K];
    *dft = sqrt(v > 0.0 ? v : 0.0);
    for (int a = 0; a < na; a++)
        for (int b = 0; b < na; b++) {
            int ia = K + 1 + a, ib = K + 1 + b;
            double t = theta[(size_t)K * D + K] - theta[(size_t)K * D + ia] - theta[(size_t)K * D + ib]
                       + theta[(size_t)ia * D + ib];
            cov[a * na + b] = mean[a] * mean[b] * t;
        }
    for (int a = 0; a < na; a++)
        mean[a] += shift[a];
    rc = 0;
done:
    free(lt);
    free(shift);
    free(G);
    free(N);
    free(theta);
    free(part);
    free(lnNf);
    return rc;
}
