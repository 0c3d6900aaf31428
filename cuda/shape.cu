/* shape.cu — the CUDA backend of hard convex shapes: one thread per active cell running
 * shape_cell_update (src/shape/shape_kernel.h, the code the CPU runs, in the same double
 * arithmetic without contraction, so the chains are bit-identical), the shape handed to every
 * launch as a __grid_constant__ parameter (constant memory), and the shared cell shift. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "core/error.h"
#include "shape/shape.h"
}
#include "cells.h"
#include "check.h"

namespace {

/* Move counters (translations tried, accepted, rotations tried, accepted) and the shift's
 * overflow flag, one allocation. */
struct dev_counters {
    unsigned long long n[4];
    unsigned int flag;
};

struct gpu_impl {
    carlo_cell_data cur, spare;
    dev_counters *ctr;
};

gpu_impl *impl(shape_system *s) { return static_cast<gpu_impl *>(s->impl); }

__global__ void __launch_bounds__(128) subsweep_kernel(const __grid_constant__ shape_def sh, carlo_cell_grid g,
                                                       float *pos, uint32_t *aux, const uint32_t *count,
                                                       int set, shape_moves mv, uint64_t seed, uint64_t step,
                                                       dev_counters *ctr)
{
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= carlo_cell_set_size(&g))
        return;
    int xyz[3];
    carlo_cell_active(&g, set, t, xyz);
    uint64_t c[4] = {0, 0, 0, 0};
    shape_cell_update(&sh, &g, pos, aux, count, xyz, mv, seed, step, c);
    for (int k = 0; k < 4; k++)
        if (c[k])
            atomicAdd(&ctr->n[k], (unsigned long long)c[k]);
}

int gpu_create(shape_system *s)
{
    gpu_impl *g = static_cast<gpu_impl *>(carlo_calloc(1, sizeof(gpu_impl), "the hard-shape GPU backend"));
    if (!g)
        return -1;
    s->impl = g;
    CK_MALLOC(&g->ctr, sizeof(dev_counters), "move counters");
    CK(cudaMemset(g->ctr, 0, sizeof(dev_counters)));
    if (carlo_cells_dev_alloc(&s->grid, &g->cur) || carlo_cells_dev_alloc(&s->grid, &g->spare))
        return -1;
    return 0;
}

void gpu_destroy(shape_system *s)
{
    gpu_impl *g = impl(s);
    if (!g)
        return;
    carlo_cells_dev_free(&g->cur);
    carlo_cells_dev_free(&g->spare);
    cudaFree(g->ctr);
    free(g);
    s->impl = NULL;
}

int gpu_upload(shape_system *s, const carlo_cell_data *h)
{
    return carlo_cells_dev_upload(&s->grid, &impl(s)->cur, h);
}

int gpu_download(shape_system *s, carlo_cell_data *h)
{
    return carlo_cells_dev_download(&s->grid, &impl(s)->cur, h);
}

int gpu_subsweep(shape_system *s, int set, uint64_t step)
{
    gpu_impl *g = impl(s);
    const int64_t n = carlo_cell_set_size(&s->grid);
    const unsigned threads = 128, blocks = (unsigned)((n + threads - 1) / threads);
    subsweep_kernel<<<blocks, threads>>>(s->shape, s->grid, g->cur.pos, g->cur.aux, g->cur.count, set, s->mv,
                                         s->seed, step, g->ctr);
    CK_LAUNCH("subsweep_kernel");
    return 0;
}

int check_flag(gpu_impl *g)
{
    unsigned int flag = 0;
    CK(cudaMemcpy(&flag, &g->ctr->flag, sizeof flag, cudaMemcpyDeviceToHost));
    if (flag & 1u)
        return carlo_seterr("a cell overflowed in the cell shift (overlapping particles?)");
    return 0;
}

int gpu_shift(shape_system *s, carlo_cell_shift sh)
{
    gpu_impl *g = impl(s);
    if (carlo_cells_dev_shift(&s->grid, &g->cur, &g->spare, sh, &g->ctr->flag, 0))
        return -1;
    carlo_cell_data t = g->cur;
    g->cur = g->spare;
    g->spare = t;
    return 0;
}

int gpu_counts(shape_system *s, uint64_t c[4])
{
    dev_counters h;
    CK(cudaMemcpy(&h, impl(s)->ctr, sizeof h, cudaMemcpyDeviceToHost));
    for (int k = 0; k < 4; k++)
        c[k] = h.n[k];
    if (h.flag & 1u)
        return carlo_seterr("a cell overflowed in the cell shift (overlapping particles?)");
    return 0;
}

int gpu_sync(shape_system *s)
{
    CK(cudaDeviceSynchronize());
    return check_flag(impl(s));
}

} // namespace

extern "C" const shape_backend shape_cuda_backend = {
    gpu_create, gpu_destroy, gpu_upload, gpu_download, gpu_subsweep, gpu_shift, gpu_counts, gpu_sync,
};
