/* kmc_cpu.c — the tiled CPU backend of lattice KMC: Algorithm 2 of kmc_kernel.h, tiles shared
 * among OpenMP threads, the 32 lanes of a domain visited in a loop; and the tile layout (domain
 * geometry, tile-major arrays, tile minima) it shares with the GPU backend. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h"
#include "kmc/kmc.h"

/* ---------- geometry and layouts ---------- */

/* Whether the nine cells of an event (offsets a P + b, |a|, |b| <= 1) fall on distinct lanes:
 * no difference of two offsets may be a multiple of 32. */
static int stride_ok(int P)
{
    for (int a = -2; a <= 2; a++)
        for (int b = -2; b <= 2; b++)
            if ((a || b) && (((a * P + b) % KMC_LANES) + KMC_LANES) % KMC_LANES == 0)
                return 0;
    return 1;
}

void kmc_geom_init(kmc_geom *g, int m, int n, int halo, int nbh)
{
    memset(g, 0, sizeof *g);
    g->m = m;
    g->n = n;
    g->ntr = m / KMC_TILE;
    g->ntc = n / KMC_TILE;
    g->halo = halo;
    g->nbh = nbh;
    g->D = KMC_TILE + 2 * halo + 2;
    g->P = g->D;
    while (!stride_ok(g->P))
        g->P++;
    g->cells = g->D * g->P;
    for (int k = 0; k < 9; k++)
        g->off[k] = kmc_slot_dr(k) * g->P + kmc_slot_dc(k);
}

void kmc_to_tiles(const kmc_geom *g, const void *rowmajor, void *tiles, size_t elem)
{
    const int m = g->m, n = g->n;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            uint64_t src = (uint64_t)i * (uint64_t)n + (uint64_t)j, dst = kmc_tm_index(g, i, j);
            if (elem == 8)
                ((uint64_t *)tiles)[dst] = ((const uint64_t *)rowmajor)[src];
            else
                ((uint32_t *)tiles)[dst] = ((const uint32_t *)rowmajor)[src];
        }
}

void kmc_from_tiles(const kmc_geom *g, const void *tiles, void *rowmajor, size_t elem)
{
    const int m = g->m, n = g->n;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            uint64_t dst = (uint64_t)i * (uint64_t)n + (uint64_t)j, src = kmc_tm_index(g, i, j);
            if (elem == 8)
                ((uint64_t *)rowmajor)[dst] = ((const uint64_t *)tiles)[src];
            else
                ((uint32_t *)rowmajor)[dst] = ((const uint32_t *)tiles)[src];
        }
}

void kmc_tile_minima(const kmc_geom *g, const double *tau_tiles, double *tmin)
{
    const int ntiles = g->ntr * g->ntc;
#pragma omp parallel for schedule(static)
    for (int T = 0; T < ntiles; T++) {
        double m = INFINITY;
        for (int q = 0; q < 64; q++) {
            double t = tau_tiles[((size_t)T << 6) + (size_t)q];
            m = t < m ? t : m;
        }
        tmin[T] = m;
    }
}

/* ---------- the tiled CPU backend ---------- */

typedef struct cpu_impl {
    int32_t *x[2];      /* front/back buffers, tile-major */
    double *tau[2];
    uint32_t *cnt[2];
    double *tmin[2];    /* the earliest clock of each tile, per buffer */
    kmc_tile_out *out;  /* per tile */
} cpu_impl;

static int cpu_create(kmc_system *s)
{
    cpu_impl *im = carlo_calloc(1, sizeof *im, "the KMC CPU backend");
    if (!im)
        return -1;
    s->impl = im;
    size_t N = (size_t)s->m * (size_t)s->n, ntiles = (size_t)s->geom.ntr * (size_t)s->geom.ntc;
    for (int b = 0; b < 2; b++) {
        im->x[b] = carlo_malloc(carlo_mulsize(N, sizeof(int32_t)), "the KMC states");
        im->tau[b] = im->x[b] ? carlo_malloc(carlo_mulsize(N, sizeof(double)), "the KMC clocks") : NULL;
        im->cnt[b] = im->tau[b] ? carlo_malloc(carlo_mulsize(N, sizeof(uint32_t)), "the KMC draw counters") : NULL;
        im->tmin[b] = im->cnt[b] ? carlo_malloc(carlo_mulsize(ntiles, sizeof(double)), "the KMC tile minima") : NULL;
        if (!im->tmin[b])
            return -1;
    }
    im->out = carlo_calloc(ntiles, sizeof *im->out, "the KMC tile results");
    return im->out ? 0 : -1;
}

static void cpu_destroy(kmc_system *s)
{
    cpu_impl *im = s->impl;
    if (!im)
        return;
    for (int b = 0; b < 2; b++) {
        free(im->x[b]);
        free(im->tau[b]);
        free(im->cnt[b]);
        free(im->tmin[b]);
    }
    free(im->out);
    free(im);
    s->impl = NULL;
}

