/* lj.cu — the CUDA backend of the Lennard-Jones model, decomposition mode: every trial move's
 * energy summed on the device in the canonical order of src/lj/lj_kernel.h, the Metropolis
 * decision and the update made on the device, no host round trip per move.
 *
 * Kernels (the chain is the same with each; sys.kernel picks one for benchmarks):
 *   persistent  cells: one block of LJ_LANES threads runs many moves, each thread a lane;
 *               all: a cooperative grid, each block a set of tiles (positions cached in
 *               shared memory), one grid barrier per move; one block for small N.
 *   launch      one launch per move; for all, the last block to finish reduces the tile
 *               sums and decides (Hailat et al., Algorithm 3).
 *   graph       the per-move launches recorded once in a CUDA graph and replayed.
 * Device-side state (U, W, move counter, acceptances, an overflow flag) lives in one struct
 * the kernels update; the host reads it back once per call of the backend.
 *
 * Checkerboard mode: one warp per active cell (lanes = 32, the near-candidate order of
 * lj_kernel.h; a whole sweep in one launch, the warps taking the cells of all its sets from a
 * counter, each cell waiting only for its neighbours of the sets before its own) or one block
 * per active cell (lanes = 64 or 128 threads, the all-candidate order, one launch per set),
 * the cell's neighbourhood staged in shared memory,
 * its particles moved in the order lj_cb_order gives; the cell shift of core/cells_kernel.h, one
 * thread per cell into a second buffer. The set order and the shift are drawn on the host,
 * as the CPU backend draws them. */
#include <cooperative_groups.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "core/error.h"
#include "lj/lj.h"
}
#include "cells.h"
#include "check.h"

namespace cg = cooperative_groups;

