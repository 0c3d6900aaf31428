/* lj_cb.c — the checkerboard algorithm of the Lennard-Jones model (lj_cb.h): planning and
 * filling the cell grid, runs of sweeps and single sub-sweeps, positions and Widom insertions
 * read from the cells, checkpoints and restore. The sweeps themselves are the backends'
 * (lj_cb_cpu.c, cuda/lj_cb.cu); the system file reaches this file through lj_cb_algo. */
#include "lj/lj_cb.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h"

const lj_cb_backend *lj_cb_gpu_backend;

static const lj_algo lj_cb_algo;

/* The sum order when none is asked for, by the system's size alone (never by the machine, so
 * that a seed gives one chain everywhere): near candidates (one GPU warp per cell) from this
 * many active cells per sub-sweep (20^3 cells: 1.5 times as fast as 128 lanes), every
 * candidate of the neighbour cells below, where one warp per cell leaves the GPU idle (16^3:
 * 128 lanes 7 % faster; H100, rho = 0.8: scripts/bench/lj.lua, BENCHMARKS.md). */
#define LJ_CB_NEAR_FROM 1000

const char *lj_cb_order_name(const lj_cb_system *s)
{
    return s->geom.lanes == LJ_ORDER_NEAR ? "near" : "cell";
}

/* The cell grid, the float geometry, passes and the sum order. */
static int setup(lj_cb_system *s, const lj_params *p)
{
    carlo_box box = carlo_box_make(p->dim, p->box);
    /* a hair above rc: the float width must not round below the cutoff */
    if (carlo_cells_plan(&s->grid, &box, p->rc * (1.0 + 1e-6), INFINITY, p->rc, 1, 1))
        return carlo_seterr("mode = \"checkerboard\": %s (cells at least rc = %g wide, an even "
                            "number of at least 2 per axis)", carlo_errmsg(), p->rc);
    lj_cbgeom *g = &s->geom;
    g->dim = p->dim;
    for (int a = 0; a < 3; a++) {
        g->w[a] = s->grid.w[a];
        g->h[a] = s->grid.q; /* coordinates within two cells exact in the active cell's frame */
    }
    g->rc2 = (float)(p->rc * p->rc);
    g->rcm = (float)(p->rc + 1e-3 * (1.0 + p->rc));
    if (p->shift) { /* u(rc) by lj_pair_f's operations */
        float ir2 = 1.0f / g->rc2, ir6 = ir2 * ir2 * ir2;
        g->ushift = 4.0f * ir6 * (ir6 - 1.0f);
    }
    int passes = p->passes ? p->passes : 1;
    if (passes < 1 || passes > 1000)
        return carlo_seterr("passes must be an integer from 1 to 1000 (got %d)", p->passes);
    s->passes = passes;
    if (p->order && p->order != LJ_ORDER_NEAR && p->order != LJ_ORDER_CELL)
        return carlo_seterr("the sum order must be near (%d lanes) or cell (%d lanes) (got %d lanes)",
                            LJ_ORDER_NEAR, LJ_ORDER_CELL, p->order);
    g->lanes = p->order ? p->order
                        : carlo_cell_set_size(&s->grid) >= LJ_CB_NEAR_FROM ? LJ_ORDER_NEAR : LJ_ORDER_CELL;
    return 0;
}

/* Half the narrowest cell: longer moves nearly all leave the cell. */
static double delta_max(const lj_system *ls)
{
    const lj_cb_system *s = (const lj_cb_system *)ls;
    double w = s->geom.w[0];
    for (int a = 1; a < s->dim; a++)
        w = fmin(w, s->geom.w[a]);
    return 0.5 * w;
}

/* ---------- filling the grid ---------- */

static int max_count(const lj_cb_system *s, const double *pos, int *most)
{
    const carlo_cell_grid *g = &s->grid;
    uint32_t *cnt = carlo_calloc((size_t)g->ncells, sizeof *cnt, "cell counts");
    if (!cnt)
        return -1;
    *most = 0;
    for (uint32_t i = 0; i < s->N; i++) {
        int xyz[3] = {0, 0, 0};
        for (int a = 0; a < g->dim; a++) {
            int k = (int)floor(pos[3 * i + a] / g->width[a]);
            xyz[a] = k < 0 ? 0 : (k >= g->m[a] ? g->m[a] - 1 : k);
        }
        int64_t c = carlo_cell_index(g, xyz[0], xyz[1], xyz[2]);
        if ((int)++cnt[c] > *most)
            *most = (int)cnt[c];
    }
    free(cnt);
    return 0;
}