static int cpu_set_state(kmc_system *s, const int32_t *x, const double *tau, const uint32_t *cnt)
{
    cpu_impl *im = s->impl;
    int f = (int)s->ctrl.front;
    if (x)
        kmc_to_tiles(&s->geom, x, im->x[f], 4);
    if (tau) {
        kmc_to_tiles(&s->geom, tau, im->tau[f], 8);
        kmc_tile_minima(&s->geom, im->tau[f], im->tmin[f]);
    }
    if (cnt)
        kmc_to_tiles(&s->geom, cnt, im->cnt[f], 4);
    return 0;
}

static int cpu_get_state(kmc_system *s, int32_t *x, double *tau, uint32_t *cnt)
{
    cpu_impl *im = s->impl;
    int f = (int)s->ctrl.front;
    if (x)
        kmc_from_tiles(&s->geom, im->x[f], x, 4);
    if (tau)
        kmc_from_tiles(&s->geom, im->tau[f], tau, 8);
    if (cnt)
        kmc_from_tiles(&s->geom, im->cnt[f], cnt, 4);
    return 0;
}

/* Algorithm 2 for tile T: copy its domain, run its events up to t_end under the frozen ring,
 * keep the tile. The 32 lanes of the GPU kernel are a loop here; the cells an event touches
 * belong to distinct lanes, so visiting them in slot order gives what the lanes compute
 * side by side. */
static void cpu_tile(const kmc_system *s, const cpu_impl *im, int T, int front, double t_end)
{
    const kmc_geom *g = &s->geom;
    const kmc_model *md = &s->model;
    const uint64_t seed = s->seed;
    const int ti = T / g->ntc, tj = T - ti * g->ntc, h1 = g->halo + 1, P = g->P, D = g->D;
    const int back = 1 - front;
    kmc_tile_out *o = &im->out[T];
    /* a tile whose 3 x 3 tiles have no clock before t_end has no event at all */
    double quiet = INFINITY;
    for (int k = 0; k < 9; k++) {
        double t = im->tmin[front][kmc_tile_near(g, ti, tj, k / 3 - 1, k % 3 - 1)];
        quiet = t < quiet ? t : quiet;
    }
    if (!(quiet < t_end)) {
        size_t base = (size_t)T << 6;
        memcpy(im->x[back] + base, im->x[front] + base, 64 * sizeof(int32_t));
        memcpy(im->tau[back] + base, im->tau[front] + base, 64 * sizeof(double));
        memcpy(im->cnt[back] + base, im->cnt[front] + base, 64 * sizeof(uint32_t));
        im->tmin[back][T] = im->tmin[front][T];
        memset(o, 0, sizeof *o);
        return;
    }
    double tau[KMC_CELLS_MAX];
    int32_t x[KMC_CELLS_MAX];
    uint32_t cnt[KMC_CELLS_MAX];
    const int32_t *X = im->x[front];
    const double *TAU = im->tau[front];
    const uint32_t *CNT = im->cnt[front];
    for (int r = 0; r < D; r++) {
        const int gr = kmc_wrap(ti * KMC_TILE - h1 + r, g->m);
        const int dyn_row = r >= 1 && r <= D - 2;
        for (int c = 0; c < P; c++) {
            const int d = r * P + c;
            if (c >= D) {
                x[d] = 0;
                tau[d] = INFINITY;
                cnt[d] = 0;
                continue;
            }
            const uint64_t i = kmc_tm_index(g, gr, kmc_wrap(tj * KMC_TILE - h1 + c, g->n));
            x[d] = X[i];
            tau[d] = dyn_row && c >= 1 && c <= D - 2 ? TAU[i] : INFINITY;
            cnt[d] = CNT[i];
        }
    }
    double bt[KMC_LANES];
    int bd[KMC_LANES];
    for (int l = 0; l < KMC_LANES; l++) {
        bt[l] = INFINITY;
        bd[l] = -1;
    }
    for (int d = 0; d < g->cells; d++) { /* kmc_lane_scan for all lanes in one pass */
        const int l = d & (KMC_LANES - 1);
        if (tau[d] < bt[l] ||
            (tau[d] == bt[l] && tau[d] < INFINITY && kmc_tie_before(g, ti, tj, d, bd[l]))) {
            bt[l] = tau[d];
            bd[l] = d;
        }
    }
    uint64_t chk[4] = {0, 0, 0, 0}, central = 0, sim = 0;
    uint32_t overflow = 0;
    for (;;) {
        int w = 0;
        for (int l = 1; l < KMC_LANES; l++)
            if (kmc_before(g, ti, tj, bt[l], bd[l], bt[w], bd[w]))
                w = l;
        const double tmin = bt[w];
        if (!(tmin < t_end))
            break;
        if (carlo_interrupted) /* Ctrl-C: the step is left undecided (a long one could last hours) */
            return;
        const int dmin = bd[w];
        const int rmin = dmin / P, cmin = dmin - rmin * P;
        int32_t v[9];
        const int32_t xo = x[dmin];
        kmc_gather(g, x, dmin, v);
        const uint32_t cfg0 = kmc_config_index(md, v);
        const uint32_t site0 = kmc_site_rc(g, ti, tj, rmin, cmin);
        const uint32_t kf = cnt[dmin] + 1;
        overflow |= kf == 0;
        const carlo_u32x4 fd = kmc_clock_draw(seed, site0, kf);
        const int32_t xn = kmc_apply(md, cfg0, xo, kmc_choice_u(fd));
        x[dmin] = xn;
        cnt[dmin] = kf;
        for (int j = 0; j <= g->nbh; j++) {
            const int r = rmin + kmc_slot_dr(j), c = cmin + kmc_slot_dc(j);
            if (!kmc_dynamic(g, r, c))
                continue;
            const int a = dmin + g->off[j];
            kmc_gather(g, x, a, v);
            const uint32_t cn = kmc_config_index(md, v);
            const double An = kmc_total_rate(md, cn);
            carlo_u32x4 draw = fd;
            if (j > 0) {
                v[kmc_opposite(j)] = xo;
                if (kmc_total_rate(md, kmc_config_index(md, v)) == An)
                    continue; /* same total rate: the waiting time stands */
                const uint32_t k = cnt[a] + 1;
                overflow |= k == 0;
                cnt[a] = k;
                draw = kmc_clock_draw(seed, kmc_site_rc(g, ti, tj, r, c), k);
            }
            const double tn = kmc_clock(tmin, draw, An, kmc_inv_rate(md, cn));
            tau[a] = tn;
            const int l = a & (KMC_LANES - 1);
            kmc_lane_offer(g, ti, tj, tau, l, a, tn, &bt[l], &bd[l]);
        }
        kmc_account(g, rmin, cmin, tmin, site0, xn, chk, &central);
        sim++;
    }
    double tm = INFINITY;
    for (int q = 0; q < 64; q++) {
        int d = ((q >> 3) + h1) * P + (q & 7) + h1;
        uint64_t i = ((uint64_t)T << 6) + (uint64_t)q;
        im->x[back][i] = x[d];
        im->tau[back][i] = tau[d];
        im->cnt[back][i] = cnt[d];
        tm = tau[d] < tm ? tau[d] : tm;
    }
    im->tmin[back][T] = tm;
    memcpy(o->chk, chk, sizeof chk);
    o->events = central;
    o->sim = sim;
    o->overflow = overflow;
    o->pad = 0;
}