namespace {

/* Four doubles in one 32-byte aligned record: a cell slot (x, y, z, index) or a tile's sums. */
struct __align__(32) d4 {
    double x, y, z, w;
};

__host__ __device__ __forceinline__ d4 mk4(double x, double y, double z, double w)
{
    d4 r;
    r.x = x;
    r.y = y;
    r.z = z;
    r.w = w;
    return r;
}

const unsigned FULL = 0xffffffffu;
const int GRAPH_MOVES = 256; /* launches recorded in one graph */

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

/* What every kernel needs, passed by value. */
struct kp {
    lj_geom g;
    unsigned long long seed;
    uint32_t N, C, G, Gp;
    double beta, delta;
    int dim, nq, cap;
    double *x, *y, *z;
    int32_t *count;
    d4 *slot; /* cell c, member m: slot[c * cap + m] = x, y, z, index */
    int32_t *cell_of, *slot_of;
    dev_state *st;
    d4 *partial; /* [2][LJ_TILES_MAX] tile sums (u old, w old, u new, w new) */
};

struct gpu_impl {
    double *x, *y, *z;
    int32_t *count, *cell_of, *slot_of;
    d4 *slot;
    int cap;
    dev_state *st;
    d4 *partial;
    double *widom;
    uint32_t widom_cap;
    double *host; /* staging, 4 N doubles */
    cudaGraphExec_t graph;
    int graph_ok;
    double graph_beta, graph_delta; /* the graph's kernels carry these by value: */
    int graph_cap;                  /* record again when they change */
    int coop_blocks;
    size_t coop_smem;
    /* checkerboard: the cells (and the shift's second buffer) and the per-cell sums */
    carlo_cell_data cur, tmp;
    double *acc_u, *acc_w;
    uint32_t *cb_done;  /* per cell: the stamp of the last sweep that updated it (cb_sweep) */
    uint32_t cb_stamp;  /* the last sweep's stamp (never 0) */
    size_t smem_optin; /* shared memory a block may have (opt-in limit) */
};

gpu_impl *impl(lj_system *s) { return static_cast<gpu_impl *>(s->impl); }

/* ---------- device helpers ---------- */

/* A d4 read through L2 only (other blocks wrote it; this SM's L1 may hold a stale line). */
__device__ __forceinline__ d4 ldcg4(const d4 *q)
{
    const double2 *h = reinterpret_cast<const double2 *>(q);
    double2 a = __ldcg(h), b = __ldcg(h + 1);
    return mk4(a.x, a.y, b.x, b.y);
}

/* The halving tree over the block's LJ_LANES lanes for four sums; thread 0 gets the result.
 * Strides 64 and 32 through shared memory, 16 ... 1 by shuffles: the same additions, in the
 * same order, as lj_tree on the host. */
__device__ __forceinline__ void block_tree4(double v[4], double (*sm)[LJ_LANES])
{
    const int t = threadIdx.x;
#pragma unroll
    for (int q = 0; q < 4; q++)
        sm[q][t] = v[q];
    __syncthreads();
    if (t < 64)
#pragma unroll
        for (int q = 0; q < 4; q++)
            sm[q][t] = sm[q][t] + sm[q][t + 64];
    __syncthreads();
    if (t < 32) {
#pragma unroll
        for (int q = 0; q < 4; q++)
            v[q] = sm[q][t] + sm[q][t + 32];
#pragma unroll
        for (int s = 16; s > 0; s >>= 1)
#pragma unroll
            for (int q = 0; q < 4; q++)
                v[q] = v[q] + __shfl_down_sync(FULL, v[q], s);
    }
}

/* One warp: the neighbour cells of `cell` and the prefix offsets of their member counts. */
__device__ __forceinline__ void prepare_list(const kp &p, const int32_t *count, int cell,
                                             int *cells, int *off)
{
    const int lane = threadIdx.x & 31;
    int cnt = 0;
    if (lane < p.nq) {
        int c = lj_cell_neighbour(&p.g, cell, lane);
        cells[lane] = c;
        cnt = count[c];
    }
    int v = cnt;
#pragma unroll
    for (int s = 1; s < 32; s <<= 1) {
        int y = __shfl_up_sync(FULL, v, s);
        if (lane >= s)
            v += y;
    }
    if (lane < p.nq)
        off[lane + 1] = v;
    if (lane == 0)
        off[0] = 0;
}

/* The neighbour cell that holds candidate k of a neighbourhood listed cell after cell (off:
 * the prefix sums of their counts), searched from cell q on. */
__device__ __forceinline__ int cell_of(const int *off, int q, int k)
{
    while (off[q + 1] <= k)
        q++;
    return q;
}

/* This thread's lane of a cell-list sum: candidates k = lane, lane + LJ_LANES, ...; position a
 * into acc_a and, when b is given, position b into acc_b. */
__device__ __forceinline__ void scan_list(const kp &p, const int *cells, const int *off,
                                          const double a[3], lj_uw *acc_a, const double *b,
                                          lj_uw *acc_b, uint32_t skip)
{
    const int M = off[p.nq];
    int q = 0;
    for (int k = threadIdx.x; k < M; k += LJ_LANES) {
        q = cell_of(off, q, k);
        d4 e = p.slot[(size_t)cells[q] * p.cap + (k - off[q])];
        if ((uint32_t)e.w == skip)
            continue;
        lj_accumulate(&p.g, a, e.x, e.y, e.z, acc_a);
        if (b)
            lj_accumulate(&p.g, b, e.x, e.y, e.z, acc_b);
    }
}

/* Thread 0: apply an accepted move to positions and cell lists (the last member of the old
 * cell fills the hole, the particle is appended to the new cell). Returns 0 when the new
 * cell is full: nothing is changed then. */
__device__ __forceinline__ int apply_cells(const kp &p, int32_t *count, uint32_t i, int co,
                                           int cn, const double np[3])
{
    if (cn != co) {
        if (count[cn] == p.cap)
            return 0;
        int last = count[co] - 1, si = p.slot_of[i];
        if (si != last) {
            d4 e = p.slot[(size_t)co * p.cap + last];
            p.slot[(size_t)co * p.cap + si] = e;
            p.slot_of[(uint32_t)e.w] = si;
        }
        count[co] = last;
        int sn = count[cn];
        count[cn] = sn + 1;
        p.cell_of[i] = cn;
        p.slot_of[i] = sn;
    }
    p.slot[(size_t)cn * p.cap + p.slot_of[i]] = mk4(np[0], np[1], np[2], (double)i);
    p.x[i] = np[0];
    p.y[i] = np[1];
    p.z[i] = np[2];
    return 1;
}

/* ---------- cells: one block, many moves ---------- */

/* Cell counts small enough to live in shared memory during a persistent run (the block is
 * their only writer): one L2 round trip less per move. */
const int SMEM_COUNTS_MAX = 49152; /* 192 KiB: one block per GPU, it may take most of an SM */

template <bool SMEM_COUNTS>
__global__ void __launch_bounds__(LJ_LANES) cells_moves(kp p, unsigned long long n, int ncell)
{
    extern __shared__ int32_t counts_sm[];
    __shared__ double sm[4][LJ_LANES];
    __shared__ int cells[2][32], off[2][33];
    __shared__ int stop;
    const int t = threadIdx.x;
    if (p.st->status)
        return;
    int32_t *count = p.count;
    if (SMEM_COUNTS) {
        for (int c = t; c < ncell; c += LJ_LANES)
            counts_sm[c] = p.count[c];
        count = counts_sm;
    }
    const unsigned long long first = p.st->moves;
    double U = p.st->U, W = p.st->W;
    unsigned long long acc = 0, k = 0;
    if (t == 0)
        stop = 0;
    __syncthreads();
    for (; k < n; k++) {
        lj_trial tr = lj_draw_trial(p.seed, first + k, p.N, p.delta, p.dim);
        const uint32_t i = tr.i;
        const double o[3] = {p.x[i], p.y[i], p.z[i]};
        const int co = p.cell_of[i];
        double np[3];
#pragma unroll
        for (int a = 0; a < 3; a++)
            np[a] = lj_wrap(o[a] + tr.d[a], p.g.L[a]);
        const int cn = lj_cell_of(&p.g, np[0], np[1], np[2]);
        if (t < 32)
            prepare_list(p, count, co, cells[0], off[0]);
        else if (t < 64 && cn != co)
            prepare_list(p, count, cn, cells[1], off[1]);
        __syncthreads();
        lj_uw ao = {0.0, 0.0}, an = {0.0, 0.0};
        if (cn == co) {
            scan_list(p, cells[0], off[0], o, &ao, np, &an, i);
        } else {
            scan_list(p, cells[0], off[0], o, &ao, NULL, NULL, i);
            scan_list(p, cells[1], off[1], np, &an, NULL, NULL, i);
        }
        double v[4] = {ao.u, ao.w, an.u, an.w};
        block_tree4(v, sm);
        if (t == 0) {
            double dU = v[2] - v[0];
            if (lj_accept(dU, p.beta, tr.u)) {
                if (apply_cells(p, count, i, co, cn, np)) {
                    U = U + dU;
                    W = W + (v[3] - v[1]);
                    acc++;
                } else {
                    stop = 1;
                }
            }
        }
        __syncthreads();
        if (stop)
            break;
    }
    if (SMEM_COUNTS)
        for (int c = t; c < ncell; c += LJ_LANES)
            p.count[c] = counts_sm[c];
    if (t == 0) {
        p.st->U = U;
        p.st->W = W;
        p.st->moves = first + k;
        p.st->accepted += acc;
        if (stop)
            p.st->status = 1;
    }
}

/* ---------- all particles ---------- */

/* This block's lanes over tile g for positions o and np (particle `skip` left out). */
template <bool CACHED>
__device__ __forceinline__ void tile_lanes(const kp &p, uint32_t g, const double *cache,
                                           const double o[3], const double np[3], uint32_t skip,
                                           double v[4])
{
    lj_uw ao = {0.0, 0.0}, an = {0.0, 0.0};
    const uint32_t base = g * LJ_LANES * p.C, span = LJ_LANES * p.C;
    for (uint32_t c = 0; c < p.C; c++) {
        uint32_t j = base + c * LJ_LANES + threadIdx.x;
        if (j >= p.N || j == skip)
            continue;
        double x, y, z;
        if (CACHED) {
            uint32_t l = j - base;
            x = cache[l];
            y = cache[span + l];
            z = cache[2 * span + l];
        } else {
            x = __ldcg(p.x + j);
            y = __ldcg(p.y + j);
            z = __ldcg(p.z + j);
        }
        lj_accumulate(&p.g, o, x, y, z, &ao);
        lj_accumulate(&p.g, np, x, y, z, &an);
    }
    v[0] = ao.u;
    v[1] = ao.w;
    v[2] = an.u;
    v[3] = an.w;
}

/* The tile tree over Gp entries in shared memory (entries >= G are 0); result in ts[0]. */
__device__ __forceinline__ void tile_tree(d4 *ts, uint32_t Gp)
{
    for (uint32_t s = Gp / 2; s > 0; s >>= 1) {
        for (uint32_t q = threadIdx.x; q < s; q += LJ_LANES) {
            d4 a = ts[q], b = ts[q + s];
            ts[q] = mk4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
        }
        __syncthreads();
    }
}

/* Persistent moves over all particles. Block b owns tiles b, b + nb, ...; with CACHED their
 * positions sit in shared memory and only the owner writes them. A block other than the
 * owner reads the moved particle from L2 (after the grid barrier that follows its last
 * update), or from its own registers when the previous move moved the same particle. */
template <bool CACHED>
__global__ void __launch_bounds__(LJ_LANES) all_moves(kp p, unsigned long long n)
{
    extern __shared__ double cache[]; /* per owned tile: x[span], y[span], z[span] */
    __shared__ double sm[4][LJ_LANES];
    __shared__ d4 ts[LJ_TILES_MAX];
    cg::grid_group grid = cg::this_grid();
    const uint32_t nb = gridDim.x, b = blockIdx.x, t = threadIdx.x;
    const uint32_t span = LJ_LANES * p.C;
    const unsigned long long first = p.st->moves;
    double U = p.st->U, W = p.st->W;
    unsigned long long acc = 0;
    if (CACHED)
        for (uint32_t g = b, r = 0; g < p.G; g += nb, r++)
            for (uint32_t l = t; l < span; l += LJ_LANES) {
                uint32_t j = g * span + l;
                double *c = cache + (size_t)r * 3 * span;
                c[l] = j < p.N ? p.x[j] : 0.0;
                c[span + l] = j < p.N ? p.y[j] : 0.0;
                c[2 * span + l] = j < p.N ? p.z[j] : 0.0;
            }
    __syncthreads();
    uint32_t last_i = 0xffffffffu;
    double last_p[3] = {0.0, 0.0, 0.0};
    for (unsigned long long k = 0; k < n; k++) {
        lj_trial tr = lj_draw_trial(p.seed, first + k, p.N, p.delta, p.dim);
        const uint32_t i = tr.i, gi = i / span, owner = gi % nb;
        double o[3];
        if (i == last_i) {
            o[0] = last_p[0];
            o[1] = last_p[1];
            o[2] = last_p[2];
        } else if (CACHED && owner == b) {
            const double *c = cache + (size_t)(gi / nb) * 3 * span;
            uint32_t l = i - gi * span;
            o[0] = c[l];
            o[1] = c[span + l];
            o[2] = c[2 * span + l];
        } else {
            o[0] = __ldcg(p.x + i);
            o[1] = __ldcg(p.y + i);
            o[2] = __ldcg(p.z + i);
        }
        double np[3];
#pragma unroll
        for (int a = 0; a < 3; a++)
            np[a] = lj_wrap(o[a] + tr.d[a], p.g.L[a]);
        d4 *part = p.partial + (k & 1) * LJ_TILES_MAX;
        for (uint32_t g = b, r = 0; g < p.G; g += nb, r++) {
            double v[4];
            tile_lanes<CACHED>(p, g, cache + (size_t)r * 3 * span, o, np, i, v);
            block_tree4(v, sm);
            if (t == 0)
                part[g] = mk4(v[0], v[1], v[2], v[3]);
            __syncthreads();
        }
        if (nb > 1)
            grid.sync();
        for (uint32_t q = t; q < p.Gp; q += LJ_LANES)
            ts[q] = q < p.G ? ldcg4(part + q) : mk4(0.0, 0.0, 0.0, 0.0);
        __syncthreads();
        tile_tree(ts, p.Gp);
        const d4 tot = ts[0];
        const double dU = tot.z - tot.x;
        const int ok = lj_accept(dU, p.beta, tr.u);
        if (ok) {
            if (owner == b && t == 0) {
                if (CACHED) {
                    double *c = cache + (size_t)(gi / nb) * 3 * span;
                    uint32_t l = i - gi * span;
                    c[l] = np[0];
                    c[span + l] = np[1];
                    c[2 * span + l] = np[2];
                }
                p.x[i] = np[0];
                p.y[i] = np[1];
                p.z[i] = np[2];
            }
            U = U + dU;
            W = W + (tot.w - tot.y);
            acc++;
        }
        /* the owner's write of an accepted move is visible to all blocks after the next
         * barrier; until then every block uses its own copy */
        last_i = ok ? i : 0xffffffffu;
        last_p[0] = np[0];
        last_p[1] = np[1];
        last_p[2] = np[2];
        __syncthreads(); /* ts and the cache are read again next move */
    }
    if (b == 0 && t == 0) {
        p.st->U = U;
        p.st->W = W;
        p.st->moves = first + n;
        p.st->accepted += acc;
    }
}

/* One move per launch; block g computes tile g, the last block to finish decides. */
__global__ void __launch_bounds__(LJ_LANES) all_one_move(kp p)
{
    __shared__ double sm[4][LJ_LANES];
    __shared__ d4 ts[LJ_TILES_MAX];
    __shared__ int last;
    const uint32_t t = threadIdx.x;
    const unsigned long long move = p.st->moves;
    lj_trial tr = lj_draw_trial(p.seed, move, p.N, p.delta, p.dim);
    const uint32_t i = tr.i;
    const double o[3] = {p.x[i], p.y[i], p.z[i]};
    double np[3];
#pragma unroll
    for (int a = 0; a < 3; a++)
        np[a] = lj_wrap(o[a] + tr.d[a], p.g.L[a]);
    double v[4];
    tile_lanes<false>(p, blockIdx.x, NULL, o, np, i, v);
    block_tree4(v, sm);
    if (t == 0) {
        p.partial[blockIdx.x] = mk4(v[0], v[1], v[2], v[3]);
        __threadfence();
        last = atomicAdd(&p.st->blocks_done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last)
        return;
    __threadfence();
    for (uint32_t q = t; q < p.Gp; q += LJ_LANES)
        ts[q] = q < p.G ? ldcg4(p.partial + q) : mk4(0.0, 0.0, 0.0, 0.0);
    __syncthreads();
    tile_tree(ts, p.Gp);
    if (t == 0) {
        const d4 tot = ts[0];
        const double dU = tot.z - tot.x;
        if (lj_accept(dU, p.beta, tr.u)) {
            p.x[i] = np[0];
            p.y[i] = np[1];
            p.z[i] = np[2];
            p.st->U = p.st->U + dU;
            p.st->W = p.st->W + (tot.w - tot.y);
            p.st->accepted += 1;
        }
        p.st->moves = move + 1;
        p.st->blocks_done = 0;
    }
}

/* ---------- Widom insertions: one block per test particle ---------- */

__global__ void __launch_bounds__(LJ_LANES) widom_kernel(kp p, int cells_sum,
                                                         unsigned long long sample, double tail,
                                                         double *out)
{
    __shared__ double sm[4][LJ_LANES];
    __shared__ d4 ts[LJ_TILES_MAX];
    __shared__ int cells[32], off[33];
    const uint32_t k = blockIdx.x, t = threadIdx.x;
    double pos[3];
    lj_widom_position(&p.g, p.seed, sample, k, pos);
    double eu;
    if (cells_sum) {
        if (t < 32)
            prepare_list(p, p.count, lj_cell_of(&p.g, pos[0], pos[1], pos[2]), cells, off);
        __syncthreads();
        lj_uw a = {0.0, 0.0};
        scan_list(p, cells, off, pos, &a, NULL, NULL, 0xffffffffu);
        double v[4] = {a.u, a.w, 0.0, 0.0};
        block_tree4(v, sm);
        eu = v[0];
    } else {
        for (uint32_t g = 0; g < p.G; g++) {
            double v[4];
            tile_lanes<false>(p, g, NULL, pos, pos, 0xffffffffu, v);
            block_tree4(v, sm);
            if (t == 0)
                ts[g] = mk4(v[0], v[1], 0.0, 0.0);
            __syncthreads();
        }
        for (uint32_t q = p.G + t; q < p.Gp; q += LJ_LANES)
            ts[q] = mk4(0.0, 0.0, 0.0, 0.0);
        __syncthreads();
        tile_tree(ts, p.Gp);
        eu = ts[0].x;
    }
    if (t == 0)
        out[k] = lj_widom_factor(eu, tail, p.beta);
}

/* ---------- host side ---------- */

kp params(lj_system *s)
{
    gpu_impl *g = impl(s);
    kp p;
    memset(&p, 0, sizeof p);
    p.g = s->g;
    p.seed = s->seed;
    p.N = s->N;
    lj_tiles(s->N, &p.C, &p.G);
    p.Gp = lj_pow2_at_least(p.G);
    p.beta = s->beta;
    p.delta = s->delta;
    p.dim = s->dim;
    p.nq = lj_neighbour_count(s->dim);
    p.cap = g->cap;
    p.x = g->x;
    p.y = g->y;
    p.z = g->z;
    p.count = g->count;
    p.slot = g->slot;
    p.cell_of = g->cell_of;
    p.slot_of = g->slot_of;
    p.st = g->st;
    p.partial = g->partial;
    return p;
}

void free_cells(gpu_impl *g)
{
    cudaFree(g->count);
    cudaFree(g->slot);
    cudaFree(g->cell_of);
    cudaFree(g->slot_of);
    g->count = g->cell_of = g->slot_of = NULL;
    g->slot = NULL;
}

void drop_graph(gpu_impl *g)
{
    if (g->graph_ok)
        cudaGraphExecDestroy(g->graph);
    g->graph_ok = 0;
}

int gpu_create(lj_system *s)
{
    gpu_impl *g = static_cast<gpu_impl *>(carlo_calloc(1, sizeof(gpu_impl), "the Lennard-Jones GPU backend"));
    if (!g)
        return -1;
    s->impl = g;
    CK_MALLOC(&g->st, sizeof(dev_state), "the move state");
    CK(cudaMemset(g->st, 0, sizeof(dev_state)));
    if (s->mode == LJ_CHECKERBOARD) {
        int dev = 0, optin = 0;
        CK(cudaGetDevice(&dev));
        CK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
        g->smem_optin = (size_t)optin;
        return 0; /* the cells come with cb_upload */
    }
    size_t n = s->N;
    CK_MALLOC(&g->x, n * sizeof(double), "positions");
    CK_MALLOC(&g->y, n * sizeof(double), "positions");
    CK_MALLOC(&g->z, n * sizeof(double), "positions");
    CK_MALLOC(&g->partial, 2 * LJ_TILES_MAX * sizeof(d4), "tile sums");
    g->host = static_cast<double *>(carlo_malloc(carlo_mulsize(n, 4 * sizeof(double)), "a staging buffer"));
    if (!g->host)
        return -1;
    if (s->sum == LJ_SUM_ALL) {
        /* the cooperative grid: as many blocks as tiles, as far as they can all be resident */
        uint32_t C, G;
        lj_tiles(s->N, &C, &G);
        int dev = 0, sms = 0, coop = 0;
        CK(cudaGetDevice(&dev));
        CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        CK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
        /* one block for small systems (no grid barrier); otherwise one block per tile with
         * its positions in shared memory, or, when they do not fit, as many blocks as can be
         * resident reading positions through L2 */
        uint32_t nb = s->N <= 2048 || !coop ? 1 : G;
        size_t smem = (size_t)((G + nb - 1) / nb) * 3 * LJ_LANES * C * sizeof(double);
        int fits = 0;
        if (smem <= 160 * 1024) {
            CK(cudaFuncSetAttribute(all_moves<true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)smem));
            CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fits, all_moves<true>, LJ_LANES, smem));
        }
        if (fits > 0 && nb <= (uint32_t)fits * (uint32_t)sms) {
            g->coop_blocks = (int)nb;
            g->coop_smem = smem;
        } else {
            CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fits, all_moves<false>, LJ_LANES, 0));
            uint32_t most = (uint32_t)(fits > 0 ? fits : 1) * (uint32_t)sms;
            g->coop_blocks = (int)(!coop ? 1 : (G < most ? G : most));
            g->coop_smem = 0;
        }
    }
    return 0;
}

