/* potts_wl_kernel.h — one Wang-Landau walker step of the q-state Potts model, written once and
 * compiled for the CPU (gcc) and the GPU (nvcc): the proposal, the energy change, the
 * acceptance min(1, g(E)/g(E')) and the ln f schedule (Wang & Landau 2001 with the 1/t stage of
 * Belardinelli & Pereyra 2007). The backends differ only in how the walkers of a window are laid
 * out on the hardware; every decision is one of these functions.
 *
 * Energies are counted by b, the number of equal nearest-neighbour pairs: E = -b (J = 1),
 * b in [0, 2N] on an L x L torus (N = L^2). Spins are one byte each, row-major.
 *
 * Walkers of one window move in lockstep: at step s every walker draws from
 * (seed, MOVE, s, window, walker) and decides against ln g as it stood before the step; then
 * each adds ln f to the level it is at. Those additions are all of the same value, so their
 * order (threads, atomics) never changes a bit of ln g. */
#ifndef CARLO_POTTS_WL_KERNEL_H
#define CARLO_POTTS_WL_KERNEL_H

#include <stdint.h>

#include "core/rng.h"

/* Random-number purposes of Wang-Landau, in the Potts range 0x10-0x1f (core/rng.h). */
#define POTTS_WL_PURPOSE_MOVE        0x1cu /* site, new state, acceptance */
#define POTTS_WL_PURPOSE_RETRY_SITE  0x1du /* the rare re-draw of an unbiased site */
#define POTTS_WL_PURPOSE_RETRY_STATE 0x1eu /* the rare re-draw of an unbiased state */
#define POTTS_WL_PURPOSE_DRIVE       0x1fu /* the walk that brings a walker into its window */

/* The stages of a window. */
#define POTTS_WL_HALVING    0 /* ln f halved at every flat histogram */
#define POTTS_WL_ONE_OVER_T 1 /* ln f = 1/t, t = moves per visited level */
#define POTTS_WL_DONE       2 /* ln f reached the final value */

/* What every window shares. */
typedef struct potts_wl_par {
    uint64_t seed;
    uint64_t check_every; /* steps between flatness checks (and counts of visited levels) */
    double flatness;      /* a histogram is flat when its smallest visited entry is at least
                             flatness times the mean over visited levels */
    double final;         /* the walk of a window ends once ln f <= final */
    uint32_t L, N, q, walkers;
    int32_t stride;       /* entries per window in the ln g and histogram arrays */
    int32_t pad;
} potts_wl_par;

/* One window of the energy range: levels b in [lo, hi], entry b - lo of its arrays. */
typedef struct potts_wl_window {
    double lnf;           /* the modification factor's logarithm for the next step */
    uint64_t step;        /* lockstep steps done: each walker made `step` trial moves */
    uint64_t next_check;  /* the step count of the next flatness check */
    int32_t lo, hi;
    int32_t phase;        /* POTTS_WL_HALVING, POTTS_WL_ONE_OVER_T or POTTS_WL_DONE */
    int32_t nvisited;     /* levels with ln g > 0, as counted at the last check */
    int32_t halvings;     /* flat histograms seen */
    int32_t pad;
} potts_wl_window;

/* A walker's decision for one step. */
typedef struct potts_wl_move {
    uint32_t site, state; /* the proposal */
    int32_t b;            /* the equal-bond count after it */
    int32_t accept;
    double u;             /* uniform in [0, 1), for the acceptance */
} potts_wl_move;

/* exp(x) for x <= 0 from +, * and exact scaling only, so that gcc and nvcc give the same bits
 * (the libraries' exp differ in the last place). Range reduction x = k ln 2 + r, |r| <= ln2/2,
 * ln 2 split so that k * LN2_HI is exact; Taylor series to r^13 (remainder < 1e-17). */
CARLO_HD double potts_wl_exp(double x)
{
    if (x < -700.0)
        return 0.0;
    const double LN2_HI = 6.93147180369123816490e-01, LN2_LO = 1.90821492927058770002e-10;
    double y = x * 1.4426950408889634074 - 0.5;
    int64_t k = (int64_t)y; /* toward zero: the nearest integer to x / ln 2 (x <= 0) */
    double kd = (double)k;
    double r = (x - kd * LN2_HI) - kd * LN2_LO;
    double p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    union { uint64_t u; double d; } scale;
    scale.u = (uint64_t)(1023 + k) << 52; /* 2^k, k >= -1011: a normal number */
    return p * scale.d;
}

/* Equal bonds gained when site (row-major) goes to state t: same neighbours after - before. */
CARLO_HD int32_t potts_wl_delta(const uint8_t *spins, uint32_t L, uint32_t site, uint32_t t)
{
    uint32_t i = site / L, j = site - i * L;
    uint32_t up = (i == 0 ? L - 1 : i - 1) * L + j, down = (i == L - 1 ? 0 : i + 1) * L + j;
    uint32_t left = i * L + (j == 0 ? L - 1 : j - 1), right = i * L + (j == L - 1 ? 0 : j + 1);
    uint32_t s = spins[site], nb[4] = {spins[up], spins[down], spins[left], spins[right]};
    int32_t d = 0;
    for (int a = 0; a < 4; a++)
        d += (int32_t)(nb[a] == t) - (int32_t)(nb[a] == s);
    return d;
}

/* The trial move of walker `walker` of window `window` from the words r: a uniform site and
 * a uniform other state (unbiased: the rare rejected word is re-drawn from its own stream). */
