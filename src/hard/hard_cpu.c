/* hard_cpu.c — the CPU backend of the hard-particle model: the cell updates of hard_kernel.h
 * over the active cells of a set with OpenMP (cells of one set are independent, so the result
 * does not depend on the number of threads), and the shared cell shift and re-gridding. A
 * system split over MPI ranks (s->split, hard_mpi.h) loops over its own layers only and
 * exchanges halo layers after each set and shift. */
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/error.h"
#include "hard/hard.h"
#include "hard/hard_mpi.h"

const hard_backend *hard_gpu_backend;

typedef struct cpu_impl {
    carlo_cell_data cur, spare;
    carlo_cell_grid cur_grid, spare_grid; /* the shapes the two storages were allocated for */
    uint64_t tried, accepted;
} cpu_impl;

static cpu_impl *impl(hard_system *s) { return (cpu_impl *)s->impl; }

static int spare_for(cpu_impl *im, const carlo_cell_grid *g)
{
    return carlo_cell_data_fit(&im->spare, &im->spare_grid, g);
}

static int cpu_create(hard_system *s)
{
    cpu_impl *im = carlo_calloc(1, sizeof *im, "the hard-particle CPU backend");
    if (!im)
        return -1;
    s->impl = im;
    if (carlo_cell_data_fit(&im->cur, &im->cur_grid, &s->grid) || spare_for(im, &s->grid))
        return -1;
    return 0;
}

static void cpu_destroy(hard_system *s)
{
    cpu_impl *im = impl(s);
    if (!im)
        return;
    carlo_cell_data_free(&im->cur);
    carlo_cell_data_free(&im->spare);
    free(im);
    s->impl = NULL;
}

static void copy_data(const carlo_cell_grid *g, const carlo_cell_data *from, carlo_cell_data *to)
{
    memcpy(to->pos, from->pos, carlo_cells_pos_len(g) * sizeof(float));
    if (g->naux)
        memcpy(to->aux, from->aux, carlo_cells_aux_len(g) * sizeof(uint32_t));
    memcpy(to->count, from->count, (size_t)g->ncells * sizeof(uint32_t));
}

static int cpu_upload(hard_system *s, const carlo_cell_data *h)
{
    cpu_impl *im = impl(s);
    if (carlo_cell_data_fit(&im->cur, &im->cur_grid, &s->grid))
        return -1;
    copy_data(&s->grid, h, &im->cur);
    if (s->split) /* every rank uploads the whole system */
        s->split->full = 1;
    return 0;
}

static int cpu_download(hard_system *s, carlo_cell_data *h)
{
    if (s->split && hard_split_gather(s, &impl(s)->cur))
        return -1;
    copy_data(&s->grid, &impl(s)->cur, h);
    return 0;
}

/* One active cell, with every helper of the kernel inlined into this function (flatten), so
 * that the literal dim, nmax and cache reach every loop: gcc leaves CARLO_HD (static inline)
 * functions to its own judgement, and not inlined the CPU sweeps ran 12% slower. */
__attribute__((flatten)) static uint32_t cell_update(const carlo_cell_grid *g, int cache, float *pos,
                                                     const uint32_t *count, const int xyz[3],
                                                     hard_moves mv, uint64_t seed, uint64_t step,
                                                     float *nb, uint32_t *tr)
{
    if (g->dim == 2)
        return cache ? hard_cell_update(2, HARD_NMAX_2D, 1, g, pos, count, xyz, mv, seed, step, nb, 1,
                                        HARD_NB_2D, NULL, NULL, tr)
                     : hard_cell_update(2, HARD_NMAX_2D, 0, g, pos, count, xyz, mv, seed, step, nb, 1,
                                        HARD_NB_2D, NULL, NULL, tr);
    return cache ? hard_cell_update(3, HARD_NMAX_3D, 1, g, pos, count, xyz, mv, seed, step, nb, 1,
                                    HARD_NB_3D, NULL, NULL, tr)
                 : hard_cell_update(3, HARD_NMAX_3D, 0, g, pos, count, xyz, mv, seed, step, nb, 1,
                                    HARD_NB_3D, NULL, NULL, tr);
}

