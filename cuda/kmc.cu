/* kmc.cu — the GPU backend of lattice KMC (the "tiled" algorithm of kmc_kernel.h).
 * Algorithm 2 (kmc_step.cuh): one warp per tile, its domain in shared memory; tiles without
 * an event in a step are not copied (kmc_gpu_buffers). Algorithm 1 runs on the device as
 * well: a second kernel compares the edge checksums, lists the tiles around differing strips
 * for the repair (kmc_kernel.h; repair_kernel steps them again, the checksums are compared
 * again), and its last block starts a round of the repair or accepts or rejects the step and
 * plans the next (the same kmc_ctrl_decide as the CPU), so a batch of steps is queued without a
 * round trip. A split system (decompose = true, carlo-mpi(7)) keeps its
 * rank's slab of tile rows with a halo tile row above and below: each step's sums and edge
 * strips are gathered from every rank and the step decided on the host (the same
 * kmc_ctrl_decide); an accepted step's first tile row goes to the rank above and its last to
 * the rank below, staged through page-locked host memory, to become their halo rows. One host
 * synchronisation a step, and one more a round of the repair (split_step): the rows travel
 * while the next step's interior tile rows run. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <utility>

extern "C" {
#include "core/error.h"
#include "core/progress.h"
#include "kmc/kmc.h"
#include "mpi/mpi.h"
}
#include "check.h"
#include "kmc_step.cuh"

namespace {

const int VALIDATE_THREADS = 256;
const uint64_t BATCH_MAX = 256; /* steps queued per call: a call ends within a few no-op steps */

struct kmc_acc {
    unsigned long long events, sim;
    unsigned int mismatch, overflow, ticket, pad;
};

/* What validate_kernel leaves a split system's host (gpu_impl's d_small, split_words
 * words): the sums of the rank's tiles (events, simulated events, mismatch, overflow), the
 * first own tile row's up strips and the last own row's down strips, which the host compares
 * with the neighbours'. Null pointers: the whole lattice, decided on the device. */
struct kmc_split_out {
    unsigned long long *up, *down, *sums;
};

/* Words of a split system's sums: events, simulated events, mismatch, overflow, tiles repaired */
const int SPLIT_SUMS = 5;

struct gpu_impl {
    kmc_gpu_buffers b;
    kmc_tile_out *out;
    kmc_ctrl *ctrl;
    kmc_acc *acc;
    unsigned long long *minbits;
    kmc_config *configs;
    kmc_event *events;
    void *host;         /* staging, 8 bytes per stored site */
    void *slab;         /* a split system's own rows, row-major, 8 bytes a site (gathers) */
    int smem_optin;     /* the most dynamic shared memory a block may have on this GPU */
    int ntiles;         /* the tiles stepped: all, or a split system's own */
    int stored;         /* the tiles stored: all, or own plus two halo tile rows */
    kmc_slab sl;
    kmc_repair *rp;     /* the repair (kmc_kernel.h), when the system has it; on the device */
    int *d_list;        /* its list, a tile at most once a step */
    uint32_t *d_stamp;
    int *h_edge, *d_edge; /* split: the edge tiles whose strips differ from the neighbour rank's */
    /* a split system's exchange, on the device and page-locked on the host: the first own tile
     * row (states, draw counters, clocks: kmc_row_bytes) to the rank above, the last to the rank
     * below; in: the row below's, then the row above's */
    uint8_t *d_send, *d_recv, *h_send, *h_recv;
    /* the step's sums and edge strips (kmc_split_out), and every rank's after the gather */
    unsigned long long *d_small, *h_small, *h_all;
    kmc_ctrl *h_ctrl; /* the host's decision, uploaded from page-locked memory without a wait */
    cudaStream_t edge; /* the edge tile rows' stream: halo rows in, step, rows out */
    cudaEvent_t ev_start, ev_edge, ev_small;
    int rows_pending; /* the step just accepted: its edge rows still to go to the neighbours */
    int above, below;
};

gpu_impl *impl(kmc_system *s) { return static_cast<gpu_impl *>(s->impl); }

/* ---------- Algorithm 1: compare the strips, decide, plan ---------- */

/* Tile X joins the step's repair list unless it is there already. */
__device__ void list_tile(kmc_repair *rp, int X, uint32_t stamp)
{
    if (atomicExch(&rp->stamp[X], stamp) != stamp)
        rp->tiles[atomicAdd(&rp->listed, 1u)] = X;
}

/* After the step and after each repair round: the strips compared, the tiles on either side of
 * a differing one listed (rp, when the system has the repair; a split system's edge tiles whose
 * strips differ from the neighbour ranks' are listed by the host), the sums over the tiles
 * stepped taken. Whole lattice: the last block starts the next round (rp->go) or decides.
 * Split: the sums go to so.sums for the host to reduce over the ranks (the last own tile row's
 * down strips are compared there, the rank below's up strips being there), and the last block
 * starts a round on the rank's own listed tiles when strips differ inside the slab. */
