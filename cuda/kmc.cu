/* kmc.cu — the GPU backend of lattice KMC (the "tiled" algorithm of kmc_kernel.h).
 * Algorithm 2: one warp per tile, its domain (states, clocks, draw counters) in shared
 * memory, the 32 lanes each keeping the earliest of their cells so that the earliest event
 * is three warp reductions away; the lanes holding the cells an event touches redraw them
 * side by side. Algorithm 1 runs on the device as well: a second kernel compares the edge
 * checksums and its last block accepts or rejects the step and plans the next (the same
 * kmc_ctrl_decide as the CPU), so a batch of steps is queued without a round trip. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "core/error.h"
#include "kmc/kmc.h"
}
#include "check.h"

namespace {

const unsigned FULL = 0xffffffffu;
const int VALIDATE_THREADS = 256;
const uint64_t BATCH_MAX = 256; /* steps queued per call: a call ends within a few no-op steps */

struct kmc_acc {
    unsigned long long events, sim;
    unsigned int mismatch, overflow, ticket, pad;
};

struct buffers {
    int32_t *x[2];
    double *tau[2];
    uint32_t *cnt[2];
    double *tmin[2]; /* the earliest clock of each tile */
};

/* The smallest of the lanes' non-negative doubles (their bit patterns order like them). */
__device__ __forceinline__ double warp_min(double v)
{
    const unsigned long long b = (unsigned long long)__double_as_longlong(v);
    const unsigned hi = __reduce_min_sync(FULL, (unsigned)(b >> 32));
    const unsigned lo = __reduce_min_sync(FULL, (unsigned)(b >> 32) == hi ? (unsigned)b : 0xffffffffu);
    return __longlong_as_double((long long)(((unsigned long long)hi << 32) | lo));
}

struct gpu_impl {
    buffers b;
    kmc_tile_out *out;
    kmc_ctrl *ctrl;
    kmc_acc *acc;
    unsigned long long *minbits;
    kmc_config *configs;
    kmc_event *events;
    kmc_model dmodel;   /* the model with device table pointers */
    void *host;         /* staging, 8 bytes per site */
    size_t smem;        /* dynamic shared memory of a step block */
    int ntiles;
};

gpu_impl *impl(kmc_system *s) { return static_cast<gpu_impl *>(s->impl); }

/* ---------- Algorithm 2: one step of every tile ---------- */

