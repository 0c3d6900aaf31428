/* kmc_kernel.h — the physics of exact lattice kinetic Monte Carlo, written once and compiled
 * for the CPU backends (gcc) and the GPU backend (nvcc): rates of a neighbourhood, the event
 * it leads to, waiting times, the order of events, edge checksums and the adaptive time step.
 * Any formula that decides what happens lives here and nowhere else.
 *
 * Conventions. An m x n periodic lattice of integer states x (the height for sos_growth),
 * rows i, columns j, site index s = i n + j. Time is in units of 1/k2 for sos_growth and of
 * the rates' own unit for user models. A site's neighbours, in this order: up (i - 1),
 * down (i + 1), left (j - 1), right (j + 1), then for 8-neighbourhoods up-left, up-right,
 * down-left, down-right.
 *
 * The waiting-time method (Darkins et al. 2024, eq. 1): every site holds the time tau of its
 * next event, tau = t + E / A, with A the site's total rate and E a unit exponential. Draw
 * k of site s is Philox(seed, KMC_PURPOSE_CLOCK, step = k, index = s): words 0-1 give E,
 * words 2-3 choose among the site's events when that waiting time ends in an event. A site
 * holds the index k of the draw behind its current tau. The site with the smallest tau fires
 * (ties, which continuous times make almost impossible, go to the smaller site index); it
 * redraws with k + 1, and so does every neighbour whose total rate the event changed. A
 * neighbour whose total rate did not change keeps its tau: the exponential is memoryless, so
 * that is exact, and it keeps information from crossing tiles where nothing changed (at
 * bond = 0 nothing ever does). The trajectory is therefore a function of the seed alone, not
 * of tiling, device or thread count.
 *
 * Tiles (Algorithms 1-2): the lattice is cut into 8 x 8 tiles. A tile is advanced together
 * with `halo` cells of its surroundings on each side (1..7; 7 is the paper's 3 x 3 tiles),
 * inside a frozen ring one cell wide (the fixed boundary). Only the tile is kept. Each tile
 * sums a 64-bit hash of (time, site, new state) of every event in four edge strips two cells
 * wide (its own edge row or column and the neighbour's) over the step; neighbouring tiles
 * must agree on the strip they share, else the tiles on both sides are stepped again with the
 * widest halo (the repair, below) and, if strips still differ, the step is rejected. The paper
 * sums event times;
 * hashing the site and new state too also catches a different outcome at the same time, which
 * user models with several events per site can produce.
 *
 * Inside a tile's domain the search for the smallest tau is split over 32 lanes (the threads
 * of a warp on the GPU, a loop on the CPU): lane l owns the domain cells d with d % 32 == l and
 * keeps the smallest of them. The row stride P of the domain is chosen so that the cells an
 * event touches belong to distinct lanes. */
#ifndef CARLO_KMC_KERNEL_H
#define CARLO_KMC_KERNEL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/rng.h"

#define KMC_PURPOSE_CLOCK 0x40u  /* draw k of site s: its k-th waiting time and event choice */
#define KMC_PURPOSE_BKL   0x41u  /* BKL: selection and time increment of the k-th event */
#define KMC_PURPOSE_START 0x42u  /* random initial states */

/* Loops over the nine neighbourhood slots run a fixed nine times (slots past nbh are skipped)
 * so that nvcc unrolls them and keeps the slot arrays in registers. */
#ifdef __CUDA_ARCH__
#define KMC_UNROLL _Pragma("unroll")
#else
#define KMC_UNROLL
#endif

#define KMC_TILE 8
#define KMC_LANES 32
#define KMC_HALO_MAX 7
#define KMC_DOMAIN_MAX 24        /* 8 + 2 * 7 + 2 */
#define KMC_CELLS_MAX (KMC_DOMAIN_MAX * KMC_DOMAIN_MAX)

enum { KMC_SOS = 0, KMC_TABLE = 1 };