__global__ void __launch_bounds__(VALIDATE_THREADS)
validate_kernel(const kmc_geom g, const kmc_tile_out *__restrict__ out, kmc_ctrl *ctrl,
                kmc_acc *acc, const int ntiles, const kmc_slab sl, const kmc_split_out so,
                kmc_repair *rp = nullptr, const int round = 0)
{
    if (ctrl->done || (round > 0 && !rp->go))
        return;
    const int own = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    const int T = own + sl.first * g.ntc;
    unsigned long long ev = 0, sim = 0;
    int bad = 0, ovf = 0;
    if (own < ntiles) {
        int down = 0, right = 0, d;
        if (so.sums) {
            const int lt = T / g.ntc, tj = T - lt * g.ntc, last = ntiles / g.ntc;
            d = kmc_slab_mismatch(&g, out, T, &down, &right);
            if (lt == last)
                d &= 2; /* the down strips go to the host, which compares and lists them */
            if (lt == 1)
                so.up[tj] = out[T].chk[KMC_EDGE_UP];
            if (lt == last)
                so.down[tj] = out[T].chk[KMC_EDGE_DOWN];
        } else {
            d = kmc_tile_mismatch(&g, out, T, &down, &right);
        }
        bad = d != 0;
        if (d && rp) {
            const uint32_t stamp = kmc_repair_stamp(ctrl->accepted + ctrl->rejected);
            list_tile(rp, T, stamp);
            if (d & 1)
                list_tile(rp, down, stamp);
            if (d & 2)
                list_tile(rp, right, stamp);
        }
        ev = out[T].events;
        sim = out[T].sim;
        ovf = out[T].overflow != 0u;
    }
    for (int o = 16; o > 0; o >>= 1) {
        ev += __shfl_down_sync(KMC_FULL_MASK, ev, o);
        sim += __shfl_down_sync(KMC_FULL_MASK, sim, o);
    }
    bad = __any_sync(KMC_FULL_MASK, bad);
    ovf = __any_sync(KMC_FULL_MASK, ovf);
    __shared__ unsigned long long s_ev[VALIDATE_THREADS / 32], s_sim[VALIDATE_THREADS / 32];
    __shared__ int s_bad[VALIDATE_THREADS / 32], s_ovf[VALIDATE_THREADS / 32];
    const int lane = (int)(threadIdx.x & 31u), w = (int)(threadIdx.x >> 5);
    if (lane == 0) {
        s_ev[w] = ev;
        s_sim[w] = sim;
        s_bad[w] = bad;
        s_ovf[w] = ovf;
    }
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    for (int k = 1; k < (int)(blockDim.x >> 5); k++) {
        ev += s_ev[k];
        sim += s_sim[k];
        bad |= s_bad[k];
        ovf |= s_ovf[k];
    }
    if (ev)
        atomicAdd(&acc->events, ev);
    if (sim)
        atomicAdd(&acc->sim, sim);
    if (bad)
        atomicOr(&acc->mismatch, 1u);
    if (ovf)
        atomicOr(&acc->overflow, 1u);
    __threadfence();
    if (atomicAdd(&acc->ticket, 1u) != gridDim.x - 1u)
        return;
    /* the last block: every other block's sums are in */
    __threadfence();
    const unsigned long long e = atomicExch(&acc->events, 0ull);
    const unsigned long long sm = atomicExch(&acc->sim, 0ull);
    const unsigned mm = atomicExch(&acc->mismatch, 0u);
    const unsigned of = atomicExch(&acc->overflow, 0u);
    atomicExch(&acc->ticket, 0u);
    if (so.sums) {
        so.sums[0] = e;
        so.sums[1] = sm + (rp ? rp->replaced : 0ull);
        so.sums[2] = mm;
        so.sums[3] = of;
        so.sums[4] = rp ? rp->to : 0u;
        /* strips differ inside this slab, so a round is due whatever the other ranks found: it
         * starts on the tiles listed here while the host gathers the edge strips */
        if (kmc_repair_due(rp != nullptr, mm, round)) {
            rp->from = rp->to;
            rp->to = rp->listed;
            rp->go = 1;
        } else if (rp) {
            rp->go = 0;
        }
        return;
    }
    if (rp) {
        if (kmc_repair_due(1u, mm, round)) { /* another round: the tiles listed since the last */
            rp->from = rp->to;
            rp->to = rp->listed;
            rp->go = 1;
            return;
        }
        ctrl->repaired += rp->to;
        const unsigned long long replaced = rp->replaced;
        rp->listed = rp->from = rp->to = rp->go = 0;
        rp->replaced = 0;
        kmc_ctrl_decide(ctrl, e, sm + replaced, mm, of);
        return;
    }
    kmc_ctrl_decide(ctrl, e, sm, mm, of);
}

/* A split system's round of the repair (the host found a strip differing somewhere): this
 * rank's edge tiles whose strips differ from the neighbour ranks' join the list, and the round
 * covers the tiles listed since the repair launched last (which took the ones the validation
 * listed, if it started the round). One block. */
__global__ void __launch_bounds__(VALIDATE_THREADS)
repair_round_kernel(const kmc_ctrl *ctrl, kmc_repair *rp, const int *__restrict__ edge, const int n)
{
    if (ctrl->done)
        return;
    const uint32_t stamp = kmc_repair_stamp(ctrl->accepted + ctrl->rejected);
    for (int i = (int)threadIdx.x; i < n; i += (int)blockDim.x)
        list_tile(rp, edge[i], stamp);
    __syncthreads();
    if (threadIdx.x == 0) {
        rp->from = rp->to;
        rp->to = rp->listed;
        rp->go = 1;
    }
}

