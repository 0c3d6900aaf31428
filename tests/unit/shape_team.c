/* unit/shape/team — the GPU team kernel's way of updating a cell (cuda/shape_team.cuh,
 * shape_team_kernel), played on the host with its lanes taken one after the other (the lanes
 * themselves: tests/unit/shape_warp.cc): a list of the cell's own particles and of the
 * neighbours that can reach the cell (shape_reaches_cell), each move tested first by the bounds
 * of every entry (shape_overlap_bounds), then by XenoCollide on the undecided pairs only
 * (shape_overlap_xeno), 2D orientations kept as the sine and cosine of their rotation, the
 * list's overflow sent to shape_cell_update. For every active cell of many sub-sweeps of dense
 * and dilute systems (pentagons, dodecahedra, ellipsoids, cubes in a tilted box, a list too
 * short for some cells) it must leave the cells and the move counts exactly as
 * shape_cell_update does. And shape_reaches_cell never leaves out a particle the one-thread
 * kernel would test. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/error.h"
#include "shape/shape.h"

#define LIST_MAX 1024

/* The team kernel's cell update with its lanes taken one after the other; lcap entries in the
 * list. Returns 1 when the list overflowed (the cell then went to shape_cell_update). */
static int team_update(const shape_def *sh, const carlo_cell_grid *g, float *pos, uint32_t *aux,
                       const uint32_t *count, const int xyz[3], shape_moves mv, uint64_t seed, uint64_t step,
                       int lcap, uint64_t cnt[4])
{
    static float lp[3][LIST_MAX];
    static uint32_t lw[4][LIST_MAX];
    static double lc[LIST_MAX], ls[LIST_MAX];
    static int cand[LIST_MAX];
    const int dim = g->dim, nw = dim == 2 ? 1 : 4, nq = dim == 2 ? 9 : 27;
    const int64_t c = carlo_cell_index(g, xyz[0], xyz[1], xyz[2]);
    int n = (int)count[c];
    n = n > g->nmax ? g->nmax : n;
    if (n <= 0)
        return 0;
    int ne = n;
    for (int q = 0; q < nq; q++) {
        if (q == nq / 2)
            continue;
        const int off[3] = {q % 3 - 1, q / 3 % 3 - 1, dim == 3 ? q / 9 - 1 : 0};
        float shv[3];
        const int64_t cn = carlo_cell_neighbor(g, xyz, off, shv);
        int m = (int)count[cn];
        m = m > g->nmax ? g->nmax : m;
        for (int j = 0; j < m; j++) {
            float p[3] = {0.0f, 0.0f, 0.0f};
            for (int a = 0; a < dim; a++)
                p[a] = pos[carlo_cell_slot(g, cn, j, a)] + shv[a];
            if (!mv.skew && !shape_reaches_cell(sh, g, p))
                continue;
            if (ne >= lcap) {
                shape_cell_update(sh, g, pos, aux, count, xyz, mv, seed, step, cnt);
                return 1;
            }
            for (int a = 0; a < 3; a++)
                lp[a][ne] = p[a];
            for (int k = 0; k < nw; k++)
                lw[k][ne] = aux[carlo_cell_slot(g, cn, j, 1 + k)];
            ne++;
        }
    }
    for (int e = 0; e < n; e++) {
        for (int a = 0; a < 3; a++)
            lp[a][e] = a < dim ? pos[carlo_cell_slot(g, c, e, a)] + 0.0f : 0.0f;
        for (int k = 0; k < nw; k++)
            lw[k][e] = aux[carlo_cell_slot(g, c, e, 1 + k)];
    }
    if (dim == 2)
        for (int e = 0; e < ne; e++)
            shape_sincos_turn(lw[0][e], &ls[e], &lc[e]);
    int moved = 0;
    for (int s = 0; s < mv.moves; s++) {
        const shape_draw dr = shape_move_draw(dim, n, &mv, seed, step, (uint32_t)c, s);
        const int i = dr.i;
        float tp[3] = {lp[0][i], lp[1][i], lp[2][i]};
        uint32_t o[4] = {lw[0][i], lw[1][i], lw[2][i], lw[3][i]};
        int hit = 0;
        if (dr.rotation) {
            if (dim == 2) {
                o[0] += dr.turn;
            } else {
                const uint32_t q[4] = {o[0], o[1], o[2], o[3]};
                shape_quat_turn(q, mv.rotate, dr.u, o);
            }
        } else {
            for (int a = 0; a < dim; a++) {
                tp[a] = tp[a] + carlo_cell_quantize(g, mv.delta * dr.u[a]);
                hit |= !(tp[a] >= 0.0f && tp[a] < g->w[a]);
            }
        }
        double rs = 0.0, rc = 0.0;
        shape_rot rt;
        if (dim == 2) {
            if (dr.rotation)
                shape_sincos_turn(o[0], &rs, &rc);
            else {
                rs = ls[i];
                rc = lc[i];
            }
            shape_rot_2d(rs, rc, &rt);
        } else {
            shape_rot_of(3, o, &rt);
        }
        int nc = 0;
        for (int e = 0; e < ne && !hit; e++) {
            if (e == i)
                continue;
            double d[3] = {0.0, 0.0, 0.0};
            for (int a = 0; a < dim; a++)
                d[a] = (double)(lp[a][e] - tp[a]);
            if (mv.skew)
                shape_skew_vector(mv.tilt, d);
            const int b = shape_overlap_bounds(sh, sh, d);
            hit = b == 1;
            if (b < 0)
                cand[nc++] = e;
        }
        for (int k = 0; k < nc && !hit; k++) {
            const int e = cand[k];
            double d[3] = {0.0, 0.0, 0.0};
            for (int a = 0; a < dim; a++)
                d[a] = (double)(lp[a][e] - tp[a]);
            if (mv.skew)
                shape_skew_vector(mv.tilt, d);
            shape_rot rj;
            if (dim == 2) {
                shape_rot_2d(ls[e], lc[e], &rj);
            } else {
                const uint32_t w[4] = {lw[0][e], lw[1][e], lw[2][e], lw[3][e]};
                shape_rot_of(3, w, &rj);
            }
            hit = shape_overlap_xeno(sh, &rt, sh, &rj, d);
        }
        cnt[dr.rotation ? 2 : 0]++;
        if (hit)
            continue;
        cnt[dr.rotation ? 3 : 1]++;
        moved = 1;
        for (int a = 0; a < dim; a++)
            lp[a][i] = tp[a];
        for (int k = 0; k < nw; k++)
            lw[k][i] = o[k];
        lc[i] = rc;
        ls[i] = rs;
    }
    for (int e = 0; moved && e < n; e++) {
        for (int a = 0; a < dim; a++)
            pos[carlo_cell_slot(g, c, e, a)] = lp[a][e];
        for (int k = 0; k < nw; k++)
            aux[carlo_cell_slot(g, c, e, 1 + k)] = lw[k][e];
    }
    return 0;
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

/* rounds sub-sweeps of s (a CPU system), each played both ways on copies of its cells, the
 * system swept between them; lcap 0: the kernel's size of list (mean-based, at most 96). */
static void run(const char *name, shape_system *s, int rounds, int lcap)
{
    char label[96];
    if (!s) {
        printf("FAIL unit/shape/team_%s: %s\n", name, carlo_errmsg());
        return;
    }
    int ok = 1, overflows = 0, pairs_tested = 0;
    uint64_t tried = 0, accepted = 0;
    for (int r = 0; r < rounds && ok; r++) {
        const carlo_cell_grid *g = &s->grid;
        int cap = lcap;
        if (cap == 0) {
            const int around = g->dim == 2 ? 9 : 27;
            double want = ceil(1.5 * around * (double)s->N / (double)g->ncells) + 16.0;
            want = fmin(fmin(want, (double)around * g->nmax), 96.0);
            cap = (int)want;
        }
        carlo_cell_data a, b;
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        ok = copy_cells(g, &s->cur, &a) == 0 && copy_cells(g, &s->cur, &b) == 0;
        const int set = r % (1 << g->dim);
        uint64_t ca[4] = {0, 0, 0, 0}, cb[4] = {0, 0, 0, 0};
        for (int64_t t = 0; ok && t < carlo_cell_set_size(g); t++) {
            int xyz[3];
            carlo_cell_active(g, set, t, xyz);
            shape_cell_update(&s->shape, g, a.pos, a.aux, a.count, xyz, s->mv, s->seed, s->substeps + 1000, ca);
            overflows += team_update(&s->shape, g, b.pos, b.aux, b.count, xyz, s->mv, s->seed, s->substeps + 1000,
                                     cap, cb);
        }
        ok = ok && same_cells(g, &a, &b) && memcmp(ca, cb, sizeof ca) == 0;
        tried += ca[0] + ca[2];
        accepted += ca[1] + ca[3];
        pairs_tested++;
        carlo_cell_data_free(&a);
        carlo_cell_data_free(&b);
        ok = ok && shape_sweep(s) == 0;
    }
    snprintf(label, sizeof label, "unit/shape/team_%s", name);
    CHECK(label, ok && accepted > 0 && accepted < tried && (lcap == 0 || overflows > 0),
          "the team's update differs from shape_cell_update after %d sub-sweeps (accepted %llu of %llu, "
          "%d overflows): %s", pairs_tested, (unsigned long long)accepted, (unsigned long long)tried, overflows,
          carlo_errmsg());
    shape_destroy(s);
}

static shape_system *make(int dim, const shape_def *sd, double v1, int64_t N, double phi, const double *L,
                          const double tilt[3], shape_init init, uint64_t seed)
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
    p.moves_per_cell = 6;
    return shape_create(&p);
}

