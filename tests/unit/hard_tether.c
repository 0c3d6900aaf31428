/* unit/hard/tether — the pieces of the harmonic tether in hard_kernel.h: the exp(-x) written
 * in additions and multiplications (against libm), the minimum image of the tether distance
 * across the box and the cell frames, and the Metropolis rule (never a draw for a fall in
 * energy, the reference particle never moved, acceptance frequency exp(-dE)). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "hard/hard_kernel.h"

static void exp_neg(void)
{
    double worst = 0;
    for (int k = 0; k <= 200000; k++) {
        const double x = 699.0 * k / 200000.0 * (k % 3 == 0 ? 1e-3 : 1.0);
        const double want = exp(-x), got = hard_exp_neg(x);
        const double rel = fabs(got - want) / want;
        if (rel > worst)
            worst = rel;
    }
    CHECK("unit/hard/tether-exp", worst < 4e-15, "largest relative error %.3g", worst);
    CHECK("unit/hard/tether-exp-ends", hard_exp_neg(0) == 1 && hard_exp_neg(-1) == 1 &&
          hard_exp_neg(800) == 0 && hard_exp_neg(INFINITY) == 0 && hard_exp_neg(NAN) == 0,
          "exp(-0) %g, exp(-800) %g", hard_exp_neg(0), hard_exp_neg(800));
}

/* The Metropolis rule screened by -log(u) decides as !(dE > 0) || u < hard_exp_neg(dE) does:
 * uniform u, and u at the boundary (hard_exp_neg(dE) and its neighbouring doubles, where the
 * screen must defer to the polynomial), for dE from -1 to past the cut-off, u = 0 included. */
static void metropolis_rule(void)
{
    uint64_t state = 12345;
    long differ = 0, tried = 0, edge = 0;
    for (int k = -1000; k <= 200001; k++) {
        const double x = k > 200000 ? 700.0 : 702.0 * k / 200000.0 * (k % 3 == 0 ? 1e-3 : 1.0);
        const double e = hard_exp_neg(x);
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        const double us[6] = {(double)(state >> 11) * (1.0 / 9007199254740992.0), 0.0, e,
                              nextafter(e, 0.0), nextafter(e, 1.0), e * (1.0 + 2e-9)};
        for (int j = 0; j < 6; j++) {
            const double u = us[j];
            if (!(u >= 0.0 && u < 1.0))
                continue;
            tried++;
            edge += j >= 2 && j <= 4 && u > 0.0 && x > 0.0;
            differ += hard_tether_metropolis(x, u, -log(u)) != (!(x > 0.0) || u < e);
        }
    }
    CHECK("unit/hard/tether-metropolis-screen", differ == 0 && edge > 100000,
          "%ld of %ld decisions differ from u < hard_exp_neg(dE) (%ld at the boundary)", differ, tried, edge);
}

