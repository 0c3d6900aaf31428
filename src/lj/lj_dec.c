/* lj_dec.c — the decomposition algorithm of the Lennard-Jones model (lj_dec.h): its cell grid
 * and lists, creation and install, runs of trial moves and sweeps, positions, Widom
 * insertions, checkpoints and restore. The moves themselves are the backends' (lj_dec_cpu.c,
 * cuda/lj_dec.cu); the system file reaches this file through lj_dec_algo. */
#include "lj/lj_dec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

const lj_dec_backend *lj_dec_gpu_backend;

static const lj_algo lj_dec_algo;

const char *lj_sum_name(lj_sum s) { return s == LJ_SUM_CELLS ? "cells" : "all"; }
const char *lj_kernel_name(lj_kernel_variant k)
{
    return k == LJ_KERNEL_LAUNCH ? "launch" : k == LJ_KERNEL_GRAPH ? "graph" : "persistent";
}

/* ---------- cell lists in canonical form ---------- */


/* Fresh lists: every particle appended to its cell in index order. */
int lj_cells_canonical(const lj_dec_system *s, const double *pos, lj_cell_lists *out)
{
    int32_t *cell = carlo_malloc(sizeof *cell * s->N, "cell lists");
    int32_t *start = cell ? carlo_calloc((size_t)s->ncell + 1, sizeof *start, "cell lists") : NULL;
    if (!start) {
        free(cell);
        return -1;
    }
    memset(out->count, 0, sizeof *out->count * (size_t)s->ncell);
    for (uint32_t i = 0; i < s->N; i++) {
        cell[i] = lj_cell_of(&s->g, pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]);
        out->count[cell[i]]++;
    }
    for (int c = 0; c < s->ncell; c++)
        start[c + 1] = start[c] + out->count[c];
    for (uint32_t i = 0; i < s->N; i++)
        out->order[start[cell[i]]++] = (int32_t)i;
    free(start);
    free(cell);
    return 0;
}

/* Lists from a checkpoint are untrusted: a permutation, and every particle in its own cell. */
static int check_cell_lists(const lj_dec_system *s, const double *pos, const lj_cell_lists *c)
{
    uint8_t *seen = carlo_calloc(s->N, 1, "a permutation check");
    if (!seen)
        return -1;
    int64_t k = 0;
    int rc = 0;
    for (int cell = 0; cell < s->ncell && rc == 0; cell++) {
        if (c->count[cell] < 0 || k + c->count[cell] > (int64_t)s->N) {
            rc = carlo_seterr("cell %d has a bad count %d", cell, c->count[cell]);
            break;
        }
        for (int32_t m = 0; m < c->count[cell]; m++, k++) {
            int32_t i = c->order[k];
            if (i < 0 || (uint32_t)i >= s->N || seen[i]) {
                rc = carlo_seterr("the cell lists are not a permutation of the particles");
                break;
            }
            seen[i] = 1;
            if (lj_cell_of(&s->g, pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]) != cell) {
                rc = carlo_seterr("particle %d is listed in cell %d but lies elsewhere", i + 1, cell);
                break;
            }
        }
    }
    if (rc == 0 && k != (int64_t)s->N)
        rc = carlo_seterr("the cell lists hold %lld of %u particles", (long long)k, s->N);
    free(seen);
    return rc;
}

/* ---------- creation ---------- */

/* The sum's cell grid: cells at least rc wide, taken when every axis has at least 4 of them
 * (asked for: at least 3, so that the 27 neighbours are distinct). */
static int setup_cells(lj_dec_system *s, const lj_params *p)
{
    lj_geom *g = &s->g;
    int n[3] = {1, 1, 1};
    int fits3 = 1, fits4 = 1;
    for (int a = 0; a < p->dim; a++) {
        double k = floor(g->L[a] / (p->rc * (1.0 + 1e-10)));
        n[a] = k > 1024 ? 1024 : (int)k;
        fits3 &= n[a] >= 3;
        fits4 &= n[a] >= 4;
    }
    int sum = p->sum < 0 ? (fits4 ? LJ_SUM_CELLS : LJ_SUM_ALL) : p->sum;
    if (sum == LJ_SUM_CELLS && !fits3)
        return carlo_seterr("energy_sum = \"cells\" needs at least 3 cells at least rc wide per "
                            "axis: the box is too small for rc = %g", p->rc);
    s->sum = (lj_sum)sum;
    s->ncell = 0;
    if (s->sum == LJ_SUM_CELLS) {
        int64_t nc = 1;
        for (int a = 0; a < p->dim; a++) {
            g->n[a] = n[a];
            g->w[a] = g->L[a] / n[a];
            nc *= n[a];
        }
        if (nc > (1 << 28))
            return carlo_seterr("too many cells (%lld)", (long long)nc);
        s->ncell = (int)nc;
    }
    return 0;
}

