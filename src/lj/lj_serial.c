/* lj_serial.c — the serial reference of decomposition Monte Carlo (tests only): Algorithm 1 of
 * Hailat et al. as plainly as it can be written. It draws the same trial moves as the
 * backends, but sums every other particle in index order into one running double and
 * decides with libm's exp, so it shares no summation code with them. */
#include <math.h>

#include "lj/lj.h"

static void energy_of(const lj_geom *g, uint32_t N, const double *pos, uint32_t i,
                      const double p[3], double *u_sum, double *w_sum)
{
    double us = 0.0, ws = 0.0;
    for (uint32_t j = 0; j < N; j++) {
        if (j == i)
            continue;
        double d[3], r2 = 0.0;
        for (int a = 0; a < 3; a++) {
            d[a] = pos[3 * j + a] - p[a];
            if (d[a] > 0.5 * g->L[a])
                d[a] -= g->L[a];
            else if (d[a] < -0.5 * g->L[a])
                d[a] += g->L[a];
            r2 += d[a] * d[a];
        }
        if (r2 < g->rc2) {
            double s6 = 1.0 / (r2 * r2 * r2);
            us += 4.0 * (s6 * s6 - s6) - g->ushift;
            ws += 24.0 * (2.0 * s6 * s6 - s6);
        }
    }
    *u_sum = us;
    *w_sum = ws;
}

void lj_serial_moves(const lj_geom *g, uint32_t N, double beta, double delta, uint64_t seed,
                     uint64_t first_move, uint64_t n, double *pos, double *U, double *W,
                     uint64_t *accepted)
{
    for (uint64_t m = first_move; m < first_move + n; m++) {
        lj_trial t = lj_draw_trial(seed, m, N, delta, g->dim);
        double *x = pos + 3 * (size_t)t.i, p[3];
        for (int a = 0; a < 3; a++) {
            p[a] = x[a] + t.d[a];
            if (p[a] < 0)
                p[a] += g->L[a];
            if (p[a] >= g->L[a])
                p[a] -= g->L[a];
        }
        double uo, wo, un, wn;
        energy_of(g, N, pos, t.i, x, &uo, &wo);
        energy_of(g, N, pos, t.i, p, &un, &wn);
        double dU = un - uo;
        if (dU <= 0 || t.u < exp(-beta * dU)) {
            for (int a = 0; a < 3; a++)
                x[a] = p[a];
            *U += dU;
            *W += wn - wo;
            ++*accepted;
        }
    }
}
