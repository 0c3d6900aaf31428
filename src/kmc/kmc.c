/* kmc.c — the KMC system: rate tables, creation, clocks, changes of the model's parameters,
 * single steps (try_step, substep), the launch shape and the observables. Its backends live in
 * kmc_cpu.c, kmc_serial.c and cuda/kmc.cu; its face in the system layer in kmc_sys.c. */
#include "kmc/kmc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h"
#include "mpi/mpi.h"

const kmc_backend *kmc_gpu_backend;

const char *kmc_algorithm_name(kmc_algorithm a)
{
    return a == KMC_TILED ? "tiled" : a == KMC_SERIAL ? "serial" : "bkl";
}

/* ---------- the system ---------- */


int kmc_sos_rates(double bond, double k2, double rate[5])
{
    if (!isfinite(bond) || !isfinite(k2) || !(k2 > 0))
        return carlo_seterr("bond must be finite and k2 a finite number > 0 (got bond = %g, k2 = %g)",
                            bond, k2);
    for (int nb = 0; nb <= 4; nb++) {
        rate[nb] = k2 * exp((2.0 * nb - 4.0) * bond);
        if (!isfinite(rate[nb]) || !(rate[nb] >= 2.2250738585072014e-308))
            return carlo_seterr("the rate k2 exp((2 n_b - 4) bond) for n_b = %d is %g with bond = %g, "
                                "k2 = %g; rates must be finite and > 0 (|bond| too large)", nb,
                                rate[nb], bond, k2);
    }
    return 0;
}

/* The model's rates from bond and k2 (sos_growth). */
static int sos_model(kmc_model *md, double bond, double k2)
{
    double rate[5];
    if (kmc_sos_rates(bond, k2, rate))
        return -1;
    for (int k = 0; k < 5; k++) {
        md->rate[k] = rate[k];
        md->inv[k] = 1.0 / rate[k];
    }
    return 0;
}

static double rate_max(const kmc_system *s)
{
    double mx = 0;
    if (s->model.kind == KMC_SOS) {
        for (int k = 0; k < 5; k++)
            mx = s->model.rate[k] > mx ? s->model.rate[k] : mx;
    } else {
        for (uint32_t c = 0; c < s->nconfigs; c++)
            mx = s->configs[c].A > mx ? s->configs[c].A : mx;
    }
    return mx;
}