__global__ void min_tau_kernel(const double *__restrict__ tau, const uint64_t n,
                               unsigned long long *minbits)
{
    unsigned long long best = 0x7ff0000000000000ull; /* +inf */
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        const unsigned long long b = (unsigned long long)__double_as_longlong(tau[i]);
        best = b < best ? b : best;
    }
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long other = __shfl_down_sync(KMC_FULL_MASK, best, o);
        best = other < best ? other : best;
    }
    if ((threadIdx.x & 31u) == 0)
        atomicMin(minbits, best);
}

/* ---------- the backend ---------- */

/* Sites stored: the whole lattice, or a split system's slab with its halo tile rows. */
size_t stored_sites(const kmc_system *s)
{
    return (size_t)(s->split ? s->tile_rows + 2 : s->geom.ntr) * (size_t)s->geom.ntc * 64u;
}

/* dynamic shared memory of a step block: each warp's domain, 16 bytes a cell */
size_t step_smem(const kmc_system *s, int tiles_per_block)
{
    return (size_t)tiles_per_block * (size_t)s->geom.cells * 16u;
}

/* A launch shape this GPU can take (the chain never depends on it). */
int gpu_launch(kmc_system *s, int tiles_per_block)
{
    const gpu_impl *g = impl(s);
    const size_t smem = step_smem(s, tiles_per_block);
    if (smem > (size_t)g->smem_optin)
        return carlo_seterr("tiles_per_block = %d needs %zu bytes of shared memory per block with "
                            "halo = %d; this GPU allows %d (use fewer tiles per block)",
                            tiles_per_block, smem, s->geom.halo, g->smem_optin);
    if (smem > 48u * 1024u) /* the most any system may ask for, so no system lowers it */
        CK(cudaFuncSetAttribute(step_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                g->smem_optin));
    return 0;
}

/* Page-locked host memory (the staged halo exchange); out of memory is not sticky. */
int pinned(void *p, size_t bytes, const char *what)
{
    cudaError_t e = cudaMallocHost(static_cast<void **>(p), bytes);
    if (e == cudaSuccess)
        return 0;
    (void)cudaGetLastError();
    return carlo_seterr("out of page-locked host memory: %zu bytes asked for %s (%s)", bytes, what,
                        cudaGetErrorString(e));
}

/* Words of a split system's sums and strips (kmc_split_out): SPLIT_SUMS sums, then the up
 * strips and the down strips of its ntc tile columns. */
size_t split_words(const kmc_geom &g)
{
    return (size_t)SPLIT_SUMS + 2u * (size_t)g.ntc;
}

/* Tiles a round of the repair steps at once, and the grid (kmc_repair: rounds are short) */
const int REPAIR_TPB = 2;
const unsigned REPAIR_BLOCKS_MAX = 1024;

size_t repair_smem(const kmc_system *s)
{
    return (size_t)REPAIR_TPB * (size_t)s->geom_repair.cells * 16u;
}

/* A round of the repair, queued on st (it does nothing when none is due). */
int repair_launch(kmc_system *s, const kmc_model &md, cudaStream_t st)
{
    gpu_impl *g = impl(s);
    unsigned blocks = (unsigned)((g->ntiles + REPAIR_TPB - 1) / REPAIR_TPB);
    blocks = blocks < REPAIR_BLOCKS_MAX ? blocks : REPAIR_BLOCKS_MAX;
    repair_kernel<<<blocks, 32 * REPAIR_TPB, repair_smem(s), st>>>(s->geom_repair, md, s->seed, g->b,
                                                                   g->ctrl, g->out, g->sl, g->rp);
    CK_LAUNCH("repair_kernel");
    return 0;
}

/* The repair's list and round on the device (kmc_repair), for a system that has it. */
int repair_setup(kmc_system *s)
{
    gpu_impl *g = impl(s);
    CK_MALLOC(&g->d_list, (size_t)g->stored * sizeof(int), "the KMC repair list");
    CK_MALLOC(&g->d_stamp, (size_t)g->stored * sizeof(uint32_t), "the KMC repair stamps");
    CK(cudaMemset(g->d_stamp, 0, (size_t)g->stored * sizeof(uint32_t)));
    CK_MALLOC(&g->rp, sizeof(kmc_repair), "the KMC repair round");
    kmc_repair r;
    memset(&r, 0, sizeof r);
    r.tiles = g->d_list;
    r.stamp = g->d_stamp;
    CK(cudaMemcpy(g->rp, &r, sizeof r, cudaMemcpyHostToDevice));
    if (!s->split)
        return 0;
    CK_MALLOC(&g->d_edge, 2 * (size_t)s->geom.ntc * sizeof(int), "the KMC edge tiles to repair");
    return pinned(&g->h_edge, 2 * (size_t)s->geom.ntc * sizeof(int), "the KMC edge tiles to repair");
}

