/* kmc_step.cuh — Algorithm 2 on the GPU: one warp per tile, the tile's domain (states,
 * clocks, draw counters) in shared memory, the 32 lanes each keeping the earliest of the
 * cells they own (d % 32 == lane), so the earliest event is three warp reductions away; the
 * lanes owning the cells an event touches redraw them side by side; and the halo tile rows of
 * a split system (carlo-mpi(7)) packed and unpacked. Kept apart from kmc.cu so that
 * tests/unit/kmc_warp.cc can run these very kernels on the CPU, one thread per lane.
 * Needs kmc/kmc.h (and the CUDA runtime, or the test's stand-in) included first. */
#ifndef CARLO_KMC_STEP_CUH
#define CARLO_KMC_STEP_CUH

#ifndef KMC_SHARED_DOUBLES
#define KMC_SHARED_DOUBLES(name) extern __shared__ double name[]
#endif

#define KMC_FULL_MASK 0xffffffffu

/* Two buffers of the lattice, and per tile which of them holds its state: a step writes a
 * tile with events into the other buffer and leaves a tile without events where it is, so
 * quiet tiles (most of them when events are rare) cost no copy. where[k & 1][T] is written by
 * step k (k = the steps decided before it): KMC_WHERE_NEW | b when the step wrote the tile
 * into buffer b (its state if step k is accepted; if rejected, the other buffer still holds
 * it), plain b when the tile stayed in b. A batch of steps starts with every tile in buffer
 * ctrl->front and ends by moving them all back there (settle_kernel). */
struct kmc_gpu_buffers {
    int32_t *x[2];
    double *tau[2];
    uint32_t *cnt[2];
    double *tmin[2]; /* the earliest clock of each tile */
    uint8_t *where[2];
};

#define KMC_WHERE_NEW 2u

/* The tiles a device stores: the whole lattice (first = 0), or a split system's slab (first =
 * 1): its own tile rows between a halo tile row above and one below, stored in order (local
 * tile rows 0 .. rows + 1), whose tiles are read and never stepped. row0 is the global tile
 * row of the first own one: sites and random numbers go by global rows. */
struct kmc_slab {
    int first;
    int row0;
};

/* The buffer (0 or 1) that holds tile T's state before step k, from where[(k + 1) & 1] and
 * whether step k - 1 was accepted. */
static __device__ __forceinline__ int kmc_tile_buf(const uint8_t *w, int T, bool last_accepted)
{
    const unsigned d = w[T];
    return (int)((d & 1u) ^ (((d & KMC_WHERE_NEW) != 0u && !last_accepted) ? 1u : 0u));
}

/* where[] read and written by the step after k decided steps */
static __device__ __forceinline__ const uint8_t *kmc_where_in(const kmc_gpu_buffers &b, uint64_t k)
{
    return (k & 1u) ? b.where[0] : b.where[1];
}

/* The smallest of the lanes' non-negative doubles (their bit patterns order like them). */
static __device__ __forceinline__ double warp_min(double v)
{
    const unsigned long long b = (unsigned long long)__double_as_longlong(v);
    const unsigned hi = __reduce_min_sync(KMC_FULL_MASK, (unsigned)(b >> 32));
    const unsigned lo =
        __reduce_min_sync(KMC_FULL_MASK, (unsigned)(b >> 32) == hi ? (unsigned)b : 0xffffffffu);
    return __longlong_as_double((long long)(((unsigned long long)hi << 32) | lo));
}

/* ---------- Algorithm 2: one step of every tile ---------- */

