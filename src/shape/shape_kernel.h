/* shape_kernel.h — hard convex shapes, written once and compiled for the CPU (gcc) and the GPU
 * (nvcc): the shape struct and its support function, orientations, the overlap test of two
 * shapes (XenoCollide, Snethen 2008, i.e. Minkowski portal refinement) with its circumsphere
 * and insphere prefilters, and the checkerboard cell update of the hard-shape model (HPMC,
 * Anderson et al. 2016) on the shared cell grid of core/cells_kernel.h.
 *
 * Shapes (lengths in any unit; the model's box is in the same unit):
 *   SHAPE_POLY       the convex hull of nv vertices (2D polygon, 3D polyhedron), optionally
 *                    swept by a disk / ball of radius `sweep` (spheropolygon, spheropolyhedron);
 *   SHAPE_ELLIPSOID  an ellipse (2D) or ellipsoid (3D) of semi-axes axes[], through the same
 *                    support-function route.
 * The body frame has the shape's centre (the centroid) at its origin, which must lie inside.
 *
 * Arithmetic: the overlap test runs in double, with additions, multiplications, divisions and
 * square roots only (all correctly rounded on both backends; the build forbids contraction),
 * so the CPU and the GPU take the same decision from the same inputs. The positions it is
 * given are the exact float separations of the cell frames; it turns the separation and B's
 * rotation into A's body frame first (shape_pair_make), where A's support point needs no
 * rotation, and a centrally symmetric shape's support searches half of its vertices.
 *
 * Orientations are 32-bit words: in 2D one word, the angle in units of 2 pi / 2^32 (a turn is
 * 2^32, so rotations add exactly and are exactly reversible); in 3D four words, the float bits
 * of a unit quaternion (w, x, y, z), renormalised in double where used.
 *
 * Random numbers (purposes 0x50-0x5f): move s of a sub-sweep in cell c draws
 * Philox(seed, MOVE, substep, c, 2 s) and, in 3D, Philox(..., 2 s + 1); the result depends on
 * (seed, substep, cell) only, never on how cells are spread over threads. */
#ifndef CARLO_SHAPE_KERNEL_H
#define CARLO_SHAPE_KERNEL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/cells_kernel.h"
#include "core/hd.h"
#include "core/rng.h"

#define SHAPE_PURPOSE_MOVE   0x50u /* trial moves */
#define SHAPE_PURPOSE_SETS   0x51u /* order of the checkerboard sets in each sweep */
#define SHAPE_PURPOSE_SHIFT  0x52u /* the cell shift after each sweep */
#define SHAPE_PURPOSE_INIT   0x53u /* random initial configurations */
#define SHAPE_PURPOSE_SERIAL 0x54u /* the serial reference chain */
#define SHAPE_PURPOSE_VOLUME 0x55u /* NPT volume moves */
#define SHAPE_PURPOSE_BOX    0x56u /* NPT length and shear moves of the box */

#define SHAPE_VMAX 64 /* vertices per shape */

/* XenoCollide's bounds. The refinement stops when the support plane is within
 * SHAPE_MPR_TOL (R_A + R_B) of the portal: a pair whose surfaces are that close to touching may
 * be called either way (1e-10 of the size; the tests check 1e-6). After SHAPE_MPR_MAX support
 * evaluations without a decision (never seen with polytopes; smooth shapes converge
 * geometrically) the pair is called overlapping: a move is then rejected, never an overlap
 * accepted. */
#define SHAPE_MPR_TOL 1e-10
#define SHAPE_MPR_MAX 96

enum { SHAPE_POLY = 0, SHAPE_ELLIPSOID = 1 };

typedef struct shape_def {
    int dim;            /* 2 or 3 */
    int kind;           /* SHAPE_POLY or SHAPE_ELLIPSOID */
    int nv;             /* vertices (SHAPE_POLY) */
    double sweep;       /* sweep radius (0: a plain polygon / polyhedron) */
    double axes[3];     /* semi-axes (SHAPE_ELLIPSOID) */
    double R;           /* circumradius about the centre, sweep included */
    double r_in;        /* inradius about the centre, sweep included */
    double v[SHAPE_VMAX][3]; /* vertices in the body frame (z = 0 in 2D) */
    int nsym;           /* > 0: a centrally symmetric polygon / polyhedron, its vertices the nsym
                         * pairs vs[k], -vs[k] (exactly; shape_find_pairs), which the support
                         * function searches; 0: it searches v */
    double vs[SHAPE_VMAX / 2][3];
} shape_def;

/* A rotation matrix, body frame to world frame. */
typedef struct shape_rot {
    double m[3][3];
} shape_rot;

/* ---------- small vector algebra (double) ---------- */

CARLO_HD double shape_dot(const double a[3], const double b[3])
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

