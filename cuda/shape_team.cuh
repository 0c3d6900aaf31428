/* shape_team.cuh — the team kernel of hard shapes (cuda/shape.cu): a team of lanes per active
 * cell sharing its overlap tests. A header of its own so that the host can compile it too
 * (tests/unit/shape_warp.cc runs it lane by lane, the warp intrinsics emulated). */
#ifndef CARLO_SHAPE_TEAM_CUH
#define CARLO_SHAPE_TEAM_CUH

#ifndef SHAPE_SHARED_DOUBLES
#define SHAPE_SHARED_DOUBLES(name) extern __shared__ double name[]
#endif

constexpr unsigned SHAPE_FULL_WARP = 0xffffffffu;

/* Sum a count over the warp and add it once to a 64-bit counter (every lane calls it). */
__device__ __forceinline__ void shape_warp_add(unsigned long long *to, unsigned long long v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(SHAPE_FULL_WARP, v, off);
    if ((threadIdx.x & 31) == 0 && v)
        atomicAdd(to, v);
}

/* Teams per block of shape_team_kernel (blocks of SHAPE_TEAMS T threads), and the most entries of a
 * team's list: 32 bytes an entry, SHAPE_TEAMS lists and their rotations (SHAPE_TEAM_SMEM) within
 * the 48 KiB a block has without opting in. */
#define SHAPE_TEAMS 16
#define SHAPE_ENTRY_BYTES 32
#define SHAPE_LIST_MAX 92
/* The shared memory of a block of shape_team_kernel: the teams' lists of lcap entries, then
 * each team's trial rotation, 9 doubles (used in 3D). */
#define SHAPE_TEAM_SMEM(lcap) ((size_t)SHAPE_TEAMS * ((size_t)SHAPE_ENTRY_BYTES * (size_t)(lcap) + 9 * sizeof(double)))

/* A team of T lanes (2, 4 or 8, within one warp) per active cell, the active cells of the set
 * numbered as carlo_cell_active numbers them. The team's list in shared memory (lcap entries)
 * holds the cell's own particles (entries 0 .. n - 1, kept up to date as moves are accepted)
 * and, after them, every particle of the neighbour cells that can reach the cell
 * (shape_reaches_cell; in a triclinic box all of them), each with its separation-ready
 * position in this cell's frame (p + s, as shape_overlaps_around forms it) and its
 * orientation (2D: the sine and cosine of shape_rot_of, 3D: the words). Lane l draws moves
 * l, l + T, ... ahead (shape_move_draw); every lane of the team builds the move's trial
 * position and rotation (3D: kept in shared memory, trot, out of the registers). Then each move
 * tests the list in two rounds: the bounds of every entry (shape_overlap_bounds, entries spread
 * over the lanes), whose undecided pairs are dealt out to the lanes for XenoCollide. There each
 * lane takes its pairs in turn and runs them one support point at a time (shape_mpr_start,
 * shape_mpr_step): every pass makes one support evaluation on every lane with a pair under way,
 * a lane that has decided a pair starting its next one, so that the lanes stay busy however
 * unequal the pairs' lengths (waiting for the longest pair of a round instead left a quarter of
 * the lanes working, and ran the dodecahedra at half the speed). Votes after every pass end the
 * round as soon as a lane of the team finds an overlap. An overlap is an overlap whichever lane
 * finds it, and every pair is tested with the one-thread code's arithmetic on the same numbers,
 * so the decisions, and the chain, are those of shape_cell_update. A team whose list would
 * overflow hands its cell to overflow_kernel, which runs shape_cell_update on it (out of this
 * kernel, whose registers it would otherwise raise). MINB blocks of a multiprocessor bound the
 * registers (32 / T: at most 128 a thread, sixteen warps; 1: no bound); both fit 128 without
 * spilling (CUDA 13, sm_90), so "capped" (3D) changes nothing there.
 *
 * The teams of a warp run in step: move s of every team at once, and each round of a move for as
 * long as the longest of the warp's teams needs (votes over the whole warp steer the rounds),
 * a team whose round is over, or that has no cell (past the set's end, empty, or handed over),
 * taking part with its lanes idle. So the passes of round 2 are the warp's: each pass makes one
 * support evaluation on every lane of every team that has a pair under way. (Nsight Compute,
 * dodecahedra, team 8: 7.8 of 32 lanes active on average with independent teams, 7.8 in step
 * with rounds that waited for their longest pair, 11.6 with the passes; 1.32e8, 1.66e8 and
 * 2.72e8 moves/s.) Each team's decisions read only its own lanes' votes (team_bits), so the
 * chain does not depend on its neighbours in the warp. Every lane reaches every shuffle, vote
 * and barrier in the same order: the loops' bounds are the same on all lanes of the warp. */
