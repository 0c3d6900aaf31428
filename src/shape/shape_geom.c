/* shape_geom.c — the geometry of a shape from its vertices, on the host: the convex hull (2D
 * monotone chain; 3D every supporting plane through three points), its area or volume and
 * centroid, the circumradius and inradius about the centroid, and the swept (sphero-) volume by
 * Steiner's formula. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "shape/shape.h"

#define PI 3.141592653589793

static double cross2(const double *o, const double *a, const double *b)
{
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
}

static int cmp_xy(const void *pa, const void *pb)
{
    const double *a = pa, *b = pb;
    if (a[0] != b[0])
        return a[0] < b[0] ? -1 : 1;
    return a[1] < b[1] ? -1 : (a[1] > b[1]);
}

/* The hull of n points (x, y, z) in counter-clockwise order into h: its count. */
static int hull2(int n, const double *v, double (*h)[3])
{
    double (*p)[3] = malloc(sizeof *p * (size_t)n);
    if (!p)
        return -1;
    memcpy(p, v, sizeof *p * (size_t)n);
    qsort(p, (size_t)n, sizeof *p, cmp_xy);
    int k = 0;
    for (int i = 0; i < n; i++) {
        while (k >= 2 && cross2(h[k - 2], h[k - 1], p[i]) <= 0)
            k--;
        memcpy(h[k++], p[i], sizeof p[i]);
    }
    for (int i = n - 2, t = k + 1; i >= 0; i--) {
        while (k >= t && cross2(h[k - 2], h[k - 1], p[i]) <= 0)
            k--;
        memcpy(h[k++], p[i], sizeof p[i]);
    }
    free(p);
    return k - 1;
}

static int poly2(shape_def *s, int nv, const double *v, double sweep, double *volume, double shift[3])
{
    double (*h)[3] = malloc(sizeof *h * (size_t)(2 * nv + 2));
    if (!h)
        return carlo_seterr("out of memory for a hull");
    for (int i = 0; i < nv; i++)
        if (!isfinite(v[3 * i]) || !isfinite(v[3 * i + 1])) {
            free(h);
            return carlo_seterr("vertex %d is not finite", i + 1);
        }
    int k = hull2(nv, v, h);
    double A = 0, cx = 0, cy = 0, P = 0;
    for (int i = 0; i < k; i++) {
        const double *a = h[i], *b = h[(i + 1) % k];
        double c = a[0] * b[1] - b[0] * a[1];
        A += c;
        cx += (a[0] + b[0]) * c;
        cy += (a[1] + b[1]) * c;
        P += hypot(b[0] - a[0], b[1] - a[1]);
    }
    A *= 0.5;
    double scale = 0;
    for (int i = 0; i < k; i++)
        scale = fmax(scale, fmax(fabs(h[i][0]), fabs(h[i][1])));
    if (k < 3 || !(A > 1e-12 * scale * scale)) {
        free(h);
        return carlo_seterr("the vertices span no area (all on a line)");
    }
    cx /= 6 * A;
    cy /= 6 * A;
    s->nv = k;
    s->R = 0;
    s->r_in = INFINITY;
    for (int i = 0; i < k; i++) {
        s->v[i][0] = h[i][0] - cx;
        s->v[i][1] = h[i][1] - cy;
        s->v[i][2] = 0;
        s->R = fmax(s->R, hypot(s->v[i][0], s->v[i][1]));
    }
    for (int i = 0; i < k; i++) { /* distance from the centroid (origin) to each edge's line */
        const double *a = s->v[i], *b = s->v[(i + 1) % k];
        double len = hypot(b[0] - a[0], b[1] - a[1]);
        s->r_in = fmin(s->r_in, (a[0] * b[1] - a[1] * b[0]) / len);
    }
    free(h);
    s->R += sweep;
    s->r_in += sweep;
    *volume = A + P * sweep + PI * sweep * sweep;
    if (shift) {
        shift[0] = cx;
        shift[1] = cy;
        shift[2] = 0;
    }
    return 0;
}

/* ---------- 3D: facets as supporting planes ---------- */

typedef struct facet {
    uint64_t mask;   /* the points on it */
    double n[3];     /* outward unit normal */
    double off;      /* n . x on the plane */
} facet;

static void sub3(const double *a, const double *b, double *c)
{
    for (int k = 0; k < 3; k++)
        c[k] = a[k] - b[k];
}

