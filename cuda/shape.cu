/* shape.cu — the CUDA backend of hard convex shapes: a sub-sweep either with one thread per
 * active cell running shape_cell_update (src/shape/shape_kernel.h, the code the CPU runs, in the
 * same double arithmetic without contraction, so the chains are bit-identical) or with a team of
 * lanes per active cell sharing its overlap tests (shape_team.cuh, the same decisions); the shape
 * handed to every launch as a __grid_constant__ parameter (constant memory), the shared cell
 * shift, and the trial of a length or shear move of the box (the cells re-cut on the device and
 * checked there with the kernels' overlap test, shape_cell_overlaps). A system split over MPI
 * ranks (s->split, mpi/cell_split.h) updates the active cells of its own layers, shifts its own
 * and halo cells, and stages its edge layers through page-locked host memory after each set and
 * shift: a set's cells in its edge layers run first, and the layers cross on a second stream
 * while the set's interior runs. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "core/error.h"
#include "mpi/cell_split.h"
#include "shape/shape.h"
}
#include "cells.h"
#include "check.h"
#include "shape_team.cuh"

namespace {

/* Move counters (translations tried, accepted, rotations tried, accepted), the shift's
 * overflow flag and a box-move trial's overflow and overlap flags, one allocation. */
struct dev_counters {
    unsigned long long n[4];
    unsigned int flag;
    unsigned int rflag, over;
    unsigned int novf; /* cells of a team_kernel launch whose lists overflowed (in ovf) */
};

struct gpu_impl {
    carlo_cell_data cur, spare;
    carlo_cell_grid cur_grid, spare_grid; /* the grids the storages were allocated for */
    dev_counters *ctr;
    uint32_t *ovf;  /* team_kernel: the active cells left to overflow_kernel */
    int64_t ovf_cap;
    uint8_t *stage; /* split: four packed layers, page-locked (two out, two in) */
    size_t stage_cap;
    cudaStream_t side;       /* split: the halo copies */
    cudaEvent_t edges, halos; /* the edge layers updated; the halo layers in */
};

gpu_impl *impl(shape_system *s) { return static_cast<gpu_impl *>(s->impl); }

__global__ void __launch_bounds__(128) subsweep_kernel(const __grid_constant__ shape_def sh, carlo_cell_grid g,
                                                       float *pos, uint32_t *aux, const uint32_t *count,
                                                       int set, int64_t t0, int64_t t1, shape_moves mv,
                                                       uint64_t seed, uint64_t step, dev_counters *ctr)
{
    const int64_t t = t0 + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; /* active cells [t0, t1) */
    if (t >= t1)
        return;
    int xyz[3];
    carlo_cell_active(&g, set, t, xyz);
    uint64_t c[4] = {0, 0, 0, 0};
    shape_cell_update(&sh, &g, pos, aux, count, xyz, mv, seed, step, c);
    for (int k = 0; k < 4; k++)
        if (c[k])
            atomicAdd(&ctr->n[k], (unsigned long long)c[k]);
}

/* After team_kernel: the cells it handed over, by one block (rare: a cell and its neighbours
 * crowded beyond the list), and their count back to 0 for the next launch. */
__global__ void __launch_bounds__(128) overflow_kernel(const __grid_constant__ shape_def sh, carlo_cell_grid g,
                                                       float *pos, uint32_t *aux, const uint32_t *count, int set,
                                                       shape_moves mv, uint64_t seed, uint64_t step,
                                                       const uint32_t *ovf, dev_counters *ctr)
{
    const unsigned nov = ctr->novf;
    for (unsigned k = threadIdx.x; k < nov; k += blockDim.x) {
        int xyz[3];
        carlo_cell_active(&g, set, ovf[k], xyz);
        uint64_t c[4] = {0, 0, 0, 0};
        shape_cell_update(&sh, &g, pos, aux, count, xyz, mv, seed, step, c);
        for (int a = 0; a < 4; a++)
            if (c[a])
                atomicAdd(&ctr->n[a], (unsigned long long)c[a]);
    }
    __syncthreads();
    if (threadIdx.x == 0)
        ctr->novf = 0;
}

