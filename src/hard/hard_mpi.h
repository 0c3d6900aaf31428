/* hard_mpi.h — hard particles split over the MPI ranks (decompose = true, carlo-mpi(7)): each
 * rank updates the cell layers of one slab along the grid's last axis (y for disks, z for
 * spheres) and keeps the layer on either side, its neighbours' last and first, current; the
 * CPU backend (hard_cpu.c) calls these around its loops, the GPU one (cuda/hard.cu and
 * cuda/hard_split.cu) around its kernels, the halo layers packed on the device and the gathers
 * on a host copy of the grid.
 *
 * Every rank holds storage for the whole grid, laid out as an undecomposed system's, so that a
 * cell has the same index, the same random numbers and the same neighbours on every rank: a
 * split system makes the very chain of an undecomposed one. Only its own layers and the two
 * halo layers are current between sweeps; a gather (frames, checkpoints, volume moves) makes
 * every layer current on every rank. */
#ifndef CARLO_HARD_MPI_H
#define CARLO_HARD_MPI_H

#include <stddef.h>
#include <stdint.h>

#include "hard/hard.h"

typedef struct hard_split {
    int rank, ranks;
    int axis;       /* the split axis: dim - 1 */
    int lo, hi;     /* this rank's layers [lo, hi) along it */
    int *layers;    /* every rank's layer count */
    int full;       /* 1: every layer is current on this rank */
    int trial_full; /* the scale trial under way was made from the whole grid */
    uint8_t *buf;   /* packed layers */
    size_t cap;
} hard_split;

/* Split s (CPU, whole and current on every rank, as made or loaded) over the MPI ranks. Every
 * rank calls it; an error when the grid has fewer layers than there are ranks. */
int hard_split_on(hard_system *s);
void hard_split_free(hard_system *s);
/* The layers of every rank for grid g (after a volume move or compression changed the grid);
 * -1 when g has fewer layers than ranks. */
int hard_split_layout(hard_system *s, const carlo_cell_grid *g);
int hard_split_fits(const hard_system *s, const carlo_cell_grid *g); /* the check alone */

/* This rank's cells: indices [c0, c1) of grid g, s->grid or one with as many layers (layers
 * are contiguous in the cell index). */
void hard_split_cells(const hard_system *s, const carlo_cell_grid *g, int64_t *c0, int64_t *c1);
/* This rank's active cells of set `set`: t in [t0, t1) of carlo_cell_active. */
void hard_split_active(const hard_system *s, int set, int64_t *t0, int64_t *t1);

/* The layers an exchange moves: out[k] sent, in[k] received (k = 0: the last layer up and the
 * lower halo from below; k = 1: the first layer down and the upper halo from above), -1 for a
 * layer not moved (bit >= 0: the layers of that parity only, as after a set; -1: all, as after
 * a shift along the split axis). */
void hard_split_edge_layers(const hard_system *s, int bit, int out[2], int in[2]);
/* The ranks of an exchange's messages: dest[k] receives out[k], src[k] sends in[k] (k = 0: up,
 * from below; k = 1: down, from above; periodic). */
void hard_split_neighbours(const hard_system *s, int dest[2], int src[2]);
/* The bytes of one layer packed: its cell counts, then every position and word plane slot by
 * slot, each a run of the layer's cells (4 bytes a cell), as the halo messages carry it. */
size_t hard_split_layer_bytes(const hard_system *s);
/* The exchange of hard_split_after_set (bit: the set's parity along the split axis) or of
 * hard_split_after_shift along the split axis (bit = -1) with the caller's packing: send[k]
 * holds layer out[k] packed (k with out[k] >= 0), recv[k] receives layer in[k], each
 * hard_split_layer_bytes long. Made on one rank too (to itself, an identity): the GPU backend
 * packs on the device into page-locked buffers and stages its halos so, and its split over one
 * rank then costs what the staging costs. */
int hard_split_exchange_packed(hard_system *s, int bit, uint8_t *const send[2], uint8_t *const recv[2]);
/* After the update of set `set`: the layers of that set at the slab's edges to the neighbours. */
int hard_split_after_set(hard_system *s, const carlo_cell_data *d, int set);
/* After a cell shift of this rank's layers along axis: both halo layers from the neighbours when
 * the shift crossed the slabs' edges; a shift along another axis stays within each layer, and
 * the backend shifts the halo layers too (hard_split_halo_cells), from the halos it holds. */
int hard_split_after_shift(hard_system *s, const carlo_cell_data *d, int axis);
/* The first cell of each halo layer into c0[0..1]; returns the cells in a layer (0: no halos). */
int hard_split_halo_cells(const hard_system *s, const carlo_cell_grid *g, int64_t c0[2]);
/* Whether scaling s->grid by lam into ng keeps the cut along the split axis (as many layers,
 * each new layer made from the same old layer alone): then each rank re-cuts its own and halo
 * layers where it is, and the ranks add up their overlaps; else the whole grid is gathered. */
int hard_split_keeps_cut(const hard_system *s, const carlo_cell_grid *ng, const double lam[3]);
/* Every layer from the rank that owns it (a no-op when already current). */
int hard_split_gather(hard_system *s, const carlo_cell_data *d);
/* Sum n counters over the ranks. */
int hard_split_sum(hard_system *s, int64_t *v, int n);
int hard_split_min(hard_system *s, double *v);

#endif
