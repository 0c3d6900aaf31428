/* hard_plain.c — see hard_plain.h. */
#include "hard/hard_plain.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* The cells are cut in skew coordinates (core/box.h), each at least rc thick between faces. */
static int64_t cell_of(const hard_plain *p, const double x[3])
{
    double y[3] = {x[0], x[1], x[2]};
    if (!carlo_box_orthorhombic(&p->box))
        carlo_box_pos_to_skew(&p->box, x, y);
    int64_t c = 0;
    for (int a = p->dim - 1; a >= 0; a--) {
        double f = (y[a] + 0.5 * p->box.L[a]) / p->w[a];
        f -= floor(f / p->m[a]) * p->m[a];
        int k = (int)f;
        if (k >= p->m[a])
            k = p->m[a] - 1;
        if (k < 0)
            k = 0;
        c = c * p->m[a] + k;
    }
    return c;
}

int hard_plain_init(hard_plain *p, int dim, const carlo_box *b, int64_t N, const double *x,
                    double rc, int fill)
{
    memset(p, 0, sizeof *p);
    p->dim = dim;
    p->box = *b;
    p->N = N;
    p->x = x;
    int64_t cells = 1;
    double h[3];
    carlo_box_heights(b, h); /* L in an orthorhombic box */
    for (int a = 0; a < 3; a++) {
        p->m[a] = 1;
        p->w[a] = a < dim ? b->L[a] : 1.0;
        if (a >= dim)
            continue;
        double m = floor(h[a] / rc);
        if (m >= 3) {
            if (m > 4096)
                m = 4096;
            p->m[a] = (int)m;
            p->w[a] = b->L[a] / m;
        }
        cells *= p->m[a];
    }
    p->head = carlo_malloc(carlo_mulsize((size_t)cells, sizeof(int64_t)), "a neighbour list");
    p->next = p->head ? carlo_malloc(carlo_mulsize((size_t)(N ? N : 1), sizeof(int64_t)),
                                     "a neighbour list")
                      : NULL;
    if (!p->next) {
        hard_plain_free(p);
        return -1;
    }
    for (int64_t c = 0; c < cells; c++)
        p->head[c] = -1;
    if (fill)
        for (int64_t k = N - 1; k >= 0; k--)
            hard_plain_insert(p, k);
    return 0;
}

void hard_plain_free(hard_plain *p)
{
    free(p->head);
    free(p->next);
    p->head = p->next = NULL;
}

void hard_plain_insert(hard_plain *p, int64_t k)
{
    int64_t c = cell_of(p, p->x + 3 * k);
    p->next[k] = p->head[c];
    p->head[c] = k;
}

void hard_plain_around(const hard_plain *p, const double y[3], int64_t self, double rc2,
                       hard_plain_fn fn, void *ctx)
{
    int home[3] = {0, 0, 0};
    int64_t c = cell_of(p, y);
    for (int a = 0; a < p->dim; a++) {
        home[a] = (int)(c % p->m[a]);
        c /= p->m[a];
    }
    int lo[3], hi[3];
    for (int a = 0; a < 3; a++) {
        int wide = a < p->dim && p->m[a] >= 3;
        lo[a] = wide ? -1 : 0;
        hi[a] = wide ? 1 : 0;
    }
    for (int oz = lo[2]; oz <= hi[2]; oz++)
        for (int oy = lo[1]; oy <= hi[1]; oy++)
            for (int ox = lo[0]; ox <= hi[0]; ox++) {
                int off[3] = {ox, oy, oz};
                int64_t cell = 0;
                for (int a = p->dim - 1; a >= 0; a--) {
                    int k = home[a] + off[a];
                    k = k < 0 ? k + p->m[a] : (k >= p->m[a] ? k - p->m[a] : k);
                    cell = cell * p->m[a] + k;
                }
                for (int64_t j = p->head[cell]; j >= 0; j = p->next[j]) {
                    if (j == self)
                        continue;
                    double d[3] = {0, 0, 0};
                    for (int a = 0; a < p->dim; a++)
                        d[a] = p->x[3 * j + a] - y[a];
                    carlo_box_min_image(&p->box, d);
                    double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                    if (r2 < rc2)
                        fn(ctx, j, d, r2);
                }
            }
}
