/* hard_split.cu — a split hard-particle system's halo exchanges and gathers on the GPU
 * (hard_mpi.h, carlo-mpi(7)): the edge layers packed by the device into page-locked host
 * memory (shared by the ranks of one machine, or sent as messages), the halos unpacked on a
 * side stream, and the gathers of the whole grid through a host copy. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "core/error.h"
#include "hard/hard.h"
#include "hard/hard_mpi.h"
#include "mpi/mpi.h"
}
#include "cells.h"
#include "check.h"
#include "hard_gpu.h"

namespace hard_gpu {

namespace {

constexpr int TAG_NOTE = 0x484e; /* and + 1: the shared staging's notes (hard_mpi.c's messages: 0x4848) */

} // namespace

/* Two layers of the grid (at[k]: the first cell of layer k, -1: none) packed into buf[k] (PACK) or
 * unpacked from it, in hard_mpi.c's layout: the layer's counts, then each position and word plane
 * slot by slot, rows of lc words. */
struct layer_pair {
    int64_t at[2];
    uint32_t *buf[2];
};

template <bool PACK>
static __global__ void layer_kernel(carlo_cell_grid g, uint32_t *pos, uint32_t *aux, uint32_t *count, layer_pair lp,
                             int64_t lc, int64_t words)
{
    const int k = blockIdx.y;
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (lp.at[k] < 0 || t >= words)
        return;
    const int64_t row = t / lc, c = lp.at[k] + t % lc, npos = (int64_t)g.dim * g.nmax;
    uint32_t *w = row == 0 ? count + c
                  : row <= npos ? pos + (row - 1) * g.ncells + c
                                : aux + (row - 1 - npos) * g.ncells + c;
    if (PACK)
        lp.buf[k][t] = *w;
    else
        *w = lp.buf[k][t];
}

/* The staging let go (the shared memory itself lives until MPI ends). */
void stage_free(gpu_impl *g)
{
    if (g->shared_lo)
        cudaHostUnregister(g->shared_lo);
    cudaFreeHost(g->hstage);
    free(g->peer);
    g->shared_lo = g->hstage = NULL;
    g->peer = NULL;
    g->shared = 0;
    g->stage_cap = 0;
}

/* n rows of width bytes, pitch bytes apart, between host and device: one strided copy (a
 * pitch too large for one goes row by row), queued on the calling thread's stream behind the
 * kernels. From page-locked host memory the call does not wait: a copy down is complete only
 * after a synchronisation of the stream, and the host memory of a copy up must not change
 * before one (the next exchange synchronises after its copies down, before it writes). */
static int rows_copy(void *dst, const void *src, size_t pitch, size_t width, size_t n, cudaMemcpyKind kind)
{
    if (n == 0 || width == 0)
        return 0;
    if (pitch < ((size_t)1 << 31)) {
        CK(cudaMemcpy2DAsync(dst, pitch, src, pitch, width, n, kind, cudaStreamPerThread));
        return 0;
    }
    for (size_t r = 0; r < n; r++)
        CK(cudaMemcpyAsync(static_cast<char *>(dst) + r * pitch, static_cast<const char *>(src) + r * pitch, width,
                           kind, cudaStreamPerThread));
    return 0;
}

/* Layers [k0, k0 + nk) along the last axis of grid gr, from the device storage to the host
 * storage (down) or back: a layer is a contiguous run of cells in each (plane, slot) row of
 * the three arrays, one strided copy each. */
static int layers_copy(const carlo_cell_grid *gr, const carlo_cell_data *dev, const carlo_cell_data *host, int k0,
                int nk, bool down)
{
    if (nk <= 0)
        return 0;
    const size_t lc = (size_t)(gr->ncells / gr->m[gr->dim - 1]), at = (size_t)k0 * lc;
    const size_t width = (size_t)nk * lc * 4, pitch = (size_t)gr->ncells * 4;
    const cudaMemcpyKind kind = down ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
    const size_t planes[3] = {1, (size_t)gr->dim * (size_t)gr->nmax, (size_t)gr->naux * (size_t)gr->nmax};
    void *const h[3] = {host->count + at, host->pos + at, gr->naux ? host->aux + at : NULL};
    void *const d[3] = {dev->count + at, dev->pos + at, gr->naux ? dev->aux + at : NULL};
    for (int k = 0; k < 3; k++)
        if (planes[k] && rows_copy(down ? h[k] : d[k], down ? d[k] : h[k], pitch, width, planes[k], kind))
            return -1;
    return 0;
}