/* A box-move trial's check: one thread per cell [c0, c1) of the re-gridded storage. */
__global__ void __launch_bounds__(128) overlap_kernel(const __grid_constant__ shape_def sh, carlo_cell_grid g,
                                                      const float *pos, const uint32_t *aux, const uint32_t *count,
                                                      shape_moves mv, int64_t c0, int64_t c1, dev_counters *ctr)
{
    const int64_t c = c0 + (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= c1)
        return;
    int xyz[3];
    carlo_cell_coords(&g, c, xyz);
    if (shape_cell_overlaps(&sh, &g, pos, aux, count, xyz, &mv))
        atomicOr(&ctr->over, 1u);
}

/* Device storage d (allocated for *have) made fit for grid g (every slot empty when new). */
int fit_dev(carlo_cell_data *d, carlo_cell_grid *have, const carlo_cell_grid *g)
{
    return carlo_cell_data_fit_with(d, have, g, carlo_cells_dev_alloc, carlo_cells_dev_free);
}

int gpu_create(shape_system *s)
{
    gpu_impl *g = static_cast<gpu_impl *>(carlo_calloc(1, sizeof(gpu_impl), "the hard-shape GPU backend"));
    if (!g)
        return -1;
    s->impl = g;
    CK_MALLOC(&g->ctr, sizeof(dev_counters), "move counters");
    CK(cudaMemset(g->ctr, 0, sizeof(dev_counters)));
    if (fit_dev(&g->cur, &g->cur_grid, &s->grid) || fit_dev(&g->spare, &g->spare_grid, &s->grid))
        return -1;
    return 0;
}

void gpu_destroy(shape_system *s)
{
    gpu_impl *g = impl(s);
    if (!g)
        return;
    carlo_cells_dev_free(&g->cur);
    carlo_cells_dev_free(&g->spare);
    cudaFree(g->ovf);
    cudaFree(g->ctr);
    cudaFreeHost(g->stage);
    if (g->side) {
        cudaStreamDestroy(g->side);
        cudaEventDestroy(g->edges);
        cudaEventDestroy(g->halos);
    }
    free(g);
    s->impl = NULL;
}

int gpu_upload(shape_system *s, const carlo_cell_data *h)
{
    return carlo_cells_dev_upload(&s->grid, &impl(s)->cur, h);
}

int gpu_download(shape_system *s, carlo_cell_data *h)
{
    return carlo_cells_dev_download(&s->grid, &impl(s)->cur, h);
}

/* Entries of a team's list: one and a half times the particles expected in a cell and its
 * neighbours, and 16 more, within what the cells can hold and SHAPE_LIST_MAX (a cell whose list
 * would not fit runs the one-thread update). */
int team_list(const shape_system *s)
{
    const carlo_cell_grid &g = s->grid;
    const int around = g.dim == 2 ? 9 : 27;
    const double want = ceil(1.5 * around * (double)s->N / (double)g.ncells) + 16.0;
    double cap = fmin(want, (double)around * (double)g.nmax);
    cap = fmin(cap, (double)SHAPE_LIST_MAX);
    return cap < 1.0 ? 1 : (int)cap;
}

/* One sub-sweep by shape_team_kernel (teams of `team` lanes), then overflow_kernel on the cells
 * it handed over; each launch checked on its own, so that an error names its kernel. */
template <int DIM, int CAP>
int launch_team(shape_system *s, gpu_impl *g, int set, int64_t t0, int64_t t1, uint64_t step, int team)
{
    const int lcap = team_list(s);
    const size_t smem = SHAPE_TEAM_SMEM(lcap);
    const unsigned blocks = (unsigned)((t1 - t0 + SHAPE_TEAMS - 1) / SHAPE_TEAMS);
    auto k = team == 2   ? shape_team_kernel<DIM, 2, CAP ? 16 : 1>
             : team == 4 ? shape_team_kernel<DIM, 4, CAP ? 8 : 1>
                         : shape_team_kernel<DIM, 8, CAP ? 4 : 1>;
    k<<<blocks, SHAPE_TEAMS * team, smem>>>(s->shape, s->grid, g->cur.pos, g->cur.aux, g->cur.count, set, t0, t1,
                                             s->mv, s->seed, step, lcap, g->ovf, g->ctr->n, &g->ctr->novf);
    CK_LAUNCH("shape team_kernel");
    overflow_kernel<<<1, 128>>>(s->shape, s->grid, g->cur.pos, g->cur.aux, g->cur.count, set, s->mv, s->seed, step,
                                g->ovf, g->ctr);
    CK_LAUNCH("shape overflow_kernel");
    return 0;
}