static int install(lj_cb_system *s, const double *pos)
{
    carlo_cell_grid *g = &s->grid;
    int most;
    if (max_count(s, pos, &most))
        return -1;
    /* room for fluctuations; a shift that overfills a cell makes every cell larger. Kept
     * small: a GPU block stages 27 cells of nmax slots in shared memory */
    int nmax = most + most / 2 + 8;
    if (nmax > CARLO_CELL_NMAX_LIMIT)
        nmax = CARLO_CELL_NMAX_LIMIT;
    if (most > nmax)
        return carlo_seterr("a cell would hold %d particles, more than %d", most, CARLO_CELL_NMAX_LIMIT);
    g->nmax = nmax;
    carlo_cell_data d;
    uint32_t *index = carlo_malloc(sizeof *index * s->N, "particle indices");
    if (!index || lj_cb_cells_alloc(s, &d)) {
        free(index);
        return -1;
    }
    for (uint32_t i = 0; i < s->N; i++)
        index[i] = i;
    int rc = carlo_cells_fill(g, &d, s->N, pos, index);
    free(index);
    /* onto the coordinate grid (a displacement of at most h / 2) */
    for (int64_t c = 0; rc == 0 && c < g->ncells; c++)
        for (int i = 0; i < (int)d.count[c]; i++)
            for (int a = 0; a < g->dim; a++) {
                float *u = &d.pos[carlo_cell_slot(g, c, i, a)];
                float h = s->geom.h[a];
                float v = (float)(rint((double)*u / (double)h) * (double)h);
                if (!(v < g->w[a]))
                    v = g->w[a] - h;
                *u = v;
            }
    if (rc == 0)
        rc = lj_cb_fresh(s, &d, &s->U0, &s->W0);
    double *acc = rc ? NULL : carlo_calloc((size_t)g->ncells * 2, sizeof *acc, "per-cell sums");
    if (!rc && !acc)
        rc = -1;
    if (!rc)
        rc = s->be->upload(s, &d, acc, acc + g->ncells);
    s->U = s->U0;
    s->W = s->W0;
    free(acc);
    carlo_cell_data_free(&d);
    return rc;
}

static void destroy(lj_system *ls)
{
    lj_cb_system *s = LJ_CB(ls);
    if (s->be && s->impl)
        s->be->destroy(s);
    free(s->sites);
    free(s);
}

/* The system without its configuration. */
static lj_cb_system *create_bare(const lj_params *p)
{
    if (lj_check_params(p))
        return NULL;
    const lj_cb_backend *be = &lj_cb_cpu_backend;
    if (p->device == CARLO_GPU) {
        if (!lj_cb_gpu_backend) {
            carlo_seterr("this carlo was built without CUDA");
            return NULL;
        }
        be = lj_cb_gpu_backend;
    }
    lj_cb_system *s = carlo_calloc(1, sizeof *s, "a Lennard-Jones system");
    if (!s)
        return NULL;
    lj_setup(&s->lj, p, &lj_cb_algo);
    s->be = be;
    if (setup(s, p)) {
        destroy(&s->lj);
        return NULL;
    }
    if (s->delta > delta_max(&s->lj)) {
        carlo_seterr("delta must be a number in (0, %.17g], half the narrowest cell (got %g)",
                     delta_max(&s->lj), s->delta);
        destroy(&s->lj);
        return NULL;
    }
    if (be->create(s)) {
        destroy(&s->lj);
        return NULL;
    }
    return s;
}

lj_system *lj_cb_create(const lj_params *p)
{
    lj_cb_system *s = create_bare(p);
    if (!s)
        return NULL;
    double *pos = carlo_malloc(carlo_mulsize(sizeof(double) * 3, s->N), "initial positions");
    int rc = !pos || lj_initial_positions(&s->lj, p, pos) || install(s, pos);
    free(pos);
    if (rc) {
        destroy(&s->lj);
        return NULL;
    }
    return &s->lj;
}

