/* kmc.c — the KMC system (creation, clocks, runs, single steps, observables, frames,
 * checkpoints) and its tiled CPU backend: Algorithm 2 of kmc_kernel.h, tiles shared among
 * OpenMP threads, the 32 lanes of a domain visited in a loop. */
#include "kmc/kmc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h"

const kmc_backend *kmc_gpu_backend;

const char *kmc_algorithm_name(kmc_algorithm a)
{
    return a == KMC_TILED ? "tiled" : a == KMC_SERIAL ? "serial" : "bkl";
}

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

/* ---------- the system ---------- */

int kmc_sos_rates(double phi, double k2, double rate[5])
{
    if (!isfinite(phi) || !isfinite(k2) || !(k2 > 0))
        return carlo_seterr("phi must be finite and k2 a finite number > 0 (got phi = %g, k2 = %g)",
                            phi, k2);
    for (int nb = 0; nb <= 4; nb++) {
        rate[nb] = k2 * exp((2.0 * nb - 4.0) * phi);
        if (!isfinite(rate[nb]) || !(rate[nb] >= 2.2250738585072014e-308))
            return carlo_seterr("the rate k2 exp((2 n_b - 4) phi) for n_b = %d is %g; rates must "
                                "be finite and > 0 (|phi| too large)", nb, rate[nb]);
    }
    return 0;
}

static uint32_t ipow(uint32_t b, int e)
{
    uint64_t r = 1;
    for (int i = 0; i < e; i++) {
        r *= b;
        if (r > UINT32_MAX)
            return UINT32_MAX;
    }
    return (uint32_t)r;
}

/* The user table: cumulative rates in listing order, A their sum, invA = 1 / A. */
static int build_table(kmc_system *s, const kmc_params *p)
{
    uint32_t nc = ipow((uint32_t)p->S, p->nbh + 1);
    if (nc > KMC_CONFIGS_MAX)
        return carlo_seterr("the rate table would have %d^%d = %llu entries (at most %u): use "
                            "fewer states or neighbourhood = 4", p->S, p->nbh + 1,
                            (unsigned long long)pow(p->S, p->nbh + 1), KMC_CONFIGS_MAX);
    if (p->nevents > KMC_EVENTS_MAX)
        return carlo_seterr("the rate table lists %u events (at most %u)", p->nevents, KMC_EVENTS_MAX);
    s->configs = carlo_calloc(nc, sizeof *s->configs, "the KMC rate table");
    s->events = carlo_calloc(p->nevents ? p->nevents : 1, sizeof *s->events, "the KMC event table");
    s->event_rates = carlo_calloc(p->nevents ? p->nevents : 1, sizeof *s->event_rates,
                                  "the KMC event table");
    if (!s->configs || !s->events || !s->event_rates)
        return -1;
    if (p->nevents)
        memcpy(s->event_rates, p->rates, sizeof *s->event_rates * p->nevents);
    s->nconfigs = nc;
    s->nevents = p->nevents;
    uint32_t e = 0;
    for (uint32_t cfg = 0; cfg < nc; cfg++) {
        kmc_config *c = &s->configs[cfg];
        c->first = e;
        c->count = p->counts[cfg];
        if (c->count > p->nevents - e)
            return carlo_seterr("the rate table's event counts exceed its %u events", p->nevents);
        int32_t self = (int32_t)(cfg % (uint32_t)p->S);
        double sum = 0;
        for (uint32_t k = 0; k < c->count; k++, e++) {
            double r = p->rates[e];
            int32_t t = p->targets[e];
            if (!isfinite(r) || !(r > 0))
                return carlo_seterr("configuration %u: event %u has rate %g (rates must be finite "
                                    "and > 0; leave zero-rate events out)", cfg, k + 1, r);
            if (t < 0 || t >= p->S || t == self)
                return carlo_seterr("configuration %u: event %u goes to state %d (must differ "
                                    "from %d and lie in 0..%d)", cfg, k + 1, (int)t, (int)self,
                                    p->S - 1);
            sum += r;
            s->events[e].cum = sum;
            s->events[e].target = t;
        }
        if (!isfinite(sum))
            return carlo_seterr("configuration %u: the total rate overflows", cfg);
        c->A = sum;
        c->invA = sum > 0 ? 1.0 / sum : 0.0;
    }
    if (e != p->nevents)
        return carlo_seterr("the rate table lists %u events but its counts add up to %u",
                            p->nevents, e);
    return 0;
}