CARLO_HD void shape_cross(const double a[3], const double b[3], double c[3])
{
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

CARLO_HD void shape_sub(const double a[3], const double b[3], double c[3])
{
    c[0] = a[0] - b[0];
    c[1] = a[1] - b[1];
    c[2] = a[2] - b[2];
}

CARLO_HD void shape_copy(double d[3], const double s[3])
{
    d[0] = s[0];
    d[1] = s[1];
    d[2] = s[2];
}

/* ---------- orientations ---------- */

/* sin and cos of the angle k 2 pi / 2^32: the quadrant from the top two bits (exact), then
 * Taylor polynomials on [0, pi/2) (truncated below 1e-17; rounded within 1e-15), in additions
 * and multiplications only, so that every backend computes the same doubles. */
CARLO_HD void shape_sincos_turn(uint32_t k, double *s, double *c)
{
    const uint32_t quad = k >> 30;
    const double x = (double)(k & 0x3fffffffu) * (6.283185307179586 / 4294967296.0);
    const double x2 = x * x;
    double sp = 1.0 - x2 * (1.0 / 506.0);
    sp = 1.0 - x2 * (1.0 / 420.0) * sp;
    sp = 1.0 - x2 * (1.0 / 342.0) * sp;
    sp = 1.0 - x2 * (1.0 / 272.0) * sp;
    sp = 1.0 - x2 * (1.0 / 210.0) * sp;
    sp = 1.0 - x2 * (1.0 / 156.0) * sp;
    sp = 1.0 - x2 * (1.0 / 110.0) * sp;
    sp = 1.0 - x2 * (1.0 / 72.0) * sp;
    sp = 1.0 - x2 * (1.0 / 42.0) * sp;
    sp = 1.0 - x2 * (1.0 / 20.0) * sp;
    sp = 1.0 - x2 * (1.0 / 6.0) * sp;
    const double sn = x * sp;
    double cp = 1.0 - x2 * (1.0 / 552.0);
    cp = 1.0 - x2 * (1.0 / 462.0) * cp;
    cp = 1.0 - x2 * (1.0 / 380.0) * cp;
    cp = 1.0 - x2 * (1.0 / 306.0) * cp;
    cp = 1.0 - x2 * (1.0 / 240.0) * cp;
    cp = 1.0 - x2 * (1.0 / 182.0) * cp;
    cp = 1.0 - x2 * (1.0 / 132.0) * cp;
    cp = 1.0 - x2 * (1.0 / 90.0) * cp;
    cp = 1.0 - x2 * (1.0 / 56.0) * cp;
    cp = 1.0 - x2 * (1.0 / 30.0) * cp;
    cp = 1.0 - x2 * (1.0 / 12.0) * cp;
    const double cs = 1.0 - x2 * 0.5 * cp;
    *s = quad == 0 ? sn : (quad == 1 ? cs : (quad == 2 ? -sn : -cs));
    *c = quad == 0 ? cs : (quad == 1 ? -sn : (quad == 2 ? -cs : sn));
}

CARLO_HD float shape_word_float(uint32_t w)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(w);
#else
    float f;
    memcpy(&f, &w, sizeof f);
    return f;
#endif
}

CARLO_HD uint32_t shape_float_word(float f)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t w;
    memcpy(&w, &f, sizeof w);
    return w;
#endif
}

/* The 2D rotation of sine s and cosine c (a kernel may keep s and c of a particle and build its
 * matrix again: the same doubles). */
CARLO_HD void shape_rot_2d(double s, double c, shape_rot *r)
{
    r->m[0][0] = c;
    r->m[0][1] = -s;
    r->m[1][0] = s;
    r->m[1][1] = c;
    r->m[0][2] = r->m[1][2] = r->m[2][0] = r->m[2][1] = 0.0;
    r->m[2][2] = 1.0;
}

/* The rotation of orientation words o (1 word in 2D, 4 in 3D). */
CARLO_HD void shape_rot_of(int dim, const uint32_t o[4], shape_rot *r)
{
    if (dim == 2) {
        double s, c;
        shape_sincos_turn(o[0], &s, &c);
        shape_rot_2d(s, c, r);
        return;
    }
    double w = shape_word_float(o[0]), x = shape_word_float(o[1]), y = shape_word_float(o[2]),
           z = shape_word_float(o[3]);
    const double n2 = w * w + x * x + y * y + z * z;
    const double k = 2.0 / n2; /* the stored quaternion is unit to float precision */
    r->m[0][0] = 1.0 - k * (y * y + z * z);
    r->m[0][1] = k * (x * y - w * z);
    r->m[0][2] = k * (x * z + w * y);
    r->m[1][0] = k * (x * y + w * z);
    r->m[1][1] = 1.0 - k * (x * x + z * z);
    r->m[1][2] = k * (y * z - w * x);
    r->m[2][0] = k * (x * z - w * y);
    r->m[2][1] = k * (y * z + w * x);
    r->m[2][2] = 1.0 - k * (x * x + y * y);
}

/* The identity orientation. */
CARLO_HD void shape_orient_identity(int dim, uint32_t o[4])
{
    o[0] = dim == 2 ? 0u : shape_float_word(1.0f);
    o[1] = o[2] = o[3] = shape_float_word(0.0f);
}

/* ---------- support functions ---------- */

/* The point of the shape farthest along n, in the body frame. A centrally symmetric shape
 * searches its nsym pairs: the dot product of -v is exactly minus that of v (rounding is
 * symmetric), so the largest |v . n| is the same largest value as a search of every vertex
 * finds, in half the products. Among equal values the first in the search's order wins. */
