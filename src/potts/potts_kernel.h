/* potts_kernel.h — the physics of one Potts site update, written once and compiled for
 * the CPU backend (gcc) and the GPU backend (nvcc). Any formula that decides acceptance
 * lives here and nowhere else.
 *
 * Conventions: H = -J sum_<ij> delta(s_i, s_j), J = k_B = 1, states 0..q-1.
 * Packed checkerboard layout (Ferrero et al. 2012, Sec. 3.3): sites of colour c = (i + j) % 2
 * are stored row by row, L/2 per row; element k of row i in colour c is column
 * j = 2k + ((i + c) & 1). A site's up and down neighbours are element k of rows i -/+ 1 of
 * the other colour; its left/right neighbours are elements k and k -/+ 1 of row i of the other
 * colour (see potts_neighbours).
 *
 * Random numbers: one Philox call per pair of sites p = idx / 2 (idx = i * L/2 + k within a
 * colour), step = half-sweep (2 * sweep + colour), draw = replica; words 0-1 serve the even
 * site and words 2-3 the odd one. A site's update therefore depends only on (seed, sweep,
 * colour, replica, site), never on how sites are split among threads. */
#ifndef CARLO_POTTS_KERNEL_H
#define CARLO_POTTS_KERNEL_H

#include <stdint.h>

#include "core/rng.h"

#define POTTS_PURPOSE_UPDATE 0x10u /* the site update's pair of words */
#define POTTS_PURPOSE_RETRY  0x11u /* the rare re-draw of an unbiased proposal */
#define POTTS_PURPOSE_START  0x12u /* random initial state */
#define POTTS_PURPOSE_SWAP   0x13u /* parallel-tempering exchanges */

#define POTTS_Q_MAX 255

/* Acceptance tables of one replica, computed on the host from beta (potts_rates_set)
 * and handed unchanged to both backends, so both decide identically. */
typedef struct potts_rates {
    uint32_t thr[5]; /* Metropolis: a move raising the energy by d > 0 is accepted when the
                        word r1 < thr[d] = floor(exp(-beta d) 2^32) */
    uint32_t pad[3];
    double w[5];     /* heat bath: w[n] = exp(beta n), n = neighbours equal to the candidate */
} potts_rates;

/* Neighbours of element k of a row whose sites sit at odd columns (odd = (i + c) & 1), from
 * the other colour's rows above, at and below it (half = L/2 elements per row). Order: up,
 * down, left, right. The rows may come from anywhere: a whole lattice or a slab with halos. */
CARLO_HD void potts_neighbours_rows(const uint8_t *up, const uint8_t *row, const uint8_t *down,
                                    int half, int k, int odd, uint8_t nb[4])
{
    nb[0] = up[k];
    nb[1] = down[k];
    if (odd) { /* this site is at odd column 2k + 1 */
        nb[2] = row[k];
        nb[3] = row[k + 1 == half ? 0 : k + 1];
    } else {   /* even column 2k */
        nb[2] = row[k == 0 ? half - 1 : k - 1];
        nb[3] = row[k];
    }
}

/* Neighbours of element k of row i of colour c, in the other colour's array `o` of the whole
 * periodic lattice (half = L/2 elements per row). Order: up, down, left, right. */
CARLO_HD void potts_neighbours(const uint8_t *o, int L, int half, int i, int k, int c,
                               uint8_t nb[4])
{
    int up = i == 0 ? L - 1 : i - 1, down = i == L - 1 ? 0 : i + 1;
    potts_neighbours_rows(o + (int64_t)up * half, o + (int64_t)i * half,
                          o + (int64_t)down * half, half, k, (i + c) & 1, nb);
}

/* The proposal of Metropolis: one of the q - 1 other states, uniformly: an unbiased draw
 * from the word r0; its astronomically rare rejection re-draws from the RETRY stream. */
CARLO_HD uint32_t potts_propose(uint32_t s, uint32_t r0, uint32_t q, uint64_t seed,
                                uint64_t halfstep, uint32_t site, uint32_t replica)
{
    uint32_t shift;
    if (carlo_below_try(r0, q - 1, &shift))
        shift = carlo_below(seed, POTTS_PURPOSE_RETRY, halfstep, site, replica, q - 1);
    uint32_t t = s + 1 + shift;
    return t >= q ? t - q : t;
}

/* Metropolis acceptance of a move raising the energy by d (any sign): min(1, exp(-beta d)). */
CARLO_HD int potts_accept(int d, uint32_t r1, const potts_rates *rt)
{
    return d <= 0 || r1 < rt->thr[d > 0 ? d : 0];
}

/* Metropolis: propose, then accept with min(1, exp(-beta dE)). The definition; the four-site
 * version below computes exactly the same function faster. */
CARLO_HD uint32_t potts_metropolis(uint32_t s, const uint8_t nb[4], uint32_t r0, uint32_t r1,
                                   const potts_rates *rt, uint32_t q, uint64_t seed,
                                   uint64_t halfstep, uint32_t site, uint32_t replica)
{
    uint32_t t = potts_propose(s, r0, q, seed, halfstep, site, replica);
    int same_old = (nb[0] == s) + (nb[1] == s) + (nb[2] == s) + (nb[3] == s);
    int same_new = (nb[0] == t) + (nb[1] == t) + (nb[2] == t) + (nb[3] == t);
    return potts_accept(same_old - same_new, r1, rt) ? t : s; /* dE = E(t) - E(s) */
}

