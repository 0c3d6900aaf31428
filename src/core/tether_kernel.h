/* tether_kernel.h — the arithmetic of the harmonic tether (the Einstein field of Frenkel-Ladd
 * integration) shared by the particle models that keep their particles in cells (core/cells):
 * beta U_t = lambda sum_i |r_i - r0_i|^2 by the periodic minimum image. Compiled for the CPU
 * (gcc) and the GPU (nvcc); everything in double, in one order of operations without fused
 * multiply-adds, so every backend decides every move alike. A model keeps its own sites' frame
 * and its own Metropolis rule; what is here is the distance from a site and its change. */
#ifndef CARLO_TETHER_KERNEL_H
#define CARLO_TETHER_KERNEL_H

#include <math.h>

#include "core/cells_kernel.h"
#include "core/hd.h"

/* The offset c of a site r0 from the corner of cell xyz, along the dim first axes (the others
 * 0): a particle at local u of that cell is u + c from its site before the minimum image. One
 * order of operations per axis: (x w + origin) - r0, or, when the sites are centred on the box
 * (centred != 0, sites in [-L/2, L/2)), ((x w + origin) - L / 2) - r0. */
CARLO_HD void carlo_tether_offset(const carlo_cell_grid *g, int dim, const int xyz[3], const double origin[3],
                                  const double L[3], int centred, const double *r0, double c[3])
{
    c[0] = c[1] = c[2] = 0.0;
    for (int a = 0; a < dim; a++) {
        double d = (double)xyz[a] * g->width[a];
        d = d + origin[a];
        if (centred)
            d = d - 0.5 * L[a];
        c[a] = d - r0[a];
    }
}

/* |u + c|^2 by the minimum image of the box L, c from carlo_tether_offset. Within a quarter box
 * of the site (nearly always) d / L rounds to 0 and d - L * 0 is d (up to the sign of a zero,
 * which the square drops): d is kept, without the division. */
CARLO_HD double carlo_tether_r2(const double L[3], int dim, const double c[3], const float u[3])
{
    double r2 = 0.0;
    for (int a = 0; a < dim; a++) {
        const double La = L[a];
        double d = (double)u[a] + c[a];
        if (!(fabs(d) < 0.25 * La))
            d = d - La * rint(d / La);
        r2 = r2 + d * d;
    }
    return r2;
}

/* beta dU_t = lambda (|n - r0|^2 - |o - r0|^2) of a particle going from o to n (local
 * coordinates of its cell), given its site's offset c. */
CARLO_HD double carlo_tether_dE(double lambda, const double L[3], int dim, const double c[3], const float o[3],
                                const float n[3])
{
    return lambda * (carlo_tether_r2(L, dim, c, n) - carlo_tether_r2(L, dim, c, o));
}

#endif
