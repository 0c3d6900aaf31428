/* unit/kmc-warp — the GPU step kernel (cuda/kmc_step.cuh), compiled here by the host C++
 * compiler and run on the CPU lane by lane (tests/unit/warp_emu.h: every lane a fiber, every warp
 * intrinsic a meeting of the lanes its mask names, whose misuse fails the test; the block's
 * shared memory garbage between guard words). Plugged in as the "gpu" backend, the kernel must
 * give the serial waiting-time trajectory bit for bit and the CPU backend's steps, so the warp
 * logic (lane ownership, the reductions, tie breaking, the owner's broadcast of a chosen event)
 * is tested on machines without a GPU. The kernels of a split system (decompose = true) run on
 * slabs of tile rows as on 1 to 4 ranks, the halo rows and strips passed between them in
 * memory, against the whole lattice step by step. The checksum kernel and the transfers are
 * not: tests/gpu covers those (tests/gpu/kmc_mpi.sh the split ones). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "core/error.h"
#include "kmc/kmc.h"
}
#include "check.h"

#include "warp_emu.h"

#define KMC_SHARED_DOUBLES(name) double *name = W.smem
#include "kmc_step.cuh"

/* A grid of the kernel body(ctx) (warp_emu.h); a misuse of a warp intrinsic ends the test. */
static void launch(unsigned blocks, unsigned threads, size_t smem, void (*body)(void *), void *ctx)
{
    if (emu_launch(blocks, threads, smem, body, ctx)) {
        printf("FAIL unit/kmc-warp/warp: %s\n", W.fail);
        exit(1);
    }
}

/* ---------- the kernel as a backend ---------- */

struct emu_impl {
    kmc_gpu_buffers b;
    kmc_tile_out *out;
    int ntiles;
    kmc_repair rp; /* the repair's list and round (kmc_kernel.h) */
};

struct step_args {
    kmc_system *s;
    emu_impl *im;
};

static void step_body(void *p)
{
    step_args *a = static_cast<step_args *>(p);
    const kmc_slab whole = {0, 0};
    step_kernel(a->s->geom, a->s->model, a->s->seed, a->im->b, &a->s->ctrl, a->im->out, a->im->ntiles,
                whole);
}

static void repair_body(void *p)
{
    step_args *a = static_cast<step_args *>(p);
    const kmc_slab whole = {0, 0};
    repair_kernel(a->s->geom_repair, a->s->model, a->s->seed, a->im->b, &a->s->ctrl, a->im->out, whole,
                  &a->im->rp);
}

static void settle_body(void *p)
{
    step_args *a = static_cast<step_args *>(p);
    settle_kernel(a->im->b, &a->s->ctrl, a->im->ntiles);
}

static int emu_create(kmc_system *s)
{
    emu_impl *im = static_cast<emu_impl *>(calloc(1, sizeof(emu_impl)));
    s->impl = im;
    size_t N = (size_t)s->m * (size_t)s->n;
    im->ntiles = s->geom.ntr * s->geom.ntc;
    for (int k = 0; k < 2; k++) {
        im->b.x[k] = static_cast<int32_t *>(calloc(N, 4));
        im->b.tau[k] = static_cast<double *>(calloc(N, 8));
        im->b.cnt[k] = static_cast<uint32_t *>(calloc(N, 4));
        im->b.tmin[k] = static_cast<double *>(calloc((size_t)im->ntiles, 8));
        im->b.where[k] = static_cast<uint8_t *>(calloc((size_t)im->ntiles, 1));
    }
    im->out = static_cast<kmc_tile_out *>(calloc((size_t)im->ntiles, sizeof(kmc_tile_out)));
    im->rp.tiles = static_cast<int *>(calloc((size_t)im->ntiles, sizeof(int)));
    im->rp.stamp = static_cast<uint32_t *>(calloc((size_t)im->ntiles, sizeof(uint32_t)));
    return 0;
}

static void emu_destroy(kmc_system *s)
{
    emu_impl *im = static_cast<emu_impl *>(s->impl);
    for (int k = 0; k < 2; k++) {
        free(im->b.x[k]);
        free(im->b.tau[k]);
        free(im->b.cnt[k]);
        free(im->b.tmin[k]);
        free(im->b.where[k]);
    }
    free(im->out);
    free(im->rp.tiles);
    free(im->rp.stamp);
    free(im);
    s->impl = NULL;
}

