/* lj_cb_cpu.c — the CPU backend of the checkerboard algorithm (lj_cb.h): the active cells of a
 * set in parallel with OpenMP, each cell's sub-sweep by lj_cb_cell_subsweep (lj_cb_sweep.c),
 * the cell shift into a second buffer, the cells grown when a shift overfills one. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "lj/lj_cb.h"

typedef struct cpu_impl {
    carlo_cell_data cur, tmp; /* the cells and the shift's second buffer */
    double *acc_u, *acc_w;    /* per-cell sums of the accepted changes */
} cpu_impl;

static cpu_impl *impl(lj_cb_system *s) { return s->impl; }

static int cpu_create(lj_cb_system *s)
{
    s->impl = carlo_calloc(1, sizeof(cpu_impl), "the Lennard-Jones CPU backend");
    return s->impl ? 0 : -1; /* the cells come with upload */
}

static void cpu_destroy(lj_cb_system *s)
{
    cpu_impl *im = impl(s);
    if (!im)
        return;
    carlo_cell_data_free(&im->cur);
    carlo_cell_data_free(&im->tmp);
    free(im->acc_u);
    free(im->acc_w);
    free(im);
    s->impl = NULL;
}

static void copy_cells(const carlo_cell_grid *g, const carlo_cell_data *src, const carlo_cell_data *dst)
{
    memcpy(dst->pos, src->pos, carlo_cells_pos_len(g) * sizeof(float));
    memcpy(dst->aux, src->aux, carlo_cells_aux_len(g) * sizeof(uint32_t));
    memcpy(dst->count, src->count, (size_t)g->ncells * sizeof(uint32_t));
}

static int cpu_upload(lj_cb_system *s, const carlo_cell_data *cells, const double *acc_u,
                      const double *acc_w)
{
    cpu_impl *im = impl(s);
    const carlo_cell_grid *g = &s->grid;
    carlo_cell_data_free(&im->cur);
    carlo_cell_data_free(&im->tmp);
    free(im->acc_u);
    free(im->acc_w);
    im->acc_w = NULL;
    im->acc_u = carlo_malloc(carlo_mulsize((size_t)g->ncells, sizeof(double)), "per-cell sums");
    im->acc_w = im->acc_u ? carlo_malloc(carlo_mulsize((size_t)g->ncells, sizeof(double)), "per-cell sums") : NULL;
    if (!im->acc_w || carlo_cell_data_alloc(g, &im->cur) || carlo_cell_data_alloc(g, &im->tmp))
        return -1;
    copy_cells(g, cells, &im->cur);
    memcpy(im->acc_u, acc_u, (size_t)g->ncells * sizeof(double));
    memcpy(im->acc_w, acc_w, (size_t)g->ncells * sizeof(double));
    return 0;
}

static int cpu_download(lj_cb_system *s, const carlo_cell_data *cells, double *acc_u, double *acc_w)
{
    cpu_impl *im = impl(s);
    const carlo_cell_grid *g = &s->grid;
    if (cells)
        copy_cells(g, &im->cur, cells);
    if (acc_u)
        memcpy(acc_u, im->acc_u, (size_t)g->ncells * sizeof(double));
    if (acc_w)
        memcpy(acc_w, im->acc_w, (size_t)g->ncells * sizeof(double));
    return 0;
}

/* Twice the room in every cell, the same particles in the same slots. */
static int cpu_grow(lj_cb_system *s)
{
    cpu_impl *im = impl(s);
    carlo_cell_grid *g = &s->grid;
    int nmax = g->nmax * 2 > CARLO_CELL_NMAX_LIMIT ? CARLO_CELL_NMAX_LIMIT : g->nmax * 2;
    if (nmax == g->nmax)
        return carlo_seterr("a cell holds more than %d particles", CARLO_CELL_NMAX_LIMIT);
    carlo_cell_data cur, tmp;
    if (lj_cb_grow(g, &im->cur, nmax, &cur))
        return -1;
    carlo_cell_grid ng = *g;
    ng.nmax = nmax;
    if (carlo_cell_data_alloc(&ng, &tmp)) {
        carlo_cell_data_free(&cur);
        return -1;
    }
    carlo_cell_data_free(&im->cur);
    carlo_cell_data_free(&im->tmp);
    im->cur = cur;
    im->tmp = tmp;
    g->nmax = nmax;
    return 0;
}

/* The cell shift into the second buffer; 0, or -1 when a cell overflowed. Small grids shift
 * serially: a parallel region per sweep costs more than it saves there. */
