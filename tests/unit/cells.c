/* unit/core/cells — the checkerboard cell grid: planning, the index map, sets and their order,
 * and the cell shift and re-gridding, which must never lose, double or misplace a particle.
 * Particles carry their 1-based tag in aux word 0, so every one can be followed. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/cells.h"
#include "core/error.h"
#include "core/rng.h"

/* Absolute positions by tag: origin + offset, wrapped into [0, L). */
static void positions_by_tag(const carlo_cell_grid *g, const carlo_cell_data *d, int64_t n,
                             const double origin[3], double *x)
{
    double *r = malloc(sizeof(double) * 3 * (size_t)n);
    uint32_t *tag = malloc(sizeof(uint32_t) * (size_t)n * (size_t)g->naux);
    carlo_cells_extract(g, d, r, tag);
    carlo_box b = carlo_cells_box(g);
    for (int64_t k = 0; k < n; k++) {
        uint32_t t = tag[(size_t)k * (size_t)g->naux];
        for (int a = 0; a < 3; a++) {
            double v = a < g->dim ? r[3 * k + a] + origin[a] : 0.0;
            if (a < g->dim)
                v -= floor(v / b.L[a]) * b.L[a];
            x[3 * (int64_t)(t - 1) + a] = v;
        }
    }
    free(r);
    free(tag);
}

/* Largest periodic distance between two position lists. */
static double max_moved(const carlo_box *b, int64_t n, const double *x, const double *y)
{
    double worst = 0;
    for (int64_t k = 0; k < n; k++)
        for (int a = 0; a < b->dim; a++) {
            double dd = fabs(x[3 * k + a] - y[3 * k + a]);
            if (dd > 0.5 * b->L[a])
                dd = b->L[a] - dd;
            if (dd > worst)
                worst = dd;
        }
    return worst;
}

static int tags_ok(const carlo_cell_grid *g, const carlo_cell_data *d, int64_t n)
{
    uint32_t *tag = malloc(sizeof(uint32_t) * (size_t)n * (size_t)g->naux);
    char *seen = calloc((size_t)n + 1, 1);
    int64_t got = carlo_cells_extract(g, d, NULL, tag);
    int ok = got == n;
    for (int64_t k = 0; ok && k < n; k++) {
        uint32_t t = tag[(size_t)k * (size_t)g->naux];
        ok = t >= 1 && t <= (uint32_t)n && !seen[t];
        if (ok)
            seen[t] = 1;
    }
    free(tag);
    free(seen);
    return ok;
}

static void test_plan(void)
{
    carlo_cell_grid g;
    double L2[2] = {271.6, 100.3};
    carlo_box b = carlo_box_make(2, L2);
    int rc = carlo_cells_plan(&g, &b, 1.0, sqrt(2.0), sqrt(2.0), 4, 1);
    int ok = rc == 0;
    for (int a = 0; ok && a < 2; a++)
        ok = g.m[a] % 2 == 0 && g.width[a] >= 1.0 && g.width[a] < sqrt(2.0) &&
             (g.m[a] - 2 < 2 || L2[a] / (g.m[a] - 2) >= sqrt(2.0)); /* the widest even fit */
    CHECK("unit/core/cells/plan-widest", ok, "m = %d x %d, w = %g x %g", g.m[0], g.m[1], g.width[0],
          g.width[1]);
    rc = carlo_cells_plan(&g, &b, 1.0, sqrt(2.0), 1.0, 4, 1);
    ok = rc == 0 && g.width[0] >= 1.0 && g.width[0] < 1.0 + 2.0 / 271;
    CHECK("unit/core/cells/plan-narrowest", ok, "w = %g", g.width[0]);
    CHECK("unit/core/cells/plan-float-frame",
          g.w[0] == (float)g.width[0] && g.w_in[0] < g.w[0] && nextafterf(g.w_in[0], 2.0f) == g.w[0],
          "w = %.9g, w_in = %.9g", (double)g.w[0], (double)g.w_in[0]);
    double L3[2] = {3.0, 10.0};
    b = carlo_box_make(2, L3);
    rc = carlo_cells_plan(&g, &b, 1.0, sqrt(2.0), sqrt(2.0), 4, 1);
    CHECK("unit/core/cells/plan-impossible", rc != 0 && strstr(carlo_errmsg(), "Lx = 3"),
          "rc %d: %s", rc, carlo_errmsg());
    double L4[3] = {10, 10, 10};
    b = carlo_box_make(3, L4);
    b.xy = 0.1;
    rc = carlo_cells_plan(&g, &b, 1.0, 2.0, 2.0, 8, 1);
    CHECK("unit/core/cells/plan-tilted-refused", rc != 0, "a tilted box was accepted");
}