/* A split system's exchange buffers, its edge stream and its neighbour ranks. */
int split_setup(kmc_system *s)
{
    gpu_impl *g = impl(s);
    const size_t rows = 2 * kmc_row_bytes(s->geom), small = split_words(s->geom) * 8u;
    const int n = carlo_mpi_size(), p = carlo_mpi_rank();
    g->above = (p + n - 1) % n;
    g->below = (p + 1) % n;
    CK_MALLOC(&g->d_send, rows, "the KMC halo send buffer");
    CK_MALLOC(&g->d_recv, rows, "the KMC halo receive buffer");
    CK_MALLOC(&g->d_small, small, "the KMC step sums");
    if (pinned(&g->h_send, rows, "the KMC halo send buffer") ||
        pinned(&g->h_recv, rows, "the KMC halo receive buffer") ||
        pinned(&g->h_small, small, "the KMC step sums") ||
        pinned(&g->h_ctrl, sizeof(kmc_ctrl), "the KMC step control"))
        return -1;
    /* the edge rows first: their blocks go ahead of the interior's still waiting, so the rows
     * are on their way while the interior runs */
    int least = 0, greatest = 0;
    CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CK(cudaStreamCreateWithPriority(&g->edge, cudaStreamNonBlocking, greatest));
    CK(cudaEventCreateWithFlags(&g->ev_start, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&g->ev_edge, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&g->ev_small, cudaEventDisableTiming));
    g->h_all = static_cast<unsigned long long *>(
        carlo_malloc(carlo_mulsize((size_t)n, small), "the KMC step sums of every rank"));
    g->slab = carlo_malloc(carlo_mulsize((size_t)s->tile_rows * 64u * (size_t)s->geom.ntc, 8),
                           "a KMC slab");
    return g->slab && g->h_all ? 0 : -1;
}

int gpu_create(kmc_system *s)
{
    gpu_impl *g = static_cast<gpu_impl *>(carlo_calloc(1, sizeof(gpu_impl), "the KMC GPU backend"));
    if (!g)
        return -1;
    s->impl = g;
    const size_t N = stored_sites(s);
    g->sl.first = s->split ? 1 : 0;
    g->sl.row0 = s->split ? s->tile_row0 : 0;
    g->ntiles = (s->split ? s->tile_rows : s->geom.ntr) * s->geom.ntc;
    g->stored = (int)(N / 64u);
    for (int k = 0; k < 2; k++) {
        CK_MALLOC(&g->b.x[k], N * sizeof(int32_t), "the KMC states");
        CK_MALLOC(&g->b.tau[k], N * sizeof(double), "the KMC clocks");
        CK_MALLOC(&g->b.cnt[k], N * sizeof(uint32_t), "the KMC draw counters");
        CK_MALLOC(&g->b.tmin[k], (size_t)g->stored * sizeof(double), "the KMC tile minima");
        CK_MALLOC(&g->b.where[k], (size_t)g->stored, "the KMC tile buffer map");
    }
    CK_MALLOC(&g->out, (size_t)g->stored * sizeof(kmc_tile_out), "the KMC tile results");
    CK_MALLOC(&g->ctrl, sizeof(kmc_ctrl), "the KMC step control");
    CK_MALLOC(&g->acc, sizeof(kmc_acc), "the KMC step sums");
    CK(cudaMemset(g->acc, 0, sizeof(kmc_acc)));
    CK_MALLOC(&g->minbits, sizeof(unsigned long long), "a reduction");
    if (s->model.kind == KMC_TABLE) {
        CK_MALLOC(&g->configs, sizeof(kmc_config) * s->nconfigs, "the KMC rate table");
        CK(cudaMemcpy(g->configs, s->configs, sizeof(kmc_config) * s->nconfigs, cudaMemcpyHostToDevice));
        size_t ne = s->nevents ? s->nevents : 1;
        CK_MALLOC(&g->events, sizeof(kmc_event) * ne, "the KMC event table");
        CK(cudaMemcpy(g->events, s->events, sizeof(kmc_event) * ne, cudaMemcpyHostToDevice));
    }
    int dev = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&g->smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (gpu_launch(s, s->tiles_per_block) || (s->ctrl.repair && repair_setup(s)))
        return -1;
    g->host = carlo_malloc(carlo_mulsize(N, 8), "a KMC staging buffer");
    if (!g->host)
        return -1;
    return s->split ? split_setup(s) : 0;
}

void gpu_destroy(kmc_system *s)
{
    gpu_impl *g = impl(s);
    if (!g)
        return;
    for (int k = 0; k < 2; k++) {
        cudaFree(g->b.x[k]);
        cudaFree(g->b.tau[k]);
        cudaFree(g->b.cnt[k]);
        cudaFree(g->b.tmin[k]);
        cudaFree(g->b.where[k]);
    }
    cudaFree(g->out);
    cudaFree(g->rp);
    cudaFree(g->d_list);
    cudaFree(g->d_stamp);
    cudaFree(g->d_edge);
    cudaFreeHost(g->h_edge);
    cudaFree(g->ctrl);
    cudaFree(g->acc);
    cudaFree(g->minbits);
    cudaFree(g->configs);
    cudaFree(g->events);
    cudaFree(g->d_send);
    cudaFree(g->d_recv);
    cudaFreeHost(g->h_send);
    cudaFreeHost(g->h_recv);
    cudaFree(g->d_small);
    cudaFreeHost(g->h_small);
    cudaFreeHost(g->h_ctrl);
    free(g->h_all);
    if (g->edge)
        cudaStreamDestroy(g->edge);
    if (g->ev_start)
        cudaEventDestroy(g->ev_start);
    if (g->ev_edge)
        cudaEventDestroy(g->ev_edge);
    if (g->ev_small)
        cudaEventDestroy(g->ev_small);
    free(g->host);
    free(g->slab);
    free(g);
    s->impl = NULL;
}

