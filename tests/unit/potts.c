/* unit/potts — the Potts kernel: the four-site Metropolis equals the site-by-site
 * definition on any input, the packed layout round-trips, the neighbours are the lattice's,
 * and the heat bath draws states with the right probabilities. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "potts/potts.h"

static uint32_t word(uint64_t seed, uint32_t i, int w)
{
    return carlo_rng(seed, CARLO_PURPOSE_CORE_TEST, 77, i, 0).v[w];
}

int main(void)
{
    /* potts_metropolis4 == 4 x potts_metropolis, for random q, beta, states, neighbours, words;
     * states drawn from a small subset half the time so that equal neighbours are common */
    long mismatches = 0, trials = 400000;
    uint32_t last_q = 0;
    potts_rates rt;
    for (long n = 0; n < trials; n++) {
        uint32_t i = (uint32_t)n;
        uint32_t q = 2 + word(1, i, 0) % 254;
        if (q != last_q || n % 1000 == 0) {
            potts_rates_set(&rt, 0.05 + 4.0 * (word(2, i, 0) >> 8) / 16777216.0);
            last_q = q;
        }
        uint32_t span = (word(3, i, 1) & 1) ? q : (q < 3 ? q : 3);
        uint8_t s[4], nb[4][4];
        uint32_t S = 0, U = 0, D = 0, Lw = 0, Rw = 0, r0[4], r1[4];
        for (int j = 0; j < 4; j++) {
            carlo_u32x4 a = carlo_rng(4, CARLO_PURPOSE_CORE_TEST, (uint64_t)n, (uint32_t)j, 0);
            carlo_u32x4 b = carlo_rng(5, CARLO_PURPOSE_CORE_TEST, (uint64_t)n, (uint32_t)j, 0);
            s[j] = (uint8_t)(a.v[0] % span);
            for (int m = 0; m < 4; m++)
                nb[j][m] = (uint8_t)(a.v[m] >> 8) % span;
            S |= (uint32_t)s[j] << (8 * j);
            U |= (uint32_t)nb[j][0] << (8 * j);
            D |= (uint32_t)nb[j][1] << (8 * j);
            Lw |= (uint32_t)nb[j][2] << (8 * j);
            Rw |= (uint32_t)nb[j][3] << (8 * j);
            r0[j] = b.v[0];
            r1[j] = (n % 7 == 0) ? rt.thr[1 + j % 4] - (j & 1) : b.v[1]; /* thresholds' edges */
        }
        uint32_t W = potts_metropolis4(S, U, D, Lw, Rw, r0, r1, &rt, q, 9, 3, 2 * (uint32_t)n, 1);
        for (int j = 0; j < 4; j++) {
            uint32_t one = potts_metropolis(s[j], nb[j], r0[j], r1[j], &rt, q, 9, 3,
                                            2 * (uint32_t)n + (uint32_t)j, 1);
            if (((W >> (8 * j)) & 0xff) != one)
                mismatches++;
        }
    }
    CHECK("unit/potts/metropolis4-equals-definition", mismatches == 0, "%ld of %ld sites differ",
          mismatches, 4 * trials);

    /* the retry path: a word that must be rejected gives the RETRY stream's draw */
    uint32_t out, rejected = 0;
    for (uint32_t r = 0; r < 16; r++)
        if (carlo_below_try(r, 7, &out))
            rejected = r + 1;
    if (rejected) {
        uint8_t nb[4] = {0, 0, 0, 0};
        uint32_t t = potts_propose(0, rejected - 1, 8, 5, 6, 7, 8);
        uint32_t want = 1 + carlo_below(5, POTTS_PURPOSE_RETRY, 6, 7, 8, 7);
        CHECK("unit/potts/proposal-retry", t == want, "got %u, want %u", t, want);
        (void)nb;
    }

    /* packed layout round trip and neighbours at several L (including L = 2 and odd L/2) */
    int layout_ok = 1, neighbours_ok = 1;
    int sizes[] = {2, 4, 6, 10, 16, 50};
    for (unsigned z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        int L = sizes[z], half = L / 2;
        uint8_t *a = malloc((size_t)L * L), *b = malloc((size_t)L * L), *c0 = malloc((size_t)L * half),
                *c1 = malloc((size_t)L * half);
        for (int x = 0; x < L * L; x++)
            a[x] = (uint8_t)(word(6, (uint32_t)x, 2) % 200);
        potts_pack(L, a, c0, c1);
        potts_unpack(L, c0, c1, b);
        layout_ok &= memcmp(a, b, (size_t)L * L) == 0;
        for (int col = 0; col < 2; col++)
            for (int i = 0; i < L; i++)
                for (int k = 0; k < half; k++) {
                    int j = 2 * k + ((i + col) & 1);
                    uint8_t nb[4];
                    potts_neighbours(col ? c0 : c1, L, half, i, k, col, nb);
                    neighbours_ok &= nb[0] == a[((i + L - 1) % L) * L + j] &&
                                     nb[1] == a[((i + 1) % L) * L + j] &&
                                     nb[2] == a[i * L + (j + L - 1) % L] &&
                                     nb[3] == a[i * L + (j + 1) % L];
                }
        free(a);
        free(b);
        free(c0);
        free(c1);
    }
    CHECK("unit/potts/packed-layout-roundtrip", layout_ok, "pack/unpack differ");
    CHECK("unit/potts/neighbours", neighbours_ok, "a neighbour is not the lattice's");

    /* heat bath: frequencies against exp(beta n_t) / Z for one neighbourhood (2, 2, 5, 0)
     * with q = 7: chi-square over the 7 states, 6 degrees of freedom (0.999 quantile 22.46) */
    {
        double beta = 0.9;
        potts_rates_set(&rt, beta);
        uint8_t nb[4] = {2, 2, 5, 0};
        int q = 7;
        double w[7], Z = 0;
        for (int t = 0; t < q; t++) {
            int n = (nb[0] == t) + (nb[1] == t) + (nb[2] == t) + (nb[3] == t);
            w[t] = exp(beta * n);
            Z += w[t];
        }
        long count[7] = {0};
        const long draws = 700000;
        for (long n = 0; n < draws; n++) {
            carlo_u32x4 d = carlo_rng(8, CARLO_PURPOSE_CORE_TEST, 0, (uint32_t)n, 0);
            count[potts_heatbath(nb, d.v[0], d.v[1], &rt, (uint32_t)q)]++;
        }
        double chi2 = 0;
        for (int t = 0; t < q; t++) {
            double e = draws * w[t] / Z;
            chi2 += (count[t] - e) * (count[t] - e) / e;
        }
        CHECK("unit/potts/heatbath-distribution", chi2 < 22.46, "chi2 = %.2f", chi2);
    }

    /* Metropolis acceptance frequency of a move with dE = 2 equals exp(-2 beta) */
    {
        double beta = 0.7;
        potts_rates_set(&rt, beta);
        uint8_t nb[4] = {0, 0, 1, 1}; /* from state 0 to 2: dE = +2 */
        long accepted = 0, tried = 0;
        for (long n = 0; n < 2000000; n++) {
            carlo_u32x4 d = carlo_rng(9, CARLO_PURPOSE_CORE_TEST, 0, (uint32_t)n, 0);
            uint32_t t = potts_propose(0, d.v[0], 3, 9, 0, (uint32_t)n, 0);
            if (t != 2)
                continue;
            tried++;
            accepted += potts_metropolis(0, nb, d.v[0], d.v[1], &rt, 3, 9, 0, (uint32_t)n, 0) == 2;
        }
        double p = exp(-2 * beta), f = (double)accepted / tried;
        CHECK("unit/potts/metropolis-acceptance", fabs(f - p) < 4 * sqrt(p * (1 - p) / tried),
              "frequency %.5f, exp(-2 beta) = %.5f", f, p);
    }
    return check_failed;
}
