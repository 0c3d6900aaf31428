/* unit/shape/overlap — the overlap test of hard convex shapes (src/shape/shape_kernel.h)
 * against independent reasoning written here from scratch: touching pairs built from common
 * supporting planes (vertex-vertex, vertex-face, face-face, edge-edge, rounded and smooth
 * contacts) under many rotations, moved apart and together by a relative 1e-6; random pairs
 * against a separating-axis test (polygons, polyhedra), exact distances between the cores
 * (spheropolygons, spheropolyhedra) and dense boundary sampling (ellipses, ellipsoids). Also the
 * hull geometry (areas, volumes) against closed forms. Rotations here come from libm. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/error.h"
#include "core/rng.h"
#include "shape/shape.h"

#define PI 3.141592653589793
#define PHI 1.618033988749895

static uint64_t draws;

static double uni(void) /* uniform in [0, 1) */
{
    carlo_u32x4 r = carlo_rng(2024, CARLO_PURPOSE_CORE_TEST, 77, (uint32_t)(draws >> 32), (uint32_t)draws);
    draws++;
    return carlo_u01(r.v[0], r.v[1]);
}

/* ---------- the test's own geometry ---------- */

typedef struct pose {
    uint32_t o[4];   /* the words handed to the library */
    double m[3][3];  /* the rotation, computed here */
} pose;

static float fword(uint32_t w)
{
    float f;
    memcpy(&f, &w, sizeof f);
    return f;
}

static uint32_t wordf(float f)
{
    uint32_t w;
    memcpy(&w, &f, sizeof w);
    return w;
}

static void pose_finish(int dim, pose *p)
{
    memset(p->m, 0, sizeof p->m);
    if (dim == 2) {
        double t = (double)p->o[0] * (2 * PI / 4294967296.0);
        p->m[0][0] = cos(t);
        p->m[0][1] = -sin(t);
        p->m[1][0] = sin(t);
        p->m[1][1] = cos(t);
        p->m[2][2] = 1;
        return;
    }
    double q[4];
    for (int k = 0; k < 4; k++)
        q[k] = fword(p->o[k]);
    double l = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    double w = q[0] / l, x = q[1] / l, y = q[2] / l, z = q[3] / l;
    double r[3][3] = {{w * w + x * x - y * y - z * z, 2 * (x * y - w * z), 2 * (x * z + w * y)},
                      {2 * (x * y + w * z), w * w - x * x + y * y - z * z, 2 * (y * z - w * x)},
                      {2 * (x * z - w * y), 2 * (y * z + w * x), w * w - x * x - y * y + z * z}};
    memcpy(p->m, r, sizeof r);
}

static pose pose_angle(uint32_t k)
{
    pose p;
    memset(&p, 0, sizeof p);
    p.o[0] = k;
    pose_finish(2, &p);
    return p;
}

static pose pose_quat(double w, double x, double y, double z)
{
    pose p;
    double l = sqrt(w * w + x * x + y * y + z * z);
    p.o[0] = wordf((float)(w / l));
    p.o[1] = wordf((float)(x / l));
    p.o[2] = wordf((float)(y / l));
    p.o[3] = wordf((float)(z / l));
    pose_finish(3, &p);
    return p;
}

static double gauss(void)
{
    double u = 1 - uni(), v = uni();
    return sqrt(-2 * log(u)) * cos(2 * PI * v);
}

static pose pose_random(int dim)
{
    if (dim == 2)
        return pose_angle((uint32_t)(uni() * 4294967296.0));
    return pose_quat(gauss(), gauss(), gauss(), gauss());
}

/* q1 q2 as words */
static pose pose_compose(const pose *a, const pose *b)
{
    double p[4], q[4];
    for (int k = 0; k < 4; k++) {
        p[k] = fword(a->o[k]);
        q[k] = fword(b->o[k]);
    }
    return pose_quat(p[0] * q[0] - p[1] * q[1] - p[2] * q[2] - p[3] * q[3],
                     p[0] * q[1] + p[1] * q[0] + p[2] * q[3] - p[3] * q[2],
                     p[0] * q[2] - p[1] * q[3] + p[2] * q[0] + p[3] * q[1],
                     p[0] * q[3] + p[1] * q[2] - p[2] * q[1] + p[3] * q[0]);
}

static void apply(const pose *p, const double *x, double *y)
{
    for (int a = 0; a < 3; a++)
        y[a] = p->m[a][0] * x[0] + p->m[a][1] * x[1] + p->m[a][2] * x[2];
}