int split_flush(kmc_system *s);

/* Whole lattice (row-major) -> the stored tiles (tile-major, elem bytes a site): all of them, or
 * a split system's slab rows with the halo rows above and below (periodic). */
void tiles_in(const kmc_system *s, const void *rowmajor, void *tiles, size_t elem)
{
    if (!s->split) {
        kmc_to_tiles(&s->geom, rowmajor, tiles, elem);
        return;
    }
    const int rows = (s->tile_rows + 2) * KMC_TILE, n = s->n, gr0 = (s->tile_row0 - 1) * KMC_TILE;
    for (int lr = 0; lr < rows; lr++) {
        const int gr = kmc_wrap(gr0 + lr, s->m);
        for (int j = 0; j < n; j++) {
            const uint64_t src = (uint64_t)gr * (uint64_t)n + (uint64_t)j;
            const uint64_t dst = kmc_tm_index(&s->geom, lr, j);
            if (elem == 8)
                static_cast<uint64_t *>(tiles)[dst] = static_cast<const uint64_t *>(rowmajor)[src];
            else
                static_cast<uint32_t *>(tiles)[dst] = static_cast<const uint32_t *>(rowmajor)[src];
        }
    }
}

/* Stored local lattice rows lr0 .. lr0 + rows - 1 of tile-major tiles -> row-major out. */
void rows_out(const kmc_system *s, const void *tiles, int lr0, int rows, void *out, size_t elem)
{
    const int n = s->n;
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < n; j++) {
            const uint64_t dst = (uint64_t)r * (uint64_t)n + (uint64_t)j;
            const uint64_t src = kmc_tm_index(&s->geom, lr0 + r, j);
            if (elem == 8)
                static_cast<uint64_t *>(out)[dst] = static_cast<const uint64_t *>(tiles)[src];
            else
                static_cast<uint32_t *>(out)[dst] = static_cast<const uint32_t *>(tiles)[src];
        }
}

int gpu_set_state(kmc_system *s, const int32_t *x, const double *tau, const uint32_t *cnt)
{
    gpu_impl *g = impl(s);
    if (split_flush(s)) /* the halo rows of what is not given stay current (every rank calls this) */
        return -1;
    const int f = (int)s->ctrl.front;
    const size_t N = stored_sites(s);
    if (x) {
        tiles_in(s, x, g->host, 4);
        CK(cudaMemcpy(g->b.x[f], g->host, N * 4, cudaMemcpyHostToDevice));
    }
    if (tau) {
        tiles_in(s, tau, g->host, 8);
        CK(cudaMemcpy(g->b.tau[f], g->host, N * 8, cudaMemcpyHostToDevice));
        double *tmin = static_cast<double *>(carlo_malloc(sizeof(double) * (size_t)g->stored, "tile minima"));
        if (!tmin)
            return -1;
        const double *th = static_cast<const double *>(g->host);
        for (int T = 0; T < g->stored; T++) {
            double m = INFINITY;
            for (int q = 0; q < 64; q++)
                m = th[((size_t)T << 6) + (size_t)q] < m ? th[((size_t)T << 6) + (size_t)q] : m;
            tmin[T] = m;
        }
        cudaError_t e = cudaMemcpy(g->b.tmin[f], tmin, sizeof(double) * (size_t)g->stored,
                                   cudaMemcpyHostToDevice);
        free(tmin);
        if (e != cudaSuccess)
            return carlo_cuda_fail(e, "cudaMemcpy(tile minima)", __FILE__, __LINE__);
    }
    if (cnt) {
        tiles_in(s, cnt, g->host, 4);
        CK(cudaMemcpy(g->b.cnt[f], g->host, N * 4, cudaMemcpyHostToDevice));
    }
    return 0;
}

/* One array of the accepted state as the whole lattice: on a split system from every rank's own
 * rows (every rank calls this). */
int state_out(kmc_system *s, const void *dev, void *rowmajor, size_t elem)
{
    gpu_impl *g = impl(s);
    CK(cudaMemcpy(g->host, dev, stored_sites(s) * elem, cudaMemcpyDeviceToHost));
    if (!s->split) {
        kmc_from_tiles(&s->geom, g->host, rowmajor, elem);
        return 0;
    }
    const int rows = s->tile_rows * KMC_TILE;
    rows_out(s, g->host, KMC_TILE, rows, g->slab, elem);
    return carlo_mpi_allgather_rows(static_cast<const uint8_t *>(g->slab), rows,
                                    static_cast<uint8_t *>(rowmajor), s->slab_rows,
                                    (int)((size_t)s->n * elem));
}

int gpu_get_state(kmc_system *s, int32_t *x, double *tau, uint32_t *cnt)
{
    gpu_impl *g = impl(s);
    const int f = (int)s->ctrl.front;
    if (x && state_out(s, g->b.x[f], x, 4))
        return -1;
    if (tau && state_out(s, g->b.tau[f], tau, 8))
        return -1;
    if (cnt && state_out(s, g->b.cnt[f], cnt, 4))
        return -1;
    return 0;
}

