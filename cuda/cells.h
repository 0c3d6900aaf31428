/* cells.h — the device side of the shared cell grid (src/core/cells_kernel.h) for any model's
 * CUDA backend: storage, transfers, the cell shift and the re-gridding of a scaled box. Every
 * call is checked (check.h); a cell that overflows its slots sets *flag on the device. */
#ifndef CARLO_CUDA_CELLS_H
#define CARLO_CUDA_CELLS_H

#include <cuda_runtime.h>

extern "C" {
#include "core/cells_kernel.h"
}

/* Device storage for grid g, every slot empty. */
int carlo_cells_dev_alloc(const carlo_cell_grid *g, carlo_cell_data *d);
void carlo_cells_dev_free(carlo_cell_data *d);
int carlo_cells_dev_upload(const carlo_cell_grid *g, const carlo_cell_data *dev,
                           const carlo_cell_data *host);
int carlo_cells_dev_download(const carlo_cell_grid *g, const carlo_cell_data *dev,
                             const carlo_cell_data *host);

/* Algorithm 4 from src into dst (one thread per new cell). */
int carlo_cells_dev_shift(const carlo_cell_grid *g, const carlo_cell_data *src,
                          const carlo_cell_data *dst, carlo_cell_shift sh, unsigned int *flag,
                          cudaStream_t stream);

/* Scale by lam and re-cut into grid ng (one thread per new cell). */
int carlo_cells_dev_regrid(const carlo_cell_grid *og, const carlo_cell_data *src,
                           const carlo_cell_grid *ng, const carlo_cell_data *dst,
                           const double lam[3], unsigned int *flag, cudaStream_t stream);

#endif