void gpu_destroy(lj_system *s)
{
    gpu_impl *g = impl(s);
    if (!g)
        return;
    drop_graph(g);
    cudaFree(g->x);
    cudaFree(g->y);
    cudaFree(g->z);
    free_cells(g);
    cudaFree(g->st);
    cudaFree(g->partial);
    cudaFree(g->widom);
    free(g->host);
    cudaFree(g->cur.pos);
    cudaFree(g->cur.aux);
    cudaFree(g->cur.count);
    cudaFree(g->tmp.pos);
    cudaFree(g->tmp.aux);
    cudaFree(g->tmp.count);
    cudaFree(g->acc_u);
    cudaFree(g->acc_w);
    cudaFree(g->cb_done);
    free(g);
    s->impl = NULL;
}

int upload_cells(lj_system *s, const double *pos, const int32_t *order, const int32_t *count,
                 int cap)
{
    gpu_impl *g = impl(s);
    drop_graph(g);
    free_cells(g);
    size_t nc = (size_t)s->ncell, cells = carlo_mulsize(nc, (size_t)cap);
    d4 *slot = static_cast<d4 *>(carlo_calloc(cells, sizeof(d4), "cell lists"));
    int32_t *aux = static_cast<int32_t *>(carlo_malloc(sizeof(int32_t) * 2 * s->N, "cell lists"));
    if (!slot || !aux) {
        free(slot);
        free(aux);
        return -1;
    }
    size_t k = 0;
    for (size_t c = 0; c < nc; c++)
        for (int32_t m = 0; m < count[c]; m++, k++) {
            int32_t i = order[k];
            slot[c * (size_t)cap + (size_t)m] = mk4(pos[3 * i], pos[3 * i + 1], pos[3 * i + 2], (double)i);
            aux[i] = (int32_t)c;
            aux[s->N + i] = m;
        }
    int rc = carlo_cuda_malloc((void **)&g->count, nc * sizeof(int32_t), "cell counts", __FILE__, __LINE__) ||
             carlo_cuda_malloc((void **)&g->slot, cells * sizeof(d4), "cell lists", __FILE__, __LINE__) ||
             carlo_cuda_malloc((void **)&g->cell_of, s->N * sizeof(int32_t), "cell lists", __FILE__, __LINE__) ||
             carlo_cuda_malloc((void **)&g->slot_of, s->N * sizeof(int32_t), "cell lists", __FILE__, __LINE__);
    cudaError_t e = cudaSuccess;
    if (!rc) {
        e = cudaMemcpy(g->count, count, nc * sizeof(int32_t), cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = cudaMemcpy(g->slot, slot, cells * sizeof(d4), cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = cudaMemcpy(g->cell_of, aux, s->N * sizeof(int32_t), cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = cudaMemcpy(g->slot_of, aux + s->N, s->N * sizeof(int32_t), cudaMemcpyHostToDevice);
    }
    free(slot);
    free(aux);
    if (rc)
        return -1;
    if (e != cudaSuccess)
        return carlo_cuda_fail(e, "cudaMemcpy(cell lists)", __FILE__, __LINE__);
    g->cap = cap;
    s->cell_cap = cap;
    return 0;
}

int download_cells(lj_system *s, int32_t *order, int32_t *count)
{
    gpu_impl *g = impl(s);
    size_t nc = (size_t)s->ncell, cells = carlo_mulsize(nc, (size_t)g->cap);
    d4 *slot = static_cast<d4 *>(carlo_malloc(cells * sizeof(d4), "cell lists"));
    if (!slot)
        return -1;
    cudaError_t e = cudaMemcpy(count, g->count, nc * sizeof(int32_t), cudaMemcpyDeviceToHost);
    if (e == cudaSuccess)
        e = cudaMemcpy(slot, g->slot, cells * sizeof(d4), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        free(slot);
        return carlo_cuda_fail(e, "cudaMemcpy(cell lists)", __FILE__, __LINE__);
    }
    size_t k = 0;
    for (size_t c = 0; c < nc; c++)
        for (int32_t m = 0; m < count[c]; m++)
            order[k++] = (int32_t)slot[c * (size_t)g->cap + (size_t)m].w;
    free(slot);
    return 0;
}

int gpu_upload(lj_system *s, const double *pos, const lj_cell_lists *cells)
{
    gpu_impl *g = impl(s);
    size_t n = s->N;
    for (int a = 0; a < 3; a++) {
        for (size_t i = 0; i < n; i++)
            g->host[i] = pos[3 * i + a];
        CK(cudaMemcpy(a == 0 ? g->x : a == 1 ? g->y : g->z, g->host, n * sizeof(double),
                      cudaMemcpyHostToDevice));
    }
    if (!cells)
        return 0;
    int32_t most = 0;
    for (int c = 0; c < s->ncell; c++)
        most = cells->count[c] > most ? cells->count[c] : most;
    return upload_cells(s, pos, cells->order, cells->count, most + most / 2 + 8);
}

int gpu_download(lj_system *s, double *pos, lj_cell_lists *cells)
{
    gpu_impl *g = impl(s);
    size_t n = s->N;
    for (int a = 0; a < 3; a++) {
        CK(cudaMemcpy(g->host, a == 0 ? g->x : a == 1 ? g->y : g->z, n * sizeof(double),
                      cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++)
            pos[3 * i + a] = g->host[i];
    }
    if (cells && s->sum == LJ_SUM_CELLS)
        return download_cells(s, cells->order, cells->count);
    return 0;
}

/* Double the cell capacity, keeping every list's order. */
int grow_cells(lj_system *s)
{
    gpu_impl *g = impl(s);
    lj_cell_lists c;
    double *pos = static_cast<double *>(carlo_malloc(carlo_mulsize(s->N, 3 * sizeof(double)), "positions"));
    if (!pos || lj_cell_lists_alloc(s, &c)) {
        free(pos);
        return -1;
    }
    int rc = gpu_download(s, pos, &c) || upload_cells(s, pos, c.order, c.count, g->cap * 2);
    free(pos);
    lj_cell_lists_free(&c);
    return rc;
}

int launch_cells_persistent(lj_system *s, unsigned long long n)
{
    if (s->ncell <= SMEM_COUNTS_MAX) {
        size_t smem = (size_t)s->ncell * sizeof(int32_t);
        CK(cudaFuncSetAttribute(cells_moves<true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)smem));
        cells_moves<true><<<1, LJ_LANES, smem>>>(params(s), n, s->ncell);
    } else {
        cells_moves<false><<<1, LJ_LANES>>>(params(s), n, s->ncell);
    }
    CK(cudaGetLastError());
    return 0;
}

int launch_all_persistent(lj_system *s, unsigned long long n)
{
    gpu_impl *g = impl(s);
    kp p = params(s);
    void *args[] = {&p, &n};
    if (g->coop_smem) {
        /* the attribute is per function: another system may have set a smaller one */
        CK(cudaFuncSetAttribute(all_moves<true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)g->coop_smem));
        CK(cudaLaunchCooperativeKernel((const void *)all_moves<true>, dim3((unsigned)g->coop_blocks),
                                       dim3(LJ_LANES), args, g->coop_smem, 0));
    } else {
        CK(cudaLaunchCooperativeKernel((const void *)all_moves<false>, dim3((unsigned)g->coop_blocks),
                                       dim3(LJ_LANES), args, 0, 0));
    }
    return 0;
}

/* One move: the kernel the launch and graph variants repeat. */
int launch_one(lj_system *s, cudaStream_t stream)
{
    kp p = params(s);
    if (s->sum == LJ_SUM_CELLS)
        cells_moves<false><<<1, LJ_LANES, 0, stream>>>(p, 1ull, s->ncell);
    else
        all_one_move<<<p.G, LJ_LANES, 0, stream>>>(p);
    CK(cudaGetLastError());
    return 0;
}

int record_graph(lj_system *s)
{
    gpu_impl *g = impl(s);
    drop_graph(g);
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaGraph_t graph;
    cudaError_t e = cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
    int rc = 0;
    for (int k = 0; k < GRAPH_MOVES && e == cudaSuccess && rc == 0; k++)
        rc = launch_one(s, st);
    cudaError_t e2 = cudaStreamEndCapture(st, &graph);
    if (e == cudaSuccess)
        e = e2;
    if (e == cudaSuccess && rc == 0) {
        e = cudaGraphInstantiate(&g->graph, graph, 0);
        cudaGraphDestroy(graph);
    }
    cudaStreamDestroy(st);
    if (rc)
        return -1;
    if (e != cudaSuccess)
        return carlo_cuda_fail(e, "recording the move graph", __FILE__, __LINE__);
    g->graph_ok = 1;
    g->graph_beta = s->beta;
    g->graph_delta = s->delta;
    g->graph_cap = g->cap;
    return 0;
}

int gpu_moves(lj_system *s, uint64_t n)
{
    gpu_impl *g = impl(s);
    dev_state h;
    memset(&h, 0, sizeof h);
    h.U = s->U;
    h.W = s->W;
    h.moves = s->moves;
    CK(cudaMemcpy(g->st, &h, sizeof h, cudaMemcpyHostToDevice));
    const uint64_t end = s->moves + n;
    uint64_t at = s->moves;
    unsigned long long accepted = 0;
    while (at < end) {
        uint64_t left = end - at;
        int rc = 0;
        if (s->kernel == LJ_KERNEL_PERSISTENT) {
            rc = s->sum == LJ_SUM_CELLS ? launch_cells_persistent(s, left) : launch_all_persistent(s, left);
        } else if (s->kernel == LJ_KERNEL_LAUNCH) {
            for (uint64_t k = 0; k < left && rc == 0; k++)
                rc = launch_one(s, 0);
        } else {
            if (!g->graph_ok || g->graph_beta != s->beta || g->graph_delta != s->delta ||
                g->graph_cap != g->cap)
                rc = record_graph(s);
            uint64_t k = 0;
            for (; k + GRAPH_MOVES <= left && rc == 0; k += GRAPH_MOVES) {
                cudaError_t e = cudaGraphLaunch(g->graph, 0);
                if (e != cudaSuccess)
                    rc = carlo_cuda_fail(e, "cudaGraphLaunch", __FILE__, __LINE__);
            }
            for (; k < left && rc == 0; k++)
                rc = launch_one(s, 0);
        }
        if (rc)
            return -1;
        CK(cudaMemcpy(&h, g->st, sizeof h, cudaMemcpyDeviceToHost)); /* waits, reports faults */
        accepted += h.accepted;
        at = h.moves;
        if (h.status) { /* a full cell: more room, the same lists, on from move `at` */
            if (grow_cells(s))
                return -1;
            h.status = 0;
            h.accepted = 0;
            CK(cudaMemcpy(g->st, &h, sizeof h, cudaMemcpyHostToDevice));
        } else if (at != end) {
            return carlo_seterr("the GPU ran %llu of %llu moves", (unsigned long long)(at - s->moves),
                                (unsigned long long)n);
        }
    }
    s->U = h.U;
    s->W = h.W;
    s->moves = end;
    s->tried += n;
    s->accepted += accepted;
    return 0;
}

int gpu_widom(lj_system *s, uint32_t n, uint64_t sample, double *out)
{
    gpu_impl *g = impl(s);
    if (g->widom_cap < n) {
        cudaFree(g->widom);
        g->widom = NULL;
        g->widom_cap = 0;
        CK_MALLOC(&g->widom, n * sizeof(double), "Widom results");
        g->widom_cap = n;
    }
    if (n > 0x7fffffffu)
        return carlo_seterr("too many insertions");
    widom_kernel<<<n, LJ_LANES>>>(params(s), s->sum == LJ_SUM_CELLS, sample, lj_widom_tail(s), g->widom);
    CK(cudaGetLastError());
    CK(cudaMemcpy(out, g->widom, n * sizeof(double), cudaMemcpyDeviceToHost));
    return 0;
}


/* ---------- checkerboard ---------- */

#define CB_WARPS 4      /* warps per block, each working on one active cell at a time */
#define CB_CAP_MAX 448  /* candidates a warp stages in shared memory; the rest are read from the cells */
#define CB_NEAR_CAP 256 /* near candidates queued before their terms are added */
#define CB_CHUNK 128    /* candidates of one step of the vote: four consecutive ones per lane */

struct cbp {
    carlo_cell_grid grid;
    lj_cbgeom geom;
    carlo_cell_data cells;
    double *acc_u, *acc_w;
    dev_state *st;
    unsigned long long seed;
    double beta;
    int passes;
    int cap; /* candidates staged per warp */
    /* the one-launch sweep (cb_sweep): the sets in their order, each set's place in it, and
     * the stamp each cell gets in done when its update is written */
    int order[8], place[8];
    uint32_t *done;
    uint32_t stamp;
};

/* A warp's tables in shared memory; its staged candidates, near queue and visiting order
 * follow (cbw_bytes, cb_cell). */
struct cbw_head {
    float4 sh[LJ_NEIGH_MAX]; /* the neighbour cells' offsets */
    int off[LJ_NEIGH_MAX + 1];
    int cq[LJ_NEIGH_MAX];
    int qcap; /* the neighbour cell that holds candidate number cap */
};

/* Staged entries: cap rounded up to whole steps of the vote, the last step padded with entries
 * that are near no move, so that the vote needs no test of the end. */
__host__ __device__ inline int cb_padded(int cap) { return (cap + CB_CHUNK - 1) & ~(CB_CHUNK - 1); }

/* A warp's staged candidates: their positions in the active cell's frame (lj_kernel.h), one
 * array per axis (16-byte aligned: the vote reads four at once). */
struct cbw_stage {
    float *x, *y, *z;
};

static_assert(sizeof(cbw_head) % 16 == 0, "the staged candidates must stay 16-byte aligned");

/* The near queue (and a spare slot) after the head, at a fixed offset; the staged candidates
 * (16-byte aligned) and the visiting order after it. */
#define CB_QUEUE_BYTES ((((CB_NEAR_CAP + 1) * (int)sizeof(uint16_t)) + 15) & ~15)

__host__ __device__ inline size_t cbw_bytes(int cap, int nmax)
{
    size_t b = sizeof(cbw_head) + CB_QUEUE_BYTES + 3 * (size_t)cb_padded(cap) * sizeof(float) +
               (size_t)nmax * sizeof(int);
    return (b + 15) & ~(size_t)15;
}

/* Where member j of cell `cell` keeps its x coordinate, y and z cb_plane floats apart: the
 * slots of carlo_cell_slot with one wide multiply (ncells < 2^32). */
__device__ __forceinline__ const float *cb_member(const cbp &p, int64_t cell, int j)
{
    return p.cells.pos + ((size_t)(uint32_t)j * (uint32_t)p.grid.ncells + (uint32_t)cell);
}

__device__ __forceinline__ size_t cb_plane(const cbp &p) { return (size_t)p.grid.nmax * (size_t)p.grid.ncells; }

/* Member j of cell `cell`, a neighbour offset by s, in the active cell's frame (b + s, exact:
 * lj_kernel.h). */
__device__ __forceinline__ float3 cb_load(const cbp &p, int64_t cell, int j, float4 s)
{
    const carlo_cell_grid &g = p.grid;
    const size_t plane = cb_plane(p);
    const float *b = cb_member(p, cell, j);
    float3 e; /* plain loads: cb_wait_neighbours' acquire orders them after the cell's update */
    e.x = b[0] + s.x;
    e.y = b[plane] + s.y;
    e.z = g.dim == 3 ? b[2 * plane] + s.z : 0.0f;
    return e;
}

/* Candidate k: staged below cap, read from the cells above (a crowded neighbourhood). */
__device__ __forceinline__ float3 cb_cand(const cbp &p, const cbw_head &H, const cbw_stage &S, int k)
{
    if (k < p.cap)
        return make_float3(S.x[k], S.y[k], S.z[k]);
    const int q = cell_of(H.off, H.qcap, k);
    return cb_load(p, H.cq[q], k - H.off[q], H.sh[q]);
}

/* The neighbourhood of cell xyz, by the lanes of one warp: lane q < nq fills in neighbour q's
 * cell index cq[q] and offset sh[q] and off[q + 1], the prefix sum of the counts (off[0] = 0).
 * Returns the lane's prefix sum (its count and those before it). */
__device__ __forceinline__ int cb_table(const cbp &p, const int xyz[3], int lane, int *cq, float4 *sh,
                                        int *off)
{
    const carlo_cell_grid &g = p.grid;
    const int nq = lj_neighbour_count(g.dim);
    int cnt = 0;
    if (lane < nq) {
        int o3[3] = {lane % 3 - 1, (lane / 3) % 3 - 1, g.dim == 3 ? lane / 9 - 1 : 0};
        float s3[3];
        const int64_t nb = carlo_cell_neighbor(&g, xyz, o3, s3);
        cq[lane] = (int)nb;
        sh[lane] = make_float4(s3[0], s3[1], s3[2], 0.0f);
        cnt = (int)p.cells.count[nb];
    }
    int v = cnt;
#pragma unroll
    for (int s = 1; s < 32; s <<= 1) {
        const int y = __shfl_up_sync(FULL, v, s);
        if (lane >= s)
            v += y;
    }
    if (lane < nq)
        off[lane + 1] = v;
    if (lane == 0)
        off[0] = 0;
    return v;
}

/* Candidates k = from, from + stride, ... below `staged`, in the active cell's frame, into the
 * arrays x, y, z (element k at x[k * step]): the block kernel's staging. */
__device__ __forceinline__ void cb_stage(const cbp &p, const int *cq, const int *off, const float4 *sh,
                                         float *x, float *y, float *z, int step, int staged, int from,
                                         int stride)
{
    int q = 0;
    for (int k = from; k < staged; k += stride) {
        q = cell_of(off, q, k);
        const float3 e = cb_load(p, cq[q], k - off[q], sh[q]);
        x[k * step] = e.x;
        y[k * step] = e.y;
        z[k * step] = e.z;
    }
}

/* A warp's staging, by cells: lane q < nq copies the members of neighbour q (candidates off[q]
 * on, those below `staged`) in the active cell's frame, four at a time, their loads before
 * their stores (no search for a candidate's cell, the loads' latency paid once per four). */
__device__ __forceinline__ void cb_stage_cells(const cbp &p, const cbw_head &H, const cbw_stage &S,
                                               int staged, int lane)
{
    if (lane >= lj_neighbour_count(p.grid.dim))
        return;
    const size_t plane = cb_plane(p);
    const int first = H.off[lane], end = H.off[lane + 1] < staged ? H.off[lane + 1] : staged;
    const int64_t cell = H.cq[lane];
    const float4 s = H.sh[lane];
    const bool three = p.grid.dim == 3;
    for (int k0 = first; k0 < end; k0 += 4) {
        float b[4][3];
#pragma unroll
        for (int r = 0; r < 4; r++)
            if (k0 + r < end) {
                const float *e = cb_member(p, cell, k0 + r - first);
                b[r][0] = e[0];
                b[r][1] = e[plane];
                b[r][2] = three ? e[2 * plane] : 0.0f;
            }
#pragma unroll
        for (int r = 0; r < 4; r++)
            if (k0 + r < end) {
                S.x[k0 + r] = b[r][0] + s.x;
                S.y[k0 + r] = b[r][1] + s.y;
                S.z[k0 + r] = b[r][2] + s.z;
            }
    }
}

/* Near candidates i of the queue (near numbers hb + i) onto their lanes (lj_kernel.h); ALL:
 * the whole neighbourhood is staged. */
template <bool ALL = false>
__device__ __forceinline__ void cb_drain(const cbp &p, const cbw_head &H, const cbw_stage &S,
                                         const uint16_t *nearq, int nn, int hb, int lane,
                                         const float o[3], const float nw[3], double &du, double &dw)
{
    __syncwarp();
#pragma unroll 1 /* two rounds a move: unrolled, the remainder's code cost 6 % (2^20, H100) */
    for (int i = (lane - hb) & 31; i < nn; i += 32) {
        const int k = nearq[i];
        const float3 e = ALL ? make_float3(S.x[k], S.y[k], S.z[k]) : cb_cand(p, H, S, k);
        lj_cb_candidate(&p.geom, o, nw, e.x, e.y, e.z, &du, &dw);
    }
    __syncwarp();
}

/* Room in the near queue for `more` more entries: a queue that could overflow is drained
 * first. */
__device__ __forceinline__ void cb_room(const cbp &p, const cbw_head &H, const cbw_stage &S,
                                        const uint16_t *nearq, int &nn, int &hb, int lane, const float o[3],
                                        const float nw[3], double &du, double &dw, int more)
{
    if (nn > CB_NEAR_CAP - more) {
        cb_drain(p, H, S, nearq, nn, hb, lane, o, nw, du, dw);
        hb += nn;
        nn = 0;
    }
}

/* One round of the near vote over the candidates kk of the lanes (the queue has room for it):
 * those near join the queue in lane order; below = the lanes before this one. */
__device__ __forceinline__ void cb_vote(uint16_t *nearq, int &nn, unsigned below, bool near, int kk)
{
    const unsigned mask = __ballot_sync(FULL, near);
    if (near)
        nearq[nn + __popc(mask & below)] = (uint16_t)kk;
    nn += __popc(mask);
}

/* One step of the near vote over the staged candidates k0 .. k0 + 127, four consecutive ones
 * per lane (the queue has room for them): those near join the queue in candidate order, a
 * lane's place after the near ones of the lanes below it (four ballots); the entries of
 * candidates not near go to the spare slot nearq[CB_NEAR_CAP]. */
__device__ __forceinline__ void cb_vote4(const cbw_stage &S, uint16_t *nearq, int &nn, unsigned below,
                                         int lane, int k0, const float m[3], float r2)
{
    const int kb = k0 + 4 * lane;
    const float4 x = *reinterpret_cast<const float4 *>(S.x + kb);
    const float4 y = *reinterpret_cast<const float4 *>(S.y + kb);
    const float4 z = *reinterpret_cast<const float4 *>(S.z + kb);
    const bool n0 = lj_cb_near(m, x.x, y.x, z.x, r2), n1 = lj_cb_near(m, x.y, y.y, z.y, r2),
               n2 = lj_cb_near(m, x.z, y.z, z.z, r2), n3 = lj_cb_near(m, x.w, y.w, z.w, r2);
    const unsigned b0 = __ballot_sync(FULL, n0), b1 = __ballot_sync(FULL, n1), b2 = __ballot_sync(FULL, n2),
                   b3 = __ballot_sync(FULL, n3);
    const int at0 = nn + __popc(b0 & below) + __popc(b1 & below) + __popc(b2 & below) + __popc(b3 & below);
    const int at1 = at0 + (int)n0, at2 = at1 + (int)n1, at3 = at2 + (int)n2;
    nearq[n0 ? at0 : CB_NEAR_CAP] = (uint16_t)kb;
    nearq[n1 ? at1 : CB_NEAR_CAP] = (uint16_t)(kb + 1);
    nearq[n2 ? at2 : CB_NEAR_CAP] = (uint16_t)(kb + 2);
    nearq[n3 ? at3 : CB_NEAR_CAP] = (uint16_t)(kb + 3);
    nn = __shfl_sync(FULL, at3 + (int)n3, 31); /* the last lane's end */
}

/* The end of cell c's sub-sweep: its first n staged particles back to the cells (particle i's
 * coordinates at x[i * stride], y[i * stride], z[i * stride]), by the threads from `from` in
 * steps of `step`, and its sums onto the cell's accumulators (lead). */
__device__ __forceinline__ void cb_store(const cbp &p, int64_t c, const float *x, const float *y,
                                         const float *z, int stride, int n, int from, int step,
                                         bool lead, double du, double dw, unsigned long long nacc)
{
    const carlo_cell_grid &g = p.grid;
    for (int i = from; i < n; i += step) {
        p.cells.pos[carlo_cell_slot(&g, c, i, 0)] = x[i * stride];
        p.cells.pos[carlo_cell_slot(&g, c, i, 1)] = y[i * stride];
        if (g.dim == 3)
            p.cells.pos[carlo_cell_slot(&g, c, i, 2)] = z[i * stride];
    }
    if (lead) {
        p.acc_u[c] = p.acc_u[c] + du;
        p.acc_w[c] = p.acc_w[c] + dw;
        if (nacc)
            atomicAdd(&p.st->accepted, nacc);
    }
}

/* The end of cell c's update in a sweep: its stamp, released after the writes of every lane
 * (the warp barrier orders them before lane 0's release). */
__device__ __forceinline__ void cb_mark_done(const cbp &p, int64_t c, int lane)
{
    __syncwarp();
    if (lane == 0)
        asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p.done + c), "r"(p.stamp) : "memory");
}

