/* potts.c — the Potts system (creation, starts, runs, tempering, frames) and its CPU
 * backend: the checkerboard of potts_kernel.h, rows shared among OpenMP threads, and among
 * MPI ranks as row slabs with halo rows when the system is split (carlo-mpi(7)). */
#include "potts/potts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h"
#include "mpi/mpi.h"

const potts_backend *potts_gpu_backend;

/* ---------- packed layout ---------- */

void potts_pack(int L, const uint8_t *rowmajor, uint8_t *color0, uint8_t *color1)
{
    int half = L / 2;
    for (int i = 0; i < L; i++)
        for (int j = 0; j < L; j++) {
            uint8_t *dst = ((i + j) & 1) ? color1 : color0;
            dst[(int64_t)i * half + j / 2] = rowmajor[(int64_t)i * L + j];
        }
}

void potts_unpack(int L, const uint8_t *color0, const uint8_t *color1, uint8_t *rowmajor)
{
    int half = L / 2;
    /* rows in parallel: trajectory frames of large lattices are taken on the run's thread */
#pragma omp parallel for schedule(static) if ((int64_t)L * L >= (1 << 20))
    for (int i = 0; i < L; i++)
        for (int j = 0; j < L; j++) {
            const uint8_t *src = ((i + j) & 1) ? color1 : color0;
            rowmajor[(int64_t)i * L + j] = src[(int64_t)i * half + j / 2];
        }
}

/* ---------- CPU backend ---------- */

typedef struct cpu_impl {
    uint8_t *lattice; /* R x 2 colours x stored rows x L/2 */
} cpu_impl;

int potts_rows_stored(const potts_system *s)
{
    return s->split ? s->rows + 2 : s->L;
}

static uint8_t *cpu_color(potts_system *s, int r, int c)
{
    cpu_impl *im = s->impl;
    size_t plane = (size_t)potts_rows_stored(s) * (size_t)(s->L / 2);
    return im->lattice + ((size_t)r * 2 + (size_t)c) * plane;
}

/* The stored rows above, at and below own row t (0 .. rows - 1): periodic in the whole
 * lattice, the halo rows in a slab. */
static void cpu_rows_of(const potts_system *s, int t, int *up, int *at, int *down)
{
    if (s->split) {
        *up = t;
        *at = t + 1;
        *down = t + 2;
        return;
    }
    *up = t == 0 ? s->L - 1 : t - 1;
    *at = t;
    *down = t == s->L - 1 ? 0 : t + 1;
}

/* A split system takes its rows and their halos from the whole lattice (every rank has it). */
void potts_slab_pack(const potts_system *s, const uint8_t *spins, uint8_t *c0, uint8_t *c1)
{
    if (!s->split) {
        potts_pack(s->L, spins, c0, c1);
        return;
    }
    const int L = s->L, half = L / 2;
#pragma omp parallel for schedule(static) if ((int64_t)s->rows * L >= (1 << 20))
    for (int t = 0; t < s->rows + 2; t++) {
        int i = (s->row0 - 1 + t + L) % L;
        for (int j = 0; j < L; j++)
            (((i + j) & 1) ? c1 : c0)[(int64_t)t * half + j / 2] = spins[(int64_t)i * L + j];
    }
}

/* A split system's whole lattice is gathered from the ranks' slabs: every rank calls this. */
int potts_slab_gather(potts_system *s, const uint8_t *c0, const uint8_t *c1, uint8_t *spins)
{
    if (!s->split) {
        potts_unpack(s->L, c0, c1, spins);
        return 0;
    }
    const int L = s->L, half = L / 2;
    uint8_t *mine = carlo_malloc((size_t)s->rows * (size_t)L + 1, "a lattice slab");
    if (!mine)
        return -1;
#pragma omp parallel for schedule(static) if ((int64_t)s->rows * L >= (1 << 20))
    for (int t = 0; t < s->rows; t++) {
        int i = s->row0 + t;
        for (int j = 0; j < L; j++)
            mine[(int64_t)t * L + j] = (((i + j) & 1) ? c1 : c0)[(int64_t)(t + 1) * half + j / 2];
    }
    int rc = carlo_mpi_allgather_rows(mine, s->rows, spins, s->slab_rows, L);
    free(mine);
    return rc;
}

