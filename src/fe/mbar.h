/* mbar.h — free energies of K sampled states by MBAR (Shirts and Chodera 2008) and, on energy
 * bins, by the multiple-histogram method (Ferrenberg and Swendsen 1989); reweighting to others. */
#ifndef CARLO_FE_MBAR_H
#define CARLO_FE_MBAR_H

#include <stddef.h>

/* The samples of K states as rows: row i was drawn from some state and carries a multiplicity
 * count[i] (1 for a sample, the count of a histogram bin). Reduced energies are either
 *   linear:  u_k(i) = sum_m coef[k M + m] x[m n + i]   (M >= 1: a beta ladder is M = 1 with
 *            coef = beta_k and x = the total energy; M = 2 adds beta_k P_k times the volume),
 *   or a matrix u[k n + i] (M = 0).
 * Nothing K x n is stored in the linear form. obs[a n + i] are the rows' observables (the
 * mean over the bin for a histogram). All arrays below are owned by the struct. */
typedef struct fe_mbar {
    int K, M, nobs;
    size_t n;
    double *count;   /* n */
    double *Nk;      /* K: samples drawn in state k */
    double *coef;    /* K x M (linear) */
    double *x;       /* M x n (linear) */
    double *u;       /* K x n (matrix) */
    double *obs;     /* nobs x n */
    /* results of fe_mbar_solve */
    double *f;       /* K reduced free energies, f[0] = 0 */
    double *lnD;     /* n: ln sum_k N_k exp(f_k - u_k(i)) */
    double *gram;    /* K x K: sum_i count_i W_ik W_il at the solution */
    int iterations;  /* passes over the samples */
    double residual; /* max_k |sum_i count_i W_ik - 1| at the solution */
} fe_mbar;

/* Allocate a problem of K states, M linear terms (0: matrix), nobs observables, n rows; the
 * caller fills count, Nk, coef/x or u and obs. NULL when memory runs out. */
fe_mbar *fe_mbar_new(int K, int M, int nobs, size_t n);
void fe_mbar_free(fe_mbar *m);

/* Reduced energy of row i in state k. */
double fe_mbar_u(const fe_mbar *m, int k, size_t i);

/* A starting point for the solver from rows stored state by state (rows 0..Nk[0]-1 drawn from
 * state 0, and so on; counts 1): neighbouring states differ by the mean of u_{k+1} - u_k over
 * both states' samples (the trapezoid rule of thermodynamic integration). f0[0] = 0. */
void fe_mbar_guess(const fe_mbar *m, double *f0);

/* Sort the rows of a linear M = 1 problem into bins of the given width on x (the energy):
 * one row per occupied bin at its centre, its count the samples in it, its observables their
 * means. The multiple-histogram method is MBAR on these rows; width -> 0 is MBAR itself.
 * Returns 0, or -1 when memory runs out. */
int fe_mbar_bin(fe_mbar *m, double width);

/* Solve the MBAR equations by damped Newton on the convex objective
 *   F(f) = sum_i count_i lnD_i - sum_k N_k f_k   (f_0 = 0 fixed),
 * from f0 (NULL: zeros), until the normalisation residual is below tol (1e-12 is reached in a
 * handful of passes). Returns 0; else fills err and returns -1 (no convergence, states that do
 * not overlap, interrupted). */
int fe_mbar_solve(fe_mbar *m, const double *f0, double tol, int maxit, char *err, size_t errlen);

/* The asymptotic covariance of the f_k (Shirts and Chodera 2008, eq. D.8), from the weight
 * matrix through the K x K Gram matrix W^T W = V S V^T:
 *   Theta = V S^1/2 (I - S^1/2 V^T N V S^1/2)^+ S^1/2 V^T.   theta is K x K. */
int fe_mbar_theta(const fe_mbar *m, double *theta);

/* Reweight to a target state t: u_t(i) = sum_m tcoef[m] x[m n + i] (linear) or tu[i]
 * (matrix; tcoef NULL). For the observables listed in which[0..na-1] (indices into obs):
 *   ft       reduced free energy of t relative to state 0, dft its standard error;
 *   mean[a]  <A_a>_t, cov[a na + b] the covariance of the estimates (augmented-state form of
 *            the covariance formula).
 * Returns 0, -1 when memory runs out, -2 when interrupted (Ctrl-C). */
int fe_mbar_expect(const fe_mbar *m, const double *tcoef, const double *tu, int na,
                   const int *which, double *ft, double *dft, double *mean, double *cov);

/* Symmetric eigen-decomposition (cyclic Jacobi) of the D x D matrix a (destroyed): values in
 * w, vectors as the columns of v (D x D, row-major). */
void fe_eigen_sym(int D, double *a, double *w, double *v);

/* Covariance from a Gram matrix G (D x D) of normalised weight columns and the sample counts
 * N (D, zero for states that were not sampled): theta (D x D). Returns 0 or -1 (memory). */
int fe_theta_from_gram(int D, const double *G, const double *N, double *theta);

#endif
