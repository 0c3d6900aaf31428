/* unit/shape/warp — the hard shapes' team kernel (cuda/shape_team.cuh), compiled here by the host
 * C++ compiler and run on the CPU lane by lane (tests/unit/warp_emu.h: every lane a fiber, every
 * warp intrinsic a meeting of the lanes its mask names, whose misuse fails the test; the block's
 * shared memory between guard words). For teams of 2, 4 and 8 lanes (and a list too short for
 * some cells), every sub-sweep must leave the cells and the move counts exactly as
 * shape_cell_update does. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "core/error.h"
#include "shape/shape.h"
}
#include "check.h"

#include "warp_emu.h"

#define SHAPE_SHARED_DOUBLES(name) double *name = W.smem
#include "shape_team.cuh"

/* ---------- the kernel's launch, as cuda/shape.cu makes it ---------- */

struct team_args {
    const shape_system *s;
    carlo_cell_data *d;
    int set, team, lcap;
    uint64_t step;
    uint32_t *ovf;
    unsigned long long *n;
    unsigned *novf;
};

template <int DIM, int T> static void team_body(void *p)
{
    const team_args *a = static_cast<const team_args *>(p);
    shape_team_kernel<DIM, T, 1>(a->s->shape, a->s->grid, a->d->pos, a->d->aux, a->d->count, a->set, 0,
                                 carlo_cell_set_size(&a->s->grid), a->s->mv, a->s->seed, a->step, a->lcap, a->ovf,
                                 a->n, a->novf);
}

static int team_list(const shape_system *s)
{
    const carlo_cell_grid &g = s->grid;
    const int around = g.dim == 2 ? 9 : 27;
    const double want = ceil(1.5 * around * (double)s->N / (double)g.ncells) + 16.0;
    double cap = fmin(want, (double)around * (double)g.nmax);
    cap = fmin(cap, (double)SHAPE_LIST_MAX);
    return cap < 1.0 ? 1 : (int)cap;
}

/* One sub-sweep of set `set` on d by the team kernel (teams of T lanes, lists of lcap entries),
 * then the one-thread update of the cells it handed over, as overflow_kernel does. */
static int team_subsweep(const shape_system *s, carlo_cell_data *d, int set, uint64_t step, int T, int lcap,
                         uint64_t cnt[4], int *overflows)
{
    const int64_t nset = carlo_cell_set_size(&s->grid);
    uint32_t *ovf = static_cast<uint32_t *>(calloc((size_t)nset + 1, sizeof(uint32_t)));
    unsigned long long n[4] = {0, 0, 0, 0};
    unsigned novf = 0;
    team_args a = {s, d, set, T, lcap, step, ovf, n, &novf};
    void (*body)(void *) = s->dim == 2 ? (T == 2 ? team_body<2, 2> : T == 4 ? team_body<2, 4> : team_body<2, 8>)
                                       : (T == 2 ? team_body<3, 2> : T == 4 ? team_body<3, 4> : team_body<3, 8>);
    const unsigned blocks = (unsigned)((nset + SHAPE_TEAMS - 1) / SHAPE_TEAMS);
    const int rc = emu_launch(blocks, SHAPE_TEAMS * (unsigned)T, SHAPE_TEAM_SMEM(lcap),
                              body, &a);
    for (unsigned k = 0; rc == 0 && k < novf; k++) {
        int xyz[3];
        carlo_cell_active(&s->grid, set, ovf[k], xyz);
        uint64_t c[4] = {0, 0, 0, 0};
        shape_cell_update(&s->shape, &s->grid, d->pos, d->aux, d->count, xyz, s->mv, s->seed, step, c);
        for (int q = 0; q < 4; q++)
            n[q] += c[q];
    }
    for (int q = 0; q < 4; q++)
        cnt[q] += n[q];
    *overflows += (int)novf;
    free(ovf);
    return rc;
}