/* Lane q < nq waits until neighbour q of cell xyz (index nb) has its update of this sweep
 * written, when its set comes before place `place` in the sweep (the sets after it wait for
 * this cell in turn): every neighbour is then as the sub-sweeps one after the other leave it.
 * The relaxed load that sees the stamp and the acquire fence after it pair with cb_mark_done's
 * release, and the warp barrier passes that on to every lane, so the plain loads of the
 * staging that follow see the neighbour's new positions (the memory model's guarantee; the
 * fence invalidates the SM's L1, once per cell). Neighbours of later sets are not written
 * before this cell's stamp, and kernel boundaries end every sweep. */
__device__ __forceinline__ void cb_wait_neighbours(const cbp &p, const int xyz[3], int place, int lane,
                                                   int64_t nb)
{
    if (lane < lj_neighbour_count(p.grid.dim)) {
        const int nxyz[3] = {xyz[0] + lane % 3 - 1, xyz[1] + (lane / 3) % 3 - 1,
                             p.grid.dim == 3 ? xyz[2] + lane / 9 - 1 : 0}; /* the parities: m is even */
        if (p.place[carlo_cell_set_of(nxyz)] < place) {
            uint32_t v;
            for (;;) {
                asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p.done + nb) : "memory");
                if (v == p.stamp)
                    break;
                __nanosleep(64);
            }
        }
    }
    if (place > 0)
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
    __syncwarp();
}

