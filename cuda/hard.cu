/* hard.cu — the CUDA backend of hard disks and spheres: MPMC Algorithm 2 with one thread per
 * active cell (src/hard/hard_kernel.h, the same code the CPU runs), the cells in the layout of
 * Algorithm 3 so that a warp reads consecutive addresses, neighbour cells through the read-only
 * cache, the cell shift of Algorithm 4 into a second buffer, and volume moves, overlap checks
 * and pressure histograms without leaving the device. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "core/error.h"
#include "hard/hard.h"
#include "hard/hard_mpi.h"
}
#include "cells.h"
#include "check.h"
#include "hard_gpu.h"

namespace {

using namespace hard_gpu;

constexpr unsigned FULL_WARP = 0xffffffffu;

/* Sum a value over the warp and add it once to a 64-bit counter. */
__device__ __forceinline__ void warp_add(unsigned long long *to, unsigned int v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(FULL_WARP, v, off);
    if ((threadIdx.x + threadIdx.y * blockDim.x) % 32 == 0 && v)
        atomicAdd(to, (unsigned long long)v);
}

/* One checkerboard set: thread (a, b, c) of the grid updates cell (2a, 2b, 2c) + the set's
 * parities; consecutive a are consecutive addresses. Every thread reaches the reductions. With
 * GATHER, each thread's neighbour list lives in dynamic shared memory, entries a block's
 * thread count apart (consecutive threads, consecutive banks). With TETHER, the harmonic tether
 * th (Frenkel-Ladd runs) decides each move before its overlap tests, as on the CPU; without,
 * th is never read and the kernel is the untethered one. With SKEW (a triclinic box; never with
 * TETHER, which a tilted box refuses), the neighbour lists and the overlap tests take the tilts
 * of mv; without, the kernel is the orthorhombic one, tilts never read. Only the active cells
 * whose coordinate along the last axis (y in 2D, z in 3D) is 2 k + parity with k in [h0, h1)
 * are updated (a split system's slab; 0 and g.half[dim - 1] for the whole grid). */
template <int DIM, int NMAX, int CACHE, int GATHER, int TETHER, int SKEW = 0>
__global__ void __launch_bounds__(DIM == 2 ? 1024 : 256) subsweep_kernel(carlo_cell_grid g, float *pos,
                                                        const uint32_t *__restrict__ count, int set,
                                                        hard_moves mv, uint64_t seed, uint64_t step,
                                                        dev_counters *ctr, hard_tether th, int h0, int h1)
{
    extern __shared__ float nb_shared[];
    const int a = blockIdx.x * blockDim.x + threadIdx.x;
    const int b = blockIdx.y * blockDim.y + threadIdx.y + (DIM == 2 ? h0 : 0);
    const int c = blockIdx.z + (DIM == 3 ? h0 : 0);
    unsigned int tried = 0, accepted = 0;
    if (a < g.half[0] && b < (DIM == 2 ? h1 : g.half[1])) {
        const int xyz[3] = {2 * a + (set & 1), 2 * b + (set >> 1 & 1), DIM == 3 ? 2 * c + (set >> 2 & 1) : 0};
        const int threads = (int)(blockDim.x * blockDim.y);
        float *nb = GATHER ? nb_shared + threadIdx.x + threadIdx.y * blockDim.x : NULL;
        accepted = hard_cell_update(DIM, NMAX, CACHE, &g, pos, count, xyz, mv, seed, step, nb, threads,
                                    DIM == 2 ? HARD_NB_2D : HARD_NB_3D, TETHER ? &th : NULL,
                                    SKEW ? mv.tilt : NULL, &tried);
    }
    warp_add(&ctr->tried, tried);
    warp_add(&ctr->accepted, accepted);
}

/* A team of T lanes (2, 4 or 8, within one warp) per active cell, HARD_TEAM_THREADS threads per
 * block, the active cells of the set numbered as carlo_cell_active numbers them. The cell's
 * particles sit in shared memory; lane l of the team gathers the neighbour cells l, l + T, ...
 * into its own list (hard_gather_cells, as the one-thread kernel does; a lane whose list would
 * overflow scans its cells at every move instead); lane l draws the displacements of moves l, l + T, ...
 * ahead; each move's overlap tests are split over the lanes and combined by a vote. An overlap
 * is an overlap whichever lane finds it, so the decisions, and the chain, are those of
 * hard_cell_update. With TETHER, every lane of the team makes the tether's decision of the move
 * before the overlap tests, as hard_tether_accept makes it (hard_tether_dE and
 * hard_tether_metropolis on the same inputs), and a refusal counts as a hit; lane l draws the
 * Metropolis uniforms of moves l, l + T, ... and their logarithms ahead, with the displacements,
 * and the offsets of those moves' sites (carlo_tether_offset), so neither a draw nor a site's
 * load waits inside a move; the tags of the cell's particles sit in shared memory.
 * Without TETHER, th is never read. With SKEW (never with TETHER), the lists and the overlap
 * tests take the tilts of mv, as hard_cell_update does. Only the active cells t in [h0 p, h1 p)
 * are updated, p the active cells of one layer (subsweep_kernel's h0 and h1). */
#define HARD_TEAM_THREADS 128