static double dot(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

/* The shape's points in the world frame (centre at the origin): vertices rotated. */
static int world_vertices(const shape_def *s, const pose *p, double (*w)[3])
{
    for (int i = 0; i < s->nv; i++)
        apply(p, s->v[i], w[i]);
    return s->nv;
}

/* Support point along n (world), by brute force or the ellipsoid's closed form. */
static void world_support(const shape_def *s, const pose *p, const double *n, double *out)
{
    if (s->kind == SHAPE_ELLIPSOID) {
        double nb[3] = {0, 0, 0}, q[3];
        for (int a = 0; a < 3; a++)
            nb[a] = p->m[0][a] * n[0] + p->m[1][a] * n[1] + p->m[2][a] * n[2];
        double ax[3] = {s->axes[0], s->axes[1], s->dim == 3 ? s->axes[2] : 0};
        double den = 0;
        for (int a = 0; a < 3; a++)
            den += ax[a] * ax[a] * nb[a] * nb[a];
        den = sqrt(den);
        for (int a = 0; a < 3; a++)
            q[a] = ax[a] * ax[a] * nb[a] / den;
        apply(p, q, out);
        return;
    }
    double w[SHAPE_VMAX][3];
    int nv = world_vertices(s, p, w), best = 0;
    for (int i = 1; i < nv; i++)
        if (dot(w[i], n) > dot(w[best], n))
            best = i;
    double len = sqrt(dot(n, n));
    for (int a = 0; a < 3; a++)
        out[a] = w[best][a] + s->sweep * n[a] / len;
}

static int lib_overlap(const shape_def *A, const pose *pa, const shape_def *B, const pose *pb, const double *d)
{
    shape_rot ra, rb;
    shape_rot_of(A->dim, pa->o, &ra);
    shape_rot_of(B->dim, pb->o, &rb);
    return shape_overlap(A, &ra, B, &rb, d);
}

/* ---------- separating axes and distances ---------- */

/* The test's own facets of a vertex set (3D): every plane through three points with all others
 * on one side, as outward unit normals; and edges: point pairs sharing two facets. */
typedef struct poly3d {
    int nv, nf, ne;
    double v[SHAPE_VMAX][3];
    double fn[128][3];
    double fo[128];
    uint64_t fm[128];
    int e[256][2];
} poly3d;

static void make_poly3d(const shape_def *s, const pose *p, poly3d *P)
{
    P->nv = world_vertices(s, p, P->v);
    P->nf = P->ne = 0;
    for (int i = 0; i < P->nv; i++)
        for (int j = i + 1; j < P->nv; j++)
            for (int k = j + 1; k < P->nv; k++) {
                double a[3], b[3], c[3];
                for (int q = 0; q < 3; q++) {
                    a[q] = P->v[j][q] - P->v[i][q];
                    b[q] = P->v[k][q] - P->v[i][q];
                }
                c[0] = a[1] * b[2] - a[2] * b[1];
                c[1] = a[2] * b[0] - a[0] * b[2];
                c[2] = a[0] * b[1] - a[1] * b[0];
                double l = sqrt(dot(c, c));
                if (l < 1e-9)
                    continue;
                for (int q = 0; q < 3; q++)
                    c[q] /= l;
                double off = dot(c, P->v[i]);
                int up = 0, down = 0;
                uint64_t m = 0;
                for (int r = 0; r < P->nv; r++) {
                    double d = dot(c, P->v[r]) - off;
                    if (d > 1e-9)
                        up++;
                    else if (d < -1e-9)
                        down++;
                    else
                        m |= (uint64_t)1 << r;
                }
                if (up && down)
                    continue;
                int seen = 0;
                for (int f = 0; f < P->nf; f++)
                    seen |= P->fm[f] == m;
                if (seen)
                    continue;
                if (up) {
                    for (int q = 0; q < 3; q++)
                        c[q] = -c[q];
                    off = -off;
                }
                memcpy(P->fn[P->nf], c, sizeof c);
                P->fo[P->nf] = off;
                P->fm[P->nf++] = m;
            }
    for (int i = 0; i < P->nv; i++)
        for (int j = i + 1; j < P->nv; j++) {
            int shared = 0;
            for (int f = 0; f < P->nf; f++)
                shared += (P->fm[f] >> i & 1) && (P->fm[f] >> j & 1);
            if (shared >= 2) {
                P->e[P->ne][0] = i;
                P->e[P->ne][1] = j;
                P->ne++;
            }
        }
}

/* Gap along axis n between point sets a (at the origin) and b (shifted by d): > 0 separates. */
static double gap_along(const double (*a)[3], int na, const double (*b)[3], int nb, const double *d,
                        const double *n)
{
    double amax = -INFINITY, amin = INFINITY, bmax = -INFINITY, bmin = INFINITY;
    for (int i = 0; i < na; i++) {
        double t = dot(a[i], n);
        amax = fmax(amax, t);
        amin = fmin(amin, t);
    }
    for (int i = 0; i < nb; i++) {
        double t = dot(b[i], n) + dot(d, n);
        bmax = fmax(bmax, t);
        bmin = fmin(bmin, t);
    }
    double l = sqrt(dot(n, n));
    return fmax(bmin - amax, amin - bmax) / l;
}

/* Largest separating gap (<= 0: the cores overlap), 2D: the edge normals of both polygons. */
static double sat2(const shape_def *A, const pose *pa, const shape_def *B, const pose *pb, const double *d)
{
    double wa[SHAPE_VMAX][3], wb[SHAPE_VMAX][3];
    int na = world_vertices(A, pa, wa), nb = world_vertices(B, pb, wb);
    double best = -INFINITY;
    for (int s = 0; s < 2; s++) {
        double (*w)[3] = s ? wb : wa;
        int n = s ? nb : na;
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++) { /* every chord's normal: a superset of the edges' */
                double ax[3] = {-(w[j][1] - w[i][1]), w[j][0] - w[i][0], 0};
                best = fmax(best, gap_along((const double (*)[3])wa, na, (const double (*)[3])wb, nb, d, ax));
            }
    }
    return best;
}