CARLO_HD void shape_support_body(const shape_def *s, const double n[3], double out[3])
{
    if (s->kind == SHAPE_ELLIPSOID) {
        const double a = s->axes[0], b = s->axes[1], c = s->dim == 3 ? s->axes[2] : 0.0;
        const double p[3] = {a * a * n[0], b * b * n[1], c * c * n[2]};
        const double q = sqrt(a * a * n[0] * n[0] + b * b * n[1] * n[1] + c * c * n[2] * n[2]);
        if (!(q > 0.0)) {
            out[0] = out[1] = out[2] = 0.0;
            return;
        }
        out[0] = p[0] / q;
        out[1] = p[1] / q;
        out[2] = p[2] / q;
        return;
    }
    if (s->nsym > 0) {
        double d = shape_dot(s->vs[0], n), bd = fabs(d);
        int best = 0, neg = d < 0.0;
        for (int i = 1; i < s->nsym; i++) {
            d = shape_dot(s->vs[i], n);
            const double a = fabs(d);
            const int up = a > bd;
            best = up ? i : best;
            neg = up ? d < 0.0 : neg;
            bd = up ? a : bd;
        }
        const double sign = neg ? -1.0 : 1.0;
        out[0] = sign * s->vs[best][0];
        out[1] = sign * s->vs[best][1];
        out[2] = sign * s->vs[best][2];
    } else {
        int best = 0;
        double bd = shape_dot(s->v[0], n);
        for (int i = 1; i < s->nv; i++) {
            const double d = shape_dot(s->v[i], n);
            if (d > bd) {
                bd = d;
                best = i;
            }
        }
        shape_copy(out, s->v[best]);
    }
    if (s->sweep > 0.0) {
        const double len = sqrt(shape_dot(n, n));
        if (len > 0.0) {
            const double f = s->sweep / len;
            out[0] = out[0] + f * n[0];
            out[1] = out[1] + f * n[1];
            out[2] = out[2] + f * n[2];
        }
    }
}

/* The support point of the shape rotated by r, along the direction n (both in the same frame);
 * dim is s->dim, an argument so that a kernel compiled for one dimension leaves out the other's
 * code (the team kernel's shape_pair_make with its DIM). */
CARLO_HD void shape_support_dim(int dim, const shape_def *s, const shape_rot *r, const double n[3], double out[3])
{
    double nb[3], p[3];
    if (dim == 2) { /* the z row and column: 0 0 1 */
        nb[0] = r->m[0][0] * n[0] + r->m[1][0] * n[1];
        nb[1] = r->m[0][1] * n[0] + r->m[1][1] * n[1];
        nb[2] = 0.0;
        shape_support_body(s, nb, p);
        out[0] = r->m[0][0] * p[0] + r->m[0][1] * p[1];
        out[1] = r->m[1][0] * p[0] + r->m[1][1] * p[1];
        out[2] = 0.0;
        return;
    }
    for (int a = 0; a < 3; a++)
        nb[a] = r->m[0][a] * n[0] + r->m[1][a] * n[1] + r->m[2][a] * n[2];
    shape_support_body(s, nb, p);
    for (int a = 0; a < 3; a++)
        out[a] = r->m[a][0] * p[0] + r->m[a][1] * p[1] + r->m[a][2] * p[2];
}

CARLO_HD void shape_support(const shape_def *s, const shape_rot *r, const double n[3], double out[3])
{
    shape_support_dim(s->dim, s, r, n, out);
}

/* A pair in the body frame of A (A's centre at the origin, unrotated): B's centre d and B's
 * rotation rb there (the world's separation and rotation turned by A's inverse rotation). The
 * test is rotation invariant, so it runs in A's frame, where A's support needs no rotation. */
typedef struct shape_pair {
    const shape_def *A, *B;
    int dim;
    double tol; /* XenoCollide's: SHAPE_MPR_TOL (R_A + R_B) */
    shape_rot rb;
    double d[3];
} shape_pair;

/* The pair of world rotations ra, rb and separation d in A's frame: ra^T d and ra^T rb. */
CARLO_HD void shape_pair_frame(int dim, const shape_rot *ra, const shape_rot *rb, const double d[3],
                               shape_pair *p)
{
    if (dim == 2) {
        p->d[0] = ra->m[0][0] * d[0] + ra->m[1][0] * d[1];
        p->d[1] = ra->m[0][1] * d[0] + ra->m[1][1] * d[1];
        p->d[2] = 0.0;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++)
                p->rb.m[i][j] = ra->m[0][i] * rb->m[0][j] + ra->m[1][i] * rb->m[1][j];
        p->rb.m[0][2] = p->rb.m[1][2] = p->rb.m[2][0] = p->rb.m[2][1] = 0.0;
        p->rb.m[2][2] = 1.0;
        return;
    }
    for (int i = 0; i < 3; i++) {
        p->d[i] = ra->m[0][i] * d[0] + ra->m[1][i] * d[1] + ra->m[2][i] * d[2];
        for (int j = 0; j < 3; j++)
            p->rb.m[i][j] = ra->m[0][i] * rb->m[0][j] + ra->m[1][i] * rb->m[1][j] + ra->m[2][i] * rb->m[2][j];
    }
}

/* The pair of shapes A (rotation ra, centre at the origin) and B (rb, centre at d), in A's frame;
 * dim is theirs (an argument: a kernel's constant). */
