/* lj_gpu.cuh — what the two CUDA backends of the Lennard-Jones model share (cuda/lj_dec.cu,
 * cuda/lj_cb.cu): the device-side move state the kernels update and the host reads back once
 * per call, the warp mask, and the search for the neighbour cell that holds a candidate. */
#ifndef CARLO_LJ_GPU_CUH
#define CARLO_LJ_GPU_CUH

namespace {

const unsigned FULL = 0xffffffffu;

struct dev_state {
    double U, W;
    unsigned long long moves;    /* number of the next move */
    unsigned long long accepted; /* during this call */
    int status;                  /* 1: a cell list was full; stopped before move `moves`
                                    (checkerboard: a cell shift overfilled a cell) */
    unsigned int blocks_done;    /* the launch variant's last-block ticket */
    unsigned long long fail_sweep; /* checkerboard: the sweep whose shift overfilled */
    unsigned int cb_next;          /* checkerboard: the next cell of the sweep (cb_sweep) */
};


/* The neighbour cell that holds candidate k of a neighbourhood listed cell after cell (off:
 * the prefix sums of their counts), searched from cell q on. */
__device__ __forceinline__ int cell_of(const int *off, int q, int k)
{
    while (off[q + 1] <= k)
        q++;
    return q;
}

} // namespace

#endif
