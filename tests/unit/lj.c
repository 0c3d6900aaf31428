/* unit/lj — the Lennard-Jones model below Lua: the device-safe exp, the tail formulas, the
 * decomposition chain against the serial reference, from-scratch energies, cell-list
 * invariants and checkpoint round trips. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/error.h"
#include "lj/lj.h"
#include "lj/lj_cb.h"
#include "lj/lj_dec.h"
#include "traj/checkpoint.h"

static lj_dec_system *make(uint32_t N, int dim, double rho, double T, double rc, int sum,
                           lj_init init, uint64_t seed)
{
    double side = pow(N / rho, 1.0 / dim);
    lj_params p = {.N = N, .dim = dim, .box = {side, side, dim == 3 ? side : 1.0}, .rc = rc,
                   .T = T, .delta = 0.12, .shift = 0, .tail = 1, .mode = LJ_DECOMPOSITION,
                   .sum = sum, .device = CARLO_CPU, .seed = seed, .init = init};
    lj_dec_system *s = LJ_DEC(lj_create(&p));
    if (!s)
        printf("lj_create failed: %s\n", carlo_errmsg());
    return s;
}

static double *positions_of(lj_system *s)
{
    double *pos = malloc(sizeof(double) * 3 * s->N);
    lj_positions(s, pos);
    return pos;
}

#define positions(s) positions_of(&(s)->lj)

static void test_exp(void)
{
    double worst = 0;
    for (int k = 0; k <= 200000; k++) {
        double x = -699.0 * k / 200000.0 + 1e-3 * sin(k); /* irregular points in (-700, 0] */
        if (x > 0)
            x = -x;
        double a = lj_exp(x), b = exp(x);
        double rel = fabs(a - b) / b;
        worst = rel > worst ? rel : worst;
    }
    CHECK("unit/lj/exp-accuracy", worst < 5e-16, "worst relative error %g", worst);
    CHECK("unit/lj/exp-edges", lj_exp(0.0) == 1.0 && lj_exp(-800.0) == 0.0 && lj_exp(NAN) == 0.0,
          "exp(0) = %g, exp(-800) = %g", lj_exp(0.0), lj_exp(-800.0));
    CHECK("unit/lj/accept-rules",
          lj_accept(-1.0, 1.0, 0.999) && !lj_accept(INFINITY, 1.0, 0.0) &&
              !lj_accept(NAN, 1.0, 0.0) && lj_accept(1.0, 1.0, 0.3678) && !lj_accept(1.0, 1.0, 0.3679),
          "Metropolis rule");
}

/* The log of the checkerboard's acceptance against libm over (0, 1], with its edges, and the
 * rule it serves: log u < -beta dU. */
static void test_log(void)
{
    double worst = 0;
    for (int k = 1; k <= 200000; k++) {
        double u = ldexp(1.0 + 0.999 * fabs(sin(1.7 * k)), -(k % 33)) * 0.5; /* (2^-33, 1) */
        double a = lj_log(u), b = log(u);
        double rel = fabs(a - b) / fabs(b);
        worst = rel > worst ? rel : worst;
    }
    CHECK("unit/lj/log-accuracy", worst < 5e-16, "worst relative error %g", worst);
    CHECK("unit/lj/log-edges", lj_log(1.0) == 0.0 && lj_log(0.0) == -HUGE_VAL && lj_log(NAN) == -HUGE_VAL &&
                                   lj_log(0.5) == -0x1.62e42fefa39efp-1,
          "log(1) = %g, log(0) = %g, log(1/2) = %.17g", lj_log(1.0), lj_log(0.0), lj_log(0.5));
    CHECK("unit/lj/checkerboard-accept-rules",
          lj_cb_accept(-1.0, 1.0, lj_log(0.999)) && lj_cb_accept(0.0, 1.0, lj_log(0.999)) &&
              lj_cb_accept(5.0, 1.0, lj_log(0.0)) && !lj_cb_accept(INFINITY, 1.0, lj_log(0.0)) &&
              !lj_cb_accept(NAN, 1.0, lj_log(0.0)) && lj_cb_accept(1.0, 1.0, lj_log(0.3678)) &&
              !lj_cb_accept(1.0, 1.0, lj_log(0.3679)),
          "Metropolis rule with log u");
}

/* The checkerboard's visiting order: a permutation for every n (keys up to 32, Fisher-Yates
 * above), and uniform: the 24 orders of 4 particles, and the place of particle 0 among 20 and
 * among 40, over many cells, within 5 sigma of their expected counts. */