/* ---------- runs ---------- */

void lj_cb_set_order(const lj_cb_system *s, int order[8])
{
    carlo_cells_set_order(s->dim, s->seed, LJ_PURPOSE_CB_SETS, s->step, order);
}

/* The place of each set in sweep s->step's order. */
static void set_places(const lj_cb_system *s, int place[8])
{
    int order[8];
    lj_cb_set_order(s, order);
    for (int q = 0; q < (1 << s->dim); q++)
        place[order[q]] = q;
}

static int substep(lj_cb_system *s, int set, const int place[8])
{
    if (s->be->subsweep(s, set, place[set]))
        return lj_fail(&s->lj);
    s->sets_done |= 1u << set;
    if (s->sets_done + 1 == 1u << (1 << s->dim)) { /* every set: the sweep ends with its shift */
        if (s->be->shift(s))
            return lj_fail(&s->lj);
        s->sets_done = 0;
    }
    return 0;
}

int lj_cb_substep(lj_cb_system *s, int set)
{
    if (carlo_sys_alive(&s->sys))
        return -1;
    if (set < 0 || set >= 1 << s->dim)
        return carlo_seterr("the set must be from 0 to %d (got %d)", (1 << s->dim) - 1, set);
    if (s->sets_done >> set & 1)
        return carlo_seterr("set %d has had its sub-sweep in sweep %llu already; the sweep ends "
                            "(with the cell shift) after the sub-sweeps of all %d sets", set,
                            (unsigned long long)s->step, 1 << s->dim);
    int place[8];
    set_places(s, place);
    return substep(s, set, place);
}

/* n sweeps; a sweep begun by substep is finished first (its other sets in their order). */
static int sweeps(lj_system *ls, uint64_t n)
{
    lj_cb_system *s = LJ_CB(ls);
    if (carlo_sys_alive(&s->sys))
        return -1;
    if (n && s->sets_done) {
        int place[8], order[8];
        set_places(s, place);
        for (int q = 0; q < (1 << s->dim); q++)
            order[place[q]] = q;
        for (int q = 0; q < (1 << s->dim) && s->sets_done; q++)
            if (!(s->sets_done >> order[q] & 1) && substep(s, order[q], place))
                return -1;
        n--;
    }
    if (n && s->be->sweeps(s, n))
        return lj_fail(ls);
    return 0;
}

static int tune_chunk(lj_system *s)
{
    return sweeps(s, 1);
}

static int sync_(lj_system *s)
{
    return LJ_CB(s)->be->sync(LJ_CB(s)) ? lj_fail(s) : 0;
}

static int fresh(lj_system *s, double *U, double *W)
{
    return LJ_CB(s)->be->fresh(LJ_CB(s), U, W) ? lj_fail(s) : 0;
}

/* ---------- reading the cells ---------- */

/* The 27 (9) neighbour offsets in the canonical order: dz, dy, dx from -1 to 1. */
static void offset_of(int dim, int q, int off[3])
{
    off[0] = q % 3 - 1;
    off[1] = (q / 3) % 3 - 1;
    off[2] = dim == 3 ? q / 9 - 1 : 0;
}

static int positions(lj_system *ls, double *pos)
{
    return lj_cb_positions(LJ_CB(ls), pos);
}

int lj_cb_fetch_cells(lj_cb_system *s, carlo_cell_data *d)
{
    if (lj_cb_cells_alloc(s, d))
        return -1;
    if (s->be->download(s, d, NULL, NULL)) {
        carlo_cell_data_free(d);
        return lj_fail(&s->lj);
    }
    return 0;
}

