/* unit/shape/warp — the hard shapes' team kernel (cuda/shape_team.cuh), compiled here by the host
 * C++ compiler and run on the CPU lane by lane: every lane of a warp is a fiber (ucontext) and
 * every warp intrinsic the kernel uses (__syncwarp, __shfl_sync, __shfl_up_sync,
 * __shfl_down_sync, __ballot_sync, __any_sync) is a meeting point of the lanes its mask names.
 * A meeting completes once every lane of the mask has arrived with the same mask at the same
 * call; a lane that meets with a mask not naming itself, lanes of one mask at different calls,
 * or lanes waiting for one another (or for a lane that has ended) are failures: on the GPU
 * each is undefined (garbage shuffles, "illegal instruction"). A lane that reads a lane outside
 * the mask gets a poisoned word. The team's shared memory is the block's exact allocation
 * between guard words that must stay intact. For teams of 2, 4 and 8 lanes (and a list too
 * short for some cells), every sub-sweep must leave the cells and the move counts exactly as
 * shape_cell_update does. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

extern "C" {
#include "core/error.h"
#include "shape/shape.h"
}
#include "check.h"

/* ---------- a warp of fibers ---------- */

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __grid_constant__
#define __launch_bounds__(...)

struct emu_dim {
    unsigned x, y, z;
};

static emu_dim threadIdx, blockIdx, blockDim;

enum { LANE_STACK = 1 << 18, GUARD = 512 };

static const unsigned long long POISON = 0x7fcfffff7fcfffffull;

struct emu_warp {
    ucontext_t sched, lane[32];
    char *stack[32];
    int finished[32], waiting[32];
    unsigned mask[32];
    unsigned site[32]; /* the line of the call */
    unsigned long long slot[32], got[32][32];
    double *smem;
    unsigned first_thread;
    void (*body)(void *);
    void *ctx;
    const char *fail; /* the first failure seen */
    char why[256];
};

static emu_warp W;
static volatile int emu_lane;

__attribute__((format(printf, 1, 2))) static void emu_failed(const char *fmt, ...)
{
    if (W.fail)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(W.why, sizeof W.why, fmt, ap);
    va_end(ap);
    W.fail = W.why;
}

/* Lane emu_lane gives v at a meeting of mask, called from site; back once the meeting is
 * complete, the words of the lanes of the mask in W.got[lane]. */
static void emu_meet(unsigned mask, unsigned long long v, unsigned site)
{
    const int l = emu_lane;
    if (!(mask >> l & 1u))
        emu_failed("lane %u meets with mask %08x that does not name it (thread %u)", (unsigned)l, mask,
                   W.first_thread + (unsigned)l);
    W.slot[l] = v;
    W.mask[l] = mask;
    W.site[l] = site;
    W.waiting[l] = 1;
    swapcontext(&W.lane[l], &W.sched);
    threadIdx = {W.first_thread + (unsigned)emu_lane, 0, 0};
}

struct emu_mask { /* __syncwarp's mask, the whole warp when not given */
    unsigned m = 0xffffffffu;
    emu_mask() {}
    emu_mask(unsigned x) : m(x) {}
};

static void emu_syncwarp(unsigned site, emu_mask mask) { emu_meet(mask.m, 0, site); }

template <class T> static unsigned long long emu_word(T v)
{
    unsigned long long u = 0;
    memcpy(&u, &v, sizeof v);
    return u;
}

template <class T> static T emu_value(unsigned long long u)
{
    T r;
    memcpy(&r, &u, sizeof r);
    return r;
}

template <class T> static T emu_shfl(unsigned site, unsigned mask, T v, int src, int width = 32)
{
    emu_meet(mask, emu_word(v), site);
    const int from = (emu_lane & ~(width - 1)) + (src & (width - 1));
    return emu_value<T>(W.got[emu_lane][from]);
}

template <class T> static T emu_shfl_up(unsigned site, unsigned mask, T v, unsigned d, int width = 32)
{
    emu_meet(mask, emu_word(v), site);
    const int from = (emu_lane & (width - 1)) >= (int)d ? emu_lane - (int)d : emu_lane;
    return emu_value<T>(W.got[emu_lane][from]);
}

