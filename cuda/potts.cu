/* potts.cu — the CUDA backend of the Potts model: the packed checkerboard of
 * src/potts/potts_kernel.h, W sites of one colour per thread (one 16-byte vector when L/2
 * allows), one Philox draw per pair of sites, observables from exact integer counts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "core/error.h"
#include "potts/potts.h"
}
#include "check.h"

namespace {

struct gpu_impl {
    uint8_t *lattice;             /* R x 2 colours x L x L/2, as on the CPU */
    potts_rates *rates;           /* R */
    unsigned long long *counts;   /* R x (1 + q): equal bonds, then the population of each state */
    uint64_t rates_uploaded;      /* s->rates_version last copied */
    uint8_t *host;                /* staging for lattice transfers (2 planes) */
    /* trajectory frames taken while the sweeps go on (gpu_lattices_start), made on first use */
    uint8_t *snap;                /* device: every replica row-major, R x L x L */
    uint8_t *pinned;              /* host, page-locked: the same, copied on copy_stream */
    cudaStream_t copy_stream;     /* non-blocking: runs beside the sweeps */
    cudaEvent_t unpacked, copied;
    int async_state;              /* 0 not tried, 1 ready, -1 unavailable (memory) */
    int in_flight;                /* a copy has been started and not fetched */
};

template <int W> struct vec;
template <> struct vec<16> { typedef uint4 type; };
template <> struct vec<8> { typedef uint2 type; };
template <> struct vec<4> { typedef unsigned int type; };
template <> struct vec<2> { typedef unsigned short type; };
template <> struct vec<1> { typedef unsigned char type; };

template <int W> union bytes {
    typename vec<W>::type v;
    uint8_t b[W];
};

template <int W> __device__ __forceinline__ bytes<W> load(const uint8_t *p)
{
    bytes<W> x;
    x.v = __ldg(reinterpret_cast<const typename vec<W>::type *>(p));
    return x;
}

template <> __device__ __forceinline__ bytes<1> load<1>(const uint8_t *p)
{
    bytes<1> x;
    x.b[0] = __ldg(p);
    return x;
}

/* One thread: W consecutive elements k0..k0+W-1 of row i, colour c, replica r. The lattice
 * of the other colour is only read, so the sweep needs no synchronisation. */