__global__ void __launch_bounds__(256)
step_kernel(const kmc_geom g, const kmc_model md, const uint64_t seed, const buffers b,
            const kmc_ctrl *__restrict__ ctrl, kmc_tile_out *__restrict__ out, const int ntiles)
{
    if (ctrl->done)
        return;
    const int front = (int)ctrl->front;
    const double t_end = ctrl->t_end;
    const int lane = (int)(threadIdx.x & 31u), wib = (int)(threadIdx.x >> 5);
    const int T = (int)blockIdx.x * (int)(blockDim.x >> 5) + wib;
    if (T >= ntiles)
        return; /* whole warps only; nothing below synchronises the block */
    const int ti = T / g.ntc, tj = T - ti * g.ntc, h1 = g.halo + 1, P = g.P;
    /* the buffers (selected by value: a kernel parameter indexed at run time would go to
     * local memory) */
    const int32_t *__restrict__ X = front ? b.x[1] : b.x[0];
    const double *__restrict__ TAU = front ? b.tau[1] : b.tau[0];
    const uint32_t *__restrict__ CNT = front ? b.cnt[1] : b.cnt[0];
    const double *__restrict__ TMIN = front ? b.tmin[1] : b.tmin[0];
    int32_t *__restrict__ XD = front ? b.x[0] : b.x[1];
    double *__restrict__ TAUD = front ? b.tau[0] : b.tau[1];
    uint32_t *__restrict__ CNTD = front ? b.cnt[0] : b.cnt[1];
    double *__restrict__ TMIND = front ? b.tmin[0] : b.tmin[1];
    /* a tile whose 3 x 3 tiles have no clock before t_end has no event at all: copy it */
    const double near = warp_min(lane < 9 ? TMIN[kmc_tile_near(&g, ti, tj, lane / 3 - 1, lane % 3 - 1)]
                                          : INFINITY);
    if (!(near < t_end)) {
        for (int q = lane; q < 64; q += 32) {
            const uint64_t i = ((uint64_t)T << 6) + (uint64_t)q;
            XD[i] = X[i];
            TAUD[i] = TAU[i];
            CNTD[i] = CNT[i];
        }
        if (lane == 0) {
            TMIND[T] = TMIN[T];
            kmc_tile_out o;
            memset(&o, 0, sizeof o);
            out[T] = o;
        }
        return;
    }
    extern __shared__ double smem[];
    double *tau = smem + (size_t)wib * 2 * (size_t)g.cells;
    int32_t *x = reinterpret_cast<int32_t *>(tau + g.cells);
    uint32_t *cnt = reinterpret_cast<uint32_t *>(x + g.cells);

    /* lane l loads the cells it owns (d % 32 == l) */
    for (int d = lane; d < g.cells; d += 32) {
        const int r = d / P, c = d - r * P;
        if (c >= g.D) {
            x[d] = 0;
            tau[d] = INFINITY;
            cnt[d] = 0;
            continue;
        }
        const uint64_t i = kmc_tm_index(&g, kmc_wrap(ti * KMC_TILE - h1 + r, g.m),
                                        kmc_wrap(tj * KMC_TILE - h1 + c, g.n));
        x[d] = X[i];
        tau[d] = kmc_dynamic(&g, r, c) ? TAU[i] : INFINITY;
        cnt[d] = CNT[i];
    }
    __syncwarp();
    double bt;
    int bd;
    kmc_lane_scan(&g, ti, tj, tau, lane, &bt, &bd);
    uint64_t chk[4] = {0, 0, 0, 0}, central = 0, sim = 0;
    uint32_t overflow = 0;

    for (;;) {
        /* the earliest (tau, site, cell) of the warp: clocks are >= 0, so their bit patterns
         * order like the numbers */
        const unsigned long long bits = (unsigned long long)__double_as_longlong(bt);
        const unsigned hi = (unsigned)(bits >> 32), lo = (unsigned)bits;
        const unsigned mhi = __reduce_min_sync(FULL, hi);
        const unsigned mlo = __reduce_min_sync(FULL, hi == mhi ? lo : 0xffffffffu);
        const double tmin = __longlong_as_double((long long)(((unsigned long long)mhi << 32) | mlo));
        if (!(tmin < t_end))
            break;
        const bool tie = hi == mhi && lo == mlo;
        const unsigned ballot = __ballot_sync(FULL, tie);
        int dmin;
        if ((ballot & (ballot - 1u)) == 0u) {
            dmin = __shfl_sync(FULL, bd, __ffs((int)ballot) - 1);
        } else { /* equal times: the smaller site, then the smaller cell (copies) */
            const unsigned site = tie ? kmc_site_of(&g, ti, tj, bd) : 0xffffffffu;
            const unsigned ms = __reduce_min_sync(FULL, site);
            dmin = (int)__reduce_min_sync(FULL, (tie && site == ms) ? (unsigned)bd : 0xffffffffu);
        }

        /* the event at dmin (every lane computes the same) */
        const int rmin = dmin / P, cmin = dmin - rmin * P;
        int32_t v[9];
        const int32_t xo = x[dmin];
        kmc_gather(&g, x, dmin, v);
        const uint32_t cfg0 = kmc_config_index(&md, v);
        const uint32_t site0 = kmc_site_rc(&g, ti, tj, rmin, cmin);
        const uint32_t kf = cnt[dmin] + 1u;
        const int owner = dmin & 31;
        carlo_u32x4 fd = {{0u, 0u, 0u, 0u}};
        bool have_fd = false;
        int32_t xn = 0;
        if (kmc_needs_choice(&md, cfg0)) { /* the owner draws, then tells the others */
            if (lane == owner) {
                fd = kmc_clock_draw(seed, site0, kf);
                have_fd = true;
                xn = kmc_apply(&md, cfg0, xo, kmc_choice_u(fd));
            }
            xn = __shfl_sync(FULL, xn, owner);
        } else {
            xn = kmc_apply(&md, cfg0, xo, 0.0);
        }
        __syncwarp();
        if (lane == owner) {
            x[dmin] = xn;
            cnt[dmin] = kf;
            overflow |= kf == 0u;
        }
        __syncwarp();

        /* the cells it touches, each on its own lane */
        int slot = 0;
        const int a = kmc_lane_affected(&g, dmin, lane, &slot);
        if (a >= 0) {
            const int r = rmin + kmc_slot_dr(slot), c = cmin + kmc_slot_dc(slot);
            if (kmc_dynamic(&g, r, c)) {
                int32_t w[9];
                kmc_gather(&g, x, a, w);
                const uint32_t cn = kmc_config_index(&md, w);
                const double An = kmc_total_rate(&md, cn);
                bool redraw = slot == 0;
                if (!redraw) {
                    kmc_set_slot(w, kmc_opposite(slot), xo);
                    redraw = kmc_total_rate(&md, kmc_config_index(&md, w)) != An;
                }
                if (redraw) {
                    uint32_t k = kf;
                    if (slot != 0) {
                        k = cnt[a] + 1u;
                        cnt[a] = k;
                        overflow |= k == 0u;
                    }
                    const carlo_u32x4 draw =
                        have_fd ? fd : kmc_clock_draw(seed, kmc_site_rc(&g, ti, tj, r, c), k);
                    const double tn = kmc_clock(tmin, draw, An, kmc_inv_rate(&md, cn));
                    tau[a] = tn;
                    kmc_lane_offer(&g, ti, tj, tau, lane, a, tn, &bt, &bd);
                }
            }
        }
        kmc_account(&g, rmin, cmin, tmin, site0, xn, chk, &central);
        sim++;
        __syncwarp();
    }

    /* keep the tile */
    __syncwarp();
    double tm = INFINITY;
    for (int q = lane; q < 64; q += 32) {
        const int d = ((q >> 3) + h1) * P + (q & 7) + h1;
        const uint64_t i = ((uint64_t)T << 6) + (uint64_t)q;
        XD[i] = x[d];
        TAUD[i] = tau[d];
        CNTD[i] = cnt[d];
        tm = tau[d] < tm ? tau[d] : tm;
    }
    tm = warp_min(tm);
    if (lane == 0)
        TMIND[T] = tm;
    const unsigned any_overflow = __any_sync(FULL, overflow != 0u);
    if (lane == 0) {
        kmc_tile_out o;
        o.chk[0] = chk[0];
        o.chk[1] = chk[1];
        o.chk[2] = chk[2];
        o.chk[3] = chk[3];
        o.events = central;
        o.sim = sim;
        o.overflow = any_overflow ? 1u : 0u;
        o.pad = 0;
        out[T] = o;
    }
}