static void test_cb_order(void)
{
    int ok = 1;
    for (int n = 1; n <= 70 && ok; n++)
        for (uint32_t c = 0; c < 50 && ok; c++) {
            int perm[70], seen[70] = {0};
            lj_cb_order(7, 3, c, n, perm);
            for (int i = 0; i < n; i++)
                ok = ok && perm[i] >= 0 && perm[i] < n && !seen[perm[i]]++;
        }
    CHECK("unit/lj/checkerboard-order-permutation", ok, "not a permutation");
    const int T = 240000;
    long count4[256] = {0}, at20[20] = {0}, at40[40] = {0};
    for (int t = 0; t < T; t++) {
        int perm[40], code = 0;
        lj_cb_order(11, (uint64_t)t, 5, 4, perm);
        for (int i = 0; i < 4; i++)
            code = code * 4 + perm[i];
        count4[code]++;
        lj_cb_order(12, (uint64_t)t, 5, 20, perm);
        for (int i = 0; i < 20; i++)
            at20[i] += perm[i] == 0;
        lj_cb_order(13, (uint64_t)t, 5, 40, perm);
        for (int i = 0; i < 40; i++)
            at40[i] += perm[i] == 0;
    }
    double worst = 0;
    int orders = 0;
    for (int k = 0; k < 256; k++)
        if (count4[k]) {
            orders++;
            double e = T / 24.0, z = fabs(count4[k] - e) / sqrt(e * (1 - 1 / 24.0));
            worst = z > worst ? z : worst;
        }
    for (int i = 0; i < 20; i++) {
        double e = T / 20.0, z = fabs(at20[i] - e) / sqrt(e * (1 - 1 / 20.0));
        worst = z > worst ? z : worst;
    }
    for (int i = 0; i < 40; i++) {
        double e = T / 40.0, z = fabs(at40[i] - e) / sqrt(e * (1 - 1 / 40.0));
        worst = z > worst ? z : worst;
    }
    CHECK("unit/lj/checkerboard-order-uniform", orders == 24 && worst < 5.0, "%d orders of 4, worst %.2f sigma",
          orders, worst);
}

/* Tail corrections against a numerical integral of the potential beyond rc. */
static void test_tails(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        lj_dec_system *s = make(256, dim, 0.5, 1.0, 2.5, LJ_SUM_ALL, LJ_INIT_FCC, 1);
        if (!s)
            return;
        double rho = lj_density(&s->lj), rc = 2.5, iu = 0, ip = 0;
        /* substitute r = rc / t, t in (0, 1]: dr = rc / t^2 dt; Simpson on a fine grid */
        int n = 200000;
        for (int k = 0; k <= n; k++) {
            double t = (double)k / n;
            double wgt = (k == 0 || k == n) ? 1 : (k % 2 ? 4 : 2);
            if (t == 0)
                continue; /* the integrands vanish there */
            double r = rc / t, jac = rc / (t * t);
            double ir6 = pow(r, -6);
            double u = 4 * (ir6 * ir6 - ir6), du = -48 * ir6 * ir6 / r + 24 * ir6 / r;
            double surf = dim == 3 ? 4 * M_PI * r * r : 2 * M_PI * r;
            iu += wgt * u * surf * jac;
            ip += wgt * r * du * surf * jac;
        }
        iu /= 3.0 * n;
        ip /= 3.0 * n;
        double ue = 0.5 * rho * iu, pe = -rho * rho / (2.0 * dim) * ip;
        char name[64];
        snprintf(name, sizeof name, "unit/lj/tail-energy-%dd", dim);
        CHECK(name, fabs(lj_tail_energy(&s->lj) - ue) < 1e-10 * fabs(ue), "%.15g vs %.15g",
              lj_tail_energy(&s->lj), ue);
        snprintf(name, sizeof name, "unit/lj/tail-pressure-%dd", dim);
        CHECK(name, fabs(lj_tail_pressure(&s->lj) - pe) < 1e-10 * fabs(pe), "%.15g vs %.15g",
              lj_tail_pressure(&s->lj), pe);
        lj_destroy(&s->lj);
    }
}

