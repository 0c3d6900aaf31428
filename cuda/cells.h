/* cells.h — the device side of the shared cell grid (src/core/cells_kernel.h) for any model's
 * CUDA backend: storage, transfers, the cell shift and the re-gridding of a scaled box. Every
 * call is checked (check.h); a cell that overflows its slots sets *flag on the device. */
#ifndef CARLO_CUDA_CELLS_H
#define CARLO_CUDA_CELLS_H

#include <cuda_runtime.h>

extern "C" {
#include "core/cells_kernel.h"
}

/* Cell c of the shifted grid (Algorithm 4, carlo_cell_shift_gather_into), built by its thread
 * in scratch shared memory and then written to dst slot by slot, so that the stores of a warp
 * go to consecutive addresses (built in place, the lanes would store to different slots at
 * once, a partial sector each). The scratch holds, for each of the block's threads, nmax slots
 * of dim floats, then of naux words, then a count: (dim + naux) nmax + 1 words per thread.
 * dim, naux and nmax are g's (literal constants where a kernel knows them). tidy: dst is known to
 * hold the empty marks in every slot at or after each cell's count (storage cleared when
 * allocated, then written only by shifts and re-griddings, which keep it so); then only the
 * slots below the larger of the old and the new count (over the warp) are written, not all
 * nmax (H100, 2^20 spheres: the shift 84 -> 53 us). Returns the number of particles
 * the cell received. */
__device__ __forceinline__ int carlo_cell_shift_staged(const carlo_cell_grid &g, const carlo_cell_data &src,
                                                       const carlo_cell_data &dst, carlo_cell_shift sh,
                                                       int64_t c, uint32_t *scratch, const int dim,
                                                       const int naux, const int nmax, const int tidy)
{
    const int old = tidy ? (int)dst.count[c] : nmax; /* dst's slots from old on are marked empty */
    const int threads = (int)blockDim.x, me = (int)threadIdx.x;
    carlo_cell_grid sg = g; /* the scratch: cell me of `threads` */
    sg.ncells = threads;
    const carlo_cell_data sd = {reinterpret_cast<float *>(scratch), scratch + (size_t)dim * nmax * threads,
                                scratch + (size_t)(dim + naux) * nmax * threads};
    int xyz[3];
    carlo_cell_coords(&g, c, xyz);
    const int got = carlo_cell_shift_gather_into(&g, &src, xyz, sh, dim, naux, &sg, &sd, me);
    const int kept = got < nmax ? got : nmax;
    /* the warp's largest: its lanes store each slot together, whole sectors (lanes past their
     * own cell's count store the empty marks the slot holds already; stores of some lanes only
     * made the disks' shift 7% slower) */
    const int upto = tidy ? __reduce_max_sync(__activemask(), kept > old ? kept : old) : nmax;
#pragma unroll 4
    for (int j = 0; j < upto; j++) {
#pragma unroll
        for (int a = 0; a < 3; a++)
            if (a < dim)
                dst.pos[carlo_cell_slot(&g, c, j, a)] = sd.pos[carlo_cell_slot(&sg, me, j, a)];
#pragma unroll
        for (int b = 0; b < 8; b++)
            if (b < naux)
                dst.aux[carlo_cell_slot(&g, c, j, b)] = sd.aux[carlo_cell_slot(&sg, me, j, b)];
    }
    dst.count[c] = sd.count[me];
    return got;
}

/* Device storage for grid g, every slot empty. */
int carlo_cells_dev_alloc(const carlo_cell_grid *g, carlo_cell_data *d);
void carlo_cells_dev_free(carlo_cell_data *d);
int carlo_cells_dev_upload(const carlo_cell_grid *g, const carlo_cell_data *dev,
                           const carlo_cell_data *host);
int carlo_cells_dev_download(const carlo_cell_grid *g, const carlo_cell_data *dev,
                             const carlo_cell_data *host);

/* Algorithm 4 from src into dst (one thread per new cell). dst must hold the empty marks in
 * every slot at or after each cell's count, as storage from carlo_cells_dev_alloc, an upload of
 * host storage, a shift or a re-gridding does: the hard-particle grids write only the slots
 * that change (carlo_cell_shift_staged, tidy). */
int carlo_cells_dev_shift(const carlo_cell_grid *g, const carlo_cell_data *src,
                          const carlo_cell_data *dst, carlo_cell_shift sh, unsigned int *flag,
                          cudaStream_t stream);
/* The same for cells [c0, c1) only (a slab of a grid split over MPI ranks): the other cells of
 * dst are left as they are, and only the cells shifted can flag an overflow. */
int carlo_cells_dev_shift_range(const carlo_cell_grid *g, const carlo_cell_data *src,
                                const carlo_cell_data *dst, carlo_cell_shift sh, int64_t c0, int64_t c1,
                                unsigned int *flag, cudaStream_t stream);

/* Scale by lam and re-cut into grid ng (one thread per new cell). */
int carlo_cells_dev_regrid(const carlo_cell_grid *og, const carlo_cell_data *src,
                           const carlo_cell_grid *ng, const carlo_cell_data *dst,
                           const double lam[3], unsigned int *flag, cudaStream_t stream);
/* The same for the new cells [c0, c1) only (a slab of a grid split over MPI ranks). */
int carlo_cells_dev_regrid_range(const carlo_cell_grid *og, const carlo_cell_data *src,
                                 const carlo_cell_grid *ng, const carlo_cell_data *dst,
                                 const double lam[3], int64_t c0, int64_t c1, unsigned int *flag,
                                 cudaStream_t stream);

/* The device side of carlo_split_regrid_host (mpi/cell_split.h): a slab's box-move trial, the
 * new cells of this rank's own layers and of its two halo ranges scaled and re-cut from src;
 * *c0, *c1: its own cells [c0, c1) of ng. */
struct carlo_split;
int carlo_split_dev_regrid(const struct carlo_split *p, const carlo_cell_grid *og,
                           const carlo_cell_data *src, const carlo_cell_grid *ng,
                           const carlo_cell_data *dst, const double lam[3], int64_t *c0,
                           int64_t *c1, unsigned int *flag, cudaStream_t stream);

#endif
