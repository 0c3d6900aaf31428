/* potts.h — the 2D q-state Potts model: H = -J sum_<ij> delta(s_i, s_j), J = k_B = 1,
 * states 0..q-1, on an L x L periodic square lattice (L even, 2 <= L <= 65536), one byte
 * per spin. A system holds R >= 1 replicas of the lattice, each at its own temperature,
 * advanced together (R = 1 is a single system; R > 1 an ensemble for parallel tempering). */
#ifndef CARLO_POTTS_H
#define CARLO_POTTS_H

#include <stdint.h>

#include "core/device.h"
#include "core/frame.h"
#include "core/sys.h"
#include "potts/potts_kernel.h"

#define POTTS_L_MAX 65536
/* The temperature range, the one place it is written: beta in [0, POTTS_BETA_MAX] (beta = 0 is
 * infinite temperature; exp(4 beta), the largest Boltzmann factor, stays finite). */
#define POTTS_BETA_MAX 177.0
int potts_beta_ok(double beta);

typedef enum potts_algorithm { POTTS_METROPOLIS = 0, POTTS_HEATBATH = 1 } potts_algorithm;

/* How a decomposed system's halo rows travel (carlo-mpi(7)). Asked for: AUTO (DIRECT where the
 * MPI is CUDA-aware, else STAGED), STAGED or DIRECT. In use: NONE (not split), HOST (the CPU
 * backend), STAGED (GPU -> page-locked host buffer -> MPI -> GPU) or DIRECT (GPU buffers
 * handed to a CUDA-aware MPI). */
typedef enum potts_halo {
    POTTS_HALO_AUTO = 0, POTTS_HALO_STAGED = 1, POTTS_HALO_DIRECT = 2,
    POTTS_HALO_NONE = 3, POTTS_HALO_HOST = 4
} potts_halo;

/* What one replica looks like now, from exact integer counts. */
typedef struct potts_obs {
    int64_t equal_bonds; /* number of nearest-neighbour pairs in the same state */
    int64_t nmax;        /* population of the most populated state */
    double e;            /* energy per spin, -equal_bonds / N */
    double m;            /* order parameter (q nmax / N - 1) / (q - 1), Ferrero et al. eq. 7 */
} potts_obs;

struct potts_backend;

typedef struct potts_system {
    CARLO_SYS_HEADER;            /* seed, step (sweeps done), device, dead, replicas = R */
    int L, q, R;
    potts_algorithm algorithm;
    uint64_t halfstep;           /* colour updates done: the RNG's step counter */
    double *beta;                /* beta[r] of replica r */
    potts_rates *rates;          /* rates[r], rebuilt by potts_set_beta */
    uint64_t rates_version;      /* bumped whenever rates change (GPU re-uploads) */
    const struct potts_backend *be;
    void *impl;                  /* the backend's own state */
    /* parallel tempering bookkeeping: slot[k] = replica at temperature k (temperatures[k]) */
    int *slot;                   /* R */
    double *temperatures;        /* R, the ladder */
    uint64_t *swap_tried, *swap_accepted; /* R - 1 pairs */
    int *direction;              /* per replica: 0 none, 1 last visited bottom, 2 top */
    uint64_t *round_trips;       /* per replica */
    uint64_t exchanges;          /* exchange steps done (alternates even/odd pairs) */
    /* Lattice decomposition (carlo-mpi(7)): with split = 1 a backend keeps and updates only
     * this MPI rank's rows row0 .. row0 + rows - 1 (plus a halo row above and below, exchanged
     * after every colour update; potts_rows_stored rows a colour plane); slab_rows[p] = the
     * rows of rank p. Unsplit: row0 = 0, rows = L. Random numbers stay a function of the
     * global site. */
    int split, row0, rows;
    int *slab_rows;
    potts_halo halo;             /* how the halos travel: NONE, HOST, STAGED or DIRECT */
} potts_system;

/* A backend: the CPU one in potts.c, the CUDA one in cuda/potts.cu. All return 0 or -1
 * with the message set (carlo_errmsg). Lattices cross as row-major L x L bytes. */