static double sat3(const poly3d *A, const poly3d *B, const double *d)
{
    double best = -INFINITY;
    for (int f = 0; f < A->nf; f++)
        best = fmax(best, gap_along(A->v, A->nv, B->v, B->nv, d, A->fn[f]));
    for (int f = 0; f < B->nf; f++)
        best = fmax(best, gap_along(A->v, A->nv, B->v, B->nv, d, B->fn[f]));
    for (int i = 0; i < A->ne; i++)
        for (int j = 0; j < B->ne; j++) {
            double ea[3], eb[3], c[3];
            for (int q = 0; q < 3; q++) {
                ea[q] = A->v[A->e[i][1]][q] - A->v[A->e[i][0]][q];
                eb[q] = B->v[B->e[j][1]][q] - B->v[B->e[j][0]][q];
            }
            c[0] = ea[1] * eb[2] - ea[2] * eb[1];
            c[1] = ea[2] * eb[0] - ea[0] * eb[2];
            c[2] = ea[0] * eb[1] - ea[1] * eb[0];
            if (dot(c, c) < 1e-18)
                continue;
            best = fmax(best, gap_along(A->v, A->nv, B->v, B->nv, d, c));
        }
    return best;
}

static double point_segment(const double *p, const double *a, const double *b)
{
    double ab[3], ap[3];
    for (int q = 0; q < 3; q++) {
        ab[q] = b[q] - a[q];
        ap[q] = p[q] - a[q];
    }
    double t = dot(ap, ab) / dot(ab, ab);
    t = t < 0 ? 0 : (t > 1 ? 1 : t);
    double r[3];
    for (int q = 0; q < 3; q++)
        r[q] = ap[q] - t * ab[q];
    return sqrt(dot(r, r));
}

/* Distance between segments by ternary search on the convex function s -> dist(P(s), [c, e]). */
static double segment_segment(const double *a, const double *b, const double *c, const double *e)
{
    double lo = 0, hi = 1;
    for (int it = 0; it < 200; it++) {
        double m1 = lo + (hi - lo) / 3, m2 = hi - (hi - lo) / 3, p1[3], p2[3];
        for (int q = 0; q < 3; q++) {
            p1[q] = a[q] + m1 * (b[q] - a[q]);
            p2[q] = a[q] + m2 * (b[q] - a[q]);
        }
        if (point_segment(p1, c, e) < point_segment(p2, c, e))
            hi = m2;
        else
            lo = m1;
    }
    double p[3];
    for (int q = 0; q < 3; q++)
        p[q] = a[q] + 0.5 * (lo + hi) * (b[q] - a[q]);
    return point_segment(p, c, e);
}

/* Distance between disjoint 2D polygons: vertex to edge, both ways. */
static double dist2(const shape_def *A, const pose *pa, const shape_def *B, const pose *pb, const double *d)
{
    double wa[SHAPE_VMAX][3], wb[SHAPE_VMAX][3];
    int na = world_vertices(A, pa, wa), nb = world_vertices(B, pb, wb);
    for (int i = 0; i < nb; i++)
        for (int q = 0; q < 3; q++)
            wb[i][q] += d[q];
    double best = INFINITY;
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++) {
            best = fmin(best, point_segment(wa[i], wb[j], wb[(j + 1) % nb]));
            best = fmin(best, point_segment(wb[j], wa[i], wa[(i + 1) % na]));
        }
    return best;
}

