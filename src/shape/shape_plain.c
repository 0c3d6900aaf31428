/* shape_plain.c — the plain bin list of shape_plain.h. */
#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "shape/shape_plain.h"

int shape_plain_init(shape_plain *p, const carlo_box *b, int64_t N, double rc, const double *x)
{
    p->dim = b->dim;
    p->box = *b;
    p->N = N;
    p->x = x;
    int64_t bins = 1;
    double h[3];
    carlo_box_heights(b, h); /* bins at least rc apart between faces; L when orthorhombic */
    p->skew = !carlo_box_orthorhombic(b);
    for (int a = 0; a < 3; a++) {
        p->m[a] = 1;
        if (a < b->dim) {
            double m = floor(h[a] / rc);
            p->m[a] = m >= 3 ? (m > 4096 ? 4096 : (int)m) : 1;
        }
        p->w[a] = a < b->dim ? b->L[a] / p->m[a] : 1.0;
        bins *= p->m[a];
    }
    p->head = carlo_malloc(carlo_mulsize((size_t)bins, sizeof(int64_t)), "a bin list");
    p->next = p->head ? carlo_malloc(carlo_mulsize((size_t)(N > 0 ? N : 1), sizeof(int64_t)), "a bin list") : NULL;
    if (!p->next) {
        free(p->head);
        p->head = NULL;
        return -1;
    }
    for (int64_t k = 0; k < bins; k++)
        p->head[k] = -1;
    return 0;
}

void shape_plain_free(shape_plain *p)
{
    free(p->head);
    free(p->next);
    p->head = p->next = NULL;
}

void shape_min_image(const carlo_box *b, double d[3])
{
    if (carlo_box_orthorhombic(b)) {
        for (int a = 0; a < b->dim; a++)
            d[a] -= b->L[a] * rint(d[a] / b->L[a]);
        return;
    }
    /* nearest in skew coordinates: the true nearest image whenever it lies closer than half
     * the box's smallest face distance (each of its skew components is then below L / 2) */
    double s[3];
    carlo_box_pos_to_skew(b, d, s);
    for (int a = 0; a < b->dim; a++)
        s[a] -= b->L[a] * rint(s[a] / b->L[a]);
    carlo_box_skew_to_pos(b, s, d);
}

static int bin_of(const shape_plain *p, const double *x, int a)
{
    double y[3] = {x[0], x[1], x[2]};
    if (p->skew)
        carlo_box_pos_to_skew(&p->box, x, y);
    double f = (y[a] + 0.5 * p->box.L[a]) / p->w[a];
    int k = (int)floor(f);
    k %= p->m[a];
    return k < 0 ? k + p->m[a] : k;
}

static int64_t bin_index(const shape_plain *p, const int c[3])
{
    return ((int64_t)c[2] * p->m[1] + c[1]) * p->m[0] + c[0];
}

void shape_plain_insert(shape_plain *p, int64_t k)
{
    int c[3] = {0, 0, 0};
    for (int a = 0; a < p->dim; a++)
        c[a] = bin_of(p, p->x + 3 * k, a);
    int64_t b = bin_index(p, c);
    p->next[k] = p->head[b];
    p->head[b] = k;
}

void shape_plain_around(const shape_plain *p, const double y[3], int64_t self, double rc,
                        shape_plain_fn fn, void *ctx)
{
    int c[3] = {0, 0, 0}, lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (int a = 0; a < p->dim; a++) {
        c[a] = bin_of(p, y, a);
        lo[a] = p->m[a] >= 3 ? -1 : 0;
        hi[a] = p->m[a] >= 3 ? 1 : 0;
    }
    const double rc2 = rc * rc;
    for (int oz = lo[2]; oz <= hi[2]; oz++)
        for (int oy = lo[1]; oy <= hi[1]; oy++)
            for (int ox = lo[0]; ox <= hi[0]; ox++) {
                int n[3] = {c[0] + ox, c[1] + oy, c[2] + oz};
                for (int a = 0; a < 3; a++)
                    n[a] = n[a] < 0 ? n[a] + p->m[a] : (n[a] >= p->m[a] ? n[a] - p->m[a] : n[a]);
                for (int64_t j = p->head[bin_index(p, n)]; j >= 0; j = p->next[j]) {
                    if (j == self)
                        continue;
                    double d[3] = {0, 0, 0};
                    for (int a = 0; a < p->dim; a++)
                        d[a] = p->x[3 * j + a] - y[a];
                    shape_min_image(&p->box, d);
                    if (d[0] * d[0] + d[1] * d[1] + d[2] * d[2] < rc2)
                        fn(ctx, j, d);
                }
            }
}

typedef struct hit_ctx {
    const shape_def *s;
    shape_rot ry;
    const uint32_t *ori;
    int64_t n, max, *hits, below;
} hit_ctx;

static void hit_one(void *v, int64_t j, const double d[3])
{
    hit_ctx *h = v;
    if (h->below >= 0 && j >= h->below)
        return;
    shape_rot rj;
    shape_rot_of(h->s->dim, h->ori + 4 * j, &rj);
    if (shape_overlap(h->s, &h->ry, h->s, &rj, d)) {
        if (h->n < h->max)
            h->hits[h->n] = j;
        h->n++;
    }
}

int64_t shape_plain_list(const shape_plain *p, const shape_def *s, const double y[3], const uint32_t *oy,
                         const uint32_t *ori, int64_t self, int64_t *hits, int64_t max, int64_t below)
{
    hit_ctx h = {s, {{{0}}}, ori, 0, max, hits, below};
    shape_rot_of(s->dim, oy, &h.ry);
    shape_plain_around(p, y, self, 2.0 * s->R, hit_one, &h);
    return h.n;
}

int shape_plain_hits(const shape_plain *p, const shape_def *s, const double y[3], const uint32_t *oy,
                     const uint32_t *ori, int64_t self)
{
    return shape_plain_list(p, s, y, oy, ori, self, NULL, 0, -1) > 0;
}
