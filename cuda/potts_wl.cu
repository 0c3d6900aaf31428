/* potts_wl.cu — the CUDA backend of Potts Wang-Landau: one warp per window, lane a is walker a.
 * The walkers of a window decide on ln g as it stood before the step (src/potts/potts_wl_kernel.h),
 * then add ln f with atomics: additions of one value in any order give the same bits, so the
 * chain equals the CPU's. ln g and the histograms are read through L2 (__ldcg), where the
 * atomics land. */
#include <stdint.h>
#include <stdlib.h>

extern "C" {
#include "core/error.h"
#include "potts/potts_wl.h"
}
#include "check.h"

namespace {

struct wl_gpu {
    potts_wl_window *win;
    int32_t *b;
    uint8_t *spins;
    double *lng;
    unsigned long long *hist;
};

__global__ void __launch_bounds__(32) wl_kernel(potts_wl_par p, potts_wl_window *wins,
                                                int32_t *bs, uint8_t *spins_all, double *lng_all,
                                                unsigned long long *hist_all, uint64_t steps)
{
    const uint32_t k = blockIdx.x, lane = threadIdx.x;
    potts_wl_window w = wins[k]; /* every lane keeps the same copy, by the same decisions */
    double *lng = lng_all + (int64_t)k * p.stride;
    unsigned long long *hist = hist_all + (int64_t)k * p.stride;
    const int active = lane < p.walkers;
    int32_t b = active ? bs[(int64_t)k * p.walkers + lane] : 0;
    uint8_t *spins = spins_all + ((int64_t)k * p.walkers + (active ? lane : 0)) * p.N;
    for (uint64_t s = 0; s < steps && w.phase != POTTS_WL_DONE; s++) {
        double lnf = potts_wl_step_lnf(&w, &p);
        potts_wl_move m;
        if (active) {
            m = potts_wl_try(spins, b, &w, &p, k, lane);
            if (m.accept)
                potts_wl_take(&m, __ldcg(lng + (b - w.lo)), __ldcg(lng + (m.b - w.lo)));
        }
        __syncwarp();
        if (active) {
            if (m.accept) {
                spins[m.site] = (uint8_t)m.state;
                b = m.b;
            }
            atomicAdd(lng + (b - w.lo), lnf);
            atomicAdd(hist + (b - w.lo), 1ull);
        }
        __syncwarp();
        if (potts_wl_step_end(&w, &p)) {
            uint64_t hmin = UINT64_MAX, hsum = 0;
            int32_t nv = 0;
            for (int32_t i = (int32_t)lane; i <= w.hi - w.lo; i += 32)
                potts_wl_tally(__ldcg(lng + i), __ldcg(hist + i), &hmin, &hsum, &nv);
            for (int off = 16; off > 0; off >>= 1) { /* integers: exact in any order */
                uint64_t om = __shfl_xor_sync(0xffffffffu, (unsigned long long)hmin, off);
                hsum += __shfl_xor_sync(0xffffffffu, (unsigned long long)hsum, off);
                nv += __shfl_xor_sync(0xffffffffu, nv, off);
                if (om < hmin)
                    hmin = om;
            }
            if (potts_wl_check(&w, &p, hmin, hsum, nv))
                for (int32_t i = (int32_t)lane; i <= w.hi - w.lo; i += 32)
                    hist[i] = 0;
            __syncwarp();
        }
    }
    if (active)
        bs[(int64_t)k * p.walkers + lane] = b;
    if (lane == 0)
        wins[k] = w;
}

wl_gpu *impl(potts_wl *r) { return static_cast<wl_gpu *>(r->impl); }

size_t lattice_bytes(const potts_wl *r) { return (size_t)r->W * r->par.walkers * r->par.N; }
size_t level_count(const potts_wl *r) { return (size_t)r->W * (size_t)r->par.stride; }

void gpu_destroy(potts_wl *r)
{
    wl_gpu *g = impl(r);
    if (!g)
        return;
    cudaFree(g->win);
    cudaFree(g->b);
    cudaFree(g->spins);
    cudaFree(g->lng);
    cudaFree(g->hist);
    free(g);
    r->impl = NULL;
}

int gpu_create(potts_wl *r)
{
    wl_gpu *g = static_cast<wl_gpu *>(carlo_calloc(1, sizeof *g, "Wang-Landau GPU state"));
    if (!g)
        return -1;
    r->impl = g;
    size_t W = (size_t)r->W, nb = W * r->par.walkers, nl = level_count(r);
    CK_MALLOC(&g->win, W * sizeof *r->win, "Wang-Landau windows");
    CK_MALLOC(&g->b, nb * sizeof *r->b, "Wang-Landau walkers");
    CK_MALLOC(&g->spins, lattice_bytes(r), "Wang-Landau lattices");
    CK_MALLOC(&g->lng, nl * sizeof(double), "Wang-Landau ln g");
    CK_MALLOC(&g->hist, nl * sizeof(unsigned long long), "Wang-Landau histograms");
    CK(cudaMemcpy(g->win, r->win, W * sizeof *r->win, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(g->b, r->b, nb * sizeof *r->b, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(g->spins, r->spins, lattice_bytes(r), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(g->lng, r->lng, nl * sizeof(double), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(g->hist, r->hist, nl * sizeof(unsigned long long), cudaMemcpyHostToDevice));
    return 0;
}

int gpu_advance(potts_wl *r, uint64_t steps)
{
    wl_gpu *g = impl(r);
    wl_kernel<<<r->W, 32>>>(r->par, g->win, g->b, g->spins, g->lng, g->hist, steps);
    CK_LAUNCH("wl_kernel");
    CK(cudaMemcpy(r->win, g->win, (size_t)r->W * sizeof *r->win, cudaMemcpyDeviceToHost));
    return 0;
}

int gpu_fetch(potts_wl *r)
{
    wl_gpu *g = impl(r);
    size_t nl = level_count(r);
    CK(cudaMemcpy(r->b, g->b, (size_t)r->W * r->par.walkers * sizeof *r->b,
                  cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(r->spins, g->spins, lattice_bytes(r), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(r->lng, g->lng, nl * sizeof(double), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(r->hist, g->hist, nl * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    return 0;
}

} // namespace

extern "C" const potts_wl_backend potts_wl_cuda_backend = {
    "gpu", gpu_create, gpu_advance, gpu_fetch, gpu_destroy,
};