/* Active cell t of set `set` (place `place` in the sweep), sub-sweep `step`, by one warp: the cell's particles moved in lj_cb_order's order, each
 * move's near candidates found by a vote over the neighbourhood and their terms summed on the
 * 32 lanes of lj_kernel.h. */
__device__ __forceinline__ void cb_cell(const cbp &p, int set, int place, unsigned long long step,
                                        int64_t t, int lane, char *base)
{
    const carlo_cell_grid &g = p.grid;
    int xyz[3];
    carlo_cell_active(&g, set, t, xyz);
    const int64_t c = carlo_cell_index(&g, xyz[0], xyz[1], xyz[2]);
    const int n = (int)p.cells.count[c];
    if (n == 0) {
        cb_mark_done(p, c, lane);
        return;
    }
    cbw_head &H = *reinterpret_cast<cbw_head *>(base);
    const int P = cb_padded(p.cap);
    uint16_t *nearq = reinterpret_cast<uint16_t *>(base + sizeof(cbw_head));
    cbw_stage S;
    S.x = reinterpret_cast<float *>(base + sizeof(cbw_head) + CB_QUEUE_BYTES);
    S.y = S.x + P;
    S.z = S.y + P;
    int *perm = reinterpret_cast<int *>(S.z + P);
    const int nq = lj_neighbour_count(g.dim);
    const int v = cb_table(p, xyz, lane, H.cq, H.sh, H.off);
    cb_wait_neighbours(p, xyz, place, lane, lane < nq ? H.cq[lane] : 0);
    const int M = __shfl_sync(FULL, v, nq - 1);
    const unsigned fit = __ballot_sync(FULL, lane < nq && v <= p.cap);
    if (lane == 0)
        H.qcap = __popc(fit);
    __syncwarp();
    const int Ms = M < p.cap ? M : p.cap; /* staged */
    cb_stage_cells(p, H, S, Ms, lane);
    for (int k = Ms + lane; k < cb_padded(Ms); k += 32) /* the padding: far from every cell */
        S.x[k] = S.y[k] = S.z[k] = 1.0e6f;
    if (n <= LJ_CB_KEYED) { /* lj_cb_order by the lanes: one key each, its place by counting */
        const uint32_t key = lane < n ? lj_cb_order_key(p.seed, step, (uint32_t)c, lane) : 0u;
        int at = 0;
        for (int j = 0; j < n; j++)
            at += lj_cb_before(__shfl_sync(FULL, key, j), j, key, lane);
        if (lane < n)
            perm[at] = lane;
    } else if (lane == 0) {
        lj_cb_order(p.seed, step, (uint32_t)c, n, perm);
    }
    __syncwarp();
    const unsigned below = (1u << lane) - 1u;
    const int centre = g.dim == 3 ? 13 : 4;
    const int cbase = H.off[centre];
    double cell_du = 0.0, cell_dw = 0.0; /* lane 0's */
    unsigned long long nacc = 0;
    float t0 = 0.0f, t1 = 0.0f, t2 = 0.0f, tr = 0.0f;
    double tu = 0.0;
    const int moves = n * p.passes;
    for (int k = 0, j = 0; k < moves; k++) { /* j = k % n */
        const int kl = k & 31;
        if (kl == 0 && k + lane < moves) { /* the lanes draw the next 32 trial moves */
            float d3[3];
            tu = lj_cb_trial(&p.geom, p.seed, step, (uint32_t)c, (uint32_t)(k + lane), d3);
            t0 = d3[0];
            t1 = d3[1];
            t2 = d3[2];
            tr = lj_cb_near_r2(&p.geom, d3);
        }
        const float dd[3] = {__shfl_sync(FULL, t0, kl), __shfl_sync(FULL, t1, kl),
                             __shfl_sync(FULL, t2, kl)};
        const double logu = __shfl_sync(FULL, tu, kl);
        const int slot = perm[j], me = cbase + slot;
        j = j + 1 == n ? 0 : j + 1;
        const float3 oe = cb_cand(p, H, S, me);
        const float o[3] = {oe.x, oe.y, oe.z};
        const float nw[3] = {o[0] + dd[0], o[1] + dd[1], o[2] + dd[2]};
        if (!lj_cb_inside(&p.geom, nw))
            continue; /* the same on every lane */
        float m[3];
        lj_cb_mid(o, dd, m);
        const float r2 = __shfl_sync(FULL, tr, kl);
        __syncwarp(); /* every lane has read o */
        if (lane == 0 && me < p.cap)
            S.x[me] = 1.0e6f; /* the moved particle is near no move while it moves */
        __syncwarp();
        double du = 0.0, dw = 0.0;
        int nn = 0, hb = 0; /* queued near candidates; near numbers before the queue */
        /* the staged candidates, 128 per step (the padding past Ms is near nothing) */
        for (int k0 = 0; k0 < Ms; k0 += CB_CHUNK) {
            cb_room(p, H, S, nearq, nn, hb, lane, o, nw, du, dw, CB_CHUNK);
            cb_vote4(S, nearq, nn, below, lane, k0, m, r2);
        }
        /* the rest of a crowded neighbourhood, from the cells */
        for (int k0 = Ms; k0 < M; k0 += 32) {
            const int kk = k0 + lane;
            bool near = false;
            if (kk < M && kk != me) {
                const float3 e = cb_cand(p, H, S, kk);
                near = lj_cb_near(m, e.x, e.y, e.z, r2);
            }
            cb_room(p, H, S, nearq, nn, hb, lane, o, nw, du, dw, 32);
            cb_vote(nearq, nn, below, near, kk);
        }
        if (M <= p.cap)
            cb_drain<true>(p, H, S, nearq, nn, hb, lane, o, nw, du, dw);
        else
            cb_drain(p, H, S, nearq, nn, hb, lane, o, nw, du, dw);
#pragma unroll
        for (int s = 16; s > 0; s >>= 1)
            du = du + __shfl_down_sync(FULL, du, s);
        int acc = 0;
        if (lane == 0)
            acc = lj_cb_accept(du, p.beta, logu);
        acc = __shfl_sync(FULL, acc, 0);
        if (acc) { /* the virial's sum, needed only for a move that is made */
#pragma unroll
            for (int s = 16; s > 0; s >>= 1)
                dw = dw + __shfl_down_sync(FULL, dw, s);
        }
        if (lane == 0) {
            if (me < p.cap) { /* back from the far mark: where the particle now is */
                S.x[me] = acc ? nw[0] : o[0];
                S.y[me] = acc ? nw[1] : o[1];
                S.z[me] = acc ? nw[2] : o[2];
            } else if (acc) {
                p.cells.pos[carlo_cell_slot(&g, c, slot, 0)] = nw[0];
                p.cells.pos[carlo_cell_slot(&g, c, slot, 1)] = nw[1];
                if (g.dim == 3)
                    p.cells.pos[carlo_cell_slot(&g, c, slot, 2)] = nw[2];
            }
            if (acc) {
                cell_du = cell_du + du;
                cell_dw = cell_dw + dw;
                nacc++;
            }
        }
        __syncwarp();
    }
    /* the staged particles, in the active cell's frame their own (those beyond cap were
     * written as they moved) */
    const int ns = cbase >= p.cap ? 0 : (n < p.cap - cbase ? n : p.cap - cbase);
    const int from = cbase < p.cap ? cbase : 0;
    cb_store(p, c, S.x + from, S.y + from, S.z + from, 1, ns, lane, 32, lane == 0, cell_du, cell_dw, nacc);
    cb_mark_done(p, c, lane);
    __syncwarp(); /* the tables are the next cell's */
}

