/* unit/hard/reference — the checkerboard scheme (MPMC, CPU backend) against the serial
 * reference of hard_reference.h: the same pressure estimators on both must agree within their
 * combined blocking error bars, for disks at phi = 0.60 (N = 256) and spheres at phi = 0.40 (N = 400). Both chains
 * start from the same configuration (the checkerboard system's compressed random start), with
 * fixed seeds. The comparison uses the g(r) and scale-distribution estimators with a linear fit
 * over (1, 1.05): the same functional of the configurations on both sides, so its extrapolation
 * bias cancels, while its variance is nine times lower than the paper's degree-5 fit's.
 * With the argument "validate" (tests/validation/hard_reference.sh) it runs longer cases at
 * higher density with the paper's estimator (degree 5 on (1, 1.02]), named validate/hard/.... */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/error.h"
#include "core/stats.h"
#include "hard/hard.h"
#include "unit/hard_reference.h"

typedef struct series {
    double *gr, *sdf;
    size_t n;
} series;

static void estimate(const double *x, size_t n, carlo_estimate *e) { carlo_blocking(x, n, e); }

static const char *prefix = "unit";

static void compare(const char *name, const series *a, const series *b)
{
    carlo_estimate ea, eb;
    char full[96];
    const char *what[2] = {"gr", "sdf"};
    for (int k = 0; k < 2; k++) {
        estimate(k ? a->sdf : a->gr, a->n, &ea);
        estimate(k ? b->sdf : b->gr, b->n, &eb);
        double comb = sqrt(ea.err * ea.err + eb.err * eb.err);
        snprintf(full, sizeof full, "%s/hard/reference-%s-%s", prefix, name, what[k]);
        printf("# %s: checkerboard %.5f +- %.5f (tau %.1f)  serial %.5f +- %.5f (tau %.1f)\n", full,
               ea.mean, ea.err, ea.tau, eb.mean, eb.err, eb.tau);
        CHECK(full, fabs(ea.mean - eb.mean) <= 3 * comb && ea.plateau && eb.plateau,
              "checkerboard %.5f +- %.5f vs serial %.5f +- %.5f: %.1f combined error bars%s", ea.mean,
              ea.err, eb.mean, eb.err, fabs(ea.mean - eb.mean) / comb,
              ea.plateau && eb.plateau ? "" : " (no blocking plateau: run longer)");
    }
}

static void run_case(const char *name, int dim, int64_t N, double phi, uint64_t equil,
                     uint64_t samples, uint64_t every, int paper_fit)
{
    hard_pressure_params pp;
    hard_pressure_defaults(&pp);
    if (!paper_fit) {
        pp.gr_width = pp.sdf_xmax = 0.05;
        pp.gr_dr = pp.sdf_dx = 0.001;
        pp.gr_degree = pp.sdf_degree = 1;
    }
    hard_scan sc;
    hard_scan_from(&pp, &sc);

    double side = pow((double)N * hard_particle_volume(dim) / phi, 1.0 / dim);
    double L[3] = {side, side, side};
    hard_params p = {.dim = dim, .N = N, .box = carlo_box_make(dim, L), .device = CARLO_CPU,
                     .seed = 2024, .init = HARD_INIT_RANDOM, .delta = 0.16, .moves_per_cell = 4,
                     .shuffle = 1, .quiet = 1};
    hard_system *s = hard_create(&p);
    if (!s) {
        printf("FAIL %s/hard/reference-%s: %s\n", prefix, name, carlo_errmsg());
        check_failed = 1;
        return;
    }
    double *x = malloc(sizeof(double) * 3 * (size_t)N);
    hard_positions(s, x);
    ref_system r;
    if (ref_init(&r, dim, N, s->box.L, x, 0.16, 99)) {
        printf("FAIL %s/hard/reference-%s: box too small for the reference\n", prefix, name);
        check_failed = 1;
        return;
    }
    double V = carlo_box_volume(&s->box);
    series a = {malloc(sizeof(double) * samples), malloc(sizeof(double) * samples), samples};
    series b = {malloc(sizeof(double) * samples), malloc(sizeof(double) * samples), samples};
    uint64_t *h = calloc((size_t)(sc.gr_bins + sc.sdf_bins), sizeof(uint64_t));
    carlo_advance(&s->sys, equil);
    for (uint64_t t = 0; t < equil; t++)
        ref_sweep(&r);
    int ok = 1;
    for (size_t j = 0; j < samples && ok; j++) {
        ok = carlo_advance(&s->sys, every) == 0 && hard_pressure_now(s, &pp, &a.gr[j], &a.sdf[j]) == 0;
        for (uint64_t t = 0; t < every; t++)
            ref_sweep(&r);
        for (int k = 0; k < sc.gr_bins + sc.sdf_bins; k++)
            h[k] = 0;
        hard_histograms_positions(dim, &s->box, N, r.x, &sc, h, h + sc.gr_bins);
        b.gr[j] = hard_pressure_gr(dim, N, V, &pp, h, 1.0);
        b.sdf[j] = hard_pressure_sdf(dim, N, V, &pp, h + sc.gr_bins, 1.0);
    }
    char full[96];
    snprintf(full, sizeof full, "%s/hard/reference-%s-invariants", prefix, name);
    CHECK(full, ok && hard_verify(s) == 0, "%s", carlo_errmsg());
    carlo_counts c;
    hard_counts_get(s, &c);
    printf("# %s: acceptance checkerboard %.3f, serial %.3f\n", name,
           (double)c.accepted / (double)c.tried, (double)r.accepted / (double)r.tried);
    compare(name, &a, &b);
    free(a.gr);
    free(a.sdf);
    free(b.gr);
    free(b.sdf);
    free(h);
    free(x);
    ref_free(&r);
    hard_destroy(s);
}

