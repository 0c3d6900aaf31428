/* potts.cu — the CUDA backend of the Potts model: the packed checkerboard of
 * src/potts/potts_kernel.h, W sites of one colour per thread (one 16-byte vector when L/2
 * allows), one Philox draw per pair of sites, observables from exact integer counts. A split
 * system (carlo-mpi(7)) keeps its rank's row slab with a halo row above and below; after each
 * colour its boundary rows are updated first on their own stream and sent to the neighbour
 * ranks while the interior rows are updated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "core/error.h"
#include "mpi/mpi.h"
#include "potts/potts.h"
}
#include "check.h"

namespace {

struct gpu_impl {
    uint8_t *lattice;             /* R x 2 colours x stored rows x L/2, as on the CPU */
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
    /* a split system's halo exchange (made in gpu_create when split) */
    cudaStream_t edge;            /* high priority: boundary rows, halo packing and copies */
    cudaEvent_t before, halo_in;  /* the work queued before a colour; its halos written */
    uint8_t *send, *recv;         /* 2 R L/2 bytes each: first rows (to the rank above) then
                                     last rows (to the rank below); page-locked host memory
                                     (staged) or device memory (direct, a CUDA-aware MPI) */
    int edge_made, events_made;
};

/* Where a launch's rows are: own row t (0 .. rows - 1) of a slab whose first row is global row
 * row0, stored at t + split in planes of `stored` rows (halos at 0 and rows + 1 when split,
 * none and periodic wrap-around when not). A launch takes rows t0, t0 + step, ...
 * (n of them). */
struct rows_of {
    int L, half, stored, row0, rows, split;
    int t0, n, step;
};