/* Hand positions (and cell lists, given or fresh) to the backend; U and W from scratch. */
static int install(lj_dec_system *s, const double *pos, const lj_cell_lists *given)
{
    if (lj_energy_fresh(&s->lj, pos, &s->U, &s->W))
        return -1;
    lj_cell_lists cells = {0};
    const lj_cell_lists *use = NULL;
    if (s->sum == LJ_SUM_CELLS) {
        if (given) {
            if (check_cell_lists(s, pos, given))
                return -1;
            use = given;
        } else {
            if (lj_cell_lists_alloc(s, &cells) || lj_cells_canonical(s, pos, &cells)) {
                lj_cell_lists_free(&cells);
                return -1;
            }
            use = &cells;
        }
    }
    int rc = s->be->upload(s, pos, use);
    lj_cell_lists_free(&cells);
    return rc;
}

static void destroy(lj_system *ls)
{
    lj_dec_system *s = LJ_DEC(ls);
    if (s->be && s->impl)
        s->be->destroy(s);
    free(s);
}

/* The system without its configuration. */
static lj_dec_system *create_bare(const lj_params *p)
{
    if (lj_check_params(p))
        return NULL;
    const lj_dec_backend *be = &lj_dec_cpu_backend;
    if (p->device == CARLO_GPU) {
        if (!lj_dec_gpu_backend) {
            carlo_seterr("this carlo was built without CUDA");
            return NULL;
        }
        be = lj_dec_gpu_backend;
    }
    lj_dec_system *s = carlo_calloc(1, sizeof *s, "a Lennard-Jones system");
    if (!s)
        return NULL;
    lj_setup(&s->lj, p, &lj_dec_algo);
    s->kernel = LJ_KERNEL_PERSISTENT;
    s->moves = p->step * p->N;
    s->be = be;
    if (setup_cells(s, p) || be->create(s)) {
        destroy(&s->lj);
        return NULL;
    }
    return s;
}

lj_system *lj_dec_create(const lj_params *p)
{
    lj_dec_system *s = create_bare(p);
    if (!s)
        return NULL;
    double *pos = carlo_malloc(carlo_mulsize(sizeof(double) * 3, s->N), "initial positions");
    int rc = !pos || lj_initial_positions(&s->lj, p, pos) || install(s, pos, NULL);
    free(pos);
    if (rc) {
        destroy(&s->lj);
        return NULL;
    }
    return &s->lj;
}

/* ---------- runs ---------- */

int lj_dec_moves(lj_dec_system *s, uint64_t n)
{
    if (carlo_sys_alive(&s->sys))
        return -1;
    if (n == 0)
        return 0;
    if (s->be->moves(s, n))
        return lj_fail(&s->lj);
    s->step = s->moves / s->N;
    return 0;
}

static int sweeps(lj_system *s, uint64_t n)
{
    if (n > UINT64_MAX / s->N)
        return carlo_seterr("too many sweeps");
    return lj_dec_moves(LJ_DEC(s), n * s->N);
}

/* A tuning step: max(200, N) trial moves. */
static int tune_chunk(lj_system *s)
{
    return lj_dec_moves(LJ_DEC(s), s->N < 200 ? 200 : s->N);
}

static int sync_(lj_system *s)
{
    return LJ_DEC(s)->be->sync(LJ_DEC(s)) ? lj_fail(s) : 0;
}

static int positions(lj_system *ls, double *pos)
{
    lj_dec_system *s = LJ_DEC(ls);
    return s->be->download(s, pos, NULL) ? lj_fail(ls) : 0;
}