template <int DIM, int NMAX, int T, int TETHER, int SKEW>
__global__ void __launch_bounds__(HARD_TEAM_THREADS) team_kernel(carlo_cell_grid g, float *pos,
                                                                const uint32_t *__restrict__ count,
                                                                int set, hard_moves mv, uint64_t seed,
                                                                uint64_t step, dev_counters *ctr,
                                                                hard_tether th, int h0, int h1)
{
    constexpr int LIST = (DIM == 3 ? 48 : 24) / T; /* list entries per lane: about twice the need */
    __shared__ float own_s[HARD_TEAM_THREADS / T][NMAX][DIM];
    __shared__ float list_s[LIST * DIM][HARD_TEAM_THREADS]; /* entry k, axis a of a thread */
    __shared__ uint32_t tag_s[TETHER ? HARD_TEAM_THREADS / T : 1][TETHER ? NMAX : 1];
    const int lane = threadIdx.x & 31, tl = threadIdx.x % T, team = threadIdx.x / T;
    const float *const tilt = SKEW ? mv.tilt : NULL;
    const int lead = lane & ~(T - 1);
    const int64_t per = carlo_cell_set_size(&g) / g.half[DIM - 1]; /* active cells a layer */
    const int64_t t = (int64_t)h0 * per + (int64_t)blockIdx.x * (HARD_TEAM_THREADS / T) + team;
    unsigned int tried = 0, accepted = 0;
    int n = 0, xyz[3] = {0, 0, 0};
    int64_t c = 0;
    if (t < (int64_t)h1 * per) {
        carlo_cell_active(&g, set, t, xyz);
        c = carlo_cell_index(&g, xyz[0], xyz[1], xyz[2]);
        n = (int)count[c];
        n = n > NMAX ? NMAX : n;
    }
    const bool live = n > 0; /* the same for the whole team */
    float(*own)[DIM] = own_s[team];
    constexpr int NQ = DIM == 3 ? 26 : 8;
    int nl = 0;
    bool scan = false;
    uint64_t perm = HARD_IDENTITY;
    if (live) {
        for (int i = tl; i < n; i += T) {
            for (int a = 0; a < DIM; a++)
                own[i][a] = pos[carlo_cell_slot(&g, c, i, a)];
            if (TETHER)
                tag_s[team][i] = th.tag[carlo_cell_slot(&g, c, i, 0)];
        }
        /* this lane's neighbour cells: numbers tl, tl + T, ... of the 3^DIM - 1 around, into
         * its list (entry k, axis a at list_s[k * DIM + a][threadIdx.x]) */
        nl = hard_gather_cells(DIM, NMAX, &g, pos, count, xyz, tl, T, &list_s[0][threadIdx.x],
                               HARD_TEAM_THREADS, LIST, tilt);
        scan = nl < 0; /* an overflowed list: the lane scans its cells instead */
        if (scan)
            nl = 0;
        if (tl == 0 && mv.shuffle)
            perm = hard_permutation(n, seed, step, (uint32_t)c);
    }
    /* from here on every lane of the warp runs every move (an empty cell's team votes "hit"),
     * so that the shuffles and votes are warp-wide: one instruction each, where votes of
     * team-sized masks in diverged code ran once per team */
    perm = __shfl_sync(FULL_WARP, perm, lead);
    __syncwarp();
    float dmine[3] = {0.0f, 0.0f, 0.0f};
    /* with TETHER: this lane's Metropolis uniform, -log of it, and its move's site offset */
    double umine = 0.0, lmine = 0.0, cmine[3] = {0.0, 0.0, 0.0};
    int k = 0;
    for (int s = 0; s < mv.moves; s++) {
        if (live && s % T == 0 && s + tl < mv.moves) {
            if (TETHER) {
                hard_displacement_tether(&g, DIM, mv.delta, seed, step, (uint32_t)c, (uint32_t)(s + tl), dmine,
                                         &umine);
                lmine = -log(umine);
                /* the particle this move will try (the k of move s + tl is (s + tl) mod n) */
                const int im = (int)(perm >> (4 * ((s + tl) % n)) & 15u);
                carlo_tether_offset(&g, DIM, xyz, th.origin, th.L, 1, th.site + 3 * (size_t)tag_s[team][im], cmine);
            } else {
                hard_displacement(&g, DIM, mv.delta, seed, step, (uint32_t)c, (uint32_t)(s + tl), dmine);
            }
        }
        float dd[3] = {0.0f, 0.0f, 0.0f};
        for (int a = 0; a < DIM; a++)
            dd[a] = __shfl_sync(FULL_WARP, dmine[a], lead + s % T);
        double u = 0.0, nlu = 0.0, cc[3] = {0.0, 0.0, 0.0};
        if (TETHER) {
            u = __shfl_sync(FULL_WARP, umine, lead + s % T);
            nlu = __shfl_sync(FULL_WARP, lmine, lead + s % T);
            for (int a = 0; a < DIM; a++)
                cc[a] = __shfl_sync(FULL_WARP, cmine[a], lead + s % T);
        }
        int i = 0;
        if (live) {
            i = (int)(perm >> (4 * k) & 15u);
            if (++k == n)
                k = 0;
        }
        float tp[3] = {0.0f, 0.0f, 0.0f};
        bool hit = !live;
        if (live)
            for (int a = 0; a < DIM; a++) {
                tp[a] = own[i][a] + dd[a];
                hit |= !(tp[a] >= 0.0f && tp[a] < g.w[a]); /* a move that leaves: rejected */
            }
        if (TETHER && !hit) { /* the tether first, as hard_cell_update: it needs no neighbour */
            const uint32_t tag = tag_s[team][i]; /* the reference (tag 0) stays */
            hit = tag == 0u || !hard_tether_metropolis(carlo_tether_dE(th.lambda, th.L, DIM, cc, own[i], tp), u, nlu);
        }
        for (int j = tl; j < n && !hit; j += T)
            hit = j != i && hard_d2_here(DIM, tp, own[j], tilt) < 1.0f;
        for (int e = 0; e < nl && !hit; e++) {
            float p[3] = {0.0f, 0.0f, 0.0f};
            for (int a = 0; a < DIM; a++)
                p[a] = list_s[e * DIM + a][threadIdx.x];
            hit = hard_d2_here(DIM, tp, p, tilt) < 1.0f;
        }
        if (scan && !hit) /* an overflowed list: this lane's cells, every particle */
            for (int q = tl; q < NQ && !hit; q += T) {
                int off[3];
                hard_nb_offset(DIM, q, off);
                hit = hard_overlaps_cell(DIM, NMAX, &g, pos, count, xyz, off, tp, tilt);
            }
        const unsigned team_bits = (T == 32 ? FULL_WARP : ((1u << T) - 1u)) << lead;
        const bool none = (__ballot_sync(FULL_WARP, hit) & team_bits) == 0;
        __syncwarp(); /* every lane's reads of own[i] before lane 0 writes it (a vote orders no memory) */
        if (none) { /* no lane of the team found one */
            if (tl == 0)
                for (int a = 0; a < DIM; a++)
                    own[i][a] = tp[a];
            accepted++;
        }
        __syncwarp();
    }
    if (live) {
        if (accepted)
            for (int i = tl; i < n; i += T)
                for (int a = 0; a < DIM; a++)
                    pos[carlo_cell_slot(&g, c, i, a)] = own[i][a];
        if (tl == 0)
            tried = (unsigned)mv.moves;
    }
    if (tl != 0)
        accepted = 0;
    warp_add(&ctr->tried, tried);
    warp_add(&ctr->accepted, accepted);
}