/* A user model's configuration: the total rate of its events and where they are listed. */
typedef struct kmc_config {
    double A, invA;          /* invA = 1 / A, or 0 when A = 0 */
    uint32_t first, count;   /* events first .. first + count - 1 */
} kmc_config;

typedef struct kmc_event {
    double cum;              /* the sum of the rates of the configuration's events up to this one */
    int32_t target;          /* the state the site goes to */
    int32_t pad;
} kmc_event;

/* The model as both backends see it (plain data; the table pointers are device pointers in
 * the GPU's copy). */
typedef struct kmc_model {
    int32_t kind;            /* KMC_SOS or KMC_TABLE */
    int32_t nbh;             /* 4 or 8 */
    int32_t S;               /* states (KMC_TABLE) */
    int32_t pad;
    double rate[5], inv[5];  /* KMC_SOS: k(n_b) and 1 / k(n_b) */
    const kmc_config *config;/* KMC_TABLE: S^(nbh + 1) configurations */
    const kmc_event *event;
} kmc_model;

/* Where a tile's domain lies and how it is stored. */
typedef struct kmc_geom {
    int32_t m, n;            /* lattice rows and columns (multiples of 8) */
    int32_t ntr, ntc;        /* tiles per column (m / 8) and per row (n / 8) */
    int32_t halo;            /* simulated cells around the tile, 1..7 */
    int32_t D, P;            /* domain side 8 + 2 halo + 2, row stride P >= D */
    int32_t cells;           /* D * P */
    int32_t nbh;             /* 4 or 8 */
    int32_t off[9];          /* domain offsets of a cell and its neighbours, in the order above */
} kmc_geom;

/* Row and column offsets of slot k: 0 the cell itself, 1 up, 2 down, 3 left, 4 right,
 * 5 up-left, 6 up-right, 7 down-left, 8 down-right. */
CARLO_HD int kmc_slot_dr(int k)
{
    return (k == 1 || k == 5 || k == 6) ? -1 : ((k == 2 || k == 7 || k == 8) ? 1 : 0);
}

CARLO_HD int kmc_slot_dc(int k)
{
    return (k == 3 || k == 5 || k == 7) ? -1 : ((k == 4 || k == 6 || k == 8) ? 1 : 0);
}

/* The slot under which the neighbour in slot k sees the cell (up <-> down, ...). */
CARLO_HD int kmc_opposite(int k)
{
    return k == 0 ? 0 : (k <= 4 ? ((k & 1) ? k + 1 : k - 1) : 13 - k);
}

/* ---------- bits and numbers ---------- */

CARLO_HD uint64_t kmc_bits(double x)
{
#ifdef __CUDA_ARCH__
    return (uint64_t)__double_as_longlong(x);
#else
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
#endif
}

CARLO_HD double kmc_from_bits(uint64_t b)
{
#ifdef __CUDA_ARCH__
    return __longlong_as_double((long long)b);
#else
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
#endif
}

/* -ln(u) for u in [2^-53, 1), from + - * / alone so that gcc and nvcc round every step the
 * same way (libm's log and CUDA's differ in the last bit). u = m 2^e with m in
 * [sqrt(1/2), sqrt(2)); ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.1716, summed to the
 * s^25 term (the next one is below 1e-21 of the result). Accurate to a few ulp. */
