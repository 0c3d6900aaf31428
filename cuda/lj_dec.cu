/* lj_dec.cu — the CUDA backend of the decomposition algorithm of the Lennard-Jones model
 * (src/lj/lj_dec.h): every trial move's energy summed on the device in the canonical order of
 * src/lj/lj_kernel.h, the Metropolis decision and the update made on the device, no host round
 * trip per move.
 *
 * Kernels (the chain is the same with each; sys:launch{ kernel = } picks one for benchmarks):
 *   persistent  cells: one block of LJ_LANES threads runs many moves, each thread a lane;
 *               all: a cooperative grid, each block a set of tiles (positions cached in
 *               shared memory), one grid barrier per move; one block for small N.
 *   launch      one launch per move; for all, the last block to finish reduces the tile
 *               sums and decides (Hailat et al., Algorithm 3).
 *   graph       the per-move launches recorded once in a CUDA graph and replayed.
 * Device-side state (U, W, move counter, acceptances, an overflow flag) lives in one struct
 * the kernels update; the host reads it back once per call of the backend. */
#include <cooperative_groups.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "core/error.h"
#include "lj/lj_dec.h"
}
#include "check.h"
#include "lj_gpu.cuh"

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

const int GRAPH_MOVES = 256; /* launches recorded in one graph */

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
};

gpu_impl *impl(lj_dec_system *s) { return static_cast<gpu_impl *>(s->impl); }

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

kp params(lj_dec_system *s)
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

int gpu_create(lj_dec_system *s)
{
    gpu_impl *g = static_cast<gpu_impl *>(carlo_calloc(1, sizeof(gpu_impl), "the Lennard-Jones GPU backend"));
    if (!g)
        return -1;
    s->impl = g;
    CK_MALLOC(&g->st, sizeof(dev_state), "the move state");
    CK(cudaMemset(g->st, 0, sizeof(dev_state)));
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
            CK(carlo_smem_raise((const void *)all_moves<true>, smem));
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

void gpu_destroy(lj_dec_system *s)
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
    free(g);
    s->impl = NULL;
}

int upload_cells(lj_dec_system *s, const double *pos, const int32_t *order, const int32_t *count,
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

int download_cells(lj_dec_system *s, int32_t *order, int32_t *count)
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

int gpu_upload(lj_dec_system *s, const double *pos, const lj_cell_lists *cells)
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

int gpu_download(lj_dec_system *s, double *pos, lj_cell_lists *cells)
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
int grow_cells(lj_dec_system *s)
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

int launch_cells_persistent(lj_dec_system *s, unsigned long long n)
{
    if (s->ncell <= SMEM_COUNTS_MAX) {
        size_t smem = (size_t)s->ncell * sizeof(int32_t);
        CK(carlo_smem_raise((const void *)cells_moves<true>, smem));
        cells_moves<true><<<1, LJ_LANES, smem>>>(params(s), n, s->ncell);
    } else {
        cells_moves<false><<<1, LJ_LANES>>>(params(s), n, s->ncell);
    }
    CK(cudaGetLastError());
    return 0;
}

int launch_all_persistent(lj_dec_system *s, unsigned long long n)
{
    gpu_impl *g = impl(s);
    kp p = params(s);
    void *args[] = {&p, &n};
    if (g->coop_smem) {
        CK(carlo_smem_raise((const void *)all_moves<true>, g->coop_smem));
        CK(cudaLaunchCooperativeKernel((const void *)all_moves<true>, dim3((unsigned)g->coop_blocks),
                                       dim3(LJ_LANES), args, g->coop_smem, 0));
    } else {
        CK(cudaLaunchCooperativeKernel((const void *)all_moves<false>, dim3((unsigned)g->coop_blocks),
                                       dim3(LJ_LANES), args, 0, 0));
    }
    return 0;
}

/* One move: the kernel the launch and graph variants repeat. */
int launch_one(lj_dec_system *s, cudaStream_t stream)
{
    kp p = params(s);
    if (s->sum == LJ_SUM_CELLS)
        cells_moves<false><<<1, LJ_LANES, 0, stream>>>(p, 1ull, s->ncell);
    else
        all_one_move<<<p.G, LJ_LANES, 0, stream>>>(p);
    CK(cudaGetLastError());
    return 0;
}

int record_graph(lj_dec_system *s)
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

int gpu_moves(lj_dec_system *s, uint64_t n)
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

int gpu_widom(lj_dec_system *s, uint32_t n, uint64_t sample, double *out)
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
    widom_kernel<<<n, LJ_LANES>>>(params(s), s->sum == LJ_SUM_CELLS, sample, lj_widom_tail(&s->lj), g->widom);
    CK(cudaGetLastError());
    CK(cudaMemcpy(out, g->widom, n * sizeof(double), cudaMemcpyDeviceToHost));
    return 0;
}


int gpu_sync(lj_dec_system *s)
{
    (void)s;
    CK(cudaStreamSynchronize(cudaStreamPerThread));
    return 0;
}

} // namespace

extern "C" const lj_dec_backend lj_dec_cuda_backend = {
    "gpu", gpu_create, gpu_destroy, gpu_upload, gpu_download, gpu_moves, gpu_widom, gpu_sync,
};