template <int W, int HEATBATH>
__global__ void __launch_bounds__(256) sweep_kernel(uint8_t *__restrict__ lattice,
                                                    const potts_rates *__restrict__ rates, int L,
                                                    int half, int R, int c, uint32_t q,
                                                    uint64_t seed, uint64_t halfstep)
{
    const int per_row = half / W;
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (int64_t)R * L * per_row)
        return;
    const int kv = (int)(t % per_row);
    const int64_t ri = t / per_row;
    const int i = (int)(ri % L), r = (int)(ri / L);
    const size_t plane = (size_t)L * (size_t)half;
    uint8_t *me = lattice + ((size_t)r * 2 + (size_t)c) * plane + (size_t)i * half;
    const uint8_t *other = lattice + ((size_t)r * 2 + (size_t)(1 - c)) * plane;
    const int k0 = kv * W;
    const int up = i == 0 ? L - 1 : i - 1, down = i == L - 1 ? 0 : i + 1;
    const bool odd = (i + c) & 1; /* this row's sites of colour c sit at odd columns */

    const uint8_t *orow = other + (size_t)i * half;
    const uint8_t extra = __ldg(orow + (odd ? (k0 + W == half ? 0 : k0 + W)
                                            : (k0 == 0 ? half - 1 : k0 - 1)));
    const potts_rates *rt = rates + r;
    const uint32_t idx0 = (uint32_t)((size_t)i * half + k0); /* even whenever W > 1 */
    bytes<W> self = load<W>(me + k0);
    const bytes<W> nu = load<W>(other + (size_t)up * half + k0);
    const bytes<W> nd = load<W>(other + (size_t)down * half + k0);
    const bytes<W> same = load<W>(orow + k0);

    if (!HEATBATH && W >= 4) {
        /* four sites per word: see potts_metropolis4 */
        constexpr int NW = W >= 4 ? W / 4 : 1;
        uint32_t sw[NW], uw[NW], dw[NW], mw[NW];
        memcpy(sw, self.b, sizeof sw);
        memcpy(uw, nu.b, sizeof uw);
        memcpy(dw, nd.b, sizeof dw);
        memcpy(mw, same.b, sizeof mw);
#pragma unroll
        for (int g = 0; g < NW; g++) {
            uint32_t lw, rw;
            if (odd) {
                lw = mw[g];
                rw = __funnelshift_r(mw[g], g + 1 < NW ? mw[g + 1 < NW ? g + 1 : 0] : extra, 8);
            } else {
                rw = mw[g];
                lw = __funnelshift_l(g > 0 ? mw[g > 0 ? g - 1 : 0] : (uint32_t)extra << 24, mw[g], 8);
            }
            const uint32_t pair = (idx0 >> 1) + 2 * g;
            const carlo_u32x4 a = potts_pair_draw(seed, halfstep, pair, (uint32_t)r);
            const carlo_u32x4 b = potts_pair_draw(seed, halfstep, pair + 1, (uint32_t)r);
            const uint32_t r0[4] = {a.v[0], a.v[2], b.v[0], b.v[2]};
            const uint32_t r1[4] = {a.v[1], a.v[3], b.v[1], b.v[3]};
            sw[g] = potts_metropolis4(sw[g], uw[g], dw[g], lw, rw, r0, r1, rt, q, seed, halfstep,
                                      idx0 + 4 * g, (uint32_t)r);
        }
        memcpy(self.b, sw, sizeof sw);
    } else {
        carlo_u32x4 d = potts_pair_draw(seed, halfstep, idx0 >> 1, (uint32_t)r);
#pragma unroll
        for (int j = 0; j < W; j++) {
            const uint32_t idx = idx0 + j;
            /* for W > 1 the parity of idx is that of j, known at compile time */
            const uint32_t odd_site = W > 1 ? (uint32_t)(j & 1) : (idx & 1);
            if (W > 1 && j > 0 && odd_site == 0)
                d = potts_pair_draw(seed, halfstep, idx >> 1, (uint32_t)r);
            const uint32_t r0 = odd_site ? d.v[2] : d.v[0], r1 = odd_site ? d.v[3] : d.v[1];
            uint8_t nb[4];
            nb[0] = nu.b[j];
            nb[1] = nd.b[j];
            if (odd) {
                nb[2] = same.b[j];
                nb[3] = j + 1 < W ? same.b[j + 1 < W ? j + 1 : 0] : extra;
            } else {
                nb[2] = j > 0 ? same.b[j > 0 ? j - 1 : 0] : extra;
                nb[3] = same.b[j];
            }
            self.b[j] = (uint8_t)potts_update_site(self.b[j], nb, r0, r1, rt, q, HEATBATH, seed,
                                                   halfstep, idx, (uint32_t)r);
        }
    }
    if (W == 1)
        me[k0] = self.b[0];
    else
        *reinterpret_cast<typename vec<W>::type *>(me + k0) = self.v;
}

/* Equal bonds (each colour-0 site against its four neighbours counts every bond once) and
 * the population of each state, per replica (blockIdx.y). */
