/* unit/shape/backend — the hard-shape system's plumbing for a device backend (cuda/shape.cu
 * plugs into the same table), checked without a GPU: a stand-in backend keeps its own copy of
 * the cells in host memory and runs the kernels' cell update, so a "device" system must follow
 * the CPU system's chain bit for bit through sweeps, compression (storage re-made), state
 * reads, move counts and a checkpoint restored onto the CPU; in tilted boxes too, with NPT
 * length and shear moves (the stand-in's trial re-cuts and checks its own cells, as the GPU's
 * does) and lattice reductions. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/error.h"
#include "core/frame.h"
#include "shape/shape.h"

typedef struct fake {
    carlo_cell_data cur, spare;
    carlo_cell_grid spare_grid; /* the grid spare was allocated for */
    uint64_t cnt[4];
    int uploads, downloads;
} fake;

static fake *F(shape_system *s) { return (fake *)s->impl; }

static int f_create(shape_system *s)
{
    fake *f = calloc(1, sizeof *f);
    s->impl = f;
    if (!f || carlo_cell_data_alloc(&s->grid, &f->cur) || carlo_cell_data_alloc(&s->grid, &f->spare))
        return -1;
    f->spare_grid = s->grid;
    return 0;
}

/* The spare storage made fit for grid g (after a box move it is the old grid's). */
static int fit_spare(fake *f, const carlo_cell_grid *g)
{
    if (f->spare_grid.ncells == g->ncells && f->spare_grid.nmax == g->nmax)
        return 0;
    carlo_cell_data_free(&f->spare);
    f->spare_grid = *g;
    return carlo_cell_data_alloc(g, &f->spare);
}

static void f_destroy(shape_system *s)
{
    fake *f = F(s);
    carlo_cell_data_free(&f->cur);
    carlo_cell_data_free(&f->spare);
    free(f);
    s->impl = NULL;
}

static void copy(const carlo_cell_grid *g, const carlo_cell_data *a, const carlo_cell_data *b)
{
    memcpy(b->pos, a->pos, carlo_cells_pos_len(g) * sizeof(float));
    memcpy(b->aux, a->aux, carlo_cells_aux_len(g) * sizeof(uint32_t));
    memcpy(b->count, a->count, (size_t)g->ncells * sizeof(uint32_t));
}

static int f_upload(shape_system *s, const carlo_cell_data *h)
{
    copy(&s->grid, h, &F(s)->cur);
    F(s)->uploads++;
    return 0;
}

static int f_download(shape_system *s, carlo_cell_data *h)
{
    copy(&s->grid, &F(s)->cur, h);
    F(s)->downloads++;
    return 0;
}

static int f_subsweep(shape_system *s, int set, uint64_t step)
{
    fake *f = F(s);
    const int64_t n = carlo_cell_set_size(&s->grid);
    for (int64_t t = n - 1; t >= 0; t--) { /* another order than the CPU's: cells are independent */
        int xyz[3];
        carlo_cell_active(&s->grid, set, t, xyz);
        shape_cell_update(&s->shape, &s->grid, f->cur.pos, f->cur.aux, f->cur.count, xyz, s->mv, s->seed,
                          step, f->cnt);
    }
    return 0;
}

static int f_shift(shape_system *s, carlo_cell_shift sh)
{
    fake *f = F(s);
    if (fit_spare(f, &s->grid) || carlo_cells_shift_host(&s->grid, &f->cur, &f->spare, sh))
        return -1;
    carlo_cell_data t = f->cur;
    f->cur = f->spare;
    f->spare = t;
    f->spare_grid = s->grid;
    return 0;
}

static int f_scale_trial(shape_system *s, const carlo_cell_grid *ng, const double lam[3], shape_moves mv, int *bad)
{
    fake *f = F(s);
    *bad = 0;
    if (fit_spare(f, ng))
        return -1;
    if (carlo_cells_regrid_host(&s->grid, &f->cur, ng, &f->spare, lam)) {
        *bad = 1;
        return 0;
    }
    for (int64_t c = ng->ncells - 1; c >= 0 && !*bad; c--) { /* another order than the CPU's */
        int xyz[3];
        carlo_cell_coords(ng, c, xyz);
        *bad = shape_cell_overlaps(&s->shape, ng, f->spare.pos, f->spare.aux, f->spare.count, xyz, &mv);
    }
    return 0;
}

