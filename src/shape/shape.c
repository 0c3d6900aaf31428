/* shape.c — the hard-shape system on the CPU: the cell grid planned from the circumsphere, the
 * initial configurations, checkerboard sweeps (MPMC Algorithm 1: shuffled sets, the cell
 * updates of shape_kernel.h over the active cells with OpenMP, a random cell shift), the
 * serial reference chain, positions by tag and overlap checks (compression, NPT box moves and
 * move-size tuning: shape_npt.c).
 * In a triclinic box the cells hold skew coordinates (core/box.h) and the kernels turn their
 * separations into vectors with the box's tilts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h"
#include "core/sys.h"
#include "mpi/cell_split.h"
#include "shape/shape.h"
#include "shape/shape_plain.h"

#define PI 3.141592653589793

/* ---------- the grid ---------- */

/* Cells at least one circumdiameter wide (active cells of one set never interact), holding at
 * most the number of centres that fit: the smaller of two bounds, boxes whose diagonal is below
 * the indiameter (two centres in one box would overlap) and the volume of the cell grown by R
 * on every side over the particle volume. With spread < 1 (orthorhombic boxes only) the bound
 * is that of cells 1 / spread times wider: it holds for centres that overlap nothing once their
 * separations are scaled by 1 / spread (a compression's overlapping pairs, shape_npt.c). */
int shape_plan_grid_spread(carlo_cell_grid *g, const carlo_box *b, const shape_def *s, double v1, double spread)
{
    const double w_min = 2.0 * s->R * (1.0 + 1e-6);
    const int naux = shape_naux(b->dim);
    if (!carlo_box_orthorhombic(b)) {
        if (spread != 1.0)
            return -1;
        /* parallelepipeds at least w_min thick between faces; at most the centres whose shapes
         * fit the cell pushed out by R across every face (heights hc + 2 R) */
        if (carlo_cells_plan_skew(g, b, w_min, INFINITY, w_min, 1, naux))
            return -1;
        double h[3], by_volume = 1;
        carlo_box_heights(b, h);
        for (int a = 0; a < b->dim; a++) {
            const double hc = g->width[a] * h[a] / b->L[a];
            by_volume *= g->width[a] * (hc + 2.0 * s->R) / hc;
        }
        by_volume = floor(by_volume / v1);
        int nmax = by_volume > CARLO_CELL_NMAX_LIMIT ? CARLO_CELL_NMAX_LIMIT : (int)(by_volume < 1 ? 1 : by_volume);
        return carlo_cells_plan_skew(g, b, w_min, INFINITY, w_min, nmax, naux);
    }
    if (carlo_cells_plan(g, b, w_min, INFINITY, w_min, 1, naux))
        return -1;
    double by_boxes = 1, by_volume = 1;
    for (int a = 0; a < b->dim; a++) {
        const double w = g->width[a] / spread;
        by_boxes *= floor(w * sqrt((double)b->dim) / (2.0 * s->r_in)) + 1;
        by_volume *= w + 2.0 * s->R;
    }
    by_volume = floor(by_volume / v1);
    double n = fmin(by_boxes, by_volume);
    int nmax = n > CARLO_CELL_NMAX_LIMIT ? CARLO_CELL_NMAX_LIMIT : (int)(n < 1 ? 1 : n);
    return carlo_cells_plan(g, b, w_min, INFINITY, w_min, nmax, naux);
}

int shape_plan_grid(carlo_cell_grid *g, const carlo_box *b, const shape_def *s, double v1)
{
    return shape_plan_grid_spread(g, b, s, v1, 1.0);
}

double shape_grid_wmin(const carlo_cell_grid *g)
{
    double w = g->width[0];
    for (int a = 1; a < g->dim; a++)
        w = fmin(w, g->width[a]);
    return w;
}

/* The box of record: the grid's sides (exact multiples of the cell widths) with the tilts of
 * b; the kernels' copy of the tilts. */
void shape_box_of_grid(shape_system *s, const carlo_cell_grid *g, const carlo_box *b)
{
    s->box = carlo_cells_box(g);
    s->box.xy = b->xy;
    s->box.xz = b->xz;
    s->box.yz = b->yz;
    s->mv.skew = !carlo_box_orthorhombic(&s->box);
    s->mv.tilt[0] = s->box.xy;
    s->mv.tilt[1] = s->box.xz;
    s->mv.tilt[2] = s->box.yz;
}