__global__ void __launch_bounds__(256) observe_kernel(const uint8_t *__restrict__ lattice, int L,
                                                      int half, int q,
                                                      unsigned long long *__restrict__ counts)
{
    __shared__ unsigned int hist[POTTS_Q_MAX + 1];
    for (int v = threadIdx.x; v < q; v += blockDim.x)
        hist[v] = 0;
    __syncthreads();
    const int r = blockIdx.y;
    const size_t plane = (size_t)L * (size_t)half;
    const uint8_t *c0 = lattice + (size_t)r * 2 * plane, *c1 = c0 + plane;
    unsigned long long equal = 0;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < plane;
         e += (size_t)gridDim.x * blockDim.x) {
        const int i = (int)(e / half), k = (int)(e % half);
        uint8_t nb[4];
        potts_neighbours(c1, L, half, i, k, 0, nb);
        const uint8_t a = c0[e];
        equal += (nb[0] == a) + (nb[1] == a) + (nb[2] == a) + (nb[3] == a);
        atomicAdd(&hist[a], 1u);
        atomicAdd(&hist[c1[e]], 1u);
    }
    for (int off = 16; off > 0; off >>= 1)
        equal += __shfl_down_sync(0xffffffffu, equal, off);
    if ((threadIdx.x & 31) == 0 && equal)
        atomicAdd(&counts[(size_t)r * (q + 1)], equal);
    __syncthreads();
    for (int v = threadIdx.x; v < q; v += blockDim.x)
        if (hist[v])
            atomicAdd(&counts[(size_t)r * (q + 1) + 1 + v], (unsigned long long)hist[v]);
}

/* Colour planes to row-major: thread e makes sites 2k and 2k + 1 of row i (e = i * half + k);
 * site 2k has colour i & 1. */
__global__ void __launch_bounds__(256) unpack_kernel(const uint8_t *__restrict__ lattice, int L,
                                                     int half, int R, uint8_t *__restrict__ out)
{
    const size_t plane = (size_t)L * (size_t)half;
    const size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= plane * (size_t)R)
        return;
    const size_t r = e / plane, x = e % plane;
    const int i = (int)(x / half);
    const uint8_t *c0 = lattice + r * 2 * plane, *c1 = c0 + plane;
    const uint8_t a = c0[x], b = c1[x];
    uchar2 v;
    v.x = (i & 1) ? b : a;
    v.y = (i & 1) ? a : b;
    reinterpret_cast<uchar2 *>(out + r * (size_t)L * (size_t)L)[x] = v;
}

gpu_impl *impl(potts_system *s) { return static_cast<gpu_impl *>(s->impl); }

size_t plane_bytes(const potts_system *s) { return (size_t)s->L * (size_t)(s->L / 2); }

int gpu_create(potts_system *s)
{
    gpu_impl *g = static_cast<gpu_impl *>(carlo_calloc(1, sizeof(gpu_impl), "the Potts GPU backend"));
    if (!g)
        return -1;
    s->impl = g;
    size_t bytes = carlo_mulsize(2 * plane_bytes(s), (size_t)s->R);
    CK_MALLOC(&g->lattice, bytes, "the Potts lattices");
    CK(cudaMemset(g->lattice, 0, bytes));
    CK_MALLOC(&g->rates, sizeof(potts_rates) * (size_t)s->R, "the acceptance tables");
    CK_MALLOC(&g->counts, sizeof(unsigned long long) * (size_t)s->R * (size_t)(s->q + 1),
              "the observable counters");
    g->rates_uploaded = ~(uint64_t)0;
    g->host = static_cast<uint8_t *>(carlo_malloc(2 * plane_bytes(s), "a lattice staging buffer"));
    return g->host ? 0 : -1;
}

void gpu_destroy(potts_system *s)
{
    gpu_impl *g = impl(s);
    if (!g)
        return;
    if (g->async_state == 1) {
        cudaStreamSynchronize(g->copy_stream);
        cudaStreamDestroy(g->copy_stream);
        cudaEventDestroy(g->unpacked);
        cudaEventDestroy(g->copied);
        cudaFree(g->snap);
        cudaFreeHost(g->pinned);
    }
    cudaFree(g->lattice);
    cudaFree(g->rates);
    cudaFree(g->counts);
    free(g->host);
    free(g);
    s->impl = NULL;
}