static int cpu_advance(kmc_system *s, uint64_t budget)
{
    cpu_impl *im = s->impl;
    kmc_ctrl *c = &s->ctrl;
    const int ntiles = s->geom.ntr * s->geom.ntc;
    for (uint64_t k = 0; k < budget && !c->done; k++) {
        const int front = (int)c->front;
        const double t_end = c->t_end;
        /* a step of a few tiles is shorter than waking the threads */
#pragma omp parallel for schedule(dynamic, 4) if (ntiles > 64)
        for (int T = 0; T < ntiles; T++)
            cpu_tile(s, im, T, front, t_end);
        if (carlo_interrupted)
            return 0; /* not decided: the accepted state stays, done stays 0 */
        uint64_t ev = 0, sim = 0;
        uint32_t bad = 0, ovf = 0;
#pragma omp parallel for schedule(static) reduction(+ : ev, sim) reduction(| : bad, ovf) if (ntiles > 1024)
        for (int T = 0; T < ntiles; T++) {
            bad |= (uint32_t)!kmc_tile_matches(&s->geom, im->out, T);
            ev += im->out[T].events;
            sim += im->out[T].sim;
            ovf |= im->out[T].overflow;
        }
        kmc_ctrl_decide(c, ev, sim, bad, ovf);
    }
    return 0;
}

static int cpu_min_tau(kmc_system *s, double *out)
{
    cpu_impl *im = s->impl;
    const double *tau = im->tau[s->ctrl.front];
    const int64_t N = (int64_t)s->m * s->n;
    double mt = INFINITY;
#pragma omp parallel for schedule(static) reduction(min : mt)
    for (int64_t i = 0; i < N; i++)
        if (tau[i] < mt)
            mt = tau[i];
    *out = mt;
    return 0;
}

static int cpu_sync(kmc_system *s)
{
    (void)s;
    return 0;
}

const kmc_backend kmc_cpu_backend = {
    .name = "cpu",
    .create = cpu_create,
    .destroy = cpu_destroy,
    .set_state = cpu_set_state,
    .get_state = cpu_get_state,
    .advance = cpu_advance,
    .min_tau = cpu_min_tau,
    .sync = cpu_sync,
};