shape_system *shape_alloc(const shape_params *p)
{
    carlo_cell_grid g;
    if (shape_plan_grid(&g, &p->box, p->shape, p->volume1))
        return NULL;
    shape_system *s = carlo_calloc(1, sizeof *s, "a hard-shape system");
    if (!s)
        return NULL;
    s->ops = &shape_ops;
    s->replicas = 1;
    s->dim = p->shape->dim;
    s->N = p->N;
    s->shape = *p->shape;
    s->volume1 = p->volume1;
    s->what = p->what;
    shape_box_of_grid(s, &g, &p->box);
    s->grid = g;
    s->seed = p->seed;
    s->device = CARLO_CPU;
    s->serial = p->serial;
    s->dlnV = 0.1 / (double)p->N;
    s->volume_moves = 1;
    s->dlnL = 0.1 / (double)p->N;
    s->dtilt = 0.1 / (double)p->N;
    if (p->device == CARLO_GPU) {
        if (!shape_gpu_backend || p->serial) {
            carlo_seterr(p->serial ? "the serial reference runs on the CPU only"
                                   : "this carlo was built without CUDA");
            free(s);
            return NULL;
        }
        s->device = CARLO_GPU;
        s->be = shape_gpu_backend;
    }
    s->mv.moves = p->moves_per_cell;
    if (shape_set_moves(s, p->delta, p->rotate)) {
        free(s);
        return NULL;
    }
    if (s->serial) {
        s->x = carlo_malloc(carlo_mulsize((size_t)s->N, 3 * sizeof(double)), "positions");
        s->ori = s->x ? carlo_malloc(carlo_mulsize((size_t)s->N, 4 * sizeof(uint32_t)), "orientations") : NULL;
        if (!s->ori) {
            shape_destroy(s);
            return NULL;
        }
    } else if (carlo_cell_data_fit(&s->cur, &s->cur_alloc, &s->grid) ||
               carlo_cell_data_fit(&s->spare, &s->spare_alloc, &s->grid) || (s->be && s->be->create(s))) {
        shape_destroy(s);
        return NULL;
    }
    return s;
}

const shape_backend *shape_gpu_backend;

int shape_gpu_failed(shape_system *s)
{
    s->dead = 1;
    return -1;
}

/* The host copy of the cells brought up to date (GPU systems). */
int shape_fetch(shape_system *s)
{
    if (carlo_sys_alive(&s->sys))
        return -1;
    if (s->be && s->be->download(s, &s->cur))
        return shape_gpu_failed(s);
    if (!s->split || s->split->full)
        return 0;
    if (carlo_split_gather(s->split, &s->grid, &s->cur))
        return -1;
    /* a GPU system's device copy made whole too, so that the two agree until the next sweep */
    if (s->be && s->be->upload(s, &s->cur))
        return shape_gpu_failed(s);
    return 0;
}

/* The host copy handed to the device (GPU systems). */
int shape_push(shape_system *s)
{
    if (s->be && s->be->upload(s, &s->cur))
        return shape_gpu_failed(s);
    if (s->split) { /* every rank placed the whole system */
        s->split->full = 1;
        return carlo_split_layout(s->split, &s->grid);
    }
    return 0;
}

int shape_split_on(shape_system *s, int frozen)
{
    if (s->split)
        return 0;
    if (s->serial)
        return carlo_seterr("decompose = true splits the cells; the serial reference has none");
    if (s->mv.skew)
        return carlo_seterr("decompose = true needs an orthorhombic box (this one has tilts xy, xz, yz = "
                            "%.9g, %.9g, %.9g)", s->box.xy, s->box.xz, s->box.yz);
    if (s->box_moves == SHAPE_BOX_TRICLINIC)
        return carlo_seterr("decompose = true needs an orthorhombic box: no box_moves = \"triclinic\"");
    s->split = carlo_split_new(&s->grid, frozen);
    if (!s->split)
        return -1;
    s->collective = s->split->ranks > 1; /* halo exchanges and sums: never from a worker thread */
    return 0;
}

int shape_counts(shape_system *s, uint64_t c[4])
{
    uint64_t d[4] = {0, 0, 0, 0}; /* counted on the device */
    if (s->be) {
        if (carlo_sys_alive(&s->sys))
            return -1;
        if (s->be->counts(s, d))
            return shape_gpu_failed(s);
    }
    int64_t v[4]; /* split: this rank's cells' moves, summed over the ranks */
    for (int k = 0; k < 4; k++)
        v[k] = (int64_t)(s->part[k] + d[k]);
    if (s->split && carlo_split_sum(s->split, v, 4))
        return -1;
    for (int k = 0; k < 4; k++)
        c[k] = s->cnt[k] + (uint64_t)v[k];
    return 0;
}

void shape_destroy(shape_system *s)
{
    if (!s)
        return;
    if (s->be && s->impl)
        s->be->destroy(s);
    carlo_cell_data_free(&s->cur);
    carlo_cell_data_free(&s->spare);
    carlo_split_free(s->split);
    free(s->x);
    free(s->ori);
    free(s);
}

