/* unit/potts_wl — Wang-Landau for the Potts model: the kernel's exp and energy change against
 * plain recomputation, the chain's independence of how the run is cut into chunks and of the
 * thread count, and ln g of q = 3, L = 4 against the exact density of states counted over all
 * 3^16 configurations (mean of several seeds within a stated number of its own error bars). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/error.h"
#include "potts/potts_wl.h"

/* Equal nearest-neighbour pairs of a row-major L x L torus, counted from scratch. */
static int equal_bonds(const uint8_t *s, int L)
{
    int b = 0;
    for (int i = 0; i < L; i++)
        for (int j = 0; j < L; j++) {
            b += s[i * L + j] == s[((i + 1) % L) * L + j];
            b += s[i * L + j] == s[i * L + (j + 1) % L];
        }
    return b;
}

static void test_exp(void)
{
    double worst = 0;
    for (int i = 0; i <= 200000; i++) {
        double x = -699.0 * i / 200000.0 - 1e-3 * (i % 7);
        double e = exp(x), got = potts_wl_exp(x);
        double rel = fabs(got - e) / e;
        if (rel > worst)
            worst = rel;
    }
    CHECK("unit/potts_wl/exp", worst < 4.5e-16 && potts_wl_exp(0) == 1.0 &&
                                   potts_wl_exp(-701) == 0.0,
          "largest relative error %.3g (allowed 2 ulp)", worst);
}

static void test_delta(void)
{
    int L = 6, q = 4, bad = 0;
    uint8_t s[36];
    carlo_u32x4 r;
    for (int i = 0; i < 36; i++) {
        r = carlo_rng(5, CARLO_PURPOSE_CORE_TEST, 0, (uint32_t)i, 0);
        s[i] = (uint8_t)(r.v[0] % q);
    }
    for (uint32_t n = 0; n < 20000; n++) {
        r = carlo_rng(5, CARLO_PURPOSE_CORE_TEST, 1, n, 0);
        uint32_t site = r.v[0] % 36, t = r.v[1] % q;
        int before = equal_bonds(s, L);
        int d = potts_wl_delta(s, (uint32_t)L, site, t);
        s[site] = (uint8_t)t;
        bad += equal_bonds(s, L) - before != d;
    }
    CHECK("unit/potts_wl/delta", bad == 0, "%d of 20000 energy changes wrong", bad);
}

static potts_wl *make(int L, int q, int windows, int walkers, double final, uint64_t seed)
{
    potts_wl_params p = {.L = L, .q = q, .windows = windows, .walkers = walkers, .overlap = 0.5,
                         .flatness = 0.8, .final = final, .seed = seed, .device = CARLO_CPU,
                         .quiet = 1};
    potts_wl *r = potts_wl_create(&p);
    if (!r)
        printf("potts_wl_create: %s\n", carlo_errmsg());
    return r;
}

/* The chain does not depend on the chunks it is run in, nor on the threads. */
static void test_chunks(void)
{
    potts_wl *a = make(8, 3, 3, 4, 1e-4, 11), *b = make(8, 3, 3, 4, 1e-4, 11);
    if (!a || !b)
        return;
    omp_set_num_threads(1);
    int open = 1;
    while (open) { /* small, odd chunks: the GPU backend's launches end anywhere too */
        potts_wl_cpu_backend.advance(a, 997);
        open = 0;
        for (int k = 0; k < a->W; k++)
            open |= a->win[k].phase != POTTS_WL_DONE;
    }
    omp_set_num_threads(2);
    potts_wl_run(b, 1);
    size_t n = (size_t)a->W * (size_t)a->par.stride;
    int same = memcmp(a->lng, b->lng, n * sizeof(double)) == 0 &&
               memcmp(a->hist, b->hist, n * sizeof(uint64_t)) == 0 &&
               memcmp(a->spins, b->spins, (size_t)a->W * a->par.walkers * a->par.N) == 0;
    for (int k = 0; k < a->W; k++)
        same &= a->win[k].step == b->win[k].step && a->win[k].halvings == b->win[k].halvings;
    CHECK("unit/potts_wl/chunks_threads", same,
          "chunks of 997 steps on one thread differ from the run's chunks on two");
    potts_wl_destroy(a);
    potts_wl_destroy(b);
}

/* Exact g(b) of q = 3 on the 4 x 4 torus: all 3^16 configurations, the base-3 counter's
 * changed digits recounted locally. */
static void exact_q3_L4(double *g)
{
    enum { L = 4, N = 16 };
    uint8_t s[N] = {0};
    int b = 2 * N;
    memset(g, 0, sizeof(double) * (2 * N + 1));
    for (;;) {
        g[b] += 1;
        int i = 0;
        for (; i < N; i++) { /* increment digit i, carrying */
            uint32_t t = s[i] == 2 ? 0 : s[i] + 1u;
            int x = i / L, y = i % L, d = 0;
            int nb[4] = {((x + L - 1) % L) * L + y, ((x + 1) % L) * L + y, x * L + (y + L - 1) % L,
                         x * L + (y + 1) % L};
            for (int a = 0; a < 4; a++)
                d += (s[nb[a]] == t) - (s[nb[a]] == s[i]);
            s[i] = (uint8_t)t;
            b += d;
            if (t != 0)
                break;
        }
        if (i == N)
            break;
    }
}

static void test_exact(void)
{
    double g[33];
    exact_q3_L4(g);
    double total = 0;
    for (int b = 0; b <= 32; b++)
        total += g[b];
    CHECK("unit/potts_wl/exact_count", total == 43046721.0 && g[32] == 3 && g[31] == 0,
          "enumeration counts %.0f states, g(2N) = %.0f", total, g[32]);
    enum { SEEDS = 6 };
    for (int windows = 1; windows <= 2; windows++) {
        double sum[33] = {0}, sum2[33] = {0};
        int support_ok = 1;
        for (int seed = 1; seed <= SEEDS; seed++) {
            potts_wl *r = make(4, 3, windows, 1, 1e-5, (uint64_t)(100 * windows + seed));
            double lng[33];
            if (!r || potts_wl_run(r, 1) || potts_wl_join(r, lng))
                return;
            for (int b = 0; b <= 32; b++) {
                support_ok &= (g[b] > 0) == (lng[b] > -INFINITY);
                if (g[b] > 0) {
                    double d = lng[b] - log(g[b]);
                    sum[b] += d;
                    sum2[b] += d * d;
                }
            }
            potts_wl_destroy(r);
        }
        char name[64];
        snprintf(name, sizeof name, "unit/potts_wl/support_w%d", windows);
        CHECK(name, support_ok, "visited levels differ from the levels of nonzero g");
        /* each level: the mean error of the seeds within 5 of its standard errors (plus a
         * floor of 1e-3 for levels, such as the ground state, that every seed gets alike) */
        double worst = 0;
        int worst_b = -1;
        for (int b = 0; b <= 32; b++)
            if (g[b] > 0) {
                double m = sum[b] / SEEDS, var = (sum2[b] / SEEDS - m * m) * SEEDS / (SEEDS - 1);
                double se = sqrt(var > 0 ? var / SEEDS : 0) + 1e-3;
                if (fabs(m) / se > worst) {
                    worst = fabs(m) / se;
                    worst_b = b;
                }
            }
        snprintf(name, sizeof name, "unit/potts_wl/exact_q3_L4_w%d", windows);
        CHECK(name, worst <= 5, "level E = %d: mean error %.2f standard errors off", -worst_b,
              worst);
    }
}

int main(void)
{
    test_exp();
    test_delta();
    test_chunks();
    test_exact();
    return check_failed;
}
