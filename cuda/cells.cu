/* cells.cu — see cells.h. */
#include "cells.h"

#include <string.h>

extern "C" {
#include "core/cells.h"
#include "core/error.h"
#include "mpi/cell_split.h"
}
#include "check.h"

namespace {

const int THREADS = 256;
#define STAGED_THREADS 128

__global__ void clear_kernel(carlo_cell_grid g, carlo_cell_data d)
{
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c < g.ncells)
        carlo_cell_close(&g, &d, c, 0);
}

/* DIM and NAUX > 0: the grid's dimension and words per particle as literal constants (the
 * shift's chunks in registers); 0: read from the grid. */
template <int DIM, int NAUX>
__global__ void shift_kernel(carlo_cell_grid g, carlo_cell_data src, carlo_cell_data dst,
                             carlo_cell_shift sh, int64_t c0, int64_t c1, unsigned int *flag)
{
    const int64_t c = c0 + (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= c1)
        return;
    int xyz[3];
    carlo_cell_coords(&g, c, xyz);
    if (carlo_cell_shift_gather_n(&g, &src, &dst, xyz, sh, DIM ? DIM : g.dim, NAUX ? NAUX : g.naux) >
        g.nmax)
        atomicOr(flag, 1u);
}

/* The shift of grids with NMAX slots (literal), staged in shared memory (cells.h). */
template <int DIM, int NMAX, int NAUX>
__global__ void __launch_bounds__(STAGED_THREADS) shift_staged_kernel(carlo_cell_grid g, carlo_cell_data src,
                                                                     carlo_cell_data dst, carlo_cell_shift sh,
                                                                     int64_t c0, int64_t c1, unsigned int *flag)
{
    __shared__ uint32_t scratch[((DIM + NAUX) * NMAX + 1) * STAGED_THREADS];
    const int64_t c = c0 + (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c < c1 && carlo_cell_shift_staged(g, src, dst, sh, c, scratch, DIM, NAUX, NMAX, 1) > NMAX)
        atomicOr(flag, 1u);
}

struct lam3 {
    double v[3];
};

__global__ void regrid_kernel(carlo_cell_grid og, carlo_cell_data src, carlo_cell_grid ng,
                              carlo_cell_data dst, lam3 lam, int64_t c0, int64_t c1, unsigned int *flag)
{
    const int64_t c = c0 + (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= c1)
        return;
    int xyz[3];
    carlo_cell_coords(&ng, c, xyz);
    if (carlo_cell_regrid_gather(&og, &src, &ng, &dst, lam.v, xyz) > ng.nmax)
        atomicOr(flag, 2u);
}

unsigned blocks_for(int64_t n) { return (unsigned)((n + THREADS - 1) / THREADS); }

} // namespace

int carlo_cells_dev_alloc(const carlo_cell_grid *g, carlo_cell_data *d)
{
    memset(d, 0, sizeof *d);
    size_t np = carlo_cells_pos_len(g), na = carlo_cells_aux_len(g);
    CK_MALLOC(&d->pos, carlo_mulsize(np, sizeof(float)), "cell positions");
    if (na)
        CK_MALLOC(&d->aux, carlo_mulsize(na, sizeof(uint32_t)), "cell words");
    CK_MALLOC(&d->count, carlo_mulsize((size_t)g->ncells, sizeof(uint32_t)), "cell counts");
    clear_kernel<<<blocks_for(g->ncells), THREADS>>>(*g, *d);
    CK(cudaGetLastError());
    return 0;
}

void carlo_cells_dev_free(carlo_cell_data *d)
{
    cudaFree(d->pos);
    cudaFree(d->aux);
    cudaFree(d->count);
    memset(d, 0, sizeof *d);
}

int carlo_cells_dev_upload(const carlo_cell_grid *g, const carlo_cell_data *dev,
                           const carlo_cell_data *host)
{
    CK(cudaMemcpy(dev->pos, host->pos, carlo_cells_pos_len(g) * sizeof(float), cudaMemcpyHostToDevice));
    if (g->naux)
        CK(cudaMemcpy(dev->aux, host->aux, carlo_cells_aux_len(g) * sizeof(uint32_t),
                      cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dev->count, host->count, (size_t)g->ncells * sizeof(uint32_t), cudaMemcpyHostToDevice));
    return 0;
}