/* Every particle against its neighbours: overlapping pairs (counted from both ends) and the
 * smallest squared distance (SKEW: with the tilts of mv). */
template <int DIM, int NMAX, int SKEW>
__global__ void __launch_bounds__(256) pair_kernel(carlo_cell_grid g, const float *__restrict__ pos,
                                                   const uint32_t *__restrict__ count, dev_counters *ctr,
                                                   hard_moves mv, int64_t c0, int64_t c1)
{
    const int64_t c = c0 + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; /* cells [c0, c1) */
    unsigned int over = 0;
    float best = 3.0e38f;
    if (c < c1) {
        int xyz[3];
        carlo_cell_coords(&g, c, xyz);
        int n = (int)count[c];
        for (int i = 0; i < n && i < NMAX; i++) {
            float r2 = hard_particle_scan(DIM, NMAX, &g, pos, count, xyz, i, &over, NULL, NULL,
                                          SKEW ? mv.tilt : NULL);
            best = fminf(best, r2);
        }
    }
    for (int off = 16; off > 0; off >>= 1)
        best = fminf(best, __shfl_down_sync(FULL_WARP, best, off));
    if (threadIdx.x % 32 == 0)
        atomicMin(&ctr->r2min_bits, __float_as_uint(best));
    for (int off = 16; off > 0; off >>= 1)
        over += __shfl_down_sync(FULL_WARP, over, off);
    if (threadIdx.x % 32 == 0 && over)
        atomicAdd(&ctr->overlaps, (unsigned long long)over);
}

/* Ready the counters of one pair scan (and of a trial re-gridding), without a host round trip. */
__global__ void reset_scan_kernel(dev_counters *ctr)
{
    ctr->overlaps = 0;
    ctr->rflag = 0;
    ctr->r2min_bits = 0x7f7fffffu; /* FLT_MAX */
}

/* Pressure histograms of one configuration, in shared memory when they fit. */
template <int DIM, int NMAX, int SKEW>
__global__ void __launch_bounds__(256) hist_kernel(carlo_cell_grid g, const float *__restrict__ pos,
                                                   const uint32_t *__restrict__ count, hard_scan sc,
                                                   unsigned int *global, int shared, hard_moves mv,
                                                   int64_t c0, int64_t c1)
{
    extern __shared__ unsigned int sh[];
    const int bins = sc.gr_bins + sc.sdf_bins;
    unsigned int *h = shared ? sh : global;
    if (shared) {
        for (int k = threadIdx.x; k < bins; k += blockDim.x)
            sh[k] = 0;
        __syncthreads();
    }
    const int64_t c = c0 + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; /* cells [c0, c1) */
    if (c < c1) {
        int xyz[3];
        carlo_cell_coords(&g, c, xyz);
        int n = (int)count[c];
        for (int i = 0; i < n && i < NMAX; i++) {
            unsigned int over = 0;
            float r2 = hard_particle_scan(DIM, NMAX, &g, pos, count, xyz, i, &over, &sc, h,
                                          SKEW ? mv.tilt : NULL);
            int b = hard_sdf_bin(r2, &sc);
            if (b >= 0)
                atomicAdd(&h[sc.gr_bins + b], 1u);
        }
    }
    if (shared) {
        __syncthreads();
        for (int k = threadIdx.x; k < bins; k += blockDim.x)
            if (sh[k])
                atomicAdd(&global[k], sh[k]);
    }
}