/* ---------- Algorithm 1: compare the strips, decide, plan ---------- */

__global__ void __launch_bounds__(VALIDATE_THREADS)
validate_kernel(const kmc_geom g, const kmc_tile_out *__restrict__ out, kmc_ctrl *ctrl,
                kmc_acc *acc, const int ntiles)
{
    if (ctrl->done)
        return;
    const int T = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    unsigned long long ev = 0, sim = 0;
    int bad = 0, ovf = 0;
    if (T < ntiles) {
        bad = !kmc_tile_matches(&g, out, T);
        ev = out[T].events;
        sim = out[T].sim;
        ovf = out[T].overflow != 0u;
    }
    for (int o = 16; o > 0; o >>= 1) {
        ev += __shfl_down_sync(FULL, ev, o);
        sim += __shfl_down_sync(FULL, sim, o);
    }
    bad = __any_sync(FULL, bad);
    ovf = __any_sync(FULL, ovf);
    __shared__ unsigned long long s_ev[VALIDATE_THREADS / 32], s_sim[VALIDATE_THREADS / 32];
    __shared__ int s_bad[VALIDATE_THREADS / 32], s_ovf[VALIDATE_THREADS / 32];
    const int lane = (int)(threadIdx.x & 31u), w = (int)(threadIdx.x >> 5);
    if (lane == 0) {
        s_ev[w] = ev;
        s_sim[w] = sim;
        s_bad[w] = bad;
        s_ovf[w] = ovf;
    }
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    for (int k = 1; k < (int)(blockDim.x >> 5); k++) {
        ev += s_ev[k];
        sim += s_sim[k];
        bad |= s_bad[k];
        ovf |= s_ovf[k];
    }
    if (ev)
        atomicAdd(&acc->events, ev);
    if (sim)
        atomicAdd(&acc->sim, sim);
    if (bad)
        atomicOr(&acc->mismatch, 1u);
    if (ovf)
        atomicOr(&acc->overflow, 1u);
    __threadfence();
    if (atomicAdd(&acc->ticket, 1u) != gridDim.x - 1u)
        return;
    /* the last block: every other block's sums are in */
    __threadfence();
    const unsigned long long e = atomicExch(&acc->events, 0ull);
    const unsigned long long sm = atomicExch(&acc->sim, 0ull);
    const unsigned mm = atomicExch(&acc->mismatch, 0u);
    const unsigned of = atomicExch(&acc->overflow, 0u);
    atomicExch(&acc->ticket, 0u);
    kmc_ctrl_decide(ctrl, e, sm, mm, of);
}