int lj_cb_positions(lj_cb_system *s, double *pos)
{
    const carlo_cell_grid *g = &s->grid;
    carlo_cell_data d;
    if (lj_cb_fetch_cells(s, &d))
        return -1;
    int64_t k = 0;
    for (int64_t c = 0; c < g->ncells; c++) {
        int xyz[3];
        carlo_cell_coords(g, c, xyz);
        for (int i = 0; i < (int)d.count[c]; i++, k++) {
            uint32_t idx = d.aux[carlo_cell_slot(g, c, i, 0)];
            if (idx >= s->N)
                continue;
            for (int a = 0; a < 3; a++) {
                double x = 0.0;
                if (a < g->dim && s->sites) /* the sites' frame: the cell shifts undone */
                    x = lj_cb_site_frame(s, a, xyz[a], d.pos[carlo_cell_slot(g, c, i, a)]);
                else if (a < g->dim)
                    x = lj_wrap((double)xyz[a] * g->width[a] + (double)d.pos[carlo_cell_slot(g, c, i, a)],
                                s->g.L[a]);
                pos[3 * (size_t)idx + a] = x;
            }
        }
    }
    carlo_cell_data_free(&d);
    if (k != (int64_t)s->N)
        return carlo_seterr("the cells hold %lld particles, not %u", (long long)k, s->N);
    return 0;
}

static int widom(lj_system *ls, uint32_t n, uint64_t sample, double *out)
{
    lj_cb_system *s = LJ_CB(ls);
    const carlo_cell_grid *g = &s->grid;
    const lj_cbgeom *G = &s->geom;
    carlo_cell_data d;
    if (lj_cb_fetch_cells(s, &d))
        return -1;
    double tail = lj_widom_tail(ls);
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < (int64_t)n; k++) {
        if (carlo_interrupted) /* Ctrl-C: the rest is skipped, lj_widom reports it */
            continue;
        double p[3];
        lj_widom_position(&s->g, s->seed, sample, (uint32_t)k, p);
        int xyz[3] = {0, 0, 0};
        float a[3] = {0, 0, 0};
        for (int x = 0; x < g->dim; x++) {
            int c = (int)floor(p[x] / g->width[x]);
            c = c < 0 ? 0 : (c >= g->m[x] ? g->m[x] - 1 : c);
            xyz[x] = c;
            a[x] = carlo_cell_clamp(g, x, (float)(p[x] - (double)c * g->width[x]));
        }
        double su = 0.0;
        for (int q = 0; q < lj_neighbour_count(g->dim); q++) {
            int off[3];
            float sh[3];
            offset_of(g->dim, q, off);
            int64_t cq = carlo_cell_neighbor(g, xyz, off, sh);
            for (int j = 0; j < (int)d.count[cq]; j++) {
                float b[3] = {0, 0, 0};
                for (int x = 0; x < g->dim; x++)
                    b[x] = d.pos[carlo_cell_slot(g, cq, j, x)];
                float u, w;
                lj_pair_f(lj_cb_r2(a, b, sh), G->rc2, G->ushift, &u, &w);
                su += (double)u;
            }
        }
        out[k] = lj_widom_factor(su, tail, s->beta);
    }
    carlo_cell_data_free(&d);
    return 0;
}

/* ---------- checkpoints ---------- */

/* The tether: lj/tether (f64: lambda, origin x, y, z) and lj/sites (f64, N x 3) when sites are
 * set (absent: no tether). */
static int tether_checkpoint(lj_cb_system *s, carlo_frame *f)
{
    if (!s->sites)
        return 0;
    double t[4] = {s->lambda, s->origin[0], s->origin[1], s->origin[2]};
    return carlo_frame_add_copy(f, "lj/tether", CARLO_F64, 4, 1, t) ||
                   carlo_frame_add_copy(f, "lj/sites", CARLO_F64, (uint64_t)s->N, 3, s->sites)
               ? -1
               : 0;
}