/* Device storage d (allocated for *shape) made fit for grid g (every slot empty when new). */
int shape_for(carlo_cell_data *d, carlo_cell_grid *shape, const carlo_cell_grid *g)
{
    return carlo_cell_data_fit_with(d, shape, g, carlo_cells_dev_alloc, carlo_cells_dev_free);
}

int gpu_create(hard_system *s)
{
    gpu_impl *g = static_cast<gpu_impl *>(carlo_calloc(1, sizeof(gpu_impl), "the hard-particle GPU backend"));
    if (!g)
        return -1;
    s->impl = g;
    int dev = 0, optin = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    g->smem_max = (size_t)optin;
    CK_MALLOC(&g->ctr, sizeof(dev_counters), "move counters");
    CK(cudaMemset(g->ctr, 0, sizeof(dev_counters)));
    if (shape_for(&g->cur, &g->cur_grid, &s->grid) || shape_for(&g->spare, &g->spare_grid, &s->grid))
        return -1;
    return 0;
}

void gpu_destroy(hard_system *s)
{
    gpu_impl *g = impl(s);
    if (!g)
        return;
    if (g->mirror.pos || g->side)
        cudaDeviceSynchronize(); /* no copy from or to the host copies in flight */
    if (g->side) {
        cudaStreamDestroy(g->side);
        cudaEvent_t *const ev[4] = {&g->ev_main, &g->ev_edge, &g->ev_down, &g->ev_side};
        for (int k = 0; k < 4; k++)
            cudaEventDestroy(*ev[k]);
        stage_free(g);
    }
    carlo_cells_dev_free(&g->cur);
    carlo_cells_dev_free(&g->spare);
    mirror_unpin(g);
    carlo_cell_data_free(&g->mirror);
    cudaFree(g->sites);
    cudaFree(g->ctr);
    cudaFree(g->hist);
    free(g);
    s->impl = NULL;
}

int gpu_upload(hard_system *s, const carlo_cell_data *h)
{
    gpu_impl *g = impl(s);
    if (split_settle(s) || shape_for(&g->cur, &g->cur_grid, &s->grid))
        return -1;
    if (s->split) /* every rank uploads the whole system */
        s->split->full = 1;
    return carlo_cells_dev_upload(&s->grid, &g->cur, h);
}

int gpu_download(hard_system *s, carlo_cell_data *h)
{
    if (split_gather(s))
        return -1;
    return carlo_cells_dev_download(&s->grid, &impl(s)->cur, h);
}

/* The kernels of one sub-sweep (subsweep_kernel, team_kernel) share one signature. */
typedef void (*kernel_fn)(carlo_cell_grid, float *, const uint32_t *, int, hard_moves, uint64_t, uint64_t,
                          dev_counters *, hard_tether, int, int);

template <int TETHER, int SKEW>
kernel_fn team_for(int dim, int team)
{
    if (dim == 2)
        return team == 2   ? team_kernel<2, HARD_NMAX_2D, 2, TETHER, SKEW>
               : team == 4 ? team_kernel<2, HARD_NMAX_2D, 4, TETHER, SKEW>
                           : team_kernel<2, HARD_NMAX_2D, 8, TETHER, SKEW>;
    return team == 2   ? team_kernel<3, HARD_NMAX_3D, 2, TETHER, SKEW>
           : team == 4 ? team_kernel<3, HARD_NMAX_3D, 4, TETHER, SKEW>
                       : team_kernel<3, HARD_NMAX_3D, 8, TETHER, SKEW>;
}

template <int TETHER, int SKEW>
kernel_fn subsweep_for(int dim, int cache, int gather)
{
    if (dim == 2)
        return cache ? (gather ? subsweep_kernel<2, HARD_NMAX_2D, 1, 1, TETHER, SKEW>
                               : subsweep_kernel<2, HARD_NMAX_2D, 1, 0, TETHER, SKEW>)
                     : (gather ? subsweep_kernel<2, HARD_NMAX_2D, 0, 1, TETHER, SKEW>
                               : subsweep_kernel<2, HARD_NMAX_2D, 0, 0, TETHER, SKEW>);
    return cache ? (gather ? subsweep_kernel<3, HARD_NMAX_3D, 1, 1, TETHER, SKEW>
                           : subsweep_kernel<3, HARD_NMAX_3D, 1, 0, TETHER, SKEW>)
                 : (gather ? subsweep_kernel<3, HARD_NMAX_3D, 0, 1, TETHER, SKEW>
                           : subsweep_kernel<3, HARD_NMAX_3D, 0, 0, TETHER, SKEW>);
}

/* The update of set `set` in the active cells whose coordinate along the last axis is 2 k +
 * parity with k in [h0, h1), on stream st. */