static int cpu_create(potts_system *s)
{
    cpu_impl *im = carlo_calloc(1, sizeof *im, "the Potts CPU backend");
    if (!im)
        return -1;
    size_t bytes = carlo_mulsize(carlo_mulsize((size_t)potts_rows_stored(s), (size_t)s->L),
                                 (size_t)s->R);
    im->lattice = carlo_calloc(bytes, 1, "the Potts lattices");
    if (!im->lattice) {
        free(im);
        return -1;
    }
    s->impl = im;
    return 0;
}

static void cpu_destroy(potts_system *s)
{
    cpu_impl *im = s->impl;
    if (im)
        free(im->lattice);
    free(im);
    s->impl = NULL;
}

static int cpu_set_lattice(potts_system *s, int r, const uint8_t *spins)
{
    potts_slab_pack(s, spins, cpu_color(s, r, 0), cpu_color(s, r, 1));
    return 0;
}

static int cpu_get_lattice(potts_system *s, int r, uint8_t *spins)
{
    return potts_slab_gather(s, cpu_color(s, r, 0), cpu_color(s, r, 1), spins);
}

/* After colour c changed on a split system: each rank's first and last rows of c go to the
 * halos of the ranks above and below (periodic: rank 0's first row to the last rank). */
static int cpu_halo(potts_system *s, int c)
{
    const int n = carlo_mpi_size(), p = carlo_mpi_rank(), half = s->L / 2, rows = s->rows;
    const int above = (p + n - 1) % n, below = (p + 1) % n;
    for (int r = 0; r < s->R; r++) {
        uint8_t *col = cpu_color(s, r, c);
        if (carlo_mpi_sendrecv_u8(col + half, above, col + (int64_t)(rows + 1) * half, below,
                                  half, 1) ||
            carlo_mpi_sendrecv_u8(col + (int64_t)rows * half, below, col, above, half, 2))
            return -1;
    }
    return 0;
}

static int cpu_sweep_color(potts_system *s, int c)
{
    const int L = s->L, half = L / 2, R = s->R, rows = s->rows, row0 = s->row0;
    const uint32_t q = (uint32_t)s->q;
    const int heatbath = s->algorithm == POTTS_HEATBATH;
    const uint64_t halfstep = s->halfstep, seed = s->seed;
    const int swar = !heatbath && half % 4 == 0; /* four sites a word: potts_metropolis4 */
#pragma omp parallel for collapse(2) schedule(static)
    for (int r = 0; r < R; r++)
        for (int t = 0; t < rows; t++) {
            const int i = row0 + t; /* the global row: random numbers go by global sites */
            int up, at, down;
            cpu_rows_of(s, t, &up, &at, &down);
            uint8_t *me = cpu_color(s, r, c) + (int64_t)at * half;
            const uint8_t *other = cpu_color(s, r, 1 - c);
            const uint8_t *urow = other + (int64_t)up * half, *drow = other + (int64_t)down * half;
            const uint8_t *orow = other + (int64_t)at * half;
            const potts_rates *rt = &s->rates[r];
            const int odd = (i + c) & 1;
            if (swar) {
                for (int k = 0; k < half; k += 4) {
                    uint32_t S, U, D, M;
                    memcpy(&S, me + k, 4);
                    memcpy(&U, urow + k, 4);
                    memcpy(&D, drow + k, 4);
                    memcpy(&M, orow + k, 4);
                    uint32_t Lw, Rw;
                    if (odd) {
                        Lw = M;
                        Rw = (M >> 8) | (uint32_t)orow[k + 4 == half ? 0 : k + 4] << 24;
                    } else {
                        Rw = M;
                        Lw = (M << 8) | orow[k == 0 ? half - 1 : k - 1];
                    }
                    uint32_t idx = (uint32_t)((int64_t)i * half + k);
                    carlo_u32x4 a = potts_pair_draw(seed, halfstep, idx >> 1, (uint32_t)r);
                    carlo_u32x4 b = potts_pair_draw(seed, halfstep, (idx >> 1) + 1, (uint32_t)r);
                    uint32_t r0[4] = {a.v[0], a.v[2], b.v[0], b.v[2]};
                    uint32_t r1[4] = {a.v[1], a.v[3], b.v[1], b.v[3]};
                    S = potts_metropolis4(S, U, D, Lw, Rw, r0, r1, rt, q, seed, halfstep, idx, (uint32_t)r);
                    memcpy(me + k, &S, 4);
                }
                continue;
            }
            carlo_u32x4 d = {{0, 0, 0, 0}};
            int64_t have = -1;
            for (int k = 0; k < half; k++) {
                uint32_t idx = (uint32_t)((int64_t)i * half + k);
                if ((int64_t)(idx >> 1) != have) {
                    have = idx >> 1;
                    d = potts_pair_draw(seed, halfstep, idx >> 1, (uint32_t)r);
                }
                uint32_t r0 = (idx & 1) ? d.v[2] : d.v[0], r1 = (idx & 1) ? d.v[3] : d.v[1];
                uint8_t nb[4];
                potts_neighbours_rows(urow, orow, drow, half, k, odd, nb);
                me[k] = (uint8_t)potts_update_site(me[k], nb, r0, r1, rt, q, heatbath, seed,
                                                   halfstep, idx, (uint32_t)r);
            }
        }
    return s->split ? cpu_halo(s, c) : 0;
}