__global__ void min_tau_kernel(const double *__restrict__ tau, const uint64_t n,
                               unsigned long long *minbits)
{
    unsigned long long best = 0x7ff0000000000000ull; /* +inf */
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        const unsigned long long b = (unsigned long long)__double_as_longlong(tau[i]);
        best = b < best ? b : best;
    }
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long other = __shfl_down_sync(FULL, best, o);
        best = other < best ? other : best;
    }
    if ((threadIdx.x & 31u) == 0)
        atomicMin(minbits, best);
}

/* ---------- the backend ---------- */

size_t sites(const kmc_system *s) { return (size_t)s->m * (size_t)s->n; }

int gpu_create(kmc_system *s)
{
    gpu_impl *g = static_cast<gpu_impl *>(carlo_calloc(1, sizeof(gpu_impl), "the KMC GPU backend"));
    if (!g)
        return -1;
    s->impl = g;
    const size_t N = sites(s);
    g->ntiles = s->geom.ntr * s->geom.ntc;
    for (int k = 0; k < 2; k++) {
        CK_MALLOC(&g->b.x[k], N * sizeof(int32_t), "the KMC states");
        CK_MALLOC(&g->b.tau[k], N * sizeof(double), "the KMC clocks");
        CK_MALLOC(&g->b.cnt[k], N * sizeof(uint32_t), "the KMC draw counters");
        CK_MALLOC(&g->b.tmin[k], (size_t)g->ntiles * sizeof(double), "the KMC tile minima");
    }
    CK_MALLOC(&g->out, (size_t)g->ntiles * sizeof(kmc_tile_out), "the KMC tile results");
    CK_MALLOC(&g->ctrl, sizeof(kmc_ctrl), "the KMC step control");
    CK_MALLOC(&g->acc, sizeof(kmc_acc), "the KMC step sums");
    CK(cudaMemset(g->acc, 0, sizeof(kmc_acc)));
    CK_MALLOC(&g->minbits, sizeof(unsigned long long), "a reduction");
    g->dmodel = s->model;
    if (s->model.kind == KMC_TABLE) {
        CK_MALLOC(&g->configs, sizeof(kmc_config) * s->nconfigs, "the KMC rate table");
        CK(cudaMemcpy(g->configs, s->configs, sizeof(kmc_config) * s->nconfigs, cudaMemcpyHostToDevice));
        size_t ne = s->nevents ? s->nevents : 1;
        CK_MALLOC(&g->events, sizeof(kmc_event) * ne, "the KMC event table");
        CK(cudaMemcpy(g->events, s->events, sizeof(kmc_event) * ne, cudaMemcpyHostToDevice));
        g->dmodel.config = g->configs;
        g->dmodel.event = g->events;
    }
    g->smem = (size_t)s->tiles_per_block * (size_t)s->geom.cells * 16u;
    int dev = 0, optin = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (g->smem > (size_t)optin)
        return carlo_seterr("tiles_per_block = %d needs %zu bytes of shared memory per block with "
                            "halo = %d; this GPU allows %d (use fewer tiles per block)",
                            s->tiles_per_block, g->smem, s->geom.halo, optin);
    if (g->smem > 48u * 1024u)
        CK(cudaFuncSetAttribute(step_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)g->smem));
    g->host = carlo_malloc(carlo_mulsize(N, 8), "a KMC staging buffer");
    return g->host ? 0 : -1;
}

void gpu_destroy(kmc_system *s)
{
    gpu_impl *g = impl(s);
    if (!g)
        return;
    for (int k = 0; k < 2; k++) {
        cudaFree(g->b.x[k]);
        cudaFree(g->b.tau[k]);
        cudaFree(g->b.cnt[k]);
        cudaFree(g->b.tmin[k]);
    }
    cudaFree(g->out);
    cudaFree(g->ctrl);
    cudaFree(g->acc);
    cudaFree(g->minbits);
    cudaFree(g->configs);
    cudaFree(g->events);
    free(g->host);
    free(g);
    s->impl = NULL;
}