static int emu_set_state(kmc_system *s, const int32_t *x, const double *tau, const uint32_t *cnt)
{
    emu_impl *im = static_cast<emu_impl *>(s->impl);
    int f = (int)s->ctrl.front;
    if (x)
        kmc_to_tiles(&s->geom, x, im->b.x[f], 4);
    if (tau) {
        kmc_to_tiles(&s->geom, tau, im->b.tau[f], 8);
        kmc_tile_minima(&s->geom, im->b.tau[f], im->b.tmin[f]);
    }
    if (cnt)
        kmc_to_tiles(&s->geom, cnt, im->b.cnt[f], 4);
    return 0;
}

static int emu_get_state(kmc_system *s, int32_t *x, double *tau, uint32_t *cnt)
{
    emu_impl *im = static_cast<emu_impl *>(s->impl);
    int f = (int)s->ctrl.front;
    if (x)
        kmc_from_tiles(&s->geom, im->b.x[f], x, 4);
    if (tau)
        kmc_from_tiles(&s->geom, im->b.tau[f], tau, 8);
    if (cnt)
        kmc_from_tiles(&s->geom, im->b.cnt[f], cnt, 4);
    return 0;
}

/* Tile X joins the step's repair list unless it is there already (as cuda/kmc.cu's list_tile). */
static void emu_list(kmc_repair *rp, int X, uint32_t stamp)
{
    if (rp->stamp[X] != stamp) {
        rp->stamp[X] = stamp;
        rp->tiles[rp->listed++] = X;
    }
}

/* the step and repair kernels emulated; the checksum comparison, the rounds of the repair and
 * the decision as in validate_kernel */
static int emu_advance(kmc_system *s, uint64_t budget)
{
    emu_impl *im = static_cast<emu_impl *>(s->impl);
    const unsigned tpb = (unsigned)s->tiles_per_block;
    const unsigned blocks = (unsigned)((im->ntiles + (int)tpb - 1) / (int)tpb);
    step_args a = {s, im};
    /* as gpu_advance: every tile in the front buffer, and back there after the batch */
    memset(im->b.where[(s->ctrl.accepted + s->ctrl.rejected + 1) & 1], (int)s->ctrl.front,
           (size_t)im->ntiles);
    for (uint64_t k = 0; k < budget && !s->ctrl.done; k++) {
        launch(blocks, 32 * tpb, (size_t)tpb * (size_t)s->geom.cells * 16, step_body, &a);
        const uint32_t stamp = kmc_repair_stamp(s->ctrl.accepted + s->ctrl.rejected);
        kmc_repair *rp = &im->rp;
        uint64_t ev, sim;
        uint32_t bad, ovf;
        for (int round = 0;; round++) {
            ev = sim = 0;
            bad = ovf = 0;
            for (int T = 0; T < im->ntiles; T++) {
                int down, right;
                const int d = kmc_tile_mismatch(&s->geom, im->out, T, &down, &right);
                bad |= d != 0;
                if (d && s->ctrl.repair) {
                    emu_list(rp, T, stamp);
                    if (d & 1)
                        emu_list(rp, down, stamp);
                    if (d & 2)
                        emu_list(rp, right, stamp);
                }
                ev += im->out[T].events;
                sim += im->out[T].sim;
                ovf |= im->out[T].overflow;
            }
            if (!kmc_repair_due(s->ctrl.repair, bad != 0, round))
                break;
            rp->from = rp->to;
            rp->to = rp->listed;
            rp->go = 1;
            /* a grid smaller than the list: the warps go round it */
            launch(2, 64, 2 * (size_t)s->geom_repair.cells * 16, repair_body, &a);
        }
        s->ctrl.repaired += rp->to;
        kmc_ctrl_decide(&s->ctrl, ev, sim + rp->replaced, bad, ovf);
        rp->listed = rp->from = rp->to = rp->go = 0;
        rp->replaced = 0;
    }
    launch(blocks, 32 * tpb, 0, settle_body, &a);
    return 0;
}