static int cpu_sweeps(potts_system *s, uint64_t n)
{
    for (uint64_t t = 0; t < n; t++) {
        cpu_sweep_color(s, 0);
        s->halfstep++;
        cpu_sweep_color(s, 1);
        s->halfstep++;
        s->step++;
    }
    return 0;
}

/* Bonds counted from colour 0's sites to their four colour-1 neighbours; a split system's
 * counts summed over the ranks. */
static int cpu_observe(potts_system *s, potts_obs *out)
{
    const int half = s->L / 2, q = s->q;
    for (int r = 0; r < s->R; r++) {
        const uint8_t *c0 = cpu_color(s, r, 0), *c1 = cpu_color(s, r, 1);
        int64_t sums[POTTS_Q_MAX + 2] = {0}; /* equal bonds, then the count of each state */
        int64_t *count = sums + 1;
#pragma omp parallel
        {
            int64_t local[POTTS_Q_MAX + 1] = {0}, eq = 0;
#pragma omp for schedule(static)
            for (int t = 0; t < s->rows; t++) {
                int up, at, down;
                cpu_rows_of(s, t, &up, &at, &down);
                const int odd = (s->row0 + t) & 1;
                for (int k = 0; k < half; k++) {
                    uint8_t nb[4], a = c0[(int64_t)at * half + k];
                    potts_neighbours_rows(c1 + (int64_t)up * half, c1 + (int64_t)at * half,
                                          c1 + (int64_t)down * half, half, k, odd, nb);
                    eq += (nb[0] == a) + (nb[1] == a) + (nb[2] == a) + (nb[3] == a);
                    local[a]++;
                    local[c1[(int64_t)at * half + k]]++;
                }
            }
#pragma omp critical
            {
                sums[0] += eq;
                for (int v = 0; v < q; v++)
                    count[v] += local[v];
            }
        }
        if (s->split && carlo_mpi_sum_i64(sums, q + 1))
            return -1;
        const int64_t equal = sums[0];
        int64_t nmax = 0;
        for (int v = 0; v < q; v++)
            if (count[v] > nmax)
                nmax = count[v];
        out[r].equal_bonds = equal;
        out[r].nmax = nmax;
    }
    return 0;
}

static int cpu_sync(potts_system *s)
{
    (void)s;
    return 0;
}

const potts_backend potts_cpu_backend = {
    .name = "cpu",
    .create = cpu_create,
    .destroy = cpu_destroy,
    .set_lattice = cpu_set_lattice,
    .get_lattice = cpu_get_lattice,
    .sweep_color = cpu_sweep_color,
    .sweeps = cpu_sweeps,
    .observe = cpu_observe,
    .sync = cpu_sync,
};

/* ---------- the system ---------- */