template <class T> static T emu_shfl_down(unsigned site, unsigned mask, T v, unsigned d, int width = 32)
{
    emu_meet(mask, emu_word(v), site);
    const int from = (emu_lane & (width - 1)) + (int)d < width ? emu_lane + (int)d : emu_lane;
    return emu_value<T>(W.got[emu_lane][from]);
}

static unsigned emu_ballot(unsigned site, unsigned mask, int pred)
{
    emu_meet(mask, pred != 0, site);
    unsigned bits = 0;
    for (int l = 0; l < 32; l++)
        if (mask >> l & 1u)
            bits |= (unsigned)(W.got[emu_lane][l] & 1u) << l;
    return bits;
}

__attribute__((unused)) static int emu_any(unsigned site, unsigned mask, int pred)
{
    return emu_ballot(site, mask, pred) != 0;
}

/* the intrinsics, each meeting named by the line of its call */
#define __syncwarp(...) emu_syncwarp(__LINE__, emu_mask{__VA_ARGS__})
#define __shfl_sync(...) emu_shfl(__LINE__, __VA_ARGS__)
#define __shfl_up_sync(...) emu_shfl_up(__LINE__, __VA_ARGS__)
#define __shfl_down_sync(...) emu_shfl_down(__LINE__, __VA_ARGS__)
#define __ballot_sync(...) emu_ballot(__LINE__, __VA_ARGS__)
#define __any_sync(...) emu_any(__LINE__, __VA_ARGS__)

static int __popc(unsigned x) { return __builtin_popcount(x); }

static unsigned long long atomicAdd(unsigned long long *p, unsigned long long v)
{
    const unsigned long long o = *p;
    *p = o + v;
    return o;
}

static unsigned atomicAdd(unsigned *p, unsigned v)
{
    const unsigned o = *p;
    *p = o + v;
    return o;
}

#define SHAPE_SHARED_DOUBLES(name) double *name = W.smem
#include "shape_team.cuh"

static void lane_main(int l)
{
    W.body(W.ctx);
    W.finished[l] = 1;
}

static void emu_prepare_lane(int l)
{
    W.finished[l] = 0;
    W.waiting[l] = 0;
    getcontext(&W.lane[l]);
    W.lane[l].uc_stack.ss_sp = W.stack[l];
    W.lane[l].uc_stack.ss_size = LANE_STACK;
    W.lane[l].uc_link = &W.sched;
    makecontext(&W.lane[l], (void (*)())lane_main, 1, l);
}

static void emu_resume(int l)
{
    emu_lane = l;
    threadIdx = {W.first_thread + (unsigned)l, 0, 0};
    swapcontext(&W.sched, &W.lane[l]);
}

/* One warp (block b, warp w of it) to the end: runs every lane that can run, completes every
 * meeting whose lanes have all arrived, until all have ended or none can go on. */
static void emu_run_warp(unsigned b, unsigned w)
{
    W.first_thread = w * 32;
    blockIdx = {b, 0, 0};
    for (int l = 0; l < 32; l++)
        emu_prepare_lane(l);
    for (;;) {
        for (int l = 0; l < 32; l++)
            if (!W.finished[l] && !W.waiting[l])
                emu_resume(l);
        int done = 0, progress = 0;
        for (int l = 0; l < 32; l++)
            done += W.finished[l];
        if (done == 32)
            return;
        for (int l = 0; l < 32; l++) {
            if (!W.waiting[l])
                continue;
            const unsigned m = W.mask[l];
            int ready = 1;
            for (int j = 0; j < 32 && ready; j++)
                if (m >> j & 1u)
                    ready = W.waiting[j] && W.mask[j] == m;
            if (!ready)
                continue;
            for (int j = 0; j < 32; j++)
                if (m >> j & 1u && W.site[j] != W.site[l])
                    emu_failed("lanes %d and %d meet at different warp intrinsics (kernel lines %u and %u)", l, j,
                               W.site[l], W.site[j]);
            if (W.fail)
                return;
            for (int j = 0; j < 32; j++) {
                if (!(m >> j & 1u))
                    continue;
                for (int k = 0; k < 32; k++)
                    W.got[j][k] = m >> k & 1u ? W.slot[k] : POISON;
                W.waiting[j] = 0;
            }
            progress = 1;
        }
        if (!progress) { /* lanes waiting for lanes that wait elsewhere, or that have ended */
            for (int l = 0; l < 32; l++)
                if (W.waiting[l]) {
                    for (int j = 0; j < 32; j++)
                        if (W.mask[l] >> j & 1u && !W.waiting[j])
                            emu_failed("lane %u waits (mask %08x) for lane %u, which has ended", (unsigned)l,
                                       W.mask[l], (unsigned)j);
                    emu_failed("lane %u waits with mask %08x for lanes at another meeting (warp %u)", (unsigned)l,
                               W.mask[l], w);
                }
            return; /* the warp is stuck: a failure */
        }
    }
}