static void min_image(void)
{
    /* a 4 x 4 grid of cells of width 1.5 in a 6 x 6 box, origin at (0.75, 5.5): the particle in
     * cell (3, 0) at local (1.25, 0.25) sits at 4.5 + 1.25 + 0.75 - 3 = 3.5 -> -2.5 (wrapped)
     * and 0 + 0.25 + 5.5 - 3 = 2.75 in box coordinates; its site at (2.9, -2.8) is 0.6 and 0.45
     * away through the boundaries */
    carlo_cell_grid g;
    memset(&g, 0, sizeof g);
    g.dim = 2;
    g.width[0] = g.width[1] = 1.5;
    hard_tether th;
    memset(&th, 0, sizeof th);
    th.lambda = 1;
    th.origin[0] = 0.75;
    th.origin[1] = 5.5;
    th.L[0] = th.L[1] = 6;
    const int xyz[3] = {3, 0, 0};
    const float u[3] = {1.25f, 0.25f, 0.0f};
    const double site[3] = {2.9, -2.8, 0};
    const double r2 = hard_tether_r2(&th, &g, 2, xyz, u, site);
    CHECK("unit/hard/tether-min-image", fabs(r2 - (0.6 * 0.6 + 0.45 * 0.45)) < 1e-12, "r2 = %.15g", r2);
    /* the same double as the minimum image written out in full (d - L rint(d / L) on every axis),
     * wherever the particle is: near its site, a quarter box away, across the boundary */
    uint64_t state = 99;
    long differ = 0, far_c = 0;
    for (int k = 0; k < 400000; k++) {
        float v[3] = {0.0f, 0.0f, 0.0f};
        double site2[3] = {0, 0, 0}, full = 0.0;
        int c[3] = {0, 0, 0};
        for (int a = 0; a < 2; a++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            c[a] = (int)(state >> 62);
            v[a] = (float)((state >> 40 & 0xfffff) * (1.5 / 1048576.0));
            site2[a] = (k % 4 == 0 ? 1.5 : 6.0) * ((double)(state >> 11 & 0x1fffff) / 2097152.0 - 0.5);
            if (k % 7 == 0) /* a quarter box away, to the last bit */
                site2[a] = (double)c[a] * 1.5 + (double)v[a] + th.origin[a] - 3.0 + (k % 2 ? 1.5 : -1.5);
            double d = (double)c[a] * g.width[a] + (double)v[a];
            d = d + th.origin[a];
            d = d - 0.5 * th.L[a];
            d = d - site2[a];
            d = d - th.L[a] * rint(d / th.L[a]);
            full = full + d * d;
        }
        differ += hard_tether_r2(&th, &g, 2, c, v, site2) != full;
        /* the chain's form (the cell's part summed first) agrees to rounding */
        double off[3];
        carlo_tether_offset(&g, 2, c, th.origin, th.L, 1, site2, off);
        const double r2c = carlo_tether_r2(th.L, 2, off, v);
        far_c += fabs(r2c - full) > 1e-12 * (1.0 + full);
    }
    CHECK("unit/hard/tether-offset-form", far_c == 0,
          "%ld of 400000 distances by the offset form differ from the full formula by more than rounding", far_c);
    CHECK("unit/hard/tether-min-image-full", differ == 0,
          "%ld of 400000 distances differ from the full formula", differ);
}

static void metropolis(void)
{
    carlo_cell_grid g;
    memset(&g, 0, sizeof g);
    g.dim = 3;
    g.width[0] = g.width[1] = g.width[2] = 1.25;
    double sites[6] = {0, 0, 0, 0.1, 0.1, 0.1};
    hard_tether th;
    memset(&th, 0, sizeof th);
    th.lambda = 2;
    th.L[0] = th.L[1] = th.L[2] = 10;
    th.origin[0] = th.origin[1] = th.origin[2] = 5; /* cell (0, 0, 0) local u = box coordinate u */
    th.site = sites;
    const int xyz[3] = {0, 0, 0};
    const float near[3] = {0.125f, 0.125f, 0.125f}, far[3] = {0.5f, 0.5f, 0.5f};
    int down = 1, ref = 0;
    for (uint32_t s = 0; s < 1000; s++) {
        down &= hard_tether_accept(&th, &g, 3, xyz, 1, far, near, 7, 0, 0, s);
        ref += hard_tether_accept(&th, &g, 3, xyz, 0, far, near, 7, 0, 0, s);
    }
    CHECK("unit/hard/tether-downhill", down, "a move towards the site was refused");
    CHECK("unit/hard/tether-reference-fixed", ref == 0, "the reference particle moved %d times", ref);
    /* uphill: dE = 2 (3 (0.4^2 - 0.025^2)) = 0.95625; accepted with probability exp(-dE) */
    const int n = 200000;
    int acc = 0;
    for (int s = 0; s < n; s++)
        acc += hard_tether_accept(&th, &g, 3, xyz, 1, near, far, 7, 1, 0, (uint32_t)s);
    const double p = exp(-2 * 3 * (0.4 * 0.4 - 0.025 * 0.025)), f = (double)acc / n;
    const double err = sqrt(p * (1 - p) / n);
    CHECK("unit/hard/tether-uphill", fabs(f - p) < 4 * err, "accepted %.5f, want %.5f +- %.5f", f, p, err);
}

int main(void)
{
    exp_neg();
    metropolis_rule();
    min_image();
    metropolis();
    return check_failed;
}
