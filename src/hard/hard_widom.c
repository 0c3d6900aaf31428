/* hard_widom.c — free-volume (Widom) insertion for hard disks and spheres: the probability that
 * a test particle placed uniformly in the box overlaps nobody, P_insert, gives the excess
 * chemical potential beta mu_ex = -ln P_insert. The test is the kernels' float overlap test on
 * the cells as they are (downloaded once per call on the GPU). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/progress.h"
#include "hard/hard.h"

/* Whether the point u (local to cell xyz) overlaps a particle of its own cell or a neighbour. */
__attribute__((flatten)) static int point_overlaps(const carlo_cell_grid *g, const carlo_cell_data *d,
                                                   const int xyz[3], const float u[3], const float *tilt)
{
    const int64_t c = carlo_cell_index(g, xyz[0], xyz[1], xyz[2]);
    const int n = (int)d->count[c];
    for (int j = 0; j < n; j++) {
        float p[3] = {0.0f, 0.0f, 0.0f};
        for (int a = 0; a < g->dim; a++)
            p[a] = d->pos[carlo_cell_slot(g, c, j, a)];
        if (hard_d2_here(g->dim, u, p, tilt) < 1.0f)
            return 1;
    }
    return g->dim == 2 ? hard_overlaps_neighbors(2, HARD_NMAX_2D, g, d->pos, d->count, xyz, u, tilt)
                       : hard_overlaps_neighbors(3, HARD_NMAX_3D, g, d->pos, d->count, xyz, u, tilt);
}

/* Test point k of call `call`: uniform in the box from Philox(seed, INSERT, call, k, 0..1),
 * cut into the grid (cell and local frame, the offset rounded to the cells' quantum). */
static void test_point(const hard_system *s, uint64_t call, uint32_t k, int xyz[3], float u[3])
{
    carlo_u32x4 r0 = carlo_rng(s->seed, HARD_PURPOSE_INSERT, call, k, 0);
    carlo_u32x4 r1 = carlo_rng(s->seed, HARD_PURPOSE_INSERT, call, k, 1);
    const uint32_t w[8] = {r0.v[0], r0.v[1], r0.v[2], r0.v[3], r1.v[0], r1.v[1], r1.v[2], r1.v[3]};
    xyz[0] = xyz[1] = xyz[2] = 0;
    u[0] = u[1] = u[2] = 0.0f;
    for (int a = 0; a < s->dim; a++) {
        const double L = s->box.L[a];
        /* the offset from the grid's corner of a uniform point is itself uniform in [0, L) (in
         * skew coordinates in a triclinic box, whose map to positions keeps volumes) */
        carlo_cell_cut(&s->grid, a, carlo_u01(w[2 * a], w[2 * a + 1]) * L, &xyz[a], &u[a]);
    }
}

int hard_insert_test(hard_system *s, uint64_t n, uint64_t *free_points)
{
    *free_points = 0;
    if (carlo_sys_alive(&s->sys))
        return -1;
    if (n < 1 || n > UINT32_MAX)
        return carlo_seterr("the number of test insertions must be from 1 to %u (got %llu)",
                            (unsigned)UINT32_MAX, (unsigned long long)n);
    carlo_cell_data h;
    if (carlo_cell_data_alloc(&s->grid, &h))
        return -1;
    if (s->be->download(s, &h)) {
        carlo_cell_data_free(&h);
        s->dead |= s->device == CARLO_GPU;
        return -1;
    }
    const uint64_t call = s->icalls++;
    const uint64_t chunk = (uint64_t)1 << 16; /* Ctrl-C is looked at between chunks */
    uint64_t hits = 0;
    int stopped = 0;
    for (uint64_t k0 = 0; k0 < n && !stopped; k0 += chunk) {
        const int64_t m = (int64_t)(n - k0 < chunk ? n - k0 : chunk);
        uint64_t got = 0;
#pragma omp parallel for schedule(static) reduction(+ : got) if (m > 4096)
        for (int64_t j = 0; j < m; j++) {
            int xyz[3];
            float u[3];
            test_point(s, call, (uint32_t)(k0 + (uint64_t)j), xyz, u);
            got += !point_overlaps(&s->grid, &h, xyz, u, hard_tilt(s));
        }
        hits += got;
        stopped = carlo_interrupted != 0;
    }
    carlo_cell_data_free(&h);
    if (stopped)
        return carlo_seterr("interrupted");
    *free_points = hits;
    return 0;
}
