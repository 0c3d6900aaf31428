/* hard_mpi.h — hard particles split over the MPI ranks (decompose = true, carlo-mpi(7)): the
 * cell grid cut in slabs of layers along its last axis (y for disks, z for spheres) by
 * mpi/cell_split.h, whose rules and storage this model follows; here its calls on a hard
 * system's split and grid. The CPU backend (hard_cpu.c) calls these around its loops, the GPU
 * one (cuda/hard.cu and cuda/hard_split.cu) around its kernels, the halo layers packed on the
 * device and the gathers on a host copy of the grid. */
#ifndef CARLO_HARD_MPI_H
#define CARLO_HARD_MPI_H

#include <stddef.h>
#include <stdint.h>

#include "hard/hard.h"
#include "mpi/cell_split.h"

typedef carlo_split hard_split;

/* Split s (whole and current on every rank, as made or loaded) over the MPI ranks, the slabs'
 * edges frozen or not (cell_split.h). Every rank calls it; an error when the grid has too few
 * layers for the ranks, or the box is tilted. */
int hard_split_on(hard_system *s, int frozen);
void hard_split_free(hard_system *s);

/* The calls of cell_split.h on s->split, for s->grid or a grid g with as many layers. */
static inline int hard_split_layout(hard_system *s, const carlo_cell_grid *g) { return carlo_split_layout(s->split, g); }
static inline int hard_split_fits(const hard_system *s, const carlo_cell_grid *g) { return carlo_split_fits(s->split, g); }
static inline void hard_split_cells(const hard_system *s, const carlo_cell_grid *g, int64_t *c0, int64_t *c1)
{
    carlo_split_cells(s->split, g, c0, c1);
}
/* The cells a scan of s covers: this rank's own on a split system, else all of grid g. */
static inline void hard_own_cells(const hard_system *s, const carlo_cell_grid *g, int64_t *c0, int64_t *c1)
{
    *c0 = 0;
    *c1 = g->ncells;
    if (s->split)
        carlo_split_cells(s->split, g, c0, c1);
}
static inline void hard_split_active(const hard_system *s, int set, int64_t *t0, int64_t *t1)
{
    carlo_split_active(s->split, &s->grid, set, t0, t1);
}
static inline void hard_split_edge_layers(const hard_system *s, int bit, int out[2], int in[2])
{
    carlo_split_edge_layers(s->split, &s->grid, bit, out, in);
}
static inline void hard_split_neighbours(const hard_system *s, int dest[2], int src[2])
{
    carlo_split_neighbours(s->split, dest, src);
}
static inline size_t hard_split_layer_bytes(const hard_system *s) { return carlo_split_layer_bytes(s->split, &s->grid); }
/* The exchange after a set (bit: its parity along the split axis) or a shift along the split
 * axis (bit = -1) with the caller's packing: the GPU backend packs on the device into
 * page-locked buffers and stages its halos so, on one rank too (to itself, which measures the
 * staging's cost). */
static inline int hard_split_exchange_packed(hard_system *s, int bit, uint8_t *const send[2], uint8_t *const recv[2])
{
    return carlo_split_exchange_packed(s->split, &s->grid, bit, send, recv);
}
static inline int hard_split_after_set(hard_system *s, const carlo_cell_data *d, int set)
{
    return carlo_split_after_set(s->split, &s->grid, d, set);
}
static inline int hard_split_after_shift(hard_system *s, const carlo_cell_data *d, int axis)
{
    return carlo_split_after_shift(s->split, &s->grid, d, axis);
}
static inline int hard_split_halo_cells(const hard_system *s, const carlo_cell_grid *g, int64_t c0[2])
{
    return carlo_split_halo_cells(s->split, g, c0);
}
/* Whether a volume move of s->grid into ng is tried on this rank's slab (carlo_split_slab_trial). */
static inline int hard_split_slab_trial(const hard_system *s, const carlo_cell_grid *ng, const double lam[3])
{
    return carlo_split_slab_trial(s->split, &s->grid, ng, lam);
}
static inline int hard_split_gather(hard_system *s, const carlo_cell_data *d) { return carlo_split_gather(s->split, &s->grid, d); }
static inline int hard_split_sum(hard_system *s, int64_t *v, int n) { return carlo_split_sum(s->split, v, n); }
static inline int hard_split_min(hard_system *s, double *v) { return carlo_split_min(s->split, v); }

#endif