/* The same in a triclinic box (the tilts of mv): the cell in memory, the neighbours scanned at
 * every move (the GPU's form for tilted boxes; the decisions do not depend on the form). */
__attribute__((flatten)) static uint32_t cell_update_skew(const carlo_cell_grid *g, float *pos,
                                                          const uint32_t *count, const int xyz[3],
                                                          hard_moves mv, uint64_t seed, uint64_t step,
                                                          uint32_t *tr)
{
    if (g->dim == 2)
        return hard_cell_update(2, HARD_NMAX_2D, 0, g, pos, count, xyz, mv, seed, step, NULL, 1,
                                HARD_NB_2D, NULL, mv.tilt, tr);
    return hard_cell_update(3, HARD_NMAX_3D, 0, g, pos, count, xyz, mv, seed, step, NULL, 1,
                            HARD_NB_3D, NULL, mv.tilt, tr);
}

/* The same with the tether on: the cell in memory, every move scanning the neighbour cells (the
 * decisions do not depend on the form; tethered runs are small). */
__attribute__((flatten)) static uint32_t cell_update_tether(const carlo_cell_grid *g, float *pos,
                                                            const uint32_t *count, const int xyz[3],
                                                            hard_moves mv, uint64_t seed, uint64_t step,
                                                            const hard_tether *th, uint32_t *tr)
{
    if (g->dim == 2)
        return hard_cell_update(2, HARD_NMAX_2D, 0, g, pos, count, xyz, mv, seed, step, NULL, 1,
                                HARD_NB_2D, th, NULL, tr);
    return hard_cell_update(3, HARD_NMAX_3D, 0, g, pos, count, xyz, mv, seed, step, NULL, 1,
                            HARD_NB_3D, th, NULL, tr);
}

static int cpu_subsweep(hard_system *s, int set, uint64_t step)
{
    cpu_impl *im = impl(s);
    const carlo_cell_grid g = s->grid;
    int64_t t0 = 0, t1 = carlo_cell_set_size(&g); /* split: this rank's active cells */
    if (s->split)
        hard_split_active(s, set, &t0, &t1);
    const hard_moves mv = s->mv;
    const uint64_t seed = s->seed;
    const int cache = s->launch.variant == 1;
    const int gather = s->launch.gather;
    float *pos = im->cur.pos;
    const uint32_t *count = im->cur.count;
    uint64_t tried = 0, accepted = 0;
    hard_tether th;
    const int tether = s->lambda > 0 && s->sites;
    if (tether) {
        th.lambda = s->lambda;
        for (int a = 0; a < 3; a++) {
            th.origin[a] = s->origin[a];
            th.L[a] = s->box.L[a];
        }
        th.site = s->sites;
        th.tag = im->cur.aux; /* word plane 0 */
    }
#pragma omp parallel for schedule(static) reduction(+ : tried, accepted) if (t1 - t0 > 2048)
    for (int64_t t = t0; t < t1; t++) {
        int xyz[3];
        uint32_t tr;
        float nbuf[HARD_NB_MAX * 3];
        float *nb = gather ? nbuf : NULL;
        carlo_cell_active(&g, set, t, xyz);
        accepted += tether    ? cell_update_tether(&g, pos, count, xyz, mv, seed, step, &th, &tr)
                    : mv.skew ? cell_update_skew(&g, pos, count, xyz, mv, seed, step, &tr)
                              : cell_update(&g, cache, pos, count, xyz, mv, seed, step, nb, &tr);
        tried += tr;
    }
    im->tried += tried;
    im->accepted += accepted;
    return s->split ? hard_split_after_set(s, &im->cur, set) : 0;
}

static void swap_data(cpu_impl *im)
{
    carlo_cell_data_swap(&im->cur, &im->cur_grid, &im->spare, &im->spare_grid);
}

/* The shift of a split system's own cells (and halo cells, for a shift within the layers),
 * then the halos the shift changed from their owners. */
static int split_shift(hard_system *s, carlo_cell_shift sh)
{
    cpu_impl *im = impl(s);
    if (carlo_split_shift_host(s->split, &s->grid, &im->cur, &im->spare, sh))
        return -1;
    swap_data(im);
    return hard_split_after_shift(s, &im->cur, sh.axis);
}