/* Brute-force pair double loop, i < j, no cells: the from-scratch energy must agree. */
static void test_fresh(void)
{
    lj_dec_system *s = make(1500, 3, 0.8, 1.0, 2.5, -1, LJ_INIT_RANDOM, 5);
    if (!s)
        return;
    lj_trial_moves(&s->lj, 20000);
    double *pos = positions(s);
    double U = 0, W = 0;
    for (uint32_t i = 0; i < s->N; i++)
        for (uint32_t j = i + 1; j < s->N; j++) {
            double u, w;
            lj_pair(lj_r2(&s->g, pos[3 * i], pos[3 * i + 1], pos[3 * i + 2], pos[3 * j],
                          pos[3 * j + 1], pos[3 * j + 2]),
                    s->g.rc2, s->g.ushift, &u, &w);
            U += u;
            W += w;
        }
    double Uf, Wf;
    lj_energy_fresh(&s->lj, pos, &Uf, &Wf);
    CHECK("unit/lj/fresh-energy", fabs(Uf - U) < 1e-11 * fabs(U) && fabs(Wf - W) < 1e-11 * fabs(W),
          "U %.15g vs %.15g, W %.15g vs %.15g", Uf, U, Wf, W);
    CHECK("unit/lj/running-energy", fabs(s->U - U) < 1e-10 * fabs(U) && fabs(s->W - W) < 1e-10 * fabs(W),
          "running U %.15g vs %.15g", s->U, U);
    /* every particle sits in the cell of its position and every list is a permutation */
    lj_cell_lists c;
    lj_cell_lists_alloc(s, &c);
    s->be->download(s, pos, &c);
    int ok = s->sum == LJ_SUM_CELLS;
    uint8_t *seen = calloc(s->N, 1);
    int64_t k = 0;
    for (int cell = 0; cell < s->ncell && ok; cell++)
        for (int m = 0; m < c.count[cell] && ok; m++, k++) {
            int32_t i = c.order[k];
            ok = i >= 0 && (uint32_t)i < s->N && !seen[i] &&
                 lj_cell_of(&s->g, pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]) == cell;
            seen[i] = 1;
        }
    CHECK("unit/lj/cell-lists", ok && k == (int64_t)s->N, "cell lists broken at entry %lld",
          (long long)k);
    free(seen);
    lj_cell_lists_free(&c);
    free(pos);
    lj_destroy(&s->lj);
}

/* The decomposition chain of the CPU backend equals the serial reference, move for move. */
static void test_serial(int dim, int sum, uint32_t N, double rho, const char *name)
{
    lj_dec_system *s = make(N, dim, rho, 0.9, 2.5, sum, LJ_INIT_RANDOM, 11);
    if (!s)
        return;
    if ((int)s->sum != sum) {
        CHECK(name, 0, "asked for sum %d, got %d", sum, (int)s->sum);
        lj_destroy(&s->lj);
        return;
    }
    double *ref = positions(s);
    double U = s->U, W = s->W;
    uint64_t acc = 0, n = 20000;
    lj_serial_moves(&s->g, s->N, s->beta, s->delta, s->seed, 0, n, ref, &U, &W, &acc);
    lj_trial_moves(&s->lj, n);
    double *pos = positions(s);
    int same = memcmp(pos, ref, sizeof(double) * 3 * s->N) == 0;
    CHECK(name, same && acc == s->accepted && fabs(U - s->U) < 1e-10 * fabs(U) &&
                    fabs(W - s->W) < 1e-10 * fabs(W),
          "positions %s, accepted %llu vs %llu, U %.15g vs %.15g", same ? "equal" : "differ",
          (unsigned long long)s->accepted, (unsigned long long)acc, s->U, U);
    free(ref);
    free(pos);
    lj_destroy(&s->lj);
}

/* Run 2n moves, or n, checkpoint (through a file), restore, n more: the same bits. */
static void test_checkpoint(int sum, const char *name)
{
    const char *dir = getenv("CARLO_TEST_TMP");
    char path[512];
    snprintf(path, sizeof path, "%s/lj-unit.ckpt", dir ? dir : "/tmp");
    lj_dec_system *a = make(1372, 3, 0.7, 1.1, 2.5, sum, LJ_INIT_FCC, 3);
    lj_dec_system *b = make(1372, 3, 0.7, 1.1, 2.5, sum, LJ_INIT_FCC, 3);
    if (!a || !b)
        return;
    lj_trial_moves(&a->lj, 30000);
    lj_trial_moves(&b->lj, 15000);
    carlo_frame f, g;
    carlo_frame_init(&f);
    int rc = lj_checkpoint(&b->lj, &f) || traj_checkpoint_save(path, &f);
    carlo_frame_free(&f);
    lj_destroy(&b->lj);
    rc = rc || traj_checkpoint_load(path, &g);
    lj_dec_system *c = rc ? NULL : LJ_DEC(lj_restore(&g, CARLO_CPU));
    carlo_frame_free(&g);
    if (!c) {
        CHECK(name, 0, "restore failed: %s", carlo_errmsg());
        lj_destroy(&a->lj);
        return;
    }
    lj_trial_moves(&c->lj, 15000);
    double *pa = positions(a), *pc = positions(c);
    int same = memcmp(pa, pc, sizeof(double) * 3 * a->N) == 0;
    CHECK(name, same && a->U == c->U && a->W == c->W && a->accepted == c->accepted &&
                    a->moves == c->moves,
          "positions %s, U %.17g vs %.17g", same ? "equal" : "differ", a->U, c->U);
    free(pa);
    free(pc);
    lj_destroy(&a->lj);
    lj_destroy(&c->lj);
}