/* Own tiles from .. to - 1 of a split system stepped on stream st. */
int split_launch(kmc_system *s, const kmc_model &md, cudaStream_t st, int from, int to)
{
    gpu_impl *g = impl(s);
    const int tpb = s->tiles_per_block;
    step_kernel<<<(unsigned)((to - from + tpb - 1) / tpb), (unsigned)(32 * tpb), step_smem(s, tpb),
                  st>>>(s->geom, md, s->seed, g->b, g->ctrl, g->out, to, g->sl, from);
    CK_LAUNCH("step_kernel");
    return 0;
}

/* The last accepted step's first and last own tile rows to the neighbours, theirs into the halo
 * tile rows (queued on st). Every rank calls it at the same step: they all decided alike. */
int split_rows_in(kmc_system *s, cudaStream_t st, bool between = false)
{
    gpu_impl *g = impl(s);
    /* halo_unpack_kernel writes buffer 0, which the maps of a batch of steps then name; between
     * batches every tile is in the front buffer: the halo rows go there */
    kmc_gpu_buffers b = g->b;
    if (between && s->ctrl.front) {
        std::swap(b.x[0], b.x[1]);
        std::swap(b.tau[0], b.tau[1]);
        std::swap(b.cnt[0], b.cnt[1]);
        std::swap(b.tmin[0], b.tmin[1]);
    }
    const size_t row = kmc_row_bytes(s->geom);
    uint8_t *const send[2] = {g->h_send, g->h_send + row};
    uint8_t *const recv[2] = {g->h_recv, g->h_recv + row}; /* from below, from above */
    const int bytes[2] = {(int)row, (int)row}, dest[2] = {g->above, g->below},
              src[2] = {g->below, g->above};
    g->rows_pending = 0;
    if (carlo_mpi_exchange2(send, bytes, dest, recv, bytes, src, 40))
        return -1;
    CK(cudaMemcpyAsync(g->d_recv, g->h_recv, 2 * row, cudaMemcpyHostToDevice, st));
    halo_unpack_kernel<<<(unsigned)((2 * s->geom.ntc + 7) / 8), 256, 0, st>>>(
        s->geom, b, s->tile_rows, g->d_recv, g->d_recv + row);
    CK_LAUNCH("halo_unpack_kernel");
    return 0;
}

/* One step of a split system, decided on the host from the sums over the ranks (as the CPU
 * split does), with one host synchronisation when no strip differs. The interior tile rows
 * (2 .. rows - 1 of the stored ones), which read no halo row, run on the step's stream while the
 * last accepted step's edge rows cross to the neighbours and, on the edge stream, fill the halo
 * rows; then the two edge tile rows run and are packed and brought to the host (they become the
 * neighbours' halo rows if this step is accepted). The sums and the edge strips of every rank
 * reach every rank in one gather; each compares every rank's last row's down strips with the
 * next rank's up strips, so all decide the same. Where strips differ (kmc_kernel.h's repair),
 * each round of the repair costs one more synchronisation and gather: a rank whose slab has
 * differing strips starts the round on its tiles at once, as the round is then due whatever the
 * gather brings, and adds the edge tiles the gather shows differing. s->ctrl is on the device
 * when called and after; an accepted step's rows are sent by the next step (of this batch or
 * the next) or by split_flush. */