CARLO_HD void shape_pair_make(int dim, const shape_def *A, const shape_rot *ra, const shape_def *B,
                              const shape_rot *rb, const double d[3], shape_pair *p)
{
    p->A = A;
    p->B = B;
    p->dim = dim;
    p->tol = SHAPE_MPR_TOL * (A->R + B->R);
    shape_pair_frame(dim, ra, rb, d, p);
}

/* The support point of the Minkowski difference B - A along n (A's frame). */
CARLO_HD void shape_pair_support(const shape_pair *p, const double n[3], double out[3])
{
    double sb[3], sa[3], m[3] = {-n[0], -n[1], -n[2]};
    shape_support_dim(p->dim, p->B, &p->rb, n, sb);
    shape_support_body(p->A, m, sa);
    out[0] = p->d[0] + (sb[0] - sa[0]);
    out[1] = p->d[1] + (sb[1] - sa[1]);
    out[2] = p->d[2] + (sb[2] - sa[2]);
}

/* ---------- XenoCollide ---------- */

/* XenoCollide as a computation that stops at each support point it needs: shape_mpr_start
 * sets up the pair, then each shape_mpr_step takes the support point of B - A along m->n and
 * either decides (1 overlap, 0 none) or asks for the next one (-1, m->n set). shape_mpr_run
 * drives it to the end; the GPU's team kernel interleaves several pairs on its lanes, a lane
 * starting its next pair as soon as one ends, so that the support evaluations of all of them
 * run side by side. The arithmetic is the same either way.
 *
 * 2D: does the origin lie inside B - A? v0 = d, a point inside B - A (each shape contains its
 * centre). A ray from v0 through the origin is bracketed by a portal v1 v2 of support points
 * (phase 1), which is refined towards the boundary until the origin is found on the inner side
 * of the portal (overlap) or outside a support line (no overlap).
 * 3D: the same with a triangular portal v1 v2 v3 (Snethen's phases 1 and 2). */
enum { SHAPE_MPR_V1 = 0, SHAPE_MPR_V2 = 1, SHAPE_MPR_PORTAL = 2, SHAPE_MPR_REFINE = 3 };

typedef struct shape_mpr {
    double v1[3], v2[3], v3[3];
    double n[3];  /* the direction of the support point asked for */
    double side;  /* 2D, phase 1: the side of the ray v0 -> origin that v1 lies on */
    int stage;    /* SHAPE_MPR_*: what the support point along n is for */
    int it;       /* support points taken */
} shape_mpr;

/* 2D, phase 1: the direction of v2, across the ray from v1 (-1), or 1 when the origin lies on
 * the segment v0 v1. */
CARLO_HD int shape_mpr2_portal(const shape_pair *p, shape_mpr *m)
{
    const double o[3] = {-p->d[0], -p->d[1], 0.0};
    double a[3];
    shape_sub(m->v1, p->d, a);
    const double side = a[0] * o[1] - a[1] * o[0]; /* cross(a, o) */
    if (side == 0.0)
        return 1; /* the origin lies on the segment v0 v1, inside B - A */
    m->n[0] = side > 0.0 ? -a[1] : a[1];
    m->n[1] = side > 0.0 ? a[0] : -a[0];
    m->n[2] = 0.0;
    m->side = side;
    return -1;
}

/* 2D, phase 2: the portal's normal away from v0 (-1), or 1 when the origin is inside it. */
CARLO_HD int shape_mpr2_refine(const shape_pair *p, shape_mpr *m)
{
    double e[3], a[3];
    shape_sub(m->v2, m->v1, e);
    shape_sub(m->v1, p->d, a);
    m->n[0] = e[1];
    m->n[1] = -e[0];
    m->n[2] = 0.0;
    if (shape_dot(m->n, a) < 0.0) {
        m->n[0] = -m->n[0];
        m->n[1] = -m->n[1];
    }
    return shape_dot(m->n, m->v1) > 0.0 ? 1 : -1;
}

CARLO_HD int shape_mpr2_step(const shape_pair *p, shape_mpr *m, const double s[3], double tol)
{
    const double *v0 = p->d;
    double t[3];
    m->it++;
    if (m->stage == SHAPE_MPR_V1) {
        if (shape_dot(s, m->n) <= 0.0)
            return 0;
        shape_copy(m->v1, s);
        m->stage = SHAPE_MPR_PORTAL;
        return shape_mpr2_portal(p, m);
    }
    if (m->it > SHAPE_MPR_MAX)
        return 1;
    if (shape_dot(s, m->n) <= 0.0)
        return 0;
    if (m->stage == SHAPE_MPR_PORTAL) { /* s: v2, on the other side of the ray than v1? */
        const double o[3] = {-v0[0], -v0[1], 0.0};
        shape_sub(s, v0, t);
        const double beyond = (o[0] * t[1] - o[1] * t[0]) * m->side; /* cross(o, b), oriented */
        if (beyond == 0.0)
            return 1; /* on the segment v0 v2 */
        if (beyond > 0.0) {
            shape_copy(m->v2, s);
            m->stage = SHAPE_MPR_REFINE;
            return shape_mpr2_refine(p, m);
        }
        shape_copy(m->v1, s);
        return shape_mpr2_portal(p, m);
    }
    shape_sub(s, m->v1, t); /* phase 2: s is v3 */
    if (shape_dot(t, m->n) <= tol * sqrt(shape_dot(m->n, m->n)))
        return 0;
    /* keep the half of the portal the ray passes through */
    const double o[3] = {-v0[0], -v0[1], 0.0};
    double a[3];
    shape_sub(m->v1, v0, a);
    shape_sub(s, v0, t);
    const double so = t[0] * o[1] - t[1] * o[0], s1 = t[0] * a[1] - t[1] * a[0];
    if ((so > 0.0) == (s1 > 0.0))
        shape_copy(m->v2, s);
    else
        shape_copy(m->v1, s);
    return shape_mpr2_refine(p, m);
}

