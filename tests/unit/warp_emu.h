/* warp_emu.h — GPU kernels compiled by the host C++ compiler and run on the CPU lane by lane
 * (tests/unit/kmc_warp.cc, shape_warp.cc): every lane of a warp is a fiber (ucontext), and every
 * warp intrinsic a kernel uses (__syncwarp, __shfl_sync, __shfl_up_sync, __shfl_down_sync,
 * __ballot_sync, __any_sync, __reduce_min_sync) is a meeting point of the lanes its mask names.
 * A meeting completes once every lane of the mask has arrived with the same mask at the same
 * call; a lane that meets with a mask not naming itself, lanes of one mask at different calls,
 * or lanes waiting for one another (or for a lane that has ended) are failures: on the GPU
 * each is undefined (garbage shuffles, "illegal instruction"). A lane that reads a lane outside
 * the mask gets a poisoned word. A block's shared memory is its exact allocation, garbage
 * inside, between guard words that must stay intact. Include it before the kernel's header;
 * emu_launch runs a grid, one warp after the other (the kernels never synchronise a block). */
#ifndef CARLO_TESTS_WARP_EMU_H
#define CARLO_TESTS_WARP_EMU_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ucontext.h>

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

static emu_dim threadIdx, blockIdx, blockDim, gridDim;

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

__attribute__((format(printf, 1, 2))) static inline void emu_failed(const char *fmt, ...)
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
static inline void emu_meet(unsigned mask, unsigned long long v, unsigned site)
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

static inline void emu_syncwarp(unsigned site, emu_mask mask) { emu_meet(mask.m, 0, site); }

template <class T> static inline unsigned long long emu_word(T v)
{
    unsigned long long u = 0;
    memcpy(&u, &v, sizeof v);
    return u;
}

template <class T> static inline T emu_value(unsigned long long u)
{
    T r;
    memcpy(&r, &u, sizeof r);
    return r;
}

template <class T> static inline T emu_shfl(unsigned site, unsigned mask, T v, int src, int width = 32)
{
    emu_meet(mask, emu_word(v), site);
    const int from = (emu_lane & ~(width - 1)) + (src & (width - 1));
    return emu_value<T>(W.got[emu_lane][from]);
}

template <class T> static inline T emu_shfl_up(unsigned site, unsigned mask, T v, unsigned d, int width = 32)
{
    emu_meet(mask, emu_word(v), site);
    const int from = (emu_lane & (width - 1)) >= (int)d ? emu_lane - (int)d : emu_lane;
    return emu_value<T>(W.got[emu_lane][from]);
}

template <class T> static inline T emu_shfl_down(unsigned site, unsigned mask, T v, unsigned d, int width = 32)
{
    emu_meet(mask, emu_word(v), site);
    const int from = (emu_lane & (width - 1)) + (int)d < width ? emu_lane + (int)d : emu_lane;
    return emu_value<T>(W.got[emu_lane][from]);
}

static inline unsigned emu_ballot(unsigned site, unsigned mask, int pred)
{
    emu_meet(mask, pred != 0, site);
    unsigned bits = 0;
    for (int l = 0; l < 32; l++)
        if (mask >> l & 1u)
            bits |= (unsigned)(W.got[emu_lane][l] & 1u) << l;
    return bits;
}

static inline int emu_any(unsigned site, unsigned mask, int pred)
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

static inline int __popc(unsigned x) { return __builtin_popcount(x); }

static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v)
{
    const unsigned long long o = *p;
    *p = o + v;
    return o;
}

static inline unsigned atomicAdd(unsigned *p, unsigned v)
{
    const unsigned o = *p;
    *p = o + v;
    return o;
}

static inline unsigned emu_reduce_min(unsigned site, unsigned mask, unsigned v)
{
    emu_meet(mask, v, site);
    unsigned m = 0xffffffffu;
    for (int l = 0; l < 32; l++)
        if (mask >> l & 1u && (unsigned)W.got[emu_lane][l] < m)
            m = (unsigned)W.got[emu_lane][l];
    return m;
}

#define __reduce_min_sync(...) emu_reduce_min(__LINE__, __VA_ARGS__)

static inline int __ffs(int x) { return ffs(x); }

static inline long long __double_as_longlong(double d)
{
    long long b;
    memcpy(&b, &d, sizeof b);
    return b;
}

static inline double __longlong_as_double(long long b)
{
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

static inline void lane_main(int l)
{
    W.body(W.ctx);
    W.finished[l] = 1;
}

static inline void emu_prepare_lane(int l)
{
    W.finished[l] = 0;
    W.waiting[l] = 0;
    getcontext(&W.lane[l]);
    W.lane[l].uc_stack.ss_sp = W.stack[l];
    W.lane[l].uc_stack.ss_size = LANE_STACK;
    W.lane[l].uc_link = &W.sched;
    makecontext(&W.lane[l], (void (*)())lane_main, 1, l);
}

static inline void emu_resume(int l)
{
    emu_lane = l;
    threadIdx = {W.first_thread + (unsigned)l, 0, 0};
    swapcontext(&W.sched, &W.lane[l]);
}

/* One warp (block b, warp w of it) to the end: runs every lane that can run, completes every
 * meeting whose lanes have all arrived, until all have ended or none can go on. */
static inline void emu_run_warp(unsigned b, unsigned w)
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
static inline int emu_launch(unsigned blocks, unsigned threads, size_t smem, void (*body)(void *), void *ctx)
{
    blockDim = {threads, 1, 1};
    gridDim = {blocks, 1, 1};
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

#endif
