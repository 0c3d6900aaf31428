/* shape_png.c — a 2D configuration of shapes as a PNG image: every particle filled with a colour
 * of its orientation (the hue circle over one period of its symmetry) and outlined, periodic
 * images wrapped, on white. For looking at a configuration; 3D shapes go to GSD viewers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/png.h"
#include "core/progress.h"
#include "shape/shape.h"

#define PI 3.14159265358979323846

typedef struct outline {
    int kind, n;
    double sweep, a, b;
    double v[SHAPE_VMAX][2]; /* the hull's vertices by angle (counter-clockwise) */
} outline;

static int by_angle(const void *p, const void *q)
{
    const double *u = p, *w = q;
    double s = atan2(u[1], u[0]), t = atan2(w[1], w[0]);
    return (s > t) - (s < t);
}

/* Signed distance from the body-frame point (x, y) to the polygon's core (< 0 inside), or for
 * an ellipse the distance in units of its smaller semi-axis along the ray (approximate). */
static double signed_distance(const outline *o, double x, double y)
{
    if (o->kind == SHAPE_ELLIPSOID) {
        const double f = sqrt((x / o->a) * (x / o->a) + (y / o->b) * (y / o->b));
        return (f - 1) * fmin(o->a, o->b);
    }
    double out = -INFINITY, near = INFINITY;
    for (int k = 0; k < o->n; k++) {
        const double *p = o->v[k], *q = o->v[(k + 1) % o->n];
        const double ex = q[0] - p[0], ey = q[1] - p[1], len = hypot(ex, ey);
        const double side = ((x - p[0]) * ey - (y - p[1]) * ex) / len; /* > 0 outside (CCW) */
        out = fmax(out, side);
        double t = ((x - p[0]) * ex + (y - p[1]) * ey) / (len * len);
        t = t < 0 ? 0 : (t > 1 ? 1 : t);
        near = fmin(near, hypot(x - p[0] - t * ex, y - p[1] - t * ey));
    }
    return out > 0 ? near : -near;
}

static void hue(double h, uint8_t rgb[3])
{
    double r = 0, g = 0, b = 0, x = 6 * (h - floor(h));
    int i = (int)x;
    double f = x - i;
    switch (i % 6) {
    case 0: r = 1, g = f; break;
    case 1: r = 1 - f, g = 1; break;
    case 2: g = 1, b = f; break;
    case 3: g = 1 - f, b = 1; break;
    case 4: r = f, b = 1; break;
    default: r = 1, b = 1 - f; break;
    }
    rgb[0] = (uint8_t)(60 + 180 * r);
    rgb[1] = (uint8_t)(60 + 180 * g);
    rgb[2] = (uint8_t)(60 + 180 * b);
}

int shape_png(shape_system *s, const char *path, int size, int period)
{
    if (s->dim != 2)
        return carlo_seterr("png draws 2D shapes (polygons, ellipses); export a 3D trajectory to GSD");
    if (size < 16 || size > 16384)
        return carlo_seterr("the image size must be from 16 to 16384 pixels (got %d)", size);
    const double Lx = s->box.L[0], Ly = s->box.L[1], scale = size / fmax(Lx, Ly);
    const int W = (int)ceil(Lx * scale), H = (int)ceil(Ly * scale);
    outline o;
    memset(&o, 0, sizeof o);
    o.kind = s->shape.kind;
    o.sweep = s->shape.sweep;
    o.a = s->shape.axes[0];
    o.b = s->shape.axes[1];
    o.n = s->shape.nv;
    for (int k = 0; k < o.n; k++) {
        o.v[k][0] = s->shape.v[k][0];
        o.v[k][1] = s->shape.v[k][1];
    }
    qsort(o.v, (size_t)o.n, sizeof o.v[0], by_angle);
    if (period <= 0)
        period = o.kind == SHAPE_ELLIPSOID ? 2 : o.n;
    double *x = carlo_malloc(carlo_mulsize((size_t)s->N, 3 * sizeof(double)), "positions");
    uint32_t *ori = x ? carlo_malloc(carlo_mulsize((size_t)s->N, 4 * sizeof(uint32_t)), "orientations") : NULL;
    uint8_t *img = ori ? carlo_malloc(carlo_mulsize((size_t)W * 3, (size_t)H), "an image") : NULL;
    if (!img || shape_state(s, x, ori)) {
        free(x);
        free(ori);
        free(img);
        return -1;
    }
    memset(img, 255, (size_t)W * (size_t)H * 3);
    const double R = s->shape.R, edge = 1.2 / scale, shift = s->box.xy * Ly * scale;
    for (int64_t k = 0; k < s->N; k++) {
        if ((k & 4095) == 0 && carlo_interrupted) {
            free(x);
            free(ori);
            free(img);
            return carlo_seterr("interrupted");
        }
        double t[4];
        shape_orient_values(2, ori + 4 * k, t);
        const double c = cos(t[0]), sn = sin(t[0]);
        uint8_t fill[3], line[3];
        hue(t[0] * period / (2 * PI), fill);
        for (int a = 0; a < 3; a++)
            line[a] = (uint8_t)(fill[a] / 3);
        /* a tilted box drawn as the rectangle Lx x Ly, which tiles the plane with the same lattice:
         * the centre's x wrapped by Lx, and a pixel beyond the top or bottom brought back by the
         * lattice vector (xy Ly, Ly) */
        const double xk = x[3 * k] - Lx * floor(x[3 * k] / Lx + 0.5);
        const double cx = (xk + 0.5 * Lx) * scale, cy = (x[3 * k + 1] + 0.5 * Ly) * scale;
        const int i0 = (int)floor(cx - R * scale) - 1, i1 = (int)ceil(cx + R * scale) + 1;
        const int j0 = (int)floor(cy - R * scale) - 1, j1 = (int)ceil(cy + R * scale) + 1;
        for (int j = j0; j <= j1; j++)
            for (int i = i0; i <= i1; i++) {
                const double dx = (i + 0.5 - cx) / scale, dy = (j + 0.5 - cy) / scale;
                const double bx = c * dx + sn * dy, by = -sn * dx + c * dy; /* into the body frame */
                const double d = signed_distance(&o, bx, by) - o.sweep;
                if (d > 0)
                    continue;
                const int nj = j >= 0 ? j / H : -((H - 1 - j) / H); /* floor(j / H) */
                const int ii = i - (int)rint(nj * shift);
                const int pi = ((ii % W) + W) % W, pj = j - nj * H;
                uint8_t *p = img + 3 * ((size_t)(H - 1 - pj) * (size_t)W + (size_t)pi); /* y up */
                memcpy(p, d > -edge ? line : fill, 3);
            }
    }
    int rc = carlo_png_write(path, W, H, img);
    free(x);
    free(ori);
    free(img);
    return rc;
}