/* 3D, phase 2: the portal's normal, away from v0 (-1), or 1 when the origin is inside it. */
CARLO_HD int shape_mpr3_refine(shape_mpr *m)
{
    double a[3], b[3];
    shape_sub(m->v2, m->v1, a);
    shape_sub(m->v3, m->v1, b);
    shape_cross(a, b, m->n);
    return shape_dot(m->n, m->v1) >= 0.0 ? 1 : -1;
}

CARLO_HD int shape_mpr3_step(const shape_pair *p, shape_mpr *m, const double s[3], double tol)
{
    const double *v0 = p->d;
    double a[3], b[3], t[3];
    m->it++;
    switch (m->stage) {
    case SHAPE_MPR_V1:
        if (shape_dot(s, m->n) <= 0.0)
            return 0;
        shape_copy(m->v1, s);
        shape_cross(m->v1, v0, m->n);
        if (shape_dot(m->n, m->n) == 0.0)
            return 1; /* v1 on the line through v0 and the origin, beyond it */
        m->stage = SHAPE_MPR_V2;
        return -1;
    case SHAPE_MPR_V2:
        if (shape_dot(s, m->n) <= 0.0)
            return 0;
        shape_copy(m->v2, s);
        shape_sub(m->v1, v0, a);
        shape_sub(m->v2, v0, b);
        shape_cross(a, b, m->n);
        if (shape_dot(m->n, v0) > 0.0) { /* n towards the origin: det(v1 - v0, v2 - v0, o) >= 0 */
            shape_copy(t, m->v1);
            shape_copy(m->v1, m->v2);
            shape_copy(m->v2, t);
            m->n[0] = -m->n[0];
            m->n[1] = -m->n[1];
            m->n[2] = -m->n[2];
        }
        m->stage = SHAPE_MPR_PORTAL;
        return -1;
    case SHAPE_MPR_PORTAL: /* phase 1: a portal v1 v2 v3 whose cone from v0 holds the origin */
        if (m->it > SHAPE_MPR_MAX)
            return 1;
        if (shape_dot(s, m->n) <= 0.0)
            return 0;
        shape_copy(m->v3, s);
        shape_cross(m->v1, m->v3, t);
        if (shape_dot(t, v0) < 0.0) { /* the origin outside the face v0 v3 v1 */
            shape_copy(m->v2, m->v3);
            shape_sub(m->v1, v0, a);
            shape_sub(m->v3, v0, b);
            shape_cross(a, b, m->n);
            return -1;
        }
        shape_cross(m->v3, m->v2, t);
        if (shape_dot(t, v0) < 0.0) { /* outside the face v0 v2 v3 */
            shape_copy(m->v1, m->v3);
            shape_sub(m->v3, v0, a);
            shape_sub(m->v2, v0, b);
            shape_cross(a, b, m->n);
            return -1;
        }
        m->stage = SHAPE_MPR_REFINE;
        return shape_mpr3_refine(m);
    default: /* phase 2: s is v4 */
        if (m->it > SHAPE_MPR_MAX)
            return 1;
        if (shape_dot(s, m->n) <= 0.0)
            return 0;
        shape_sub(s, m->v3, t);
        if (shape_dot(t, m->n) <= tol * sqrt(shape_dot(m->n, m->n)))
            return 0;
        shape_cross(s, v0, t);
        if (shape_dot(m->v1, t) > 0.0) {
            if (shape_dot(m->v2, t) > 0.0)
                shape_copy(m->v1, s);
            else
                shape_copy(m->v3, s);
        } else {
            if (shape_dot(m->v3, t) > 0.0)
                shape_copy(m->v2, s);
            else
                shape_copy(m->v1, s);
        }
        return shape_mpr3_refine(m);
    }
}

/* The first support direction, -v0 (-1), or 1 when the centres coincide. */
CARLO_HD int shape_mpr_start(const shape_pair *p, shape_mpr *m)
{
    const double *v0 = p->d;
    if (v0[0] == 0.0 && v0[1] == 0.0 && (p->dim == 2 || v0[2] == 0.0))
        return 1;
    m->n[0] = -v0[0];
    m->n[1] = -v0[1];
    m->n[2] = p->dim == 2 ? 0.0 : -v0[2];
    m->side = 0.0;
    m->stage = SHAPE_MPR_V1;
    m->it = 0;
    return -1;
}

CARLO_HD int shape_mpr_step(const shape_pair *p, shape_mpr *m, const double s[3])
{
    return p->dim == 2 ? shape_mpr2_step(p, m, s, p->tol) : shape_mpr3_step(p, m, s, p->tol);
}