/* 0x01 in each byte of x that is zero, 0x00 elsewhere (exact: no borrow crosses bytes). */
CARLO_HD uint32_t potts_zero_bytes(uint32_t x)
{
    return (~(((x | 0x80808080u) - 0x01010101u) | x) & 0x80808080u) >> 7;
}

/* Metropolis for four consecutive sites of one colour row at once (byte j of each word is
 * site j): S the states, U/D/Lw/Rw the up/down/left/right neighbours. Equal-neighbour
 * counts are formed for all four sites with byte-parallel arithmetic; the result equals
 * four calls of potts_metropolis (site0 + j, words r0[j], r1[j]), which a unit test checks. */
CARLO_HD uint32_t potts_metropolis4(uint32_t S, uint32_t U, uint32_t D, uint32_t Lw, uint32_t Rw,
                                    const uint32_t r0[4], const uint32_t r1[4],
                                    const potts_rates *rt, uint32_t q, uint64_t seed,
                                    uint64_t halfstep, uint32_t site0, uint32_t replica)
{
    uint32_t T = 0;
    for (int j = 0; j < 4; j++)
        T |= potts_propose((S >> (8 * j)) & 0xffu, r0[j], q, seed, halfstep, site0 + (uint32_t)j,
                           replica) << (8 * j);
    uint32_t same_old = potts_zero_bytes(U ^ S) + potts_zero_bytes(D ^ S) +
                        potts_zero_bytes(Lw ^ S) + potts_zero_bytes(Rw ^ S);
    uint32_t same_new = potts_zero_bytes(U ^ T) + potts_zero_bytes(D ^ T) +
                        potts_zero_bytes(Lw ^ T) + potts_zero_bytes(Rw ^ T);
    uint32_t d4 = same_old + 0x04040404u - same_new; /* byte j: 4 + dE of site j, no borrow */
    uint32_t M = 0;
    for (int j = 0; j < 4; j++)
        if (potts_accept((int)((d4 >> (8 * j)) & 0xffu) - 4, r1[j], rt))
            M |= 0xffu << (8 * j);
    return (S & ~M) | (T & M);
}

/* Heat bath: draw the new state with probability proportional to exp(beta n_t), n_t the
 * neighbours in state t. The at most four neighbour states are weighed explicitly; the
 * q - k others share weight 1 each and are picked by their rank. */
CARLO_HD uint32_t potts_heatbath(const uint8_t nb[4], uint32_t r0, uint32_t r1,
                                 const potts_rates *rt, uint32_t q)
{
    uint32_t state[4];
    int count[4], k = 0;
    for (int a = 0; a < 4; a++) {
        int found = 0;
        for (int b = 0; b < k; b++)
            if (state[b] == nb[a]) {
                count[b]++;
                found = 1;
            }
        if (!found) {
            state[k] = nb[a];
            count[k] = 1;
            k++;
        }
    }
    double total = (double)(q - (uint32_t)k);
    for (int b = 0; b < k; b++)
        total += rt->w[count[b]];
    double u = carlo_u01(r0, r1) * total;
    for (int b = 0; b < k; b++) {
        if (u < rt->w[count[b]])
            return state[b];
        u -= rt->w[count[b]];
    }
    /* One of the states no neighbour holds: the floor(u)-th of them in increasing order. */
    uint32_t rank = (uint32_t)u, others = q - (uint32_t)k;
    if (rank >= others)
        rank = others - 1; /* rounding at the very top of the interval */
    for (int a = 1; a < k; a++) /* sort the k <= 4 neighbour states */
        for (int b = a; b > 0 && state[b - 1] > state[b]; b--) {
            uint32_t tmp = state[b];
            state[b] = state[b - 1];
            state[b - 1] = tmp;
        }
    uint32_t t = rank;
    for (int b = 0; b < k; b++)
        if (state[b] <= t)
            t++;
    return t;
}

/* One site: the two words for it are r0, r1 (words 0-1 or 2-3 of its pair's draw). */
CARLO_HD uint32_t potts_update_site(uint32_t s, const uint8_t nb[4], uint32_t r0, uint32_t r1,
                                    const potts_rates *rt, uint32_t q, int heatbath,
                                    uint64_t seed, uint64_t halfstep, uint32_t site,
                                    uint32_t replica)
{
    if (heatbath)
        return potts_heatbath(nb, r0, r1, rt, q);
    return potts_metropolis(s, nb, r0, r1, rt, q, seed, halfstep, site, replica);
}

/* The pair draw of sites 2p and 2p + 1. */
CARLO_HD carlo_u32x4 potts_pair_draw(uint64_t seed, uint64_t halfstep, uint32_t pair,
                                     uint32_t replica)
{
    return carlo_rng(seed, POTTS_PURPOSE_UPDATE, halfstep, pair, replica);
}

#endif