static int emu_min_tau(kmc_system *s, double *out)
{
    emu_impl *im = static_cast<emu_impl *>(s->impl);
    double m = INFINITY;
    for (int T = 0; T < im->ntiles; T++)
        m = im->b.tmin[s->ctrl.front][T] < m ? im->b.tmin[s->ctrl.front][T] : m;
    *out = m;
    return 0;
}

static int emu_sync(kmc_system *) { return 0; }

static const kmc_backend emu_backend = {"emulated-gpu", emu_create, emu_destroy, emu_set_state,
                                        emu_get_state, emu_advance, emu_min_tau, emu_sync, NULL,
                                        NULL};

/* ---------- the checks ---------- */

struct model_spec {
    int kind, S, nbh;
    double bond;
    double (*rate)(int x, const int *nb, int k, int *to); /* user models: event k's rate */
};

static double three_state(int x, const int *nb, int k, int *to)
{
    int n[3] = {0, 0, 0};
    for (int q = 0; q < 8; q++)
        n[nb[q]]++;
    int y = k == 0 ? (x + 1) % 3 : (x + 2) % 3;
    *to = y;
    return exp(0.3 * (n[y] - n[x]));
}

static double glauber(int x, const int *nb, int k, int *to)
{
    if (k > 0)
        return 0;
    int h = 0;
    for (int q = 0; q < 4; q++)
        h += 2 * nb[q] - 1;
    *to = 1 - x;
    return 1.0 / (1.0 + exp(0.4 * 2 * (2 * x - 1) * h));
}

static int with_repair; /* the systems make() makes step mismatched tiles again */

static kmc_system *make(const model_spec *ms, int m, int n, int halo, int tpb, kmc_algorithm alg,
                        carlo_device_kind dev, uint64_t seed)
{
    kmc_params p;
    memset(&p, 0, sizeof p);
    p.repair = with_repair;
    p.m = m;
    p.n = n;
    p.algorithm = alg;
    p.device = dev;
    p.seed = seed;
    p.kind = ms->kind;
    p.bond = ms->bond;
    p.k2 = 1;
    p.halo = halo;
    p.tiles_per_block = tpb;
    p.grow_initial = 10;
    p.grow = 1.03;
    p.shrink = 0.5;
    static double rates[1 << 16];
    static int32_t targets[1 << 16];
    static uint32_t counts[1 << 16];
    if (ms->kind == KMC_TABLE) {
        p.S = ms->S;
        p.nbh = ms->nbh;
        uint32_t nc = 1, e = 0;
        for (int k = 0; k <= ms->nbh; k++)
            nc *= (uint32_t)ms->S;
        for (uint32_t cfg = 0; cfg < nc; cfg++) {
            int v[9], rest = (int)cfg;
            for (int k = 0; k <= ms->nbh; k++) {
                v[k] = rest % ms->S;
                rest /= ms->S;
            }
            counts[cfg] = 0;
            for (int k = 0; k < 2; k++) {
                int to;
                double r = ms->rate(v[0], v + 1, k, &to);
                if (r > 0) {
                    rates[e] = r;
                    targets[e++] = to;
                    counts[cfg]++;
                }
            }
        }
        p.rates = rates;
        p.targets = targets;
        p.counts = counts;
        p.nevents = e;
    }
    kmc_system *s = kmc_create(&p);
    if (!s)
        printf("kmc_create: %s\n", carlo_errmsg());
    return s;
}

/* carlo_run for a time or (time 0) a number of events */
static int run_to(kmc_system *s, double time, uint64_t events)
{
    carlo_run_opts o;
    memset(&o, 0, sizeof o);
    o.clock = time > 0 ? CARLO_CLOCK_TIME : CARLO_CLOCK_EVENTS;
    o.time = time;
    o.n = events;
    o.quiet = 1;
    carlo_run_result r;
    return carlo_run(&s->sys, &o, &r);
}