/* body(ctx) on every thread of a grid, one warp after the other; shared memory: the block's,
 * between guard words. Returns 0 when every warp ran clean. */
static int emu_launch(unsigned blocks, unsigned threads, size_t smem, void (*body)(void *), void *ctx)
{
    blockDim = {threads, 1, 1};
    const size_t nd = (smem + 7) / 8;
    double *mem = static_cast<double *>(malloc((nd + 2 * GUARD) * sizeof(double)));
    for (int l = 0; l < 32; l++)
        if (!W.stack[l])
            W.stack[l] = static_cast<char *>(malloc(LANE_STACK));
    W.body = body;
    W.ctx = ctx;
    W.fail = NULL;
    for (unsigned b = 0; b < blocks && !W.fail; b++) {
        for (size_t k = 0; k < nd + 2 * GUARD; k++)
            mem[k] = k < GUARD || k >= GUARD + nd ? -1.0e300 : 1.0e300; /* guards; garbage inside */
        W.smem = mem + GUARD;
        for (unsigned w = 0; w < threads / 32 && !W.fail; w++)
            emu_run_warp(b, w);
        for (size_t k = 0; k < GUARD && !W.fail; k++)
            if (mem[k] != -1.0e300 || mem[GUARD + nd + k] != -1.0e300)
                emu_failed("block %u wrote shared memory out of its %u bytes (guard word %u)", b, (unsigned)smem,
                           (unsigned)k);
    }
    free(mem);
    return W.fail ? -1 : 0;
}

/* ---------- the kernel's launch, as cuda/shape.cu makes it ---------- */

struct team_args {
    const shape_system *s;
    carlo_cell_data *d;
    int set, team, lcap;
    uint64_t step;
    uint32_t *ovf;
    unsigned long long *n;
    unsigned *novf;
};

template <int DIM, int T> static void team_body(void *p)
{
    const team_args *a = static_cast<const team_args *>(p);
    shape_team_kernel<DIM, T, 1>(a->s->shape, a->s->grid, a->d->pos, a->d->aux, a->d->count, a->set, a->s->mv,
                                 a->s->seed, a->step, a->lcap, a->ovf, a->n, a->novf);
}

static int team_list(const shape_system *s)
{
    const carlo_cell_grid &g = s->grid;
    const int around = g.dim == 2 ? 9 : 27;
    const double want = ceil(1.5 * around * (double)s->N / (double)g.ncells) + 16.0;
    double cap = fmin(want, (double)around * (double)g.nmax);
    cap = fmin(cap, (double)SHAPE_LIST_MAX);
    return cap < 1.0 ? 1 : (int)cap;
}

/* One sub-sweep of set `set` on d by the team kernel (teams of T lanes, lists of lcap entries),
 * then the one-thread update of the cells it handed over, as overflow_kernel does. */
static int team_subsweep(const shape_system *s, carlo_cell_data *d, int set, uint64_t step, int T, int lcap,
                         uint64_t cnt[4], int *overflows)
{
    const int64_t nset = carlo_cell_set_size(&s->grid);
    uint32_t *ovf = static_cast<uint32_t *>(calloc((size_t)nset + 1, sizeof(uint32_t)));
    unsigned long long n[4] = {0, 0, 0, 0};
    unsigned novf = 0;
    team_args a = {s, d, set, T, lcap, step, ovf, n, &novf};
    void (*body)(void *) = s->dim == 2 ? (T == 2 ? team_body<2, 2> : T == 4 ? team_body<2, 4> : team_body<2, 8>)
                                       : (T == 2 ? team_body<3, 2> : T == 4 ? team_body<3, 4> : team_body<3, 8>);
    const unsigned blocks = (unsigned)((nset + SHAPE_TEAMS - 1) / SHAPE_TEAMS);
    const int rc = emu_launch(blocks, SHAPE_TEAMS * (unsigned)T, (size_t)SHAPE_TEAMS * SHAPE_ENTRY_BYTES * (size_t)lcap,
                              body, &a);
    for (unsigned k = 0; rc == 0 && k < novf; k++) {
        int xyz[3];
        carlo_cell_active(&s->grid, set, ovf[k], xyz);
        uint64_t c[4] = {0, 0, 0, 0};
        shape_cell_update(&s->shape, &s->grid, d->pos, d->aux, d->count, xyz, s->mv, s->seed, step, c);
        for (int q = 0; q < 4; q++)
            n[q] += c[q];
    }
    for (int q = 0; q < 4; q++)
        cnt[q] += n[q];
    *overflows += (int)novf;
    free(ovf);
    return rc;
}