static int copy_cells(const carlo_cell_grid *g, const carlo_cell_data *from, carlo_cell_data *to)
{
    if (carlo_cell_data_alloc(g, to))
        return -1;
    const size_t slots = (size_t)g->nmax * (size_t)g->ncells;
    memcpy(to->pos, from->pos, (size_t)g->dim * slots * sizeof(float));
    memcpy(to->aux, from->aux, (size_t)g->naux * slots * sizeof(uint32_t));
    memcpy(to->count, from->count, (size_t)g->ncells * sizeof(uint32_t));
    return 0;
}

static int same_cells(const carlo_cell_grid *g, const carlo_cell_data *a, const carlo_cell_data *b)
{
    const size_t slots = (size_t)g->nmax * (size_t)g->ncells;
    return memcmp(a->pos, b->pos, (size_t)g->dim * slots * sizeof(float)) == 0 &&
           memcmp(a->aux, b->aux, (size_t)g->naux * slots * sizeof(uint32_t)) == 0;
}

/* rounds sub-sweeps of s, each played by shape_cell_update and by the team kernel with teams of
 * 2, 4 and 8 lanes on copies of its cells, the system swept between them; lcap 0: the kernel's
 * own size of list. */
static void run(const char *name, shape_system *s, int rounds, int lcap)
{
    char label[96];
    if (!s) {
        printf("FAIL unit/shape/warp_%s: %s\n", name, carlo_errmsg());
        return;
    }
    const int teams[3] = {2, 4, 8};
    for (int k = 0; k < 3; k++) {
        const int T = teams[k];
        int ok = 1, overflows = 0, r = 0;
        uint64_t tried = 0, accepted = 0;
        const char *why = "";
        for (r = 0; r < rounds && ok; r++) {
            const carlo_cell_grid *g = &s->grid;
            const int cap = lcap ? lcap : team_list(s);
            carlo_cell_data a, b;
            memset(&a, 0, sizeof a);
            memset(&b, 0, sizeof b);
            ok = copy_cells(g, &s->cur, &a) == 0 && copy_cells(g, &s->cur, &b) == 0;
            const int set = (r + k) % (1 << g->dim);
            const uint64_t step = s->substeps + 1000 + (uint64_t)r;
            uint64_t ca[4] = {0, 0, 0, 0}, cb[4] = {0, 0, 0, 0};
            for (int64_t t = 0; ok && t < carlo_cell_set_size(g); t++) {
                int xyz[3];
                carlo_cell_active(g, set, t, xyz);
                shape_cell_update(&s->shape, g, a.pos, a.aux, a.count, xyz, s->mv, s->seed, step, ca);
            }
            if (ok && team_subsweep(s, &b, set, step, T, cap, cb, &overflows)) {
                ok = 0;
                why = W.fail;
            }
            if (ok && !(same_cells(g, &a, &b) && memcmp(ca, cb, sizeof ca) == 0)) {
                ok = 0;
                why = "cells or counts differ";
            }
            tried += ca[0] + ca[2];
            accepted += ca[1] + ca[3];
            carlo_cell_data_free(&a);
            carlo_cell_data_free(&b);
            if (ok && shape_sweep(s)) {
                ok = 0;
                why = carlo_errmsg();
            }
        }
        snprintf(label, sizeof label, "unit/shape/warp_%s_team%d", name, T);
        CHECK(label, ok && accepted > 0 && accepted < tried && (lcap == 0 || overflows > 0),
              "sub-sweep %d: %s (accepted %llu of %llu, %d overflows)", r, why, (unsigned long long)accepted,
              (unsigned long long)tried, overflows);
    }
    shape_destroy(s);
}

