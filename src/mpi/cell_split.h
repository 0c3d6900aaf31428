/* cell_split.h — a cell grid (core/cells.h) split over the MPI ranks in slabs of cell layers
 * along its last axis (y in 2D, z in 3D), for the particle models that sweep the grid by
 * checkerboard sets (the hard disks and spheres, the hard shapes: decompose = true,
 * carlo-mpi(7)). Each rank updates the active cells of its own layers and keeps the layer on
 * either side, its neighbours' last and first, current; after each set the edge layers of the
 * set's parity go to the neighbours, after a cell shift along the split axis both.
 *
 * Frozen edges (decompose = "frozen", HPMC's inactive region): the sets leave each slab's first
 * and last layer alone, so no set reads a halo layer nor changes a neighbour's: the halos cross
 * only after a cell shift along the split axis. The chain then depends on the number of ranks
 * (the cells that sit out a sweep are the slabs' edges); its distribution does not.
 *
 * Every rank holds storage for the whole grid, laid out as an undecomposed system's, so that a
 * cell has the same index, the same random numbers and the same neighbours on every rank: a
 * split system makes the very chain of an undecomposed one. Only the own layers and the two
 * halo layers are current between sweeps; a gather (frames, checkpoints, box moves) makes every
 * layer current on every rank.
 *
 * The layers of a grid are contiguous in the cell index (the last axis is the slowest), and a
 * checkerboard grid has an even number of them, so a layer's parity survives the periodic wrap.
 * Every call that talks to the other ranks is collective; all return 0, or -1 with the message. */
#ifndef CARLO_CELL_SPLIT_H
#define CARLO_CELL_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "core/cells.h"

typedef struct carlo_split {
    int rank, ranks;
    int axis;       /* the split axis: dim - 1 */
    int lo, hi;     /* this rank's layers [lo, hi) along it */
    int *layers;    /* every rank's layer count */
    int full;       /* 1: every layer is current on this rank */
    int trial_full; /* the scale trial under way was made from the whole grid */
    int frozen;     /* decompose = "frozen": the slab's first and last layer sit out the sets */
    uint8_t *buf;   /* packed layers */
    size_t cap;
} carlo_split;

/* A split of grid g over the ranks of this run (rank and size from mpi/mpi.h), the whole grid
 * current, its edges frozen or not; NULL with the message when g has too few layers for the
 * ranks (carlo_split_fits). */
carlo_split *carlo_split_new(const carlo_cell_grid *g, int frozen);
void carlo_split_free(carlo_split *p);

/* Whether grid g (after a box move or a compression changed it) can be split: as many layers as
 * ranks at least (three times as many with frozen edges), a layer small enough for one message. */
int carlo_split_fits(const carlo_split *p, const carlo_cell_grid *g);
/* Every rank's layers for grid g. */
int carlo_split_layout(carlo_split *p, const carlo_cell_grid *g);

/* This rank's cells: indices [c0, c1) of grid g. */
void carlo_split_cells(const carlo_split *p, const carlo_cell_grid *g, int64_t *c0, int64_t *c1);
/* This rank's active cells of set `set`: t in [t0, t1) of carlo_cell_active (with frozen edges,
 * those of the layers between the first and the last). */
void carlo_split_active(const carlo_split *p, const carlo_cell_grid *g, int set, int64_t *t0, int64_t *t1);
/* The first cell of each halo layer into c0[0..1]; returns the cells in a layer (0: one rank,
 * no halos). */
int carlo_split_halo_cells(const carlo_split *p, const carlo_cell_grid *g, int64_t c0[2]);

/* The layers an exchange moves: out[k] sent, in[k] received (k = 0: the last layer up and the
 * lower halo from below; k = 1: the first layer down and the upper halo from above), -1 for a
 * layer not moved (bit >= 0: the layers of that parity only, as after a set; -1: all, as after
 * a shift along the split axis). */
void carlo_split_edge_layers(const carlo_split *p, const carlo_cell_grid *g, int bit, int out[2], int in[2]);
/* The ranks of an exchange's messages: dest[k] receives out[k], src[k] sends in[k] (periodic). */
void carlo_split_neighbours(const carlo_split *p, int dest[2], int src[2]);
/* The bytes of one layer packed: its cell counts, then every position and word plane slot by
 * slot, each a run of the layer's cells (4 bytes a cell). */
size_t carlo_split_layer_bytes(const carlo_split *p, const carlo_cell_grid *g);
/* The exchange with the caller's packing: send[k] holds layer out[k] packed, recv[k] receives
 * layer in[k], each carlo_split_layer_bytes long. Made on one rank too (to itself). */
int carlo_split_exchange_packed(carlo_split *p, const carlo_cell_grid *g, int bit, uint8_t *const send[2],
                                uint8_t *const recv[2]);
/* After the update of set `set` of the host cells d: the set's edge layers to the neighbours
 * (none with frozen edges). */
int carlo_split_after_set(carlo_split *p, const carlo_cell_grid *g, const carlo_cell_data *d, int set);
/* After a cell shift of the host cells d along axis: both halo layers from the neighbours when
 * the shift crossed the slabs' edges (a shift along another axis stays within each layer). */
int carlo_split_after_shift(carlo_split *p, const carlo_cell_grid *g, const carlo_cell_data *d, int axis);
/* The cell shift sh of the host cells src into dst over this rank's layers and, for a shift
 * along another axis, its halo layers (a shift along the split axis gathers an edge cell from
 * a halo one), then carlo_split_after_shift on dst once the caller swapped: this does the
 * shift; -1 naming the cell that overflowed. */
int carlo_split_shift_host(const carlo_split *p, const carlo_cell_grid *g, const carlo_cell_data *src,
                           const carlo_cell_data *dst, carlo_cell_shift sh);
/* The host cells src of grid og scaled by lam and re-cut into grid ng (storage dst) over this
 * rank's layers and its halo layers, which a cut kept (carlo_split_slab_trial) makes from the
 * same old layers: 1 when a cell overflowed, else 0. */
int carlo_split_regrid_host(const carlo_split *p, const carlo_cell_grid *og, const carlo_cell_data *src,
                            const carlo_cell_grid *ng, const carlo_cell_data *dst, const double lam[3]);
/* Whether a box move that scales grid og by lam into ng is tried on this rank's slab (its own
 * and halo layers re-cut, its own checked, the ranks' verdicts added up): there are several
 * ranks, the other layers are not current here, and the move keeps the cut along the split axis
 * (as many layers, each new layer made from the same old layer alone). Else the whole grid is
 * gathered and every rank tries the move on all of it. */
int carlo_split_slab_trial(const carlo_split *p, const carlo_cell_grid *og, const carlo_cell_grid *ng,
                           const double lam[3]);
/* Every layer of the host cells d from the rank that owns it (a no-op when already current). */
int carlo_split_gather(carlo_split *p, const carlo_cell_grid *g, const carlo_cell_data *d);
/* Sum n counters, or the smallest of one value, over the ranks. */
int carlo_split_sum(const carlo_split *p, int64_t *v, int n);
int carlo_split_min(const carlo_split *p, double *v);

#endif
