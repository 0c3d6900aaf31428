/* tests/unit/box.c — the box's fractional coordinates: a position taken to fractional
 * coordinates and back is itself, in boxes tilted in every plane at once; a lattice vector
 * is one unit of f; wrapping moves a point by lattice vectors only. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "core/box.h"

static double lcg(unsigned long long *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) / 9007199254740992.0;
}

int main(void)
{
    carlo_box b;
    memset(&b, 0, sizeof b);
    b.dim = 3;
    b.L[0] = 7.0;
    b.L[1] = 5.0;
    b.L[2] = 6.0;
    b.xy = 0.3;
    b.xz = -0.2;
    b.yz = 0.45;
    unsigned long long s = 5;
    double worst = 0.0, worst_wrap = 0.0;
    for (int k = 0; k < 100000; k++) {
        double x[3], f[3], y[3];
        for (int a = 0; a < 3; a++)
            x[a] = 20.0 * (lcg(&s) - 0.5);
        carlo_box_to_fractional(&b, x, f);
        carlo_box_from_fractional(&b, f, y);
        for (int a = 0; a < 3; a++)
            worst = fmax(worst, fabs(y[a] - x[a]));
        /* the wrap moves x by whole lattice vectors: its fractional shift is integral */
        double w[3], fw[3];
        memcpy(w, x, sizeof w);
        carlo_box_wrap(&b, w);
        carlo_box_to_fractional(&b, w, fw);
        for (int a = 0; a < 3; a++) {
            const double d = f[a] - fw[a];
            worst_wrap = fmax(worst_wrap, fabs(d - rint(d)));
            worst_wrap = fmax(worst_wrap, fw[a] < -0.5 - 1e-12 || fw[a] >= 0.5 + 1e-12 ? 1.0 : 0.0);
        }
    }
    CHECK("unit/box/fractional-round-trip", worst < 1e-12, "a position came back %.3g away", worst);
    CHECK("unit/box/wrap-by-lattice-vectors", worst_wrap < 1e-9,
          "a wrap moved a point by %.3g of a lattice vector off a whole one", worst_wrap);
    /* a2 = (xy Ly, Ly, 0) and a3 = (xz Lz, yz Lz, Lz): f = (0, 1, 0) and (0, 0, 1) */
    const double f2[3] = {0, 1, 0}, f3[3] = {0, 0, 1};
    double a2[3], a3[3];
    carlo_box_from_fractional(&b, f2, a2);
    carlo_box_from_fractional(&b, f3, a3);
    CHECK("unit/box/lattice-vectors",
          fabs(a2[0] - 0.3 * 5.0) < 1e-15 && a2[1] == 5.0 && a2[2] == 0.0 && fabs(a3[0] + 0.2 * 6.0) < 1e-15 &&
              fabs(a3[1] - 0.45 * 6.0) < 1e-15 && a3[2] == 6.0,
          "a2 = (%g, %g, %g), a3 = (%g, %g, %g)", a2[0], a2[1], a2[2], a3[0], a3[1], a3[2]);
    return check_failed;
}