int shape_set_moves(shape_system *s, double delta, double rotate)
{
    const double wmin = shape_grid_wmin(&s->grid);
    if (!(delta > 0) || delta > wmin)
        return carlo_seterr("delta must be in (0, %g] (a cell width; got %g)", wmin, delta);
    if (!(rotate > 0) || rotate > SHAPE_ROTATE_MAX)
        return carlo_seterr("rotate must be in (0, pi] (got %g)", rotate);
    s->mv.delta = (float)delta;
    s->mv.rotate = rotate;
    s->mv.turn = (uint32_t)floor(rotate / (2 * PI) * 4294967296.0);
    if (s->mv.turn > 0x7fffffffu)
        s->mv.turn = 0x7fffffffu;
    if (s->mv.turn == 0)
        s->mv.turn = 1;
    return 0;
}

/* ---------- placing particles ---------- */

static void wrap_skew(const carlo_box *b, int dim, double *x)
{
    for (int a = 0; a < dim; a++) {
        double L = b->L[a], v = x[a] + 0.5 * L;
        v -= floor(v / L) * L;
        if (v >= L)
            v = 0;
        x[a] = v - 0.5 * L;
    }
}

/* A position into the box: skew coordinates in [-L/2, L/2). */
static void wrap_box(const carlo_box *b, int dim, double *x)
{
    if (carlo_box_orthorhombic(b)) {
        wrap_skew(b, dim, x);
        return;
    }
    double sk[3];
    carlo_box_pos_to_skew(b, x, sk);
    wrap_skew(b, dim, sk);
    carlo_box_skew_to_pos(b, sk, x);
    if (dim == 2)
        x[2] = 0;
}

/* Skew coordinates (the starts' lattices and random points, cut from the box's sides) into
 * positions; nothing in an orthorhombic box. */
static void skew_all(const carlo_box *b, int64_t N, double *x)
{
    if (carlo_box_orthorhombic(b))
        return;
    for (int64_t k = 0; k < N; k++) {
        double sk[3] = {x[3 * k], x[3 * k + 1], x[3 * k + 2]};
        carlo_box_skew_to_pos(b, sk, x + 3 * k);
    }
}

static int refuse(int64_t count, const int64_t *pairs, const char *how)
{
    char list[200];
    size_t len = 0;
    list[0] = 0;
    for (int64_t k = 0; k < count && k < 5; k++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s(%lld, %lld)", k ? ", " : "",
                                (long long)pairs[2 * k] + 1, (long long)pairs[2 * k + 1] + 1);
    return carlo_seterr("the initial configuration has %lld overlapping pair%s%s: %s%s", (long long)count,
                        count == 1 ? "" : "s", how, list, count > 5 ? ", ..." : "");
}

/* Positions (box coordinates) and orientations into the system: the cells, or the serial
 * reference's arrays; refused when a pair overlaps (as the kernels see it: the float cell
 * coordinates) unless overlaps_ok (a compression on cells planned for its overlaps). */
static int place(shape_system *s, const double *x, const uint32_t *ori, int overlaps_ok)
{
    int64_t N = s->N, count = 0, pairs[10];
    const int naux = s->grid.naux, dim = s->dim;
    double *r = carlo_malloc(carlo_mulsize((size_t)N, 3 * sizeof(double)), "positions");
    uint32_t *aux = r ? carlo_malloc(carlo_mulsize((size_t)N, (size_t)naux * sizeof(uint32_t)), "words") : NULL;
    int rc = -1;
    if (!aux)
        goto out;
    for (int64_t k = 0; k < N; k++) {
        for (int a = 0; a < 3; a++)
            r[3 * k + a] = a < dim ? x[3 * k + a] : 0.0;
        wrap_box(&s->box, dim, r + 3 * k);
    }
    if (!overlaps_ok && shape_overlaps_of(&s->shape, &s->box, N, r, ori, &count, pairs, 5))
        goto out;
    if (count) {
        refuse(count, pairs, "");
        goto out;
    }
    if (s->serial) {
        memcpy(s->x, r, sizeof(double) * 3 * (size_t)N);
        memcpy(s->ori, ori, sizeof(uint32_t) * 4 * (size_t)N);
        rc = 0;
        goto out;
    }
    for (int64_t k = 0; k < N; k++) {
        if (!carlo_box_orthorhombic(&s->box)) { /* the cells hold skew coordinates */
            double sk[3];
            carlo_box_pos_to_skew(&s->box, r + 3 * k, sk);
            memcpy(r + 3 * k, sk, sizeof sk);
        }
        for (int a = 0; a < dim; a++)
            r[3 * k + a] += 0.5 * s->box.L[a];
        aux[(size_t)k * (size_t)naux] = (uint32_t)k;
        for (int w = 1; w < naux; w++)
            aux[(size_t)k * (size_t)naux + (size_t)w] = ori[4 * k + w - 1];
    }
    carlo_cell_data_clear(&s->grid, &s->cur);
    if (carlo_cells_fill(&s->grid, &s->cur, N, r, aux) || shape_push(s))
        goto out;
    s->origin[0] = s->origin[1] = s->origin[2] = 0;
    if (overlaps_ok)
        rc = 0;
    else if (shape_state(s, r, NULL) == 0) { /* the float frames, as the kernels see them */
        int64_t c2 = 0;
        free(aux);
        aux = carlo_malloc(carlo_mulsize((size_t)N, 4 * sizeof(uint32_t)), "orientations");
        if (aux && shape_state(s, NULL, aux) == 0 &&
            shape_overlaps_of(&s->shape, &s->box, N, r, aux, &c2, pairs, 5) == 0) {
            rc = c2 ? refuse(c2, pairs, " in single precision (closer by rounding)") : 0;
        }
    }
out:
    free(r);
    free(aux);
    return rc;
}