void potts_rates_set(potts_rates *rt, double beta)
{
    memset(rt, 0, sizeof *rt);
    rt->thr[0] = 0xffffffffu;
    for (int d = 1; d <= 4; d++) {
        double p = exp(-beta * d) * 4294967296.0;
        rt->thr[d] = p >= 4294967295.0 ? 0xffffffffu : (uint32_t)p;
    }
    for (int n = 0; n <= 4; n++)
        rt->w[n] = exp(beta * n);
}

int potts_beta_ok(double beta)
{
    return beta >= 0 && beta <= POTTS_BETA_MAX;
}

int potts_set_beta(potts_system *s, int r, double beta)
{
    if (!potts_beta_ok(beta))
        return carlo_seterr("beta must be a number in [0, %g] (T >= 1/%g; got beta = %g)",
                            POTTS_BETA_MAX, POTTS_BETA_MAX, beta);
    s->beta[r] = beta;
    potts_rates_set(&s->rates[r], beta);
    s->rates_version++;
    return 0;
}

/* halo = "auto" of a split GPU system: the environment's CARLO_HALO may say staged or direct
 * (a restored system too), so that a script need not change to force one. */
static int halo_from_env(potts_halo *halo)
{
    const char *v = getenv("CARLO_HALO");
    if (!v || !*v || strcmp(v, "auto") == 0)
        return 0;
    if (strcmp(v, "staged") == 0 || strcmp(v, "direct") == 0) {
        *halo = v[0] == 's' ? POTTS_HALO_STAGED : POTTS_HALO_DIRECT;
        return 0;
    }
    return carlo_seterr("the environment's CARLO_HALO must be \"auto\", \"staged\" or \"direct\" "
                        "(got \"%s\")", v);
}

