/* box.c — see box.h: construction and validation of boxes on the host. */
#include "core/box.h"

#include <math.h>

#include "core/error.h"

carlo_box carlo_box_make(int dim, const double *L)
{
    carlo_box b = {.dim = dim, .L = {L[0], L[1], dim == 3 ? L[2] : 0.0}};
    return b;
}

int carlo_box_check(const carlo_box *b)
{
    static const char *const names[3] = {"Lx", "Ly", "Lz"};
    if (b->dim != 2 && b->dim != 3)
        return carlo_seterr("a box has 2 or 3 dimensions (got %d)", b->dim);
    for (int a = 0; a < b->dim; a++)
        if (!(b->L[a] > 0) || !isfinite(b->L[a]))
            return carlo_seterr("box %s must be a finite number > 0 (got %g)", names[a], b->L[a]);
    if (!isfinite(b->xy) || !isfinite(b->xz) || !isfinite(b->yz))
        return carlo_seterr("box tilt factors must be finite");
    if (b->dim == 2 && (b->L[2] != 0 || b->xz != 0 || b->yz != 0))
        return carlo_seterr("a 2D box has Lz = 0, xz = 0 and yz = 0");
    return 0;
}

void carlo_box_heights(const carlo_box *b, double h[3])
{
    h[0] = b->L[0];
    h[1] = b->L[1];
    h[2] = b->L[2];
    if (carlo_box_orthorhombic(b))
        return;
    if (b->dim == 2) {
        h[0] = b->L[0] / sqrt(1.0 + b->xy * b->xy);
        return;
    }
    /* a2 x a3 = Ly Lz (1, -xy, xy yz - xz), a3 x a1 = Lz Lx (0, 1, -yz), a1 x a2 = Lx Ly (0, 0, 1) */
    const double t = b->xy * b->yz - b->xz;
    h[0] = b->L[0] / sqrt(1.0 + b->xy * b->xy + t * t);
    h[1] = b->L[1] / sqrt(1.0 + b->yz * b->yz);
}

void carlo_box_gsd(const carlo_box *b, double out[6])
{
    out[0] = b->L[0];
    out[1] = b->L[1];
    out[2] = b->dim == 3 ? b->L[2] : 0.0;
    out[3] = b->xy;
    out[4] = b->xz;
    out[5] = b->yz;
}

carlo_box carlo_box_scaled(const carlo_box *b, double lam)
{
    carlo_box nb = *b;
    for (int a = 0; a < b->dim; a++)
        nb.L[a] *= lam;
    return nb;
}