/* sites whose state, clock or draw counter differ */
static long differ(kmc_system *a, kmc_system *b)
{
    size_t N = (size_t)a->m * (size_t)a->n;
    int32_t *xa = new int32_t[N], *xb = new int32_t[N];
    double *ta = new double[N], *tb = new double[N];
    uint32_t *ca = new uint32_t[N], *cb = new uint32_t[N];
    a->be->get_state(a, xa, ta, ca);
    b->be->get_state(b, xb, tb, cb);
    long bad = 0;
    for (size_t i = 0; i < N; i++)
        bad += xa[i] != xb[i] || ta[i] != tb[i] || ca[i] != cb[i];
    delete[] xa;
    delete[] xb;
    delete[] ta;
    delete[] tb;
    delete[] ca;
    delete[] cb;
    return bad;
}

static void compare(const char *name, const model_spec *ms, int m, int n, int halo, int tpb,
                    uint64_t events)
{
    kmc_system *gpu = make(ms, m, n, halo, tpb, KMC_TILED, CARLO_GPU, 41);
    kmc_system *cpu = make(ms, m, n, halo, 1, KMC_TILED, CARLO_CPU, 41);
    kmc_system *ser = make(ms, m, n, halo, 1, KMC_SERIAL, CARLO_CPU, 41);
    if (!gpu || !cpu || !ser) {
        CHECK(name, 0, "could not create the systems");
        return;
    }
    int rc = run_to(gpu, 0, events) || run_to(cpu, 0, events) || run_to(ser, gpu->ctrl.t, 0);
    long d_ser = differ(gpu, ser), d_cpu = differ(gpu, cpu);
    const kmc_ctrl *g = &gpu->ctrl, *c = &cpu->ctrl;
    CHECK(name, rc == 0 && d_ser == 0 && d_cpu == 0 && g->t == ser->ctrl.t && g->events == ser->ctrl.events &&
                    g->accepted == c->accepted && g->rejected == c->rejected && g->simulated == c->simulated &&
                    g->rejected > 0 && g->repaired == c->repaired && (g->repaired > 0) == (with_repair != 0),
          "rc %d; %ld sites differ from serial, %ld from cpu; steps %llu/%llu vs %llu/%llu, repaired %llu "
          "vs %llu", rc, d_ser, d_cpu, (unsigned long long)g->accepted, (unsigned long long)g->rejected,
          (unsigned long long)c->accepted, (unsigned long long)c->rejected,
          (unsigned long long)g->repaired, (unsigned long long)c->repaired);
    kmc_destroy(gpu);
    kmc_destroy(cpu);
    kmc_destroy(ser);
}

/* ---------- the split kernels: slabs of tile rows, as cuda/kmc.cu runs them on ranks ---------- */

/* One emulated rank: its tile rows with a halo tile row above and below, its exchange rows. */
struct emu_slab {
    kmc_gpu_buffers b;
    kmc_tile_out *out;
    kmc_slab sl;
    int rows, stored;
    uint8_t *send, *recv;
};

struct slab_args {
    const kmc_system *s;
    emu_slab *e;
    kmc_ctrl *ctrl;
    const uint8_t *where; /* the map the step wrote (packing) */
};

static void slab_step_body(void *p)
{
    slab_args *a = static_cast<slab_args *>(p);
    step_kernel(a->s->geom, a->s->model, a->s->seed, a->e->b, a->ctrl, a->e->out,
                a->e->rows * a->s->geom.ntc, a->e->sl);
}

static void slab_pack_body(void *p)
{
    slab_args *a = static_cast<slab_args *>(p);
    halo_pack_kernel(a->s->geom, a->e->b, a->where, a->e->rows, a->e->send,
                     a->e->send + kmc_row_bytes(a->s->geom));
}

static void slab_unpack_body(void *p)
{
    slab_args *a = static_cast<slab_args *>(p);
    halo_unpack_kernel(a->s->geom, a->e->b, a->e->rows, a->e->recv,
                       a->e->recv + kmc_row_bytes(a->s->geom));
}

static void slab_settle_body(void *p)
{
    slab_args *a = static_cast<slab_args *>(p);
    settle_kernel(a->e->b, a->ctrl, a->e->stored);
}