kmc_system *kmc_create(const kmc_params *p)
{
    if (p->m < KMC_TILE || p->m > KMC_SIDE_MAX || p->m % KMC_TILE) {
        carlo_seterr("m must be a multiple of the tile size %d, from %d to %d (got %d)", KMC_TILE,
                     KMC_TILE, KMC_SIDE_MAX, p->m);
        return NULL;
    }
    if (p->n < KMC_TILE || p->n > KMC_SIDE_MAX || p->n % KMC_TILE) {
        carlo_seterr("n must be a multiple of the tile size %d, from %d to %d (got %d)", KMC_TILE,
                     KMC_TILE, KMC_SIDE_MAX, p->n);
        return NULL;
    }
    if ((int64_t)p->m * p->n > KMC_SITES_MAX) {
        carlo_seterr("m n must be at most 2^31 sites (got %d x %d)", p->m, p->n);
        return NULL;
    }
    if (p->halo < 1 || p->halo > KMC_HALO_MAX) {
        carlo_seterr("halo must be an integer from 1 to %d (got %d)", KMC_HALO_MAX, p->halo);
        return NULL;
    }
    if (p->tiles_per_block < 1 || p->tiles_per_block > KMC_TPB_MAX) {
        carlo_seterr("tiles_per_block must be an integer from 1 to %d (got %d)", KMC_TPB_MAX,
                     p->tiles_per_block);
        return NULL;
    }
    if (!(p->alpha_initial > 1) || !isfinite(p->alpha_initial) || !(p->alpha_after > 1) ||
        !isfinite(p->alpha_after) || !(p->beta > 0) || !(p->beta < 1)) {
        carlo_seterr("alpha_initial and alpha must be finite and > 1, beta in (0, 1) (got %g, %g, %g)",
                     p->alpha_initial, p->alpha_after, p->beta);
        return NULL;
    }
    const kmc_backend *be = &kmc_cpu_backend;
    if (p->algorithm == KMC_SERIAL)
        be = &kmc_serial_backend;
    else if (p->algorithm == KMC_BKL)
        be = &kmc_bkl_backend;
    if (p->device == CARLO_GPU) {
        if (p->algorithm != KMC_TILED) {
            carlo_seterr("algorithm = \"%s\" runs on the CPU only (the GPU runs \"tiled\")",
                         kmc_algorithm_name(p->algorithm));
            return NULL;
        }
        if (!kmc_gpu_backend) {
            carlo_seterr("this carlo was built without CUDA");
            return NULL;
        }
        be = kmc_gpu_backend;
    }
    kmc_system *s = carlo_calloc(1, sizeof *s, "a KMC system");
    if (!s)
        return NULL;
    s->m = p->m;
    s->n = p->n;
    s->algorithm = p->algorithm;
    s->device = p->device;
    s->seed = p->seed;
    s->tiles_per_block = p->tiles_per_block;
    s->model.kind = p->kind;
    if (p->kind == KMC_SOS) {
        s->model.nbh = 4;
        s->phi = p->phi;
        s->k2 = p->k2;
        if (kmc_sos_rates(p->phi, p->k2, s->model.rate)) {
            kmc_destroy(s);
            return NULL;
        }
        for (int k = 0; k < 5; k++)
            s->model.inv[k] = 1.0 / s->model.rate[k];
    } else {
        if (p->nbh != 4 && p->nbh != 8) {
            carlo_seterr("neighbourhood must be 4 or 8 (got %d)", p->nbh);
            kmc_destroy(s);
            return NULL;
        }
        if (p->S < 2 || p->S > 256) {
            carlo_seterr("states must be an integer from 2 to 256 (got %d)", p->S);
            kmc_destroy(s);
            return NULL;
        }
        s->model.nbh = p->nbh;
        s->model.S = p->S;
        if (build_table(s, p)) {
            kmc_destroy(s);
            return NULL;
        }
        s->model.config = s->configs;
        s->model.event = s->events;
    }
    kmc_geom_init(&s->geom, p->m, p->n, p->halo, s->model.nbh);
    kmc_ctrl *c = &s->ctrl;
    c->alpha_initial = p->alpha_initial;
    c->alpha_after = p->alpha_after;
    c->beta = p->beta;
    c->alpha = p->alpha_initial;
    c->t_stop = INFINITY;
    c->ev_stop = UINT64_MAX;
    s->be = be;
    if (be->create(s)) {
        kmc_destroy(s);
        return NULL;
    }
    size_t N = (size_t)p->m * (size_t)p->n;
    int32_t *zero = NULL;
    const int32_t *x0 = p->initial;
    if (!x0) {
        zero = carlo_calloc(N, sizeof *zero, "an initial lattice");
        if (!zero) {
            kmc_destroy(s);
            return NULL;
        }
        x0 = zero;
    } else if (p->kind == KMC_TABLE) {
        for (size_t i = 0; i < N; i++)
            if (x0[i] < 0 || x0[i] >= p->S) {
                carlo_seterr("initial state %d at site %zu is out of range (states 0..%d)",
                             (int)x0[i], i, p->S - 1);
                kmc_destroy(s);
                return NULL;
            }
    }
    int rc = kmc_set_states(s, x0, 0);
    free(zero);
    if (rc) {
        kmc_destroy(s);
        return NULL;
    }
    return s;
}