int shape_place(shape_system *s, const double *x, const uint32_t *ori)
{
    return place(s, x, ori, 0);
}

int shape_place_overlapping(shape_system *s, const double *x, const uint32_t *ori)
{
    return place(s, x, ori, 1);
}

/* A uniformly random orientation. */
static void random_orient(int dim, uint64_t seed, uint64_t k, uint32_t attempt, uint32_t o[4])
{
    carlo_u32x4 r = carlo_rng(seed, SHAPE_PURPOSE_INIT, k, attempt, 2);
    if (dim == 2) {
        o[0] = r.v[0];
        o[1] = o[2] = o[3] = 0;
        return;
    }
    carlo_u32x4 r2 = carlo_rng(seed, SHAPE_PURPOSE_INIT, k, attempt, 3);
    double q[4];
    carlo_normal2(r, &q[0], &q[1]);
    carlo_normal2(r2, &q[2], &q[3]);
    if (shape_orient_words(3, q, o))
        shape_orient_identity(3, o);
}

/* Random sequential addition: each particle drawn (position and orientation) until it
 * overlaps none placed before it. */
static int random_start(shape_system *s, double *x, uint32_t *ori)
{
    shape_plain pl;
    if (shape_plain_init(&pl, &s->box, s->N, 2.0 * s->shape.R, x))
        return -1;
    int rc = 0;
    for (int64_t k = 0; k < s->N && rc == 0; k++) {
        uint32_t attempt = 0;
        for (;; attempt++) {
            if (attempt >= 100000 || carlo_interrupted) {
                rc = carlo_seterr("the random start found no room for particle %lld of %lld (give "
                                  "a lower density, or a lattice start: init = \"%s\")", (long long)k + 1,
                                  (long long)s->N, s->dim == 2 ? "hex" : "sc");
                break;
            }
            carlo_u32x4 r = carlo_rng(s->seed, SHAPE_PURPOSE_INIT, k, attempt, 0);
            carlo_u32x4 q = carlo_rng(s->seed, SHAPE_PURPOSE_INIT, k, attempt, 1);
            double f[3] = {carlo_u01(r.v[0], r.v[1]), carlo_u01(r.v[2], r.v[3]), carlo_u01(q.v[0], q.v[1])};
            for (int a = 0; a < 3; a++)
                x[3 * k + a] = a < s->dim ? (f[a] - 0.5) * s->box.L[a] : 0.0;
            skew_all(&s->box, 1, x + 3 * k);
            random_orient(s->dim, s->seed, (uint64_t)k, attempt, ori + 4 * k);
            if (!shape_plain_hits(&pl, &s->shape, x + 3 * k, ori + 4 * k, ori, -1))
                break;
        }
        if (rc == 0)
            shape_plain_insert(&pl, k);
    }
    shape_plain_free(&pl);
    return rc;
}

/* Circumspheres on a lattice stretched to the box (hexagonal rows in 2D, simple cubic in 3D),
 * the first N sites taken, every particle at the identity orientation. */
static void lattice_start(shape_system *s, double *x, uint32_t *ori)
{
    const int dim = s->dim;
    int64_t n[3] = {1, 1, 1};
    if (dim == 2) {
        n[1] = 2 * (int64_t)floor(sqrt((double)s->N * 0.8660254037844386) / 2 + 0.5);
        if (n[1] < 2)
            n[1] = 2;
        n[0] = (s->N + n[1] - 1) / n[1];
    } else {
        int64_t m = (int64_t)ceil(cbrt((double)s->N) - 1e-9);
        n[0] = n[1] = n[2] = m;
    }
    for (int64_t k = 0; k < s->N; k++) {
        int64_t i = k % n[0], j = (k / n[0]) % n[1], l = k / (n[0] * n[1]);
        double f[3] = {(double)i + 0.25, (double)j + 0.25, (double)l + 0.25};
        if (dim == 2)
            f[0] += 0.5 * (double)(j & 1);
        for (int a = 0; a < 3; a++)
            x[3 * k + a] = a < dim ? f[a] / (double)n[a] * s->box.L[a] - 0.5 * s->box.L[a] : 0.0;
        shape_orient_identity(dim, ori + 4 * k);
    }
}