/* Stored tile T stepped by the calling warp (warp wib of its block) with the domains of g. */
static __device__ __forceinline__ void step_tile(const kmc_geom &g, const kmc_model &md,
                                                 const uint64_t seed, const kmc_gpu_buffers &b,
                                                 const kmc_ctrl *__restrict__ ctrl,
                                                 kmc_tile_out *__restrict__ out, const kmc_slab &sl,
                                                 const int T, const int wib)
{
    const double t_end = ctrl->t_end;
    const int lane = (int)(threadIdx.x & 31u);
    /* lt: the stored tile row; ti: the global tile row */
    const int lt = T / g.ntc, tj = T - lt * g.ntc;
    const int ti = lt - sl.first + sl.row0, h1 = g.halo + 1, P = g.P;
    const uint64_t k = ctrl->accepted + ctrl->rejected;
    const uint8_t *__restrict__ WIN = kmc_where_in(b, k);
    uint8_t *__restrict__ WOUT = (k & 1u) ? b.where[1] : b.where[0];
    const bool acc = ctrl->last_accepted != 0u;
    const int mine = kmc_tile_buf(WIN, T, acc);
    /* a tile whose 3 x 3 tiles have no clock before t_end has no event at all: it stays */
    double tn = INFINITY;
    if (lane < 9) {
        const int dr = lane / 3 - 1, dc = lane % 3 - 1;
        const int Tn = sl.first ? (lt + dr) * g.ntc + kmc_wrap(tj + dc, g.ntc)
                                : kmc_tile_near(&g, ti, tj, dr, dc);
        tn = kmc_tile_buf(WIN, Tn, acc) ? b.tmin[1][Tn] : b.tmin[0][Tn];
    }
    const double near = warp_min(tn);
    if (!(near < t_end)) {
        if (lane == 0) {
            WOUT[T] = (uint8_t)mine;
            kmc_tile_out o;
            memset(&o, 0, sizeof o);
            out[T] = o;
        }
        return;
    }
    /* the new state goes to the other buffer (selected by value: a kernel parameter indexed
     * at run time would go to local memory) */
    int32_t *__restrict__ XD = mine ? b.x[0] : b.x[1];
    double *__restrict__ TAUD = mine ? b.tau[0] : b.tau[1];
    uint32_t *__restrict__ CNTD = mine ? b.cnt[0] : b.cnt[1];
    double *__restrict__ TMIND = mine ? b.tmin[0] : b.tmin[1];
    KMC_SHARED_DOUBLES(smem);
    double *tau = smem + (size_t)wib * 2 * (size_t)g.cells;
    int32_t *x = reinterpret_cast<int32_t *>(tau + g.cells);
    uint32_t *cnt = reinterpret_cast<uint32_t *>(x + g.cells);

    /* lane l loads the cells it owns (d % 32 == l) */
    for (int d = lane; d < g.cells; d += 32) {
        const int r = d / P, c = d - r * P;
        if (c >= g.D) {
            x[d] = 0;
            tau[d] = INFINITY;
            cnt[d] = 0;
            continue;
        }
        /* the stored row: a slab holds its halo rows in order, the whole lattice wraps */
        const int gr = sl.first ? lt * KMC_TILE - h1 + r : kmc_wrap(ti * KMC_TILE - h1 + r, g.m);
        const int gc = kmc_wrap(tj * KMC_TILE - h1 + c, g.n);
        const uint64_t i = kmc_tm_index(&g, gr, gc);
        const int src = kmc_tile_buf(WIN, (gr >> 3) * g.ntc + (gc >> 3), acc);
        x[d] = src ? b.x[1][i] : b.x[0][i];
        tau[d] = kmc_dynamic(&g, r, c) ? (src ? b.tau[1][i] : b.tau[0][i]) : INFINITY;
        cnt[d] = src ? b.cnt[1][i] : b.cnt[0][i];
    }
    __syncwarp();
    double bt;
    int bd;
    kmc_lane_scan(&g, ti, tj, tau, lane, &bt, &bd);
    uint64_t chk[4] = {0, 0, 0, 0}, central = 0, sim = 0;
    uint32_t overflow = 0;

    for (;;) {
        /* the earliest (tau, site, cell) of the warp: clocks are >= 0, so their bit patterns
         * order like the numbers */
        const unsigned long long bits = (unsigned long long)__double_as_longlong(bt);
        const unsigned hi = (unsigned)(bits >> 32), lo = (unsigned)bits;
        const unsigned mhi = __reduce_min_sync(KMC_FULL_MASK, hi);
        const unsigned mlo = __reduce_min_sync(KMC_FULL_MASK, hi == mhi ? lo : 0xffffffffu);
        const double tmin = __longlong_as_double((long long)(((unsigned long long)mhi << 32) | mlo));
        if (!(tmin < t_end))
            break;
        const bool tie = hi == mhi && lo == mlo;
        const unsigned ballot = __ballot_sync(KMC_FULL_MASK, tie);
        int dmin;
        if ((ballot & (ballot - 1u)) == 0u) {
            dmin = __shfl_sync(KMC_FULL_MASK, bd, __ffs((int)ballot) - 1);
        } else { /* equal times: the smaller site, then the smaller cell (copies) */
            const unsigned site = tie ? kmc_site_of(&g, ti, tj, bd) : 0xffffffffu;
            const unsigned ms = __reduce_min_sync(KMC_FULL_MASK, site);
            dmin = (int)__reduce_min_sync(KMC_FULL_MASK, (tie && site == ms) ? (unsigned)bd : 0xffffffffu);
        }

        /* the event at dmin (every lane computes the same) */
        const int rmin = dmin / P, cmin = dmin - rmin * P;
        int32_t v[9];
        const int32_t xo = x[dmin];
        kmc_gather(&g, x, dmin, v);
        const uint32_t cfg0 = kmc_config_index(&md, v);
        const uint32_t site0 = kmc_site_rc(&g, ti, tj, rmin, cmin);
        const uint32_t kf = cnt[dmin] + 1u;
        const int owner = dmin & 31;
        carlo_u32x4 fd = {{0u, 0u, 0u, 0u}};
        bool have_fd = false;
        int32_t xn = 0;
        if (kmc_needs_choice(&md, cfg0)) { /* the owner draws, then tells the others */
            if (lane == owner) {
                fd = kmc_clock_draw(seed, site0, kf);
                have_fd = true;
                xn = kmc_apply(&md, cfg0, xo, kmc_choice_u(fd));
            }
            xn = __shfl_sync(KMC_FULL_MASK, xn, owner);
        } else {
            xn = kmc_apply(&md, cfg0, xo, 0.0);
        }
        __syncwarp();
        if (lane == owner) {
            x[dmin] = xn;
            cnt[dmin] = kf;
            overflow |= kf == 0u;
        }
        __syncwarp();

        /* the cells it touches, each on its own lane */
        int slot = 0;
        const int a = kmc_lane_affected(&g, dmin, lane, &slot);
        if (a >= 0) {
            const int r = rmin + kmc_slot_dr(slot), c = cmin + kmc_slot_dc(slot);
            if (kmc_dynamic(&g, r, c)) {
                int32_t w[9];
                kmc_gather(&g, x, a, w);
                const uint32_t cn = kmc_config_index(&md, w);
                const double An = kmc_total_rate(&md, cn);
                bool redraw = slot == 0;
                if (!redraw) {
                    kmc_set_slot(w, kmc_opposite(slot), xo);
                    redraw = kmc_total_rate(&md, kmc_config_index(&md, w)) != An;
                }
                if (redraw) {
                    uint32_t k = kf;
                    if (slot != 0) {
                        k = cnt[a] + 1u;
                        cnt[a] = k;
                        overflow |= k == 0u;
                    }
                    const carlo_u32x4 draw =
                        have_fd ? fd : kmc_clock_draw(seed, kmc_site_rc(&g, ti, tj, r, c), k);
                    const double tn = kmc_clock(tmin, draw, An, kmc_inv_rate(&md, cn));
                    tau[a] = tn;
                    kmc_lane_offer(&g, ti, tj, tau, lane, a, tn, &bt, &bd);
                }
            }
        }
        kmc_account(&g, rmin, cmin, tmin, site0, xn, chk, &central);
        sim++;
        __syncwarp();
    }

    /* keep the tile */
    __syncwarp();
    double tm = INFINITY;
    for (int q = lane; q < 64; q += 32) {
        const int d = ((q >> 3) + h1) * P + (q & 7) + h1;
        const uint64_t i = ((uint64_t)T << 6) + (uint64_t)q;
        XD[i] = x[d];
        TAUD[i] = tau[d];
        CNTD[i] = cnt[d];
        tm = tau[d] < tm ? tau[d] : tm;
    }
    tm = warp_min(tm);
    if (lane == 0) {
        TMIND[T] = tm;
        WOUT[T] = (uint8_t)(KMC_WHERE_NEW | (unsigned)(1 - mine));
    }
    const unsigned any_overflow = __any_sync(KMC_FULL_MASK, overflow != 0u);
    if (lane == 0) {
        kmc_tile_out o;
        o.chk[0] = chk[0];
        o.chk[1] = chk[1];
        o.chk[2] = chk[2];
        o.chk[3] = chk[3];
        o.events = central;
        o.sim = sim;
        o.overflow = any_overflow ? 1u : 0u;
        o.pad = 0;
        out[T] = o;
    }
}