static void test_bad_checkpoint(void)
{
    lj_dec_system *s = make(500, 3, 0.8, 1.0, 2.5, LJ_SUM_CELLS, LJ_INIT_FCC, 3);
    if (!s) { /* 500 at 0.8 has 3 cells per axis: cells are allowed when asked for */
        CHECK("unit/lj/checkpoint-untrusted", 0, "no system");
        return;
    }
    carlo_frame f;
    carlo_frame_init(&f);
    lj_checkpoint(&s->lj, &f);
    /* corrupt one list entry: the restore must refuse it, not run with it */
    for (int i = 0; i < f.n; i++)
        if (strcmp(f.chunk[i].name, "lj/cell_order") == 0) {
            int32_t *o = f.chunk[i].owned;
            int32_t t = o[0];
            o[0] = o[1];
            o[1] = t == o[1] ? t + 1 : o[1];
            o[1] = o[0];
        }
    lj_system *r = lj_restore(&f, CARLO_CPU);
    CHECK("unit/lj/checkpoint-untrusted", r == NULL && strstr(carlo_errmsg(), "permutation"),
          "restore accepted bad cell lists (%s)", r ? "no error" : carlo_errmsg());
    lj_destroy(r);
    carlo_frame_free(&f);
    lj_destroy(&s->lj);
}

/* The canonical order, written out plainly: candidates in list order, lane k % LJ_LANES,
 * the full halving tree over the lanes, then over the tiles. The backend's Widom factors
 * must match it bit for bit (the GPU's are compared with the CPU's in tests/gpu). */
static double canonical_energy(const lj_dec_system *s, const double *pos, const lj_cell_lists *c,
                               const int32_t *start, const double p[3])
{
    lj_uw tiles[LJ_TILES_MAX], lane[LJ_LANES];
    memset(tiles, 0, sizeof tiles);
    if (s->sum == LJ_SUM_CELLS) {
        memset(lane, 0, sizeof lane);
        int cell = lj_cell_of(&s->g, p[0], p[1], p[2]), k = 0;
        for (int q = 0; q < lj_neighbour_count(s->dim); q++) {
            int cq = lj_cell_neighbour(&s->g, cell, q);
            for (int m = 0; m < c->count[cq]; m++, k++) {
                int32_t j = c->order[start[cq] + m];
                lj_accumulate(&s->g, p, pos[3 * j], pos[3 * j + 1], pos[3 * j + 2], &lane[k % LJ_LANES]);
            }
        }
        lj_tree(lane, LJ_LANES);
        return lane[0].u;
    }
    uint32_t C, G;
    lj_tiles(s->N, &C, &G);
    for (uint32_t g = 0; g < G; g++) {
        memset(lane, 0, sizeof lane);
        for (uint32_t l = 0; l < LJ_LANES * C; l++) {
            uint32_t j = g * LJ_LANES * C + l;
            if (j < s->N)
                lj_accumulate(&s->g, p, pos[3 * j], pos[3 * j + 1], pos[3 * j + 2], &lane[l % LJ_LANES]);
        }
        lj_tree(lane, LJ_LANES);
        tiles[g] = lane[0];
    }
    lj_tree(tiles, lj_pow2_at_least(G));
    return tiles[0].u;
}

static void test_canonical(int sum, uint32_t N, double rho, const char *name)
{
    lj_dec_system *s = make(N, 3, rho, 0.9, 2.5, sum, LJ_INIT_RANDOM, 21);
    if (!s)
        return;
    lj_trial_moves(&s->lj, s->sum == LJ_SUM_CELLS ? 50000 : 500); /* lists no longer in index order */
    double *pos = positions(s);
    lj_cell_lists c = {0};
    int32_t *start = NULL;
    if (s->sum == LJ_SUM_CELLS) {
        lj_cell_lists_alloc(s, &c);
        s->be->download(s, pos, &c);
        start = calloc((size_t)s->ncell + 1, sizeof *start);
        for (int k = 0; k < s->ncell; k++)
            start[k + 1] = start[k] + c.count[k];
    }
    enum { n = 200 };
    double got[n];
    s->be->widom(s, n, 7, got);
    int bad = -1;
    for (uint32_t k = 0; k < n && bad < 0; k++) {
        double p[3];
        lj_widom_position(&s->g, s->seed, 7, k, p);
        double want = lj_widom_factor(canonical_energy(s, pos, &c, start, p), lj_widom_tail(&s->lj), s->beta);
        if (memcmp(&want, &got[k], sizeof want) != 0)
            bad = (int)k;
    }
    CHECK(name, bad < 0, "insertion %d differs", bad);
    free(start);
    lj_cell_lists_free(&c);
    free(pos);
    lj_destroy(&s->lj);
}