static int f_scale_commit(shape_system *s)
{
    fake *f = F(s);
    carlo_cell_data t = f->cur;
    f->cur = f->spare;
    f->spare = t;
    f->spare_grid = s->grid; /* the old grid: s->grid is set after the commit */
    return 0;
}

static int f_counts(shape_system *s, uint64_t c[4])
{
    memcpy(c, F(s)->cnt, sizeof F(s)->cnt);
    return 0;
}

static int f_sync(shape_system *s)
{
    (void)s;
    return 0;
}

static const shape_backend fake_backend = {f_create,   f_destroy, f_upload, f_download,    f_subsweep,
                                           f_shift,    f_counts,  f_sync,   f_scale_trial, f_scale_commit};

static int same_state(shape_system *a, shape_system *b)
{
    size_t n = (size_t)a->N;
    double *x = malloc(sizeof(double) * 6 * n);
    uint32_t *o = malloc(sizeof(uint32_t) * 8 * n);
    int ok = shape_state(a, x, o) == 0 && shape_state(b, x + 3 * n, o + 4 * n) == 0 &&
             memcmp(x, x + 3 * n, sizeof(double) * 3 * n) == 0 && memcmp(o, o + 4 * n, sizeof(uint32_t) * 4 * n) == 0;
    uint64_t ca[4], cb[4];
    ok = ok && shape_counts(a, ca) == 0 && shape_counts(b, cb) == 0 && memcmp(ca, cb, sizeof ca) == 0;
    free(x);
    free(o);
    return ok;
}

static void run_case(const char *name, int dim, int nv, const double *v, int64_t N, double phi)
{
    shape_def sd;
    double v1;
    char label[96];
    if (shape_make_poly(&sd, dim, nv, v, 0, &v1, NULL)) {
        printf("FAIL unit/shape/backend_%s: %s\n", name, carlo_errmsg());
        return;
    }
    shape_params p;
    memset(&p, 0, sizeof p);
    p.shape = &sd;
    p.volume1 = v1;
    p.what = dim == 2 ? "polygons" : "polyhedra";
    p.N = N;
    double side = pow((double)N * v1 / phi, 1.0 / dim), L[3] = {side, side, side};
    p.box = carlo_box_make(dim, L);
    p.seed = 77;
    p.init = SHAPE_INIT_RANDOM;
    p.delta = 0.1;
    p.rotate = 0.5;
    p.moves_per_cell = 4;
    shape_system *c = shape_create(&p);
    p.device = CARLO_GPU;
    shape_system *g = shape_create(&p);
    if (!c || !g) {
        printf("FAIL unit/shape/backend_%s: %s\n", name, carlo_errmsg());
        shape_destroy(c);
        shape_destroy(g);
        return;
    }
    int ok = g->be == &fake_backend && carlo_advance(&c->sys, 30) == 0 && carlo_advance(&g->sys, 30) == 0;
    snprintf(label, sizeof label, "unit/shape/backend_%s_sweeps", name);
    CHECK(label, ok && same_state(c, g) && F(g)->uploads >= 1, "the stand-in device chain differs");
    ok = shape_compress(c, phi * 1.3, 2, 0, 1) == 0 && shape_compress(g, phi * 1.3, 2, 0, 1) == 0;
    ok = ok && c->grid.ncells == g->grid.ncells && carlo_advance(&c->sys, 10) == 0 && carlo_advance(&g->sys, 10) == 0;
    snprintf(label, sizeof label, "unit/shape/backend_%s_compress", name);
    CHECK(label, ok && same_state(c, g) && shape_verify(g) == 0, "compression went differently: %s", carlo_errmsg());
    carlo_frame f;
    carlo_frame_init(&f);
    shape_system *back = NULL;
    if (shape_checkpoint(g, &f) == 0)
        back = shape_restore(&f, CARLO_CPU);
    ok = back && carlo_advance(&back->sys, 10) == 0 && carlo_advance(&c->sys, 10) == 0;
    snprintf(label, sizeof label, "unit/shape/backend_%s_checkpoint", name);
    CHECK(label, ok && same_state(c, back) && back->step == c->step, "the restored chain differs: %s", carlo_errmsg());
    carlo_frame_free(&f);
    shape_destroy(back);
    shape_destroy(c);
    shape_destroy(g);
}