/* The 2D trial displacements (hard_disk_point): exactly odd, inside the disk, uniform over it
 * (the fractions of points within radius 1/2 and in each octant, E[x^2] = E[y^2] = 1/4, within
 * five standard errors of 10^6 draws), and the pair form equal to the one-move form. */
static void check_displacements(void)
{
    const int n = 1000000;
    int odd = 1, inside = 1, same = 1, half = 0, octant[8] = {0};
    double x2 = 0.0, y2 = 0.0;
    for (int k = 0; k < n; k++) {
        carlo_u32x4 r = carlo_rng(7, HARD_PURPOSE_MOVE, 1, 2, (uint32_t)k);
        float a = hard_unit(r.v[0]), b = hard_unit(r.v[1]), p[2], m[2];
        hard_disk_point(a, b, p);
        hard_disk_point(-a, -b, m);
        odd &= m[0] == -p[0] && m[1] == -p[1];
        double q = (double)p[0] * p[0] + (double)p[1] * p[1];
        inside &= q <= 1.0 + 1e-6;
        half += q < 0.25;
        x2 += (double)p[0] * p[0];
        y2 += (double)p[1] * p[1];
        double phi = atan2(p[1], p[0]);
        octant[(int)floor((phi + M_PI) / (M_PI / 4)) & 7]++;
    }
    CHECK("unit/hard/disk-point-odd", odd, "the map of (-a, -b) is not the negated point");
    CHECK("unit/hard/disk-point-inside", inside, "a point outside the unit disk");
    double se = 5.0 * sqrt(0.25 * 0.75 / n);
    CHECK("unit/hard/disk-point-uniform-radius", fabs((double)half / n - 0.25) < se,
          "fraction within r = 1/2: %.5f (uniform: 0.25 +- %.5f)", (double)half / n, se);
    double seo = 5.0 * sqrt(0.125 * 0.875 / n);
    int oct_ok = 1;
    for (int o = 0; o < 8; o++)
        oct_ok &= fabs((double)octant[o] / n - 0.125) < seo;
    CHECK("unit/hard/disk-point-uniform-angle", oct_ok, "octant fractions off 1/8 by more than %.5f", seo);
    /* x^2 of a uniform point of the disk: mean 1/4, variance 1/8 - 1/16 */
    double sex = 5.0 * sqrt((0.125 - 0.0625) / n);
    CHECK("unit/hard/disk-point-second-moments", fabs(x2 / n - 0.25) < sex && fabs(y2 / n - 0.25) < sex,
          "E[x^2] = %.5f, E[y^2] = %.5f (uniform: 0.25 +- %.5f)", x2 / n, y2 / n, sex);
    carlo_cell_grid g;
    carlo_box box = carlo_box_make(2, (double[]){20.0, 20.0, 0.0});
    if (carlo_cells_plan(&g, &box, 1.0, HARD_WMAX_2D, HARD_WMAX_2D, HARD_NMAX_2D, 1) == 0) {
        for (uint32_t s = 0; s < 64; s += 2) {
            float pr[2][3], one[3];
            hard_displacement_pair(&g, 0.16f, 9, 3, 11, s, pr);
            for (int k = 0; k < 2; k++) {
                hard_displacement(&g, 2, 0.16f, 9, 3, 11, s + (uint32_t)k, one);
                same &= one[0] == pr[k][0] && one[1] == pr[k][1];
            }
        }
    } else {
        same = 0;
    }
    CHECK("unit/hard/displacement-pair", same, "the pair draw differs from the one-move draw");
}

/* The 3D displacement: hard_ball_point exactly odd in (a, b, z), inside the unit ball, uniform
 * in it (radius, octants, second moments) over 10^6 draws of hard_displacement_raw's words. */
