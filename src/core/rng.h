/* rng.h — Philox4x32-10 (Salmon et al., SC'11), the only generator in carlo,
 * for host and device. A draw is a pure function of (seed, purpose, step, index, draw),
 * so no generator state is ever stored: see DESIGN.md, "Randomness and reproducibility".
 *
 * Counter layout used everywhere:
 *   key     = { seed & 0xffffffff, seed >> 32 }
 *   counter = { index, draw, step & 0xffffffff, (step >> 32 & 0xffff) | purpose << 16 }
 * index is a site or particle, draw a per-item sub-stream (a replica, a retry), step a
 * sweep or half-sweep counter (< 2^48), purpose one of the constants below. */
#ifndef CARLO_RNG_H
#define CARLO_RNG_H

#include <stdint.h>
#include "core/hd.h"

/* Purposes, one range per model so streams never collide. */
enum {
    CARLO_PURPOSE_CORE_TEST = 0x01,
    CARLO_PURPOSE_CORE_SEED = 0x02,
    CARLO_PURPOSE_PROTOCOL = 0x03, /* lua/carlo protocols: exchanges, resampling, replica seeds */
    /* 0x10-0x1f: Potts (src/potts/potts_kernel.h) */
    /* 0x20-0x2f: hard particles, 0x30-0x3f: Lennard-Jones, 0x40-0x4f: lattice KMC */
};

typedef struct carlo_u32x4 { uint32_t v[4]; } carlo_u32x4;

/* Word i (0..3, a runtime value) of r by selects: no array indexed at run time, which would
 * put r in local memory on the GPU. */
CARLO_HD uint32_t carlo_u32x4_at(carlo_u32x4 r, int i)
{
    return i < 2 ? (i == 0 ? r.v[0] : r.v[1]) : (i == 2 ? r.v[2] : r.v[3]);
}

#define CARLO_PHILOX_M0 0xD2511F53u
#define CARLO_PHILOX_M1 0xCD9E8D57u
#define CARLO_PHILOX_W0 0x9E3779B9u
#define CARLO_PHILOX_W1 0xBB67AE85u

CARLO_HD uint32_t carlo_mulhi32(uint32_t a, uint32_t b)
{
#ifdef __CUDA_ARCH__
    return __umulhi(a, b);
#else
    return (uint32_t)(((uint64_t)a * b) >> 32);
#endif
}

/* The bare bijection: 10 rounds of Philox4x32 on counter c under key (k0, k1). */
CARLO_HD carlo_u32x4 carlo_philox4x32_10(carlo_u32x4 c, uint32_t k0, uint32_t k1)
{
    for (int round = 0; round < 10; round++) {
        uint32_t hi0 = carlo_mulhi32(CARLO_PHILOX_M0, c.v[0]);
        uint32_t lo0 = CARLO_PHILOX_M0 * c.v[0];
        uint32_t hi1 = carlo_mulhi32(CARLO_PHILOX_M1, c.v[2]);
        uint32_t lo1 = CARLO_PHILOX_M1 * c.v[2];
        carlo_u32x4 n;
        n.v[0] = hi1 ^ c.v[1] ^ k0;
        n.v[1] = lo1;
        n.v[2] = hi0 ^ c.v[3] ^ k1;
        n.v[3] = lo0;
        c = n;
        k0 += CARLO_PHILOX_W0;
        k1 += CARLO_PHILOX_W1;
    }
    return c;
}

/* Four independent 32-bit words for (seed, purpose, step, index, draw). */
CARLO_HD carlo_u32x4 carlo_rng(uint64_t seed, uint32_t purpose, uint64_t step,
                               uint32_t index, uint32_t draw)
{
    carlo_u32x4 c;
    c.v[0] = index;
    c.v[1] = draw;
    c.v[2] = (uint32_t)step;
    c.v[3] = ((uint32_t)(step >> 32) & 0xffffu) | (purpose << 16);
    return carlo_philox4x32_10(c, (uint32_t)seed, (uint32_t)(seed >> 32));
}

/* Uniform float in [0, 1) from the top 24 bits: every value exactly representable. */
CARLO_HD float carlo_u01f(uint32_t r)
{
    return (float)(r >> 8) * (1.0f / 16777216.0f);
}

/* Uniform double in [0, 1) from 53 bits of two words. */
CARLO_HD double carlo_u01(uint32_t hi, uint32_t lo)
{
    uint64_t x = ((uint64_t)hi << 21) ^ (uint64_t)(lo >> 11);
    return (double)x * (1.0 / 9007199254740992.0);
}

/* Lemire's multiply-shift draw of an integer in [0, n), n >= 1, from one word.
 * Returns 0 and sets *out when the word is accepted; returns 1 when it must be
 * rejected (probability < n / 2^32) and another word drawn: that keeps it unbiased. */
CARLO_HD int carlo_below_try(uint32_t r, uint32_t n, uint32_t *out)
{
    uint64_t m = (uint64_t)r * n;
    uint32_t low = (uint32_t)m;
    if (low < n) {
        uint32_t threshold = (0u - n) % n;
        if (low < threshold)
            return 1;
    }
    *out = (uint32_t)(m >> 32);
    return 0;
}

/* An unbiased integer in [0, n) as a pure function of the stream: tries the four
 * words of draw `draw`, then of draw + 1, ... (the retries are astronomically rare). */
CARLO_HD uint32_t carlo_below(uint64_t seed, uint32_t purpose, uint64_t step,
                              uint32_t index, uint32_t draw, uint32_t n)
{
    for (;;) {
        carlo_u32x4 r = carlo_rng(seed, purpose, step, index, draw++);
        uint32_t out;
        for (int i = 0; i < 4; i++)
            if (!carlo_below_try(r.v[i], n, &out))
                return out;
    }
}

#ifndef __CUDACC__
#include <math.h>
/* Two standard normal deviates (Box-Muller) from one draw. Host only: libm and
 * CUDA's transcendental functions differ in the last bit, so normals are never
 * used where CPU and GPU must agree bit for bit. */
static inline void carlo_normal2(carlo_u32x4 r, double *z0, double *z1)
{
    double u1 = 1.0 - carlo_u01(r.v[0], r.v[1]); /* (0, 1]: log is finite */
    double u2 = carlo_u01(r.v[2], r.v[3]);
    double radius = sqrt(-2.0 * log(u1));
    double angle = 6.283185307179586 * u2;
    *z0 = radius * cos(angle);
    *z1 = radius * sin(angle);
}
#endif

#endif