/* ---------- checkerboard ---------- */

static lj_cb_system *make_cb_rc(uint32_t N, int dim, double rho, double T, uint64_t seed, double rc,
                                lj_init init)
{
    double side = pow(N / rho, 1.0 / dim);
    lj_params p = {.N = N, .dim = dim, .box = {side, side, dim == 3 ? side : 1.0}, .rc = rc,
                   .T = T, .delta = 0.12, .shift = 0, .tail = 1, .mode = LJ_CHECKERBOARD,
                   .sum = -1, .device = CARLO_CPU, .seed = seed, .init = init};
    lj_cb_system *s = LJ_CB(lj_create(&p));
    if (!s)
        printf("lj_create failed: %s\n", carlo_errmsg());
    return s;
}

static lj_cb_system *make_cb(uint32_t N, int dim, double rho, double T, uint64_t seed)
{
    return make_cb_rc(N, dim, rho, T, seed, 2.5, LJ_INIT_RANDOM);
}

/* After many sweeps (shifts included) the cells still hold every particle once, each inside
 * its cell and on the coordinate grid. */
static void test_cb_invariants(int dim, uint32_t N, double rho, const char *name)
{
    lj_cb_system *s = make_cb(N, dim, rho, 0.9, 31);
    if (!s)
        return;
    lj_run(&s->lj, 60);
    carlo_cell_data d;
    lj_cb_cells_alloc(s, &d);
    s->be->download(s, &d, NULL, NULL);
    int ok = carlo_cells_verify(&s->grid, &d, s->N) == 0;
    const char *why = ok ? "" : carlo_errmsg();
    uint8_t *seen = calloc(s->N, 1);
    for (int64_t c = 0; c < s->grid.ncells && ok; c++)
        for (int i = 0; i < (int)d.count[c] && ok; i++) {
            uint32_t idx = d.aux[carlo_cell_slot(&s->grid, c, i, 0)];
            ok = idx < s->N && !seen[idx];
            if (ok)
                seen[idx] = 1;
            for (int a = 0; a < dim && ok; a++) {
                double u = d.pos[carlo_cell_slot(&s->grid, c, i, a)];
                ok = u / s->geom.h[a] == floor(u / s->geom.h[a]);
            }
            if (!ok)
                why = "a particle index repeats or a coordinate is off the grid";
        }
    CHECK(name, ok && s->step == 60, "%s", why);
    free(seen);
    carlo_cell_data_free(&d);
    lj_destroy(&s->lj);
}

/* The near filter of a move's sum (lj_kernel.h) keeps every candidate within rc of either end
 * of the move: every particle of a melted system moved by drawn trial displacements and by the
 * corners of the largest one, at the largest delta the cells allow; and the positions in the
 * active cell's frame give the separations of the cells' own frames, bit for bit. */
