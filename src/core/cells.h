/* cells.h — the host side of the checkerboard cell grid (cells_kernel.h has the layout and
 * the per-cell operations): planning a grid for a box, host storage, filling it from
 * positions, reading positions back, and the OpenMP loops of the cell shift and re-gridding
 * that CPU backends call. Shared by the hard-particle and Lennard-Jones models. */
#ifndef CARLO_CELLS_H
#define CARLO_CELLS_H

#include <stdint.h>

#include "core/box.h"
#include "core/cells_kernel.h"
#include "core/frame.h"

/* Cut an orthorhombic box into cells: along each axis the even m >= 2 with
 * w_min <= L / m < w_max (w_max may be INFINITY) whose width is closest to w_pref. nmax slots
 * per cell, naux words per particle (0..8). Returns 0, or -1 with a message that names the
 * axis and why no such m exists. */
int carlo_cells_plan(carlo_cell_grid *g, const carlo_box *b, double w_min, double w_max,
                     double w_pref, int nmax, int naux);

/* The same for a triclinic box, cut in its skew coordinates (box.h): m[a] cells along lattice
 * vector a, parallelepipeds whose distance between opposite faces is at least w_min (w_pref
 * and w_max likewise); exactly carlo_cells_plan for an orthorhombic box. The grid's widths are
 * skew widths (cells of L / m along each axis of the skew coordinates). */
int carlo_cells_plan_skew(carlo_cell_grid *g, const carlo_box *b, double w_min, double w_max,
                          double w_pref, int nmax, int naux);

/* The box a grid cuts (orthorhombic, L = m * width). */
carlo_box carlo_cells_box(const carlo_cell_grid *g);

/* Element counts of the three arrays of a carlo_cell_data. */
size_t carlo_cells_pos_len(const carlo_cell_grid *g);
size_t carlo_cells_aux_len(const carlo_cell_grid *g);

/* Host storage, every slot empty. carlo_cell_data_free(NULL fields) is harmless. */
int carlo_cell_data_alloc(const carlo_cell_grid *g, carlo_cell_data *d);
void carlo_cell_data_free(carlo_cell_data *d);
void carlo_cell_data_clear(const carlo_cell_grid *g, const carlo_cell_data *d);

/* Storage d, allocated for grid *have, made fit for grid g: kept as it is when its sizes are g's
 * (dimension, cells, slots, words; after a box move re-gridded the cells, a spare storage is the
 * old grid's), else freed and allocated afresh for g, every slot empty, and *have = *g. Host
 * storage (carlo_cell_data_alloc and _free); carlo_cell_data_fit_with takes the allocator and
 * the release of another storage (a GPU backend's device memory). Returns 0, or -1 with the
 * allocator's error (d then holds nothing). */
int carlo_cell_data_fit(carlo_cell_data *d, carlo_cell_grid *have, const carlo_cell_grid *g);
int carlo_cell_data_fit_with(carlo_cell_data *d, carlo_cell_grid *have, const carlo_cell_grid *g,
                             int (*alloc)(const carlo_cell_grid *, carlo_cell_data *),
                             void (*release)(carlo_cell_data *));

/* A backend's current and spare storage traded, each with the grid it is allocated for (after
 * a cell shift or an accepted box move filled the spare one). */
static inline void carlo_cell_data_swap(carlo_cell_data *a, carlo_cell_grid *have_a, carlo_cell_data *b,
                                        carlo_cell_grid *have_b)
{
    const carlo_cell_data d = *a;
    const carlo_cell_grid g = *have_a;
    *a = *b;
    *have_a = *have_b;
    *b = d;
    *have_b = g;
}

/* The cells in a checkpoint: chunks <prefix>/cells/pos (dim nmax rows of ncells floats),
 * <prefix>/cells/aux (naux nmax rows of ncells words) and <prefix>/cells/count (ncells). To the
 * frame: copies of d's arrays, or (owned) d's arrays themselves, each field set to NULL as the
 * frame takes it. From the frame: views of its chunks in *view (valid while the frame is), or -1
 * with the message of the last chunk missing or of the wrong type or shape. */
int carlo_cells_to_frame(carlo_frame *f, const char *prefix, const carlo_cell_grid *g, carlo_cell_data *d,
                         int owned);
int carlo_cells_from_frame(const carlo_frame *f, const char *prefix, const carlo_cell_grid *g,
                           carlo_cell_data *view);

/* Put n particles into empty storage, in the order given: r is n x 3 (offsets from the grid's
 * origin, wrapped into the box here; z ignored in 2D), aux n x naux (NULL when naux = 0).
 * A cell that would hold more than nmax is an error naming the cell and the particles in it. */
int carlo_cells_fill(const carlo_cell_grid *g, const carlo_cell_data *d, int64_t n,
                     const double *r, const uint32_t *aux);

/* Every particle's offset from the origin (n x 3, in [0, L), z = 0 in 2D) and words (n x naux),
 * in storage order (cells by index, then slots). Either output may be NULL. Returns n. */
int64_t carlo_cells_extract(const carlo_cell_grid *g, const carlo_cell_data *d, double *r,
                            uint32_t *aux);

int64_t carlo_cells_count(const carlo_cell_grid *g, const carlo_cell_data *d);

/* The cell shift (Algorithm 4) from src into dst, every cell in parallel. Returns 0, or -1
 * when a cell overflowed (message set); dst is then unusable. */
int carlo_cells_shift_host(const carlo_cell_grid *g, const carlo_cell_data *src,
                           const carlo_cell_data *dst, carlo_cell_shift sh);

/* Scale by lam[a] along each axis and re-cut into grid ng (storage dst, allocated for ng).
 * Returns 0, 1 when some new cell would exceed nmax (dst unusable), never fails otherwise. */
int carlo_cells_regrid_host(const carlo_cell_grid *og, const carlo_cell_data *src,
                            const carlo_cell_grid *ng, const carlo_cell_data *dst,
                            const double lam[3]);
/* The same two for the cells [c0, c1) of dst alone (a slab of a grid split over MPI ranks):
 * the shift returns the largest index of a cell that overflowed, or -1, and
 * carlo_cells_shift_overflow(g, c) sets the message naming cell c and returns -1; the
 * re-gridding returns 1 when a cell would exceed nmax. */
int64_t carlo_cells_shift_range(const carlo_cell_grid *g, const carlo_cell_data *src, const carlo_cell_data *dst,
                                carlo_cell_shift sh, int64_t c0, int64_t c1);
int carlo_cells_shift_overflow(const carlo_cell_grid *g, int64_t c);
int carlo_cells_regrid_range(const carlo_cell_grid *og, const carlo_cell_data *src, const carlo_cell_grid *ng,
                             const carlo_cell_data *dst, const double lam[3], int64_t c0, int64_t c1);

/* The invariants: counts within [0, nmax], every particle's coordinates in [0, w), empty slots
 * empty, and n particles in all (n < 0: any number). Returns 0 or -1 naming the first breach. */
int carlo_cells_verify(const carlo_cell_grid *g, const carlo_cell_data *d, int64_t n);

#endif