/* Point to a facet of P (when its projection falls inside the facet; else INFINITY). */
static double point_facet(const double *x, const poly3d *P, int f)
{
    double h = dot(P->fn[f], x) - P->fo[f];
    double y[3];
    for (int q = 0; q < 3; q++)
        y[q] = x[q] - h * P->fn[f][q];
    /* inside the facet: on the inner side of every other facet's plane that meets it */
    for (int g = 0; g < P->nf; g++)
        if (g != f && dot(P->fn[g], y) - P->fo[g] > 1e-12)
            return INFINITY;
    return fabs(h);
}

static double dist3(const poly3d *A, const poly3d *B0, const double *d)
{
    poly3d B = *B0;
    for (int i = 0; i < B.nv; i++)
        for (int q = 0; q < 3; q++)
            B.v[i][q] += d[q];
    for (int f = 0; f < B.nf; f++)
        B.fo[f] += dot(B.fn[f], d);
    double best = INFINITY;
    for (int i = 0; i < A->nv; i++)
        for (int f = 0; f < B.nf; f++)
            best = fmin(best, point_facet(A->v[i], &B, f));
    for (int i = 0; i < B.nv; i++)
        for (int f = 0; f < A->nf; f++)
            best = fmin(best, point_facet(B.v[i], A, f));
    for (int i = 0; i < A->ne; i++)
        for (int j = 0; j < B.ne; j++)
            best = fmin(best, segment_segment(A->v[A->e[i][0]], A->v[A->e[i][1]], B.v[B.e[j][0]],
                                              B.v[B.e[j][1]]));
    return best;
}

/* Ellipses / ellipsoids: the smallest level x^T Q x of B's body frame over A's boundary (< 1:
 * a boundary point of A inside B), sampled on a grid and refined around the best sample. */
static double level_in(const shape_def *B, const pose *pb, const double *d, const double *x)
{
    double y[3], z[3] = {0, 0, 0};
    for (int q = 0; q < 3; q++)
        y[q] = x[q] - d[q];
    for (int a = 0; a < 3; a++)
        z[a] = pb->m[0][a] * y[0] + pb->m[1][a] * y[1] + pb->m[2][a] * y[2];
    double v = 0;
    for (int a = 0; a < B->dim; a++)
        v += z[a] * z[a] / (B->axes[a] * B->axes[a]);
    return v;
}

static void ell_point(const shape_def *A, const pose *pa, double t, double u, double *x)
{
    double b[3] = {A->axes[0] * cos(t), A->axes[1] * sin(t), 0};
    if (A->dim == 3) {
        b[0] *= sin(u);
        b[1] *= sin(u);
        b[2] = A->axes[2] * cos(u);
    }
    apply(pa, b, x);
}

static double min_level(const shape_def *A, const pose *pa, const shape_def *B, const pose *pb, const double *d)
{
    int nt = A->dim == 2 ? 4000 : 240, nu = A->dim == 2 ? 1 : 120;
    double best = INFINITY, bt = 0, bu = 0;
    for (int i = 0; i < nt; i++)
        for (int j = 0; j < nu; j++) {
            double t = 2 * PI * i / nt, u = PI * (j + 0.5) / nu, x[3];
            ell_point(A, pa, t, u, x);
            double v = level_in(B, pb, d, x);
            if (v < best) {
                best = v;
                bt = t;
                bu = u;
            }
        }
    double st = 2 * PI / nt, su = PI / nu;
    for (int round = 0; round < 6; round++) { /* zoom in around the best point */
        double ct = bt, cu = bu;
        for (int i = -10; i <= 10; i++)
            for (int j = (A->dim == 2 ? 0 : -10); j <= (A->dim == 2 ? 0 : 10); j++) {
                double t = ct + st * i / 5, u = cu + su * j / 5, x[3];
                ell_point(A, pa, t, u, x);
                double v = level_in(B, pb, d, x);
                if (v < best) {
                    best = v;
                    bt = t;
                    bu = u;
                }
            }
        st /= 5;
        su /= 5;
    }
    return best;
}

/* ---------- the shapes ---------- */

typedef struct tcase {
    const char *name;
    shape_def s;
    double volume;
    int symmetric; /* centrally symmetric: the same orientation gives parallel opposite faces */
} tcase;

static void make(tcase *t, const char *name, int dim, int nv, const double *v, double sweep, int sym)
{
    t->name = name;
    t->symmetric = sym;
    if (shape_make_poly(&t->s, dim, nv, v, sweep, &t->volume, NULL))
        printf("FAIL unit/shape/make_%s: %s\n", name, carlo_errmsg());
}