uint32_t kmc_ipow(uint32_t b, int e)
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
    uint32_t nc = kmc_ipow((uint32_t)p->S, p->nbh + 1);
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
    const int tpb = p->tiles_per_block ? p->tiles_per_block : KMC_TPB_DEFAULT;
    if (tpb < 1 || tpb > KMC_TPB_MAX) {
        carlo_seterr("tiles_per_block must be an integer from 1 to %d (got %d)", KMC_TPB_MAX, tpb);
        return NULL;
    }
    if (!(p->grow_initial > 1) || !isfinite(p->grow_initial) || !(p->grow > 1) ||
        !isfinite(p->grow) || !(p->shrink > 0) || !(p->shrink < 1)) {
        carlo_seterr("grow_initial and grow must be finite and > 1, shrink in (0, 1) (got %g, %g, %g)",
                     p->grow_initial, p->grow, p->shrink);
        return NULL;
    }
    const int ranks = p->split ? carlo_mpi_size() : 1, rank = p->split ? carlo_mpi_rank() : 0;
    const int ntr = p->m / KMC_TILE;
    if (p->split) {
        if (p->algorithm != KMC_TILED) {
            carlo_seterr("decompose = true needs algorithm = \"tiled\" (got \"%s\", which fires "
                         "one event at a time on the whole lattice)",
                         kmc_algorithm_name(p->algorithm));
            return NULL;
        }
        if (ntr < ranks) {
            carlo_seterr("decompose = true: m = %d rows are %d tile rows of %d, fewer than the %d "
                         "MPI ranks (each rank needs one tile row at least)", p->m, ntr, KMC_TILE,
                         ranks);
            return NULL;
        }
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
    s->split = p->split ? 1 : 0;
    s->collective = s->split; /* its steps call MPI: never from a worker thread */
    s->tile_row0 = (int)((int64_t)rank * ntr / ranks);
    s->tile_rows = (int)((int64_t)(rank + 1) * ntr / ranks) - s->tile_row0;
    s->slab_rows = carlo_calloc((size_t)ranks, sizeof *s->slab_rows, "the ranks' rows");
    if (!s->slab_rows) {
        free(s);
        return NULL;
    }
    for (int k = 0; k < ranks; k++)
        s->slab_rows[k] = KMC_TILE * (int)((int64_t)(k + 1) * ntr / ranks - (int64_t)k * ntr / ranks);
    s->m = p->m;
    s->n = p->n;
    s->algorithm = p->algorithm;
    s->ops = p->kind == KMC_SOS ? &kmc_ops : &kmc_user_ops;
    s->replicas = 1;
    s->device = p->device;
    s->seed = p->seed;
    s->tiles_per_block = tpb;
    s->seg_t_stop = NAN;
    s->model.kind = p->kind;
    if (p->kind == KMC_SOS) {
        s->model.nbh = 4;
        s->bond = p->bond;
        s->k2 = p->k2;
        if (sos_model(&s->model, p->bond, p->k2)) {
            kmc_destroy(s);
            return NULL;
        }
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
    kmc_geom_init(&s->geom_repair, p->m, p->n, KMC_REPAIR_HALO, s->model.nbh);
    kmc_ctrl *c = &s->ctrl;
    c->repair = p->algorithm == KMC_TILED && p->repair && p->halo < KMC_REPAIR_HALO;
    s->rate_max = rate_max(s);
    c->grow_initial = p->grow_initial;
    c->grow_after = p->grow;
    c->shrink = p->shrink;
    c->grow = p->grow_initial;
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
    free(s->slab_rows);
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

/* The old model's total rate of a site, against the current one's: a new waiting time where
 * it changed (the site's next draw), the clock kept where it did not. */
static int redraw_changed(kmc_system *s, const kmc_model *old)
{
    const int m = s->m, n = s->n;
    const size_t N = (size_t)m * (size_t)n;
    if (s->algorithm == KMC_BKL) { /* no clocks: the tree of rates is rebuilt from the states */
        int32_t *x = carlo_malloc(carlo_mulsize(N, sizeof *x), "the KMC states");
        int rc = !x || s->be->get_state(s, x, NULL, NULL) || s->be->set_state(s, x, NULL, NULL);
        free(x);
        return rc ? kmc_fail(s) : 0;
    }
    int32_t *x = carlo_malloc(carlo_mulsize(N, sizeof *x), "the KMC states");
    double *tau = x ? carlo_malloc(carlo_mulsize(N, sizeof *tau), "the KMC clocks") : NULL;
    uint32_t *cnt = tau ? carlo_malloc(carlo_mulsize(N, sizeof *cnt), "the KMC draw counters") : NULL;
    int rc = cnt ? 0 : -1;
    if (rc == 0 && s->be->get_state(s, x, tau, cnt))
        rc = kmc_fail(s);
    const kmc_model *md = &s->model;
    const double t = s->ctrl.t;
    int exhausted = 0;
    if (rc == 0) {
#pragma omp parallel for schedule(static) reduction(| : exhausted)
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                int32_t v[9];
                kmc_gather_periodic(m, n, md->nbh, x, i, j, v);
                const uint32_t cfg = kmc_config_index(md, v);
                const uint32_t site = (uint32_t)i * (uint32_t)n + (uint32_t)j;
                const double A = kmc_total_rate(md, cfg);
                if (A == kmc_total_rate(old, cfg))
                    continue;
                const uint32_t k = cnt[site] + 1;
                exhausted |= k == 0;
                cnt[site] = k;
                tau[site] = kmc_clock(t, kmc_clock_draw(s->seed, site, k), A, kmc_inv_rate(md, cfg));
            }
        if (exhausted)
            rc = carlo_seterr("a site has drawn 2^32 waiting times: its random numbers would repeat");
        else if (s->be->set_state(s, NULL, tau, cnt))
            rc = kmc_fail(s);
    }
    free(x);
    free(tau);
    free(cnt);
    return rc;
}

int kmc_set_sos(kmc_system *s, double bond, double k2)
{
    if (carlo_sys_alive(&s->sys))
        return -1;
    if (s->model.kind != KMC_SOS)
        return carlo_seterr("bond and k2 belong to model = \"sos_growth\"");
    if (bond == s->bond && k2 == s->k2)
        return 0; /* nothing changes: the clocks and the adaptive step stay as they are */
    kmc_model old = s->model, md = s->model;
    if (sos_model(&md, bond, k2))
        return -1;
    s->model = md;
    if (redraw_changed(s, &old)) {
        s->model = old;
        return -1;
    }
    s->bond = bond;
    s->k2 = k2;
    s->rate_max = rate_max(s);
    s->ctrl.dt = 0; /* the next run starts from min(tau) - t again */
    s->seg_t_stop = NAN;
    return 0;
}

/* ---------- single steps and the launch shape ---------- */

static int tiled_only(const kmc_system *s)
{
    if (carlo_sys_alive(&s->sys))
        return -1;
    if (s->algorithm != KMC_TILED)
        return carlo_seterr("single steps need algorithm = \"tiled\" (this system is \"%s\")",
                            kmc_algorithm_name(s->algorithm));
    return 0;
}

/* One backend step in the mode set in s->ctrl, and what came of it. */
static int one_step(kmc_system *s, int *accepted, int *matched, uint64_t *events)
{
    kmc_ctrl *c = &s->ctrl;
    const uint64_t tried = c->accepted + c->rejected;
    s->seg_t_stop = NAN;
    int rc = s->be->advance(s, 1);
    const int decided = c->accepted + c->rejected != tried;
    c->mode = KMC_MODE_ADAPTIVE;
    c->force = 0;
    c->t_stop = INFINITY;
    c->ev_stop = UINT64_MAX;
    if (rc)
        return kmc_fail(s);
    kmc_sync_step(s);
    if (c->overflow)
        return carlo_seterr("a site has drawn 2^32 waiting times: its random numbers would repeat");
    if (!decided)
        return carlo_seterr("interrupted");
    *accepted = (int)c->last_accepted;
    *matched = (int)c->last_matched;
    *events = c->last_events;
    return 0;
}

/* The sum of every site's total rate now. */
static int rate_sum(kmc_system *s, double *sum)
{
    const int m = s->m, n = s->n;
    int32_t *x = carlo_malloc(carlo_mulsize((size_t)m * (size_t)n, sizeof *x), "the KMC states");
    if (!x)
        return -1;
    if (s->be->get_state(s, x, NULL, NULL)) {
        free(x);
        return kmc_fail(s);
    }
    const kmc_model *md = &s->model;
    double total = 0;
#pragma omp parallel for schedule(static) reduction(+ : total)
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            int32_t v[9];
            kmc_gather_periodic(m, n, md->nbh, x, i, j, v);
            total += kmc_total_rate(md, kmc_config_index(md, v));
        }
    free(x);
    *sum = total;
    return 0;
}