int64_t shape_bcc_n(int64_t N)
{
    int64_t n = (int64_t)llround(cbrt((double)N / 2.0));
    return n >= 1 && 2 * n * n * n == N ? n : 0;
}

int64_t shape_fcc_n(int64_t N)
{
    int64_t n = (int64_t)llround(cbrt((double)N / 4.0));
    return n >= 1 && 4 * n * n * n == N ? n : 0;
}

/* Face-centred cubic: n^3 cubes of four sites each, every particle at the identity. */
static void fcc_start(shape_system *s, double *x, uint32_t *ori)
{
    static const double basis[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
    const int64_t n = shape_fcc_n(s->N);
    for (int64_t k = 0; k < s->N; k++) {
        const int64_t c = k / 4, i = c % n, j = (c / n) % n, l = c / (n * n);
        const double *b = basis[k % 4];
        const double f[3] = {(double)i + b[0] + 0.25, (double)j + b[1] + 0.25, (double)l + b[2] + 0.25};
        for (int a = 0; a < 3; a++)
            x[3 * k + a] = f[a] / (double)n * s->box.L[a] - 0.5 * s->box.L[a];
        shape_orient_identity(3, ori + 4 * k);
    }
}

/* Body-centred cubic: n^3 cubes of two sites each, every particle at the identity (truncated
 * octahedra tile space so). */
static void bcc_start(shape_system *s, double *x, uint32_t *ori)
{
    const int64_t n = shape_bcc_n(s->N);
    for (int64_t k = 0; k < s->N; k++) {
        int64_t c = k / 2, i = c % n, j = (c / n) % n, l = c / (n * n);
        double h = (k & 1) ? 0.5 : 0.0, f[3] = {(double)i + h + 0.25, (double)j + h + 0.25, (double)l + h + 0.25};
        for (int a = 0; a < 3; a++)
            x[3 * k + a] = f[a] / (double)n * s->box.L[a] - 0.5 * s->box.L[a];
        shape_orient_identity(3, ori + 4 * k);
    }
}

/* The box a lattice start needs for N at packing fraction phi: hexagonal rows whose spacing
 * holds phi (2D), a cube (3D). */
void shape_lattice_box(int dim, int64_t N, double v1, double phi, carlo_box *b)
{
    double L[3] = {0, 0, 0};
    if (dim == 2) {
        int64_t ny = 2 * (int64_t)floor(sqrt((double)N * 0.8660254037844386) / 2 + 0.5);
        if (ny < 2)
            ny = 2;
        int64_t nx = (N + ny - 1) / ny;
        double a = sqrt((double)N * v1 / phi / ((double)nx * (double)ny * 0.8660254037844386));
        L[0] = a * (double)nx;
        L[1] = a * 0.8660254037844386 * (double)ny;
    } else {
        L[0] = L[1] = L[2] = cbrt((double)N * v1 / phi);
    }
    *b = carlo_box_make(dim, L);
}

shape_system *shape_create(const shape_params *p)
{
    if (p->N < 1 || p->N > SHAPE_N_MAX) {
        carlo_seterr("N must be an integer from 1 to %lld (got %lld)", (long long)SHAPE_N_MAX, (long long)p->N);
        return NULL;
    }
    shape_system *s = shape_alloc(p);
    if (!s)
        return NULL;
    double *x = carlo_malloc(carlo_mulsize((size_t)s->N, 3 * sizeof(double)), "positions");
    uint32_t *ori = x ? carlo_calloc((size_t)s->N * 4, sizeof(uint32_t), "orientations") : NULL;
    int rc = -1;
    if (ori) {
        if (p->init == SHAPE_INIT_GIVEN) {
            memcpy(x, p->positions, sizeof(double) * 3 * (size_t)s->N);
            memcpy(ori, p->orients, sizeof(uint32_t) * 4 * (size_t)s->N);
            rc = 0;
        } else if (p->init == SHAPE_INIT_LATTICE) {
            lattice_start(s, x, ori);
            skew_all(&s->box, s->N, x);
            rc = 0;
        } else if (p->init == SHAPE_INIT_BCC) {
            rc = s->dim == 3 && shape_bcc_n(s->N) ? 0
                                                  : carlo_seterr("a bcc start needs N = 2 n^3 in 3D (got N = %lld)",
                                                                 (long long)s->N);
            if (rc == 0) {
                bcc_start(s, x, ori);
                skew_all(&s->box, s->N, x);
            }
        } else if (p->init == SHAPE_INIT_FCC) {
            rc = s->dim == 3 && shape_fcc_n(s->N) ? 0
                                                  : carlo_seterr("an fcc start needs N = 4 n^3 in 3D (got N = %lld)",
                                                                 (long long)s->N);
            if (rc == 0) {
                fcc_start(s, x, ori);
                skew_all(&s->box, s->N, x);
            }
        } else {
            rc = random_start(s, x, ori);
        }
        if (rc == 0)
            rc = shape_place(s, x, ori);
    }
    free(x);
    free(ori);
    if (rc) {
        shape_destroy(s);
        return NULL;
    }
    return s;
}

/* ---------- sweeps ---------- */

int shape_subsweep(shape_system *s, int set)
{
    if (s->serial)
        return carlo_seterr("the serial reference has no checkerboard sets");
    if (set < 0 || set >= (1 << s->dim))
        return carlo_seterr("the set must be from 0 to %d (got %d)", (1 << s->dim) - 1, set);
    if (carlo_sys_alive(&s->sys))
        return -1;
    if (s->be) {
        if (s->be->subsweep(s, set, s->substeps))
            return shape_gpu_failed(s);
        s->substeps++;
        return 0;
    }
    const carlo_cell_grid g = s->grid;
    int64_t t0 = 0, t1 = carlo_cell_set_size(&g); /* split: this rank's active cells */
    if (s->split)
        carlo_split_active(s->split, &g, set, &t0, &t1);
    const shape_moves mv = s->mv;
    const uint64_t seed = s->seed, step = s->substeps;
    const shape_def *sh = &s->shape;
    float *pos = s->cur.pos;
    uint32_t *aux = s->cur.aux;
    const uint32_t *count = s->cur.count;
    uint64_t n0 = 0, n1 = 0, n2 = 0, n3 = 0;
#pragma omp parallel for schedule(dynamic, 16) reduction(+ : n0, n1, n2, n3) if (t1 - t0 > 64)
    for (int64_t t = t0; t < t1; t++) {
        int xyz[3];
        uint64_t c[4] = {0, 0, 0, 0};
        carlo_cell_active(&g, set, t, xyz);
        shape_cell_update(sh, &g, pos, aux, count, xyz, mv, seed, step, c);
        n0 += c[0];
        n1 += c[1];
        n2 += c[2];
        n3 += c[3];
    }
    uint64_t *cnt = s->split ? s->part : s->cnt;
    cnt[0] += n0;
    cnt[1] += n1;
    cnt[2] += n2;
    cnt[3] += n3;
    s->substeps++;
    return s->split ? carlo_split_after_set(s->split, &g, &s->cur, set) : 0;
}

int shape_shift_cells(shape_system *s)
{
    if (s->serial)
        return carlo_seterr("the serial reference has no cells");
    if (carlo_sys_alive(&s->sys))
        return -1;
    carlo_cell_shift sh = carlo_cells_shift_draw(&s->grid, s->seed, SHAPE_PURPOSE_SHIFT, s->sweeps);
    if (s->be) {
        if (s->be->shift(s, sh))
            return shape_gpu_failed(s);
    } else {
        if (carlo_cell_data_fit(&s->spare, &s->spare_alloc, &s->grid) ||
            (s->split ? carlo_split_shift_host(s->split, &s->grid, &s->cur, &s->spare, sh)
                      : carlo_cells_shift_host(&s->grid, &s->cur, &s->spare, sh)))
            return -1;
        carlo_cell_data_swap(&s->cur, &s->cur_alloc, &s->spare, &s->spare_alloc);
        if (s->split && carlo_split_after_shift(s->split, &s->grid, &s->cur, sh.axis))
            return -1;
    }
    double L = s->box.L[sh.axis], o = s->origin[sh.axis] + sh.dir * (double)sh.d;
    s->origin[sh.axis] = o - floor(o / L) * L;
    s->sweeps++;
    return 0;
}

/* One move of the serial reference: a particle drawn uniformly from all N, translated or
 * rotated as the cell update does (translations not rounded to the cell quantum), checked
 * against every other particle (minimum image). */
static void serial_move(shape_system *s, uint64_t k)
{
    const int dim = s->dim;
    const carlo_u32x4 r0 = carlo_rng(s->seed, SHAPE_PURPOSE_SERIAL, s->sweeps, (uint32_t)k, 0);
    const carlo_u32x4 r1 = carlo_rng(s->seed, SHAPE_PURPOSE_SERIAL, s->sweeps, (uint32_t)k, 1);
    const int64_t i = (int64_t)carlo_below(s->seed, SHAPE_PURPOSE_SERIAL, s->sweeps, (uint32_t)k, 2,
                                           (uint32_t)s->N);
    const int rotation = (int)(r0.v[1] >> 31);
    double t[3];
    uint32_t o[4];
    memcpy(t, s->x + 3 * i, sizeof t);
    memcpy(o, s->ori + 4 * i, sizeof o);
    const float u[3] = {shape_sym_unit(r0.v[2]), shape_sym_unit(r0.v[3]), shape_sym_unit(r1.v[0])};
    if (rotation) {
        if (dim == 2) {
            uint32_t k2 = carlo_below(s->seed, SHAPE_PURPOSE_SERIAL, s->sweeps, (uint32_t)k, 3,
                                      2u * s->mv.turn + 1u);
            o[0] += k2 - s->mv.turn;
        } else {
            uint32_t q[4];
            memcpy(q, o, sizeof q);
            shape_quat_turn(q, s->mv.rotate, u, o);
        }
        s->cnt[2]++;
    } else {
        for (int a = 0; a < dim; a++)
            t[a] += (double)s->mv.delta * (double)u[a];
        wrap_box(&s->box, dim, t);
        s->cnt[0]++;
    }
    shape_rot rt;
    shape_rot_of(dim, o, &rt);
    const double R2 = 4.0 * s->shape.R * s->shape.R;
    for (int64_t j = 0; j < s->N; j++) {
        if (j == i)
            continue;
        double d[3] = {0, 0, 0};
        for (int a = 0; a < dim; a++)
            d[a] = s->x[3 * j + a] - t[a];
        shape_min_image(&s->box, d);
        if (!(d[0] * d[0] + d[1] * d[1] + d[2] * d[2] < R2))
            continue;
        shape_rot rj;
        shape_rot_of(dim, s->ori + 4 * j, &rj);
        if (shape_overlap(&s->shape, &rt, &s->shape, &rj, d))
            return;
    }
    memcpy(s->x + 3 * i, t, sizeof t);
    memcpy(s->ori + 4 * i, o, sizeof o);
    s->cnt[rotation ? 3 : 1]++;
}

static int volume_moves(shape_system *s)
{
    for (int k = 0; s->npt && k < s->volume_moves; k++)
        if (s->box_moves == SHAPE_BOX_ISOTROPIC ? shape_volume_move(s) : shape_box_move(s))
            return -1;
    return 0;
}

int shape_sweep(shape_system *s)
{
    if (s->serial) {
        for (int64_t k = 0; k < s->N; k++)
            serial_move(s, (uint64_t)k);
        s->sweeps++;
        s->step++;
        return volume_moves(s);
    }
    int order[8];
    carlo_cells_set_order(s->dim, s->seed, SHAPE_PURPOSE_SETS, s->sweeps, order);
    for (int k = 0; k < (1 << s->dim); k++)
        if (shape_subsweep(s, order[k]))
            return -1;
    if (shape_shift_cells(s))
        return -1;
    s->step++;
    return volume_moves(s);
}

/* ---------- state ---------- */

int shape_state(shape_system *s, double *x, uint32_t *ori)
{
    const int64_t N = s->N;
    if (s->serial) {
        if (x)
            memcpy(x, s->x, sizeof(double) * 3 * (size_t)N);
        if (ori)
            memcpy(ori, s->ori, sizeof(uint32_t) * 4 * (size_t)N);
        return 0;
    }
    if (shape_fetch(s))
        return -1;
    const int naux = s->grid.naux;
    double *r = carlo_malloc(carlo_mulsize((size_t)N, 3 * sizeof(double)), "positions");
    uint32_t *aux = r ? carlo_malloc(carlo_mulsize((size_t)N, (size_t)naux * sizeof(uint32_t)), "words") : NULL;
    if (!aux) {
        free(r);
        return -1;
    }
    unsigned char *seen = carlo_calloc((size_t)N, 1, "tags");
    int64_t n = seen ? carlo_cells_extract(&s->grid, &s->cur, r, aux) : 0;
    int rc = seen ? 0 : -1;
    for (int64_t k = 0; k < n && rc == 0; k++) {
        uint32_t tag = aux[(size_t)k * (size_t)naux];
        if (tag >= (uint32_t)N || seen[tag]) {
            rc = carlo_seterr("a particle carries tag %u of %lld (twice, or out of range)", tag, (long long)N);
            break;
        }
        seen[tag] = 1;
        if (x) {
            for (int a = 0; a < 3; a++) {
                double v = a < s->dim ? r[3 * k + a] + s->origin[a] : 0.0;
                if (a < s->dim)
                    v = v - floor(v / s->box.L[a]) * s->box.L[a] - 0.5 * s->box.L[a];
                x[3 * (int64_t)tag + a] = v;
            }
            if (s->mv.skew) { /* skew coordinates into the position */
                double sk[3] = {x[3 * (int64_t)tag], x[3 * (int64_t)tag + 1], x[3 * (int64_t)tag + 2]};
                carlo_box_skew_to_pos(&s->box, sk, x + 3 * (int64_t)tag);
            }
        }
        if (ori)
            for (int w = 0; w < 4; w++)
                ori[4 * (int64_t)tag + w] = w + 1 < naux ? aux[(size_t)k * (size_t)naux + (size_t)w + 1] : 0u;
    }
    if (n != N && rc == 0)
        rc = carlo_seterr("the cells hold %lld particles, not %lld", (long long)n, (long long)N);
    free(seen);
    free(r);
    free(aux);
    return rc;
}

void shape_orient_values(int dim, const uint32_t o[4], double out[4])
{
    if (dim == 2) {
        out[0] = (double)o[0] * (2 * PI / 4294967296.0);
        out[1] = out[2] = out[3] = 0;
        return;
    }
    for (int k = 0; k < 4; k++)
        out[k] = (double)shape_word_float(o[k]);
}

int shape_orient_words(int dim, const double in[4], uint32_t o[4])
{
    if (dim == 2) {
        double t = in[0] / (2 * PI);
        t -= floor(t);
        double k = rint(t * 4294967296.0);
        o[0] = k >= 4294967296.0 ? 0u : (uint32_t)k;
        o[1] = o[2] = o[3] = 0;
        return 0;
    }
    double l = sqrt(in[0] * in[0] + in[1] * in[1] + in[2] * in[2] + in[3] * in[3]);
    if (!(l > 0) || !isfinite(l))
        return carlo_seterr("a quaternion must be finite and not 0");
    for (int k = 0; k < 4; k++)
        o[k] = shape_float_word((float)(in[k] / l));
    return 0;
}

/* ---------- checks ---------- */

int shape_overlaps_of(const shape_def *sh, const carlo_box *b, int64_t N, const double *x,
                      const uint32_t *ori, int64_t *count, int64_t *pairs, int64_t max)
{
    /* every particle listed first, then each pair seen from its later particle (j < k: the
     * pairs in the order of inserting and checking one particle after another), the
     * particles in parallel */
    shape_plain pl;
    if (shape_plain_init(&pl, b, N, 2.0 * sh->R, x))
        return -1;
    int64_t *n = carlo_malloc(carlo_mulsize((size_t)(N > 0 ? N : 1), sizeof(int64_t)), "overlap counts");
    if (!n) {
        shape_plain_free(&pl);
        return -1;
    }
    for (int64_t k = 0; k < N; k++)
        shape_plain_insert(&pl, k);
    int64_t total = 0;
    int stop = 0;
#pragma omp parallel for schedule(dynamic, 1024) reduction(+ : total) reduction(| : stop) if (N > 4096)
    for (int64_t k = 0; k < N; k++) {
        n[k] = 0;
        if ((k & 1023) == 0 && carlo_interrupted)
            stop = 1;
        if (stop)
            continue;
        n[k] = shape_plain_list(&pl, sh, x + 3 * k, ori + 4 * k, ori, k, NULL, 0, k);
        total += n[k];
    }
    *count = total;
    int64_t got = 0;
    for (int64_t k = 0; !stop && k < N && got < max; k++) {
        int64_t hits[64];
        if (n[k] == 0)
            continue;
        int64_t m = shape_plain_list(&pl, sh, x + 3 * k, ori + 4 * k, ori, k, hits, 64, k);
        for (int64_t h = 0; h < m && h < 64 && got < max; h++, got++) {
            pairs[2 * got] = k;
            pairs[2 * got + 1] = hits[h];
        }
    }
    free(n);
    shape_plain_free(&pl);
    return stop ? carlo_seterr("interrupted") : 0;
}

int shape_verify(shape_system *s)
{
    if (!s->serial && (shape_fetch(s) || carlo_cells_verify(&s->grid, &s->cur, s->N)))
        return -1;
    double *x = carlo_malloc(carlo_mulsize((size_t)s->N, 3 * sizeof(double)), "positions");
    uint32_t *o = x ? carlo_malloc(carlo_mulsize((size_t)s->N, 4 * sizeof(uint32_t)), "orientations") : NULL;
    int rc = -1;
    if (o && shape_state(s, x, o) == 0) { /* N particles, tags a permutation */
        int64_t count, pairs[2];
        rc = 0;
        if (shape_overlaps_of(&s->shape, &s->box, s->N, x, o, &count, pairs, 1))
            rc = -1;
        else if (count)
            rc = carlo_seterr("%lld overlapping pairs, the first (%lld, %lld)", (long long)count,
                              (long long)pairs[0] + 1, (long long)pairs[1] + 1);
    }
    free(x);
    free(o);
    return rc;
}