/* A split system's page-locked staging (four layers of bytes each: two out, two in) and its
 * side stream and events, made at the first exchange. */
uint8_t *stage(gpu_impl *g, size_t bytes)
{
    if (!g->side) {
        if (cudaStreamCreateWithFlags(&g->side, cudaStreamNonBlocking) != cudaSuccess ||
            cudaEventCreateWithFlags(&g->edges, cudaEventDisableTiming) != cudaSuccess ||
            cudaEventCreateWithFlags(&g->halos, cudaEventDisableTiming) != cudaSuccess) {
            carlo_seterr("CUDA: no stream or event for the halo exchange");
            return NULL;
        }
    }
    if (4 * bytes > g->stage_cap) {
        cudaFreeHost(g->stage);
        g->stage = NULL;
        g->stage_cap = 0;
        if (cudaMallocHost(&g->stage, 4 * bytes) != cudaSuccess) {
            carlo_seterr("out of page-locked host memory for the halo layers (%zu bytes)", 4 * bytes);
            return NULL;
        }
        g->stage_cap = 4 * bytes;
    }
    return g->stage;
}

/* Layer k of the device cells d to or from its packed form b (mpi/cell_split.h's: the counts,
 * then each position and word plane slot by slot, a run of the layer's cells each) on the side
 * stream: one strided copy per array, the planes' rows ncells apart. */
int layer_copy(gpu_impl *g, const carlo_cell_grid *gr, const carlo_cell_data *d, int k, uint8_t *b, int down)
{
    const int64_t lc = gr->ncells / gr->m[gr->dim - 1], at = (int64_t)k * lc;
    const size_t run = (size_t)lc * 4, pitch = (size_t)gr->ncells * 4;
    const size_t rows[3] = {1, (size_t)gr->dim * (size_t)gr->nmax, (size_t)gr->naux * (size_t)gr->nmax};
    void *const dev[3] = {d->count + at, d->pos + at, d->aux + at};
    for (int a = 0; a < 3; a++) {
        if (rows[a] == 0)
            continue;
        if (down)
            CK(cudaMemcpy2DAsync(b, run, dev[a], pitch, run, rows[a], cudaMemcpyDeviceToHost, g->side));
        else
            CK(cudaMemcpy2DAsync(dev[a], pitch, b, run, run, rows[a], cudaMemcpyHostToDevice, g->side));
        b += run * rows[a];
    }
    return 0;
}

/* The halo exchange of a split system after a set (bit: its parity along the split axis) or a
 * shift along the split axis (bit = -1), in two halves around the work that hides it: post
 * queues the edge layers' copies to the host behind the work queued so far (the edge cells);
 * finish waits for them alone, sends them, receives the halos and queues their copies to the
 * device, which the work queued after waits for. */
int exchange_post(shape_system *s, int bit)
{
    carlo_split *p = s->split;
    gpu_impl *g = impl(s);
    const size_t n = carlo_split_layer_bytes(p, &s->grid);
    uint8_t *b = stage(g, n);
    if (!b)
        return -1;
    int out[2], in[2];
    carlo_split_edge_layers(p, &s->grid, bit, out, in);
    CK(cudaEventRecord(g->edges, cudaStreamPerThread));
    CK(cudaStreamWaitEvent(g->side, g->edges, 0));
    for (int k = 0; k < 2; k++)
        if (out[k] >= 0 && layer_copy(g, &s->grid, &g->cur, out[k], b + (size_t)k * n, 1))
            return -1;
    return 0;
}

