/* steinhardt.h — the global bond-orientational order Q4 and Q6 of Steinhardt, Nelson and
 * Ronchetti (1983) of a 3D configuration, and the nematic order of a set of axes: shared by
 * hard spheres and hard shapes. */
#ifndef CARLO_STEINHARDT_H
#define CARLO_STEINHARDT_H

#include <stdint.h>

#include "core/box.h"

/* The default neighbour cutoff: 1.2 times the nearest-neighbour distance of an fcc crystal of
 * number density rho, 1.2 (sqrt 2 / rho)^(1/3) (the first shell of fcc, hcp and sc; bcc's
 * first two shells). */
double carlo_steinhardt_rc(double rho);

/* Q_l = sqrt(4 pi / (2l + 1) sum_m |<q_lm(i)>_i|^2), q_lm(i) = the mean of Y_lm over the
 * bonds of particle i to the centres closer than rc (minimum image; rc below half the box),
 * for l = 4 and 6; particles without neighbours count with q_lm = 0. x: N x 3 positions.
 * A perfect crystal gives the values of its shell (fcc 0.19094, 0.57452), a fluid ~ N^-1/2. */
int carlo_steinhardt(const carlo_box *b, int64_t N, const double *x, double rc, double *q4, double *q6);

/* Nematic order S: the largest eigenvalue of Q = < 3/2 u u - 1/2 I > over the N unit axes u
 * (N x 3), and its eigenvector (the director, may be NULL). */
double carlo_nematic(int64_t N, const double *u, double director[3]);

/* Eigenvalues and unit eigenvectors (vec[k] belongs to val[k]) of a symmetric 3x3 matrix. */
void carlo_sym3_eigen(const double M[3][3], double val[3], double vec[3][3]);

#endif