int gpu_set_lattice(potts_system *s, int r, const uint8_t *spins)
{
    gpu_impl *g = impl(s);
    size_t plane = plane_bytes(s);
    potts_pack(s->L, spins, g->host, g->host + plane);
    CK(cudaMemcpy(g->lattice + (size_t)r * 2 * plane, g->host, 2 * plane, cudaMemcpyHostToDevice));
    return 0;
}

int gpu_get_lattice(potts_system *s, int r, uint8_t *spins)
{
    gpu_impl *g = impl(s);
    size_t plane = plane_bytes(s);
    CK(cudaMemcpy(g->host, g->lattice + (size_t)r * 2 * plane, 2 * plane, cudaMemcpyDeviceToHost));
    potts_unpack(s->L, g->host, g->host + plane, spins);
    return 0;
}

int upload_rates(potts_system *s)
{
    gpu_impl *g = impl(s);
    if (g->rates_uploaded != s->rates_version) {
        CK(cudaMemcpy(g->rates, s->rates, sizeof(potts_rates) * (size_t)s->R, cudaMemcpyHostToDevice));
        g->rates_uploaded = s->rates_version;
    }
    return 0;
}

template <int W> int launch(potts_system *s, int c)
{
    const int half = s->L / 2, threads = 256;
    const int64_t work = (int64_t)s->R * s->L * (half / W);
    const int64_t blocks = (work + threads - 1) / threads;
    if (blocks > 0x7fffffff)
        return carlo_seterr("lattice too large for one launch");
    if (s->algorithm == POTTS_HEATBATH)
        sweep_kernel<W, 1><<<(unsigned)blocks, threads>>>(impl(s)->lattice, impl(s)->rates, s->L, half,
                                                         s->R, c, (uint32_t)s->q, s->seed, s->halfstep);
    else
        sweep_kernel<W, 0><<<(unsigned)blocks, threads>>>(impl(s)->lattice, impl(s)->rates, s->L, half,
                                                         s->R, c, (uint32_t)s->q, s->seed, s->halfstep);
    CK(cudaGetLastError());
    return 0;
}

int gpu_sweep_color(potts_system *s, int c)
{
    if (upload_rates(s))
        return -1;
    const int half = s->L / 2;
    if (half % 16 == 0) return launch<16>(s, c);
    if (half % 8 == 0) return launch<8>(s, c);
    if (half % 4 == 0) return launch<4>(s, c);
    if (half % 2 == 0) return launch<2>(s, c);
    return launch<1>(s, c);
}

int gpu_sweeps(potts_system *s, uint64_t n)
{
    for (uint64_t t = 0; t < n; t++) {
        if (gpu_sweep_color(s, 0))
            return -1;
        s->halfstep++;
        if (gpu_sweep_color(s, 1))
            return -1;
        s->halfstep++;
        s->step++;
    }
    return 0;
}

int gpu_observe(potts_system *s, potts_obs *out)
{
    gpu_impl *g = impl(s);
    size_t n = (size_t)s->R * (size_t)(s->q + 1);
    CK(cudaMemset(g->counts, 0, n * sizeof(unsigned long long)));
    int blocks = (int)((plane_bytes(s) + 255) / 256);
    if (blocks > 1024)
        blocks = 1024;
    if (s->R > 65535)
        return carlo_seterr("observing more than 65535 replicas at once is not supported");
    observe_kernel<<<dim3((unsigned)blocks, (unsigned)s->R), 256>>>(g->lattice, s->L, s->L / 2, s->q,
                                                                 g->counts);
    CK(cudaGetLastError());
    unsigned long long *h =
        static_cast<unsigned long long *>(carlo_malloc(n * sizeof *h, "observable counters"));
    if (!h)
        return -1;
    cudaError_t e = cudaMemcpy(h, g->counts, n * sizeof *h, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        free(h);
        return carlo_cuda_fail(e, "cudaMemcpy(counts)", __FILE__, __LINE__);
    }
    for (int r = 0; r < s->R; r++) {
        const unsigned long long *c = h + (size_t)r * (s->q + 1);
        out[r].equal_bonds = (int64_t)c[0];
        int64_t nmax = 0;
        for (int v = 0; v < s->q; v++)
            if ((int64_t)c[1 + v] > nmax)
                nmax = (int64_t)c[1 + v];
        out[r].nmax = nmax;
    }
    free(h);
    return 0;
}