int launch_set(hard_system *s, int set, uint64_t step, int h0, int h1, cudaStream_t st)
{
    gpu_impl *g = impl(s);
    const carlo_cell_grid &gr = s->grid;
    const hard_launch &la = s->launch; /* never the chain: every launch decides the same */
    if (h1 <= h0) /* a slab with no layer of this set */
        return 0;
    int bx = la.block[0] > 0 ? la.block[0] : 32, by = la.block[1] > 0 ? la.block[1] : 4;
    /* the tether (Frenkel-Ladd runs) goes through the launch chosen, its kernels' TETHER form */
    hard_tether th;
    memset(&th, 0, sizeof th);
    const int tether = s->lambda > 0 && s->sites;
    if (tether) {
        th.lambda = s->lambda;
        for (int a = 0; a < 3; a++) {
            th.origin[a] = s->origin[a];
            th.L[a] = s->box.L[a];
        }
        th.site = g->sites;
        th.tag = g->cur.aux; /* word plane 0 */
    }
    dim3 block((unsigned)bx, (unsigned)by, 1);
    dim3 grid((unsigned)((gr.half[0] + bx - 1) / bx),
              (unsigned)(gr.dim == 3 ? (gr.half[1] + by - 1) / by : (h1 - h0 + by - 1) / by),
              (unsigned)(gr.dim == 3 ? h1 - h0 : 1));
    /* a triclinic box (never tethered) takes the kernels' SKEW forms */
    const int skew = s->mv.skew != 0;
    if (la.team > 1) {
        kernel_fn k = skew ? team_for<0, 1>(gr.dim, la.team)
                           : (tether ? team_for<1, 0>(gr.dim, la.team) : team_for<0, 0>(gr.dim, la.team));
        const int64_t per = HARD_TEAM_THREADS / la.team;
        const int64_t cells = carlo_cell_set_size(&gr) / gr.half[gr.dim - 1] * (h1 - h0);
        const unsigned blocks = (unsigned)((cells + per - 1) / per);
        k<<<blocks, HARD_TEAM_THREADS, 0, st>>>(gr, g->cur.pos, g->cur.count, set, s->mv, s->seed, step, g->ctr,
                                                th, h0, h1);
        CK(cudaGetLastError());
    } else {
        /* 2D: the four slots of a cell in registers; 3D: twelve slots would cost 108 registers
         * and three quarters of the occupancy, so the cell stays in memory (L1) */
        const int cache = la.variant == 1;
        size_t smem = (size_t)(gr.dim == 2 ? HARD_NB_2D : HARD_NB_3D) * (size_t)gr.dim * (size_t)(bx * by) *
                      sizeof(float);
        /* a block too large for its lists in shared memory scans the cells per move instead */
        const int gather = la.gather != 0 && smem <= g->smem_max;
        if (!gather)
            smem = 0;
        kernel_fn k = skew ? subsweep_for<0, 1>(gr.dim, cache, gather)
                           : (tether ? subsweep_for<1, 0>(gr.dim, cache, gather)
                                     : subsweep_for<0, 0>(gr.dim, cache, gather));
        /* lists of large blocks need more than the default 48 KiB of shared memory per block */
        if (smem > 48 * 1024)
            CK(carlo_smem_raise((const void *)k, smem));
        k<<<grid, block, smem, st>>>(gr, g->cur.pos, g->cur.count, set, s->mv, s->seed, step, g->ctr, th, h0, h1);
        CK(cudaGetLastError());
    }
    return 0;
}

/* A split system's set (see "a split system's halo exchanges" above): the interior half-layers
 * of the slab on the main stream, the first and last layer on the side stream after the last
 * exchange's halos, then this set's edge layers on their way down. With frozen edges, the
 * interior alone: the exchange of the last shift along the split axis crosses meanwhile, and
 * comes in at the next shift (or whatever settles first). */
int split_set(hard_system *s, int set, uint64_t step)
{
    gpu_impl *g = impl(s);
    const hard_split *p = s->split;
    const carlo_cell_grid &gr = s->grid;
    const int bit = set >> (gr.dim - 1) & 1;
    int64_t t0, t1;
    hard_split_active(s, set, &t0, &t1);
    const int64_t per = carlo_cell_set_size(&gr) / gr.half[gr.dim - 1];
    const int h0 = (int)(t0 / per), h1 = (int)(t1 / per);
    /* the slab's first and last layer, when of this set's parity: half-layers h0 and h1 - 1 */
    const int lo_edge = h1 > h0 && (p->lo & 1) == bit, hi_edge = h1 > h0 && ((p->hi - 1) & 1) == bit;
    const int i0 = h0 + lo_edge, i1 = h1 - hi_edge;
    if (p->ranks > 1)
        s->split->full = 0;
    if (p->frozen) /* the edge layers sit out (cell_split.h): no halo read, none changed */
        return launch_set(s, set, step, h0, h1, cudaStreamPerThread);
    if (stage_fit(s))
        return -1;
    if (g->edge_on_side) { /* the last set's edge layers, which this set's interior reads */
        CK(cudaStreamWaitEvent(cudaStreamPerThread, g->ev_edge, 0));
        g->edge_on_side = 0;
    }
    /* a set of parity bit reads halo layers of the other parity only, and an exchange after a set
     * of parity bit moves layers of that parity only: the exchange under way must be in before
     * this set's edge layers when it follows a set of the other parity (or a shift), and always
     * on one rank, whose halo layers are its own edge layers */
    const int need = g->pending && (p->ranks == 1 || g->pending_bit != bit);
    if (side_after_main(g) || launch_set(s, set, step, i0, i1, cudaStreamPerThread) ||
        (need && halo_finish(s)))
        return -1;
    if (i1 < i0) { /* one layer, both edges: once */
        if (launch_set(s, set, step, h0, h1, g->side))
            return -1;
    } else if ((lo_edge && launch_set(s, set, step, h0, h0 + 1, g->side)) ||
               (hi_edge && launch_set(s, set, step, h1 - 1, h1, g->side)))
        return -1;
    CK(cudaEventRecord(g->ev_edge, g->side));
    g->edge_on_side = 1;
    g->side_used = 1;
    /* else it crosses now, its halos in behind this set's edge layers, which do not read them */
    return halo_finish(s) || halo_start(s, bit) ? -1 : 0;
}