/* The own tiles first_own .. ntiles - 1, one warp each (a split system steps its interior tile
 * rows and its edge rows in separate launches: tiles read only the state before the step, so
 * the launches may run in any order or at once). */
static __global__ void __launch_bounds__(256)
step_kernel(const kmc_geom g, const kmc_model md, const uint64_t seed, const kmc_gpu_buffers b,
            const kmc_ctrl *__restrict__ ctrl, kmc_tile_out *__restrict__ out, const int ntiles,
            const kmc_slab sl, const int first_own = 0)
{
    if (ctrl->done)
        return;
    const int wib = (int)(threadIdx.x >> 5);
    const int own = first_own + (int)blockIdx.x * (int)(blockDim.x >> 5) + wib;
    if (own >= ntiles)
        return; /* whole warps only; nothing below synchronises the block */
    step_tile(g, md, seed, b, ctrl, out, sl, own + sl.first * g.ntc, wib);
}

/* The repair (kmc_kernel.h) on the device: the tiles listed in this step, and the round under
 * way. tiles[from .. to - 1] are stepped again in it; go says whether one is due. */
struct kmc_repair {
    int *tiles;                  /* stored tile indices, in the order they were listed */
    uint32_t *stamp;             /* per stored tile: kmc_repair_stamp of the step that listed it */
    unsigned listed, from, to, go;
    unsigned long long replaced; /* simulated events of the first results the round replaced */
};