potts_system *potts_create(const potts_params *p)
{
    if (p->L < 2 || p->L > POTTS_L_MAX || p->L % 2) {
        carlo_seterr("L must be an even integer from 2 to %d (got %d)", POTTS_L_MAX, p->L);
        return NULL;
    }
    if (p->q < 2 || p->q > POTTS_Q_MAX) {
        carlo_seterr("q must be an integer from 2 to %d (got %d)", POTTS_Q_MAX, p->q);
        return NULL;
    }
    if (p->R < 1 || p->R > 1 << 20) {
        carlo_seterr("the number of replicas must be from 1 to %d (got %d)", 1 << 20, p->R);
        return NULL;
    }
    const potts_backend *be = &potts_cpu_backend;
    if (p->device == CARLO_GPU) {
        if (!potts_gpu_backend) {
            carlo_seterr("this carlo was built without CUDA");
            return NULL;
        }
        be = potts_gpu_backend;
    }
    const int ranks = p->split ? carlo_mpi_size() : 1, rank = p->split ? carlo_mpi_rank() : 0;
    potts_halo halo = p->halo;
    if (halo == POTTS_HALO_AUTO && p->split && p->device == CARLO_GPU && halo_from_env(&halo))
        return NULL;
    if (p->halo == POTTS_HALO_DIRECT && !(p->split && p->device == CARLO_GPU)) {
        carlo_seterr("halo = \"direct\" is for a decomposed GPU system (decompose = true, "
                     "device = \"gpu\")");
        return NULL;
    }
    if (halo == POTTS_HALO_DIRECT && !carlo_mpi_cuda_aware()) {
        carlo_seterr("halo = \"direct\" (the key or CARLO_HALO): this MPI does not take GPU "
                     "memory (not CUDA-aware; use \"staged\" or \"auto\")");
        return NULL;
    }
    if (p->L < ranks) {
        carlo_seterr("decompose = true: L = %d rows cannot be split over %d MPI ranks (one row "
                     "each at least)", p->L, ranks);
        return NULL;
    }
    potts_system *s = carlo_calloc(1, sizeof *s, "a Potts system");
    if (!s)
        return NULL;
    s->split = p->split ? 1 : 0;
    s->halo = !s->split ? POTTS_HALO_NONE
              : p->device != CARLO_GPU ? POTTS_HALO_HOST
              : halo == POTTS_HALO_DIRECT || (halo == POTTS_HALO_AUTO && carlo_mpi_cuda_aware())
                  ? POTTS_HALO_DIRECT
                  : POTTS_HALO_STAGED;
    s->collective = s->split; /* its halo exchange and sums call MPI: never from a worker thread */
    s->row0 = (int)((int64_t)rank * p->L / ranks);
    s->rows = (int)((int64_t)(rank + 1) * p->L / ranks) - s->row0;
    s->slab_rows = carlo_calloc((size_t)ranks, sizeof *s->slab_rows, "the ranks' rows");
    if (!s->slab_rows) {
        free(s);
        return NULL;
    }
    for (int k = 0; k < ranks; k++)
        s->slab_rows[k] = (int)((int64_t)(k + 1) * p->L / ranks - (int64_t)k * p->L / ranks);
    s->ops = &potts_ops;
    s->replicas = p->R;
    s->L = p->L;
    s->q = p->q;
    s->R = p->R;
    s->algorithm = p->algorithm;
    s->device = p->device;
    s->seed = p->seed;
    s->be = be;
    size_t R = (size_t)p->R;
    s->beta = carlo_calloc(R, sizeof *s->beta, "replica temperatures");
    s->rates = s->beta ? carlo_calloc(R, sizeof *s->rates, "acceptance tables") : NULL;
    s->slot = s->rates ? carlo_calloc(R, sizeof *s->slot, "tempering slots") : NULL;
    s->temperatures = s->slot ? carlo_calloc(R, sizeof *s->temperatures, "temperatures") : NULL;
    s->swap_tried = s->temperatures ? carlo_calloc(R, sizeof *s->swap_tried, "swap counters") : NULL;
    s->swap_accepted = s->swap_tried ? carlo_calloc(R, sizeof *s->swap_accepted, "swap counters") : NULL;
    s->direction = s->swap_accepted ? carlo_calloc(R, sizeof *s->direction, "round trips") : NULL;
    s->round_trips = s->direction ? carlo_calloc(R, sizeof *s->round_trips, "round trips") : NULL;
    if (!s->round_trips) {
        potts_destroy(s);
        return NULL;
    }
    for (int r = 0; r < p->R; r++) {
        if (potts_set_beta(s, r, p->beta[r])) {
            potts_destroy(s);
            return NULL;
        }
        s->slot[r] = r;
        s->temperatures[r] = 1.0 / p->beta[r];
    }
    if (be->create(s)) { /* potts_destroy releases what create got before failing */
        potts_destroy(s);
        return NULL;
    }
    return s;
}

void potts_destroy(potts_system *s)
{
    if (!s)
        return;
    if (s->be && s->impl)
        s->be->destroy(s);
    free(s->beta);
    free(s->rates);
    free(s->slot);
    free(s->temperatures);
    free(s->swap_tried);
    free(s->swap_accepted);
    free(s->direction);
    free(s->round_trips);
    free(s->slab_rows);
    free(s);
}

static int set_all(potts_system *s, int random)
{
    size_t n = (size_t)s->L * (size_t)s->L;
    uint8_t *spins = carlo_malloc(n, "an initial lattice");
    if (!spins)
        return -1;
    int rc = 0;
    for (int r = 0; r < s->R && rc == 0; r++) {
        if (random) {
            /* Four states per draw: spins are a pure function of (seed, replica, site). */
#pragma omp parallel for schedule(static)
            for (int64_t b = 0; b < (int64_t)((n + 3) / 4); b++) {
                carlo_u32x4 d = carlo_rng(s->seed, POTTS_PURPOSE_START, 0, (uint32_t)b, (uint32_t)r);
                for (int w = 0; w < 4 && (size_t)(4 * b + w) < n; w++) {
                    uint32_t v;
                    if (carlo_below_try(d.v[w], (uint32_t)s->q, &v))
                        v = carlo_below(s->seed, POTTS_PURPOSE_START, 1 + (uint64_t)w,
                                        (uint32_t)b, (uint32_t)r, (uint32_t)s->q);
                    spins[4 * b + w] = (uint8_t)v;
                }
            }
        } else {
            memset(spins, 0, n);
        }
        rc = s->be->set_lattice(s, r, spins);
    }
    free(spins);
    return rc;
}

