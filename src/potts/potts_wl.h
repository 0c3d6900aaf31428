/* potts_wl.h — Wang-Landau density of states g(E) of the q-state Potts model on an L x L torus:
 * the energy range in W overlapping windows walked independently (CPU: one OpenMP thread per
 * window; GPU: one warp per window, a lane per walker), joined by matching ln g in the overlaps.
 * E = -b, b the number of equal nearest-neighbour pairs (J = k_B = 1); see potts_wl_kernel.h. */
#ifndef CARLO_POTTS_WL_H
#define CARLO_POTTS_WL_H

#include <stdint.h>

#include "core/device.h"
#include "potts/potts_wl_kernel.h"

/* L is even (as for carlo.potts) and at most POTTS_WL_L_MAX: the 2 L^2 + 1 energy levels of
 * every window are held in memory and a walk visits each many times. */
#define POTTS_WL_L_MAX 1024
#define POTTS_WL_WINDOWS_MAX 4096
#define POTTS_WL_WALKERS_MAX 32 /* a warp's lanes */
#define POTTS_WL_MIN_WIDTH 8    /* levels of b per window, at least */
#define POTTS_WL_MIN_OVERLAP 4  /* levels of b shared by neighbouring windows, at least */

typedef struct potts_wl_params {
    int L, q, windows, walkers;
    double overlap;  /* fraction of a window shared with each neighbour, in (0, 1) */
    double flatness; /* in (0, 1) */
    double final;    /* the last ln f, in (0, 1) */
    uint64_t seed;
    carlo_device_kind device;
    int quiet;
} potts_wl_params;

struct potts_wl_backend;

typedef struct potts_wl {
    potts_wl_par par;
    int W;
    carlo_device_kind device;
    potts_wl_window *win;   /* W, the host's copy */
    int32_t *b;             /* W x walkers: each walker's equal-bond count */
    uint8_t *spins;         /* W x walkers x N, row-major lattices */
    double *lng;            /* W x stride: ln g of level lo + k of each window, 0 = unvisited */
    uint64_t *hist;         /* W x stride: the histogram since the last flat one */
    const struct potts_wl_backend *be;
    void *impl;             /* the backend's own state */
    double seconds;         /* spent walking */
} potts_wl;

/* A backend walks the windows; the host prepares them (walkers driven into their windows)
 * and joins the result. All return 0 or -1 with the message set. */
typedef struct potts_wl_backend {
    const char *name;
    int (*create)(potts_wl *r);                 /* take the prepared state */
    int (*advance)(potts_wl *r, uint64_t steps);/* up to `steps` steps of every window not done;
                                                   r->win is current afterwards */
    int (*fetch)(potts_wl *r);                  /* lng, hist, b and spins to the host */
    void (*destroy)(potts_wl *r);
} potts_wl_backend;

extern const potts_wl_backend potts_wl_cpu_backend;
extern const potts_wl_backend *potts_wl_gpu_backend; /* set by cuda/register.cu, else NULL */

/* Checks the parameters (message names the key), splits the range and drives each walker into
 * its window. NULL with the message set on failure. */
potts_wl *potts_wl_create(const potts_wl_params *p);
/* Walks until every window reached the final ln f (Ctrl-C: -1, "interrupted"). */
int potts_wl_run(potts_wl *r, int quiet);
/* The joined, normalised result: for each level b = 0..2N, lng_out[b] = ln g(E = -b) with
 * sum g = q^N, or -INFINITY where no window visited b. */
int potts_wl_join(potts_wl *r, double *lng_out);
void potts_wl_destroy(potts_wl *r);

/* Window k's ln g and histogram (entry b - lo for level b). */
static inline double *potts_wl_lng(potts_wl *r, int k) { return r->lng + (int64_t)k * r->par.stride; }
static inline uint64_t *potts_wl_hist(potts_wl *r, int k) { return r->hist + (int64_t)k * r->par.stride; }

/* The Lua binding (potts_wl_lua.c): registers carlo.wang_landau in the module table at -1. */
struct lua_State;
void potts_wl_lua_open(struct lua_State *L);

#endif