typedef struct potts_backend {
    const char *name;
    int (*create)(potts_system *s);
    void (*destroy)(potts_system *s);
    int (*set_lattice)(potts_system *s, int replica, const uint8_t *spins);
    int (*get_lattice)(potts_system *s, int replica, uint8_t *spins);
    /* One colour of every replica, drawing with RNG step s->halfstep (the caller bumps it). */
    int (*sweep_color)(potts_system *s, int color);
    /* n whole sweeps: colours 0 then 1, bumping halfstep by 2 and step by 1 per sweep
     * (the GPU queues them without waiting). */
    int (*sweeps)(potts_system *s, uint64_t n);
    int (*observe)(potts_system *s, potts_obs *out /* R entries */);
    int (*sync)(potts_system *s); /* wait for queued work; reports late device errors */
    /* Optional (NULL on the CPU, where a frame costs no more than the copy): frames taken
     * while the sweeps go on. lattices_start queues a copy of every replica, row-major, as
     * the lattices stand after the sweeps queued so far, and returns at once (1: nothing
     * started, for want of memory or of a launch large enough; take the frame with
     * get_lattice).
     * lattices_fetch then gives 1 and *data (R x L x L bytes, the backend's, valid until
     * the next start) once the copy has arrived, 0 while it has not (only with wait = 0).
     * One copy at a time: fetch before the next start. */
    int (*lattices_start)(potts_system *s);
    int (*lattices_fetch)(potts_system *s, int wait, const uint8_t **data);
} potts_backend;

extern const potts_backend potts_cpu_backend;
extern const potts_backend *potts_gpu_backend; /* set by cuda/register.cu, else NULL */

typedef struct potts_params {
    int L, q, R;
    potts_algorithm algorithm;
    carlo_device_kind device;
    uint64_t seed;
    const double *beta; /* R */
    int split;          /* 1: rows split among the MPI ranks */
    potts_halo halo;    /* AUTO, STAGED or DIRECT (a split GPU system's halo path) */
} potts_params;

potts_system *potts_create(const potts_params *p);
void potts_destroy(potts_system *s);

/* Initial states: all spins 0 (ordered), or uniformly random from the seed. */
int potts_start_ordered(potts_system *s);
int potts_start_random(potts_system *s);

int potts_set_beta(potts_system *s, int replica, double beta);
void potts_rates_set(potts_rates *rt, double beta);

/* The system layer's operations (core/sys.h): runs go through carlo_run, with
 * potts_exchange as a hook for parallel tempering. */
extern const carlo_ops potts_ops;
int potts_sweep_color(potts_system *s, int color);
int potts_observe(potts_system *s, potts_obs *out);
void potts_obs_finish(const potts_system *s, potts_obs *o); /* fill e and m from the counts */

/* One parallel-tempering exchange step: pairs (k, k + 1) of temperatures with k even on
 * even steps and odd on odd steps, accepted with min(1, exp((b_k - b_k+1)(E_k - E_k+1))). */
int potts_exchange(potts_system *s);

/* Packed <-> row-major conversions shared by the backends. */
void potts_pack(int L, const uint8_t *rowmajor, uint8_t *color0, uint8_t *color1);
void potts_unpack(int L, const uint8_t *color0, const uint8_t *color1, uint8_t *rowmajor);
/* The same for the rows a rank stores (potts_rows_stored: L, or a split system's rows plus
 * halos, the halo above first): pack takes them from the whole lattice; gather makes the whole
 * lattice from every rank's slab (a collective call when split: every rank makes it). */
int potts_rows_stored(const potts_system *s);
void potts_slab_pack(const potts_system *s, const uint8_t *spins, uint8_t *c0, uint8_t *c1);
int potts_slab_gather(potts_system *s, const uint8_t *c0, const uint8_t *c1, uint8_t *spins);

/* Reference implementation for tests: one sweep of L*L random-site Metropolis updates on a
 * plain row-major lattice, with its own stream (purpose CORE_TEST). Small and obvious. */
void potts_serial_sweep(uint8_t *spins, int L, int q, double beta, uint64_t seed,
                        uint64_t sweep);

/* Frames for trajectories and checkpoints, and a system rebuilt from a checkpoint (NULL with
 * the message set when the frame is damaged or inconsistent). */
int potts_frame(potts_system *s, carlo_frame *f);
int potts_checkpoint(potts_system *s, carlo_frame *f);
potts_system *potts_restore(const carlo_frame *f, carlo_device_kind device);

#endif