/* R slabs of system w's lattice (its accepted state), buffer `front`. */
static emu_slab *slabs_make(kmc_system *w, int R)
{
    const kmc_geom *g = &w->geom;
    const size_t N = (size_t)w->m * (size_t)w->n;
    int32_t *x = new int32_t[N];
    double *tau = new double[N];
    uint32_t *cnt = new uint32_t[N];
    w->be->get_state(w, x, tau, cnt);
    emu_slab *e = new emu_slab[R];
    const int f = (int)w->ctrl.front;
    for (int r = 0; r < R; r++) {
        emu_slab *q = &e[r];
        const int row0 = r * g->ntr / R;
        q->rows = (r + 1) * g->ntr / R - row0;
        q->stored = (q->rows + 2) * g->ntc;
        q->sl.first = 1;
        q->sl.row0 = row0;
        const size_t sites = (size_t)q->stored * 64;
        for (int k = 0; k < 2; k++) {
            q->b.x[k] = static_cast<int32_t *>(calloc(sites, 4));
            q->b.tau[k] = static_cast<double *>(calloc(sites, 8));
            q->b.cnt[k] = static_cast<uint32_t *>(calloc(sites, 4));
            q->b.tmin[k] = static_cast<double *>(calloc((size_t)q->stored, 8));
            q->b.where[k] = static_cast<uint8_t *>(calloc((size_t)q->stored, 1));
        }
        q->out = static_cast<kmc_tile_out *>(calloc((size_t)q->stored, sizeof(kmc_tile_out)));
        q->send = static_cast<uint8_t *>(calloc(2, kmc_row_bytes(*g)));
        q->recv = static_cast<uint8_t *>(calloc(2, kmc_row_bytes(*g)));
        for (int lr = 0; lr < (q->rows + 2) * KMC_TILE; lr++) {
            const int gr = kmc_wrap((row0 - 1) * KMC_TILE + lr, w->m);
            for (int j = 0; j < w->n; j++) {
                const size_t src = (size_t)gr * (size_t)w->n + (size_t)j;
                const uint64_t dst = kmc_tm_index(g, lr, j);
                q->b.x[f][dst] = x[src];
                q->b.tau[f][dst] = tau[src];
                q->b.cnt[f][dst] = cnt[src];
            }
        }
        for (int T = 0; T < q->stored; T++) {
            double m = INFINITY;
            for (int k = 0; k < 64; k++)
                m = q->b.tau[f][T * 64 + k] < m ? q->b.tau[f][T * 64 + k] : m;
            q->b.tmin[f][T] = m;
        }
    }
    delete[] x;
    delete[] tau;
    delete[] cnt;
    return e;
}

static void slabs_free(emu_slab *e, int R)
{
    for (int r = 0; r < R; r++) {
        for (int k = 0; k < 2; k++) {
            free(e[r].b.x[k]);
            free(e[r].b.tau[k]);
            free(e[r].b.cnt[k]);
            free(e[r].b.tmin[k]);
            free(e[r].b.where[k]);
        }
        free(e[r].out);
        free(e[r].send);
        free(e[r].recv);
    }
    delete[] e;
}

/* `steps` adaptive steps of R slabs, as cuda/kmc.cu's split_step runs them on R ranks: the
 * strips and the halo rows passed between neighbours, the sums over all slabs decided once. */
