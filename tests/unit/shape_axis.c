/* unit/shape/axis — the separating axis along the centre line: shape A at the origin, shape B
 * at d, both rotated as the kernels rotate them (shape_rot_of); the pair is apart along d when
 * G = |d|^2 - h_A(d) - h_B(-d) > 0 (h the support functions, here by brute force over the
 * rotated vertices in long double, or the ellipsoid's closed form). XenoCollide's first support
 * evaluation is this test (shape_mpr_step), so any pair apart along the centre line
 * by more than a rounding margin must be called apart: by shape_overlap_xeno alone and by
 * shape_overlap. Pairs are placed at centre-line gaps of +-1e-3 .. +-1e-11 of R_A + R_B (above
 * and below the margin, 1e-12 of R_A + R_B) along random directions under random orientations,
 * aligned orientations and axis directions (ties of vertices) among them. Most pairs apart
 * along the centre line must reach XenoCollide (the bounds leave them undecided), and some of
 * the pairs below the gap must overlap (a few in a hundred do: another axis separates the
 * others), or the test shows nothing. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "core/rng.h"
#include "shape/shape.h"

#define PHI 1.618033988749895
#define MARGIN 1e-12 /* of R_A + R_B: far above the rounding of one support evaluation */

static double uni(uint32_t k, uint32_t j, int w) /* uniform in (0, 1) */
{
    const carlo_u32x4 r = carlo_rng(0xa715u, 0, k, j, 0);
    return ((double)r.v[w] + 0.5) / 4294967296.0;
}

/* A random orientation (a unit quaternion in float words, as the cells keep them; in 2D an
 * angle word); every seventh one the identity. */
static void orient(int dim, uint32_t k, uint32_t j, uint32_t o[4])
{
    if (k % 7 == 0) {
        shape_orient_identity(dim, o);
        return;
    }
    if (dim == 2) {
        o[0] = carlo_rng(0xa716u, 0, k, j, 0).v[0];
        o[1] = o[2] = o[3] = 0u;
        return;
    }
    double q[4], n = 0.0;
    for (int a = 0; a < 4; a++) {
        const double u1 = uni(k, 16 + j, a), u2 = uni(k, 32 + j, a);
        q[a] = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
        n += q[a] * q[a];
    }
    for (int a = 0; a < 4; a++)
        o[a] = shape_float_word((float)(q[a] / sqrt(n)));
}