/* The halving tree over T lanes of two sums (T = 32, 64 or 128); thread 0 gets the result. */
template <int T>
__device__ __forceinline__ void block_tree2(double &a, double &b, double (*sm)[128])
{
    const int t = threadIdx.x;
    if (T > 32) {
        sm[0][t] = a;
        sm[1][t] = b;
        __syncthreads();
        for (int s = T / 2; s >= 32; s >>= 1) {
            if (t < s) {
                sm[0][t] = sm[0][t] + sm[0][t + s];
                sm[1][t] = sm[1][t] + sm[1][t + s];
            }
            __syncthreads();
        }
        if (t < 32) {
            a = sm[0][t];
            b = sm[1][t];
        }
    }
    if (t < 32) {
#pragma unroll
        for (int s = 16; s > 0; s >>= 1) {
            a = a + __shfl_down_sync(FULL, a, s);
            b = b + __shfl_down_sync(FULL, b, s);
        }
    }
}

/* lanes = 64 or 128: one active cell of set `set` per block (T threads, the lanes of the
 * all-candidate order), sub-sweep number `step`. */
template <int T>
__global__ void __launch_bounds__(T) cb_block_subsweep(cbp p, int set, unsigned long long step)
{
    extern __shared__ float4 cand[]; /* neighbourhood: x, y, z in the active cell's frame */
    __shared__ double sm[2][128];
    __shared__ int off[LJ_NEIGH_MAX + 1], cq[LJ_NEIGH_MAX];
    __shared__ float4 sh[LJ_NEIGH_MAX];
    __shared__ int accept_flag;
    __shared__ float tdd[T][3]; /* the trial displacements and uniforms of T moves, drawn */
    __shared__ double tu[T];    /* once per block instead of by every lane */
    const int t = threadIdx.x;
    if (p.st->status)
        return;
    const carlo_cell_grid &g = p.grid;
    int xyz[3];
    carlo_cell_active(&g, set, (int64_t)blockIdx.x, xyz);
    const int64_t c = carlo_cell_index(&g, xyz[0], xyz[1], xyz[2]);
    const int n = (int)p.cells.count[c];
    if (n == 0)
        return;
    const int nq = lj_neighbour_count(g.dim);
    int *perm = reinterpret_cast<int *>(cand + (size_t)nq * g.nmax);
    if (t < 32)
        cb_table(p, xyz, t, cq, sh, off);
    __syncthreads();
    const int M = off[nq];
    cb_stage(p, cq, off, sh, &cand[0].x, &cand[0].y, &cand[0].z, 4, M, t, T);
    if (n <= LJ_CB_KEYED) { /* lj_cb_order by the threads: one key each, its place by counting */
        __shared__ uint32_t keys[LJ_CB_KEYED];
        if (t < n)
            keys[t] = lj_cb_order_key(p.seed, step, (uint32_t)c, t);
        __syncthreads();
        if (t < n) {
            int at = 0;
            for (int j = 0; j < n; j++)
                at += lj_cb_before(keys[j], j, keys[t], t);
            perm[at] = t;
        }
    } else if (t == 0) {
        lj_cb_order(p.seed, step, (uint32_t)c, n, perm);
    }
    __syncthreads();
    const int centre = g.dim == 3 ? 13 : 4;
    const int base = off[centre];
    double cell_du = 0.0, cell_dw = 0.0;
    unsigned long long nacc = 0;
    const int moves = n * p.passes;
    for (int k = 0; k < moves; k++) {
        if (k % T == 0) {
            __syncthreads(); /* a move that left its cell ended without a barrier */
            if (k + t < moves) {
                float d3[3];
                tu[t] = lj_cb_trial(&p.geom, p.seed, step, (uint32_t)c, (uint32_t)(k + t), d3);
                tdd[t][0] = d3[0];
                tdd[t][1] = d3[1];
                tdd[t][2] = d3[2];
            }
            __syncthreads();
        }
        const int me = base + perm[k % n];
        const float dd[3] = {tdd[k % T][0], tdd[k % T][1], tdd[k % T][2]};
        const double logu = tu[k % T];
        const float4 oe = cand[me];
        const float o[3] = {oe.x, oe.y, oe.z};
        const float nw[3] = {o[0] + dd[0], o[1] + dd[1], o[2] + dd[2]};
        if (!lj_cb_inside(&p.geom, nw))
            continue; /* the same for every thread */
        double du = 0.0, dw = 0.0;
        for (int kk = t; kk < M; kk += T) {
            if (kk == me)
                continue;
            const float4 e = cand[kk];
            lj_cb_candidate(&p.geom, o, nw, e.x, e.y, e.z, &du, &dw);
        }
        block_tree2<T>(du, dw, sm);
        if (t == 0) {
            accept_flag = lj_cb_accept(du, p.beta, logu);
            if (accept_flag) {
                cand[me] = make_float4(nw[0], nw[1], nw[2], 0.0f);
                cell_du = cell_du + du;
                cell_dw = cell_dw + dw;
                nacc++;
            }
        }
        __syncthreads();
    }
    cb_store(p, c, &cand[base].x, &cand[base].y, &cand[base].z, 4, n, t, T, t == 0, cell_du, cell_dw, nacc);
}