static void test_cb_near(int dim, uint32_t N, double rho, const char *name)
{
    lj_cb_system *s = make_cb(N, dim, rho, 1.0, 5);
    if (!s)
        return;
    lj_run(&s->lj, 5);
    lj_cbgeom G = s->geom;
    lj_cb_set_delta(&G, lj_delta_max(&s->lj));
    const carlo_cell_grid *g = &s->grid;
    carlo_cell_data d;
    lj_cb_cells_alloc(s, &d);
    s->be->download(s, &d, NULL, NULL);
    long hits = 0, missed = 0, near = 0, differ = 0;
    const int nq = lj_neighbour_count(dim);
    for (int64_t c = 0; c < g->ncells; c++) {
        int xyz[3];
        carlo_cell_coords(g, c, xyz);
        for (int i = 0; i < (int)d.count[c]; i++) {
            float o[3] = {0, 0, 0};
            for (int a = 0; a < dim; a++)
                o[a] = d.pos[carlo_cell_slot(g, c, i, a)];
            for (int t = 0; t < 10; t++) {
                float dd[3] = {0, 0, 0};
                if (t < 2) {
                    lj_cb_trial(&G, 99, (uint64_t)c, (uint32_t)i, (uint32_t)t, dd);
                } else { /* the corners of the largest displacement */
                    for (int a = 0; a < dim; a++)
                        dd[a] = (float)(rint(G.dmax[a]) * (double)G.h[a]) * ((t >> a & 1) ? 1.0f : -1.0f);
                }
                float nw[3] = {o[0] + dd[0], o[1] + dd[1], o[2] + dd[2]}, m[3];
                if (!lj_cb_inside(&G, nw))
                    continue; /* rejected before its sum */
                lj_cb_mid(o, dd, m);
                const float r2 = lj_cb_near_r2(&G, dd);
                for (int q = 0; q < nq; q++) {
                    int off[3] = {q % 3 - 1, (q / 3) % 3 - 1, dim == 3 ? q / 9 - 1 : 0};
                    float sh[3];
                    int64_t cq = carlo_cell_neighbor(g, xyz, off, sh);
                    for (int j = 0; j < (int)d.count[cq]; j++) {
                        if (cq == c && j == i)
                            continue;
                        float b[3] = {0, 0, 0}, x[3];
                        for (int a = 0; a < dim; a++)
                            b[a] = d.pos[carlo_cell_slot(g, cq, j, a)];
                        for (int a = 0; a < 3; a++)
                            x[a] = b[a] + sh[a];
                        float ro = lj_cb_r2(o, b, sh), rn = lj_cb_r2(nw, b, sh);
                        differ += ro != lj_cb_r2x(o, x[0], x[1], x[2]) || rn != lj_cb_r2x(nw, x[0], x[1], x[2]);
                        int hit = ro < G.rc2 || rn < G.rc2;
                        int n = lj_cb_near(m, x[0], x[1], x[2], r2);
                        hits += hit;
                        near += n;
                        missed += hit && !n;
                    }
                }
            }
        }
    }
    printf("# %s: %ld pairs within rc of a move's ends, %ld near, %ld missed, %ld separations differ\n",
           name, hits, near, missed, differ);
    CHECK(name, hits > 1000 && missed == 0 && near < 2 * hits && differ == 0,
          "%ld of %ld missed, %ld near, %ld differ", missed, hits, near, differ);
    carlo_cell_data_free(&d);
    lj_destroy(&s->lj);
}

/* 2n sweeps, or n, checkpoint (through a file), restore, n more: the same cells and sums. */
static void test_cb_checkpoint(void)
{
    const char *dir = getenv("CARLO_TEST_TMP");
    char path[512];
    snprintf(path, sizeof path, "%s/lj-unit-cb.ckpt", dir ? dir : "/tmp");
    lj_cb_system *a = make_cb(3000, 3, 0.8, 1.0, 8), *b = make_cb(3000, 3, 0.8, 1.0, 8);
    if (!a || !b)
        return;
    lj_run(&a->lj, 20);
    lj_run(&b->lj, 10);
    carlo_frame f, g;
    carlo_frame_init(&f);
    int rc = lj_checkpoint(&b->lj, &f) || traj_checkpoint_save(path, &f);
    carlo_frame_free(&f);
    lj_destroy(&b->lj);
    rc = rc || traj_checkpoint_load(path, &g);
    lj_cb_system *c = rc ? NULL : LJ_CB(lj_restore(&g, CARLO_CPU));
    if (!c) {
        CHECK("unit/lj/checkpoint-continues-checkerboard", 0, "restore failed: %s", carlo_errmsg());
        carlo_frame_free(&g);
        lj_destroy(&a->lj);
        return;
    }
    lj_run(&c->lj, 10);
    double *pa = positions(a), *pc = positions(c);
    int same = memcmp(pa, pc, sizeof(double) * 3 * a->N) == 0;
    CHECK("unit/lj/checkpoint-continues-checkerboard",
          same && a->U == c->U && a->W == c->W && a->accepted == c->accepted && a->step == c->step,
          "positions %s, U %.17g vs %.17g", same ? "equal" : "differ", a->U, c->U);
    /* a position moved off the coordinate grid is refused */
    for (int i = 0; i < g.n; i++)
        if (strcmp(g.chunk[i].name, "lj/cb_pos") == 0) {
            float *pos = g.chunk[i].owned;
            uint32_t *cnt = NULL;
            for (int j = 0; j < g.n; j++)
                if (strcmp(g.chunk[j].name, "lj/cb_count") == 0)
                    cnt = g.chunk[j].owned;
            for (int64_t k = 0; cnt && k < c->grid.ncells; k++)
                if (cnt[k]) { /* the first particle of the first occupied cell */
                    pos[k] = nextafterf(pos[k], 10.0f);
                    break;
                }
        }
    lj_system *r = lj_restore(&g, CARLO_CPU);
    CHECK("unit/lj/checkpoint-untrusted-checkerboard", r == NULL && strstr(carlo_errmsg(), "grid"),
          "restore accepted an off-grid position (%s)", r ? "no error" : carlo_errmsg());
    lj_destroy(r);
    carlo_frame_free(&g);
    free(pa);
    free(pc);
    lj_destroy(&a->lj);
    lj_destroy(&c->lj);
}