/* A round of the repair: the listed tiles stepped again with g, the repair halo's geometry,
 * from the same state before the step; their new results replace the first ones. One warp a
 * tile, as many tiles as the list holds whatever the grid. */
static __global__ void __launch_bounds__(256)
repair_kernel(const kmc_geom g, const kmc_model md, const uint64_t seed, const kmc_gpu_buffers b,
              const kmc_ctrl *__restrict__ ctrl, kmc_tile_out *__restrict__ out, const kmc_slab sl,
              kmc_repair *rp)
{
    if (ctrl->done || !rp->go)
        return;
    const int wib = (int)(threadIdx.x >> 5);
    const unsigned warps = gridDim.x * (blockDim.x >> 5), to = rp->to;
    for (unsigned i = rp->from + blockIdx.x * (blockDim.x >> 5) + (unsigned)wib; i < to; i += warps) {
        const int T = rp->tiles[i];
        if ((threadIdx.x & 31u) == 0)
            atomicAdd(&rp->replaced, (unsigned long long)out[T].sim);
        __syncwarp();
        step_tile(g, md, seed, b, ctrl, out, sl, T, wib);
        __syncwarp();
    }
}

/* After a batch of steps: every tile's state back into buffer ctrl->front, where the host and
 * the next batch find the whole lattice. One warp per tile; only tiles elsewhere move. */