void mirror_unpin(gpu_impl *g)
{
    for (int k = 0; k < 3; k++)
        if (g->pinned[k]) {
            cudaHostUnregister(g->pinned[k]);
            g->pinned[k] = NULL;
        }
    memset(g->pin_tried, 0, sizeof g->pin_tried);
    (void)cudaGetLastError();
}

/* The host copy of a split system's grid, made fit for s->grid, and page-locked where the
 * system allows (the layer copies then go straight, without a staging copy by the driver;
 * pageable memory, slower, where it does not). */
static int mirror_fit(hard_system *s)
{
    gpu_impl *g = impl(s);
    const carlo_cell_grid &h = g->mirror_grid, &n = s->grid;
    if (g->mirror.pos && (h.dim != n.dim || h.ncells != n.ncells || h.nmax != n.nmax || h.naux != n.naux)) {
        CK(cudaStreamSynchronize(cudaStreamPerThread)); /* no copy from the old one in flight */
        mirror_unpin(g); /* the fit frees and allocates afresh */
    }
    if (carlo_cell_data_fit(&g->mirror, &g->mirror_grid, &s->grid))
        return -1;
    void *const a[3] = {g->mirror.pos, g->mirror.aux, g->mirror.count};
    const size_t bytes[3] = {carlo_cells_pos_len(&n) * sizeof(float), carlo_cells_aux_len(&n) * sizeof(uint32_t),
                             (size_t)n.ncells * sizeof(uint32_t)};
    for (int k = 0; k < 3; k++)
        if (a[k] && bytes[k] && g->pin_tried[k] != a[k]) {
            g->pin_tried[k] = a[k];
            if (cudaHostRegister(a[k], bytes[k], cudaHostRegisterDefault) == cudaSuccess)
                g->pinned[k] = a[k];
            else
                (void)cudaGetLastError(); /* not sticky: the copies go through pageable memory */
        }
    return 0;
}

/* ---------- a split system's halo exchanges (hard_mpi.h) ----------
 *
 * A set's update runs in two parts: its cells in the interior layers of the rank's slab on the
 * main stream (they read no halo layer), and its cells in the slab's first and last layer on
 * the side stream, once the halos of the last exchange are up; the two parts touch different
 * cells of one set and read only cells of other sets, so they run at once. The edge layers then
 * go out (packed by the device straight into page-locked host memory) on the side stream while
 * the next set's interior runs, and cross to the neighbours and come in at the next set: before
 * its edge layers when its parity along the split axis is the other one, behind them when it is
 * the same (a set reads halo layers of the other parity only), always before on one rank (whose
 * halo layers are its own edge layers; split_set). Each exchange hides behind an interior's
 * update. Every other operation
 * first waits for the exchange under way and the side stream (split_settle).
 * On one rank too (the layers come back to where they were): a split over one rank measures
 * what the staging costs. */

/* Shared staging for layers of n bytes, when the ranks are all on this machine and every one's
 * device can reach it: each rank's part of memory shared by them (carlo_mpi_shared_alloc)
 * registered with CUDA. Collective, decided alike on every rank; 0 with g->shared = 0 where it
 * cannot be (the halos then go by messages). */
