/* lj_cb_warp.cuh — the device code of the checkerboard's sum order near (cuda/lj_cb.cu): one
 * warp per active cell, its neighbourhood staged in shared memory, each move's near candidates
 * found by a vote and their terms summed on the 32 lanes of lj_cb_kernel.h; and what the block
 * kernel of the order cell shares with it (the launch parameters, the staging, the store).
 * Included once, by cuda/lj_cb.cu. */
#ifndef CARLO_LJ_CB_WARP_CUH
#define CARLO_LJ_CB_WARP_CUH

namespace {

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
    lj_tether th; /* the tether (the kernels' TETHER form; th.site in device memory) */
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

/* The tether's part of a move of the particle in slot `slot` of cell c (xyz) from o to nw:
 * false for the reference particle (index 0: it stays), else true with beta dU_t in *dT
 * (lj_cb_kernel.h, the CPU's operations). */
__device__ __forceinline__ bool cb_tether(const cbp &p, int64_t c, const int xyz[3], int slot,
                                          const float o[3], const float nw[3], double *dT)
{
    const uint32_t tag = p.cells.aux[carlo_cell_slot(&p.grid, c, slot, 0)];
    if (tag == 0u)
        return false;
    double cc[3];
    carlo_tether_offset(&p.grid, p.grid.dim, xyz, p.th.origin, p.th.L, 0, p.th.site + 3 * (size_t)tag, cc);
    *dT = carlo_tether_dE(p.th.lambda, p.th.L, p.grid.dim, cc, o, nw);
    return true;
}

/* Active cell t of set `set` (place `place` in the sweep), sub-sweep `step`, by one warp: the cell's particles moved in lj_cb_order's order, each
 * move's near candidates found by a vote over the neighbourhood and their terms summed on the
 * 32 lanes of lj_kernel.h. TETHER: with the harmonic tether p.th. */
template <bool TETHER>
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
        double dT = 0.0;
        if (TETHER && !cb_tether(p, c, xyz, slot, o, nw, &dT))
            continue; /* the reference particle: the same on every lane */
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
            acc = TETHER ? lj_cb_accept_tether(du, p.beta, dT, logu) : lj_cb_accept(du, p.beta, logu);
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

} // namespace

#endif