static void cross3(const double *a, const double *b, double *c)
{
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

static double dot3(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* Every plane through three points with all points on one side, each once. */
static int facets3(int n, const double *v, double eps, facet *f, int fmax)
{
    int nf = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            for (int k = j + 1; k < n; k++) {
                double a[3], b[3], c[3];
                sub3(v + 3 * j, v + 3 * i, a);
                sub3(v + 3 * k, v + 3 * i, b);
                cross3(a, b, c);
                double len = sqrt(dot3(c, c));
                if (!(len > eps * eps))
                    continue;
                for (int q = 0; q < 3; q++)
                    c[q] /= len;
                double off = dot3(c, v + 3 * i);
                int above = 0, below = 0;
                uint64_t mask = 0;
                for (int p = 0; p < n; p++) {
                    double d = dot3(c, v + 3 * p) - off;
                    if (d > eps)
                        above++;
                    else if (d < -eps)
                        below++;
                    else
                        mask |= (uint64_t)1 << p;
                }
                if (above && below)
                    continue;
                int seen = 0;
                for (int q = 0; q < nf && !seen; q++)
                    seen = f[q].mask == mask;
                if (seen || nf == fmax)
                    continue;
                if (above) { /* outward: every point below */
                    for (int q = 0; q < 3; q++)
                        c[q] = -c[q];
                    off = -off;
                }
                f[nf].mask = mask;
                memcpy(f[nf].n, c, sizeof c);
                f[nf].off = off;
                nf++;
            }
    return nf;
}

/* The facet's points in order around it (counter-clockwise seen from outside): their count. */
static int facet_ring(const facet *f, int n, const double *v, int *ring)
{
    int m = 0;
    double c[3] = {0, 0, 0};
    for (int p = 0; p < n; p++)
        if (f->mask >> p & 1) {
            ring[m++] = p;
            for (int q = 0; q < 3; q++)
                c[q] += v[3 * p + q];
        }
    for (int q = 0; q < 3; q++)
        c[q] /= m;
    double e1[3], e2[3];
    sub3(v + 3 * ring[0], c, e1);
    double l = sqrt(dot3(e1, e1));
    for (int q = 0; q < 3; q++)
        e1[q] /= l;
    cross3(f->n, e1, e2);
    double ang[SHAPE_VMAX];
    for (int i = 0; i < m; i++) {
        double d[3];
        sub3(v + 3 * ring[i], c, d);
        ang[i] = atan2(dot3(d, e2), dot3(d, e1));
    }
    for (int i = 1; i < m; i++) /* insertion sort by angle */
        for (int j = i; j > 0 && ang[j] < ang[j - 1]; j--) {
            double t = ang[j];
            ang[j] = ang[j - 1];
            ang[j - 1] = t;
            int r = ring[j];
            ring[j] = ring[j - 1];
            ring[j - 1] = r;
        }
    return m;
}

static int poly3(shape_def *s, int nv, const double *v, double sweep, double *volume, double shift[3])
{
    double scale = 0;
    for (int i = 0; i < 3 * nv; i++) {
        if (!isfinite(v[i]))
            return carlo_seterr("vertex %d is not finite", i / 3 + 1);
        scale = fmax(scale, fabs(v[i]));
    }
    const double eps = 1e-9 * (scale > 0 ? scale : 1);
    enum { FMAX = 4 * SHAPE_VMAX };
    facet *f = malloc(sizeof *f * FMAX);
    if (!f)
        return carlo_seterr("out of memory for a hull");
    int nf = facets3(nv, v, eps, f, FMAX);
    if (nf < 4) {
        free(f);
        return carlo_seterr("the vertices span no volume (all on a plane)");
    }
    /* volume and centroid: pyramids from an inner point to every facet, fanned into triangles */
    double in[3] = {0, 0, 0}, V = 0, S = 0, M = 0, cen[3] = {0, 0, 0};
    uint64_t used = 0;
    for (int q = 0; q < nf; q++)
        used |= f[q].mask;
    int nu = 0;
    for (int p = 0; p < nv; p++)
        if (used >> p & 1) {
            for (int k = 0; k < 3; k++)
                in[k] += v[3 * p + k];
            nu++;
        }
    for (int k = 0; k < 3; k++)
        in[k] /= nu;
    int ring[SHAPE_VMAX];
    for (int q = 0; q < nf; q++) {
        int m = facet_ring(&f[q], nv, v, ring);
        for (int t = 1; t + 1 < m; t++) {
            const double *a = v + 3 * ring[0], *b = v + 3 * ring[t], *c = v + 3 * ring[t + 1];
            double e1[3], e2[3], x[3], d[3];
            sub3(b, a, e1);
            sub3(c, a, e2);
            cross3(e1, e2, x);
            S += 0.5 * sqrt(dot3(x, x));
            sub3(a, in, d);
            double tv = fabs(dot3(x, d)) / 6.0; /* the tetrahedron (in, a, b, c) */
            V += tv;
            for (int k = 0; k < 3; k++)
                cen[k] += tv * (in[k] + a[k] + b[k] + c[k]) / 4.0;
        }
        /* edges of this facet: the mean-curvature term, each edge seen from both facets */
        for (int i = 0; i < m; i++) {
            int p0 = ring[i], p1 = ring[(i + 1) % m];
            uint64_t both = (uint64_t)1 << p0 | (uint64_t)1 << p1;
            for (int r = 0; r < nf; r++)
                if (r != q && (f[r].mask & both) == both) {
                    double e[3];
                    sub3(v + 3 * p1, v + 3 * p0, e);
                    double c = dot3(f[q].n, f[r].n);
                    c = c > 1 ? 1 : (c < -1 ? -1 : c);
                    M += 0.25 * sqrt(dot3(e, e)) * acos(c); /* half of L theta / 2 */
                }
        }
    }
    for (int k = 0; k < 3; k++)
        cen[k] /= V;
    s->nv = 0;
    s->R = 0;
    for (int p = 0; p < nv; p++)
        if (used >> p & 1) {
            for (int k = 0; k < 3; k++)
                s->v[s->nv][k] = v[3 * p + k] - cen[k];
            s->R = fmax(s->R, sqrt(dot3(s->v[s->nv], s->v[s->nv])));
            s->nv++;
        }
    s->r_in = INFINITY;
    for (int q = 0; q < nf; q++)
        s->r_in = fmin(s->r_in, f[q].off - dot3(f[q].n, cen));
    free(f);
    s->R += sweep;
    s->r_in += sweep;
    *volume = V + S * sweep + M * sweep * sweep + 4.0 / 3.0 * PI * sweep * sweep * sweep;
    if (shift)
        memcpy(shift, cen, sizeof cen);
    return 0;
}

void shape_find_pairs(shape_def *s)
{
    s->nsym = 0;
    if (s->kind != SHAPE_POLY || s->nv % 2 != 0)
        return;
    double scale = 0;
    for (int i = 0; i < s->nv; i++)
        for (int a = 0; a < 3; a++)
            scale = fmax(scale, fabs(s->v[i][a]));
    const double tol = 1e-12 * scale;
    int partner[SHAPE_VMAX];
    for (int i = 0; i < s->nv; i++)
        partner[i] = -1;
    for (int i = 0; i < s->nv; i++) {
        if (partner[i] >= 0)
            continue;
        for (int j = i + 1; j < s->nv && partner[i] < 0; j++)
            if (partner[j] < 0 && fabs(s->v[j][0] + s->v[i][0]) <= tol &&
                fabs(s->v[j][1] + s->v[i][1]) <= tol && fabs(s->v[j][2] + s->v[i][2]) <= tol) {
                partner[i] = j;
                partner[j] = i;
            }
        if (partner[i] < 0)
            return; /* not centrally symmetric */
    }
    int k = 0;
    for (int i = 0; i < s->nv; i++)
        if (partner[i] > i) {
            for (int a = 0; a < 3; a++) {
                s->v[partner[i]][a] = -s->v[i][a];
                s->vs[k][a] = s->v[i][a];
            }
            k++;
        }
    s->nsym = k;
}

int shape_make_poly(shape_def *s, int dim, int nv, const double *v, double sweep, double *volume,
                    double shift[3])
{
    memset(s, 0, sizeof *s);
    s->dim = dim;
    s->kind = SHAPE_POLY;
    s->sweep = sweep;
    if (dim != 2 && dim != 3)
        return carlo_seterr("a shape has 2 or 3 dimensions (got %d)", dim);
    if (nv < dim + 1 || nv > SHAPE_VMAX)
        return carlo_seterr("a %s needs %d to %d vertices (got %d)", dim == 2 ? "polygon" : "polyhedron",
                            dim + 1, SHAPE_VMAX, nv);
    if (!(sweep >= 0) || !isfinite(sweep))
        return carlo_seterr("sweep_radius must be a finite number >= 0 (got %g)", sweep);
    if (dim == 2 ? poly2(s, nv, v, sweep, volume, shift) : poly3(s, nv, v, sweep, volume, shift))
        return -1;
    shape_find_pairs(s);
    return 0;
}

int shape_make_ellipsoid(shape_def *s, int dim, const double axes[3], double *volume)
{
    memset(s, 0, sizeof *s);
    s->dim = dim;
    s->kind = SHAPE_ELLIPSOID;
    if (dim != 2 && dim != 3)
        return carlo_seterr("a shape has 2 or 3 dimensions (got %d)", dim);
    s->R = 0;
    s->r_in = INFINITY;
    for (int a = 0; a < dim; a++) {
        if (!(axes[a] > 0) || !isfinite(axes[a]))
            return carlo_seterr("semi-axis %c must be a finite number > 0 (got %g)", "abc"[a], axes[a]);
        s->axes[a] = axes[a];
        s->R = fmax(s->R, axes[a]);
        s->r_in = fmin(s->r_in, axes[a]);
    }
    *volume = dim == 2 ? PI * axes[0] * axes[1] : 4.0 / 3.0 * PI * axes[0] * axes[1] * axes[2];
    return 0;
}