int potts_start_ordered(potts_system *s) { return set_all(s, 0); }
int potts_start_random(potts_system *s) { return set_all(s, 1); }

int potts_sweep_color(potts_system *s, int color)
{
    if (carlo_sys_alive(&s->sys))
        return -1;
    if (s->be->sweep_color(s, color)) {
        s->dead = s->device == CARLO_GPU;
        return -1;
    }
    s->halfstep++;
    if (color == 1)
        s->step++;
    return 0;
}

void potts_obs_finish(const potts_system *s, potts_obs *o)
{
    double N = (double)s->L * (double)s->L;
    o->e = -(double)o->equal_bonds / N;
    o->m = ((double)s->q * (double)o->nmax / N - 1.0) / (double)(s->q - 1);
}

int potts_observe(potts_system *s, potts_obs *out)
{
    if (carlo_sys_alive(&s->sys))
        return -1;
    if (s->be->observe(s, out)) {
        s->dead = s->device == CARLO_GPU;
        return -1;
    }
    for (int r = 0; r < s->R; r++)
        potts_obs_finish(s, &out[r]);
    return 0;
}

int potts_exchange(potts_system *s)
{
    if (s->R < 2)
        return 0;
    potts_obs *o = carlo_malloc((size_t)s->R * sizeof *o, "tempering observations");
    if (!o)
        return -1;
    if (potts_observe(s, o)) {
        free(o);
        return -1;
    }
    int parity = (int)(s->exchanges & 1);
    for (int k = parity; k + 1 < s->R; k += 2) {
        int a = s->slot[k], b = s->slot[k + 1];
        double ea = -(double)o[a].equal_bonds, eb = -(double)o[b].equal_bonds;
        double delta = (s->beta[a] - s->beta[b]) * (ea - eb);
        carlo_u32x4 d = carlo_rng(s->seed, POTTS_PURPOSE_SWAP, s->exchanges, (uint32_t)k, 0);
        s->swap_tried[k]++;
        if (delta >= 0 || carlo_u01(d.v[0], d.v[1]) < exp(delta)) {
            s->swap_accepted[k]++;
            double ba = s->beta[a];
            potts_set_beta(s, a, s->beta[b]);
            potts_set_beta(s, b, ba);
            s->slot[k] = b;
            s->slot[k + 1] = a;
        }
    }
    free(o);
    /* round trips: bottom -> top -> bottom */
    int bottom = s->slot[0], top = s->slot[s->R - 1];
    if (s->direction[top] == 1)
        s->direction[top] = 2;
    if (s->direction[bottom] == 2)
        s->round_trips[bottom]++;
    s->direction[bottom] = 1;
    s->exchanges++;
    return 0;
}

/* ---------- the serial reference (tests only) ---------- */

void potts_serial_sweep(uint8_t *spins, int L, int q, double beta, uint64_t seed, uint64_t sweep)
{
    int64_t N = (int64_t)L * L;
    for (int64_t t = 0; t < N; t++) {
        carlo_u32x4 d = carlo_rng(seed, CARLO_PURPOSE_CORE_TEST, sweep, (uint32_t)t, 0);
        int64_t site = (int64_t)(((uint64_t)d.v[0] << 32 | d.v[1]) % (uint64_t)N); /* bias < 2^-40 */
        int i = (int)(site / L), j = (int)(site % L);
        uint8_t s = spins[site];
        uint8_t t_new = (uint8_t)((s + 1 + d.v[2] % (uint32_t)(q - 1)) % (uint32_t)q); /* bias < 2^-24 */
        uint8_t nb[4] = {spins[(int64_t)((i + L - 1) % L) * L + j], spins[(int64_t)((i + 1) % L) * L + j],
                         spins[(int64_t)i * L + (j + L - 1) % L], spins[(int64_t)i * L + (j + 1) % L]};
        int dE = 0;
        for (int a = 0; a < 4; a++)
            dE += (nb[a] == s) - (nb[a] == t_new);
        if (dE <= 0 || carlo_u01f(d.v[3]) < exp(-beta * dE))
            spins[site] = t_new;
    }
}