int gpu_subsweep(hard_system *s, int set, uint64_t step)
{
    if (s->split)
        return split_set(s, set, step);
    return launch_set(s, set, step, 0, s->grid.half[s->grid.dim - 1], cudaStreamPerThread);
}

void swap_data(gpu_impl *g)
{
    carlo_cell_data_swap(&g->cur, &g->cur_grid, &g->spare, &g->spare_grid);
}

/* Overflows are impossible for hard particles without overlaps; one is checked at the next
 * synchronising call (counters, transfers), so the shift never waits for the device. */
int check_flag(gpu_impl *g)
{
    unsigned int flag = 0;
    CK(cudaMemcpy(&flag, &g->ctr->flag, sizeof flag, cudaMemcpyDeviceToHost));
    if (flag & 1u)
        return carlo_seterr("a cell overflowed in the cell shift (overlapping particles?)");
    return 0;
}

int gpu_shift(hard_system *s, carlo_cell_shift sh)
{
    gpu_impl *g = impl(s);
    if (shape_for(&g->spare, &g->spare_grid, &s->grid))
        return -1;
    if (!s->split) {
        if (carlo_cells_dev_shift(&s->grid, &g->cur, &g->spare, sh, &g->ctr->flag, 0))
            return -1;
        swap_data(g);
        return 0;
    }
    /* a split system's own cells (each gathers from itself and its neighbour along the shift),
     * then its halos: shifted here when the shift runs within the layers, else fetched from
     * their owners; the stale layers are left alone (hard_cpu.c's split_shift). Along the split
     * axis the first and last layer read a halo: the interior layers shift on the main stream
     * while the last exchange crosses, those two on the side stream after its halos. Along
     * another axis every cell reads its own layer: all shift while the exchange crosses, then
     * the halos on the main stream once they are there. */
    const int axis = s->dim - 1, along = sh.axis == axis;
    const int64_t lc = s->grid.ncells / s->grid.m[axis];
    int64_t c0, c1, h[2];
    hard_split_cells(s, &s->grid, &c0, &c1);
    const int64_t i0 = along ? (c0 + lc < c1 ? c0 + lc : c1) : c0;
    const int64_t i1 = along ? (c1 - lc > i0 ? c1 - lc : i0) : c1;
    if (s->split->ranks > 1)
        s->split->full = 0;
    if (stage_fit(s)) /* the side stream (with frozen edges, no set made it) */
        return -1;
    if (g->edge_on_side) { /* the last set's edge layers, which the shift reads */
        CK(cudaStreamWaitEvent(cudaStreamPerThread, g->ev_edge, 0));
        g->edge_on_side = 0;
    }
    if (side_after_main(g) || /* the side's shifts read the last set's interior */
        (i1 > i0 && carlo_cells_dev_shift_range(&s->grid, &g->cur, &g->spare, sh, i0, i1, &g->ctr->flag, 0)) ||
        halo_finish(s))
        return -1;
    if (along) {
        const int64_t e[2][2] = {{c0, i0}, {i1, c1}};
        for (int k = 0; k < 2; k++)
            if (e[k][1] > e[k][0] && carlo_cells_dev_shift_range(&s->grid, &g->cur, &g->spare, sh, e[k][0],
                                                                 e[k][1], &g->ctr->flag, g->side))
                return -1;
        g->side_used = 1;
    }
    if (split_settle(s))
        return -1;
    const int hc = along ? 0 : hard_split_halo_cells(s, &s->grid, h);
    for (int k = 0; hc && k < 2; k++)
        if (carlo_cells_dev_shift_range(&s->grid, &g->cur, &g->spare, sh, h[k], h[k] + hc, &g->ctr->flag, 0))
            return -1;
    swap_data(g);
    if (along) /* the new edge layers on their way, across at the next set */
        return side_after_main(g) || halo_start(s, -1) ? -1 : 0;
    return hard_split_after_shift(s, &g->mirror, sh.axis); /* no exchange: the layers are marked stale */
}

/* Launch the pair scan of cells [c0, c1) of storage d on grid gr (the counters reset by
 * reset_scan_kernel), with the tilts of mv. */