/* shape_reaches_cell against the one-thread kernel's circumsphere test: points p of the cells
 * around, points t of the cell (its corners among them). */
static void reaches(void)
{
    carlo_cell_grid g;
    const double L[3] = {20.3, 17.9, 15.1};
    carlo_box b = carlo_box_make(3, L);
    int ok = carlo_cells_plan(&g, &b, 2.0 * 1.3, INFINITY, 2.0 * 1.3, 4, 5) == 0;
    shape_def s;
    memset(&s, 0, sizeof s);
    s.dim = 3;
    s.R = 1.3;
    const double R2 = 4.0 * s.R * s.R;
    int left_out = 0, wrong = 0;
    for (int trial = 0; ok && trial < 200000; trial++) {
        const carlo_u32x4 r = carlo_rng(5, 0, 0, (uint32_t)trial, 0), u = carlo_rng(5, 0, 1, (uint32_t)trial, 0);
        float p[3], t[3];
        for (int a = 0; a < 3; a++) {
            /* p: a multiple of q in [-w, 2w); t: one in [0, w), a corner one time in four */
            const int32_t wq = g.wq[a];
            p[a] = (float)((int32_t)(r.v[a] % (uint32_t)(3 * wq)) - wq) * g.q;
            const uint32_t tq = (u.v[3] & 3u) == 0 ? ((u.v[a] & 1u) ? (uint32_t)wq - 1u : 0u) : u.v[a] % (uint32_t)wq;
            t[a] = (float)tq * g.q;
        }
        if (shape_reaches_cell(&s, &g, p))
            continue;
        left_out++;
        double d[3];
        for (int a = 0; a < 3; a++)
            d[a] = (double)(p[a] - t[a]);
        wrong += d[0] * d[0] + d[1] * d[1] + d[2] * d[2] < R2;
    }
    CHECK("unit/shape/team_reaches_cell", ok && left_out > 1000 && wrong == 0,
          "%d of %d particles left out would have been tested", wrong, left_out);
}