static void slabs_advance(const kmc_system *s, emu_slab *e, int R, kmc_ctrl *c, int steps)
{
    const kmc_geom *g = &s->geom;
    const int ntc = g->ntc, tpb = s->tiles_per_block;
    for (int r = 0; r < R; r++) { /* as gpu_advance: a slab's tiles all in front, both maps */
        memset(e[r].b.where[0], (int)c->front, (size_t)e[r].stored);
        memset(e[r].b.where[1], (int)c->front, (size_t)e[r].stored);
    }
    const size_t row = kmc_row_bytes(*g);
    for (int k = 0; k < steps && !c->done; k++) {
        const uint64_t decided = c->accepted + c->rejected;
        for (int r = 0; r < R; r++) { /* the step, then its edge rows packed (before the verdict) */
            slab_args a = {s, &e[r], c, e[r].b.where[decided & 1]};
            const int own = e[r].rows * ntc;
            launch((unsigned)((own + tpb - 1) / tpb), 32u * (unsigned)tpb,
                       (size_t)tpb * (size_t)g->cells * 16, slab_step_body, &a);
            launch((unsigned)((2 * ntc * 64 + 255) / 256), 256, 0, slab_pack_body, &a);
        }
        for (int r = 0; r < R; r++) { /* up strips of the first own row to the slab above */
            emu_slab *up = &e[(r + R - 1) % R];
            for (int tj = 0; tj < ntc; tj++)
                up->out[(up->rows + 1) * ntc + tj].chk[KMC_EDGE_UP] = e[r].out[ntc + tj].chk[KMC_EDGE_UP];
        }
        uint64_t ev = 0, sim = 0;
        uint32_t bad = 0, ovf = 0;
        for (int r = 0; r < R; r++)
            for (int T = ntc; T < (e[r].rows + 1) * ntc; T++) {
                int down, right;
                bad |= kmc_slab_mismatch(g, e[r].out, T, &down, &right) != 0;
                ev += e[r].out[T].events;
                sim += e[r].out[T].sim;
                ovf |= e[r].out[T].overflow;
            }
        kmc_ctrl_decide(c, ev, sim, bad, ovf);
        if (!c->last_accepted)
            continue;
        for (int r = 0; r < R; r++) {
            /* first own row -> the bottom halo above; last own row -> the top halo below */
            memcpy(e[(r + R - 1) % R].recv, e[r].send, row);
            memcpy(e[(r + 1) % R].recv + row, e[r].send + row, row);
        }
        for (int r = 0; r < R; r++) {
            slab_args a = {s, &e[r], c, NULL};
            launch((unsigned)((2 * ntc + 7) / 8), 256, 0, slab_unpack_body, &a);
        }
    }
    for (int r = 0; r < R; r++) {
        slab_args a = {s, &e[r], c, NULL};
        launch((unsigned)((e[r].stored + tpb - 1) / tpb), 32u * (unsigned)tpb, 0, slab_settle_body, &a);
    }
}

/* Sites of the slabs' own rows (buffer front) that differ from the whole system's. */
static long slabs_differ(kmc_system *w, emu_slab *e, int R, int front)
{
    const kmc_geom *g = &w->geom;
    const size_t N = (size_t)w->m * (size_t)w->n;
    int32_t *x = new int32_t[N];
    double *tau = new double[N];
    uint32_t *cnt = new uint32_t[N];
    w->be->get_state(w, x, tau, cnt);
    long bad = 0;
    for (int r = 0; r < R; r++)
        for (int lr = KMC_TILE; lr < (e[r].rows + 1) * KMC_TILE; lr++) {
            const int gr = (e[r].sl.row0 - 1) * KMC_TILE + lr;
            for (int j = 0; j < w->n; j++) {
                const size_t i = (size_t)gr * (size_t)w->n + (size_t)j;
                const uint64_t d = kmc_tm_index(g, lr, j);
                bad += e[r].b.x[front][d] != x[i] || e[r].b.tau[front][d] != tau[i] ||
                       e[r].b.cnt[front][d] != cnt[i];
            }
        }
    delete[] x;
    delete[] tau;
    delete[] cnt;
    return bad;
}

/* The split kernels on R emulated ranks against the whole lattice, step after step: after
 * batches of 1, 3 and 7 steps (twice) the slabs hold the whole system's state and counters. */