template <int DIM, int T, int MINB>
__global__ void __launch_bounds__(SHAPE_TEAMS *T, MINB)
    shape_team_kernel(const __grid_constant__ shape_def sh, carlo_cell_grid g, float *pos, uint32_t *aux,
                      const uint32_t *count, int set, int64_t t0, int64_t t1, shape_moves mv, uint64_t seed,
                      uint64_t step, int lcap,
                      uint32_t *ovf, unsigned long long *ctr_n, unsigned int *novf)
{
    constexpr int NW = DIM == 2 ? 1 : 4;  /* orientation words */
    constexpr int NQ = DIM == 2 ? 9 : 27; /* the cell and its neighbours; NQ / 2 the cell */
    SHAPE_SHARED_DOUBLES(team_smem);
    const int lane = threadIdx.x & 31, tl = threadIdx.x % T, team = threadIdx.x / T;
    const int lead = lane & ~(T - 1);
    const unsigned team_bits = ((1u << T) - 1u) << lead, below = (1u << lane) - 1u;
    /* this team's list: [2D: cos, sin (doubles)] positions (DIM planes), words (NW planes),
     * candidates (ints), each plane lcap long */
    char *base = reinterpret_cast<char *>(team_smem) + (size_t)team * (size_t)lcap * SHAPE_ENTRY_BYTES;
    double *cs = reinterpret_cast<double *>(base);
    float *lp = reinterpret_cast<float *>(base + (DIM == 2 ? 2 * sizeof(double) * (size_t)lcap : 0));
    uint32_t *lw = reinterpret_cast<uint32_t *>(lp + DIM * lcap);
    int *cand = reinterpret_cast<int *>(lw + NW * lcap);
    /* 3D: the move's trial rotation, kept here rather than in registers through XenoCollide */
    shape_rot *trot = reinterpret_cast<shape_rot *>(reinterpret_cast<char *>(team_smem) +
                                                    (size_t)SHAPE_TEAMS * (size_t)lcap * SHAPE_ENTRY_BYTES) + team;

    const int64_t t = t0 + (int64_t)blockIdx.x * SHAPE_TEAMS + team; /* active cells [t0, t1) of the set */
    int n = 0, xyz[3] = {0, 0, 0};
    int64_t c = 0;
    if (t < t1) {
        carlo_cell_active(&g, set, t, xyz);
        c = carlo_cell_index(&g, xyz[0], xyz[1], xyz[2]);
        n = (int)count[c];
        n = n > g.nmax ? g.nmax : n;
    }
    /* the neighbours that can reach the cell: counted by each lane over its cells q = tl,
     * tl + T, ..., then stored in that order from the lane's offset (a scan over the team) */
    int kept = 0, total = 0;
    for (int pass = 0; pass < 2; pass++) {
        int at = 0;
        if (pass == 1) {
            int incl = kept;
            for (int d = 1; d < T; d <<= 1) {
                const int y = __shfl_up_sync(team_bits, incl, d, T);
                if (tl >= d)
                    incl += y;
            }
            total = __shfl_sync(team_bits, incl, T - 1, T);
            if (n + total > lcap)
                n = -n; /* overflow: the cell goes to overflow_kernel (n != 0) */
            at = n + incl - kept;
        }
        if (n <= 0)
            continue;
        for (int q = tl; q < NQ; q += T) {
            if (q == NQ / 2)
                continue;
            const int off[3] = {q % 3 - 1, q / 3 % 3 - 1, DIM == 3 ? q / 9 - 1 : 0};
            float shv[3];
            const int64_t cn = carlo_cell_neighbor(&g, xyz, off, shv);
            int m = (int)count[cn];
            m = m > g.nmax ? g.nmax : m;
            for (int j = 0; j < m; j++) {
                float p[3] = {0.0f, 0.0f, 0.0f};
                for (int a = 0; a < DIM; a++)
                    p[a] = pos[carlo_cell_slot(&g, cn, j, a)] + shv[a];
                if (!mv.skew && !shape_reaches_cell(&sh, &g, p))
                    continue;
                if (pass == 0) {
                    kept++;
                    continue;
                }
                for (int a = 0; a < DIM; a++)
                    lp[a * lcap + at] = p[a];
                for (int k = 0; k < NW; k++)
                    lw[k * lcap + at] = aux[carlo_cell_slot(&g, cn, j, 1 + k)];
                if (DIM == 2)
                    shape_sincos_turn(lw[at], &cs[lcap + at], &cs[at]);
                at++;
            }
        }
    }
    unsigned cnt[4] = {0u, 0u, 0u, 0u}; /* this lane's cell's moves: at most mv.moves each */
    const bool live = n > 0; /* the same on all of a team's lanes (n, total) */
    if (live) /* the team's own particles: entries 0 .. n - 1 (p + 0, as the one-thread kernel) */
        for (int e = tl; e < n; e += T) {
            for (int a = 0; a < DIM; a++)
                lp[a * lcap + e] = pos[carlo_cell_slot(&g, c, e, a)] + 0.0f;
            for (int k = 0; k < NW; k++)
                lw[k * lcap + e] = aux[carlo_cell_slot(&g, c, e, 1 + k)];
            if (DIM == 2)
                shape_sincos_turn(lw[e], &cs[lcap + e], &cs[e]);
        }
    const int nent = live ? n + total : 0;
    const int nd = live ? n : 1; /* a team without a cell draws for one particle, and drops it */
    __syncwarp();
    /* The moves, in step on the whole warp: move s of every team at once, and each round as long
     * as the longest of the warp's teams needs it, a team that is done (or has no cell) taking
     * part with its lanes idle. The lanes of the teams then meet at the same instructions, the
     * XenoCollide calls above all, instead of each team running on its own. */
    bool moved = false;
    shape_draw mine = {0, 0, {0.0f, 0.0f, 0.0f}, 0u};
    for (int s = 0; s < mv.moves; s++) {
        if (s % T == 0 && s + tl < mv.moves)
            mine = shape_move_draw(DIM, nd, &mv, seed, step, (uint32_t)c, s + tl);
        const int src = lead + s % T;
        const int ir = __shfl_sync(SHAPE_FULL_WARP, mine.i | mine.rotation << 16, src);
        float u[3];
        for (int a = 0; a < 3; a++)
            u[a] = __shfl_sync(SHAPE_FULL_WARP, mine.u[a], src);
        const uint32_t turn = DIM == 2 ? __shfl_sync(SHAPE_FULL_WARP, mine.turn, src) : 0u;
        const int i = ir & 0xffff, rotation = ir >> 16;
        float tp[3] = {0.0f, 0.0f, 0.0f};
        uint32_t o[4] = {0u, 0u, 0u, 0u};
        bool hit = !live;
        if (live) {
            for (int a = 0; a < DIM; a++)
                tp[a] = lp[a * lcap + i];
            for (int k = 0; k < NW; k++)
                o[k] = lw[k * lcap + i];
        }
        if (rotation) {
            if (DIM == 2) {
                o[0] += turn;
            } else if (live) {
                const uint32_t q[4] = {o[0], o[1], o[2], o[3]};
                shape_quat_turn(q, mv.rotate, u, o);
            }
        } else {
            for (int a = 0; a < DIM; a++) {
                tp[a] = tp[a] + carlo_cell_quantize(&g, mv.delta * u[a]);
                hit |= !(tp[a] >= 0.0f && tp[a] < g.w[a]); /* a move that leaves: rejected */
            }
        }
        double rs = 0.0, rc = 1.0; /* 2D: the trial's sine and cosine */
        if (DIM == 2) {
            if (rotation) {
                shape_sincos_turn(o[0], &rs, &rc);
            } else if (live) {
                rs = cs[lcap + i];
                rc = cs[i];
            }
        } else if (live && tl == 0) {
            shape_rot rt;
            shape_rot_of(3, o, &rt);
            *trot = rt;
        }
        /* round 1: the bounds of every entry; undecided pairs into cand */
        int ncand = 0;
        for (int b0 = 0; __any_sync(SHAPE_FULL_WARP, !hit && b0 < nent); b0 += T) {
            const bool go = !hit && b0 < nent;
            const int e = b0 + tl;
            int pre = 0;
            if (go && e < nent && e != i) {
                double d[3] = {0.0, 0.0, 0.0};
                for (int a = 0; a < DIM; a++)
                    d[a] = (double)(lp[a * lcap + e] - tp[a]);
                if (mv.skew)
                    shape_skew_vector(mv.tilt, d);
                pre = shape_overlap_bounds(&sh, &sh, d);
            }
            const unsigned over = __ballot_sync(SHAPE_FULL_WARP, pre == 1) & team_bits;
            const unsigned und = __ballot_sync(SHAPE_FULL_WARP, pre < 0) & team_bits;
            if (pre < 0)
                cand[ncand + __popc(und & below)] = e;
            ncand += __popc(und);
            hit = hit || over != 0;
        }
        __syncwarp();
        /* round 2: XenoCollide on the undecided pairs, lane l taking pairs l, l + T, ...: one
         * support point a pass for every lane with a pair under way, a lane that ends one
         * starting its next in the next pass, until a lane of the team finds an overlap or the
         * pairs run out (every lane of the warp making the same passes) */
        int k = tl;
        bool busy = false, h = false;
        shape_pair pp;
        shape_mpr mp;
        while (__any_sync(SHAPE_FULL_WARP, !hit && (busy || k < ncand))) {
            if (!hit && !busy && k < ncand) {
                const int e = cand[k];
                double d[3] = {0.0, 0.0, 0.0};
                for (int a = 0; a < DIM; a++)
                    d[a] = (double)(lp[a * lcap + e] - tp[a]);
                if (mv.skew)
                    shape_skew_vector(mv.tilt, d);
                shape_rot rj;
                if (DIM == 2) {
                    shape_rot rt;
                    shape_rot_2d(rs, rc, &rt);
                    shape_rot_2d(cs[lcap + e], cs[e], &rj);
                    shape_pair_make(DIM, &sh, &rt, &sh, &rj, d, &pp);
                } else {
                    const uint32_t w[4] = {lw[e], lw[lcap + e], lw[2 * lcap + e], lw[3 * lcap + e]};
                    shape_rot_of(3, w, &rj);
                    shape_pair_make(DIM, &sh, trot, &sh, &rj, d, &pp);
                }
                k += T;
                const int r = shape_mpr_start(&pp, &mp);
                busy = r < 0;
                h = r > 0;
            }
            if (!hit && busy) {
                double sp[3];
                shape_pair_support(&pp, mp.n, sp);
                const int r = shape_mpr_step(&pp, &mp, sp);
                busy = r < 0;
                h = r > 0;
            }
            const unsigned found = __ballot_sync(SHAPE_FULL_WARP, h) & team_bits; /* every lane votes */
            hit = hit || found != 0;
        }
        if (live && tl == 0) { /* tried, accepted: translations, rotations (constant indices: registers) */
            if (rotation) {
                cnt[2]++;
                cnt[3] += !hit;
            } else {
                cnt[0]++;
                cnt[1] += !hit;
            }
        }
        if (!hit) { /* live */
            moved = true;
            if (tl == 0) {
                for (int a = 0; a < DIM; a++)
                    lp[a * lcap + i] = tp[a];
                for (int k = 0; k < NW; k++)
                    lw[k * lcap + i] = o[k];
                if (DIM == 2) {
                    cs[i] = rc;
                    cs[lcap + i] = rs;
                }
            }
        }
        __syncwarp();
    }
    if (moved)
        for (int e = tl; e < n; e += T) {
            for (int a = 0; a < DIM; a++)
                pos[carlo_cell_slot(&g, c, e, a)] = lp[a * lcap + e];
            for (int k = 0; k < NW; k++)
                aux[carlo_cell_slot(&g, c, e, 1 + k)] = lw[k * lcap + e];
        }
    if (n < 0 && tl == 0) /* the list overflowed: the one-thread update, in overflow_kernel */
        ovf[atomicAdd(novf, 1u)] = (uint32_t)t;
    __syncwarp(); /* every lane of the warp, whatever its team did */
    for (int a = 0; a < 4; a++)
        shape_warp_add(&ctr_n[a], cnt[a]);
}

#endif