CARLO_HD void potts_wl_propose(const uint8_t *spins, carlo_u32x4 r, const potts_wl_par *p,
                               uint64_t step, uint32_t window, uint32_t walker, uint32_t *site,
                               uint32_t *state)
{
    uint32_t x, shift;
    if (carlo_below_try(r.v[0], p->N, &x))
        x = carlo_below(p->seed, POTTS_WL_PURPOSE_RETRY_SITE, step, window, walker, p->N);
    if (carlo_below_try(r.v[1], p->q - 1, &shift))
        shift = carlo_below(p->seed, POTTS_WL_PURPOSE_RETRY_STATE, step, window, walker, p->q - 1);
    uint32_t t = spins[x] + 1 + shift;
    *site = x;
    *state = t >= p->q ? t - p->q : t;
}

/* Wang-Landau acceptance of a move from a level of ln g = from to one of ln g = to:
 * min(1, g(from) / g(to)), with u uniform in [0, 1). */
CARLO_HD int potts_wl_accept(double from, double to, double u)
{
    double d = from - to;
    return d >= 0.0 || u < potts_wl_exp(d);
}

/* Walker `walker` (at b equal bonds) of window `window`, step w->step: its proposal, the
 * equal-bond count after it, and its uniform number; accept is 0 when the move would leave the
 * window (refused: the walker stays and its level is counted again), else 1 until
 * potts_wl_take has weighed it. */
CARLO_HD potts_wl_move potts_wl_try(const uint8_t *spins, int32_t b, const potts_wl_window *w,
                                    const potts_wl_par *p, uint32_t window, uint32_t walker)
{
    potts_wl_move m;
    carlo_u32x4 r = carlo_rng(p->seed, POTTS_WL_PURPOSE_MOVE, w->step, window, walker);
    potts_wl_propose(spins, r, p, w->step, window, walker, &m.site, &m.state);
    m.b = b + potts_wl_delta(spins, p->L, m.site, m.state);
    m.accept = m.b >= w->lo && m.b <= w->hi;
    m.u = carlo_u01(r.v[2], r.v[3]);
    return m;
}

/* The decision on a move inside the window: from and to are ln g of the walker's level and of
 * the proposed one, as they stood before the step. */
CARLO_HD void potts_wl_take(potts_wl_move *m, double from, double to)
{
    m->accept = m->accept && potts_wl_accept(from, to, m->u);
}

/* Both, reading the window's ln g (entry b - lo) directly (the CPU). */
CARLO_HD potts_wl_move potts_wl_decide(const uint8_t *spins, int32_t b, const double *lng,
                                       const potts_wl_window *w, const potts_wl_par *p,
                                       uint32_t window, uint32_t walker)
{
    potts_wl_move m = potts_wl_try(spins, b, w, p, window, walker);
    if (m.accept)
        potts_wl_take(&m, lng[b - w->lo], lng[m.b - w->lo]);
    return m;
}

/* The ln f of the step about to be made: constant while halving, 1/t in the last stage with
 * t = trial moves of the window's walkers per visited level (Belardinelli & Pereyra). */
CARLO_HD double potts_wl_step_lnf(potts_wl_window *w, const potts_wl_par *p)
{
    if (w->phase == POTTS_WL_ONE_OVER_T)
        w->lnf = (double)w->nvisited / ((double)(w->step + 1) * (double)p->walkers);
    return w->lnf;
}

/* After a step: counts it, ends the 1/t stage at the final ln f, and returns 1 when the
 * histogram is due for a check (potts_wl_check). */
CARLO_HD int potts_wl_step_end(potts_wl_window *w, const potts_wl_par *p)
{
    w->step++;
    if (w->phase == POTTS_WL_ONE_OVER_T && w->lnf <= p->final) {
        w->phase = POTTS_WL_DONE;
        return 0;
    }
    if (w->step != w->next_check)
        return 0;
    w->next_check += p->check_every; /* a counter, not step % check_every: no division */
    return 1;
}

/* The check, given the smallest histogram entry and the sum over the visited levels (ln g > 0)
 * and their number: at a flat histogram ln f is halved, and the walk either ends (ln f <=
 * final) or, once ln f < 1/t, goes on with ln f = 1/t. Returns 1 when the histogram must be
 * zeroed. */
CARLO_HD int potts_wl_check(potts_wl_window *w, const potts_wl_par *p, uint64_t hmin,
                            uint64_t hsum, int32_t nvisited)
{
    w->nvisited = nvisited;
    if (w->phase != POTTS_WL_HALVING || nvisited == 0)
        return 0;
    if (!((double)hmin >= p->flatness * ((double)hsum / (double)nvisited)))
        return 0;
    w->lnf *= 0.5;
    w->halvings++;
    if (w->lnf <= p->final)
        w->phase = POTTS_WL_DONE;
    else if (w->lnf < (double)nvisited / ((double)w->step * (double)p->walkers))
        w->phase = POTTS_WL_ONE_OVER_T;
    return 1;
}

/* A visited level's contribution to the check's minimum and sum. */
CARLO_HD void potts_wl_tally(double lng, uint64_t h, uint64_t *hmin, uint64_t *hsum,
                             int32_t *nvisited)
{
    if (lng > 0.0) {
        if (h < *hmin)
            *hmin = h;
        *hsum += h;
        (*nvisited)++;
    }
}

#endif