static void split_compare(const char *name, const model_spec *ms, int m, int n, int halo, int R)
{
    kmc_system *w = make(ms, m, n, halo, 2, KMC_TILED, CARLO_GPU, 17);
    if (!w) {
        CHECK(name, 0, "could not create the system");
        return;
    }
    int accepted = 0, matched = 0;
    uint64_t events = 0;
    int rc = kmc_substep(w, &accepted, &matched, &events); /* dt set from the earliest clock */
    emu_slab *e = slabs_make(w, R);
    kmc_ctrl c = w->ctrl;
    long bad = 0;
    const int batches[3] = {1, 3, 7};
    for (int round = 0; round < 2 && rc == 0; round++)
        for (int k = 0; k < 3 && rc == 0; k++) {
            c.mode = KMC_MODE_ADAPTIVE;
            c.t_stop = INFINITY;
            c.ev_stop = UINT64_MAX;
            c.done = 0;
            kmc_ctrl_plan(&c);
            slabs_advance(w, e, R, &c, batches[k]);
            for (int q = 0; q < batches[k] && rc == 0; q++)
                rc = kmc_substep(w, &accepted, &matched, &events);
            bad += slabs_differ(w, e, R, (int)c.front);
        }
    const kmc_ctrl *wc = &w->ctrl;
    CHECK(name, rc == 0 && bad == 0 && c.t == wc->t && c.events == wc->events &&
                    c.accepted == wc->accepted && c.rejected == wc->rejected &&
                    c.simulated == wc->simulated && c.front == wc->front && wc->rejected > 0,
          "rc %d; %ld site states differ; steps %llu/%llu vs %llu/%llu, events %llu vs %llu", rc, bad,
          (unsigned long long)c.accepted, (unsigned long long)c.rejected,
          (unsigned long long)wc->accepted, (unsigned long long)wc->rejected,
          (unsigned long long)c.events, (unsigned long long)wc->events);
    slabs_free(e, R);
    kmc_destroy(w);
}

int main(void)
{
    kmc_gpu_backend = &emu_backend;
    model_spec sos1 = {KMC_SOS, 0, 4, 1.0, NULL};
    model_spec sos3 = {KMC_SOS, 0, 4, 3.0, NULL};
    model_spec three = {KMC_TABLE, 3, 8, 0, three_state};
    model_spec ising = {KMC_TABLE, 2, 4, 0, glauber};
    compare("unit/kmc-warp/sos-phi1", &sos1, 16, 16, 3, 2, 1500);
    compare("unit/kmc-warp/sos-phi3-halo7", &sos3, 16, 16, 7, 1, 600);
    compare("unit/kmc-warp/three-state-moore", &three, 16, 16, 2, 4, 1000);
    compare("unit/kmc-warp/glauber-halo1", &ising, 16, 24, 1, 3, 1000);
    compare("unit/kmc-warp/copies-8x16", &sos1, 8, 16, 5, 1, 600);
    /* the repair: lists longer than the grid, rounds, the results replaced in place */
    with_repair = 1;
    compare("unit/kmc-warp/sos-phi1-repair", &sos1, 16, 16, 3, 2, 3000);
    compare("unit/kmc-warp/three-state-moore-repair", &three, 16, 24, 2, 4, 2000);
    with_repair = 0;
    split_compare("unit/kmc-warp/split-1-rank", &sos1, 16, 16, 3, 1);
    split_compare("unit/kmc-warp/split-2-ranks", &sos1, 24, 16, 3, 2);
    split_compare("unit/kmc-warp/split-3-ranks-moore", &three, 32, 16, 2, 3);
    split_compare("unit/kmc-warp/split-4-ranks-halo7", &sos3, 32, 24, 7, 4);

    /* a step forced past the checksums: the same verdict and the same wrong state */
    kmc_system *gpu = make(&sos1, 16, 16, 2, 1, KMC_TILED, CARLO_GPU, 7);
    kmc_system *cpu = make(&sos1, 16, 16, 2, 1, KMC_TILED, CARLO_CPU, 7);
    int ga, gm, ca, cm;
    uint64_t ge, ce;
    int rc = run_to(gpu, 0, 300) || run_to(cpu, 0, 300) ||
             kmc_try_step(gpu, 40 * gpu->ctrl.dt, 0, &ga, &gm, &ge) ||
             kmc_try_step(cpu, 40 * cpu->ctrl.dt, 0, &ca, &cm, &ce);
    int same_reject = rc == 0 && !ga && !gm && !ca && !cm && ge == ce;
    rc = kmc_try_step(gpu, 40 * gpu->ctrl.dt, 1, &ga, &gm, &ge) ||
         kmc_try_step(cpu, 40 * cpu->ctrl.dt, 1, &ca, &cm, &ce);
    CHECK("unit/kmc-warp/forced-step", same_reject && rc == 0 && ga && !gm && ca && !cm && ge == ce &&
                                           differ(gpu, cpu) == 0,
          "verdicts differ");
    kmc_destroy(gpu);
    kmc_destroy(cpu);
    return check_failed;
}