static void test_index(void)
{
    carlo_cell_grid g;
    double L[3] = {12.2, 8.5, 6.3};
    carlo_box b = carlo_box_make(3, L);
    if (carlo_cells_plan(&g, &b, 1.0, 2.0 / sqrt(3.0), 2.0 / sqrt(3.0), 8, 1)) {
        printf("FAIL unit/core/cells/index-plan: %s\n", carlo_errmsg());
        check_failed = 1;
        return;
    }
    char *hit = calloc((size_t)g.ncells, 1);
    int ok = 1;
    for (int z = 0; z < g.m[2]; z++)
        for (int y = 0; y < g.m[1]; y++)
            for (int x = 0; x < g.m[0]; x++) {
                int64_t c = carlo_cell_index(&g, x, y, z);
                int back[3];
                carlo_cell_coords(&g, c, back);
                ok &= c >= 0 && c < g.ncells && !hit[c] && back[0] == x && back[1] == y && back[2] == z;
                if (c >= 0 && c < g.ncells)
                    hit[c] = 1;
            }
    CHECK("unit/core/cells/index-bijection", ok, "the index map is not one to one");
    /* the sets partition the grid; consecutive t of one set are consecutive addresses */
    memset(hit, 0, (size_t)g.ncells);
    ok = 1;
    int contiguous = 1;
    for (int set = 0; set < 8; set++)
        for (int64_t t = 0; t < carlo_cell_set_size(&g); t++) {
            int xyz[3];
            carlo_cell_active(&g, set, t, xyz);
            int64_t c = carlo_cell_index(&g, xyz[0], xyz[1], xyz[2]);
            ok &= carlo_cell_set_of(xyz) == set && !hit[c];
            hit[c] = 1;
            if (t % g.half[0] != 0) {
                int prev[3];
                carlo_cell_active(&g, set, t - 1, prev);
                contiguous &= carlo_cell_index(&g, prev[0], prev[1], prev[2]) + 1 == c;
            }
        }
    for (int64_t c = 0; c < g.ncells; c++)
        ok &= hit[c];
    CHECK("unit/core/cells/sets-partition", ok, "the 8 sets do not partition the cells");
    CHECK("unit/core/cells/sets-coalesced", contiguous, "a set's cells are not consecutive in memory");
    free(hit);
    int xyz[3] = {0, g.m[1] - 1, 3}, off[3] = {-1, 1, 0};
    float s[3];
    int64_t n = carlo_cell_neighbor(&g, xyz, off, s);
    CHECK("unit/core/cells/neighbor-wrap",
          n == carlo_cell_index(&g, g.m[0] - 1, 0, 3) && s[0] == -g.w[0] && s[1] == g.w[1] && s[2] == 0,
          "wrong neighbour or shift");
}

static void test_set_order(void)
{
    int first[8] = {0}, ok = 1;
    const int n = 16000;
    for (int step = 0; step < n; step++) {
        int o[8], seen[8] = {0};
        carlo_cells_set_order(3, 11, 0x2f, (uint64_t)step, o);
        for (int i = 0; i < 8; i++) {
            ok &= o[i] >= 0 && o[i] < 8 && !seen[o[i]];
            if (o[i] >= 0 && o[i] < 8)
                seen[o[i]] = 1;
        }
        first[o[0]]++;
    }
    CHECK("unit/core/cells/set-order-permutation", ok, "not a permutation");
    /* each set leads 1/8 of the sweeps: binomial sd = sqrt(n p (1 - p)) = 41.8 */
    double worst = 0;
    for (int i = 0; i < 8; i++)
        worst = fmax(worst, fabs(first[i] - n / 8.0) / sqrt(n * (1.0 / 8) * (7.0 / 8)));
    CHECK("unit/core/cells/set-order-uniform", worst < 4.0, "a set leads %.1f sd off 1/8", worst);
}

/* n random particles (tags 1..n) in a box; some placed exactly on cell edges. */
static void random_fill(const carlo_cell_grid *g, const carlo_cell_data *d, int64_t n, uint64_t seed)
{
    double *r = malloc(sizeof(double) * 3 * (size_t)n);
    uint32_t *tag = malloc(sizeof(uint32_t) * (size_t)n);
    carlo_box b = carlo_cells_box(g);
    for (int64_t k = 0; k < n; k++) {
        carlo_u32x4 q = carlo_rng(seed, CARLO_PURPOSE_CORE_TEST, 0, (uint32_t)k, 0);
        for (int a = 0; a < 3; a++) {
            r[3 * k + a] = a < g->dim ? carlo_u01(q.v[a], q.v[3]) * b.L[a] : 0.0;
            if (a < g->dim && k % 7 == 0) /* on an edge: exercises the rounding at boundaries */
                r[3 * k + a] = floor(r[3 * k + a] / g->width[a]) * g->width[a];
        }
        tag[k] = (uint32_t)(k + 1);
    }
    if (carlo_cells_fill(g, d, n, r, tag))
        printf("fill failed: %s\n", carlo_errmsg());
    free(r);
    free(tag);
}