int kmc_try_step(kmc_system *s, double dt, int force, int *accepted, int *matched,
                 uint64_t *events)
{
    if (tiled_only(s))
        return -1;
    kmc_ctrl *c = &s->ctrl;
    double sum = 0;
    if (rate_sum(s, &sum))
        return -1;
    const double mean = sum / ((double)s->m * (double)s->n);
    const double most = mean > 0 ? KMC_TRY_EVENTS_MAX / mean : INFINITY;
    if (!(dt > 0) || !(dt <= most) || !isfinite(dt))
        return carlo_seterr("dt must be a finite number in (0, %.6g] (at most 2^16 events per site "
                            "at the lattice's mean rate now, %.6g) (got %g)", most, mean, dt);
    double te = c->t + dt;
    if (!(te > c->t) || !isfinite(te))
        return carlo_seterr("dt = %g does not move t = %.17g", dt, c->t);
    c->mode = KMC_MODE_TRY;
    c->force = force ? 1u : 0u;
    c->t_end = te;
    c->clamped = 0;
    c->done = 0;
    return one_step(s, accepted, matched, events);
}

int kmc_substep(kmc_system *s, int *accepted, int *matched, uint64_t *events)
{
    if (tiled_only(s))
        return -1;
    kmc_ctrl *c = &s->ctrl;
    if (!(c->dt > 0)) { /* Sec. 2.2: the first step reaches the earliest event */
        double mt;
        if (s->be->min_tau(s, &mt))
            return kmc_fail(s);
        if (!(mt < INFINITY))
            return carlo_seterr("no event can happen: every rate is zero");
        c->dt = mt - c->t;
        if (!(c->dt > 0))
            c->dt = (fabs(c->t) > 1 ? fabs(c->t) : 1) * 0x1p-40;
    }
    c->t_stop = INFINITY;
    c->ev_stop = UINT64_MAX;
    c->mode = KMC_MODE_ADAPTIVE;
    c->force = 0;
    c->done = 0;
    kmc_ctrl_plan(c);
    return one_step(s, accepted, matched, events);
}