void kmc_destroy(kmc_system *s)
{
    if (!s)
        return;
    if (s->be && s->impl)
        s->be->destroy(s);
    free(s->configs);
    free(s->events);
    free(s->event_rates);
    free(s);
}

int kmc_set_states(kmc_system *s, const int32_t *x, uint32_t draw)
{
    const int m = s->m, n = s->n;
    const size_t N = (size_t)m * (size_t)n;
    if (s->algorithm == KMC_BKL)
        return s->be->set_state(s, x, NULL, NULL);
    double *tau = carlo_malloc(carlo_mulsize(N, sizeof *tau), "the KMC clocks");
    uint32_t *cnt = tau ? carlo_malloc(carlo_mulsize(N, sizeof *cnt), "the KMC draw counters") : NULL;
    if (!cnt) {
        free(tau);
        return -1;
    }
    const kmc_model *md = &s->model;
    const double t = s->ctrl.t;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            int32_t v[9];
            kmc_gather_periodic(m, n, md->nbh, x, i, j, v);
            uint32_t cfg = kmc_config_index(md, v);
            uint32_t site = (uint32_t)i * (uint32_t)n + (uint32_t)j;
            tau[site] = kmc_clock(t, kmc_clock_draw(s->seed, site, draw), kmc_total_rate(md, cfg),
                                  kmc_inv_rate(md, cfg));
            cnt[site] = draw;
        }
    int rc = s->be->set_state(s, x, tau, cnt);
    free(tau);
    free(cnt);
    s->ctrl.dt = 0; /* the next run starts from min(tau) - t again */
    return rc;
}

/* ---------- runs ---------- */

static int fail_dead(kmc_system *s)
{
    s->dead = s->device == CARLO_GPU;
    return -1;
}