/* A condensing gas fills its cells beyond the first capacity (about 1 per cell of 3.5^3 at the
 * start, 30 in a droplet): the cells grow, nothing is lost. */
static void test_cb_grow(void)
{
    lj_cb_system *s = make_cb_rc(2000, 3, 0.03, 0.45, 12, 3.5, LJ_INIT_FCC);
    if (!s)
        return;
    int nmax0 = s->grid.nmax;
    double delta = lj_delta_max(&s->lj) < 0.6 ? lj_delta_max(&s->lj) : 0.6;
    lj_set_delta(&s->lj, delta);
    lj_run(&s->lj, 400);
    double Ur, Uf;
    lj_recompute(&s->lj, &Ur, &Uf);
    carlo_cell_data d;
    lj_cb_cells_alloc(s, &d);
    s->be->download(s, &d, NULL, NULL);
    int ok = carlo_cells_verify(&s->grid, &d, s->N) == 0;
    CHECK("unit/lj/checkerboard-cells-grow", ok && s->grid.nmax > nmax0 && s->drift <= 1e-9,
          "nmax %d -> %d, drift %g, %s", nmax0, s->grid.nmax, s->drift, ok ? "cells fine" : carlo_errmsg());
    carlo_cell_data_free(&d);
    lj_destroy(&s->lj);
}

/* The same state, bit for bit: positions, running sums, counters and step. */
static int same_cb(lj_cb_system *a, lj_cb_system *b)
{
    double *pa = positions(a), *pb = positions(b);
    int same = memcmp(pa, pb, sizeof(double) * 3 * a->N) == 0 && a->U == b->U && a->W == b->W &&
               a->tried == b->tried && a->accepted == b->accepted && a->step == b->step &&
               a->sets_done == b->sets_done;
    free(pa);
    free(pb);
    return same;
}

/* Sub-sweeps in the order of the sweep's sets are that sweep, bit for bit (the shift comes
 * with the last); a checkpoint taken halfway through a sweep continues it; a set's second
 * sub-sweep in one sweep, and a checkpoint that says every set is done, are refused. */
static void test_cb_substep(int dim, const char *name)
{
    lj_cb_system *a = make_cb(2000, dim, 0.7, 1.0, 9), *b = make_cb(2000, dim, 0.7, 1.0, 9);
    if (!a || !b)
        return;
    lj_run(&a->lj, 3);
    int order[8], ok = 1;
    for (int k = 0; k < 3; k++) {
        lj_cb_set_order(b, order);
        for (int q = 0; q < 1 << dim; q++)
            ok &= lj_substep(&b->lj, order[q]) == 0;
    }
    CHECK(name, ok && same_cb(a, b) && b->step == 3, "sub-sweeps differ from sweeps");
    lj_cb_set_order(b, order);
    ok = lj_substep(&b->lj, order[2]) == 0 && lj_substep(&b->lj, order[0]) == 0;
    int refused = lj_substep(&b->lj, order[2]) != 0 && strstr(carlo_errmsg(), "already");
    carlo_frame f;
    carlo_frame_init(&f);
    ok &= lj_checkpoint(&b->lj, &f) == 0;
    lj_cb_system *c = LJ_CB(lj_restore(&f, CARLO_CPU));
    ok &= c && same_cb(b, c);
    if (c) {
        lj_run(&b->lj, 2);
        lj_run(&c->lj, 2);
        ok &= same_cb(b, c) && c->step == 5 && c->sets_done == 0;
    }
    char sub[96];
    snprintf(sub, sizeof sub, "%s-checkpoint-halfway", name);
    CHECK(sub, ok && refused, "%s", refused ? "the continuation differs" : "a set's second sub-sweep ran");
    for (int i = 0; i < f.n; i++)
        if (strcmp(f.chunk[i].name, "lj/cb_sets_done") == 0)
            *(uint32_t *)f.chunk[i].owned = (1u << (1 << dim)) - 1;
    lj_system *r = lj_restore(&f, CARLO_CPU);
    snprintf(sub, sizeof sub, "%s-untrusted", name);
    CHECK(sub, r == NULL && strstr(carlo_errmsg(), "cb_sets_done"), "restore accepted every set done (%s)",
          r ? "no error" : carlo_errmsg());
    lj_destroy(r);
    carlo_frame_free(&f);
    if (c)
        lj_destroy(&c->lj);
    lj_destroy(&a->lj);
    lj_destroy(&b->lj);
}