static int stage_shared(hard_system *s, size_t n)
{
    gpu_impl *g = impl(s);
    const int ranks = s->split->ranks;
    const size_t part = (4 * n + 4095) / 4096 * 4096;
    uint8_t **base = static_cast<uint8_t **>(carlo_calloc((size_t)ranks, sizeof *base, "the shared staging"));
    g->peer = static_cast<uint8_t **>(carlo_calloc((size_t)ranks, sizeof *g->peer, "the shared staging"));
    if (!base || !g->peer) {
        free(base);
        return -1;
    }
    const int made = carlo_mpi_shared_alloc(part, base);
    if (made <= 0) {
        free(base);
        return made;
    }
    uint8_t *lo = base[0], *hi = base[0];
    for (int r = 0; r < ranks; r++) {
        lo = base[r] < lo ? base[r] : lo;
        hi = base[r] > hi ? base[r] : hi;
    }
    /* CARLO_HALO_SHARED=0 on any rank: messages (the other path, for tests and comparisons) */
    const char *want = getenv("CARLO_HALO_SHARED");
    int64_t bad = want && strcmp(want, "0") == 0;
    void *dev = NULL;
    if (!bad && cudaHostRegister(lo, (size_t)(hi - lo) + part, cudaHostRegisterPortable | cudaHostRegisterMapped) ==
                    cudaSuccess)
        g->shared_lo = lo;
    if (!g->shared_lo || cudaHostGetDevicePointer(&dev, lo, 0) != cudaSuccess)
        bad = 1;
    (void)cudaGetLastError(); /* not sticky: the halos go by messages */
    const int rc = hard_split_sum(s, &bad, 1);
    if (rc == 0 && bad == 0) {
        for (int r = 0; r < ranks; r++)
            g->peer[r] = static_cast<uint8_t *>(dev) + (base[r] - lo);
        g->shared = 1;
    } else if (g->shared_lo) { /* another rank cannot: none does */
        cudaHostUnregister(g->shared_lo);
        g->shared_lo = NULL;
    }
    free(base);
    return rc;
}

/* The side stream, its events and the staging for layers of hard_split_layer_bytes. */
int stage_fit(hard_system *s)
{
    gpu_impl *g = impl(s);
    if (!g->side) {
        int least = 0, greatest = 0; /* the side's few blocks go first, ahead of the interior's */
        CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
        CK(cudaStreamCreateWithPriority(&g->side, cudaStreamNonBlocking, greatest));
        cudaEvent_t *const ev[4] = {&g->ev_main, &g->ev_edge, &g->ev_down, &g->ev_side};
        for (int k = 0; k < 4; k++)
            CK(cudaEventCreateWithFlags(ev[k], cudaEventDisableTiming));
    }
    const size_t n = hard_split_layer_bytes(s);
    if (n > g->stage_cap) { /* the same on every rank: the grid's */
        CK(cudaStreamSynchronize(g->side)); /* nothing in flight from the old staging */
        stage_free(g);
        if (stage_shared(s, n))
            return -1;
        if (!g->shared)
            CK(cudaMallocHost(&g->hstage, 4 * n));
        g->stage_cap = n;
    }
    g->layer_bytes = n;
    return 0;
}

/* Layers k[0..1] (those >= 0) of the current cells packed into buf[0..1] or unpacked from them
 * (page-locked host memory, which the device reads and writes in place), on the side stream. */
static int layers_move(hard_system *s, const int k[2], uint8_t *const buf[2], bool pack)
{
    gpu_impl *g = impl(s);
    const carlo_cell_grid &gr = s->grid;
    const int64_t lc = gr.ncells / gr.m[gr.dim - 1], words = (int64_t)(g->layer_bytes / 4);
    layer_pair lp;
    for (int j = 0; j < 2; j++) {
        lp.at[j] = k[j] >= 0 ? (int64_t)k[j] * lc : -1;
        lp.buf[j] = reinterpret_cast<uint32_t *>(buf[j]);
    }
    if (lp.at[0] < 0 && lp.at[1] < 0)
        return 0;
    dim3 blocks((unsigned)((words + 255) / 256), 2);
    uint32_t *pos = reinterpret_cast<uint32_t *>(g->cur.pos);
    if (pack)
        layer_kernel<true><<<blocks, 256, 0, g->side>>>(gr, pos, g->cur.aux, g->cur.count, lp, lc, words);
    else
        layer_kernel<false><<<blocks, 256, 0, g->side>>>(gr, pos, g->cur.aux, g->cur.count, lp, lc, words);
    CK(cudaGetLastError());
    return 0;
}

/* Where layer k of turn t is packed: rank r's shared part, or the local staging (sent k, or
 * received k with in = 1). */
static uint8_t *stage_at(gpu_impl *g, int r, uint64_t t, int k, int in)
{
    if (g->shared)
        return g->peer[r] + ((t & 1) * 2 + (uint64_t)k) * g->layer_bytes;
    return g->hstage + (size_t)(2 * in + k) * g->layer_bytes;
}