int kmc_run_ex(kmc_system *s, const kmc_run_opts *o, kmc_run_result *res)
{
    memset(res, 0, sizeof *res);
    if (s->dead)
        return carlo_seterr("this system died on an earlier device error");
    kmc_ctrl *c = &s->ctrl;
    const double t_final = o->time > 0 ? c->t + o->time : INFINITY;
    const uint64_t ev_final = o->events ? (c->events + o->events < c->events ? UINT64_MAX - 1
                                                                             : c->events + o->events)
                                        : UINT64_MAX;
    if (!(o->time > 0) && !o->events)
        return carlo_seterr("give a time > 0 or a number of events > 0");
    if (o->time > 0 && !(t_final > c->t))
        return carlo_seterr("time = %g is below the resolution of t = %.17g", o->time, c->t);
    double mt;
    if (s->be->min_tau(s, &mt))
        return fail_dead(s);
    if (!(mt < INFINITY)) {
        if (ev_final != UINT64_MAX)
            return carlo_seterr("no event can happen: every rate is zero");
        c->t = t_final; /* nothing changes, ever */
        return 0;
    }
    if (s->algorithm == KMC_TILED && !(c->dt > 0)) {
        /* Sec. 2.2: the first step reaches the earliest event */
        c->dt = mt - c->t;
        if (!(c->dt > 0))
            c->dt = (fabs(c->t) > 1 ? fabs(c->t) : 1) * 0x1p-40;
    }
    const uint64_t ev0 = c->events, acc0 = c->accepted, rej0 = c->rejected;
    carlo_progress pr;
    if (ev_final != UINT64_MAX)
        carlo_progress_start(&pr, "kmc", "events", (double)(ev_final - ev0), o->quiet);
    else
        carlo_progress_start(&pr, "kmc", "time", o->time, o->quiet);
    const double start = carlo_now(), t0 = c->t;
    uint64_t budget = 1, next_k = 0;
    if (o->every > 0) {
        next_k = (uint64_t)floor(c->t / o->every) + 1;
        while ((double)next_k * o->every <= c->t)
            next_k++;
    }
    int rc = 0;
    for (;;) {
        double stop = t_final;
        int at_every = 0;
        if (o->every > 0 && (double)next_k * o->every <= stop) {
            stop = (double)next_k * o->every;
            at_every = 1;
        }
        c->t_stop = stop;
        c->ev_stop = ev_final;
        c->mode = KMC_MODE_ADAPTIVE;
        c->force = 0;
        c->done = 0;
        kmc_ctrl_plan(c);
        while (!c->done) {
            const uint64_t before = c->events;
            const double w0 = carlo_now();
            if (s->be->advance(s, budget)) {
                rc = fail_dead(s);
                goto out;
            }
            if (c->overflow) {
                rc = carlo_seterr("a site has drawn 2^32 waiting times: its random numbers "
                                  "would repeat (the state at t = %.17g is kept)", c->t);
                goto out;
            }
            if (carlo_interrupted) {
                rc = carlo_seterr("interrupted");
                goto out;
            }
            if (ev_final != UINT64_MAX)
                carlo_progress_update(&pr, (double)(c->events - ev0));
            else
                carlo_progress_update(&pr, c->t - t0);
            if (carlo_now() - w0 < 0.02 && budget < ((uint64_t)1 << 24))
                budget *= 2;
            if (c->events == before && (!c->done || c->t < c->t_stop)) { /* no progress */
                if (s->be->min_tau(s, &mt)) {
                    rc = fail_dead(s);
                    goto out;
                }
                if (!(mt < INFINITY)) {
                    if (ev_final != UINT64_MAX) {
                        rc = carlo_seterr("no event can happen any more (every rate is zero) "
                                          "after %llu events", (unsigned long long)c->events);
                        goto out;
                    }
                    c->t = c->t_stop;
                    c->done = 1;
                }
            }
        }
        if (at_every && c->t == stop) {
            next_k++;
            if (o->callback && (rc = o->callback(o->ctx, s)))
                goto out;
        }
        if (!(c->t < t_final) || c->events >= ev_final)
            break;
    }
out:
    carlo_progress_end(&pr);
    c->t_stop = INFINITY;
    c->ev_stop = UINT64_MAX;
    res->events = c->events - ev0;
    res->steps = c->accepted - acc0;
    res->rejected = c->rejected - rej0;
    res->seconds = carlo_now() - start;
    return rc;
}

int kmc_try_step(kmc_system *s, double dt, int force, int *accepted, int *matched,
                 uint64_t *events)
{
    if (s->dead)
        return carlo_seterr("this system died on an earlier device error");
    if (s->algorithm != KMC_TILED)
        return carlo_seterr("single steps need algorithm = \"tiled\" (this system is \"%s\")",
                            kmc_algorithm_name(s->algorithm));
    kmc_ctrl *c = &s->ctrl;
    if (!(dt > 0) || !isfinite(dt))
        return carlo_seterr("dt must be a finite number > 0 (got %g)", dt);
    double te = c->t + dt;
    if (!(te > c->t) || !isfinite(te))
        return carlo_seterr("dt = %g does not move t = %.17g", dt, c->t);
    c->mode = KMC_MODE_TRY;
    c->force = force ? 1u : 0u;
    c->t_end = te;
    c->clamped = 0;
    c->done = 0;
    int rc = s->be->advance(s, 1);
    c->mode = KMC_MODE_ADAPTIVE;
    c->force = 0;
    if (rc)
        return fail_dead(s);
    if (c->overflow)
        return carlo_seterr("a site has drawn 2^32 waiting times: its random numbers would repeat");
    *accepted = (int)c->last_accepted;
    *matched = (int)c->last_matched;
    *events = c->last_events;
    return 0;
}

