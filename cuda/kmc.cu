/* kmc.cu — the GPU backend of lattice KMC (the "tiled" algorithm of kmc_kernel.h).
 * Algorithm 2 (kmc_step.cuh): one warp per tile, its domain in shared memory; tiles without
 * an event in a step are not copied (kmc_gpu_buffers). Algorithm 1 runs on the device as
 * well: a second kernel compares the edge checksums and its last block accepts or rejects the
 * step and plans the next (the same kmc_ctrl_decide as the CPU), so a batch of steps is
 * queued without a round trip. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "core/error.h"
#include "kmc/kmc.h"
}
#include "check.h"
#include "kmc_step.cuh"

namespace {

const int VALIDATE_THREADS = 256;
const uint64_t BATCH_MAX = 256; /* steps queued per call: a call ends within a few no-op steps */

struct kmc_acc {
    unsigned long long events, sim;
    unsigned int mismatch, overflow, ticket, pad;
};

struct gpu_impl {
    kmc_gpu_buffers b;
    kmc_tile_out *out;
    kmc_ctrl *ctrl;
    kmc_acc *acc;
    unsigned long long *minbits;
    kmc_config *configs;
    kmc_event *events;
    void *host;         /* staging, 8 bytes per site */
    int smem_optin;     /* the most dynamic shared memory a block may have on this GPU */
    int ntiles;
};

gpu_impl *impl(kmc_system *s) { return static_cast<gpu_impl *>(s->impl); }

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
        ev += __shfl_down_sync(KMC_FULL_MASK, ev, o);
        sim += __shfl_down_sync(KMC_FULL_MASK, sim, o);
    }
    bad = __any_sync(KMC_FULL_MASK, bad);
    ovf = __any_sync(KMC_FULL_MASK, ovf);
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
        const unsigned long long other = __shfl_down_sync(KMC_FULL_MASK, best, o);
        best = other < best ? other : best;
    }
    if ((threadIdx.x & 31u) == 0)
        atomicMin(minbits, best);
}

/* ---------- the backend ---------- */

size_t sites(const kmc_system *s) { return (size_t)s->m * (size_t)s->n; }

/* dynamic shared memory of a step block: each warp's domain, 16 bytes a cell */
size_t step_smem(const kmc_system *s, int tiles_per_block)
{
    return (size_t)tiles_per_block * (size_t)s->geom.cells * 16u;
}

/* A launch shape this GPU can take (the chain never depends on it). */
int gpu_launch(kmc_system *s, int tiles_per_block)
{
    const gpu_impl *g = impl(s);
    const size_t smem = step_smem(s, tiles_per_block);
    if (smem > (size_t)g->smem_optin)
        return carlo_seterr("tiles_per_block = %d needs %zu bytes of shared memory per block with "
                            "halo = %d; this GPU allows %d (use fewer tiles per block)",
                            tiles_per_block, smem, s->geom.halo, g->smem_optin);
    if (smem > 48u * 1024u) /* the most any system may ask for, so no system lowers it */
        CK(cudaFuncSetAttribute(step_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                g->smem_optin));
    return 0;
}

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
        CK_MALLOC(&g->b.where[k], (size_t)g->ntiles, "the KMC tile buffer map");
    }
    CK_MALLOC(&g->out, (size_t)g->ntiles * sizeof(kmc_tile_out), "the KMC tile results");
    CK_MALLOC(&g->ctrl, sizeof(kmc_ctrl), "the KMC step control");
    CK_MALLOC(&g->acc, sizeof(kmc_acc), "the KMC step sums");
    CK(cudaMemset(g->acc, 0, sizeof(kmc_acc)));
    CK_MALLOC(&g->minbits, sizeof(unsigned long long), "a reduction");
    if (s->model.kind == KMC_TABLE) {
        CK_MALLOC(&g->configs, sizeof(kmc_config) * s->nconfigs, "the KMC rate table");
        CK(cudaMemcpy(g->configs, s->configs, sizeof(kmc_config) * s->nconfigs, cudaMemcpyHostToDevice));
        size_t ne = s->nevents ? s->nevents : 1;
        CK_MALLOC(&g->events, sizeof(kmc_event) * ne, "the KMC event table");
        CK(cudaMemcpy(g->events, s->events, sizeof(kmc_event) * ne, cudaMemcpyHostToDevice));
    }
    int dev = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&g->smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (gpu_launch(s, s->tiles_per_block))
        return -1;
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
        cudaFree(g->b.where[k]);
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
    const size_t smem = step_smem(s, tpb);
    kmc_model md = s->model; /* its rates as they are now (controls change them) */
    md.config = g->configs;
    md.event = g->events;
    CK(cudaMemcpy(g->ctrl, &s->ctrl, sizeof(kmc_ctrl), cudaMemcpyHostToDevice));
    /* every tile starts in the front buffer (see kmc_gpu_buffers) */
    const uint64_t k0 = s->ctrl.accepted + s->ctrl.rejected;
    CK(cudaMemset(g->b.where[(k0 + 1) & 1], (int)s->ctrl.front, (size_t)g->ntiles));
    for (uint64_t k = 0; k < n; k++) {
        step_kernel<<<step_blocks, (unsigned)(32 * tpb), smem>>>(s->geom, md, s->seed, g->b, g->ctrl,
                                                                 g->out, g->ntiles);
        CK_LAUNCH("step_kernel");
        validate_kernel<<<validate_blocks, VALIDATE_THREADS>>>(s->geom, g->out, g->ctrl, g->acc,
                                                               g->ntiles);
        CK_LAUNCH("validate_kernel");
    }
    settle_kernel<<<step_blocks, (unsigned)(32 * tpb)>>>(g->b, g->ctrl, g->ntiles);
    CK_LAUNCH("settle_kernel");
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
    CK(cudaStreamSynchronize(cudaStreamPerThread));
    return 0;
}

} // namespace

extern "C" const kmc_backend kmc_cuda_backend = {
    "gpu", gpu_create, gpu_destroy, gpu_set_state, gpu_get_state, gpu_advance, gpu_min_tau, gpu_sync,
    gpu_launch,
};