int launch_pair_scan(gpu_impl *g, const carlo_cell_grid *gr, const carlo_cell_data *d, const hard_moves &mv,
                     int64_t c0, int64_t c1)
{
    if (c1 <= c0)
        return 0;
    unsigned blocks = (unsigned)((c1 - c0 + 255) / 256);
    if (gr->dim == 2)
        (mv.skew ? pair_kernel<2, HARD_NMAX_2D, 1> : pair_kernel<2, HARD_NMAX_2D, 0>)<<<blocks, 256>>>(
            *gr, d->pos, d->count, g->ctr, mv, c0, c1);
    else
        (mv.skew ? pair_kernel<3, HARD_NMAX_3D, 1> : pair_kernel<3, HARD_NMAX_3D, 0>)<<<blocks, 256>>>(
            *gr, d->pos, d->count, g->ctr, mv, c0, c1);
    CK(cudaGetLastError());
    return 0;
}

/* The counters after a scan: one round trip. *ends: overlapping pairs counted from both ends. */
int read_scan(gpu_impl *g, int64_t *ends, double *r2min, unsigned int *rflag)
{
    dev_counters h;
    CK(cudaMemcpy(&h, g->ctr, sizeof h, cudaMemcpyDeviceToHost));
    float best;
    memcpy(&best, &h.r2min_bits, sizeof best);
    *ends = (int64_t)h.overlaps;
    *r2min = (double)best;
    *rflag = h.rflag;
    if (h.flag & 1u)
        return carlo_seterr("a cell overflowed in the cell shift (overlapping particles?)");
    return 0;
}

/* The overlapping pairs of cells [c0, c1) of storage d on grid gr, counted from both ends
 * (*ends), and their smallest squared distance: one scan, one wait for the device. */
int pair_scan(gpu_impl *g, const carlo_cell_grid *gr, const carlo_cell_data *d, const hard_moves &mv,
              int64_t c0, int64_t c1, int64_t *ends, double *r2min)
{
    reset_scan_kernel<<<1, 1>>>(g->ctr);
    CK(cudaGetLastError());
    unsigned int rflag = 0;
    return launch_pair_scan(g, gr, d, mv, c0, c1) || read_scan(g, ends, r2min, &rflag) ? -1 : 0;
}

/* Re-grid into the spare storage and scan it there, with a single wait for the device: a cell
 * that overflowed holds nmax particles and the scan of the rest is wasted but harmless. A split
 * system, while the cut along the split axis stays (the usual small move): each rank re-cuts its
 * own and halo layers and scans its own, and the ranks add up their counts, as on the CPU; else
 * the whole configuration on every rank's device, which then decides alike without talking. */
int gpu_scale_trial(hard_system *s, const carlo_cell_grid *ng, const double lam[3], int64_t *overlaps)
{
    gpu_impl *g = impl(s);
    hard_split *p = s->split;
    const int slab = p && hard_split_slab_trial(s, ng, lam);
    if (p && (hard_split_fits(s, ng) || (slab ? split_settle(s) : split_gather(s))))
        return -1;
    if (p)
        p->trial_full = !slab;
    if (shape_for(&g->spare, &g->spare_grid, ng))
        return -1;
    reset_scan_kernel<<<1, 1>>>(g->ctr);
    CK(cudaGetLastError());
    int64_t c0 = 0, c1 = ng->ncells;
    if ((slab ? carlo_split_dev_regrid(p, &s->grid, &g->cur, ng, &g->spare, lam, &c0, &c1, &g->ctr->rflag, 0)
              : carlo_cells_dev_regrid(&s->grid, &g->cur, ng, &g->spare, lam, &g->ctr->rflag, 0)) ||
        launch_pair_scan(g, ng, &g->spare, s->mv, c0, c1))
        return -1;
    double r2;
    unsigned int rflag = 0;
    int64_t v[2] = {0, 0}; /* pairs from both ends (a pair across two slabs: once on each), overflows */
    if (read_scan(g, &v[0], &r2, &rflag))
        return -1;
    v[1] = rflag != 0;
    if (slab && hard_split_sum(s, v, 2))
        return -1;
    *overlaps = v[1] ? -1 : v[0] / 2;
    return 0;
}

int gpu_scale_commit(hard_system *s, const carlo_cell_grid *ng)
{
    if (split_settle(s))
        return -1;
    swap_data(impl(s));
    if (s->split) { /* whole when the whole new grid was cut on every rank */
        s->split->full = s->split->trial_full;
        return hard_split_layout(s, ng);
    }
    return 0;
}

/* The overlaps and the closest pair (each shrink of a compression): over every cell, or over a
 * split system's own cells (their neighbours in its own and halo layers, current once the
 * exchange under way is in), the ends summed and the smallest distance taken over the ranks, as
 * the CPU backend does: no gather of the grid. */
int gpu_pair_check(hard_system *s, int64_t *overlaps, double *r2min)
{
    gpu_impl *g = impl(s);
    int64_t c0, c1, ends = 0;
    if (split_settle(s))
        return -1;
    hard_own_cells(s, &s->grid, &c0, &c1);
    *r2min = 3.0e38;
    int rc = pair_scan(g, &s->grid, &g->cur, s->mv, c0, c1, &ends, r2min);
    /* every rank reduces (one whose scan failed too: the others are waiting for it) */
    if (s->split && (hard_split_sum(s, &ends, 1) || hard_split_min(s, r2min)))
        rc = -1;
    *overlaps = ends / 2;
    return rc;
}