CARLO_HD double kmc_neglog(double u)
{
    uint64_t b = kmc_bits(u);
    int e = (int)((b >> 52) & 0x7ff) - 1023;
    double m = kmc_from_bits((b & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
    if (m > 0x1.6a09e667f3bcdp+0) {
        m = m * 0.5;
        e += 1;
    }
    double f = m - 1.0;
    double s = f / (2.0 + f);
    double z = s * s;
    double p = 0x1.47ae147ae147bp-5;   /* 1/25 */
    p = p * z + 0x1.642c8590b2164p-5;  /* 1/23 */
    p = p * z + 0x1.8618618618618p-5;  /* 1/21 */
    p = p * z + 0x1.af286bca1af28p-5;  /* 1/19 */
    p = p * z + 0x1.e1e1e1e1e1e1ep-5;  /* 1/17 */
    p = p * z + 0x1.1111111111111p-4;  /* 1/15 */
    p = p * z + 0x1.3b13b13b13b14p-4;  /* 1/13 */
    p = p * z + 0x1.745d1745d1746p-4;  /* 1/11 */
    p = p * z + 0x1.c71c71c71c71cp-4;  /* 1/9 */
    p = p * z + 0x1.2492492492492p-3;  /* 1/7 */
    p = p * z + 0x1.999999999999ap-3;  /* 1/5 */
    p = p * z + 0x1.5555555555555p-2;  /* 1/3 */
    double lnm = 2.0 * (s + s * (z * p));
    return -((double)e * 0x1.62e42fefa39efp-1 + lnm);
}

/* A unit exponential from two words: u = (52 random bits + 1/2) 2^-52 lies strictly inside
 * (0, 1), so E is finite and > 0. */
CARLO_HD double kmc_exp1(uint32_t w0, uint32_t w1)
{
    uint64_t x = ((uint64_t)w0 << 20) | (uint64_t)(w1 >> 12);
    double u = ((double)x + 0.5) * 0x1p-52;
    return kmc_neglog(u);
}

/* ---------- the model ---------- */

/* Configuration index of a site from v[0] (its state) and v[1..nbh] (its neighbours):
 * sos_growth: n_b, the neighbours higher than the site (the bonds a new atom forms);
 * user models: sum_k v[k] S^k. */
CARLO_HD uint32_t kmc_config_index(const kmc_model *md, const int32_t *v)
{
    if (md->kind == KMC_SOS)
        return (uint32_t)((v[1] > v[0]) + (v[2] > v[0]) + (v[3] > v[0]) + (v[4] > v[0]));
    uint32_t idx = 0;
    KMC_UNROLL
    for (int k = 8; k >= 0; k--)
        if (k <= md->nbh)
            idx = idx * (uint32_t)md->S + (uint32_t)v[k];
    return idx;
}

/* v[k] = value (k a runtime slot; the loop keeps v in registers on the GPU). */
CARLO_HD void kmc_set_slot(int32_t *v, int k, int32_t value)
{
    KMC_UNROLL
    for (int q = 0; q < 9; q++)
        if (q == k)
            v[q] = value;
}

/* a[k] for k < 5 with constant indices only (a kernel parameter indexed at run time would be
 * copied to local memory) */
CARLO_HD double kmc_pick5(const double *a, uint32_t k)
{
    double r = a[0];
    KMC_UNROLL
    for (uint32_t q = 1; q < 5; q++)
        if (q == k)
            r = a[q];
    return r;
}

CARLO_HD double kmc_total_rate(const kmc_model *md, uint32_t cfg)
{
    return md->kind == KMC_SOS ? kmc_pick5(md->rate, cfg) : md->config[cfg].A;
}

CARLO_HD double kmc_inv_rate(const kmc_model *md, uint32_t cfg)
{
    return md->kind == KMC_SOS ? kmc_pick5(md->inv, cfg) : md->config[cfg].invA;
}

/* Whether an event in this configuration needs the choice words (more than one event). */
CARLO_HD int kmc_needs_choice(const kmc_model *md, uint32_t cfg)
{
    return md->kind == KMC_TABLE && md->config[cfg].count > 1;
}

/* The state a site in configuration cfg and state x goes to when it fires; u in [0, 1)
 * picks among the configuration's events in proportion to their rates. */
CARLO_HD int32_t kmc_apply(const kmc_model *md, uint32_t cfg, int32_t x, double u)
{
    if (md->kind == KMC_SOS)
        return x + 1;
    const kmc_config c = md->config[cfg];
    const kmc_event *ev = md->event + c.first;
    if (c.count == 1)
        return ev[0].target;
    double target = u * c.A;
    for (uint32_t k = 0; k + 1 < c.count; k++)
        if (target < ev[k].cum)
            return ev[k].target;
    return ev[c.count - 1].target; /* also where rounding puts u A at the very top */
}

CARLO_HD carlo_u32x4 kmc_clock_draw(uint64_t seed, uint32_t site, uint32_t k)
{
    return carlo_rng(seed, KMC_PURPOSE_CLOCK, k, site, 0);
}

/* The next event time of a site drawn at time t with total rate A (never, when A = 0). */
CARLO_HD double kmc_clock(double t, carlo_u32x4 draw, double A, double invA)
{
    if (!(A > 0))
        return INFINITY;
    return t + kmc_exp1(draw.v[0], draw.v[1]) * invA;
}

CARLO_HD double kmc_choice_u(carlo_u32x4 draw)
{
    return carlo_u01(draw.v[2], draw.v[3]);
}

/* ---------- tiles and domains ---------- */

/* Row and column (absolute, wrapped) of domain row r, column c of tile (ti, tj). */
CARLO_HD int kmc_wrap(int i, int size)
{
    return i < 0 ? i + size : (i >= size ? i - size : i);
}

CARLO_HD uint32_t kmc_site_rc(const kmc_geom *g, int ti, int tj, int r, int c)
{
    int h1 = g->halo + 1;
    int gr = kmc_wrap(ti * KMC_TILE - h1 + r, g->m), gc = kmc_wrap(tj * KMC_TILE - h1 + c, g->n);
    return (uint32_t)gr * (uint32_t)g->n + (uint32_t)gc;
}

CARLO_HD uint32_t kmc_site_of(const kmc_geom *g, int ti, int tj, int d)
{
    int r = d / g->P;
    return kmc_site_rc(g, ti, tj, r, d - r * g->P);
}

/* Position of site (row gr, column gc) in the tile-major arrays: tile after tile (row-major
 * over tiles), each tile's 64 cells row-major. */
CARLO_HD uint64_t kmc_tm_index(const kmc_geom *g, int gr, int gc)
{
    return ((uint64_t)((gr >> 3) * g->ntc + (gc >> 3)) << 6) + (uint64_t)((gr & 7) << 3) +
           (uint64_t)(gc & 7);
}

/* Simulated (as opposed to frozen or padding) domain cell. */
CARLO_HD int kmc_dynamic(const kmc_geom *g, int r, int c)
{
    return r >= 1 && r <= g->D - 2 && c >= 1 && c <= g->D - 2;
}

/* Neighbourhood values of domain cell a: v[0] = x[a], v[k] its neighbour in slot k. */
CARLO_HD void kmc_gather(const kmc_geom *g, const int32_t *x, int a, int32_t *v)
{
    KMC_UNROLL
    for (int k = 0; k < 9; k++)
        v[k] = k <= g->nbh ? x[a + g->off[k]] : 0;
}

/* The same on the whole periodic lattice (row-major m x n), for the serial references. */
CARLO_HD void kmc_gather_periodic(int m, int n, int nbh, const int32_t *x, int i, int j, int32_t *v)
{
    for (int k = 0; k <= nbh; k++)
        v[k] = x[(int64_t)kmc_wrap(i + kmc_slot_dr(k), m) * n + kmc_wrap(j + kmc_slot_dc(k), n)];
}

/* Event order: time, then site, then domain cell (copies of one site in small lattices). */
CARLO_HD int kmc_tie_before(const kmc_geom *g, int ti, int tj, int da, int db)
{
    uint32_t sa = kmc_site_of(g, ti, tj, da), sb = kmc_site_of(g, ti, tj, db);
    return sa != sb ? sa < sb : da < db;
}

CARLO_HD int kmc_before(const kmc_geom *g, int ti, int tj, double ta, int da, double tb, int db)
{
    if (ta != tb)
        return ta < tb;
    if (!(ta < INFINITY))
        return da < db;
    return kmc_tie_before(g, ti, tj, da, db);
}

/* The earliest of the cells lane owns: (*bt, *bd), or (inf, -1) when none can fire. */
CARLO_HD void kmc_lane_scan(const kmc_geom *g, int ti, int tj, const double *tau, int lane,
                            double *bt, int *bd)
{
    double t = INFINITY;
    int d = -1;
    for (int c = lane; c < g->cells; c += KMC_LANES) {
        double x = tau[c];
        if (x < t || (x == t && x < INFINITY && kmc_tie_before(g, ti, tj, c, d))) {
            t = x;
            d = c;
        }
    }
    *bt = t;
    *bd = d;
}

/* Lane's cell a got the new time ta: keep the lane's earliest cell up to date. */
CARLO_HD void kmc_lane_offer(const kmc_geom *g, int ti, int tj, const double *tau, int lane,
                             int a, double ta, double *bt, int *bd)
{
    if (a == *bd) {
        if (ta <= *bt)
            *bt = ta;
        else
            kmc_lane_scan(g, ti, tj, tau, lane, bt, bd);
    } else if (kmc_before(g, ti, tj, ta, a, *bt, *bd)) {
        *bt = ta;
        *bd = a;
    }
}

/* The cell touched by an event at dmin that lane owns (slot *slot), or -1. */
CARLO_HD int kmc_lane_affected(const kmc_geom *g, int dmin, int lane, int *slot)
{
    int found = -1;
    KMC_UNROLL
    for (int k = 0; k < 9; k++) {
        int a = dmin + g->off[k];
        if (k <= g->nbh && (a & (KMC_LANES - 1)) == lane) {
            *slot = k;
            found = a;
        }
    }
    return found;
}

/* Tile (ti + dr, tj + dc), wrapped: the 3 x 3 tiles around a tile hold its whole domain
 * (halo + 1 <= 8). */
CARLO_HD int kmc_tile_near(const kmc_geom *g, int ti, int tj, int dr, int dc)
{
    return kmc_wrap(ti + dr, g->ntr) * g->ntc + kmc_wrap(tj + dc, g->ntc);
}

/* ---------- checksums ---------- */

CARLO_HD uint64_t kmc_mix64(uint64_t z)
{
    z ^= z >> 30;
    z *= 0xbf58476d1ce4e5b9ull;
    z ^= z >> 27;
    z *= 0x94d049bb133111ebull;
    z ^= z >> 31;
    return z;
}

CARLO_HD uint64_t kmc_event_hash(double t, uint32_t site, int32_t x)
{
    return kmc_mix64(kmc_bits(t) + kmc_mix64(((uint64_t)site << 32) | (uint32_t)x));
}

enum { KMC_EDGE_UP = 0, KMC_EDGE_DOWN = 1, KMC_EDGE_LEFT = 2, KMC_EDGE_RIGHT = 3 };

/* Account an event at domain row r, column c: the edge strips it lies in, and whether it is
 * one of the tile's own events. Strips, in tile coordinates (tile = rows and columns 0..7):
 * up = rows -1..0, down = rows 7..8, left = columns -1..0, right = columns 7..8, each over
 * -1..8 in the other direction, so they cover the tile's whole ring, corners included. */
CARLO_HD void kmc_account(const kmc_geom *g, int r, int c, double t, uint32_t site, int32_t x,
                          uint64_t chk[4], uint64_t *central)
{
    int lr = r - g->halo - 1, lc = c - g->halo - 1;
    int in_r = lr >= -1 && lr <= 8, in_c = lc >= -1 && lc <= 8;
    if (in_r && in_c && (lr <= 0 || lr >= 7 || lc <= 0 || lc >= 7)) {
        uint64_t h = kmc_event_hash(t, site, x);
        if (lr <= 0)
            chk[KMC_EDGE_UP] += h;
        if (lr >= 7)
            chk[KMC_EDGE_DOWN] += h;
        if (lc <= 0)
            chk[KMC_EDGE_LEFT] += h;
        if (lc >= 7)
            chk[KMC_EDGE_RIGHT] += h;
    }
    *central += (uint64_t)(lr >= 0 && lr < 8 && lc >= 0 && lc < 8);
}

/* What a tile reports after a step. */
typedef struct kmc_tile_out {
    uint64_t chk[4];
    uint64_t events;         /* events of the tile itself */
    uint64_t sim;            /* events simulated in its domain (the work done) */
    uint32_t overflow;       /* a site ran out of draws (2^32) */
    uint32_t pad;
} kmc_tile_out;

/* Which strips tile T shares with its down (bit 1) and right (bit 2) neighbours differ; the
 * neighbours in *down and *right. */
CARLO_HD int kmc_tile_mismatch(const kmc_geom *g, const kmc_tile_out *out, int T, int *down,
                               int *right)
{
    int ti = T / g->ntc, tj = T - ti * g->ntc;
    *down = (ti + 1 == g->ntr ? 0 : ti + 1) * g->ntc + tj;
    *right = ti * g->ntc + (tj + 1 == g->ntc ? 0 : tj + 1);
    return (out[T].chk[KMC_EDGE_DOWN] != out[*down].chk[KMC_EDGE_UP]) |
           ((out[T].chk[KMC_EDGE_RIGHT] != out[*right].chk[KMC_EDGE_LEFT]) << 1);
}

/* The same for stored tile T of a split system's slab (carlo-mpi(7)): the tile below it is
 * the next stored one (the bottom halo row's below the last own row, where the rank below's up
 * strips are put), the right one wraps within its tile row. */
CARLO_HD int kmc_slab_mismatch(const kmc_geom *g, const kmc_tile_out *out, int T, int *down,
                               int *right)
{
    int lt = T / g->ntc, tj = T - lt * g->ntc;
    *down = T + g->ntc;
    *right = lt * g->ntc + (tj + 1 == g->ntc ? 0 : tj + 1);
    return (out[T].chk[KMC_EDGE_DOWN] != out[*down].chk[KMC_EDGE_UP]) |
           ((out[T].chk[KMC_EDGE_RIGHT] != out[*right].chk[KMC_EDGE_LEFT]) << 1);
}

/* ---------- repair: mismatched tiles stepped again with a wider halo ----------
 *
 * Agreeing strips everywhere make a step exact whatever halo each tile was stepped with: the
 * earliest wrong event of any tile would need a wrong neighbour state in its ring, which lies
 * in a strip its neighbour computed as its own cells, and that strip would differ. So where
 * strips differ, the tiles on both sides are stepped again over the same interval with the
 * widest halo (KMC_REPAIR_HALO) from the same state before the step, their results replace the
 * first ones, and the strips are compared again; only a step that still mismatches after
 * KMC_REPAIR_ROUNDS such rounds is rejected. The trajectory is the waiting-time method's either
 * way (the same events at the same times); what changes is how often the whole lattice redoes
 * a step, so the adaptive step settles longer (Algorithm 1 on top of this). A round happens
 * when any strip of the lattice differs and fewer than KMC_REPAIR_ROUNDS rounds have run; it
 * steps the tiles on either side of a differing strip that it has not stepped again yet. Every
 * backend applies these same rules, so the steps, accepted or not, are the same everywhere. */
#define KMC_REPAIR_HALO KMC_HALO_MAX
#define KMC_REPAIR_ROUNDS 2

/* Whether another round of the repair runs after round `round` (0: the step itself) found
 * strips differing (mismatch) somewhere in the lattice: the rule every backend applies. */
CARLO_HD int kmc_repair_due(uint32_t repair, int mismatch, int round)
{
    return repair && mismatch && round < KMC_REPAIR_ROUNDS;
}

/* The stamp tiles listed for repair carry in step k (k = steps decided before it): never 0,
 * which marks a tile never listed. */
CARLO_HD uint32_t kmc_repair_stamp(uint64_t k)
{
    return (uint32_t)(k % 0xffffffffull) + 1u;
}

/* ---------- the adaptive time step (Algorithm 1) ---------- */

#define KMC_DT_MAX 1e300

enum { KMC_MODE_ADAPTIVE = 0, KMC_MODE_TRY = 1 };

typedef struct kmc_ctrl {
    double t;                /* time of the accepted state */
    double dt;               /* the adaptive step */
    double grow;             /* the growth factor now: grow_initial until the first rejection */
    double grow_initial, grow_after, shrink;
    double t_stop;           /* the run stops at this time (inf: none) */
    double rate_est;         /* events per unit time in the last accepted step */
    double t_end;            /* the step being tried ends here */
    uint64_t events;         /* events of the accepted state */
    uint64_t simulated;      /* events simulated in all domains, rejected steps included */
    uint64_t domain_events;  /* events simulated in the domains of accepted steps */
    uint64_t accepted, rejected;
    uint64_t ev_stop;        /* the run stops at the first step boundary with events >= this */
    uint64_t last_events;    /* events of the last step decided */
    uint32_t front;          /* buffer holding the accepted state */
    uint32_t rejected_once;
    uint32_t mode;           /* KMC_MODE_ADAPTIVE or KMC_MODE_TRY */
    uint32_t force;          /* TRY: accept even when the checksums differ (tests) */
    uint32_t clamped;        /* the step was shortened to meet a stop */
    uint32_t done;
    uint32_t overflow;
    uint32_t last_accepted, last_matched;
    uint32_t repair;         /* mismatched tiles are stepped again with KMC_REPAIR_HALO */
    uint64_t repaired;       /* tiles stepped again so, in all steps */
} kmc_ctrl;

/* Choose the end of the next adaptive step, or set done. */
CARLO_HD void kmc_ctrl_plan(kmc_ctrl *c)
{
    if (c->overflow || !(c->t < c->t_stop) || c->events >= c->ev_stop) {
        c->done = 1;
        return;
    }
    double te = c->t + c->dt;
    uint32_t clamped = 0;
    if (c->ev_stop != UINT64_MAX && c->rate_est > 0) {
        /* no step much longer than the events still wanted: a run of n events ends near n */
        double left = (double)(c->ev_stop - c->events) / c->rate_est;
        if (left < c->dt) {
            te = c->t + left;
            clamped = 1;
        }
    }
    if (!(te < c->t_stop)) {
        te = c->t_stop;
        clamped = 1;
    }
    if (!(te > c->t)) { /* shorter than the resolution of t */
        te = kmc_from_bits(kmc_bits(c->t) + 1); /* the next double up (t >= 0) */
        clamped = 1;
    }
    c->t_end = te;
    c->clamped = clamped;
}

/* After a step: accept it (swap buffers) when every strip matched, adapt dt, plan the next. */
CARLO_HD void kmc_ctrl_decide(kmc_ctrl *c, uint64_t events, uint64_t sim, uint32_t mismatch,
                              uint32_t overflow)
{
    c->simulated += sim;
    c->last_matched = !mismatch;
    c->last_events = events;
    uint32_t accept = (!mismatch || (c->mode == KMC_MODE_TRY && c->force)) && !overflow;
    double len = c->t_end - c->t;
    if (overflow)
        c->overflow = 1;
    if (accept) {
        c->front ^= 1u;
        c->t = c->t_end;
        c->events += events;
        c->domain_events += sim;
        c->accepted++;
        if (len > 0)
            c->rate_est = (double)events / len;
        if (c->mode == KMC_MODE_ADAPTIVE && !c->clamped) {
            double next = c->grow * c->dt;
            c->dt = next < KMC_DT_MAX ? next : KMC_DT_MAX;
        }
    } else {
        c->rejected++;
        if (c->mode == KMC_MODE_ADAPTIVE) {
            c->dt = c->shrink * (c->clamped ? len : c->dt);
            c->grow = c->grow_after;
            c->rejected_once = 1;
        }
    }
    c->last_accepted = accept;
    if (c->mode == KMC_MODE_TRY)
        c->done = 1;
    else
        kmc_ctrl_plan(c);
}

#endif