static int tether_restore(lj_cb_system *s, const carlo_frame *f)
{
    if (!carlo_frame_find(f, "lj/tether"))
        return 0;
    const double *t = carlo_frame_expect(f, "lj/tether", CARLO_F64, 4, 1);
    const double *x = t ? carlo_frame_expect(f, "lj/sites", CARLO_F64, (uint64_t)s->N, 3) : NULL;
    if (!x)
        return -1;
    if (!(t[0] >= 0) || !(t[0] <= LJ_LAMBDA_MAX))
        return carlo_seterr("bad lj/tether: lambda %.17g", t[0]);
    for (int a = 0; a < 3; a++)
        if (!(t[1 + a] >= 0) || !(t[1 + a] < (a < s->dim ? s->g.L[a] + s->g.L[a] : 1.0)))
            return carlo_seterr("bad lj/tether: origin %.17g", t[1 + a]);
    for (uint64_t k = 0; k < 3 * (uint64_t)s->N; k++)
        if (!isfinite(x[k]))
            return carlo_seterr("bad lj/sites: entry %llu is %g", (unsigned long long)k, x[k]);
    const size_t bytes = carlo_mulsize((size_t)s->N, 3 * sizeof(double));
    if (!(s->sites = carlo_malloc(bytes, "tether sites")))
        return -1;
    memcpy(s->sites, x, bytes);
    s->lambda = t[0];
    for (int a = 0; a < 3; a++)
        s->origin[a] = t[1 + a];
    return s->be->sites(s);
}

/* The cells as they are: lj/cb_shape (i32: m0 m1 m2 nmax lanes passes), lj/cb_pos (f32,
 * dim nmax x ncells), lj/cb_index (u32, nmax x ncells), lj/cb_count (u32), lj/cb_acc (f64,
 * 2 x ncells: the per-cell energy and virial sums), lj/cb_sets_done (u32: the sets of the
 * sweep under way that substep did). */
static int checkpoint(lj_system *ls, carlo_frame *f)
{
    lj_cb_system *s = LJ_CB(ls);
    const carlo_cell_grid *g = &s->grid;
    uint32_t done = s->sets_done;
    if (lj_checkpoint_head(ls, f, 0, 0, 0, s->U0, s->W0) ||
        carlo_frame_add_copy(f, "lj/cb_sets_done", CARLO_U32, 1, 1, &done))
        return -1;
    carlo_cell_data d;
    if (lj_cb_cells_alloc(s, &d))
        return -1;
    double *acc = carlo_malloc(carlo_mulsize((size_t)g->ncells, 2 * sizeof(double)), "a checkpoint");
    if (!acc || s->be->download(s, &d, acc, acc + g->ncells)) {
        if (acc)
            lj_fail(ls);
        free(acc);
        carlo_cell_data_free(&d);
        return -1;
    }
    int32_t shape[6] = {g->m[0], g->m[1], g->m[2], g->nmax, s->geom.lanes, s->passes};
    uint64_t nc = (uint64_t)g->ncells, nm = (uint64_t)g->nmax;
    float *pos = d.pos;
    uint32_t *aux = d.aux, *count = d.count;
    if (carlo_frame_add_copy(f, "lj/cb_shape", CARLO_I32, 6, 1, shape) ||
        carlo_frame_add_owned(f, "lj/cb_acc", CARLO_F64, 2, nc, acc)) {
        carlo_cell_data_free(&d);
        return -1;
    }
    d.pos = NULL;
    if (carlo_frame_add_owned(f, "lj/cb_pos", CARLO_F32, (uint64_t)g->dim * nm, nc, pos)) {
        carlo_cell_data_free(&d);
        return -1;
    }
    d.aux = NULL;
    if (carlo_frame_add_owned(f, "lj/cb_index", CARLO_U32, nm, nc, aux)) {
        carlo_cell_data_free(&d);
        return -1;
    }
    if (carlo_frame_add_owned(f, "lj/cb_count", CARLO_U32, nc, 1, count))
        return -1;
    return tether_checkpoint(s, f);
}