/* A trajectory frame: GSD names and shapes, positions in [-L/2, L/2) as floats. */
static void test_frame(void)
{
    for (int mode = 0; mode < 2; mode++) {
        lj_system *s = mode ? (lj_system *)make_cb(1000, 3, 0.7, 1.0, 4)
                            : (lj_system *)make(1000, 3, 0.7, 1.0, 2.5, -1, LJ_INIT_RANDOM, 4);
        if (!s)
            return;
        lj_run(s, 3);
        carlo_frame f;
        carlo_frame_init(&f);
        int rc = lj_frame(s, &f);
        const float *p = carlo_frame_expect(&f, "particles/position", CARLO_F32, s->N, 3);
        const float *box = carlo_frame_expect(&f, "configuration/box", CARLO_F32, 6, 1);
        const uint32_t *n = carlo_frame_expect(&f, "particles/N", CARLO_U32, 1, 1);
        const uint64_t *step = carlo_frame_expect(&f, "configuration/step", CARLO_U64, 1, 1);
        const uint32_t *tid = carlo_frame_expect(&f, "particles/typeid", CARLO_U32, s->N, 1);
        double *pos = positions_of(s);
        int ok = rc == 0 && p && box && n && step && tid && *n == s->N && *step == 3 &&
                 box[0] == (float)s->g.L[0];
        for (uint32_t i = 0; ok && i < s->N; i++)
            for (int a = 0; a < 3; a++)
                ok = p[3 * i + a] >= -0.5f * box[a] && p[3 * i + a] <= 0.5f * box[a] &&
                     fabs(p[3 * i + a] - (pos[3 * i + a] - s->g.half[a])) < 1e-5 && tid[i] == 0;
        CHECK(mode ? "unit/lj/frame-checkerboard" : "unit/lj/frame-decomposition", ok,
              "frame chunks or positions wrong (%s)", rc ? carlo_errmsg() : "values");
        free(pos);
        carlo_frame_free(&f);
        lj_destroy(s);
    }
}

int main(void)
{
    test_exp();
    test_log();
    test_cb_order();
    test_tails();
    test_fresh();
    test_serial(3, LJ_SUM_ALL, 300, 0.8, "unit/lj/serial-reference-all-3d");
    test_serial(3, LJ_SUM_CELLS, 2000, 0.8, "unit/lj/serial-reference-cells-3d");
    test_serial(2, LJ_SUM_ALL, 200, 0.7, "unit/lj/serial-reference-all-2d");
    test_serial(2, LJ_SUM_CELLS, 600, 0.7, "unit/lj/serial-reference-cells-2d");
    test_checkpoint(LJ_SUM_ALL, "unit/lj/checkpoint-continues-all");
    test_checkpoint(LJ_SUM_CELLS, "unit/lj/checkpoint-continues-cells");
    test_bad_checkpoint();
    test_canonical(LJ_SUM_CELLS, 3000, 0.8, "unit/lj/canonical-order-cells");
    test_canonical(LJ_SUM_CELLS, 3000, 0.02, "unit/lj/canonical-order-cells-sparse");
    test_canonical(LJ_SUM_ALL, 40000, 0.8, "unit/lj/canonical-order-all-tiles");
    test_canonical(LJ_SUM_ALL, 300, 0.8, "unit/lj/canonical-order-all");
    test_cb_invariants(3, 3000, 0.8, "unit/lj/checkerboard-invariants-3d");
    test_cb_invariants(2, 2000, 0.7, "unit/lj/checkerboard-invariants-2d");
    test_cb_near(3, 3000, 0.8, "unit/lj/checkerboard-near-3d");
    test_cb_near(2, 2000, 0.7, "unit/lj/checkerboard-near-2d");
    test_cb_checkpoint();
    test_cb_grow();
    test_cb_substep(3, "unit/lj/checkerboard-substeps-are-a-sweep-3d");
    test_cb_substep(2, "unit/lj/checkerboard-substeps-are-a-sweep-2d");
    test_frame();
    return check_failed;
}