int kmc_set_launch(kmc_system *s, int tiles_per_block)
{
    if (carlo_sys_alive(&s->sys))
        return -1;
    if (tiles_per_block < 1 || tiles_per_block > KMC_TPB_MAX)
        return carlo_seterr("tiles_per_block must be an integer from 1 to %d (got %d)", KMC_TPB_MAX,
                            tiles_per_block);
    if (s->be->launch && s->be->launch(s, tiles_per_block))
        return -1;
    s->tiles_per_block = tiles_per_block;
    return 0;
}

/* ---------- observables ---------- */

/* Exact sums over the ranks of a split system: s1 (< 2^63 over the whole lattice), s2 in four
 * 32-bit limbs (each limb's sum fits 63 bits), the step count and the populations. */
static int observe_sums(kmc_system *s, unsigned __int128 *s1, unsigned __int128 *s2,
                        uint64_t *steps, uint64_t *counts)
{
    const int S = s->model.kind == KMC_TABLE && counts ? s->model.S : 0;
    int64_t v[6 + 256];
    v[0] = (int64_t)(uint64_t)*s1;
    for (int k = 0; k < 4; k++)
        v[1 + k] = (int64_t)(uint64_t)((*s2 >> (32 * k)) & 0xffffffffu);
    v[5] = (int64_t)*steps;
    for (int k = 0; k < S; k++)
        v[6 + k] = (int64_t)counts[k];
    if (carlo_mpi_sum_i64(v, 6 + S))
        return -1;
    *s1 = (uint64_t)v[0];
    *s2 = 0;
    for (int k = 0; k < 4; k++)
        *s2 += (unsigned __int128)(uint64_t)v[1 + k] << (32 * k);
    *steps = (uint64_t)v[5];
    for (int k = 0; k < S; k++)
        counts[k] = (uint64_t)v[6 + k];
    return 0;
}

/* The whole lattice, or on a split system each rank's own rows with the rows above and below
 * them: the sums are exact integers, so a split system's observables are the whole one's. */
int kmc_observe(kmc_system *s, kmc_obs *o, uint64_t *counts)
{
    const int n = s->n, split = s->split;
    const int rows = split ? s->tile_rows * KMC_TILE : s->m, stored = split ? rows + 2 : rows;
    const int first = split ? 1 : 0;
    const size_t N = (size_t)s->m * (size_t)n;
    int32_t *x = carlo_malloc(carlo_mulsize((size_t)stored * (size_t)n, sizeof *x), "a KMC snapshot");
    if (!x)
        return -1;
    if (split ? s->be->slab_states(s, x) : s->be->get_state(s, x, NULL, NULL)) {
        free(x);
        return kmc_fail(s);
    }
    const int32_t *own = x + (size_t)first * (size_t)n;
    const size_t Nown = (size_t)rows * (size_t)n;
    int64_t lo = INT32_MAX, hi = INT32_MIN;
#pragma omp parallel for schedule(static) reduction(min : lo) reduction(max : hi)
    for (size_t i = 0; i < Nown; i++) {
        if (own[i] < lo)
            lo = own[i];
        if (own[i] > hi)
            hi = own[i];
    }
    if (split) {
        double ext[2] = {(double)lo, -(double)hi}; /* 32-bit integers: exact */
        if (carlo_mpi_min_f64(ext, 2)) {
            free(x);
            return -1;
        }
        lo = (int64_t)ext[0];
        hi = -(int64_t)ext[1];
    }
    /* exact sums of (x - lo) and (x - lo)^2, row by row in 128 bits */
    unsigned __int128 s1 = 0, s2 = 0;
    uint64_t steps = 0;
#pragma omp parallel
    {
        unsigned __int128 a1 = 0, a2 = 0;
        uint64_t st = 0;
#pragma omp for schedule(static)
        for (int i = first; i < first + rows; i++) {
            for (int j = 0; j < n; j++) {
                uint64_t d = (uint64_t)((int64_t)x[(size_t)i * n + j] - lo);
                a1 += d;
                a2 += (unsigned __int128)d * d;
                if (s->model.kind == KMC_SOS) {
                    int32_t v[9];
                    kmc_gather_periodic(stored, n, 4, x, i, j, v);
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
    if (counts && s->model.kind == KMC_TABLE) {
        memset(counts, 0, sizeof *counts * (size_t)s->model.S);
        for (size_t i = 0; i < Nown; i++)
            counts[own[i]]++;
    }
    free(x);
    if (split && observe_sums(s, &s1, &s2, &steps, counts))
        return -1;
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
    return 0;
}