static void test_shift(int dim, int64_t n, int shifts, const char *name)
{
    carlo_cell_grid g;
    double L[3] = {11.3, 10.2, 8.5};
    carlo_box b = carlo_box_make(dim, L);
    if (carlo_cells_plan(&g, &b, 1.0, dim == 2 ? sqrt(2.0) : 2.0 / sqrt(3.0), 10, 24, 1)) {
        printf("FAIL unit/core/cells/%s-plan: %s\n", name, carlo_errmsg());
        check_failed = 1;
        return;
    }
    carlo_cell_data d[2];
    carlo_cell_data_alloc(&g, &d[0]);
    carlo_cell_data_alloc(&g, &d[1]);
    random_fill(&g, &d[0], n, 5);
    double *x0 = malloc(sizeof(double) * 3 * (size_t)n), *x1 = malloc(sizeof(double) * 3 * (size_t)n);
    double origin[3] = {0, 0, 0};
    positions_by_tag(&g, &d[0], n, origin, x0);
    int cur = 0, failed = 0;
    for (int t = 0; t < shifts && !failed; t++) {
        carlo_cell_shift sh = carlo_cells_shift_draw(&g, 77, 0x2e, (uint64_t)t);
        if (carlo_cells_shift_host(&g, &d[cur], &d[1 - cur], sh)) {
            failed = 1;
            break;
        }
        cur = 1 - cur;
        origin[sh.axis] += sh.dir * (double)sh.d;
    }
    char full[96];
    snprintf(full, sizeof full, "unit/core/cells/%s-conserved", name);
    int v = failed ? -1 : carlo_cells_verify(&g, &d[cur], n);
    CHECK(full, v == 0 && tags_ok(&g, &d[cur], n), "%s", carlo_errmsg());
    positions_by_tag(&g, &d[cur], n, origin, x1);
    double moved = max_moved(&b, n, x0, x1);
    snprintf(full, sizeof full, "unit/core/cells/%s-positions-kept", name);
    /* each shift rounds the shifted coordinate (float, |u| < 1.2, half an ulp < 6e-8) in a
     * random direction: a random walk of about 5e-8 sqrt(shifts) (measured 1.5e-5 after 1e5
     * shifts in 2D); a misplaced particle is off by a shift (> 1e-3) or a cell. */
    CHECK(full, moved < 4e-7 * sqrt((double)shifts), "a particle moved by %.3g after %d shifts", moved,
          shifts);
    free(x0);
    free(x1);
    carlo_cell_data_free(&d[0]);
    carlo_cell_data_free(&d[1]);
}

static void test_regrid(void)
{
    carlo_cell_grid g, ng;
    double L[3] = {12.0, 10.5, 0};
    carlo_box b = carlo_box_make(2, L);
    carlo_cells_plan(&g, &b, 1.0, sqrt(2.0), 10, 24, 1);
    carlo_cell_data d, e;
    carlo_cell_data_alloc(&g, &d);
    const int64_t n = 200;
    random_fill(&g, &d, n, 9);
    double *x0 = malloc(sizeof(double) * 3 * n), *x1 = malloc(sizeof(double) * 3 * n);
    double origin[3] = {0, 0, 0};
    positions_by_tag(&g, &d, n, origin, x0);
    int ok = 1;
    const double lams[4] = {0.83, 1.0, 1.27, 0.999999};
    for (int i = 0; i < 4; i++) {
        double lam[3] = {lams[i], lams[i], 1};
        carlo_box nb = carlo_cells_box(&g);
        nb.L[0] *= lam[0];
        nb.L[1] *= lam[1];
        carlo_cells_plan(&ng, &nb, 1.0, sqrt(2.0), 10, 24, 1);
        carlo_cell_data_alloc(&ng, &e);
        int over = carlo_cells_regrid_host(&g, &d, &ng, &e, lam);
        ok &= over == 0 && carlo_cells_verify(&ng, &e, n) == 0 && tags_ok(&ng, &e, n);
        positions_by_tag(&ng, &e, n, origin, x1);
        for (int64_t k = 0; k < n; k++)
            for (int a = 0; a < 2; a++) {
                double want = x0[3 * k + a] * lam[a];
                double dd = fabs(want - x1[3 * k + a]);
                if (dd > 0.5 * nb.L[a])
                    dd = nb.L[a] - dd;
                ok &= dd < 1e-6;
            }
        carlo_cell_data_free(&e);
    }
    CHECK("unit/core/cells/regrid", ok, "re-gridding lost or moved particles");
    free(x0);
    free(x1);
    carlo_cell_data_free(&d);
}

static void test_overflow(void)
{
    carlo_cell_grid g;
    double L[3] = {4, 4, 0};
    carlo_box b = carlo_box_make(2, L);
    carlo_cells_plan(&g, &b, 1.0, sqrt(2.0), 2, 2, 1);
    carlo_cell_data d;
    carlo_cell_data_alloc(&g, &d);
    double r[9] = {0.1, 0.1, 0, 0.2, 0.2, 0, 0.3, 0.3, 0};
    uint32_t tag[3] = {1, 2, 3};
    int rc = carlo_cells_fill(&g, &d, 3, r, tag);
    CHECK("unit/core/cells/fill-overflow-named", rc != 0 && strstr(carlo_errmsg(), "1, 2, 3"), "%s",
          carlo_errmsg());
    carlo_cell_data_free(&d);
}

int main(void)
{
    test_plan();
    test_index();
    test_set_order();
    test_shift(2, 300, 100000, "shift-2d");
    test_shift(3, 600, 20000, "shift-3d");
    test_regrid();
    test_overflow();
    return check_failed;
}