/* NPT with length and shear moves in a tilted box near the reduction bound: the stand-in
 * device follows the CPU through re-griddings on the backend and reductions on the host. */
static void run_triclinic(const char *name, int dim, int nv, const double *v, int64_t N, const double L[3],
                          const double tilt[3], double pressure)
{
    shape_def sd;
    double v1;
    char label[96];
    if (shape_make_poly(&sd, dim, nv, v, 0, &v1, NULL)) {
        printf("FAIL unit/shape/backend_%s: %s\n", name, carlo_errmsg());
        return;
    }
    shape_params p;
    memset(&p, 0, sizeof p);
    p.shape = &sd;
    p.volume1 = v1;
    p.what = dim == 2 ? "polygons" : "polyhedra";
    p.N = N;
    p.box = carlo_box_make(dim, L);
    p.box.xy = tilt[0];
    p.box.xz = tilt[1];
    p.box.yz = tilt[2];
    p.seed = 78;
    p.init = SHAPE_INIT_RANDOM;
    p.delta = 0.1;
    p.rotate = 0.5;
    p.moves_per_cell = 4;
    shape_system *c = shape_create(&p);
    p.device = CARLO_GPU;
    shape_system *g = shape_create(&p);
    shape_system *sys[2] = {c, g};
    int ok = c && g;
    for (int k = 0; k < 2 && ok; k++) {
        ok = shape_set_pressure(sys[k], pressure) == 0 && shape_set_box_moves(sys[k], SHAPE_BOX_TRICLINIC) == 0;
        sys[k]->dtilt = 0.05;
        sys[k]->dlnL = 0.02;
        sys[k]->volume_moves = 4;
    }
    ok = ok && carlo_advance(&c->sys, 120) == 0 && carlo_advance(&g->sys, 120) == 0;
    snprintf(label, sizeof label, "unit/shape/backend_%s_box_moves", name);
    ok = ok && memcmp(c->box.L, g->box.L, sizeof c->box.L) == 0 && c->box.xy == g->box.xy && c->box.xz == g->box.xz &&
         c->box.yz == g->box.yz;
    CHECK(label, ok && same_state(c, g) && c->lcnt[1] == g->lcnt[1] &&
                     c->tcnt[1] == g->tcnt[1] && c->tcnt[1] > 0 && c->lcnt[1] > 0 && c->reductions > 0 &&
                     c->reductions == g->reductions && shape_verify(c) == 0 && shape_verify(g) == 0,
          "the stand-in device's box moves differ (shear %llu / %llu, reductions %llu / %llu): %s",
          c ? (unsigned long long)c->tcnt[1] : 0ull, g ? (unsigned long long)g->tcnt[1] : 0ull,
          c ? (unsigned long long)c->reductions : 0ull, g ? (unsigned long long)g->reductions : 0ull,
          carlo_errmsg());
    shape_destroy(c);
    shape_destroy(g);
}

int main(void)
{
    shape_gpu_backend = &fake_backend;
    double pent[15], cube[24];
    for (int k = 0; k < 5; k++) {
        pent[3 * k] = cos(2 * 3.141592653589793 * k / 5);
        pent[3 * k + 1] = sin(2 * 3.141592653589793 * k / 5);
        pent[3 * k + 2] = 0;
    }
    for (int k = 0; k < 8; k++)
        for (int a = 0; a < 3; a++)
            cube[3 * k + a] = (k >> a & 1) ? 0.5 : -0.5;
    run_case("pentagons", 2, 5, pent, 150, 0.35);
    run_case("cubes", 3, 8, cube, 100, 0.25);
    const double L2[3] = {30, 30, 0}, t2[3] = {0.49, 0, 0}, L3[3] = {8, 8, 8}, t3[3] = {0.45, -0.45, 0.45};
    run_triclinic("pentagons_triclinic", 2, 5, pent, 100, L2, t2, 0.2 / 2.377);
    run_triclinic("cubes_triclinic", 3, 8, cube, 64, L3, t3, 0.2);
    return check_failed;
}
