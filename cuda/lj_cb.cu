/* lj_cb.cu — the CUDA backend of the checkerboard algorithm of the Lennard-Jones model
 * (src/lj/lj_cb.h). Sum order near: one warp per active cell (the near-candidate order of
 * lj_cb_kernel.h; a whole sweep in one launch, the warps taking the cells of all its sets from a
 * counter, each cell waiting only for its neighbours of the sets before its own). Sum order
 * cell: one block of 128 threads per active cell (the all-candidate order, one launch per
 * set). The cell's neighbourhood is staged in shared memory, its particles moved in the order
 * lj_cb_order gives; the cell shift of core/cells_kernel.h, one thread per cell into a second
 * buffer. The set order and the shift are drawn on the host, as the CPU backend draws them. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "core/error.h"
#include "lj/lj_cb.h"
}
#include "cells.h"
#include "check.h"
#include "lj_gpu.cuh"
#include "lj_cb_warp.cuh"

namespace {

struct gpu_impl {
    dev_state *st;
    carlo_cell_data cur, tmp; /* the cells and the shift's second buffer */
    double *acc_u, *acc_w;    /* per-cell sums of the accepted changes */
    uint32_t *cb_done;  /* per cell: the stamp of the last sweep that updated it (cb_sweep) */
    uint32_t cb_stamp;  /* the last sweep's stamp (never 0) */
    size_t smem_optin; /* shared memory a block may have (opt-in limit) */
    double *sites;     /* the tether's sites (N x 3), when set */
};

gpu_impl *impl(lj_cb_system *s) { return static_cast<gpu_impl *>(s->impl); }

/* The halving tree over T lanes of two sums (T = 32 or 128); thread 0 gets the result. */
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
template <int T, bool TETHER>
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
        double dT = 0.0;
        if (TETHER && !cb_tether(p, c, xyz, perm[k % n], o, nw, &dT))
            continue; /* the reference particle: the same for every thread */
        double du = 0.0, dw = 0.0;
        for (int kk = t; kk < M; kk += T) {
            if (kk == me)
                continue;
            const float4 e = cand[kk];
            lj_cb_candidate(&p.geom, o, nw, e.x, e.y, e.z, &du, &dw);
        }
        block_tree2<T>(du, dw, sm);
        if (t == 0) {
            accept_flag = TETHER ? lj_cb_accept_tether(du, p.beta, dT, logu) : lj_cb_accept(du, p.beta, logu);
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
template <bool TETHER>
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
        cb_cell<TETHER>(p, p.order[place], place, sweep * 8 + (unsigned long long)place, (int64_t)w % S, lane, base);
    }
}

/* One sub-sweep, of set `set` at place `place` of its sweep's order (RNG step `step`), by the
 * warps as cb_sweep does it; p.place sends no cell waiting for another (the launches before
 * this one wrote the other sets). */
