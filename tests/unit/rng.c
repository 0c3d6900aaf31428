/* unit/core/rng — Philox4x32-10 against the Random123 known-answer vectors, and the
 * unbiased integer draw against a modulus where any bias would be gross. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "core/rng.h"

int main(void)
{
    static const struct {
        uint32_t ctr[4], key[2], out[4];
    } kat[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (int i = 0; i < 3; i++) {
        carlo_u32x4 c;
        memcpy(c.v, kat[i].ctr, sizeof c.v);
        carlo_u32x4 r = carlo_philox4x32_10(c, kat[i].key[0], kat[i].key[1]);
        char name[64];
        snprintf(name, sizeof name, "unit/core/rng/philox-kat-%d", i + 1);
        CHECK(name, memcmp(r.v, kat[i].out, sizeof r.v) == 0, "got %08x %08x %08x %08x", r.v[0],
              r.v[1], r.v[2], r.v[3]);
    }

    /* carlo_rng's counter layout: changing any argument changes the draw */
    carlo_u32x4 base = carlo_rng(42, 1, 7, 3, 2);
    carlo_u32x4 v[5] = {carlo_rng(43, 1, 7, 3, 2), carlo_rng(42, 2, 7, 3, 2), carlo_rng(42, 1, 8, 3, 2),
                        carlo_rng(42, 1, 7, 4, 2), carlo_rng(42, 1, 7, 3, 3)};
    int distinct = 1;
    for (int i = 0; i < 5; i++)
        distinct &= memcmp(&v[i], &base, sizeof base) != 0;
    CHECK("unit/core/rng/streams-distinct", distinct, "two arguments map to one counter");

    /* n = 3 * 2^30: a modulo draw would put twice as many values in the first third.
     * chi-square with 2 degrees of freedom; 13.8 is the 0.999 quantile. */
    const uint32_t n = 3u << 30;
    uint64_t bins[3] = {0, 0, 0};
    const int draws = 300000;
    for (int i = 0; i < draws; i++) {
        uint32_t x = carlo_below(2024, CARLO_PURPOSE_CORE_TEST, 0, (uint32_t)i, 0, n);
        bins[x >> 30]++;
    }
    double chi2 = 0;
    for (int b = 0; b < 3; b++)
        chi2 += ((double)bins[b] - draws / 3.0) * ((double)bins[b] - draws / 3.0) / (draws / 3.0);
    CHECK("unit/core/rng/below-unbiased-chi2", chi2 < 13.8, "chi2 = %.2f (bins %llu %llu %llu)", chi2,
          (unsigned long long)bins[0], (unsigned long long)bins[1], (unsigned long long)bins[2]);

    /* small n: every value in range, chi-square with 6 degrees of freedom (0.999: 22.46) */
    uint64_t h[7] = {0};
    int in_range = 1;
    for (int i = 0; i < 700000; i++) {
        uint32_t x = carlo_below(7, CARLO_PURPOSE_CORE_TEST, 1, (uint32_t)i, 0, 7);
        if (x >= 7)
            in_range = 0;
        else
            h[x]++;
    }
    chi2 = 0;
    for (int b = 0; b < 7; b++)
        chi2 += ((double)h[b] - 1e5) * ((double)h[b] - 1e5) / 1e5;
    CHECK("unit/core/rng/below-7-chi2", in_range && chi2 < 22.46, "chi2 = %.2f, in range %d", chi2,
          in_range);

    /* the rejection rule itself: for n = 3 the words below 2^32 mod 3 = 1 are rejected */
    uint32_t out;
    int rej = 0;
    for (uint32_t r = 0; r < 4; r++)
        rej += carlo_below_try(r, 3, &out);
    CHECK("unit/core/rng/below-rejects", rej == 1, "%d of the first 4 words rejected", rej);

    /* uniform doubles and floats stay in [0, 1) at the extremes */
    CHECK("unit/core/rng/u01-range",
          carlo_u01(0xffffffffu, 0xffffffffu) < 1.0 && carlo_u01(0, 0) == 0.0 &&
              carlo_u01f(0xffffffffu) < 1.0f,
          "out of [0, 1)");

    /* normals: mean 0, variance 1 */
    double s = 0, s2 = 0;
    const int nn = 200000;
    for (int i = 0; i < nn; i++) {
        double z0, z1;
        carlo_normal2(carlo_rng(5, CARLO_PURPOSE_CORE_TEST, 2, (uint32_t)i, 0), &z0, &z1);
        s += z0 + z1;
        s2 += z0 * z0 + z1 * z1;
    }
    double mean = s / (2 * nn), var = s2 / (2 * nn) - mean * mean;
    CHECK("unit/core/rng/normal-moments", fabs(mean) < 5 * sqrt(1.0 / (2 * nn)) &&
                                              fabs(var - 1) < 5 * sqrt(2.0 / (2 * nn)),
          "mean %.5f var %.5f", mean, var);
    return check_failed;
}