CARLO_HD int shape_mpr_run(const shape_pair *p)
{
    shape_mpr m = {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, 0.0, 0, 0};
    int r = shape_mpr_start(p, &m);
    while (r < 0) {
        double s[3];
        shape_pair_support(p, m.n, s);
        r = shape_mpr_step(p, &m, s);
    }
    return r;
}

/* Do shape A (centre at the origin, rotation ra) and shape B (centre at d, rotation rb)
 * overlap? Touching is not overlapping (within the tolerance above). Circumspheres apart: no;
 * inspheres overlapping: yes; otherwise XenoCollide. shape_overlap_bounds makes the first two
 * decisions (0 or 1; -1: neither), shape_overlap_xeno the third, shape_overlap all three. */
CARLO_HD int shape_overlap_bounds(const shape_def *A, const shape_def *B, const double d[3])
{
    const double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    const double Rs = A->R + B->R, rs = A->r_in + B->r_in;
    if (!(r2 < Rs * Rs))
        return 0;
    if (r2 < rs * rs)
        return 1;
    return -1;
}

/* XenoCollide alone, for a pair shape_overlap_bounds left undecided. */
CARLO_HD int shape_overlap_xeno(const shape_def *A, const shape_rot *ra, const shape_def *B,
                                const shape_rot *rb, const double d[3])
{
    shape_pair p;
    shape_pair_make(A->dim, A, ra, B, rb, d, &p);
    return shape_mpr_run(&p);
}

CARLO_HD int shape_overlap(const shape_def *A, const shape_rot *ra, const shape_def *B,
                           const shape_rot *rb, const double d[3])
{
    const int b = shape_overlap_bounds(A, B, d);
    return b >= 0 ? b : shape_overlap_xeno(A, ra, B, rb, d);
}

/* The axis-aligned bounding box of the rotated shape about its centre: lo[a] .. hi[a]. A
 * prefilter for callers that keep boxes (two boxes apart: no overlap). */
CARLO_HD void shape_aabb(const shape_def *s, const shape_rot *r, double lo[3], double hi[3])
{
    for (int a = 0; a < 3; a++) {
        double n[3] = {0.0, 0.0, 0.0}, p[3];
        if (a >= s->dim) {
            lo[a] = hi[a] = 0.0;
            continue;
        }
        n[a] = 1.0;
        shape_support(s, r, n, p);
        hi[a] = p[a];
        n[a] = -1.0;
        shape_support(s, r, n, p);
        lo[a] = p[a];
    }
}

/* ---------- trial moves ---------- */

typedef struct shape_moves {
    float delta;       /* translation: uniform in the square / cube of half-side delta */
    double rotate;     /* rotation size: 2D, uniform angle in [-rotate, rotate]; 3D, see below */
    uint32_t turn;     /* 2D: rotate in units of 2 pi / 2^32 (set from rotate by the host) */
    int moves;         /* n_M: trial moves per active, non-empty cell */
    int skew;          /* 1: a triclinic box, the cells cut in its skew coordinates */
    double tilt[3];    /* the box's xy, xz, yz (set by the host with the box) */
} shape_moves;

/* A coordinate of (-1, 1) from one word: odd multiples of 2^-24, a set symmetric under
 * negation (a move and its reverse are proposed equally often). */
CARLO_HD float shape_sym_unit(uint32_t w)
{
    return (float)(2 * (int32_t)(w >> 8) + 1 - 16777216) * (1.0f / 16777216.0f);
}

/* 2D rotation: an angle step uniform over the integers -turn .. turn. */
CARLO_HD uint32_t shape_turn_step(uint32_t r, uint32_t turn, uint64_t seed, uint64_t step,
                                  uint32_t cell, uint32_t draw)
{
    const uint32_t k = carlo_cell_below(r, 2u * turn + 1u, seed, SHAPE_PURPOSE_MOVE, step, cell, draw);
    return k - turn; /* modulo 2^32: a signed step */
}

/* 3D rotation: q' = q dq with dq = (1, rotate v / 2) normalised, v uniform in (-1, 1)^3 (dq and
 * its inverse, from -v, equally likely; right multiplication keeps the uniform measure on
 * rotations, so the proposal is symmetric). In double; stored back as float words. */
CARLO_HD void shape_quat_turn(const uint32_t q[4], double rotate, const float v[3], uint32_t out[4])
{
    const double h = 0.5 * rotate;
    double dw = 1.0, dx = h * (double)v[0], dy = h * (double)v[1], dz = h * (double)v[2];
    const double w = shape_word_float(q[0]), x = shape_word_float(q[1]), y = shape_word_float(q[2]),
                 z = shape_word_float(q[3]);
    double rw = w * dw - x * dx - y * dy - z * dz;
    double rx = w * dx + x * dw + y * dz - z * dy;
    double ry = w * dy - x * dz + y * dw + z * dx;
    double rz = w * dz + x * dy - y * dx + z * dw;
    const double len = sqrt(rw * rw + rx * rx + ry * ry + rz * rz);
    out[0] = shape_float_word((float)(rw / len));
    out[1] = shape_float_word((float)(rx / len));
    out[2] = shape_float_word((float)(ry / len));
    out[3] = shape_float_word((float)(rz / len));
}

/* Words a particle carries in the cells: its tag, then its orientation. */
CARLO_HD int shape_naux(int dim)
{
    return dim == 2 ? 2 : 5;
}