template <bool TETHER>
__global__ void __launch_bounds__(CB_WARPS * 32, 7) cb_set(cbp p, int set, int place,
                                                           unsigned long long step)
{
    extern __shared__ float4 cb_smem[];
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    if (p.st->status)
        return;
    char *base = reinterpret_cast<char *>(cb_smem) + (size_t)wid * cbw_bytes(p.cap, p.grid.nmax);
    const int64_t S = carlo_cell_set_size(&p.grid);
    for (;;) {
        unsigned long long w = 0;
        if (lane == 0)
            w = atomicAdd(&p.st->cb_next, 1u);
        w = __shfl_sync(FULL, w, 0);
        if ((int64_t)w >= S)
            return;
        cb_cell<TETHER>(p, set, place, step, (int64_t)w, lane, base);
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
        CK(carlo_smem_raise((const void *)k, smem));
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

int gpu_cb_create(lj_cb_system *s)
{
    gpu_impl *g = static_cast<gpu_impl *>(carlo_calloc(1, sizeof(gpu_impl), "the Lennard-Jones GPU backend"));
    if (!g)
        return -1;
    s->impl = g;
    CK_MALLOC(&g->st, sizeof(dev_state), "the move state");
    CK(cudaMemset(g->st, 0, sizeof(dev_state)));
    int dev = 0, optin = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    g->smem_optin = (size_t)optin;
    return 0; /* the cells come with upload */
}

void gpu_cb_destroy(lj_cb_system *s)
{
    gpu_impl *g = impl(s);
    if (!g)
        return;
    cudaFree(g->st);
    cudaFree(g->cur.pos);
    cudaFree(g->cur.aux);
    cudaFree(g->cur.count);
    cudaFree(g->tmp.pos);
    cudaFree(g->tmp.aux);
    cudaFree(g->tmp.count);
    cudaFree(g->acc_u);
    cudaFree(g->acc_w);
    cudaFree(g->cb_done);
    cudaFree(g->sites);
    free(g);
    s->impl = NULL;
}

int cb_copy(const carlo_cell_grid *grid, const carlo_cell_data *from, const carlo_cell_data *to,
            cudaMemcpyKind kind)
{
    CK(cudaMemcpy(to->pos, from->pos, carlo_cells_pos_len(grid) * sizeof(float), kind));
    CK(cudaMemcpy(to->aux, from->aux, carlo_cells_aux_len(grid) * sizeof(uint32_t), kind));
    CK(cudaMemcpy(to->count, from->count, (size_t)grid->ncells * sizeof(uint32_t), kind));
    return 0;
}

int gpu_cb_upload(lj_cb_system *s, const carlo_cell_data *cells, const double *acc_u,
                  const double *acc_w)
{
    gpu_impl *g = impl(s);
    const carlo_cell_grid *grid = &s->grid;
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

int gpu_cb_download(lj_cb_system *s, const carlo_cell_data *cells, double *acc_u, double *acc_w)
{
    gpu_impl *g = impl(s);
    const carlo_cell_grid *grid = &s->grid;
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
int gpu_cb_grow(lj_cb_system *s)
{
    gpu_impl *g = impl(s);
    carlo_cell_grid *grid = &s->grid;
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
        e = cudaStreamSynchronize(cudaStreamPerThread);
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
size_t cb_block_smem(const lj_cb_system *s)
{
    const carlo_cell_grid *grid = &s->grid;
    return (size_t)lj_neighbour_count(grid->dim) * (size_t)grid->nmax * sizeof(float4) +
           (size_t)grid->nmax * sizeof(int);
}

template <int T> int launch_block(const cbp &p, int set, unsigned long long step, size_t smem,
                                  unsigned blocks)
{
    void (*k)(cbp, int, unsigned long long) =
        p.th.lambda > 0 ? cb_block_subsweep<T, true> : cb_block_subsweep<T, false>;
    CK(carlo_smem_raise((const void *)k, smem));
    k<<<blocks, T, smem>>>(p, set, step);
    CK(cudaGetLastError());
    return 0;
}

/* Candidates a warp stages: the whole neighbourhood's slots, at most CB_CAP_MAX. */
int cb_cap(const lj_cb_system *s)
{
    const carlo_cell_grid *grid = &s->grid;
    int all = lj_neighbour_count(grid->dim) * grid->nmax;
    return all < CB_CAP_MAX ? all : CB_CAP_MAX;
}

/* The launch of sub-sweeps: parameters, shared memory and blocks (kernel: cb_sweep or cb_set
 * for the order near; the blocks of the order cell). */
int cb_prepare(lj_cb_system *s, cbp &p, size_t &smem, unsigned &blocks, const void *kernel)
{
    gpu_impl *g = impl(s);
    const carlo_cell_grid *grid = &s->grid;
    memset(&p, 0, sizeof p);
    p.grid = *grid;
    p.geom = s->geom;
    lj_cb_set_delta(&p.geom, s->delta);
    p.acc_u = g->acc_u;
    p.acc_w = g->acc_w;
    p.st = g->st;
    p.seed = s->seed;
    p.beta = s->beta;
    p.passes = s->passes;
    lj_tether th;
    if (lj_cb_tether(s, &th)) { /* the TETHER kernels (p.th.lambda > 0), the sites on the device */
        p.th = th;
        p.th.site = g->sites;
    }
    const bool warp = p.geom.lanes == LJ_CB_WARP;
    if (warp) { /* as many blocks as fit at once: the warps take the cells from a counter */
        p.cap = cb_cap(s);
        smem = CB_WARPS * cbw_bytes(p.cap, grid->nmax);
        CK(carlo_smem_raise((const void *)kernel, smem));
        CK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                cudaSharedmemCarveoutMaxShared));
        int per_sm = 0, sms = 0, dev = 0;
        CK(cudaGetDevice(&dev));
        CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, CB_WARPS * 32, smem));
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
    return 0;
}

/* The one-launch sweep kernel of p's form. */
const void *sweep_kernel(bool tether)
{
    return tether ? (const void *)cb_sweep<true> : (const void *)cb_sweep<false>;
}

/* Queue sweeps first .. first + n - 1 (no waiting); origin: the tether's origin before sweep
 * first, after the last on return. */
int cb_queue(lj_cb_system *s, uint64_t first, uint64_t n, double origin[3])
{
    gpu_impl *g = impl(s);
    const carlo_cell_grid *grid = &s->grid;
    cbp p;
    size_t smem;
    unsigned blocks;
    lj_tether th;
    if (cb_prepare(s, p, smem, blocks, sweep_kernel(lj_cb_tether(s, &th) != NULL)))
        return -1;
    const bool tether = p.th.lambda > 0;
    const bool warp = p.geom.lanes == LJ_CB_WARP;
    for (uint64_t k = 0; k < n; k++) {
        const uint64_t sweep = first + k;
        carlo_cells_set_order(grid->dim, s->seed, LJ_PURPOSE_CB_SETS, sweep, p.order);
        p.cells = g->cur;
        for (int a = 0; a < 3; a++)
            p.th.origin[a] = origin[a];
        if (warp) { /* the whole sweep in one launch */
            for (int q = 0; q < (1 << grid->dim); q++)
                p.place[p.order[q]] = q;
            p.stamp = ++g->cb_stamp ? g->cb_stamp : ++g->cb_stamp; /* never 0, the stamps' start */
            if (tether)
                cb_sweep<true><<<blocks, CB_WARPS * 32, smem>>>(p, (unsigned long long)sweep);
            else
                cb_sweep<false><<<blocks, CB_WARPS * 32, smem>>>(p, (unsigned long long)sweep);
            CK(cudaGetLastError());
        } else { /* one launch per set */
            for (int q = 0; q < (1 << grid->dim); q++) {
                unsigned long long step = sweep * 8 + (unsigned long long)q;
                if (launch_block<LJ_ORDER_CELL>(p, p.order[q], step, smem, blocks))
                    return -1;
            }
        }
        carlo_cell_shift sh = lj_cb_shift(s, sweep);
        if (launch_cb_shift(g, grid, g->cur, g->tmp, sh, g->st, k))
            return -1;
        lj_cb_origin_shift(s, sh, origin);
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

int gpu_cb_fresh(lj_cb_system *s, double *U, double *W)
{
    gpu_impl *g = impl(s);
    const carlo_cell_grid *grid = &s->grid;
    size_t nc = (size_t)grid->ncells;
    double *dev = NULL;
    CK_MALLOC(&dev, nc * 2 * sizeof(double), "cell energies");
    double *host = static_cast<double *>(carlo_malloc(nc * 2 * sizeof(double), "cell energies"));
    const int threads = 128;
    cb_fresh_kernel<<<(unsigned)((nc + threads - 1) / threads), threads>>>(*grid, s->geom, g->cur, dev);
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

/* U and W from the per-cell sums. */
int running_sums(lj_cb_system *s)
{
    const carlo_cell_grid *grid = &s->grid;
    size_t nc = (size_t)grid->ncells;
    double *acc = static_cast<double *>(carlo_malloc(nc * 2 * sizeof(double), "per-cell sums"));
    if (!acc)
        return -1;
    if (gpu_cb_download(s, NULL, acc, acc + nc)) {
        free(acc);
        return -1;
    }
    s->U = s->U0 + lj_cb_total(acc, grid->ncells);
    s->W = s->W0 + lj_cb_total(acc + nc, grid->ncells);
    free(acc);
    return 0;
}

int gpu_cb_sweeps(lj_cb_system *s, uint64_t n)
{
    gpu_impl *g = impl(s);
    const carlo_cell_grid *grid = &s->grid;
    uint64_t done = 0;
    unsigned long long accepted = 0;
    double origin[3] = {s->origin[0], s->origin[1], s->origin[2]};
    while (done < n) {
        dev_state h;
        memset(&h, 0, sizeof h);
        CK(cudaMemcpy(g->st, &h, sizeof h, cudaMemcpyHostToDevice));
        carlo_cell_data start = g->cur; /* the buffers alternate from here */
        carlo_cell_data other = g->tmp;
        const double origin0[3] = {origin[0], origin[1], origin[2]};
        if (cb_queue(s, s->step + done, n - done, origin))
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
        for (int a = 0; a < 3; a++) /* the origin after sweeps done .. done + k */
            origin[a] = origin0[a];
        for (uint64_t j = 0; j <= k; j++)
            lj_cb_origin_shift(s, lj_cb_shift(s, s->step + done + j), origin);
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
    for (int a = 0; a < 3; a++)
        s->origin[a] = origin[a];
    s->step += n;
    s->tried += (uint64_t)s->passes * s->N * n;
    s->accepted += accepted;
    return running_sums(s);
}

/* One sub-sweep (lj_cb_backend.subsweep), waited for. */
int gpu_cb_subsweep(lj_cb_system *s, int set, int place)
{
    gpu_impl *g = impl(s);
    const carlo_cell_grid *grid = &s->grid;
    dev_state h;
    memset(&h, 0, sizeof h); /* cb_next = 0: the set's first cell */
    CK(cudaMemcpy(g->st, &h, sizeof h, cudaMemcpyHostToDevice));
    cbp p;
    size_t smem;
    unsigned blocks;
    lj_tether th;
    const bool tether = lj_cb_tether(s, &th) != NULL;
    if (cb_prepare(s, p, smem, blocks, tether ? (const void *)cb_set<true> : (const void *)cb_set<false>))
        return -1;
    p.cells = g->cur;
    const unsigned long long step = s->step * 8 + (unsigned long long)place;
    if (p.geom.lanes == LJ_CB_WARP) {
        for (int q = 0; q < 8; q++)
            p.place[q] = 8; /* after every place: no cell waits */
        p.stamp = ++g->cb_stamp ? g->cb_stamp : ++g->cb_stamp;
        if (tether)
            cb_set<true><<<blocks, CB_WARPS * 32, smem>>>(p, set, place, step);
        else
            cb_set<false><<<blocks, CB_WARPS * 32, smem>>>(p, set, place, step);
        CK(cudaGetLastError());
    } else if (launch_block<LJ_ORDER_CELL>(p, set, step, smem, blocks)) {
        return -1;
    }
    CK(cudaMemcpy(&h, g->st, sizeof h, cudaMemcpyDeviceToHost)); /* waits */
    size_t nc = (size_t)grid->ncells;
    uint32_t *count = static_cast<uint32_t *>(carlo_malloc(nc * sizeof(uint32_t), "cell counts"));
    if (!count)
        return -1;
    cudaError_t e = cudaMemcpy(count, g->cur.count, nc * sizeof(uint32_t), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        free(count);
        return carlo_cuda_fail(e, "cudaMemcpy(cell counts)", __FILE__, __LINE__);
    }
    s->tried += (uint64_t)s->passes * lj_cb_set_members(grid, count, set);
    free(count);
    s->accepted += h.accepted;
    return running_sums(s);
}

/* The cell shift after sweep s->step (lj_cb_backend.shift), the cells grown until it fits. */
int gpu_cb_shift(lj_cb_system *s)
{
    gpu_impl *g = impl(s);
    carlo_cell_shift sh = lj_cb_shift(s, s->step);
    dev_state h;
    for (;;) { /* a shift that overfills wrote only into the second buffer: cur is intact */
        memset(&h, 0, sizeof h);
        CK(cudaMemcpy(g->st, &h, sizeof h, cudaMemcpyHostToDevice));
        if (launch_cb_shift(g, &s->grid, g->cur, g->tmp, sh, g->st, 0))
            return -1;
        CK(cudaMemcpy(&h, g->st, sizeof h, cudaMemcpyDeviceToHost));
        if (!h.status)
            break;
        if (gpu_cb_grow(s))
            return -1;
    }
    carlo_cell_data t = g->cur;
    g->cur = g->tmp;
    g->tmp = t;
    lj_cb_origin_shift(s, sh, s->origin);
    s->step++;
    return 0;
}

int gpu_cb_sync(lj_cb_system *s)
{
    (void)s;
    CK(cudaStreamSynchronize(cudaStreamPerThread));
    return 0;
}

/* The sites to the device (lj_cb_backend.sites). */
int gpu_cb_sites(lj_cb_system *s)
{
    gpu_impl *g = impl(s);
    const size_t bytes = (size_t)s->N * 3 * sizeof(double);
    if (!g->sites) {
        CK_MALLOC(&g->sites, bytes, "tether sites");
    }
    CK(cudaMemcpy(g->sites, s->sites, bytes, cudaMemcpyHostToDevice));
    return 0;
}
} // namespace

extern "C" const lj_cb_backend lj_cb_cuda_backend = {
    "gpu", gpu_cb_create, gpu_cb_destroy, gpu_cb_upload, gpu_cb_download, gpu_cb_sweeps,
    gpu_cb_subsweep, gpu_cb_shift, gpu_cb_fresh, gpu_cb_sync, gpu_cb_sites,
};