static shape_system *make(int dim, const shape_def *sd, double v1, int64_t N, double phi, const double *L,
                          const double tilt[3], shape_init init, uint64_t seed, int moves)
{
    shape_params p;
    memset(&p, 0, sizeof p);
    p.shape = sd;
    p.volume1 = v1;
    p.what = dim == 2 ? "polygons" : "polyhedra";
    p.N = N;
    if (L) {
        p.box = carlo_box_make(dim, L);
        p.box.xy = tilt[0];
        p.box.xz = tilt[1];
        p.box.yz = tilt[2];
    } else {
        shape_lattice_box(dim, N, v1, phi, &p.box);
    }
    p.seed = seed;
    p.init = init;
    p.delta = 0.1;
    p.rotate = 0.3;
    p.moves_per_cell = moves;
    return shape_create(&p);
}

int main(void)
{
    double pent[15], cube[24];
    for (int k = 0; k < 5; k++) {
        pent[3 * k] = cos(2 * 3.141592653589793 * k / 5);
        pent[3 * k + 1] = sin(2 * 3.141592653589793 * k / 5);
        pent[3 * k + 2] = 0;
    }
    for (int k = 0; k < 8; k++)
        for (int a = 0; a < 3; a++)
            cube[3 * k + a] = (k >> a & 1) ? 0.5 : -0.5;
    const double zero[3] = {0, 0, 0};
    shape_def sd;
    double v1;
    if (shape_make_poly(&sd, 2, 5, pent, 0, &v1, NULL) == 0) {
        run("pentagons_dense", make(2, &sd, v1, 900, 0.68, NULL, zero, SHAPE_INIT_LATTICE, 1, 4), 4, 0);
        run("pentagons_dilute", make(2, &sd, v1, 300, 0.3, NULL, zero, SHAPE_INIT_RANDOM, 2, 7), 3, 0);
        run("pentagons_short_list", make(2, &sd, v1, 900, 0.68, NULL, zero, SHAPE_INIT_LATTICE, 3, 4), 2, 8);
        const double L[3] = {40, 38, 0}, tilt[3] = {0.37, 0, 0};
        run("pentagons_tilted", make(2, &sd, v1, 250, 0, L, tilt, SHAPE_INIT_RANDOM, 4, 4), 3, 0);
    }
    if (shape_make_poly(&sd, 3, 8, cube, 0, &v1, NULL) == 0) {
        run("cubes", make(3, &sd, v1, 216, 0.5, NULL, zero, SHAPE_INIT_LATTICE, 5, 6), 3, 0);
        const double L[3] = {9, 9.5, 10}, tilt[3] = {0.2, -0.3, 0.45};
        run("cubes_tilted", make(3, &sd, v1, 160, 0, L, tilt, SHAPE_INIT_RANDOM, 6, 5), 2, 0);
    }
    double dod[60]; /* the dodecahedron: the cube's corners and (0, +-1/f, +-f) cyclically */
    const double f = (1.0 + sqrt(5.0)) / 2.0;
    for (int k = 0; k < 8; k++)
        for (int a = 0; a < 3; a++)
            dod[3 * k + a] = (k >> a & 1) ? 1.0 : -1.0;
    for (int k = 0; k < 12; k++) {
        const int axis = k / 4;
        double *v = dod + 3 * (8 + k);
        v[axis] = 0.0;
        v[(axis + 1) % 3] = ((k & 1) ? 1.0 : -1.0) / f;
        v[(axis + 2) % 3] = ((k & 2) ? 1.0 : -1.0) * f;
    }
    if (shape_make_poly(&sd, 3, 20, dod, 0, &v1, NULL) == 0)
        run("dodecahedra", make(3, &sd, v1, 250, 0.45, NULL, zero, SHAPE_INIT_BCC, 8, 4), 2, 0);
    const double axes[3] = {1.0, 0.6, 0.4};
    if (shape_make_ellipsoid(&sd, 3, axes, &v1) == 0)
        run("ellipsoids_short_list", make(3, &sd, v1, 300, 0.3, NULL, zero, SHAPE_INIT_RANDOM, 7, 4), 2, 20);
    return check_failed;
}