/* h_s(n) of the shape rotated by r: n . (r p) at its farthest point p, in long double. */
static long double support_value(const shape_def *s, const shape_rot *r, const long double n[3])
{
    long double nb[3];
    for (int a = 0; a < 3; a++)
        nb[a] = r->m[0][a] * n[0] + r->m[1][a] * n[1] + r->m[2][a] * n[2];
    if (s->kind == SHAPE_ELLIPSOID) {
        long double q = 0.0L;
        for (int a = 0; a < s->dim; a++)
            q += (long double)s->axes[a] * s->axes[a] * nb[a] * nb[a];
        return sqrtl(q);
    }
    long double best = -INFINITY;
    for (int i = 0; i < s->nv; i++) {
        const long double h = s->v[i][0] * nb[0] + s->v[i][1] * nb[1] + s->v[i][2] * nb[2];
        best = h > best ? h : best;
    }
    return best + s->sweep * sqrtl(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
}

static const double TARGETS[8] = {1e-3, 1e-6, 1e-9, 1e-11, -1e-11, -1e-9, -1e-6, -1e-3};

static void run(const char *name, const shape_def *s, int pairs)
{
    const int dim = s->dim;
    const double Rs = 2.0 * s->R;
    long apart = 0, wrong = 0, wrong_xeno = 0, below = 0, below_overlap = 0, mpr = 0;
    double worst = 0.0;
    for (uint32_t k = 0; k < (uint32_t)pairs; k++) {
        uint32_t oa[4], ob[4];
        orient(dim, k, 0, oa);
        orient(dim, k + (k % 14 == 0 ? 0u : 1000003u), 1, ob); /* both the identity at times */
        shape_rot ra, rb;
        shape_rot_of(dim, oa, &ra);
        shape_rot_of(dim, ob, &rb);
        double u[3] = {0.0, 0.0, 0.0}, len = 0.0;
        if (k % 11 == 0) {
            u[k / 11 % (uint32_t)dim] = k % 2 ? -1.0 : 1.0;
            len = 1.0;
        } else {
            for (int a = 0; a < dim; a++) {
                u[a] = uni(k, 2, a) - 0.5;
                len += u[a] * u[a];
            }
            len = sqrt(len);
        }
        const long double un[3] = {u[0] / len, u[1] / len, u[2] / len}, um[3] = {-un[0], -un[1], -un[2]};
        const long double h = support_value(s, &ra, un) + support_value(s, &rb, um);
        for (int t = 0; t < 8; t++) {
            const long double dist = h + TARGETS[t] * Rs;
            const double d[3] = {(double)(dist * un[0]), (double)(dist * un[1]), (double)(dist * un[2])};
            /* the gap of the d actually tested: G / |d| */
            const long double dl[3] = {d[0], d[1], d[2]}, dm[3] = {-dl[0], -dl[1], -dl[2]};
            const long double dd = dl[0] * dl[0] + dl[1] * dl[1] + dl[2] * dl[2];
            const long double G = dd - support_value(s, &ra, dl) - support_value(s, &rb, dm);
            const double gap = (double)(G / sqrtl(dd)) / Rs;
            const int xeno = shape_overlap_xeno(s, &ra, s, &rb, d), full = shape_overlap(s, &ra, s, &rb, d);
            if (gap > MARGIN) {
                apart++;
                mpr += shape_overlap_bounds(s, s, d) < 0;
                wrong_xeno += xeno != 0;
                wrong += full != 0;
                if (xeno || full)
                    worst = fmax(worst, gap);
            } else if (gap < -0.5 * 1e-11) {
                below++;
                below_overlap += full != 0;
            }
        }
    }
    char label[96];
    snprintf(label, sizeof label, "unit/shape/axis_%s", name);
    CHECK(label, wrong == 0 && wrong_xeno == 0 && apart >= 3 * pairs && mpr >= pairs && below_overlap > below / 400,
          "%ld of %ld pairs apart along the centre line called overlapping (XenoCollide alone: %ld; largest gap "
          "%.3g of R_A + R_B); %ld of them reached XenoCollide; %ld of %ld pairs below the gap overlapping",
          wrong, apart, wrong_xeno, worst, mpr, below_overlap, below);
}

int main(void)
{
    double pent[15], dod[60], cube[24], tet[12] = {1, 1, 1, 1, -1, -1, -1, 1, -1, -1, -1, 1};
    for (int k = 0; k < 5; k++) {
        pent[3 * k] = cos(2 * 3.141592653589793 * k / 5);
        pent[3 * k + 1] = sin(2 * 3.141592653589793 * k / 5);
        pent[3 * k + 2] = 0;
    }
    for (int k = 0; k < 8; k++)
        for (int a = 0; a < 3; a++) {
            dod[3 * k + a] = (k >> a & 1) ? 1.0 : -1.0;
            cube[3 * k + a] = (k >> a & 1) ? 0.5 : -0.5;
        }
    for (int k = 0; k < 12; k++) { /* (0, +-1/f, +-f) cyclically */
        const int axis = k / 4;
        double *v = dod + 3 * (8 + k);
        v[axis] = 0.0;
        v[(axis + 1) % 3] = ((k & 1) ? 1.0 : -1.0) / PHI;
        v[(axis + 2) % 3] = ((k & 2) ? 1.0 : -1.0) * PHI;
    }
    shape_def s;
    double v1;
    const double axes[3] = {1.0, 0.6, 0.4};
    if (shape_make_poly(&s, 2, 5, pent, 0, &v1, NULL) == 0)
        run("pentagon", &s, 4000);
    if (shape_make_poly(&s, 2, 5, pent, 0.15, &v1, NULL) == 0)
        run("spheropentagon", &s, 2000);
    if (shape_make_poly(&s, 3, 20, dod, 0, &v1, NULL) == 0)
        run("dodecahedron", &s, 6000);
    if (shape_make_poly(&s, 3, 20, dod, 0.2, &v1, NULL) == 0)
        run("spherododecahedron", &s, 2000);
    if (shape_make_poly(&s, 3, 8, cube, 0, &v1, NULL) == 0)
        run("cube", &s, 4000);
    if (shape_make_poly(&s, 3, 4, tet, 0, &v1, NULL) == 0)
        run("tetrahedron", &s, 4000);
    if (shape_make_ellipsoid(&s, 3, axes, &v1) == 0)
        run("ellipsoid", &s, 2000);
    if (shape_make_ellipsoid(&s, 2, axes, &v1) == 0)
        run("ellipse", &s, 2000);
    return check_failed;
}