/* The side stream to wait for everything queued on the main stream so far. */
int side_after_main(gpu_impl *g)
{
    CK(cudaEventRecord(g->ev_main, cudaStreamPerThread));
    CK(cudaStreamWaitEvent(g->side, g->ev_main, 0));
    return 0;
}

/* The edge layers of parity bit (-1: both, after a shift along the split axis) on their way
 * down, behind what the side stream holds. */
int halo_start(hard_system *s, int bit)
{
    gpu_impl *g = impl(s);
    int out[2], in[2];
    hard_split_edge_layers(s, bit, out, in);
    if (stage_fit(s))
        return -1;
    const uint64_t t = g->turn++;
    uint8_t *const to[2] = {stage_at(g, s->split->rank, t, 0, 0), stage_at(g, s->split->rank, t, 1, 0)};
    if (layers_move(s, out, to, true))
        return -1;
    CK(cudaEventRecord(g->ev_down, g->side));
    g->pending = 1;
    g->pending_bit = bit;
    g->pending_turn = t;
    g->side_used = 1;
    return 0;
}

/* The exchange under way completed, the halos into the cells on the side stream: through the
 * shared staging, each rank reading its neighbours' parts once they say their layers are
 * there (a note each way at every exchange, also when no layer crossed it: a rank packs into
 * a part again two turns later, after notes from both neighbours that come after their reads
 * of it); or by messages (hard_split_exchange_packed). */
int halo_finish(hard_system *s)
{
    gpu_impl *g = impl(s);
    if (!g->pending)
        return 0;
    g->pending = 0;
    hard_split *p = s->split;
    const uint64_t t = g->pending_turn;
    int out[2], in[2], dest[2], src[2];
    hard_split_edge_layers(s, g->pending_bit, out, in);
    hard_split_neighbours(s, dest, src);
    CK(cudaEventSynchronize(g->ev_down));
    uint8_t *from[2];
    if (g->shared) {
        if (p->ranks > 1) {
            p->full = 0;
            if (carlo_mpi_notify2(dest, src, TAG_NOTE))
                return -1;
        }
        for (int k = 0; k < 2; k++)
            from[k] = stage_at(g, src[k], t, k, 0);
    } else {
        uint8_t *const sb[2] = {stage_at(g, 0, t, 0, 0), stage_at(g, 0, t, 1, 0)};
        from[0] = stage_at(g, 0, t, 0, 1);
        from[1] = stage_at(g, 0, t, 1, 1);
        if (hard_split_exchange_packed(s, g->pending_bit, sb, from))
            return -1;
    }
    return layers_move(s, in, from, false);
}

/* The exchange under way completed and the main stream behind everything on the side stream:
 * what every operation but a set's update starts with. */
int split_settle(hard_system *s)
{
    gpu_impl *g = impl(s);
    if (!s->split || !g->side)
        return 0;
    if (halo_finish(s))
        return -1;
    if (g->side_used) {
        CK(cudaEventRecord(g->ev_side, g->side));
        CK(cudaStreamWaitEvent(cudaStreamPerThread, g->ev_side, 0));
        g->side_used = 0;
        g->edge_on_side = 0;
    }
    return 0;
}

/* Every layer of a split system current on this rank's device: its own layers down, gathered
 * on the host copy from every rank (hard_split_gather), the whole grid up. A no-op when the
 * grid is whole already (after an upload, a gather or a trial of the whole grid). */
int split_gather(hard_system *s)
{
    hard_split *p = s->split;
    if (split_settle(s))
        return -1;
    if (!p || p->full || p->ranks == 1)
        return 0;
    gpu_impl *g = impl(s);
    if (mirror_fit(s) || layers_copy(&s->grid, &g->cur, &g->mirror, p->lo, p->hi - p->lo, true))
        return -1;
    CK(cudaStreamSynchronize(cudaStreamPerThread));
    if (hard_split_gather(s, &g->mirror))
        return -1;
    return carlo_cells_dev_upload(&s->grid, &g->cur, &g->mirror);
}

} // namespace hard_gpu