static int ncase;
static tcase cases[16];

static void build_cases(void)
{
    double pent[5 * 3], sq[4 * 3] = {-.5, -.5, 0, .5, -.5, 0, .5, .5, 0, -.5, .5, 0};
    for (int k = 0; k < 5; k++) {
        pent[3 * k] = cos(2 * PI * k / 5);
        pent[3 * k + 1] = sin(2 * PI * k / 5);
        pent[3 * k + 2] = 0;
    }
    double tri[3 * 3] = {0, 0, 0, 2, 0.3, 0, 0.4, 1.1, 0};
    double cube[8 * 3], tet[4 * 3] = {1, 1, 1, 1, -1, -1, -1, 1, -1, -1, -1, 1};
    double oct[6 * 3] = {1, 0, 0, -1, 0, 0, 0, 1, 0, 0, -1, 0, 0, 0, 1, 0, 0, -1};
    for (int k = 0; k < 8; k++)
        for (int a = 0; a < 3; a++)
            cube[3 * k + a] = (k >> a & 1) ? 0.5 : -0.5;
    double dod[20 * 3];
    int nd = 0;
    for (int k = 0; k < 8; k++, nd++)
        for (int a = 0; a < 3; a++)
            dod[3 * nd + a] = (k >> a & 1) ? 1 : -1;
    for (int k = 0; k < 4; k++) {
        double s1 = (k & 1) ? 1 : -1, s2 = (k & 2) ? 1 : -1;
        double p[3][3] = {{0, s1 / PHI, s2 * PHI}, {s1 / PHI, s2 * PHI, 0}, {s1 * PHI, 0, s2 / PHI}};
        for (int r = 0; r < 3; r++, nd++)
            memcpy(dod + 3 * nd, p[r], sizeof p[r]);
    }
    make(&cases[ncase++], "pentagon", 2, 5, pent, 0, 0);
    make(&cases[ncase++], "square", 2, 4, sq, 0, 1);
    make(&cases[ncase++], "triangle", 2, 3, tri, 0, 0);
    make(&cases[ncase++], "spheropentagon", 2, 5, pent, 0.15, 0);
    make(&cases[ncase++], "cube", 3, 8, cube, 0, 1);
    make(&cases[ncase++], "tetrahedron", 3, 4, tet, 0, 0);
    make(&cases[ncase++], "octahedron", 3, 6, oct, 0, 1);
    make(&cases[ncase++], "dodecahedron", 3, 20, dod, 0, 1);
    make(&cases[ncase++], "spherocube", 3, 8, cube, 0.2, 1);
    double ax2[3] = {1.0, 0.35, 0}, ax3[3] = {1.0, 0.6, 0.3};
    tcase *e = &cases[ncase++];
    e->name = "ellipse";
    shape_make_ellipsoid(&e->s, 2, ax2, &e->volume);
    e = &cases[ncase++];
    e->name = "ellipsoid";
    shape_make_ellipsoid(&e->s, 3, ax3, &e->volume);
}

static tcase *find(const char *name)
{
    for (int i = 0; i < ncase; i++)
        if (strcmp(cases[i].name, name) == 0)
            return &cases[i];
    return NULL;
}

/* ---------- checks ---------- */

static void check_geometry(void)
{
    const double r = 0.15, rc = 0.2;
    struct {
        const char *name;
        double want;
    } g[] = {
        {"pentagon", 2.5 * sin(2 * PI / 5)},
        {"square", 1},
        {"triangle", 0.5 * fabs(2 * 1.1 - 0.3 * 0.4)},
        {"spheropentagon", 2.5 * sin(2 * PI / 5) + 10 * sin(PI / 5) * r + PI * r * r},
        {"cube", 1},
        {"tetrahedron", 8.0 / 3.0},
        {"octahedron", 4.0 / 3.0},
        {"dodecahedron", (15 + 7 * sqrt(5.0)) / 4 * pow(2 / PHI, 3)},
        {"spherocube", 1 + 6 * rc + 3 * PI * rc * rc + 4.0 / 3.0 * PI * rc * rc * rc},
        {"ellipse", PI * 0.35},
        {"ellipsoid", 4.0 / 3.0 * PI * 0.18},
    };
    for (size_t k = 0; k < sizeof g / sizeof g[0]; k++) {
        tcase *t = find(g[k].name);
        char name[96];
        snprintf(name, sizeof name, "unit/shape/volume_%s", g[k].name);
        CHECK(name, t && fabs(t->volume - g[k].want) < 1e-12 * g[k].want, "got %.15g, want %.15g",
              t ? t->volume : NAN, g[k].want);
    }
    /* the inradius and circumradius of the unit cube and the pentagon */
    tcase *c = find("cube"), *p = find("pentagon");
    CHECK("unit/shape/radii_cube", fabs(c->s.R - sqrt(0.75)) < 1e-14 && fabs(c->s.r_in - 0.5) < 1e-14,
          "R %.17g r_in %.17g", c->s.R, c->s.r_in);
    CHECK("unit/shape/radii_pentagon", fabs(p->s.R - 1) < 1e-14 && fabs(p->s.r_in - cos(PI / 5)) < 1e-14,
          "R %.17g r_in %.17g", p->s.R, p->s.r_in);
    /* the library's quadrant-and-polynomial sin/cos against libm */
    double worst = 0;
    for (int k = 0; k < 100000; k++) {
        uint32_t w = (uint32_t)(uni() * 4294967296.0);
        double s, co;
        long double t = (long double)w * (6.283185307179586476925286766559L / 4294967296.0L);
        shape_sincos_turn(w, &s, &co);
        worst = fmax(worst, (double)fmaxl(fabsl(s - sinl(t)), fabsl(co - cosl(t))));
    }
    /* a few roundings of terms below 1 in double: within 1e-15 */
    CHECK("unit/shape/sincos_turn", worst < 1e-15, "largest error %.3g", worst);
}