/* Cells from a checkpoint: every invariant checked before they are used. */
static int restore_cells(lj_cb_system *s, const carlo_frame *f)
{
    carlo_cell_grid *g = &s->grid;
    const int32_t *shape = carlo_frame_expect(f, "lj/cb_shape", CARLO_I32, 6, 1);
    if (!shape)
        return -1;
    if (shape[0] != g->m[0] || shape[1] != g->m[1] || shape[2] != g->m[2] || shape[3] < 1 ||
        shape[3] > CARLO_CELL_NMAX_LIMIT || shape[4] != s->geom.lanes || shape[5] != s->passes)
        return carlo_seterr("lj/cb_shape does not match the box, rc, sum order and passes");
    g->nmax = shape[3];
    uint64_t nc = (uint64_t)g->ncells, nm = (uint64_t)g->nmax;
    const double *acc = carlo_frame_expect(f, "lj/cb_acc", CARLO_F64, 2, nc);
    const float *pos = carlo_frame_expect(f, "lj/cb_pos", CARLO_F32, (uint64_t)g->dim * nm, nc);
    const uint32_t *aux = carlo_frame_expect(f, "lj/cb_index", CARLO_U32, nm, nc);
    const uint32_t *count = carlo_frame_expect(f, "lj/cb_count", CARLO_U32, nc, 1);
    if (!acc || !pos || !aux || !count)
        return -1;
    carlo_cell_data d = {(float *)pos, (uint32_t *)aux, (uint32_t *)count};
    if (carlo_cells_verify(g, &d, s->N))
        return -1;
    uint8_t *seen = carlo_calloc(s->N, 1, "a permutation check");
    if (!seen)
        return -1;
    int rc = 0;
    for (int64_t c = 0; c < g->ncells && rc == 0; c++)
        for (int i = 0; i < (int)count[c] && rc == 0; i++) {
            uint32_t idx = aux[carlo_cell_slot(g, c, i, 0)];
            if (idx >= s->N || seen[idx])
                rc = carlo_seterr("the cells' particle indices are not a permutation");
            else
                seen[idx] = 1;
            for (int a = 0; a < g->dim && rc == 0; a++) {
                double u = pos[carlo_cell_slot(g, c, i, a)], h = s->geom.h[a];
                if (u / h != floor(u / h))
                    rc = carlo_seterr("a position is off the coordinate grid");
            }
        }
    free(seen);
    for (uint64_t c = 0; c < 2 * nc && rc == 0; c++)
        if (!isfinite(acc[c]))
            rc = carlo_seterr("bad per-cell sums");
    if (rc == 0)
        rc = s->be->upload(s, &d, acc, acc + nc);
    if (rc == 0) {
        s->U = s->U0 + lj_cb_total(acc, g->ncells);
        s->W = s->W0 + lj_cb_total(acc + nc, g->ncells);
    }
    return rc;
}

lj_system *lj_cb_restore(const carlo_frame *f, carlo_device_kind device)
{
    lj_head h;
    if (lj_restore_head(f, device, &h))
        return NULL;
    const int32_t *cs = carlo_frame_expect(f, "lj/cb_shape", CARLO_I32, 6, 1);
    if (!cs)
        return NULL;
    if (cs[4] != LJ_ORDER_NEAR && cs[4] != LJ_ORDER_CELL) {
        carlo_seterr("lj/cb_shape: a sum over %d lanes (this carlo sums over %d, near, or %d, cell)",
                     cs[4], LJ_ORDER_NEAR, LJ_ORDER_CELL);
        return NULL;
    }
    h.p.order = cs[4];
    h.p.passes = cs[5];
    const uint32_t *done = NULL;
    if (carlo_frame_find(f, "lj/cb_sets_done") && /* absent in older checkpoints */
        !(done = carlo_frame_expect(f, "lj/cb_sets_done", CARLO_U32, 1, 1)))
        return NULL;
    lj_cb_system *s = create_bare(&h.p);
    if (!s)
        return NULL;
    s->U0 = h.U;
    s->W0 = h.W;
    s->sets_done = done ? *done : 0;
    if (s->sets_done >= (1u << (1 << s->dim)) - 1) { /* all of them: the sweep would have ended */
        carlo_seterr("bad lj/cb_sets_done (%u)", s->sets_done);
        destroy(&s->lj);
        return NULL;
    }
    if (restore_cells(s, f) || tether_restore(s, f)) {
        destroy(&s->lj);
        return NULL;
    }
    lj_restore_counters(&s->lj, &h);
    return &s->lj;
}

static const lj_algo lj_cb_algo = {
    .name = "checkerboard",
    .sweeps = sweeps,
    .sync = sync_,
    .positions = positions,
    .fresh = fresh,
    .widom = widom,
    .delta_max = delta_max,
    .tune_chunk = tune_chunk,
    .checkpoint = checkpoint,
    .destroy = destroy,
};