/* ---------- observables ---------- */

int kmc_observe(kmc_system *s, kmc_obs *o, uint64_t *counts)
{
    const int m = s->m, n = s->n;
    const size_t N = (size_t)m * (size_t)n;
    int32_t *x = carlo_malloc(carlo_mulsize(N, sizeof *x), "a KMC snapshot");
    if (!x)
        return -1;
    if (s->be->get_state(s, x, NULL, NULL)) {
        free(x);
        return fail_dead(s);
    }
    int64_t lo = INT32_MAX, hi = INT32_MIN;
#pragma omp parallel for schedule(static) reduction(min : lo) reduction(max : hi)
    for (size_t i = 0; i < N; i++) {
        if (x[i] < lo)
            lo = x[i];
        if (x[i] > hi)
            hi = x[i];
    }
    /* exact sums of (x - lo) and (x - lo)^2, row by row in 128 bits */
    unsigned __int128 s1 = 0, s2 = 0;
    uint64_t steps = 0;
#pragma omp parallel
    {
        unsigned __int128 a1 = 0, a2 = 0;
        uint64_t st = 0;
#pragma omp for schedule(static)
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                uint64_t d = (uint64_t)((int64_t)x[(size_t)i * n + j] - lo);
                a1 += d;
                a2 += (unsigned __int128)d * d;
                if (s->model.kind == KMC_SOS) {
                    int32_t v[9];
                    kmc_gather_periodic(m, n, 4, x, i, j, v);
                    st += kmc_config_index(&s->model, v) > 0;
                }
            }
        }
#pragma omp critical
        {
            s1 += a1;
            s2 += a2;
            steps += st;
        }
    }
    double Nd = (double)N;
    double mean_d = (double)s1 / Nd;
    /* variance = (s2 - s1^2 / N) / N, with the subtraction done exactly where it fits */
    unsigned __int128 q = s1 * s1 / (unsigned __int128)N, r = s1 * s1 % (unsigned __int128)N;
    double var = ((double)(s2 - q) - (double)r / Nd) / Nd;
    o->mean = (double)lo + mean_d;
    o->width = sqrt(var > 0 ? var : 0);
    o->step_fraction = s->model.kind == KMC_SOS ? (double)steps / Nd : 0;
    o->min = lo;
    o->max = hi;
    if (counts && s->model.kind == KMC_TABLE) {
        memset(counts, 0, sizeof *counts * (size_t)s->model.S);
        for (size_t i = 0; i < N; i++)
            counts[x[i]]++;
    }
    free(x);
    return 0;
}

/* ---------- frames, checkpoints ---------- */

static int add_states(kmc_system *s, carlo_frame *f, int for_frame)
{
    size_t N = (size_t)s->m * (size_t)s->n;
    int32_t *x = carlo_malloc(carlo_mulsize(N, sizeof *x), "a KMC frame");
    if (!x)
        return -1;
    if (s->be->get_state(s, x, NULL, NULL)) {
        free(x);
        return fail_dead(s);
    }
    if (for_frame && s->model.kind == KMC_TABLE) { /* states fit a byte (S <= 256) */
        uint8_t *b = carlo_malloc(N, "a KMC frame");
        if (!b) {
            free(x);
            return -1;
        }
        for (size_t i = 0; i < N; i++)
            b[i] = (uint8_t)x[i];
        free(x);
        return carlo_frame_add_owned(f, "lattice/state", CARLO_U8, (uint64_t)s->m, (uint64_t)s->n, b);
    }
    return carlo_frame_add_owned(f, for_frame ? "lattice/height" : "kmc/x", CARLO_I32,
                                 (uint64_t)s->m, (uint64_t)s->n, x);
}