static int cpu_shift(hard_system *s, carlo_cell_shift sh)
{
    cpu_impl *im = impl(s);
    if (spare_for(im, &s->grid))
        return -1;
    if (s->split)
        return split_shift(s, sh);
    if (carlo_cells_shift_host(&s->grid, &im->cur, &im->spare, sh))
        return -1;
    swap_data(im);
    return 0;
}

/* The pair scan of the particle in slot i of cell xyz, flattened as cell_update is. */
__attribute__((flatten)) static float particle_scan(const carlo_cell_grid *g, const carlo_cell_data *d,
                                                    const int xyz[3], int i, uint32_t *overlaps,
                                                    const hard_scan *sc, uint32_t *gr_hist,
                                                    const float *tilt)
{
    if (tilt)
        return g->dim == 2 ? hard_particle_scan(2, HARD_NMAX_2D, g, d->pos, d->count, xyz, i, overlaps, sc,
                                                gr_hist, tilt)
                           : hard_particle_scan(3, HARD_NMAX_3D, g, d->pos, d->count, xyz, i, overlaps, sc,
                                                gr_hist, tilt);
    return g->dim == 2 ? hard_particle_scan(2, HARD_NMAX_2D, g, d->pos, d->count, xyz, i, overlaps, sc,
                                            gr_hist, NULL)
                       : hard_particle_scan(3, HARD_NMAX_3D, g, d->pos, d->count, xyz, i, overlaps, sc,
                                            gr_hist, NULL);
}

/* Overlapping pairs (counted from both ends) and the smallest squared distance over the
 * particles of cells [c0, c1) of storage d. */
static void pair_scan(const carlo_cell_grid *g, const carlo_cell_data *d, int64_t c0, int64_t c1,
                      const float *tilt, int64_t *overlaps, double *r2min)
{
    uint64_t over = 0;
    float best = 3.0e38f;
#pragma omp parallel for schedule(static) reduction(+ : over) reduction(min : best) if (c1 - c0 > 4096)
    for (int64_t c = c0; c < c1; c++) {
        int xyz[3];
        carlo_cell_coords(g, c, xyz);
        int n = (int)d->count[c];
        for (int i = 0; i < n; i++) {
            uint32_t o = 0;
            float r2 = particle_scan(g, d, xyz, i, &o, NULL, NULL, tilt);
            over += o;
            if (r2 < best)
                best = r2;
        }
    }
    *overlaps = (int64_t)over;
    *r2min = (double)best;
}

/* A split system's scale trial where the cut along the split axis stays: each rank re-cuts its
 * own and halo layers from the same old layers, counts the overlaps of its own particles, and
 * the ranks add up overlaps and overflows, so that every rank takes the decision of the whole
 * system. */
static int split_scale_trial(hard_system *s, const carlo_cell_grid *ng, const double lam[3],
                             int64_t *overlaps)
{
    cpu_impl *im = impl(s);
    int64_t c0, c1;
    hard_split_cells(s, ng, &c0, &c1);
    int64_t v[2] = {0, carlo_split_regrid_host(s->split, &s->grid, &im->cur, ng, &im->spare, lam)};
    double r2;
    if (!v[1])
        pair_scan(ng, &im->spare, c0, c1, hard_tilt(s), &v[0], &r2);
    if (hard_split_sum(s, v, 2))
        return -1;
    *overlaps = v[1] ? -1 : v[0] / 2;
    s->split->trial_full = 0;
    return 0;
}

static int cpu_scale_trial(hard_system *s, const carlo_cell_grid *ng, const double lam[3],
                           int64_t *overlaps)
{
    cpu_impl *im = impl(s);
    if (spare_for(im, ng))
        return -1;
    if (s->split && hard_split_fits(s, ng))
        return -1;
    if (s->split && hard_split_slab_trial(s, ng, lam))
        return split_scale_trial(s, ng, lam, overlaps);
    /* split: the whole configuration on every rank, which then decides alike without talking */
    if (s->split && hard_split_gather(s, &im->cur))
        return -1;
    if (s->split)
        s->split->trial_full = 1;
    if (carlo_cells_regrid_host(&s->grid, &im->cur, ng, &im->spare, lam)) {
        *overlaps = -1;
        return 0;
    }
    double r2;
    pair_scan(ng, &im->spare, 0, ng->ncells, hard_tilt(s), overlaps, &r2);
    *overlaps /= 2;
    return 0;
}