/* One touching configuration: B placed so that its support point along -n meets A's along n;
 * d scaled by 1 + 1e-6 must separate them, by 1 - 1e-6 make them overlap. */
static int touch_ok(const tcase *A, const pose *pa, const tcase *B, const pose *pb, const double *n,
                    int *bad_apart, int *bad_together)
{
    double sa[3], sb[3], m[3] = {-n[0], -n[1], -n[2]}, d[3], d1[3], d2[3];
    world_support(&A->s, pa, n, sa);
    world_support(&B->s, pb, m, sb);
    for (int q = 0; q < 3; q++) {
        d[q] = sa[q] - sb[q];
        d1[q] = d[q] * (1 + 1e-6);
        d2[q] = d[q] * (1 - 1e-6);
    }
    int apart = lib_overlap(&A->s, pa, &B->s, pb, d1);
    int together = lib_overlap(&A->s, pa, &B->s, pb, d2);
    *bad_apart += apart != 0;
    *bad_together += together != 1;
    return apart == 0 && together == 1;
}

static void random_unit(int dim, double *n)
{
    do {
        for (int a = 0; a < 3; a++)
            n[a] = a < dim ? 2 * uni() - 1 : 0;
    } while (dot(n, n) > 1 || dot(n, n) < 1e-4);
    double l = sqrt(dot(n, n));
    for (int a = 0; a < 3; a++)
        n[a] /= l;
}

/* Outward normal of a face (2D: edge) of the posed shape, chosen by index. */
static void face_normal(const tcase *t, const pose *p, int which, double *n)
{
    int dim = t->s.dim;
    if (dim == 2) {
        int nv = t->s.nv, i = which % nv;
        const double *a = t->s.v[i], *b = t->s.v[(i + 1) % nv];
        double nb[3] = {b[1] - a[1], -(b[0] - a[0]), 0}; /* counter-clockwise hull: outward */
        apply(p, nb, n);
    } else {
        poly3d P;
        pose id = pose_quat(1, 0, 0, 0);
        make_poly3d(&t->s, &id, &P);
        apply(p, P.fn[which % P.nf], n);
    }
    double l = sqrt(dot(n, n));
    for (int a = 0; a < 3; a++)
        n[a] /= l;
}