__device__ __forceinline__ void slab_rows(const rows_of &g, int t, int *up, int *at, int *down)
{
    if (g.split) {
        *up = t;
        *at = t + 1;
        *down = t + 2;
    } else {
        *up = t == 0 ? g.L - 1 : t - 1;
        *at = t;
        *down = t == g.L - 1 ? 0 : t + 1;
    }
}

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
                                                    const potts_rates *__restrict__ rates,
                                                    const rows_of sl, int R, int c, uint32_t q,
                                                    uint64_t seed, uint64_t halfstep)
{
    const int half = sl.half;
    const int per_row = half / W;
    const int64_t th = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (th >= (int64_t)R * sl.n * per_row)
        return;
    const int kv = (int)(th % per_row);
    const int64_t ri = th / per_row;
    const int t = sl.t0 + (int)(ri % sl.n) * sl.step, r = (int)(ri / sl.n);
    const int i = sl.row0 + t; /* the global row: random numbers go by global sites */
    int up, at, down;
    slab_rows(sl, t, &up, &at, &down);
    const size_t plane = (size_t)sl.stored * (size_t)half;
    uint8_t *me = lattice + ((size_t)r * 2 + (size_t)c) * plane + (size_t)at * half;
    const uint8_t *other = lattice + ((size_t)r * 2 + (size_t)(1 - c)) * plane;
    const int k0 = kv * W;
    const bool odd = (i + c) & 1; /* this row's sites of colour c sit at odd columns */

    const uint8_t *orow = other + (size_t)at * half;
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
 * the population of each state, per replica (blockIdx.y), over the own rows (a slab's, when
 * split: the ranks' counts are summed on the host). */
__global__ void __launch_bounds__(256) observe_kernel(const uint8_t *__restrict__ lattice,
                                                      const rows_of sl, int q,
                                                      unsigned long long *__restrict__ counts)
{
    __shared__ unsigned int hist[POTTS_Q_MAX + 1];
    for (int v = threadIdx.x; v < q; v += blockDim.x)
        hist[v] = 0;
    __syncthreads();
    const int r = blockIdx.y, half = sl.half;
    const size_t plane = (size_t)sl.stored * (size_t)half, own = (size_t)sl.rows * (size_t)half;
    const uint8_t *c0 = lattice + (size_t)r * 2 * plane, *c1 = c0 + plane;
    unsigned long long equal = 0;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < own;
         e += (size_t)gridDim.x * blockDim.x) {
        const int t = (int)(e / half), k = (int)(e % half);
        int up, at, down;
        slab_rows(sl, t, &up, &at, &down);
        uint8_t nb[4];
        potts_neighbours_rows(c1 + (size_t)up * half, c1 + (size_t)at * half,
                              c1 + (size_t)down * half, half, k, (sl.row0 + t) & 1, nb);
        const size_t x = (size_t)at * half + k;
        const uint8_t a = c0[x];
        equal += (nb[0] == a) + (nb[1] == a) + (nb[2] == a) + (nb[3] == a);
        atomicAdd(&hist[a], 1u);
        atomicAdd(&hist[c1[x]], 1u);
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

/* One colour plane of the rows stored (all L, or a split slab's rows and halos). */
size_t plane_bytes(const potts_system *s)
{
    return (size_t)potts_rows_stored(s) * (size_t)(s->L / 2);
}

rows_of rows_all(const potts_system *s)
{
    rows_of g;
    g.L = s->L;
    g.half = s->L / 2;
    g.stored = potts_rows_stored(s);
    g.row0 = s->row0;
    g.rows = s->rows;
    g.split = s->split;
    g.t0 = 0;
    g.n = s->rows;
    g.step = 1;
    return g;
}

/* The halo buffers and the boundary stream of a split system. */
int halo_setup(potts_system *s)
{
    gpu_impl *g = impl(s);
    const size_t bytes = carlo_mulsize(2 * (size_t)(s->L / 2), (size_t)s->R);
    if (s->halo == POTTS_HALO_DIRECT) {
        CK_MALLOC(&g->send, bytes, "the halo send buffer");
        CK_MALLOC(&g->recv, bytes, "the halo receive buffer");
    } else {
        cudaError_t e = cudaMallocHost(&g->send, bytes);
        if (e == cudaSuccess)
            e = cudaMallocHost(&g->recv, bytes);
        if (e != cudaSuccess) {
            (void)cudaGetLastError(); /* out of memory is not sticky */
            return carlo_seterr("out of page-locked host memory: 2 x %zu bytes asked for the halo "
                                "buffers (%s)", bytes, cudaGetErrorString(e));
        }
    }
    int least = 0, greatest = 0; /* greatest priority is the lowest number */
    CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CK(cudaStreamCreateWithPriority(&g->edge, cudaStreamNonBlocking, greatest));
    g->edge_made = 1;
    CK(cudaEventCreateWithFlags(&g->before, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&g->halo_in, cudaEventDisableTiming));
    g->events_made = 1;
    return 0;
}

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
    if (!g->host)
        return -1;
    return s->split ? halo_setup(s) : 0;
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
    if (g->edge_made) {
        cudaStreamSynchronize(g->edge);
        cudaStreamDestroy(g->edge);
    }
    if (g->events_made) {
        cudaEventDestroy(g->before);
        cudaEventDestroy(g->halo_in);
    }
    if (s->halo == POTTS_HALO_DIRECT) {
        cudaFree(g->send);
        cudaFree(g->recv);
    } else {
        cudaFreeHost(g->send);
        cudaFreeHost(g->recv);
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
    potts_slab_pack(s, spins, g->host, g->host + plane);
    CK(cudaMemcpy(g->lattice + (size_t)r * 2 * plane, g->host, 2 * plane, cudaMemcpyHostToDevice));
    return 0;
}

int gpu_get_lattice(potts_system *s, int r, uint8_t *spins)
{
    gpu_impl *g = impl(s);
    size_t plane = plane_bytes(s);
    CK(cudaMemcpy(g->host, g->lattice + (size_t)r * 2 * plane, 2 * plane, cudaMemcpyDeviceToHost));
    return potts_slab_gather(s, g->host, g->host + plane, spins);
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

template <int W> int launch(potts_system *s, int c, const rows_of &rows, cudaStream_t stream)
{
    const int threads = 256;
    const int64_t work = (int64_t)s->R * rows.n * (rows.half / W);
    const int64_t blocks = (work + threads - 1) / threads;
    if (blocks > 0x7fffffff)
        return carlo_seterr("lattice too large for one launch");
    if (blocks == 0)
        return 0;
    if (s->algorithm == POTTS_HEATBATH)
        sweep_kernel<W, 1><<<(unsigned)blocks, threads, 0, stream>>>(
            impl(s)->lattice, impl(s)->rates, rows, s->R, c, (uint32_t)s->q, s->seed, s->halfstep);
    else
        sweep_kernel<W, 0><<<(unsigned)blocks, threads, 0, stream>>>(
            impl(s)->lattice, impl(s)->rates, rows, s->R, c, (uint32_t)s->q, s->seed, s->halfstep);
    CK(cudaGetLastError());
    return 0;
}

/* Colour c of the rows `rows`, on stream. */
int sweep_rows(potts_system *s, int c, const rows_of &rows, cudaStream_t stream)
{
    const int half = s->L / 2;
    if (half % 16 == 0) return launch<16>(s, c, rows, stream);
    if (half % 8 == 0) return launch<8>(s, c, rows, stream);
    if (half % 4 == 0) return launch<4>(s, c, rows, stream);
    if (half % 2 == 0) return launch<2>(s, c, rows, stream);
    return launch<1>(s, c, rows, stream);
}

/* Row `at` (stored index) of colour c of every replica <-> R consecutive rows of buf, on the
 * boundary stream. A strided copy when the replicas' stride allows one, else one per replica. */
int rows_copy(potts_system *s, int c, int at, uint8_t *buf, int to_buf)
{
    gpu_impl *g = impl(s);
    const size_t half = (size_t)(s->L / 2), stride = 2 * plane_bytes(s);
    uint8_t *row = g->lattice + (size_t)c * plane_bytes(s) + (size_t)at * half;
    const cudaMemcpyKind kind = s->halo == POTTS_HALO_DIRECT ? cudaMemcpyDeviceToDevice
                                : to_buf ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
    if (s->R > 1 && stride < ((size_t)1 << 30)) {
        if (to_buf)
            CK(cudaMemcpy2DAsync(buf, half, row, stride, half, (size_t)s->R, kind, g->edge));
        else
            CK(cudaMemcpy2DAsync(row, stride, buf, half, half, (size_t)s->R, kind, g->edge));
        return 0;
    }
    for (int r = 0; r < s->R; r++) {
        uint8_t *x = row + (size_t)r * stride, *b = buf + (size_t)r * half;
        CK(cudaMemcpyAsync(to_buf ? b : x, to_buf ? x : b, half, kind, g->edge));
    }
    return 0;
}

/* n bytes each way with the ranks above and below, in pieces MPI's int counts can carry. */
int exchange(const uint8_t *send, int dest, uint8_t *recv, int src, size_t n, int tag)
{
    const size_t piece = (size_t)1 << 30;
    for (size_t at = 0; at < n; at += piece) {
        int m = (int)(n - at < piece ? n - at : piece);
        if (carlo_mpi_sendrecv_u8(send + at, dest, recv + at, src, m, tag))
            return -1;
    }
    return 0;
}

/* Colour c of a split system: the first and last own rows first, on the boundary stream; they
 * go to the neighbour ranks (through host memory, or straight from the device to a CUDA-aware
 * MPI) while the interior rows are updated on the calling thread's stream; the halos that come
 * back are written on the boundary stream, and the calling thread's stream waits for them, so
 * that whatever is queued next (the other colour, an observation, a copy) sees them. */
int split_sweep_color(potts_system *s, int c)
{
    gpu_impl *g = impl(s);
    const cudaStream_t main_stream = cudaStreamPerThread;
    const int rows = s->rows, n = carlo_mpi_size(), p = carlo_mpi_rank();
    const size_t part = (size_t)s->R * (size_t)(s->L / 2);
    CK(cudaEventRecord(g->before, main_stream));
    CK(cudaStreamWaitEvent(g->edge, g->before, 0));
    rows_of edge = rows_all(s), inner = rows_all(s);
    edge.n = rows > 1 ? 2 : 1; /* rows 0 and rows - 1 */
    edge.step = rows > 1 ? rows - 1 : 1;
    if (sweep_rows(s, c, edge, g->edge) || rows_copy(s, c, 1, g->send, 1) ||
        rows_copy(s, c, rows, g->send + part, 1))
        return -1;
    inner.t0 = 1;
    inner.n = rows - 2;
    if (inner.n > 0 && sweep_rows(s, c, inner, main_stream))
        return -1;
    CK(cudaStreamSynchronize(g->edge)); /* the boundary rows are packed; the interior runs on */
    const int above = (p + n - 1) % n, below = (p + 1) % n;
    /* first rows up into the halo below the rank above; last rows down, as on the CPU */
    if (exchange(g->send, above, g->recv + part, below, part, 1) ||
        exchange(g->send + part, below, g->recv, above, part, 2))
        return -1;
    if (rows_copy(s, c, 0, g->recv, 0) || rows_copy(s, c, rows + 1, g->recv + part, 0))
        return -1;
    CK(cudaEventRecord(g->halo_in, g->edge));
    CK(cudaStreamWaitEvent(main_stream, g->halo_in, 0));
    return 0;
}

int gpu_sweep_color(potts_system *s, int c)
{
    if (upload_rates(s))
        return -1;
    if (s->split)
        return split_sweep_color(s, c);
    return sweep_rows(s, c, rows_all(s), cudaStreamPerThread);
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
    int blocks = (int)(((size_t)s->rows * (size_t)(s->L / 2) + 255) / 256);
    if (blocks > 1024)
        blocks = 1024;
    if (s->R > 65535)
        return carlo_seterr("observing more than 65535 replicas at once is not supported");
    observe_kernel<<<dim3((unsigned)blocks, (unsigned)s->R), 256>>>(g->lattice, rows_all(s), s->q,
                                                                 g->counts);
    CK(cudaGetLastError());
    int64_t *h = static_cast<int64_t *>(carlo_malloc(n * sizeof *h, "observable counters"));
    if (!h)
        return -1;
    static_assert(sizeof(int64_t) == sizeof(unsigned long long), "64-bit counters");
    cudaError_t e = cudaMemcpy(h, g->counts, n * sizeof *h, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        free(h);
        return carlo_cuda_fail(e, "cudaMemcpy(counts)", __FILE__, __LINE__);
    }
    /* a split system's counts are its slab's: summed over the ranks (exact integers) */
    if (s->split && (n > 0x7fffffff || carlo_mpi_sum_i64(h, (int)n))) {
        free(h);
        return n > 0x7fffffff ? carlo_seterr("too many counters to sum over the ranks") : -1;
    }
    for (int r = 0; r < s->R; r++) {
        const int64_t *c = h + (size_t)r * (s->q + 1);
        out[r].equal_bonds = c[0];
        int64_t nmax = 0;
        for (int v = 0; v < s->q; v++)
            if (c[1 + v] > nmax)
                nmax = c[1 + v];
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
    if (s->split)
        return 1; /* the whole lattice is gathered from the ranks: the plain way */
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
