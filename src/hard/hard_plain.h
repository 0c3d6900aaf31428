/* hard_plain.h — a plain cell list over double positions in a (triclinic) box, for the
 * host-side work on snapshots: the random start, overlap reports, pressure histograms of
 * given positions and the hexatic order parameter. Small and obvious; not the MPMC cells. */
#ifndef CARLO_HARD_PLAIN_H
#define CARLO_HARD_PLAIN_H

#include <stdint.h>

#include "core/box.h"

typedef struct hard_plain {
    int dim;
    carlo_box box;
    int m[3];          /* cells per axis (1 when the box is shorter than 3 cells) */
    double w[3];
    int64_t N;
    const double *x;   /* N x 3, box coordinates */
    int64_t *head;     /* per cell: first particle, -1 */
    int64_t *next;     /* per particle */
} hard_plain;

/* A list for cutoff rc over N positions; with fill = 0 the list starts empty (hard_plain_insert). */
int hard_plain_init(hard_plain *p, int dim, const carlo_box *b, int64_t N, const double *x,
                    double rc, int fill);
void hard_plain_free(hard_plain *p);
void hard_plain_insert(hard_plain *p, int64_t k);

/* Calls fn(ctx, j, d, r2) for every listed particle j != self within sqrt(rc2) of point y
 * (d = x_j - y, minimum image). */
typedef void (*hard_plain_fn)(void *ctx, int64_t j, const double d[3], double r2);
void hard_plain_around(const hard_plain *p, const double y[3], int64_t self, double rc2,
                       hard_plain_fn fn, void *ctx);

#endif
