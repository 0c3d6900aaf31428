/* hard_gpu.h — the state of the hard-particle CUDA backend, shared by cuda/hard.cu (the kernels
 * and the backend's operations) and cuda/hard_split.cu (a split system's halo exchanges and
 * gathers, hard_mpi.h). Private to those two files. */
#ifndef CARLO_CUDA_HARD_GPU_H
#define CARLO_CUDA_HARD_GPU_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {
#include "hard/hard.h"
}

namespace hard_gpu {

/* Device counters, one allocation: translation moves, a flag for overflows, overlaps and the
 * smallest squared distance (as the bits of a positive float, which order like integers). */
struct dev_counters {
    unsigned long long tried, accepted, overlaps;
    unsigned int flag;       /* a cell overflowed in a shift: the system is broken */
    unsigned int rflag;      /* a cell overflowed in a trial re-gridding: the trial overlaps */
    unsigned int r2min_bits;
};

struct gpu_impl {
    carlo_cell_data cur, spare;
    carlo_cell_grid cur_grid, spare_grid; /* shapes the storages were allocated for */
    dev_counters *ctr;
    unsigned int *hist;                   /* pressure histograms (gr then sdf) */
    size_t hist_len;
    size_t smem_max;                      /* shared memory a block may have (opt-in limit) */
    double *sites;                        /* the tether's sites (N x 3), when set */
    /* a split system (hard_mpi.h): a host copy of the grid for gathers, of which only the rank's
     * own layers are ever copied down */
    carlo_cell_data mirror;
    carlo_cell_grid mirror_grid;
    void *pinned[3];                      /* its arrays as page-locked (registered), or NULL */
    void *pin_tried[3];                   /* the arrays a registration was tried for */
    /* its halo exchanges (split_set): the side stream that runs the edge layers' updates and
     * moves the halos while the main stream updates the interior; events between the two */
    cudaStream_t side;
    cudaEvent_t ev_main, ev_edge, ev_down, ev_side;
    size_t layer_bytes;                   /* of one packed layer of s->grid */
    size_t stage_cap;                     /* the layer bytes the staging was made for */
    /* the staging: shared by the ranks of one machine (shared = 1; every rank's part as this
     * device sees it, peer[r], 4 layers each: two turns of sent 0, 1), or page-locked here
     * (hstage: sent 0, 1, received 0, 1), packed and unpacked by the device in place */
    int shared;
    uint8_t **peer;
    uint8_t *shared_lo;                   /* the range registered with CUDA */
    uint8_t *hstage;
    uint64_t turn;                        /* exchanges made: the shared staging's turn is turn % 2 */
    int pending;                          /* an exchange's layers on their way down */
    int pending_bit;                      /* its parity (hard_split_edge_layers) */
    uint64_t pending_turn;
    int edge_on_side;                     /* edge updates queued on side the main stream has not waited for */
    int side_used;                        /* work queued on side the main stream has not waited for */
};

inline gpu_impl *impl(hard_system *s) { return static_cast<gpu_impl *>(s->impl); }

/* ---------- cuda/hard_split.cu: a split system's halo exchanges and gathers ---------- */

/* The halo staging let go (the shared memory itself lives until MPI ends). */
void stage_free(gpu_impl *g);
/* The host copy's registration with CUDA undone. */
void mirror_unpin(gpu_impl *g);
/* The side stream, its events and the staging fit for s->grid (collective on a split system). */
int stage_fit(hard_system *s);
/* The side stream to wait for everything queued on the main stream so far. */
int side_after_main(gpu_impl *g);
/* The edge layers of parity bit (-1: both, after a shift along the split axis) on their way
 * out, behind what the side stream holds. */
int halo_start(hard_system *s, int bit);
/* The exchange under way completed, the halos into the cells on the side stream. */
int halo_finish(hard_system *s);
/* The exchange under way completed and the main stream behind everything on the side stream:
 * what every operation but a set's update starts with (a no-op on a whole system). */
int split_settle(hard_system *s);
/* Every layer of a split system current on this rank's device (after split_settle). */
int split_gather(hard_system *s);

} // namespace hard_gpu

#endif