int split_step(kmc_system *s, const kmc_model &md)
{
    typedef unsigned long long u64;
    gpu_impl *g = impl(s);
    kmc_ctrl *c = &s->ctrl;
    const cudaStream_t st = cudaStreamPerThread, es = g->edge;
    const int ntc = s->geom.ntc, rows = s->tile_rows, R = carlo_mpi_size();
    const uint64_t k = c->accepted + c->rejected;
    const size_t row = kmc_row_bytes(s->geom), words = split_words(s->geom);
    const kmc_split_out so = {g->d_small + SPLIT_SUMS, g->d_small + SPLIT_SUMS + ntc, g->d_small};
    const unsigned validate_blocks = (unsigned)((g->ntiles + VALIDATE_THREADS - 1) / VALIDATE_THREADS);
    if (g->rp) /* a new list */
        CK(cudaMemsetAsync(&g->rp->listed, 0, sizeof(kmc_repair) - offsetof(kmc_repair, listed), st));
    /* the edge stream starts after what the step's stream holds: this step's control, the maps */
    CK(cudaEventRecord(g->ev_start, st));
    CK(cudaStreamWaitEvent(es, g->ev_start, 0));
    if (rows > 2 && split_launch(s, md, st, ntc, (rows - 1) * ntc))
        return -1;
    /* while the interior runs: the last step's rows, if it was accepted (no halo tile is read
     * or written by the interior tiles) */
    if (g->rows_pending && split_rows_in(s, es))
        return -1;
    if (split_launch(s, md, es, 0, ntc) || (rows > 1 && split_launch(s, md, es, (rows - 1) * ntc, rows * ntc)))
        return -1;
    halo_pack_kernel<<<(unsigned)((2 * ntc * 64 + 255) / 256), 256, 0, es>>>(
        s->geom, g->b, g->b.where[k & 1], rows, g->d_send, g->d_send + row);
    CK_LAUNCH("halo_pack_kernel");
    CK(cudaMemcpyAsync(g->h_send, g->d_send, 2 * row, cudaMemcpyDeviceToHost, es));
    CK(cudaEventRecord(g->ev_edge, es));
    /* every tile stepped, the rows on their way: the sums and strips */
    CK(cudaStreamWaitEvent(st, g->ev_edge, 0));
    validate_kernel<<<validate_blocks, VALIDATE_THREADS, 0, st>>>(s->geom, g->out, g->ctrl, g->acc,
                                                                  g->ntiles, g->sl, so, g->rp);
    CK_LAUNCH("validate_kernel");
    u64 ev = 0, sim = 0, bad = 0, ovf = 0, repaired = 0;
    for (int round = 0;; round++) {
        CK(cudaMemcpyAsync(g->h_small, g->d_small, words * 8u, cudaMemcpyDeviceToHost, st));
        CK(cudaEventRecord(g->ev_small, st));
        /* the round the validation started, if strips differ inside the slab */
        if (g->rp && repair_launch(s, md, st))
            return -1;
        /* the step's one wait, unless strips differ (both streams: st waited for the edge
         * stream's last copy) */
        CK(cudaEventSynchronize(g->ev_small));
        if (carlo_interrupted)
            return 0; /* not decided: the accepted state stays, and the halo rows hold it */
        if (carlo_mpi_allgather_u8(reinterpret_cast<const uint8_t *>(g->h_small), (int)(words * 8u),
                                   reinterpret_cast<uint8_t *>(g->h_all)))
            return -1;
        /* every rank decides the same from every rank's sums and strips: rank r's last row lies
         * above rank r + 1's first (periodic) */
        ev = sim = bad = ovf = repaired = 0;
        for (int r = 0; r < R; r++) {
            const u64 *a = g->h_all + (size_t)r * words, *b = g->h_all + (size_t)((r + 1) % R) * words;
            ev += a[0];
            sim += a[1];
            bad |= a[2];
            ovf |= a[3];
            repaired += a[4];
            for (int tj = 0; tj < ntc; tj++)
                bad |= a[SPLIT_SUMS + ntc + tj] != b[SPLIT_SUMS + tj];
        }
        if (!kmc_repair_due(g->rp != nullptr, bad != 0, round))
            break;
        /* a round of the repair: this rank's edge tiles whose strips differ from the neighbours'
         * join it (the tiles around differing strips inside the slab are under way) */
        const int p = carlo_mpi_rank();
        const u64 *own = g->h_all + (size_t)p * words;
        const u64 *up = g->h_all + (size_t)((p + R - 1) % R) * words;
        const u64 *dn = g->h_all + (size_t)((p + 1) % R) * words;
        int n = 0;
        for (int tj = 0; tj < ntc; tj++) {
            if (own[SPLIT_SUMS + tj] != up[SPLIT_SUMS + ntc + tj])
                g->h_edge[n++] = ntc + tj;
            if (own[SPLIT_SUMS + ntc + tj] != dn[SPLIT_SUMS + tj])
                g->h_edge[n++] = rows * ntc + tj;
        }
        if (n)
            CK(cudaMemcpyAsync(g->d_edge, g->h_edge, (size_t)n * sizeof(int), cudaMemcpyHostToDevice, st));
        repair_round_kernel<<<1, VALIDATE_THREADS, 0, st>>>(g->ctrl, g->rp, g->d_edge, n);
        CK_LAUNCH("repair_round_kernel");
        if (repair_launch(s, md, st))
            return -1;
        validate_kernel<<<validate_blocks, VALIDATE_THREADS, 0, st>>>(
            s->geom, g->out, g->ctrl, g->acc, g->ntiles, g->sl, so, g->rp, round + 1);
        CK_LAUNCH("validate_kernel");
        /* the edge rows again: repaired tiles may lie in them */
        halo_pack_kernel<<<(unsigned)((2 * ntc * 64 + 255) / 256), 256, 0, st>>>(
            s->geom, g->b, g->b.where[k & 1], rows, g->d_send, g->d_send + row);
        CK_LAUNCH("halo_pack_kernel");
        CK(cudaMemcpyAsync(g->h_send, g->d_send, 2 * row, cudaMemcpyDeviceToHost, st));
    }
    c->repaired += repaired;
    kmc_ctrl_decide(c, ev, sim, bad != 0, ovf != 0);
    /* queued, not waited for: h_ctrl is written again only after the next step's wait */
    *g->h_ctrl = *c;
    CK(cudaMemcpyAsync(g->ctrl, g->h_ctrl, sizeof(kmc_ctrl), cudaMemcpyHostToDevice, st));
    g->rows_pending = c->last_accepted != 0; /* a rejected step kept the old state: the halos hold it */
    return 0;
}

/* The halo rows of the accepted state, before something reads them between batches of steps
 * (gpu_slab_states). A batch ends without them: the next batch's first step sends them while
 * its interior runs, as every step does, rather than every rank stopping for an exchange at the
 * end of each batch; a gather or a checkpoint reads own rows only, and a new state drops them. */