int kmc_frame(kmc_system *s, carlo_frame *f)
{
    return carlo_frame_add_u64(f, "configuration/step", s->ctrl.events) ||
           carlo_frame_add_f64(f, "log/t", s->ctrl.t) || add_states(s, f, 1);
}

int kmc_checkpoint(kmc_system *s, carlo_frame *f)
{
    const kmc_ctrl *c = &s->ctrl;
    int32_t shape[8] = {s->m, s->n, (int32_t)s->algorithm, s->model.kind, s->model.nbh, s->model.S,
                        s->geom.halo, s->tiles_per_block};
    double params[5] = {s->phi, s->k2, c->alpha_initial, c->alpha_after, c->beta};
    double time[4] = {c->t, c->dt, c->alpha, c->rate_est};
    uint64_t counters[6] = {c->events, c->simulated, c->accepted, c->rejected, c->rejected_once,
                            c->domain_events};
    if (carlo_frame_add_string(f, "carlo/model", "kmc") ||
        carlo_frame_add_u64(f, "configuration/step", c->events) ||
        carlo_frame_add_u64(f, "carlo/seed", s->seed) ||
        carlo_frame_add_copy(f, "kmc/shape", CARLO_I32, 8, 1, shape) ||
        carlo_frame_add_copy(f, "kmc/params", CARLO_F64, 5, 1, params) ||
        carlo_frame_add_copy(f, "kmc/time", CARLO_F64, 4, 1, time) ||
        carlo_frame_add_copy(f, "kmc/counters", CARLO_U64, 6, 1, counters) || add_states(s, f, 0))
        return -1;
    if (s->model.kind == KMC_TABLE) {
        double *rates = carlo_malloc(sizeof *rates * (s->nevents ? s->nevents : 1), "a checkpoint");
        int32_t *targets = carlo_malloc(sizeof *targets * (s->nevents ? s->nevents : 1), "a checkpoint");
        uint32_t *counts = carlo_malloc(sizeof *counts * s->nconfigs, "a checkpoint");
        if (!rates || !targets || !counts) {
            free(rates);
            free(targets);
            free(counts);
            return -1;
        }
        for (uint32_t cfg = 0; cfg < s->nconfigs; cfg++) {
            const kmc_config *k = &s->configs[cfg];
            counts[cfg] = k->count;
            for (uint32_t e = k->first; e < k->first + k->count; e++) {
                rates[e] = s->event_rates[e];
                targets[e] = s->events[e].target;
            }
        }
        if (carlo_frame_add_owned(f, "kmc/event_count", CARLO_U32, s->nconfigs, 1, counts) ||
            carlo_frame_add_owned(f, "kmc/event_target", CARLO_I32, s->nevents, 1, targets) ||
            carlo_frame_add_owned(f, "kmc/event_rate", CARLO_F64, s->nevents, 1, rates))
            return -1;
    }
    if (s->algorithm == KMC_BKL)
        return 0;
    size_t N = (size_t)s->m * (size_t)s->n;
    double *tau = carlo_malloc(carlo_mulsize(N, sizeof *tau), "a checkpoint");
    uint32_t *cnt = tau ? carlo_malloc(carlo_mulsize(N, sizeof *cnt), "a checkpoint") : NULL;
    if (!cnt || s->be->get_state(s, NULL, tau, cnt)) {
        free(tau);
        free(cnt);
        return cnt ? fail_dead(s) : -1;
    }
    return carlo_frame_add_owned(f, "kmc/tau", CARLO_F64, (uint64_t)s->m, (uint64_t)s->n, tau) ||
           carlo_frame_add_owned(f, "kmc/draws", CARLO_U32, (uint64_t)s->m, (uint64_t)s->n, cnt);
}