static void check_touching(tcase *t)
{
    const int dim = t->s.dim, is_poly = t->s.kind == SHAPE_POLY;
    int bad_a = 0, bad_t = 0, total = 0;
    /* generic directions: vertex-vertex for polytopes, smooth contacts otherwise */
    for (int k = 0; k < 200; k++) {
        pose pa = pose_random(dim), pb = pose_random(dim);
        double n[3];
        random_unit(dim, n);
        touch_ok(t, &pa, t, &pb, n, &bad_a, &bad_t);
        total++;
    }
    if (is_poly) {
        /* a face normal of A: vertex-face (B at random), face-face (B turned to face it) */
        for (int k = 0; k < 100; k++) {
            pose pa = pose_random(dim), pb = pose_random(dim);
            double n[3];
            face_normal(t, &pa, k, n);
            touch_ok(t, &pa, t, &pb, n, &bad_a, &bad_t);
            total++;
            if (dim == 2) { /* B's face j turned against A's face k */
                int nv = t->s.nv, j = (k * 7 + 3) % nv;
                const double *a = t->s.v[j], *b = t->s.v[(j + 1) % nv];
                double ang_b = atan2(-(b[0] - a[0]), b[1] - a[1]);
                double ang_n = atan2(n[1], n[0]) + PI;
                double turn = fmod(ang_n - ang_b + 4 * PI, 2 * PI) / (2 * PI);
                pose pf = pose_angle((uint32_t)llround(turn * 4294967296.0));
                touch_ok(t, &pa, t, &pf, n, &bad_a, &bad_t);
                total++;
            } else if (t->symmetric) { /* the same orientation: the opposite face is parallel */
                touch_ok(t, &pa, t, &pa, n, &bad_a, &bad_t);
                total++;
            }
        }
    }
    if (dim == 3 && is_poly && t->symmetric) {
        /* edge-edge: A turned 45 degrees about z (an edge towards +x), B 45 degrees about y (an
         * edge towards -x, crossing A's), the pair turned as a whole */
        const double c = cos(PI / 8), s = sin(PI / 8);
        pose a0 = pose_quat(c, 0, 0, s), b0 = pose_quat(c, 0, s, 0);
        for (int k = 0; k < 100; k++) {
            pose Q = pose_random(3);
            pose pa = pose_compose(&Q, &a0), pb = pose_compose(&Q, &b0);
            double x[3] = {1, 0, 0}, n[3];
            apply(&Q, x, n);
            if (strcmp(t->name, "cube") == 0 || strcmp(t->name, "spherocube") == 0) {
                touch_ok(t, &pa, t, &pb, n, &bad_a, &bad_t);
                total++;
            }
        }
    }
    char name[96];
    snprintf(name, sizeof name, "unit/shape/touching_%s", t->name);
    CHECK(name, bad_a == 0 && bad_t == 0 && total >= 200,
          "%d of %d pairs moved apart by 1e-6 overlap, %d moved together do not", bad_a, total, bad_t);
}

/* Random pairs at centre distances between the inradii and the circumradii. */
static void check_random(tcase *t, int count)
{
    const int dim = t->s.dim;
    int wrong = 0, over = 0, apart = 0, skipped = 0;
    double worst_gap = 0;
    for (int k = 0; k < count; k++) {
        pose pa = pose_random(dim), pb = pose_random(dim);
        double n[3], d[3];
        random_unit(dim, n);
        double r = 2 * t->s.r_in * 0.9 + uni() * (2 * t->s.R - 2 * t->s.r_in * 0.9);
        for (int a = 0; a < 3; a++)
            d[a] = r * n[a];
        int want;
        if (t->s.kind == SHAPE_ELLIPSOID) {
            double l1 = min_level(&t->s, &pa, &t->s, &pb, d);
            double m[3] = {-d[0], -d[1], -d[2]};
            double l2 = min_level(&t->s, &pb, &t->s, &pa, m);
            double l = fmin(l1, l2);
            if (fabs(l - 1) < 1e-4) {
                skipped++;
                continue;
            }
            want = l < 1;
        } else if (dim == 2) {
            double gap = sat2(&t->s, &pa, &t->s, &pb, d);
            if (t->s.sweep > 0 && gap > 0)
                gap = dist2(&t->s, &pa, &t->s, &pb, d) - 2 * t->s.sweep;
            else if (t->s.sweep > 0)
                gap = -1;
            want = gap < 0;
            worst_gap = fmax(worst_gap, fabs(gap) < 1e-9 ? 1 : 0);
        } else {
            poly3d A, B;
            make_poly3d(&t->s, &pa, &A);
            make_poly3d(&t->s, &pb, &B);
            double gap = sat3(&A, &B, d);
            if (t->s.sweep > 0)
                gap = gap > 0 ? dist3(&A, &B, d) - 2 * t->s.sweep : -1;
            if (fabs(gap) < 1e-9) {
                skipped++;
                continue;
            }
            want = gap < 0;
        }
        int got = lib_overlap(&t->s, &pa, &t->s, &pb, d);
        wrong += got != want;
        over += want;
        apart += !want;
    }
    (void)worst_gap;
    char name[96];
    snprintf(name, sizeof name, "unit/shape/random_%s", t->name);
    CHECK(name, wrong == 0 && over >= count / 10 && apart >= count / 10 && skipped < count / 20,
          "%d of %d wrong (%d overlapping, %d apart, %d too close to call)", wrong, count, over,
          apart, skipped);
}