int gpu_set_state(kmc_system *s, const int32_t *x, const double *tau, const uint32_t *cnt)
{
    gpu_impl *g = impl(s);
    const int f = (int)s->ctrl.front;
    const size_t N = sites(s);
    if (x) {
        kmc_to_tiles(&s->geom, x, g->host, 4);
        CK(cudaMemcpy(g->b.x[f], g->host, N * 4, cudaMemcpyHostToDevice));
    }
    if (tau) {
        kmc_to_tiles(&s->geom, tau, g->host, 8);
        CK(cudaMemcpy(g->b.tau[f], g->host, N * 8, cudaMemcpyHostToDevice));
        double *tmin = static_cast<double *>(carlo_malloc(sizeof(double) * (size_t)g->ntiles, "tile minima"));
        if (!tmin)
            return -1;
        kmc_tile_minima(&s->geom, static_cast<const double *>(g->host), tmin);
        cudaError_t e = cudaMemcpy(g->b.tmin[f], tmin, sizeof(double) * (size_t)g->ntiles,
                                   cudaMemcpyHostToDevice);
        free(tmin);
        if (e != cudaSuccess)
            return carlo_cuda_fail(e, "cudaMemcpy(tile minima)", __FILE__, __LINE__);
    }
    if (cnt) {
        kmc_to_tiles(&s->geom, cnt, g->host, 4);
        CK(cudaMemcpy(g->b.cnt[f], g->host, N * 4, cudaMemcpyHostToDevice));
    }
    return 0;
}

int gpu_get_state(kmc_system *s, int32_t *x, double *tau, uint32_t *cnt)
{
    gpu_impl *g = impl(s);
    const int f = (int)s->ctrl.front;
    const size_t N = sites(s);
    if (x) {
        CK(cudaMemcpy(g->host, g->b.x[f], N * 4, cudaMemcpyDeviceToHost));
        kmc_from_tiles(&s->geom, g->host, x, 4);
    }
    if (tau) {
        CK(cudaMemcpy(g->host, g->b.tau[f], N * 8, cudaMemcpyDeviceToHost));
        kmc_from_tiles(&s->geom, g->host, tau, 8);
    }
    if (cnt) {
        CK(cudaMemcpy(g->host, g->b.cnt[f], N * 4, cudaMemcpyDeviceToHost));
        kmc_from_tiles(&s->geom, g->host, cnt, 4);
    }
    return 0;
}

int gpu_advance(kmc_system *s, uint64_t budget)
{
    gpu_impl *g = impl(s);
    if (s->ctrl.done)
        return 0;
    const int tpb = s->tiles_per_block;
    const unsigned step_blocks = (unsigned)((g->ntiles + tpb - 1) / tpb);
    const unsigned validate_blocks = (unsigned)((g->ntiles + VALIDATE_THREADS - 1) / VALIDATE_THREADS);
    const uint64_t n = budget < BATCH_MAX ? budget : BATCH_MAX;
    CK(cudaMemcpy(g->ctrl, &s->ctrl, sizeof(kmc_ctrl), cudaMemcpyHostToDevice));
    for (uint64_t k = 0; k < n; k++) {
        step_kernel<<<step_blocks, (unsigned)(32 * tpb), g->smem>>>(s->geom, g->dmodel, s->seed, g->b,
                                                                    g->ctrl, g->out, g->ntiles);
        CK_LAUNCH("step_kernel");
        validate_kernel<<<validate_blocks, VALIDATE_THREADS>>>(s->geom, g->out, g->ctrl, g->acc,
                                                               g->ntiles);
        CK_LAUNCH("validate_kernel");
    }
    CK(cudaMemcpy(&s->ctrl, g->ctrl, sizeof(kmc_ctrl), cudaMemcpyDeviceToHost));
    return 0;
}

int gpu_min_tau(kmc_system *s, double *out)
{
    gpu_impl *g = impl(s);
    const unsigned long long inf = 0x7ff0000000000000ull;
    CK(cudaMemcpy(g->minbits, &inf, sizeof inf, cudaMemcpyHostToDevice));
    const uint64_t N = sites(s);
    uint64_t blocks = (N + 255) / 256;
    if (blocks > 4096)
        blocks = 4096;
    min_tau_kernel<<<(unsigned)blocks, 256>>>(g->b.tau[s->ctrl.front], N, g->minbits);
    CK_LAUNCH("min_tau_kernel");
    unsigned long long bits;
    CK(cudaMemcpy(&bits, g->minbits, sizeof bits, cudaMemcpyDeviceToHost));
    memcpy(out, &bits, sizeof *out);
    return 0;
}

int gpu_sync(kmc_system *s)
{
    (void)s;
    CK(cudaDeviceSynchronize());
    return 0;
}

} // namespace

extern "C" const kmc_backend kmc_cuda_backend = {
    "gpu", gpu_create, gpu_destroy, gpu_set_state, gpu_get_state, gpu_advance, gpu_min_tau, gpu_sync,
};