/* A whole sweep, sweep number `sweep`, in one launch: the warps take the cells of all its
 * sub-sweeps, set after set in p.order, from one counter (cb_next, reset by cb_shift), and a
 * cell waits only for its neighbours in the sets before its own (cb_wait_neighbours), not for
 * the whole sub-sweep before: the same updates as sub-sweeps launched one after the other, with
 * no idle SMs at their ends. A cell's neighbours were taken before it by running warps, which
 * wait only on cells taken earlier still: no deadlock, resident or not. */
__global__ void __launch_bounds__(CB_WARPS * 32, 7) cb_sweep(cbp p, unsigned long long sweep)
{
    extern __shared__ float4 cb_smem[];
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    if (p.st->status)
        return;
    char *base = reinterpret_cast<char *>(cb_smem) + (size_t)wid * cbw_bytes(p.cap, p.grid.nmax);
    const int64_t S = carlo_cell_set_size(&p.grid), all = S << p.grid.dim;
    for (;;) {
        unsigned long long w = 0;
        if (lane == 0)
            w = atomicAdd(&p.st->cb_next, 1u);
        w = __shfl_sync(FULL, w, 0);
        if ((int64_t)w >= all)
            return;
        const int place = (int)((int64_t)w / S);
        cb_cell(p, p.order[place], place, sweep * 8 + (unsigned long long)place, (int64_t)w % S, lane, base);
    }
}

/* The cell shift: one thread per cell of the new grid (core/cells_kernel.h, Algorithm 4); the
 * dimension a literal constant (the grid's cells carry one word per particle: lj_cb.c). STAGED:
 * each cell built in shared memory and written slot by slot, only the slots below the larger
 * of the old and the new count (tidy: the storage comes from carlo_cells_dev_alloc, slots past
 * every count marked empty, and stays so; cells.h; cb_shift_smem bytes for CB_SHIFT_THREADS
 * threads), else in place (cells too large for the scratch). */
#define CB_SHIFT_THREADS 64

size_t cb_shift_smem(const carlo_cell_grid *g)
{
    return (size_t)((g->dim + 1) * g->nmax + 1) * CB_SHIFT_THREADS * sizeof(uint32_t);
}

template <int DIM, int STAGED>
__global__ void __launch_bounds__(CB_SHIFT_THREADS) cb_shift(carlo_cell_grid g, carlo_cell_data src,
                                                             carlo_cell_data dst, carlo_cell_shift sh,
                                                             dev_state *st, unsigned long long sweep)
{
    extern __shared__ uint32_t cb_scratch[];
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c == 0)
        st->cb_next = 0; /* the sweep before this shift is done */
    if (c >= g.ncells || st->status)
        return;
    int got;
    if (STAGED) {
        got = carlo_cell_shift_staged(g, src, dst, sh, c, cb_scratch, DIM, 1, g.nmax, 1);
    } else {
        int xyz[3];
        carlo_cell_coords(&g, c, xyz);
        got = carlo_cell_shift_gather_n(&g, &src, &dst, xyz, sh, DIM, 1);
    }
    if (got > g.nmax && atomicCAS(&st->status, 0, 1) == 0)
        st->fail_sweep = sweep;
}

/* Launch the shift of grid g from src into dst. */
int launch_cb_shift(gpu_impl *gi, const carlo_cell_grid *g, const carlo_cell_data &src,
                    const carlo_cell_data &dst, carlo_cell_shift sh, dev_state *st,
                    unsigned long long sweep)
{
    const size_t smem = cb_shift_smem(g);
    const unsigned blocks = (unsigned)((g->ncells + CB_SHIFT_THREADS - 1) / CB_SHIFT_THREADS);
    void (*k)(carlo_cell_grid, carlo_cell_data, carlo_cell_data, carlo_cell_shift, dev_state *,
              unsigned long long);
    const bool staged = smem <= gi->smem_optin;
    if (staged)
        k = g->dim == 2 ? cb_shift<2, 1> : cb_shift<3, 1>;
    else
        k = g->dim == 2 ? cb_shift<2, 0> : cb_shift<3, 0>;
    if (staged && smem > 48 * 1024)
        CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    k<<<blocks, CB_SHIFT_THREADS, staged ? smem : 0>>>(*g, src, dst, sh, st, sweep);
    CK(cudaGetLastError());
    return 0;
}

/* Copy every slot into storage with more slots per cell (and mark the new ones empty). */
__global__ void cb_grow_copy(carlo_cell_grid og, carlo_cell_data src, carlo_cell_grid ng,
                             carlo_cell_data dst)
{
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= og.ncells)
        return;
    for (int i = 0; i < ng.nmax; i++) {
        for (int a = 0; a < og.dim; a++)
            dst.pos[carlo_cell_slot(&ng, c, i, a)] =
                i < og.nmax ? src.pos[carlo_cell_slot(&og, c, i, a)] : CARLO_CELL_EMPTY;
        for (int k = 0; k < og.naux; k++)
            dst.aux[carlo_cell_slot(&ng, c, i, k)] =
                i < og.nmax ? src.aux[carlo_cell_slot(&og, c, i, k)] : CARLO_CELL_NO_WORD;
    }
    dst.count[c] = src.count[c];
}

int cb_copy(const carlo_cell_grid *grid, const carlo_cell_data *from, const carlo_cell_data *to,
            cudaMemcpyKind kind)
{
    CK(cudaMemcpy(to->pos, from->pos, carlo_cells_pos_len(grid) * sizeof(float), kind));
    CK(cudaMemcpy(to->aux, from->aux, carlo_cells_aux_len(grid) * sizeof(uint32_t), kind));
    CK(cudaMemcpy(to->count, from->count, (size_t)grid->ncells * sizeof(uint32_t), kind));
    return 0;
}

int gpu_cb_upload(lj_system *s, const carlo_cell_data *cells, const double *acc_u,
                  const double *acc_w)
{
    gpu_impl *g = impl(s);
    const carlo_cell_grid *grid = &s->cb.grid;
    carlo_cells_dev_free(&g->cur);
    carlo_cells_dev_free(&g->tmp);
    cudaFree(g->acc_u);
    cudaFree(g->acc_w);
    cudaFree(g->cb_done);
    g->acc_u = g->acc_w = NULL;
    g->cb_done = NULL; /* allocated for the grid at the next sweep */
    size_t nc = (size_t)grid->ncells;
    if (carlo_cells_dev_alloc(grid, &g->cur) || carlo_cells_dev_alloc(grid, &g->tmp))
        return -1;
    CK_MALLOC(&g->acc_u, nc * sizeof(double), "per-cell sums");
    CK_MALLOC(&g->acc_w, nc * sizeof(double), "per-cell sums");
    if (cb_copy(grid, cells, &g->cur, cudaMemcpyHostToDevice))
        return -1;
    CK(cudaMemcpy(g->acc_u, acc_u, nc * sizeof(double), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(g->acc_w, acc_w, nc * sizeof(double), cudaMemcpyHostToDevice));
    return 0;
}

int gpu_cb_download(lj_system *s, const carlo_cell_data *cells, double *acc_u, double *acc_w)
{
    gpu_impl *g = impl(s);
    const carlo_cell_grid *grid = &s->cb.grid;
    size_t nc = (size_t)grid->ncells;
    if (cells && cb_copy(grid, &g->cur, cells, cudaMemcpyDeviceToHost))
        return -1;
    if (acc_u)
        CK(cudaMemcpy(acc_u, g->acc_u, nc * sizeof(double), cudaMemcpyDeviceToHost));
    if (acc_w)
        CK(cudaMemcpy(acc_w, g->acc_w, nc * sizeof(double), cudaMemcpyDeviceToHost));
    return 0;
}

/* Twice the room in every cell of the current cells (the second buffer follows). */
int gpu_cb_grow(lj_system *s)
{
    gpu_impl *g = impl(s);
    carlo_cell_grid *grid = &s->cb.grid;
    int nmax = grid->nmax * 2 > CARLO_CELL_NMAX_LIMIT ? CARLO_CELL_NMAX_LIMIT : grid->nmax * 2;
    if (nmax == grid->nmax)
        return carlo_seterr("a cell holds more than %d particles", CARLO_CELL_NMAX_LIMIT);
    carlo_cell_grid ng = *grid;
    ng.nmax = nmax;
    carlo_cell_data cur, tmp;
    if (carlo_cells_dev_alloc(&ng, &cur))
        return -1;
    if (carlo_cells_dev_alloc(&ng, &tmp)) {
        carlo_cells_dev_free(&cur);
        return -1;
    }
    int threads = 256;
    unsigned blocks = (unsigned)((grid->ncells + threads - 1) / threads);
    cb_grow_copy<<<blocks, threads>>>(*grid, g->cur, ng, cur);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        carlo_cells_dev_free(&cur);
        carlo_cells_dev_free(&tmp);
        return carlo_cuda_fail(e, "cb_grow_copy", __FILE__, __LINE__);
    }
    carlo_cells_dev_free(&g->cur);
    carlo_cells_dev_free(&g->tmp);
    g->cur = cur;
    g->tmp = tmp;
    grid->nmax = nmax;
    return 0;
}

