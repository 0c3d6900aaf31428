/* box.h — the periodic simulation box in HOOMD's GSD convention: edge lengths Lx Ly Lz and
 * tilt factors xy xz yz; lattice vectors a1 = (Lx, 0, 0), a2 = (xy Ly, Ly, 0),
 * a3 = (xz Lz, yz Lz, Lz). Positions lie in [-L/2, L/2) along each lattice vector. A 2D box
 * has dim = 2, Lz = 0 and z = 0 everywhere. The inline functions compile for host and device. */
#ifndef CARLO_BOX_H
#define CARLO_BOX_H

#include "core/hd.h"

typedef struct carlo_box {
    int dim;          /* 2 or 3 */
    double L[3];      /* Lx, Ly, Lz (Lz = 0 in 2D) */
    double xy, xz, yz;
} carlo_box;

CARLO_HD double carlo_box_volume(const carlo_box *b)
{
    return b->dim == 2 ? b->L[0] * b->L[1] : b->L[0] * b->L[1] * b->L[2];
}

CARLO_HD int carlo_box_orthorhombic(const carlo_box *b)
{
    return b->xy == 0 && b->xz == 0 && b->yz == 0;
}

/* Fractional coordinates: x = a1 f0 + a2 f1 + a3 f2 with f in [-1/2, 1/2) inside the box. */
CARLO_HD void carlo_box_to_fractional(const carlo_box *b, const double x[3], double f[3])
{
    double z = b->dim == 3 ? x[2] : 0.0;
    f[2] = b->dim == 3 ? z / b->L[2] : 0.0;
    double y = x[1] - b->yz * z;
    f[1] = y / b->L[1];
    double xx = x[0] - b->xy * y - b->xz * z;
    f[0] = xx / b->L[0];
}

CARLO_HD void carlo_box_from_fractional(const carlo_box *b, const double f[3], double x[3])
{
    double z = b->dim == 3 ? f[2] * b->L[2] : 0.0;
    double y = f[1] * b->L[1]; /* the untilted part: a2 = (xy Ly, Ly, 0) carries xy Ly f1 */
    x[0] = f[0] * b->L[0] + b->xy * y + b->xz * z;
    x[1] = y + b->yz * z;
    x[2] = z;
}

/* The nearest periodic image of a separation vector (z, then y, then x, as in HOOMD, so that
 * tilted boxes work too). Exact for separations shorter than half the box's thinnest width. */
CARLO_HD void carlo_box_min_image(const carlo_box *b, double d[3])
{
    if (b->dim == 3) {
        double Lz = b->L[2];
        if (d[2] >= 0.5 * Lz) {
            d[0] -= b->xz * Lz; d[1] -= b->yz * Lz; d[2] -= Lz;
        } else if (d[2] < -0.5 * Lz) {
            d[0] += b->xz * Lz; d[1] += b->yz * Lz; d[2] += Lz;
        }
    }
    double Ly = b->L[1];
    if (d[1] >= 0.5 * Ly) {
        d[0] -= b->xy * Ly; d[1] -= Ly;
    } else if (d[1] < -0.5 * Ly) {
        d[0] += b->xy * Ly; d[1] += Ly;
    }
    double Lx = b->L[0];
    if (d[0] >= 0.5 * Lx)
        d[0] -= Lx;
    else if (d[0] < -0.5 * Lx)
        d[0] += Lx;
}

/* Wrap a position into the box, fractional coordinates in [-1/2, 1/2). */
CARLO_HD void carlo_box_wrap(const carlo_box *b, double x[3])
{
    double f[3];
    carlo_box_to_fractional(b, x, f);
    for (int a = 0; a < b->dim; a++) {
        f[a] -= (double)(long long)f[a]; /* now in (-1, 1) */
        if (f[a] >= 0.5)
            f[a] -= 1.0;
        else if (f[a] < -0.5)
            f[a] += 1.0;
        if (f[a] >= 0.5) /* -0.5 - tiny rounded up to 0.5 */
            f[a] = -0.5;
    }
    carlo_box_from_fractional(b, f, x);
}

/* Skew coordinates s = (f0 Lx, f1 Ly, f2 Lz): the fractional coordinates in lengths, in which a
 * triclinic box is the orthorhombic box of sides L. A position is x = s0 + xy s1 + xz s2,
 * y = s1 + yz s2, z = s2 (HOOMD's makeCoordinates); the skew of a separation is the separation
 * of the skews, and a lattice vector's is L along one axis. */
CARLO_HD void carlo_box_skew_to_pos(const carlo_box *b, const double s[3], double x[3])
{
    const double s0 = s[0], s1 = s[1], s2 = b->dim == 3 ? s[2] : 0.0;
    x[0] = s0 + b->xy * s1 + b->xz * s2;
    x[1] = s1 + b->yz * s2;
    x[2] = s2;
}

CARLO_HD void carlo_box_pos_to_skew(const carlo_box *b, const double x[3], double s[3])
{
    const double z = b->dim == 3 ? x[2] : 0.0;
    const double y = x[1] - b->yz * z;
    s[0] = x[0] - b->xy * y - b->xz * z;
    s[1] = y;
    s[2] = z;
}

/* ---- host functions (box.c) ---- */
/* An orthorhombic box with sides L[0..dim-1] (Lz = 0 in 2D). */
carlo_box carlo_box_make(int dim, const double *L);
/* 0, or -1 with a message naming the bad value (dim, non-finite or non-positive sides). */
int carlo_box_check(const carlo_box *b);
/* The box's widths between opposite faces (the distance between the planes f_a = const and
 * f_a + 1): L itself for an orthorhombic box. */
void carlo_box_heights(const carlo_box *b, double h[3]);
/* The six GSD numbers Lx Ly Lz xy xz yz. */
void carlo_box_gsd(const carlo_box *b, double out[6]);
/* The box b with every side times lam, its tilt factors kept (an isotropic scaling). */
carlo_box carlo_box_scaled(const carlo_box *b, double lam);

#endif
