/* hard_tether.c — the harmonic tether of the Einstein crystal (Frenkel-Ladd runs): sites,
 * the reference particle, lambda, and the mean squared distance from the sites (hard.h; the
 * per-move arithmetic is in hard_kernel.h and core/tether_kernel.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "hard/hard.h"

/* ---------- the tether (Einstein crystal) ---------- */

/* x - L round(x / L): the minimum image of a separation along a side L. */
static double min_image(double x, double L)
{
    return x - L * rint(x / L);
}

/* Translate the sites (all by one vector, wrapped into the box) so that the reference particle,
 * tag 0 at position p0, sits on its site: the Einstein molecule's lattice is the one seen from
 * the fixed particle. */
static void anchor_sites(hard_system *s, const double p0[3])
{
    double shift[3] = {0, 0, 0};
    for (int a = 0; a < s->dim; a++)
        shift[a] = min_image(p0[a] - s->sites[a], s->box.L[a]);
    for (int64_t k = 0; k < s->N; k++)
        for (int a = 0; a < s->dim; a++) {
            const double L = s->box.L[a];
            double v = s->sites[3 * k + a] + shift[a];
            s->sites[3 * k + a] = v - L * floor(v / L + 0.5);
        }
    s->sites[0] = p0[0]; /* exactly, whatever the rounding of the shift */
    s->sites[1] = p0[1];
    s->sites[2] = s->dim == 3 ? p0[2] : 0.0;
}

int hard_set_sites(hard_system *s, const double *x)
{
    HARD_ALIVE(s);
    if (s->mv.skew)
        return carlo_seterr("the tether's sites need an orthorhombic box (this one has tilts xy, xz, yz = "
                            "%.9g, %.9g, %.9g)", s->box.xy, s->box.xz, s->box.yz);
    const size_t bytes = carlo_mulsize((size_t)s->N, 3 * sizeof(double));
    double *now = carlo_malloc(bytes, "positions");
    if (!now)
        return -1;
    if (hard_positions(s, now)) {
        free(now);
        return -1;
    }
    if (!s->sites && !(s->sites = carlo_malloc(bytes, "tether sites"))) {
        free(now);
        return -1;
    }
    for (int64_t k = 0; k < s->N; k++)
        for (int a = 0; a < 3; a++)
            s->sites[3 * k + a] = a < s->dim ? (x ? x[3 * k + a] : now[3 * k + a]) : 0.0;
    anchor_sites(s, now);
    free(now);
    return s->be->sites(s) ? hard_fail_dead(s) : 0;
}

int hard_set_lambda(hard_system *s, double lambda)
{
    HARD_ALIVE(s);
    if (!(lambda >= 0) || !isfinite(lambda))
        return carlo_seterr("lambda must be a finite number >= 0 (got %.17g)", lambda);
    if (lambda > 0 && s->mv.skew)
        return carlo_seterr("the tether (lambda > 0) needs an orthorhombic box (this one has tilts xy, xz, "
                            "yz = %.9g, %.9g, %.9g)", s->box.xy, s->box.xz, s->box.yz);
    if (lambda > 0 && s->npt)
        return carlo_seterr("the tether runs in NVT only (this system is NPT at pressure %.9g): "
                            "set pressure = nil first", s->pressure);
    if (lambda > 0 && !(s->lambda > 0)) { /* switched on: sites now, or the old ones re-anchored */
        if (!s->sites) {
            if (hard_set_sites(s, NULL))
                return -1;
        } else {
            double *now = carlo_malloc(carlo_mulsize((size_t)s->N, 3 * sizeof(double)), "positions");
            if (!now || hard_positions(s, now)) {
                free(now);
                return -1;
            }
            anchor_sites(s, now);
            free(now);
            if (s->be->sites(s))
                return hard_fail_dead(s);
        }
    }
    s->lambda = lambda;
    return 0;
}

int hard_tether_msd(hard_system *s, double *msd)
{
    *msd = 0;
    if (!s->sites)
        return 0;
    double *x = carlo_malloc(carlo_mulsize((size_t)s->N, 3 * sizeof(double)), "positions");
    if (!x || hard_positions(s, x)) {
        free(x);
        return -1;
    }
    double sum = 0;
    for (int64_t k = 0; k < s->N; k++)
        for (int a = 0; a < s->dim; a++) {
            double d = min_image(x[3 * k + a] - s->sites[3 * k + a], s->box.L[a]);
            sum += d * d;
        }
    free(x);
    *msd = sum / (double)s->N;
    return 0;
}