kmc_system *kmc_restore(const carlo_frame *f, carlo_device_kind device)
{
    const int32_t *shape = carlo_frame_expect(f, "kmc/shape", CARLO_I32, 8, 1);
    const double *params = carlo_frame_expect(f, "kmc/params", CARLO_F64, 5, 1);
    const double *time = carlo_frame_expect(f, "kmc/time", CARLO_F64, 4, 1);
    const uint64_t *counters = carlo_frame_expect(f, "kmc/counters", CARLO_U64, 6, 1);
    const uint64_t *seed = carlo_frame_expect(f, "carlo/seed", CARLO_U64, 1, 1);
    if (!shape || !params || !time || !counters || !seed)
        return NULL;
    if (shape[0] < KMC_TILE || shape[0] > KMC_SIDE_MAX || shape[1] < KMC_TILE ||
        shape[1] > KMC_SIDE_MAX || shape[2] < 0 || shape[2] > 2 || shape[3] < 0 || shape[3] > 1) {
        carlo_seterr("bad kmc/shape");
        return NULL;
    }
    uint64_t m = (uint64_t)shape[0], n = (uint64_t)shape[1];
    const int32_t *x = carlo_frame_expect(f, "kmc/x", CARLO_I32, m, n);
    if (!x)
        return NULL;
    kmc_params p;
    memset(&p, 0, sizeof p);
    p.m = shape[0];
    p.n = shape[1];
    p.algorithm = (kmc_algorithm)shape[2];
    p.device = device;
    p.seed = *seed;
    p.kind = shape[3];
    p.nbh = shape[4];
    p.S = shape[5];
    p.halo = shape[6];
    p.tiles_per_block = shape[7];
    p.phi = params[0];
    p.k2 = params[1];
    p.alpha_initial = params[2];
    p.alpha_after = params[3];
    p.beta = params[4];
    p.initial = x;
    if (p.kind == KMC_TABLE) {
        if ((p.nbh != 4 && p.nbh != 8) || p.S < 2 || p.S > 256 ||
            ipow((uint32_t)p.S, p.nbh + 1) > KMC_CONFIGS_MAX) {
            carlo_seterr("bad kmc/shape");
            return NULL;
        }
        uint32_t nc = ipow((uint32_t)p.S, p.nbh + 1);
        p.counts = carlo_frame_expect(f, "kmc/event_count", CARLO_U32, nc, 1);
        const carlo_chunk *rc = carlo_frame_find(f, "kmc/event_rate");
        if (!p.counts || !rc)
            return p.counts ? (carlo_seterr("missing chunk kmc/event_rate"), NULL) : NULL;
        p.nevents = (uint32_t)rc->rows;
        p.rates = carlo_frame_expect(f, "kmc/event_rate", CARLO_F64, rc->rows, 1);
        p.targets = carlo_frame_expect(f, "kmc/event_target", CARLO_I32, rc->rows, 1);
        if (!p.rates || !p.targets || rc->rows > KMC_EVENTS_MAX)
            return p.rates && p.targets ? (carlo_seterr("too many events"), NULL) : NULL;
    }
    const double *tau = NULL;
    const uint32_t *draws = NULL;
    if (p.algorithm != KMC_BKL) {
        tau = carlo_frame_expect(f, "kmc/tau", CARLO_F64, m, n);
        draws = carlo_frame_expect(f, "kmc/draws", CARLO_U32, m, n);
        if (!tau || !draws)
            return NULL;
        for (uint64_t i = 0; i < m * n; i++)
            if (!(tau[i] >= time[0]) || isnan(tau[i])) {
                carlo_seterr("a clock lies before t");
                return NULL;
            }
    }
    kmc_system *s = kmc_create(&p);
    if (!s)
        return NULL;
    kmc_ctrl *c = &s->ctrl;
    c->t = time[0];
    c->dt = time[1];
    c->alpha = time[2];
    c->rate_est = time[3];
    c->events = counters[0];
    c->simulated = counters[1];
    c->accepted = counters[2];
    c->rejected = counters[3];
    c->rejected_once = counters[4] != 0;
    c->domain_events = counters[5];
    if (!isfinite(c->t) || c->t < 0 || !(c->dt >= 0) || !(c->alpha > 1) || !isfinite(c->alpha)) {
        carlo_seterr("bad kmc/time");
        kmc_destroy(s);
        return NULL;
    }
    if (tau && s->be->set_state(s, x, tau, draws)) {
        kmc_destroy(s);
        return NULL;
    }
    return s;
}