static void check_ball(void)
{
    const int n = 1000000;
    int odd = 1, inside = 1, half = 0, octant[8] = {0};
    double m2[3] = {0.0, 0.0, 0.0};
    for (int k = 0; k < n; k++) {
        carlo_u32x4 r0 = carlo_rng(7, HARD_PURPOSE_MOVE, 1, 2, 2 * (uint32_t)k);
        carlo_u32x4 r1 = carlo_rng(7, HARD_PURPOSE_MOVE, 1, 2, 2 * (uint32_t)k + 1);
        const float a = hard_unit(r0.v[0]), b = hard_unit(r0.v[1]), z = hard_unit(r0.v[2]);
        const float rho = fmaxf(fmaxf(hard_unit_pos(r0.v[3]), hard_unit_pos(r1.v[0])), hard_unit_pos(r1.v[1]));
        float p[3], m[3], raw[3];
        hard_ball_point(a, b, z, rho, p);
        hard_ball_point(-a, -b, -z, rho, m);
        hard_displacement_raw(3, 1.0f, 7, 1, 2, (uint32_t)k, raw);
        odd &= m[0] == -p[0] && m[1] == -p[1] && m[2] == -p[2] && raw[0] == p[0] && raw[1] == p[1] &&
               raw[2] == p[2];
        double q = 0.0;
        for (int c = 0; c < 3; c++) {
            q += (double)p[c] * p[c];
            m2[c] += (double)p[c] * p[c];
        }
        inside &= q <= 1.0 + 1e-6;
        half += q < 0.25;
        octant[(p[0] > 0) + 2 * (p[1] > 0) + 4 * (p[2] > 0)]++;
    }
    CHECK("unit/hard/ball-point-odd", odd, "the map of (-a, -b, -z) is not the negated point, or the draw differs");
    CHECK("unit/hard/ball-point-inside", inside, "a point outside the unit ball");
    double se = 5.0 * sqrt(0.125 * 0.875 / n);
    CHECK("unit/hard/ball-point-uniform-radius", fabs((double)half / n - 0.125) < se,
          "fraction within r = 1/2: %.5f (uniform: 0.125 +- %.5f)", (double)half / n, se);
    int oct_ok = 1;
    for (int o = 0; o < 8; o++)
        oct_ok &= fabs((double)octant[o] / n - 0.125) < se;
    CHECK("unit/hard/ball-point-uniform-octants", oct_ok, "octant fractions off 1/8 by more than %.5f", se);
    /* x^2 of a uniform point of the ball: mean 1/5, variance 3/35 - 1/25 */
    double sex = 5.0 * sqrt((3.0 / 35.0 - 0.04) / n);
    CHECK("unit/hard/ball-point-second-moments",
          fabs(m2[0] / n - 0.2) < sex && fabs(m2[1] / n - 0.2) < sex && fabs(m2[2] / n - 0.2) < sex,
          "E[x^2], E[y^2], E[z^2] = %.5f, %.5f, %.5f (uniform: 0.2 +- %.5f)", m2[0] / n, m2[1] / n, m2[2] / n, sex);
}

/* A list too short for the neighbours (-1 from the gather) makes the moves scan the cells:
 * the same decisions, float for float. Dense lattices, every active cell of every set updated
 * with lists of room 32 and 3 and without lists; the three storages must stay identical. */