int carlo_cells_dev_download(const carlo_cell_grid *g, const carlo_cell_data *dev,
                             const carlo_cell_data *host)
{
    CK(cudaMemcpy(host->pos, dev->pos, carlo_cells_pos_len(g) * sizeof(float), cudaMemcpyDeviceToHost));
    if (g->naux)
        CK(cudaMemcpy(host->aux, dev->aux, carlo_cells_aux_len(g) * sizeof(uint32_t),
                      cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(host->count, dev->count, (size_t)g->ncells * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    return 0;
}

int carlo_cells_dev_shift(const carlo_cell_grid *g, const carlo_cell_data *src,
                          const carlo_cell_data *dst, carlo_cell_shift sh, unsigned int *flag,
                          cudaStream_t stream)
{
    return carlo_cells_dev_shift_range(g, src, dst, sh, 0, g->ncells, flag, stream);
}

int carlo_cells_dev_shift_range(const carlo_cell_grid *g, const carlo_cell_data *src,
                                const carlo_cell_data *dst, carlo_cell_shift sh, int64_t c0, int64_t c1,
                                unsigned int *flag, cudaStream_t stream)
{
    if (c1 <= c0)
        return 0;
    const int64_t n = c1 - c0;
    if (g->naux == 1 && ((g->dim == 2 && g->nmax == 4) || (g->dim == 3 && g->nmax == 12))) {
        /* the hard-particle grids */
        const unsigned blocks = (unsigned)((n + STAGED_THREADS - 1) / STAGED_THREADS);
        if (g->dim == 2)
            shift_staged_kernel<2, 4, 1><<<blocks, STAGED_THREADS, 0, stream>>>(*g, *src, *dst, sh, c0, c1, flag);
        else
            shift_staged_kernel<3, 12, 1><<<blocks, STAGED_THREADS, 0, stream>>>(*g, *src, *dst, sh, c0, c1, flag);
        CK(cudaGetLastError());
        return 0;
    }
    void (*k)(carlo_cell_grid, carlo_cell_data, carlo_cell_data, carlo_cell_shift, int64_t, int64_t,
              unsigned int *) =
        g->naux != 1 ? shift_kernel<0, 0> : (g->dim == 2 ? shift_kernel<2, 1> : shift_kernel<3, 1>);
    k<<<blocks_for(n), THREADS, 0, stream>>>(*g, *src, *dst, sh, c0, c1, flag);
    CK(cudaGetLastError());
    return 0;
}

int carlo_cells_dev_regrid(const carlo_cell_grid *og, const carlo_cell_data *src,
                           const carlo_cell_grid *ng, const carlo_cell_data *dst,
                           const double lam[3], unsigned int *flag, cudaStream_t stream)
{
    return carlo_cells_dev_regrid_range(og, src, ng, dst, lam, 0, ng->ncells, flag, stream);
}

int carlo_cells_dev_regrid_range(const carlo_cell_grid *og, const carlo_cell_data *src,
                                 const carlo_cell_grid *ng, const carlo_cell_data *dst,
                                 const double lam[3], int64_t c0, int64_t c1, unsigned int *flag,
                                 cudaStream_t stream)
{
    if (c1 <= c0)
        return 0;
    lam3 l = {{lam[0], lam[1], lam[2]}};
    regrid_kernel<<<blocks_for(c1 - c0), THREADS, 0, stream>>>(*og, *src, *ng, *dst, l, c0, c1, flag);
    CK(cudaGetLastError());
    return 0;
}

int carlo_split_dev_regrid(const struct carlo_split *p, const carlo_cell_grid *og,
                           const carlo_cell_data *src, const carlo_cell_grid *ng,
                           const carlo_cell_data *dst, const double lam[3], int64_t *c0,
                           int64_t *c1, unsigned int *flag, cudaStream_t stream)
{
    int64_t h[2];
    carlo_split_cells(p, ng, c0, c1);
    const int lc = carlo_split_halo_cells(p, ng, h); /* 0, h unset: one rank, no halos */
    for (int k = 0; lc && k < 2; k++)
        if (carlo_cells_dev_regrid_range(og, src, ng, dst, lam, h[k], h[k] + lc, flag, stream))
            return -1;
    return carlo_cells_dev_regrid_range(og, src, ng, dst, lam, *c0, *c1, flag, stream);
}