int main(void)
{
    reaches();
    double pent[15], dod[60], cube[24];
    for (int k = 0; k < 5; k++) {
        pent[3 * k] = cos(2 * 3.141592653589793 * k / 5);
        pent[3 * k + 1] = sin(2 * 3.141592653589793 * k / 5);
        pent[3 * k + 2] = 0;
    }
    for (int k = 0; k < 8; k++)
        for (int a = 0; a < 3; a++)
            cube[3 * k + a] = (k >> a & 1) ? 0.5 : -0.5;
    /* the dodecahedron: the cube's corners and (0, +-1/f, +-f) cyclically, f the golden ratio */
    const double f = (1.0 + sqrt(5.0)) / 2.0;
    for (int k = 0; k < 8; k++)
        for (int a = 0; a < 3; a++)
            dod[3 * k + a] = (k >> a & 1) ? 1.0 : -1.0;
    for (int k = 0; k < 12; k++) {
        const int axis = k / 4;
        const double s1 = (k & 1) ? 1.0 : -1.0, s2 = (k & 2) ? 1.0 : -1.0;
        double *v = dod + 3 * (8 + k);
        v[axis] = 0.0;
        v[(axis + 1) % 3] = s1 / f;
        v[(axis + 2) % 3] = s2 * f;
    }
    const double zero[3] = {0, 0, 0};
    shape_def sd;
    double v1;
    if (shape_make_poly(&sd, 2, 5, pent, 0, &v1, NULL) == 0) {
        run("pentagons_dense", make(2, &sd, v1, 900, 0.68, NULL, zero, SHAPE_INIT_LATTICE, 1), 12, 0);
        run("pentagons_dilute", make(2, &sd, v1, 300, 0.3, NULL, zero, SHAPE_INIT_RANDOM, 2), 8, 0);
        run("pentagons_short_list", make(2, &sd, v1, 900, 0.68, NULL, zero, SHAPE_INIT_LATTICE, 3), 4, 8);
        const double L[3] = {40, 38, 0}, tilt[3] = {0.37, 0, 0};
        run("pentagons_tilted", make(2, &sd, v1, 250, 0, L, tilt, SHAPE_INIT_RANDOM, 4), 8, 0);
    }
    if (shape_make_poly(&sd, 2, 5, pent, 0.15, &v1, NULL) == 0)
        run("spheropentagons", make(2, &sd, v1, 400, 0.5, NULL, zero, SHAPE_INIT_RANDOM, 5), 8, 0);
    if (shape_make_poly(&sd, 3, 20, dod, 0, &v1, NULL) == 0) {
        run("dodecahedra", make(3, &sd, v1, 250, 0.4, NULL, zero, SHAPE_INIT_BCC, 6), 8, 0);
        run("dodecahedra_short_list", make(3, &sd, v1, 250, 0.4, NULL, zero, SHAPE_INIT_BCC, 7), 4, 24);
    }
    if (shape_make_poly(&sd, 3, 8, cube, 0, &v1, NULL) == 0) {
        const double L[3] = {9, 9.5, 10}, tilt[3] = {0.2, -0.3, 0.45};
        run("cubes_tilted", make(3, &sd, v1, 160, 0, L, tilt, SHAPE_INIT_RANDOM, 8), 8, 0);
    }
    const double axes[3] = {1.0, 0.6, 0.4};
    if (shape_make_ellipsoid(&sd, 3, axes, &v1) == 0)
        run("ellipsoids", make(3, &sd, v1, 300, 0.3, NULL, zero, SHAPE_INIT_RANDOM, 9), 8, 0);
    return check_failed;
}