static int copy_cells(const carlo_cell_grid *g, const carlo_cell_data *from, carlo_cell_data *to)
{
    if (carlo_cell_data_alloc(g, to))
        return -1;
    const size_t slots = (size_t)g->nmax * (size_t)g->ncells;
    memcpy(to->pos, from->pos, (size_t)g->dim * slots * sizeof(float));
    memcpy(to->aux, from->aux, (size_t)g->naux * slots * sizeof(uint32_t));
    memcpy(to->count, from->count, (size_t)g->ncells * sizeof(uint32_t));
    return 0;
}

static int same_cells(const carlo_cell_grid *g, const carlo_cell_data *a, const carlo_cell_data *b)
{
    const size_t slots = (size_t)g->nmax * (size_t)g->ncells;
    return memcmp(a->pos, b->pos, (size_t)g->dim * slots * sizeof(float)) == 0 &&
           memcmp(a->aux, b->aux, (size_t)g->naux * slots * sizeof(uint32_t)) == 0;
}

/* rounds sub-sweeps of s, each played by shape_cell_update and by the team kernel with teams of
 * 2, 4 and 8 lanes on copies of its cells, the system swept between them; lcap 0: the kernel's
 * own size of list. */
static void run(const char *name, shape_system *s, int rounds, int lcap)
{
    char label[96];
    if (!s) {
        printf("FAIL unit/shape/warp_%s: %s\n", name, carlo_errmsg());
        return;
    }
    const int teams[3] = {2, 4, 8};
    for (int k = 0; k < 3; k++) {
        const int T = teams[k];
        int ok = 1, overflows = 0, r = 0;
        uint64_t tried = 0, accepted = 0;
        const char *why = "";
        for (r = 0; r < rounds && ok; r++) {
            const carlo_cell_grid *g = &s->grid;
            const int cap = lcap ? lcap : team_list(s);
            carlo_cell_data a, b;
            memset(&a, 0, sizeof a);
            memset(&b, 0, sizeof b);
            ok = copy_cells(g, &s->cur, &a) == 0 && copy_cells(g, &s->cur, &b) == 0;
            const int set = (r + k) % (1 << g->dim);
            const uint64_t step = s->substeps + 1000 + (uint64_t)r;
            uint64_t ca[4] = {0, 0, 0, 0}, cb[4] = {0, 0, 0, 0};
            for (int64_t t = 0; ok && t < carlo_cell_set_size(g); t++) {
                int xyz[3];
                carlo_cell_active(g, set, t, xyz);
                shape_cell_update(&s->shape, g, a.pos, a.aux, a.count, xyz, s->mv, s->seed, step, ca);
            }
            if (ok && team_subsweep(s, &b, set, step, T, cap, cb, &overflows)) {
                ok = 0;
                why = W.fail;
            }
            if (ok && !(same_cells(g, &a, &b) && memcmp(ca, cb, sizeof ca) == 0)) {
                ok = 0;
                why = "cells or counts differ";
            }
            tried += ca[0] + ca[2];
            accepted += ca[1] + ca[3];
            carlo_cell_data_free(&a);
            carlo_cell_data_free(&b);
            if (ok && shape_sweep(s)) {
                ok = 0;
                why = carlo_errmsg();
            }
        }
        snprintf(label, sizeof label, "unit/shape/warp_%s_team%d", name, T);
        CHECK(label, ok && accepted > 0 && accepted < tried && (lcap == 0 || overflows > 0),
              "sub-sweep %d: %s (accepted %llu of %llu, %d overflows)", r, why, (unsigned long long)accepted,
              (unsigned long long)tried, overflows);
    }
    shape_destroy(s);
}