static int fresh(lj_system *s, double *U, double *W)
{
    double *pos = carlo_malloc(carlo_mulsize(sizeof(double) * 3, s->N), "positions");
    if (!pos)
        return -1;
    int rc = positions(s, pos) || lj_energy_fresh(s, pos, U, W);
    free(pos);
    return rc;
}

static int widom(lj_system *s, uint32_t n, uint64_t sample, double *out)
{
    return LJ_DEC(s)->be->widom(LJ_DEC(s), n, sample, out) ? lj_fail(s) : 0;
}

/* A quarter of the shortest box length. */
static double delta_max(const lj_system *s)
{
    return 0.25 * lj_min_box(s);
}

/* ---------- checkpoints ---------- */

/* lj/position (f64 N x 3) and, for the cells sum, lj/cell_order (i32 N) and lj/cell_count
 * (i32 ncell): the lists in canonical form. */
static int checkpoint(lj_system *ls, carlo_frame *f)
{
    lj_dec_system *s = LJ_DEC(ls);
    if (lj_checkpoint_head(ls, f, (int32_t)s->sum, (int32_t)s->kernel, s->moves, s->U, s->W))
        return -1;
    double *pos = carlo_malloc(carlo_mulsize(sizeof(double) * 3, s->N), "a checkpoint");
    if (!pos)
        return -1;
    lj_cell_lists cells = {0};
    if (s->sum == LJ_SUM_CELLS && lj_cell_lists_alloc(s, &cells)) {
        free(pos);
        return -1;
    }
    if (s->be->download(s, pos, s->sum == LJ_SUM_CELLS ? &cells : NULL)) {
        lj_fail(ls);
        free(pos);
        lj_cell_lists_free(&cells);
        return -1;
    }
    if (carlo_frame_add_owned(f, "lj/position", CARLO_F64, s->N, 3, pos)) {
        lj_cell_lists_free(&cells);
        return -1;
    }
    if (s->sum == LJ_SUM_CELLS) {
        int32_t *order = cells.order, *count = cells.count;
        cells.order = cells.count = NULL;
        if (carlo_frame_add_owned(f, "lj/cell_order", CARLO_I32, s->N, 1, order)) {
            free(count);
            return -1;
        }
        if (carlo_frame_add_owned(f, "lj/cell_count", CARLO_I32, (uint64_t)s->ncell, 1, count))
            return -1;
    }
    return 0;
}

lj_system *lj_dec_restore(const carlo_frame *f, carlo_device_kind device)
{
    lj_head h;
    if (lj_restore_head(f, device, &h))
        return NULL;
    const double *pos = carlo_frame_expect(f, "lj/position", CARLO_F64, h.p.N, 3);
    if (!pos)
        return NULL;
    h.p.positions = pos;
    lj_dec_system *s = create_bare(&h.p);
    if (!s)
        return NULL;
    for (uint32_t i = 0; i < s->N; i++)
        for (int a = 0; a < 3; a++) {
            double x = pos[3 * i + a];
            if (!(a < s->dim ? x >= 0 && x < s->g.L[a] : x == 0)) {
                carlo_seterr("position %u is outside the box", i + 1);
                destroy(&s->lj);
                return NULL;
            }
        }
    lj_cell_lists cells = {0};
    if (s->sum == LJ_SUM_CELLS) {
        cells.order = (int32_t *)carlo_frame_expect(f, "lj/cell_order", CARLO_I32, s->N, 1);
        cells.count = cells.order ? (int32_t *)carlo_frame_expect(f, "lj/cell_count", CARLO_I32,
                                                                  (uint64_t)s->ncell, 1)
                                  : NULL;
        if (!cells.count) {
            destroy(&s->lj);
            return NULL;
        }
    }
    if (install(s, pos, s->sum == LJ_SUM_CELLS ? &cells : NULL)) {
        destroy(&s->lj);
        return NULL;
    }
    /* the running sums continue as they were, not from scratch */
    s->kernel = (lj_kernel_variant)h.kernel;
    s->U = h.U;
    s->W = h.W;
    s->moves = h.moves;
    lj_restore_counters(&s->lj, &h);
    return &s->lj;
}

static const lj_algo lj_dec_algo = {
    .name = "decomposition",
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
