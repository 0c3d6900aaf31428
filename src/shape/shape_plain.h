/* shape_plain.h — a plain bin list over double positions in a periodic box (triclinic boxes
 * binned in their skew coordinates, box.h), for the
 * host-side work on configurations of shapes: the random start, overlap reports and the
 * observables. Small and obvious; not the checkerboard cells. */
#ifndef CARLO_SHAPE_PLAIN_H
#define CARLO_SHAPE_PLAIN_H

#include <stdint.h>

#include "core/box.h"
#include "shape/shape_kernel.h"

typedef struct shape_plain {
    int dim;
    carlo_box box;
    int skew;          /* 1: a triclinic box, binned in its skew coordinates */
    int m[3];          /* bins per axis (1 or 2 when the box is shorter than 3 bins) */
    double w[3];
    int64_t N;
    const double *x;   /* N x 3, box coordinates */
    int64_t *head;     /* per bin: first particle, -1 */
    int64_t *next;     /* per particle */
} shape_plain;

/* The nearest periodic image of a separation d (exact for separations below half the box's
 * smallest distance between faces). */
void shape_min_image(const carlo_box *b, double d[3]);
/* An empty list for pairs closer than rc among the N positions x (shape_plain_insert adds). */
int shape_plain_init(shape_plain *p, const carlo_box *b, int64_t N, double rc, const double *x);
void shape_plain_free(shape_plain *p);
void shape_plain_insert(shape_plain *p, int64_t k);
/* Every listed particle j != self whose centre is within rc of y: fn(ctx, j, d = x_j - y). */
typedef void (*shape_plain_fn)(void *ctx, int64_t j, const double d[3]);
void shape_plain_around(const shape_plain *p, const double y[3], int64_t self, double rc,
                        shape_plain_fn fn, void *ctx);
/* The listed particles (those below `below` alone, unless it is negative) that the shape at y
 * (orientation oy) overlaps (orientations ori by particle): their count, the first max of them
 * into hits. */
int64_t shape_plain_list(const shape_plain *p, const shape_def *s, const double y[3], const uint32_t *oy,
                         const uint32_t *ori, int64_t self, int64_t *hits, int64_t max, int64_t below);
int shape_plain_hits(const shape_plain *p, const shape_def *s, const double y[3], const uint32_t *oy,
                     const uint32_t *ori, int64_t self);

#endif