/* Mixed pairs (different shapes, e.g. a cube and an octahedron) and the symmetry of the test. */
static void check_mixed(void)
{
    tcase *a = find("cube"), *b = find("octahedron");
    int wrong = 0, asym = 0, over = 0;
    for (int k = 0; k < 300; k++) {
        pose pa = pose_random(3), pb = pose_random(3);
        double n[3], d[3], m[3];
        random_unit(3, n);
        double r = (a->s.r_in + b->s.r_in) * 0.9 + uni() * (a->s.R + b->s.R - (a->s.r_in + b->s.r_in) * 0.9);
        for (int q = 0; q < 3; q++) {
            d[q] = r * n[q];
            m[q] = -d[q];
        }
        poly3d A, B;
        make_poly3d(&a->s, &pa, &A);
        make_poly3d(&b->s, &pb, &B);
        double gap = sat3(&A, &B, d);
        if (fabs(gap) < 1e-9)
            continue;
        int want = gap < 0;
        int got = lib_overlap(&a->s, &pa, &b->s, &pb, d), back = lib_overlap(&b->s, &pb, &a->s, &pa, m);
        wrong += got != want;
        asym += got != back;
        over += want;
    }
    CHECK("unit/shape/random_cube_octahedron", wrong == 0 && asym == 0 && over > 30 && over < 270,
          "%d wrong, %d asymmetric, %d of 300 overlapping", wrong, asym, over);
}

/* Far apart (beyond the circumspheres) and concentric pairs, and the bounding box. */
static void check_prefilters(void)
{
    int wrong = 0;
    for (int i = 0; i < ncase; i++) {
        tcase *t = &cases[i];
        for (int k = 0; k < 50; k++) {
            pose pa = pose_random(t->s.dim), pb = pose_random(t->s.dim);
            double n[3], d[3], z[3] = {0, 0, 0};
            random_unit(t->s.dim, n);
            for (int a = 0; a < 3; a++)
                d[a] = 2 * t->s.R * (1 + 1e-9) * n[a];
            wrong += lib_overlap(&t->s, &pa, &t->s, &pb, d) != 0;
            wrong += lib_overlap(&t->s, &pa, &t->s, &pb, z) != 1;
            /* the bounding box holds every support point */
            shape_rot r;
            shape_rot_of(t->s.dim, pa.o, &r);
            double lo[3], hi[3], p[3];
            shape_aabb(&t->s, &r, lo, hi);
            for (int a = 0; a < t->s.dim; a++) {
                double e[3] = {0, 0, 0};
                e[a] = 1;
                world_support(&t->s, &pa, e, p);
                wrong += fabs(p[a] - hi[a]) > 1e-12;
                e[a] = -1;
                world_support(&t->s, &pa, e, p);
                wrong += fabs(p[a] - lo[a]) > 1e-12;
            }
        }
    }
    CHECK("unit/shape/prefilters", wrong == 0, "%d wrong answers", wrong);
}

/* The support function of a centrally symmetric shape searches its pairs (shape_find_pairs):
 * every pair found where the shape has one, none where it has not, and for random directions
 * (and the axes, where vertices tie) a vertex of the shape whose dot product is exactly the
 * largest of all of its vertices'. */
static void check_pairs(void)
{
    for (int i = 0; i < ncase; i++) {
        const tcase *t = &cases[i];
        if (t->s.kind != SHAPE_POLY)
            continue;
        char name[96];
        snprintf(name, sizeof name, "unit/shape/pairs_%s", t->name);
        shape_def s = t->s;
        s.sweep = 0; /* the vertex search alone */
        const int want = t->symmetric ? s.nv / 2 : 0;
        int bad = 0;
        for (int k = 0; k < 20000 && s.nsym == want; k++) {
            double n[3] = {0, 0, 0}, out[3];
            if (k < 6)
                n[k % s.dim] = k < 3 ? 1 : -1;
            else
                random_unit(s.dim, n);
            shape_support_body(&s, n, out);
            double best = -INFINITY;
            int is_vertex = 0;
            for (int v = 0; v < s.nv; v++) {
                best = fmax(best, dot(s.v[v], n));
                is_vertex |= s.v[v][0] == out[0] && s.v[v][1] == out[1] && s.v[v][2] == out[2];
            }
            bad += !is_vertex || dot(out, n) != best;
        }
        CHECK(name, s.nsym == want && bad == 0, "%d pairs (want %d), %d wrong support points of 20000", s.nsym,
              want, bad);
    }
}

int main(void)
{
    build_cases();
    check_geometry();
    check_pairs();
    for (int i = 0; i < ncase; i++)
        check_touching(&cases[i]);
    for (int i = 0; i < ncase; i++)
        check_random(&cases[i], cases[i].s.kind == SHAPE_ELLIPSOID ? 200 : 400);
    check_mixed();
    check_prefilters();
    return check_failed;
}
