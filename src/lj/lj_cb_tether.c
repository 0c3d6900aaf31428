/* lj_cb_tether.c — the harmonic tether of the checkerboard algorithm (Frenkel-Ladd for
 * Lennard-Jones solids, the Einstein-molecule variant): sites, the strength lambda, the origin
 * that follows the cell shifts, and the mean squared distance from the sites. The physics of a
 * move is lj_cb_kernel.h's (lj_cb_tether_*), the same on both backends. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "lj/lj_cb.h"

/* The grid's box along a (the periodicity of the sweeps): m w, exact. */
static double grid_L(const lj_cb_system *s, int a)
{
    return (double)s->grid.m[a] * s->grid.width[a];
}

static double min_image(double x, double L)
{
    return x - L * rint(x / L);
}

/* v into [0, L). */
static double wrap(double v, double L)
{
    v = v - floor(v / L) * L;
    return v >= 0.0 && v < L ? v : 0.0;
}

const lj_tether *lj_cb_tether(const lj_cb_system *s, lj_tether *th)
{
    if (!(s->lambda > 0) || !s->sites)
        return NULL;
    th->lambda = s->lambda;
    for (int a = 0; a < 3; a++) {
        th->origin[a] = s->origin[a];
        th->L[a] = a < s->dim ? grid_L(s, a) : 1.0;
    }
    th->site = s->sites;
    return th;
}

double lj_cb_site_frame(const lj_cb_system *s, int a, int x, float u)
{
    double d = (double)x * s->grid.width[a];
    d = d + s->origin[a];
    return wrap(d + (double)u, grid_L(s, a));
}

void lj_cb_origin_shift(const lj_cb_system *s, carlo_cell_shift sh, double origin[3])
{
    if (!s->sites)
        return;
    /* the grid moves by dir d: the particles' cell coordinates by -dir d */
    const double L = grid_L(s, sh.axis);
    origin[sh.axis] = wrap(origin[sh.axis] + (double)sh.dir * (double)sh.d, L);
}

/* Translate the sites (all by one vector) so that particle 0, at p0, sits on its site. */
static void anchor(lj_cb_system *s, const double p0[3])
{
    double shift[3] = {0, 0, 0};
    for (int a = 0; a < s->dim; a++)
        shift[a] = min_image(p0[a] - s->sites[a], grid_L(s, a));
    for (uint32_t k = 0; k < s->N; k++)
        for (int a = 0; a < s->dim; a++)
            s->sites[3 * (size_t)k + a] = wrap(s->sites[3 * (size_t)k + a] + shift[a], grid_L(s, a));
    for (int a = 0; a < 3; a++) /* exactly, whatever the rounding of the shift */
        s->sites[a] = a < s->dim ? p0[a] : 0.0;
}

int lj_cb_set_sites(lj_cb_system *s, const double *x)
{
    if (carlo_sys_alive(&s->sys))
        return -1;
    const size_t bytes = carlo_mulsize((size_t)s->N, 3 * sizeof(double));
    double *now = carlo_malloc(bytes, "positions");
    if (!now)
        return -1;
    if (lj_cb_positions(s, now)) {
        free(now);
        return -1;
    }
    if (!s->sites && !(s->sites = carlo_malloc(bytes, "tether sites"))) {
        free(now);
        return -1;
    }
    for (uint32_t k = 0; k < s->N; k++)
        for (int a = 0; a < 3; a++) {
            double v = 0.0;
            if (a < s->dim)
                v = x ? wrap(x[3 * (size_t)k + a] + s->g.half[a], grid_L(s, a)) : now[3 * (size_t)k + a];
            s->sites[3 * (size_t)k + a] = v;
        }
    anchor(s, now);
    free(now);
    return s->be->sites(s) ? lj_fail(&s->lj) : 0;
}

int lj_cb_set_lambda(lj_cb_system *s, double lambda)
{
    if (carlo_sys_alive(&s->sys))
        return -1;
    if (!(lambda >= 0) || !(lambda <= LJ_LAMBDA_MAX))
        return carlo_seterr("lambda must be a number in [0, %g] (got %.17g)", LJ_LAMBDA_MAX, lambda);
    if (lambda > 0 && !(s->lambda > 0)) { /* switched on: sites now, or the old ones re-anchored */
        if (!s->sites) {
            if (lj_cb_set_sites(s, NULL))
                return -1;
        } else {
            double *now = carlo_malloc(carlo_mulsize((size_t)s->N, 3 * sizeof(double)), "positions");
            if (!now || lj_cb_positions(s, now)) {
                free(now);
                return -1;
            }
            anchor(s, now);
            free(now);
            if (s->be->sites(s))
                return lj_fail(&s->lj);
        }
    }
    s->lambda = lambda;
    return 0;
}

int lj_cb_msd_site(lj_cb_system *s, double *msd)
{
    *msd = 0.0;
    if (!s->sites)
        return 0;
    const carlo_cell_grid *g = &s->grid;
    carlo_cell_data d;
    if (lj_cb_fetch_cells(s, &d))
        return -1;
    lj_tether th;
    th.lambda = 1.0;
    for (int a = 0; a < 3; a++) {
        th.origin[a] = s->origin[a];
        th.L[a] = a < s->dim ? grid_L(s, a) : 1.0;
    }
    th.site = s->sites;
    double sum = 0.0; /* in cell order: the distances the sweeps see */
    for (int64_t c = 0; c < g->ncells; c++) {
        int xyz[3];
        carlo_cell_coords(g, c, xyz);
        for (int i = 0; i < (int)d.count[c]; i++) {
            const uint32_t tag = d.aux[carlo_cell_slot(g, c, i, 0)];
            if (tag == 0u || tag >= s->N)
                continue;
            float u[3] = {0, 0, 0};
            for (int a = 0; a < g->dim; a++)
                u[a] = d.pos[carlo_cell_slot(g, c, i, a)];
            double cc[3];
            carlo_tether_offset(g, g->dim, xyz, th.origin, th.L, 0, s->sites + 3 * (size_t)tag, cc);
            sum += carlo_tether_r2(th.L, g->dim, cc, u);
        }
    }
    carlo_cell_data_free(&d);
    *msd = sum / (double)s->N;
    return 0;
}

void lj_cb_sites_out(const lj_cb_system *s, double *out)
{
    for (uint32_t k = 0; k < s->N; k++)
        for (int a = 0; a < s->dim; a++)
            out[(size_t)s->dim * k + a] = s->sites[3 * (size_t)k + a] - s->g.half[a];
}