int split_flush(kmc_system *s)
{
    return impl(s)->rows_pending ? split_rows_in(s, cudaStreamPerThread, true) : 0;
}

/* A split system's own rows with the row above and the row below them (kmc_backend). */
int gpu_slab_states(kmc_system *s, int32_t *x)
{
    gpu_impl *g = impl(s);
    if (split_flush(s))
        return -1;
    CK(cudaMemcpy(g->host, g->b.x[s->ctrl.front], stored_sites(s) * 4, cudaMemcpyDeviceToHost));
    rows_out(s, g->host, KMC_TILE - 1, s->tile_rows * KMC_TILE + 2, x, 4);
    return 0;
}

int gpu_advance(kmc_system *s, uint64_t budget)
{
    gpu_impl *g = impl(s);
    if (s->ctrl.done)
        return 0;
    const int tpb = s->tiles_per_block;
    const unsigned step_blocks = (unsigned)((g->ntiles + tpb - 1) / tpb);
    const unsigned settle_blocks = (unsigned)((g->stored + tpb - 1) / tpb);
    const unsigned validate_blocks = (unsigned)((g->ntiles + VALIDATE_THREADS - 1) / VALIDATE_THREADS);
    const uint64_t n = budget < BATCH_MAX ? budget : BATCH_MAX;
    const size_t smem = step_smem(s, tpb);
    const kmc_split_out whole = {nullptr, nullptr, nullptr}; /* decided on the device */
    kmc_model md = s->model; /* its rates as they are now (controls change them) */
    md.config = g->configs;
    md.event = g->events;
    CK(cudaMemcpy(g->ctrl, &s->ctrl, sizeof(kmc_ctrl), cudaMemcpyHostToDevice));
    /* every tile starts in the front buffer (see kmc_gpu_buffers); a slab's halo tiles are
     * read through both maps */
    const uint64_t k0 = s->ctrl.accepted + s->ctrl.rejected;
    CK(cudaMemset(g->b.where[(k0 + 1) & 1], (int)s->ctrl.front, (size_t)g->stored));
    if (s->split) {
        CK(cudaMemset(g->b.where[k0 & 1], (int)s->ctrl.front, (size_t)g->stored));
        /* one step at a time: each is decided from the sums over the ranks */
        for (uint64_t k = 0; k < budget && !s->ctrl.done && !carlo_interrupted; k++)
            if (split_step(s, md))
                return -1;
    } else {
        for (uint64_t k = 0; k < n; k++) {
            step_kernel<<<step_blocks, (unsigned)(32 * tpb), smem>>>(s->geom, md, s->seed, g->b,
                                                                     g->ctrl, g->out, g->ntiles, g->sl);
            CK_LAUNCH("step_kernel");
            validate_kernel<<<validate_blocks, VALIDATE_THREADS>>>(s->geom, g->out, g->ctrl, g->acc,
                                                                   g->ntiles, g->sl, whole, g->rp);
            CK_LAUNCH("validate_kernel");
            /* the rounds of the repair: launched every step, they return at once when none is due */
            for (int r = 1; g->rp && r <= KMC_REPAIR_ROUNDS; r++) {
                if (repair_launch(s, md, cudaStreamPerThread))
                    return -1;
                validate_kernel<<<validate_blocks, VALIDATE_THREADS>>>(
                    s->geom, g->out, g->ctrl, g->acc, g->ntiles, g->sl, whole, g->rp, r);
                CK_LAUNCH("validate_kernel");
            }
        }
    }
    settle_kernel<<<settle_blocks, (unsigned)(32 * tpb)>>>(g->b, g->ctrl, g->stored);
    CK_LAUNCH("settle_kernel");
    CK(cudaMemcpy(&s->ctrl, g->ctrl, sizeof(kmc_ctrl), cudaMemcpyDeviceToHost));
    return 0;
}

int gpu_min_tau(kmc_system *s, double *out)
{
    gpu_impl *g = impl(s);
    const unsigned long long inf = 0x7ff0000000000000ull;
    CK(cudaMemcpy(g->minbits, &inf, sizeof inf, cudaMemcpyHostToDevice));
    const uint64_t N = (uint64_t)g->ntiles * 64u; /* the own sites */
    uint64_t blocks = (N + 255) / 256;
    if (blocks > 4096)
        blocks = 4096;
    const double *tau = g->b.tau[s->ctrl.front] + (size_t)g->sl.first * (size_t)s->geom.ntc * 64u;
    min_tau_kernel<<<(unsigned)blocks, 256>>>(tau, N, g->minbits);
    CK_LAUNCH("min_tau_kernel");
    unsigned long long bits;
    CK(cudaMemcpy(&bits, g->minbits, sizeof bits, cudaMemcpyDeviceToHost));
    memcpy(out, &bits, sizeof *out);
    return s->split ? carlo_mpi_min_f64(out, 1) : 0;
}

int gpu_sync(kmc_system *s)
{
    (void)s;
    CK(cudaStreamSynchronize(cudaStreamPerThread));
    return 0;
}

} // namespace

extern "C" const kmc_backend kmc_cuda_backend = {
    "gpu", gpu_create, gpu_destroy, gpu_set_state, gpu_get_state, gpu_advance, gpu_min_tau, gpu_sync,
    gpu_launch, gpu_slab_states,
};