/* The pressure histograms: of every cell, or of a split system's own cells (their neighbours in
 * its own and halo layers, current once the exchange under way is in), summed over the ranks
 * as the CPU backend sums them: the same integer counts, with no gather of the grid. */
int gpu_histograms(hard_system *s, const hard_scan *sc, uint64_t *gr, uint64_t *sdf)
{
    gpu_impl *g = impl(s);
    if (split_settle(s))
        return -1;
    int64_t c0, c1;
    hard_own_cells(s, &s->grid, &c0, &c1);
    size_t bins = (size_t)sc->gr_bins + (size_t)sc->sdf_bins;
    if (g->hist_len < bins) {
        cudaFree(g->hist);
        g->hist = NULL;
        g->hist_len = 0;
        CK_MALLOC(&g->hist, bins * sizeof(unsigned int), "pressure histograms");
        g->hist_len = bins;
    }
    CK(cudaMemset(g->hist, 0, bins * sizeof(unsigned int)));
    const carlo_cell_grid &grd = s->grid;
    unsigned blocks = (unsigned)((c1 - c0 + 255) / 256);
    int shared = bins <= 8192;
    size_t smem = shared ? bins * sizeof(unsigned int) : 0;
    if (blocks > 0) {
        if (grd.dim == 2)
            (s->mv.skew ? hist_kernel<2, HARD_NMAX_2D, 1> : hist_kernel<2, HARD_NMAX_2D, 0>)<<<blocks, 256, smem>>>(
                grd, g->cur.pos, g->cur.count, *sc, g->hist, shared, s->mv, c0, c1);
        else
            (s->mv.skew ? hist_kernel<3, HARD_NMAX_3D, 1> : hist_kernel<3, HARD_NMAX_3D, 0>)<<<blocks, 256, smem>>>(
                grd, g->cur.pos, g->cur.count, *sc, g->hist, shared, s->mv, c0, c1);
        CK(cudaGetLastError());
    }
    unsigned int *h = static_cast<unsigned int *>(carlo_malloc(bins * sizeof(unsigned int), "histograms"));
    int64_t *v = static_cast<int64_t *>(carlo_calloc(bins, sizeof(int64_t), "histograms"));
    if (!h || !v) {
        free(h);
        free(v);
        return -1;
    }
    const cudaError_t e = cudaMemcpy(h, g->hist, bins * sizeof(unsigned int), cudaMemcpyDeviceToHost);
    for (size_t b = 0; e == cudaSuccess && b < bins; b++)
        v[b] = h[b];
    free(h);
    /* every rank sums (one whose copy failed too, with zeros: the others are waiting for it) */
    int rc = s->split ? hard_split_sum(s, v, (int)bins) : 0;
    if (e != cudaSuccess)
        rc = carlo_cuda_fail(e, "cudaMemcpy(histograms)", __FILE__, __LINE__);
    for (int b = 0; rc == 0 && b < sc->gr_bins; b++)
        gr[b] += (uint64_t)v[b];
    for (int b = 0; rc == 0 && b < sc->sdf_bins; b++)
        sdf[b] += (uint64_t)v[sc->gr_bins + b];
    free(v);
    return rc ? -1 : check_flag(g);
}

int gpu_translation_counts(hard_system *s, uint64_t *tried, uint64_t *accepted)
{
    gpu_impl *g = impl(s);
    if (split_settle(s)) /* the edge layers' moves are counted on the side stream */
        return -1;
    dev_counters h;
    CK(cudaMemcpy(&h, g->ctr, sizeof h, cudaMemcpyDeviceToHost));
    if (h.flag & 1u)
        return carlo_seterr("a cell overflowed in the cell shift (overlapping particles?)");
    int64_t n[2] = {(int64_t)h.tried, (int64_t)h.accepted};
    if (s->split && hard_split_sum(s, n, 2)) /* a split system counts its own cells' moves */
        return -1;
    *tried = (uint64_t)n[0];
    *accepted = (uint64_t)n[1];
    return 0;
}

int gpu_sync(hard_system *s)
{
    if (split_settle(s))
        return -1;
    CK(cudaStreamSynchronize(cudaStreamPerThread));
    return check_flag(impl(s));
}

int gpu_sites(hard_system *s)
{
    gpu_impl *g = impl(s);
    const size_t bytes = (size_t)s->N * 3 * sizeof(double);
    if (split_settle(s)) /* no edge layers' update reading the old sites */
        return -1;
    if (!g->sites)
        CK_MALLOC(&g->sites, bytes, "tether sites");
    CK(cudaMemcpy(g->sites, s->sites, bytes, cudaMemcpyHostToDevice));
    return 0;
}

} // namespace

extern "C" const hard_backend hard_cuda_backend = {
    "gpu",
    gpu_create,
    gpu_destroy,
    gpu_upload,
    gpu_download,
    gpu_subsweep,
    gpu_shift,
    gpu_scale_trial,
    gpu_scale_commit,
    gpu_pair_check,
    gpu_histograms,
    gpu_translation_counts,
    gpu_sync,
    gpu_sites,
};