/* A separation in skew coordinates (the cells' frame in a triclinic box) as a vector:
 * x = s0 + xy s1 + xz s2, y = s1 + yz s2 (core/box.h). */
CARLO_HD void shape_skew_vector(const double tilt[3], double d[3])
{
    d[0] = d[0] + tilt[0] * d[1] + tilt[1] * d[2];
    d[1] = d[1] + tilt[2] * d[2];
}

/* Whether the shape at t (a point of cell xyz, rotation rt), which is particle `self` of the
 * cell, overlaps any other particle of that cell or of a neighbour cell. In a triclinic box
 * (skew) the cells' separations are skew coordinates, turned into vectors by the box's tilts;
 * every cell is at least a circumdiameter thick between its faces, so the neighbours hold
 * every particle within reach. */
CARLO_HD int shape_overlaps_around(const shape_def *s, const carlo_cell_grid *g, const float *pos,
                                   const uint32_t *aux, const uint32_t *count, const int xyz[3],
                                   int self, const float t[3], const shape_rot *rt, int skew,
                                   const double tilt[3])
{
    const int dim = g->dim;
    const double R2 = 4.0 * s->R * s->R;
    const int zlo = dim == 3 ? -1 : 0, zhi = dim == 3 ? 1 : 0;
    for (int oz = zlo; oz <= zhi; oz++)
        for (int oy = -1; oy <= 1; oy++)
            for (int ox = -1; ox <= 1; ox++) {
                const int off[3] = {ox, oy, oz};
                float sh[3];
                const int64_t cn = carlo_cell_neighbor(g, xyz, off, sh);
                const int own = ox == 0 && oy == 0 && oz == 0;
                int n = (int)count[cn];
                if (n > g->nmax)
                    n = g->nmax;
                for (int j = 0; j < n; j++) {
                    if (own && j == self)
                        continue;
                    double d[3] = {0.0, 0.0, 0.0};
                    for (int a = 0; a < dim; a++) /* exact: multiples of q within two cells */
                        d[a] = (double)((pos[carlo_cell_slot(g, cn, j, a)] + sh[a]) - t[a]);
                    if (skew)
                        shape_skew_vector(tilt, d);
                    if (!(d[0] * d[0] + d[1] * d[1] + d[2] * d[2] < R2))
                        continue;
                    uint32_t o[4] = {0u, 0u, 0u, 0u};
                    for (int k = 0; k < (dim == 2 ? 1 : 4); k++)
                        o[k] = aux[carlo_cell_slot(g, cn, j, 1 + k)];
                    shape_rot rj;
                    shape_rot_of(dim, o, &rj);
                    if (shape_overlap(s, rt, s, &rj, d))
                        return 1;
                }
            }
    return 0;
}

/* The draws of move m of a sub-sweep in cell `cell` holding n particles: the particle i, a
 * rotation (1) or a translation (0), the translation's unit vector u (3D rotations: their v),
 * and in 2D a rotation's angle step. A function of (seed, step, cell, m) only, so that a kernel
 * may make the draws of later moves ahead. */
typedef struct shape_draw {
    int i;
    int rotation;
    float u[3];
    uint32_t turn;
} shape_draw;

CARLO_HD shape_draw shape_move_draw(int dim, int n, const shape_moves *mv, uint64_t seed, uint64_t step,
                                    uint32_t cell, int m)
{
    const carlo_u32x4 r0 = carlo_rng(seed, SHAPE_PURPOSE_MOVE, step, cell, 2u * (uint32_t)m);
    carlo_u32x4 r1 = r0;
    if (dim == 3)
        r1 = carlo_rng(seed, SHAPE_PURPOSE_MOVE, step, cell, 2u * (uint32_t)m + 1u);
    shape_draw d;
    d.i = (int)carlo_cell_below(r0.v[0], (uint32_t)n, seed, SHAPE_PURPOSE_MOVE, step, cell,
                                0x40000000u | (uint32_t)m);
    d.rotation = (int)(r0.v[1] >> 31);
    d.u[0] = shape_sym_unit(r0.v[2]);
    d.u[1] = shape_sym_unit(r0.v[3]);
    d.u[2] = shape_sym_unit(r1.v[0]);
    d.turn = 0u;
    if (d.rotation && dim == 2)
        d.turn = shape_turn_step(r0.v[2], mv->turn, seed, step, cell, 0x80000000u | (uint32_t)m);
    return d;
}

/* Whether a particle at p (a neighbour's, in the frame of cell c of an orthorhombic grid) can
 * pass shape_overlaps_around's circumsphere test against any point of c's box [0, w]: a kernel
 * that leaves out the others for a whole sub-sweep takes the same decisions. The distances to
 * the box, b, are exact floats below every |d| of a point of it, and the rounded sums of
 * squares grow with their terms, so the test below fails wherever the kernel's does. */
CARLO_HD int shape_reaches_cell(const shape_def *s, const carlo_cell_grid *g, const float p[3])
{
    double b[3] = {0.0, 0.0, 0.0};
    for (int a = 0; a < 3; a++) /* z: 0 in 2D */
        if (a < g->dim)
            b[a] = p[a] < 0.0f ? (double)(-p[a]) : (p[a] > g->w[a] ? (double)(p[a] - g->w[a]) : 0.0);
    return b[0] * b[0] + b[1] * b[1] + b[2] * b[2] < 4.0 * s->R * s->R;
}