static shape_system *make(int dim, const shape_def *sd, double v1, int64_t N, double phi, const double *L,
                          const double tilt[3], shape_init init, uint64_t seed, int moves)
{
    shape_params p;
    memset(&p, 0, sizeof p);
    p.shape = sd;
    p.volume1 = v1;
    p.what = dim == 2 ? "polygons" : "polyhedra";
    p.N = N;
    if (L) {
        p.box = carlo_box_make(dim, L);
        p.box.xy = tilt[0];
        p.box.xz = tilt[1];
        p.box.yz = tilt[2];
    } else {
        shape_lattice_box(dim, N, v1, phi, &p.box);
    }
    p.seed = seed;
    p.init = init;
    p.delta = 0.1;
    p.rotate = 0.3;
    p.moves_per_cell = moves;
    return shape_create(&p);
}

int main(void)
{
    double pent[15], cube[24];
    for (int k = 0; k < 5; k++) {
        pent[3 * k] = cos(2 * 3.141592653589793 * k / 5);
        pent[3 * k + 1] = sin(2 * 3.141592653589793 * k / 5);
        pent[3 * k + 2] = 0;
    }
    for (int k = 0; k < 8; k++)
        for (int a = 0; a < 3; a++)
            cube[3 * k + a] = (k >> a & 1) ? 0.5 : -0.5;
    const double zero[3] = {0, 0, 0};
    shape_def sd;
    double v1;
    if (shape_make_poly(&sd, 2, 5, pent, 0, &v1, NULL) == 0) {
        run("pentagons_dense", make(2, &sd, v1, 900, 0.68, NULL, zero, SHAPE_INIT_LATTICE, 1, 4), 4, 0);
        run("pentagons_dilute", make(2, &sd, v1, 300, 0.3, NULL, zero, SHAPE_INIT_RANDOM, 2, 7), 3, 0);
        run("pentagons_short_list", make(2, &sd, v1, 900, 0.68, NULL, zero, SHAPE_INIT_LATTICE, 3, 4), 2, 8);
        const double L[3] = {40, 38, 0}, tilt[3] = {0.37, 0, 0};
        run("pentagons_tilted", make(2, &sd, v1, 250, 0, L, tilt, SHAPE_INIT_RANDOM, 4, 4), 3, 0);
    }
    if (shape_make_poly(&sd, 3, 8, cube, 0, &v1, NULL) == 0) {
        run("cubes", make(3, &sd, v1, 216, 0.5, NULL, zero, SHAPE_INIT_LATTICE, 5, 6), 3, 0);
        const double L[3] = {9, 9.5, 10}, tilt[3] = {0.2, -0.3, 0.45};
        run("cubes_tilted", make(3, &sd, v1, 160, 0, L, tilt, SHAPE_INIT_RANDOM, 6, 5), 2, 0);
    }
    double dod[60]; /* the dodecahedron: the cube's corners and (0, +-1/f, +-f) cyclically */
    const double f = (1.0 + sqrt(5.0)) / 2.0;
    for (int k = 0; k < 8; k++)
        for (int a = 0; a < 3; a++)
            dod[3 * k + a] = (k >> a & 1) ? 1.0 : -1.0;
    for (int k = 0; k < 12; k++) {
        const int axis = k / 4;
        double *v = dod + 3 * (8 + k);
        v[axis] = 0.0;
        v[(axis + 1) % 3] = ((k & 1) ? 1.0 : -1.0) / f;
        v[(axis + 2) % 3] = ((k & 2) ? 1.0 : -1.0) * f;
    }
    if (shape_make_poly(&sd, 3, 20, dod, 0, &v1, NULL) == 0)
        run("dodecahedra", make(3, &sd, v1, 250, 0.45, NULL, zero, SHAPE_INIT_BCC, 8, 4), 2, 0);
    const double axes[3] = {1.0, 0.6, 0.4};
    if (shape_make_ellipsoid(&sd, 3, axes, &v1) == 0)
        run("ellipsoids_short_list", make(3, &sd, v1, 300, 0.3, NULL, zero, SHAPE_INIT_RANDOM, 7, 4), 2, 20);
    return check_failed;
}