/* Shared memory of a cb_block_subsweep block: the neighbourhood and the visiting order. */
size_t cb_block_smem(const lj_system *s)
{
    const carlo_cell_grid *grid = &s->cb.grid;
    return (size_t)lj_neighbour_count(grid->dim) * (size_t)grid->nmax * sizeof(float4) +
           (size_t)grid->nmax * sizeof(int);
}

template <int T> int launch_block(const cbp &p, int set, unsigned long long step, size_t smem,
                                  unsigned blocks)
{
    CK(cudaFuncSetAttribute(cb_block_subsweep<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    cb_block_subsweep<T><<<blocks, T, smem>>>(p, set, step);
    CK(cudaGetLastError());
    return 0;
}

/* Candidates a warp stages: the whole neighbourhood's slots, at most CB_CAP_MAX. */
int cb_cap(const lj_system *s)
{
    const carlo_cell_grid *grid = &s->cb.grid;
    int all = lj_neighbour_count(grid->dim) * grid->nmax;
    return all < CB_CAP_MAX ? all : CB_CAP_MAX;
}

/* Queue sweeps first .. first + n - 1 (no waiting). */
int cb_queue(lj_system *s, uint64_t first, uint64_t n)
{
    gpu_impl *g = impl(s);
    const carlo_cell_grid *grid = &s->cb.grid;
    cbp p;
    memset(&p, 0, sizeof p);
    p.grid = *grid;
    p.geom = s->cb.geom;
    lj_cb_set_delta(&p.geom, s->delta);
    p.acc_u = g->acc_u;
    p.acc_w = g->acc_w;
    p.st = g->st;
    p.seed = s->seed;
    p.beta = s->beta;
    p.passes = s->cb.passes;
    const bool warp = p.geom.lanes == LJ_CB_WARP;
    size_t smem;
    unsigned blocks;
    if (warp) { /* as many blocks as fit at once: the warps take the cells from a counter */
        p.cap = cb_cap(s);
        smem = CB_WARPS * cbw_bytes(p.cap, grid->nmax);
        CK(cudaFuncSetAttribute(cb_sweep, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        CK(cudaFuncSetAttribute(cb_sweep, cudaFuncAttributePreferredSharedMemoryCarveout,
                                cudaSharedmemCarveoutMaxShared));
        int per_sm = 0, sms = 0, dev = 0;
        CK(cudaGetDevice(&dev));
        CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, cb_sweep, CB_WARPS * 32, smem));
        const int64_t need = (grid->ncells + CB_WARPS - 1) / CB_WARPS;
        const int64_t room = (int64_t)(per_sm > 0 ? per_sm : 1) * sms;
        blocks = (unsigned)(need < room ? need : room);
        if (!g->cb_done) {
            CK_MALLOC(&g->cb_done, (size_t)grid->ncells * sizeof(uint32_t), "cell stamps");
            CK(cudaMemset(g->cb_done, 0, (size_t)grid->ncells * sizeof(uint32_t)));
        }
        p.done = g->cb_done;
    } else { /* one block per active cell */
        smem = cb_block_smem(s);
        if (smem > 200 * 1024)
            return carlo_seterr("cells of %d slots need %zu bytes of shared memory per block, "
                                "more than 200 KiB", grid->nmax, smem);
        blocks = (unsigned)carlo_cell_set_size(grid);
    }
    for (uint64_t k = 0; k < n; k++) {
        const uint64_t sweep = first + k;
        carlo_cells_set_order(grid->dim, s->seed, LJ_PURPOSE_CB_SETS, sweep, p.order);
        p.cells = g->cur;
        if (warp) { /* the whole sweep in one launch */
            for (int q = 0; q < (1 << grid->dim); q++)
                p.place[p.order[q]] = q;
            p.stamp = ++g->cb_stamp ? g->cb_stamp : ++g->cb_stamp; /* never 0, the stamps' start */
            cb_sweep<<<blocks, CB_WARPS * 32, smem>>>(p, (unsigned long long)sweep);
            CK(cudaGetLastError());
        } else { /* one launch per set */
            for (int q = 0; q < (1 << grid->dim); q++) {
                unsigned long long step = sweep * 8 + (unsigned long long)q;
                int rc = p.geom.lanes == 64 ? launch_block<64>(p, p.order[q], step, smem, blocks)
                                            : launch_block<128>(p, p.order[q], step, smem, blocks);
                if (rc)
                    return -1;
            }
        }
        carlo_cell_shift sh = lj_cb_shift(s, sweep);
        if (launch_cb_shift(g, grid, g->cur, g->tmp, sh, g->st, k))
            return -1;
        carlo_cell_data t = g->cur;
        g->cur = g->tmp;
        g->tmp = t;
    }
    return 0;
}

/* Every cell's share of the energy and virial from scratch: one thread per cell. */
__global__ void cb_fresh_kernel(carlo_cell_grid g, lj_cbgeom G, carlo_cell_data d, double *out)
{
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c < g.ncells)
        lj_cb_cell_energy(&g, &G, &d, c, &out[2 * c], &out[2 * c + 1]);
}

int gpu_cb_fresh(lj_system *s, double *U, double *W)
{
    gpu_impl *g = impl(s);
    const carlo_cell_grid *grid = &s->cb.grid;
    size_t nc = (size_t)grid->ncells;
    double *dev = NULL;
    CK_MALLOC(&dev, nc * 2 * sizeof(double), "cell energies");
    double *host = static_cast<double *>(carlo_malloc(nc * 2 * sizeof(double), "cell energies"));
    const int threads = 128;
    cb_fresh_kernel<<<(unsigned)((nc + threads - 1) / threads), threads>>>(*grid, s->cb.geom, g->cur, dev);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess && host)
        e = cudaMemcpy(host, dev, nc * 2 * sizeof(double), cudaMemcpyDeviceToHost);
    cudaFree(dev);
    if (!host)
        return -1;
    if (e != cudaSuccess) {
        free(host);
        return carlo_cuda_fail(e, "cb_fresh_kernel", __FILE__, __LINE__);
    }
    double u = 0.0, w = 0.0;
    for (size_t c = 0; c < nc; c++) {
        u += host[2 * c];
        w += host[2 * c + 1];
    }
    free(host);
    *U = 0.5 * u;
    *W = 0.5 * w;
    if (!isfinite(*U) || !isfinite(*W))
        return carlo_seterr("the energy is not finite (%g): particles overlap", *U);
    return 0;
}

int gpu_cb_sweeps(lj_system *s, uint64_t n)
{
    gpu_impl *g = impl(s);
    const carlo_cell_grid *grid = &s->cb.grid;
    uint64_t done = 0;
    unsigned long long accepted = 0;
    while (done < n) {
        dev_state h;
        memset(&h, 0, sizeof h);
        CK(cudaMemcpy(g->st, &h, sizeof h, cudaMemcpyHostToDevice));
        carlo_cell_data start = g->cur; /* the buffers alternate from here */
        carlo_cell_data other = g->tmp;
        if (cb_queue(s, s->step + done, n - done))
            return -1;
        CK(cudaMemcpy(&h, g->st, sizeof h, cudaMemcpyDeviceToHost)); /* waits */
        accepted += h.accepted;
        if (!h.status) {
            done = n;
            break;
        }
        /* the shift of sweep k = fail_sweep overfilled a cell: its source is the valid state
         * (everything queued after it did nothing); more room, then that shift again */
        uint64_t k = h.fail_sweep;
        g->cur = k % 2 == 0 ? start : other;
        g->tmp = k % 2 == 0 ? other : start;
        carlo_cell_shift sh = lj_cb_shift(s, s->step + done + k);
        do { /* the failed shift wrote only into the second buffer: cur is intact */
            if (gpu_cb_grow(s))
                return -1;
            memset(&h, 0, sizeof h);
            CK(cudaMemcpy(g->st, &h, sizeof h, cudaMemcpyHostToDevice));
            if (launch_cb_shift(g, grid, g->cur, g->tmp, sh, g->st, k))
                return -1;
            CK(cudaMemcpy(&h, g->st, sizeof h, cudaMemcpyDeviceToHost));
        } while (h.status);
        carlo_cell_data t = g->cur;
        g->cur = g->tmp;
        g->tmp = t;
        done += k + 1;
    }
    s->step += n;
    s->tried += (uint64_t)s->cb.passes * s->N * n;
    s->accepted += accepted;
    size_t nc = (size_t)grid->ncells;
    double *acc = static_cast<double *>(carlo_malloc(nc * 2 * sizeof(double), "per-cell sums"));
    if (!acc)
        return -1;
    if (gpu_cb_download(s, NULL, acc, acc + nc)) {
        free(acc);
        return -1;
    }
    s->U = s->cb.U0 + lj_cb_total(acc, grid->ncells);
    s->W = s->cb.W0 + lj_cb_total(acc + nc, grid->ncells);
    free(acc);
    return 0;
}

int gpu_sync(lj_system *s)
{
    (void)s;
    CK(cudaDeviceSynchronize());
    return 0;
}

} // namespace

extern "C" const lj_backend lj_cuda_backend = {
    "gpu",     gpu_create,      gpu_destroy,     gpu_upload,    gpu_download, gpu_moves,
    gpu_widom, gpu_sync,        gpu_cb_upload,   gpu_cb_download, gpu_cb_sweeps,
    gpu_cb_fresh,
};