static void check_list_overflow(int dim)
{
    const double a = dim == 2 ? 1.02 : 1.05;
    const int nx = dim == 2 ? 20 : 10, ny = dim == 2 ? 24 : 10, nz = dim == 2 ? 1 : 10;
    const double dy = dim == 2 ? a * sqrt(3.0) / 2.0 : a;
    carlo_box box = carlo_box_make(dim, (double[]){nx * a, ny * dy, nz * a});
    carlo_cell_grid g;
    carlo_cell_data d[3] = {{0}};
    const int64_t N = (int64_t)nx * ny * nz;
    double *r = malloc((size_t)N * 3 * sizeof(double));
    int ok = r != NULL &&
             carlo_cells_plan(&g, &box, 1.0, dim == 2 ? HARD_WMAX_2D : HARD_WMAX_3D,
                              dim == 2 ? HARD_WMAX_2D : HARD_WMAX_3D, dim == 2 ? HARD_NMAX_2D : HARD_NMAX_3D, 0) == 0;
    for (int64_t k = 0; ok && k < N; k++) { /* hexagonal rows in 2D, simple cubic in 3D */
        const int64_t i = k % nx, j = (k / nx) % ny, l = k / ((int64_t)nx * ny);
        r[3 * k] = (i + (dim == 2 ? 0.5 * (double)(j & 1) : 0.0)) * a;
        r[3 * k + 1] = j * dy;
        r[3 * k + 2] = l * a;
    }
    for (int v = 0; v < 3 && ok; v++)
        ok = carlo_cell_data_alloc(&g, &d[v]) == 0 && carlo_cells_fill(&g, &d[v], N, r, NULL) == 0;
    const hard_moves mv = {.delta = 0.16f, .moves = 4, .shuffle = 1};
    uint64_t acc[3] = {0, 0, 0};
    int64_t overflowed = 0;
    for (uint64_t step = 0; ok && step < 16; step++)
        for (int set = 0; set < (1 << dim); set++)
            for (int64_t t = 0; t < carlo_cell_set_size(&g); t++) {
                int xyz[3];
                carlo_cell_active(&g, set, t, xyz);
                float nb[HARD_NB_MAX * 3];
                overflowed += hard_gather_cells(dim, dim == 2 ? HARD_NMAX_2D : HARD_NMAX_3D, &g, d[1].pos,
                                                d[1].count, xyz, 0, 1, nb, 1, 3, NULL) < 0;
                for (int v = 0; v < 3; v++) {
                    uint32_t tried;
                    float *list = v == 2 ? NULL : nb;
                    const int cap = v == 0 ? HARD_NB_MAX : 3;
                    acc[v] += dim == 2 ? hard_cell_update(2, HARD_NMAX_2D, 1, &g, d[v].pos, d[v].count, xyz, mv, 5,
                                                          step * 8 + (uint64_t)set, list, 1, cap, NULL, NULL, &tried)
                                       : hard_cell_update(3, HARD_NMAX_3D, 0, &g, d[v].pos, d[v].count, xyz, mv, 5,
                                                          step * 8 + (uint64_t)set, list, 1, cap, NULL, NULL, &tried);
                }
            }
    const size_t bytes = carlo_cells_pos_len(&g) * sizeof(float);
    const int same = ok && acc[0] == acc[1] && acc[1] == acc[2] && memcmp(d[0].pos, d[1].pos, bytes) == 0 &&
                     memcmp(d[0].pos, d[2].pos, bytes) == 0;
    CHECK(dim == 2 ? "unit/hard/list-overflow-disks" : "unit/hard/list-overflow-spheres",
          same && overflowed > 0 && acc[0] > 0,
          "accepted %llu / %llu / %llu (lists of 32, lists of 3, no lists), %lld overflows",
          (unsigned long long)acc[0], (unsigned long long)acc[1], (unsigned long long)acc[2], (long long)overflowed);
    for (int v = 0; v < 3; v++)
        carlo_cell_data_free(&d[v]);
    free(r);
}

/* The NPT acceptance (hard_volume_accept, the one formula every backend's volume move uses):
 * the kernel's acceptance probability, the largest u it accepts (by bisection), for a move and
 * its reverse, must stand in the ratio of the target densities exp(-beta P V) V^N times the
 * Jacobian V of log-volume sampling, and a move to a likelier volume is always accepted. */
static double accept_probability(double P, int64_t N, double V, double Vn)
{
    double lo = 0, hi = 1;
    if (hard_volume_accept(P, N, V, Vn, 1.0 - 1e-16))
        return 1.0;
    for (int k = 0; k < 80; k++) {
        double mid = 0.5 * (lo + hi);
        if (hard_volume_accept(P, N, V, Vn, mid))
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static void check_volume_accept(void)
{
    const double P = 0.6, V = 100.0; /* exp(arg) within e^-3 .. e^3: no vanishing probability */
    const int64_t N = 64;
    double worst = 0;
    int always = 1;
    for (int k = 1; k <= 200; k++) {
        double Vn = V * (1.0 + 0.001 * (k - 100));
        double a = accept_probability(P, N, V, Vn), back = accept_probability(P, N, Vn, V);
        double want = exp(-P * (Vn - V)) * pow(Vn / V, (double)(N + 1));
        worst = fmax(worst, fabs(a / back / want - 1.0));
        always &= (want >= 1) == (a == 1.0) || fabs(want - 1) < 1e-12;
    }
    CHECK("unit/hard/volume-acceptance", worst < 1e-9 && always,
          "the balance ratio is off by %g, or a likelier volume was refused", worst);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "validate") == 0) {
        prefix = "validate";
        run_case("disks-0.70", 2, 400, 0.70, 20000, 40000, 10, 1);
        run_case("spheres-0.47", 3, 500, 0.47, 5000, 20000, 10, 1);
        return check_failed;
    }
    check_displacements();
    check_ball();
    check_volume_accept();
    check_list_overflow(2);
    check_list_overflow(3);
    run_case("disks-0.60", 2, 256, 0.60, 2000, 4000, 5, 0);
    run_case("spheres-0.40", 3, 400, 0.40, 1000, 2000, 5, 0);
    return check_failed;
}