static int cpu_scale_commit(hard_system *s, const carlo_cell_grid *ng)
{
    swap_data(impl(s));
    if (s->split) { /* current everywhere when the whole new grid was cut on every rank */
        s->split->full = s->split->trial_full;
        return hard_split_layout(s, ng);
    }
    return 0;
}

static int cpu_pair_check(hard_system *s, int64_t *overlaps, double *r2min)
{
    int64_t c0, c1;
    hard_own_cells(s, &s->grid, &c0, &c1);
    pair_scan(&s->grid, &impl(s)->cur, c0, c1, hard_tilt(s), overlaps, r2min);
    if (s->split && (hard_split_sum(s, overlaps, 1) || hard_split_min(s, r2min)))
        return -1;
    *overlaps /= 2;
    return 0;
}

static int cpu_histograms(hard_system *s, const hard_scan *sc, uint64_t *gr, uint64_t *sdf)
{
    const carlo_cell_grid *g = &s->grid;
    const carlo_cell_data *d = &impl(s)->cur;
    const float *tilt = hard_tilt(s);
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    size_t per = (size_t)sc->gr_bins + (size_t)sc->sdf_bins;
    uint32_t *local = carlo_calloc(carlo_mulsize(per, (size_t)threads), sizeof(uint32_t),
                                   "pressure histograms");
    if (!local)
        return -1;
    int64_t c0, c1;
    hard_own_cells(s, g, &c0, &c1);
#pragma omp parallel if (c1 - c0 > 4096)
    {
        int me = 0;
#ifdef _OPENMP
        me = omp_get_thread_num();
#endif
        uint32_t *h = local + (size_t)me * per, *hs = h + sc->gr_bins;
#pragma omp for schedule(static)
        for (int64_t c = c0; c < c1; c++) {
            int xyz[3];
            carlo_cell_coords(g, c, xyz);
            int n = (int)d->count[c];
            for (int i = 0; i < n; i++) {
                uint32_t o = 0;
                float r2 = particle_scan(g, d, xyz, i, &o, sc, h, tilt);
                int b = hard_sdf_bin(r2, sc);
                if (b >= 0)
                    hs[b]++;
            }
        }
    }
    int64_t *sum = carlo_calloc(per, sizeof(int64_t), "pressure histograms");
    if (!sum) {
        free(local);
        return -1;
    }
    for (int t = 0; t < threads; t++)
        for (size_t b = 0; b < per; b++)
            sum[b] += local[(size_t)t * per + b];
    free(local);
    if (s->split && hard_split_sum(s, sum, (int)per)) { /* the ranks' slabs together */
        free(sum);
        return -1;
    }
    for (int b = 0; b < sc->gr_bins; b++)
        gr[b] += (uint64_t)sum[b];
    for (int b = 0; b < sc->sdf_bins; b++)
        sdf[b] += (uint64_t)sum[sc->gr_bins + b];
    free(sum);
    return 0;
}

static int cpu_translation_counts(hard_system *s, uint64_t *tried, uint64_t *accepted)
{
    int64_t n[2] = {(int64_t)impl(s)->tried, (int64_t)impl(s)->accepted};
    if (s->split && hard_split_sum(s, n, 2)) /* every rank's cells */
        return -1;
    *tried = (uint64_t)n[0];
    *accepted = (uint64_t)n[1];
    return 0;
}

static int cpu_sync(hard_system *s)
{
    (void)s;
    return 0;
}

static int cpu_sites(hard_system *s)
{
    (void)s; /* the subsweeps read s->sites */
    return 0;
}

const hard_backend hard_cpu_backend = {
    .name = "cpu",
    .create = cpu_create,
    .destroy = cpu_destroy,
    .upload = cpu_upload,
    .download = cpu_download,
    .subsweep = cpu_subsweep,
    .shift = cpu_shift,
    .scale_trial = cpu_scale_trial,
    .scale_commit = cpu_scale_commit,
    .pair_check = cpu_pair_check,
    .histograms = cpu_histograms,
    .translation_counts = cpu_translation_counts,
    .sync = cpu_sync,
    .sites = cpu_sites,
};