/* One active cell: n_M trial moves, each of a particle of the cell chosen uniformly at random
 * (every move is then balanced on its own: the cell keeps its count, since a move that would
 * leave the cell is rejected), a translation or a rotation with equal probability. Adds the
 * moves tried and accepted, translations [0, 1] and rotations [2, 3], to cnt. */
CARLO_HD void shape_cell_update(const shape_def *s, const carlo_cell_grid *g, float *pos, uint32_t *aux,
                                const uint32_t *count, const int xyz[3], shape_moves mv,
                                uint64_t seed, uint64_t step, uint64_t cnt[4])
{
    const int dim = g->dim;
    const int64_t c = carlo_cell_index(g, xyz[0], xyz[1], xyz[2]);
    const uint32_t cell = (uint32_t)c;
    int n = (int)count[c];
    if (n <= 0)
        return;
    if (n > g->nmax)
        n = g->nmax;
    for (int m = 0; m < mv.moves; m++) {
        const shape_draw dr = shape_move_draw(dim, n, &mv, seed, step, cell, m);
        const int i = dr.i, rotation = dr.rotation;
        float t[3] = {0.0f, 0.0f, 0.0f};
        uint32_t o[4] = {0u, 0u, 0u, 0u};
        for (int a = 0; a < dim; a++)
            t[a] = pos[carlo_cell_slot(g, c, i, a)];
        for (int k = 0; k < (dim == 2 ? 1 : 4); k++)
            o[k] = aux[carlo_cell_slot(g, c, i, 1 + k)];
        if (rotation) {
            if (dim == 2) {
                o[0] += dr.turn;
            } else {
                uint32_t q[4] = {o[0], o[1], o[2], o[3]};
                shape_quat_turn(q, mv.rotate, dr.u, o);
            }
            cnt[2]++;
        } else {
            int inside = 1;
            for (int a = 0; a < dim; a++) {
                t[a] = t[a] + carlo_cell_quantize(g, mv.delta * dr.u[a]);
                inside &= t[a] >= 0.0f && t[a] < g->w[a];
            }
            cnt[0]++;
            if (!inside)
                continue;
        }
        shape_rot rt;
        shape_rot_of(dim, o, &rt);
        if (shape_overlaps_around(s, g, pos, aux, count, xyz, i, t, &rt, mv.skew, mv.tilt))
            continue;
        for (int a = 0; a < dim; a++)
            pos[carlo_cell_slot(g, c, i, a)] = t[a];
        for (int k = 0; k < (dim == 2 ? 1 : 4); k++)
            aux[carlo_cell_slot(g, c, i, 1 + k)] = o[k];
        cnt[rotation ? 3 : 1]++;
    }
}

/* Whether some particle of cell xyz overlaps another particle (the check of a re-gridded
 * configuration before a box move is accepted; each pair is seen from both of its cells). */
CARLO_HD int shape_cell_overlaps(const shape_def *s, const carlo_cell_grid *g, const float *pos,
                                 const uint32_t *aux, const uint32_t *count, const int xyz[3],
                                 const shape_moves *mv)
{
    const int dim = g->dim;
    const int64_t c = carlo_cell_index(g, xyz[0], xyz[1], xyz[2]);
    int n = (int)count[c];
    if (n > g->nmax)
        n = g->nmax;
    for (int i = 0; i < n; i++) {
        float t[3] = {0.0f, 0.0f, 0.0f};
        uint32_t o[4] = {0u, 0u, 0u, 0u};
        for (int a = 0; a < dim; a++)
            t[a] = pos[carlo_cell_slot(g, c, i, a)];
        for (int k = 0; k < (dim == 2 ? 1 : 4); k++)
            o[k] = aux[carlo_cell_slot(g, c, i, 1 + k)];
        shape_rot rt;
        shape_rot_of(dim, o, &rt);
        if (shape_overlaps_around(s, g, pos, aux, count, xyz, i, t, &rt, mv->skew, mv->tilt))
            return 1;
    }
    return 0;
}

/* ---------- NPT volume moves ---------- */

/* Whether a move of the box from volume V to Vn (every centre scaled along, orientations kept)
 * passes the pressure test at beta P = pressure (u uniform in [0, 1), drawn for every move): the
 * log-volume rule min(1, exp(-beta P (Vn - V) + (N + 1) ln(Vn / V))), whose stationary measure is
 * exp(-beta P V) dV times the configurational weight. The overlap check of the scaled
 * configuration comes on top. */
CARLO_HD int shape_volume_accept(double pressure, int64_t N, double V, double Vn, double u)
{
    const double arg = -pressure * (Vn - V) + (double)(N + 1) * log(Vn / V);
    return !(arg < 0) || u < exp(arg);
}

/* The same test for a length move (ln L of one axis uniform: jacobian 1, the factor N + 1) or
 * a shear move (a tilt uniform, the volume kept up to the grid's rounding: jacobian 0). */
CARLO_HD int shape_box_accept(double pressure, int64_t N, double V, double Vn, int jacobian, double u)
{
    const double arg = -pressure * (Vn - V) + (double)(N + jacobian) * log(Vn / V);
    return !(arg < 0) || u < exp(arg);
}

#endif