int exchange_finish(shape_system *s, int bit)
{
    carlo_split *p = s->split;
    gpu_impl *g = impl(s);
    const size_t n = carlo_split_layer_bytes(p, &s->grid);
    uint8_t *const sb[2] = {g->stage, g->stage + n}, *const rb[2] = {g->stage + 2 * n, g->stage + 3 * n};
    int out[2], in[2];
    carlo_split_edge_layers(p, &s->grid, bit, out, in);
    CK(cudaStreamSynchronize(g->side));
    if (carlo_split_exchange_packed(p, &s->grid, bit, sb, rb))
        return -1;
    for (int k = 0; k < 2; k++)
        if (in[k] >= 0 && layer_copy(g, &s->grid, &g->cur, in[k], rb[k], 0))
            return -1;
    CK(cudaEventRecord(g->halos, g->side));
    CK(cudaStreamWaitEvent(cudaStreamPerThread, g->halos, 0));
    return 0;
}

/* The launch of s->team (core/sys.h's tuner, sys:launch{}): 1 the one-thread kernel, 2, 4 or 8
 * a team kernel (3D: with s->capped, its registers bounded); 0 the default, a team of 4 in 2D
 * and of 8 in 3D. A split system's: over its own active cells, then its halo exchange. */
int launch_subsweep(shape_system *s, int set, int64_t t0, int64_t t1, uint64_t step)
{
    gpu_impl *g = impl(s);
    const int team = s->team > 0 ? s->team : (s->dim == 2 ? 4 : 8);
    if (t1 <= t0)
        return 0;
    if (team > 1) {
        const int64_t need = carlo_cell_set_size(&s->grid);
        if (g->ovf_cap < need) {
            cudaFree(g->ovf);
            g->ovf = NULL;
            g->ovf_cap = 0;
            CK_MALLOC(&g->ovf, (size_t)need * sizeof(uint32_t), "the team kernel's overflow list");
            g->ovf_cap = need;
        }
        if (s->dim == 2) /* always bounded: 128 registers, a few spilled */
            return launch_team<2, 1>(s, g, set, t0, t1, step, team);
        return s->capped ? launch_team<3, 1>(s, g, set, t0, t1, step, team)
                         : launch_team<3, 0>(s, g, set, t0, t1, step, team);
    }
    const unsigned threads = 128, blocks = (unsigned)((t1 - t0 + threads - 1) / threads);
    subsweep_kernel<<<blocks, threads>>>(s->shape, s->grid, g->cur.pos, g->cur.aux, g->cur.count, set, t0, t1,
                                         s->mv, s->seed, step, g->ctr);
    CK_LAUNCH("subsweep_kernel");
    return 0;
}

int gpu_subsweep(shape_system *s, int set, uint64_t step)
{
    carlo_split *p = s->split;
    int64_t t0 = 0, t1 = carlo_cell_set_size(&s->grid);
    if (!p || p->ranks == 1 || p->frozen) { /* frozen edges: nothing to exchange (cell_split.h) */
        if (p && p->ranks > 1)
            p->full = 0;
        if (p)
            carlo_split_active(p, &s->grid, set, &t0, &t1);
        return launch_subsweep(s, set, t0, t1, step);
    }
    /* split: the set's cells in the edge layers first (its active cells of one layer are a run
     * of per), then the interior while the edge layers cross */
    carlo_split_active(p, &s->grid, set, &t0, &t1);
    const int bit = set >> p->axis & 1;
    const int64_t per = carlo_cell_set_size(&s->grid) / s->grid.half[p->axis];
    const int64_t a = (p->lo & 1) == bit ? t0 + per : t0, b = ((p->hi - 1) & 1) == bit ? t1 - per : t1;
    p->full = 0;
    if (a >= b) /* no interior */
        return launch_subsweep(s, set, t0, t1, step) || exchange_post(s, bit) || exchange_finish(s, bit);
    return launch_subsweep(s, set, t0, a, step) || launch_subsweep(s, set, b, t1, step) ||
           exchange_post(s, bit) || launch_subsweep(s, set, a, b, step) || exchange_finish(s, bit);
}

int check_flag(gpu_impl *g)
{
    unsigned int flag = 0;
    CK(cudaMemcpy(&flag, &g->ctr->flag, sizeof flag, cudaMemcpyDeviceToHost));
    if (flag & 1u)
        return carlo_seterr("a cell overflowed in the cell shift (overlapping particles?)");
    return 0;
}