static int shift_cells(const carlo_cell_grid *g, const carlo_cell_data *src,
                       const carlo_cell_data *dst, carlo_cell_shift sh)
{
    if (g->ncells >= 4096)
        return carlo_cells_shift_host(g, src, dst, sh);
    int over = 0;
    for (int64_t c = 0; c < g->ncells; c++) {
        int xyz[3];
        carlo_cell_coords(g, c, xyz);
        over |= carlo_cell_shift_gather(g, src, dst, xyz, sh) > g->nmax;
    }
    return over ? carlo_seterr("a cell overflowed its %d slots in the cell shift", g->nmax) : 0;
}

/* The sub-sweep of set `set` with RNG step `step`: the number of moves accepted. */
static uint64_t one_set(lj_cb_system *s, cpu_impl *im, int set, uint64_t step)
{
    const carlo_cell_grid *g = &s->grid;
    const int64_t size = carlo_cell_set_size(g);
    lj_tether tt;
    const lj_tether *th = lj_cb_tether(s, &tt);
    uint64_t accepted = 0;
#pragma omp parallel for schedule(dynamic, 4) reduction(+ : accepted) if (size >= 256)
    for (int64_t t = 0; t < size; t++) {
        int xyz[3];
        carlo_cell_active(g, set, t, xyz);
        int64_t c = carlo_cell_index(g, xyz[0], xyz[1], xyz[2]);
        double du, dw;
        accepted += lj_cb_cell_subsweep(s, &im->cur, c, step, th, &du, &dw);
        im->acc_u[c] = im->acc_u[c] + du;
        im->acc_w[c] = im->acc_w[c] + dw;
    }
    return accepted;
}

/* The shift after sweep s->step, growing the cells until it fits; then the next sweep. */
static int shift(lj_cb_system *s, cpu_impl *im)
{
    carlo_cell_shift sh = lj_cb_shift(s, s->step);
    while (shift_cells(&s->grid, &im->cur, &im->tmp, sh))
        if (cpu_grow(s))
            return -1;
    carlo_cell_data t = im->cur;
    im->cur = im->tmp;
    im->tmp = t;
    lj_cb_origin_shift(s, sh, s->origin);
    s->step++;
    return 0;
}

static void running_sums(lj_cb_system *s, const cpu_impl *im)
{
    s->U = s->U0 + lj_cb_total(im->acc_u, s->grid.ncells);
    s->W = s->W0 + lj_cb_total(im->acc_w, s->grid.ncells);
}

static int cpu_sweeps(lj_cb_system *s, uint64_t n)
{
    cpu_impl *im = impl(s);
    const int nsets = 1 << s->grid.dim;
    for (uint64_t k = 0; k < n; k++) {
        int order[8];
        carlo_cells_set_order(s->grid.dim, s->seed, LJ_PURPOSE_CB_SETS, s->step, order);
        uint64_t accepted = 0;
        for (int q = 0; q < nsets; q++)
            accepted += one_set(s, im, order[q], s->step * 8 + (uint64_t)q);
        if (shift(s, im))
            return -1;
        s->tried += (uint64_t)s->passes * s->N;
        s->accepted += accepted;
    }
    running_sums(s, im);
    return 0;
}

static int cpu_subsweep(lj_cb_system *s, int set, int place)
{
    cpu_impl *im = impl(s);
    s->tried += (uint64_t)s->passes * lj_cb_set_members(&s->grid, im->cur.count, set);
    s->accepted += one_set(s, im, set, s->step * 8 + (uint64_t)place);
    running_sums(s, im);
    return 0;
}

static int cpu_shift(lj_cb_system *s)
{
    return shift(s, impl(s));
}

static int cpu_fresh(lj_cb_system *s, double *U, double *W)
{
    return lj_cb_fresh(s, &impl(s)->cur, U, W);
}

static int cpu_sync(lj_cb_system *s)
{
    (void)s;
    return 0;
}

static int cpu_sites(lj_cb_system *s)
{
    (void)s; /* the sweeps read s->sites */
    return 0;
}

const lj_cb_backend lj_cb_cpu_backend = {
    .name = "cpu",
    .create = cpu_create,
    .destroy = cpu_destroy,
    .upload = cpu_upload,
    .download = cpu_download,
    .sweeps = cpu_sweeps,
    .subsweep = cpu_subsweep,
    .shift = cpu_shift,
    .fresh = cpu_fresh,
    .sync = cpu_sync,
    .sites = cpu_sites,
};