/* The buffers of gpu_lattices_start. Where device or page-locked memory for a second copy of
 * the lattices cannot be had, the frames are taken the synchronous way (returns 1). */
int async_setup(potts_system *s)
{
    gpu_impl *g = impl(s);
    if (g->async_state)
        return g->async_state == 1 ? 0 : 1;
    const size_t bytes = carlo_mulsize(2 * plane_bytes(s), (size_t)s->R);
    if (cudaMalloc(&g->snap, bytes) != cudaSuccess) {
        (void)cudaGetLastError(); /* out of memory is not sticky: clear it and do without */
        g->async_state = -1;
        return 1;
    }
    if (cudaMallocHost(&g->pinned, bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        cudaFree(g->snap);
        g->snap = NULL;
        g->async_state = -1;
        return 1;
    }
    g->async_state = 1; /* from here on destroy releases all of it */
    CK(cudaStreamCreateWithFlags(&g->copy_stream, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&g->unpacked, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&g->copied, cudaEventDisableTiming));
    return 0;
}

/* After the sweeps queued so far: unpack every lattice into snap (on the sweeps' stream, so
 * in order), then copy snap to page-locked memory on the copy stream while later sweeps run;
 * they change the lattices, never snap. Returns 1 (nothing started) when the buffers could
 * not be had or the lattices are too many for one launch. */
int gpu_lattices_start(potts_system *s)
{
    gpu_impl *g = impl(s);
    if (g->in_flight)
        return carlo_seterr("potts: a lattice copy is already on its way");
    int rc = async_setup(s);
    if (rc)
        return rc;
    const int half = s->L / 2;
    const size_t pairs = plane_bytes(s) * (size_t)s->R;
    const size_t blocks = (pairs + 255) / 256;
    if (blocks > 0x7fffffff)
        return 1; /* more than one launch can unpack: the frames go the plain way */
    unpack_kernel<<<(unsigned)blocks, 256>>>(g->lattice, s->L, half, s->R, g->snap);
    CK(cudaGetLastError());
    CK(cudaEventRecord(g->unpacked, 0));
    CK(cudaStreamWaitEvent(g->copy_stream, g->unpacked, 0));
    CK(cudaMemcpyAsync(g->pinned, g->snap, 2 * pairs, cudaMemcpyDeviceToHost, g->copy_stream));
    CK(cudaEventRecord(g->copied, g->copy_stream));
    g->in_flight = 1;
    return 0;
}

int gpu_lattices_fetch(potts_system *s, int wait, const uint8_t **data)
{
    gpu_impl *g = impl(s);
    if (!g->in_flight)
        return carlo_seterr("potts: no lattice copy was started");
    if (!wait) {
        cudaError_t e = cudaEventQuery(g->copied);
        if (e == cudaErrorNotReady)
            return 0;
        CK(e);
    } else {
        CK(cudaEventSynchronize(g->copied));
    }
    g->in_flight = 0;
    *data = g->pinned;
    return 1;
}

int gpu_sync(potts_system *s)
{
    (void)s;
    CK(cudaDeviceSynchronize());
    return 0;
}

} // namespace

extern "C" const potts_backend potts_cuda_backend = {
    "gpu",       gpu_create,  gpu_destroy, gpu_set_lattice, gpu_get_lattice,
    gpu_sweep_color, gpu_sweeps, gpu_observe, gpu_sync, gpu_lattices_start,
    gpu_lattices_fetch,
};