static __global__ void __launch_bounds__(256)
settle_kernel(const kmc_gpu_buffers b, const kmc_ctrl *__restrict__ ctrl, const int ntiles)
{
    const int lane = (int)(threadIdx.x & 31u);
    const int T = (int)blockIdx.x * (int)(blockDim.x >> 5) + (int)(threadIdx.x >> 5);
    if (T >= ntiles)
        return;
    const int from = kmc_tile_buf(kmc_where_in(b, ctrl->accepted + ctrl->rejected), T,
                                  ctrl->last_accepted != 0u);
    if (from == (int)ctrl->front)
        return;
    for (int q = lane; q < 64; q += 32) {
        const uint64_t i = ((uint64_t)T << 6) + (uint64_t)q;
        if (from) {
            b.x[0][i] = b.x[1][i];
            b.tau[0][i] = b.tau[1][i];
            b.cnt[0][i] = b.cnt[1][i];
        } else {
            b.x[1][i] = b.x[0][i];
            b.tau[1][i] = b.tau[0][i];
            b.cnt[1][i] = b.cnt[0][i];
        }
    }
    if (lane == 0) {
        if (from)
            b.tmin[0][T] = b.tmin[1][T];
        else
            b.tmin[1][T] = b.tmin[0][T];
    }
}

/* ---------- a split system's halo tile rows ---------- */

/* Bytes of one tile row in the exchange: states, draw counters, then clocks. */
static __host__ __device__ __forceinline__ size_t kmc_row_bytes(const kmc_geom &g)
{
    return (size_t)g.ntc * 64u * 16u;
}

/* The first and last own tile rows (stored rows 1 and rows) as a step left them, for the
 * neighbour ranks' halos should the step be accepted: where is the map the step wrote
 * (where[k & 1] for the step after k decided ones). One thread a site. */
static __global__ void __launch_bounds__(256)
halo_pack_kernel(const kmc_geom g, const kmc_gpu_buffers b, const uint8_t *__restrict__ where,
                 const int rows, uint8_t *__restrict__ first, uint8_t *__restrict__ last)
{
    const int per_row = g.ntc * 64;
    const int idx = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (idx >= 2 * per_row)
        return;
    const int k = idx / per_row, at = idx - k * per_row;
    const int T = (k ? rows : 1) * g.ntc + (at >> 6);
    const int src = kmc_tile_buf(where, T, true);
    const uint64_t i = ((uint64_t)T << 6) + (uint64_t)(at & 63);
    uint8_t *base = k ? last : first;
    reinterpret_cast<int32_t *>(base)[at] = src ? b.x[1][i] : b.x[0][i];
    reinterpret_cast<uint32_t *>(base)[per_row + at] = src ? b.cnt[1][i] : b.cnt[0][i];
    reinterpret_cast<double *>(base)[per_row + at] = src ? b.tau[1][i] : b.tau[0][i];
}

/* The rows the neighbours sent into the halo tile rows (stored rows rows + 1 and 0), in
 * buffer 0, which the tile maps of both parities name from then on: one warp a tile, its
 * earliest clock with it. */
static __global__ void __launch_bounds__(256)
halo_unpack_kernel(const kmc_geom g, const kmc_gpu_buffers b, const int rows,
                   const uint8_t *__restrict__ bottom, const uint8_t *__restrict__ top)
{
    const int per_row = g.ntc * 64, lane = (int)(threadIdx.x & 31u);
    const int w = (int)blockIdx.x * (int)(blockDim.x >> 5) + (int)(threadIdx.x >> 5);
    if (w >= 2 * g.ntc)
        return;
    const int k = w / g.ntc, tj = w - k * g.ntc;
    const int T = (k ? 0 : rows + 1) * g.ntc + tj;
    const uint8_t *base = k ? top : bottom;
    double tm = INFINITY;
    for (int q = lane; q < 64; q += 32) {
        const int at = tj * 64 + q;
        const uint64_t i = ((uint64_t)T << 6) + (uint64_t)q;
        b.x[0][i] = reinterpret_cast<const int32_t *>(base)[at];
        b.cnt[0][i] = reinterpret_cast<const uint32_t *>(base)[per_row + at];
        const double t = reinterpret_cast<const double *>(base)[per_row + at];
        b.tau[0][i] = t;
        tm = t < tm ? t : tm;
    }
    tm = warp_min(tm);
    if (lane == 0) {
        b.tmin[0][T] = tm;
        b.where[0][T] = 0;
        b.where[1][T] = 0;
    }
}

#endif
