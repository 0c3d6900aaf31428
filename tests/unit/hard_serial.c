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
                     .seed = 2024, .init = HARD_INIT_RANDOM, .d = 0.16, .moves = 4,
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
    hard_run(s, equil);
    for (uint64_t t = 0; t < equil; t++)
        ref_sweep(&r);
    int ok = 1;
    for (size_t j = 0; j < samples && ok; j++) {
        ok = hard_run(s, every) == 0 && hard_pressure_now(s, &pp, &a.gr[j], &a.sdf[j]) == 0;
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
    hard_counts c;
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

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "validate") == 0) {
        prefix = "validate";
        run_case("disks-0.70", 2, 400, 0.70, 20000, 40000, 10, 1);
        run_case("spheres-0.47", 3, 500, 0.47, 5000, 20000, 10, 1);
        return check_failed;
    }
    run_case("disks-0.60", 2, 256, 0.60, 2000, 4000, 5, 0);
    run_case("spheres-0.40", 3, 400, 0.40, 1000, 2000, 5, 0);
    return check_failed;
}
