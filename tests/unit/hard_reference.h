/* hard_reference.h — the serial reference for hard disks and spheres (DESIGN.md, "Correctness
 * first"): plain single-particle Metropolis in double precision. Each trial picks a particle at
 * random, displaces it uniformly in the disk (ball) of radius d, wraps it into the periodic box
 * and accepts it when it overlaps nothing; a plain cell list (cells of width >= 1, particles
 * listed by index) finds the neighbours. Small and obvious; used by the tests only. */
#ifndef CARLO_TESTS_HARD_REFERENCE_H
#define CARLO_TESTS_HARD_REFERENCE_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "hard/hard_kernel.h"

#define REF_CELL_CAP 32

typedef struct ref_system {
    int dim;
    int64_t N;
    double L[3], d;
    double *x;         /* N x 3, in [0, L) */
    int m[3];          /* cells per axis (>= 3) */
    int64_t *cell_of;  /* per particle */
    int *count;        /* per cell */
    int64_t *member;   /* per cell, REF_CELL_CAP particle indices */
    uint64_t seed, sweeps, tried, accepted;
} ref_system;

static int64_t ref_cell(const ref_system *r, const double *p)
{
    int64_t c = 0;
    for (int a = r->dim - 1; a >= 0; a--) {
        int k = (int)(p[a] / r->L[a] * r->m[a]);
        if (k >= r->m[a])
            k = r->m[a] - 1;
        c = c * r->m[a] + k;
    }
    return c;
}

static void ref_add(ref_system *r, int64_t k)
{
    int64_t c = ref_cell(r, r->x + 3 * k);
    r->member[c * REF_CELL_CAP + r->count[c]++] = k;
    r->cell_of[k] = c;
}

static void ref_remove(ref_system *r, int64_t k)
{
    int64_t c = r->cell_of[k];
    for (int i = 0; i < r->count[c]; i++)
        if (r->member[c * REF_CELL_CAP + i] == k) {
            r->member[c * REF_CELL_CAP + i] = r->member[c * REF_CELL_CAP + --r->count[c]];
            return;
        }
}

/* A reference system from positions in box coordinates ([-L/2, L/2)). */
static int ref_init(ref_system *r, int dim, int64_t N, const double *L, const double *x0,
                    double d, uint64_t seed)
{
    memset(r, 0, sizeof *r);
    r->dim = dim;
    r->N = N;
    r->d = d;
    r->seed = seed;
    int64_t cells = 1;
    for (int a = 0; a < 3; a++) {
        r->L[a] = a < dim ? L[a] : 1.0;
        r->m[a] = a < dim ? (int)floor(L[a]) : 1;
        if (a < dim && r->m[a] < 3)
            return -1;
        cells *= r->m[a];
    }
    r->x = malloc(sizeof(double) * 3 * (size_t)N);
    r->cell_of = malloc(sizeof(int64_t) * (size_t)N);
    r->count = calloc((size_t)cells, sizeof(int));
    r->member = malloc(sizeof(int64_t) * (size_t)cells * REF_CELL_CAP);
    for (int64_t k = 0; k < N; k++) {
        for (int a = 0; a < 3; a++) {
            double v = a < dim ? x0[3 * k + a] + 0.5 * r->L[a] : 0.0;
            if (a < dim) {
                v -= floor(v / r->L[a]) * r->L[a];
                if (v >= r->L[a])
                    v = 0;
            }
            r->x[3 * k + a] = v;
        }
        ref_add(r, k);
    }
    return 0;
}

static void ref_free(ref_system *r)
{
    free(r->x);
    free(r->cell_of);
    free(r->count);
    free(r->member);
}

/* Whether point p overlaps any particle but `self` (minimum image, double precision). */
static int ref_overlaps(const ref_system *r, const double *p, int64_t self)
{
    int64_t c = ref_cell(r, p);
    int home[3] = {0, 0, 0};
    for (int a = 0; a < r->dim; a++) {
        home[a] = (int)(c % r->m[a]);
        c /= r->m[a];
    }
    int zr = r->dim == 3;
    for (int oz = -zr; oz <= zr; oz++)
        for (int oy = -1; oy <= 1; oy++)
            for (int ox = -1; ox <= 1; ox++) {
                int off[3] = {ox, oy, oz};
                int64_t cell = 0;
                for (int a = r->dim - 1; a >= 0; a--)
                    cell = cell * r->m[a] + (home[a] + off[a] + r->m[a]) % r->m[a];
                for (int i = 0; i < r->count[cell]; i++) {
                    int64_t j = r->member[cell * REF_CELL_CAP + i];
                    if (j == self)
                        continue;
                    double d2 = 0;
                    for (int a = 0; a < r->dim; a++) {
                        double dx = r->x[3 * j + a] - p[a];
                        dx -= r->L[a] * rint(dx / r->L[a]);
                        d2 += dx * dx;
                    }
                    if (d2 < 1.0)
                        return 1;
                }
            }
    return 0;
}

/* One sweep: N single-particle trials. */
static void ref_sweep(ref_system *r)
{
    for (int64_t t = 0; t < r->N; t++) {
        carlo_u32x4 q = carlo_rng(r->seed, HARD_PURPOSE_SERIAL, r->sweeps, (uint32_t)t, 0);
        int64_t k = (int64_t)(((uint64_t)q.v[0] << 32 | q.v[1]) % (uint64_t)r->N); /* bias < 1e-15 */
        double v[3] = {0, 0, 0};
        for (uint32_t attempt = 1;; attempt++) {
            carlo_u32x4 u = carlo_rng(r->seed, HARD_PURPOSE_SERIAL, r->sweeps, (uint32_t)t, attempt);
            double s2 = 0;
            for (int a = 0; a < r->dim; a++) {
                v[a] = 2.0 * carlo_u01(u.v[a], u.v[3]) - 1.0;
                s2 += v[a] * v[a];
            }
            if (s2 < 1.0)
                break;
        }
        double p[3] = {0, 0, 0};
        for (int a = 0; a < r->dim; a++) {
            p[a] = r->x[3 * k + a] + r->d * v[a];
            p[a] -= floor(p[a] / r->L[a]) * r->L[a];
            if (p[a] >= r->L[a])
                p[a] = 0;
        }
        r->tried++;
        if (ref_overlaps(r, p, k))
            continue;
        ref_remove(r, k);
        memcpy(r->x + 3 * k, p, sizeof p);
        ref_add(r, k);
        r->accepted++;
    }
    r->sweeps++;
}

#endif