void swap_data(gpu_impl *g)
{
    carlo_cell_data_swap(&g->cur, &g->cur_grid, &g->spare, &g->spare_grid);
}

int gpu_shift(shape_system *s, carlo_cell_shift sh)
{
    gpu_impl *g = impl(s);
    if (fit_dev(&g->spare, &g->spare_grid, &s->grid)) /* the old grid's after a box move */
        return -1;
    carlo_split *p = s->split;
    if (!p || p->ranks == 1) {
        if (carlo_cells_dev_shift(&s->grid, &g->cur, &g->spare, sh, &g->ctr->flag, 0))
            return -1;
        swap_data(g);
        return 0;
    }
    /* split: the own cells (an edge cell gathers from a halo cell), and the halo cells too for a
     * shift within the layers; along the split axis the halos come from their owners after */
    int64_t c0, c1, h[2];
    carlo_split_cells(p, &s->grid, &c0, &c1);
    if (carlo_cells_dev_shift_range(&s->grid, &g->cur, &g->spare, sh, c0, c1, &g->ctr->flag, 0))
        return -1;
    const int lc = carlo_split_halo_cells(p, &s->grid, h);
    for (int k = 0; sh.axis != p->axis && k < 2; k++)
        if (carlo_cells_dev_shift_range(&s->grid, &g->cur, &g->spare, sh, h[k], h[k] + lc, &g->ctr->flag, 0))
            return -1;
    swap_data(g);
    p->full = 0;
    return sh.axis == p->axis ? exchange_post(s, -1) || exchange_finish(s, -1) : 0;
}

/* A box move's trial: the cells re-cut into the spare storage for grid ng and checked there,
 * one wait for the device (a cell that overflowed holds nmax particles: the check of the rest
 * is wasted but harmless). A split system's, while its other layers are not current (the cut
 * kept): its own and halo layers re-cut, its own checked. */
int gpu_scale_trial(shape_system *s, const carlo_cell_grid *ng, const double lam[3], shape_moves mv, int *bad)
{
    gpu_impl *g = impl(s);
    if (fit_dev(&g->spare, &g->spare_grid, ng))
        return -1;
    CK(cudaMemset(&g->ctr->rflag, 0, 2 * sizeof(unsigned int)));
    int64_t c0 = 0, c1 = ng->ncells;
    if (s->split && !s->split->full
            ? carlo_split_dev_regrid(s->split, &s->grid, &g->cur, ng, &g->spare, lam, &c0, &c1, &g->ctr->rflag, 0)
            : carlo_cells_dev_regrid(&s->grid, &g->cur, ng, &g->spare, lam, &g->ctr->rflag, 0))
        return -1;
    const unsigned threads = 128, blocks = (unsigned)((c1 - c0 + threads - 1) / threads);
    if (blocks) {
        overlap_kernel<<<blocks, threads>>>(s->shape, *ng, g->spare.pos, g->spare.aux, g->spare.count, mv, c0, c1,
                                            g->ctr);
        CK_LAUNCH("overlap_kernel");
    }
    unsigned int f[2] = {0, 0};
    CK(cudaMemcpy(f, &g->ctr->rflag, sizeof f, cudaMemcpyDeviceToHost));
    *bad = (f[0] | f[1]) != 0;
    return 0;
}

int gpu_scale_commit(shape_system *s)
{
    swap_data(impl(s));
    return 0;
}

int gpu_counts(shape_system *s, uint64_t c[4])
{
    dev_counters h;
    CK(cudaMemcpy(&h, impl(s)->ctr, sizeof h, cudaMemcpyDeviceToHost));
    for (int k = 0; k < 4; k++)
        c[k] = h.n[k];
    if (h.flag & 1u)
        return carlo_seterr("a cell overflowed in the cell shift (overlapping particles?)");
    return 0;
}

int gpu_sync(shape_system *s)
{
    CK(cudaDeviceSynchronize());
    return check_flag(impl(s));
}

} // namespace

extern "C" const shape_backend shape_cuda_backend = {
    gpu_create, gpu_destroy, gpu_upload, gpu_download, gpu_subsweep, gpu_shift, gpu_counts, gpu_sync,
    gpu_scale_trial, gpu_scale_commit,
};
