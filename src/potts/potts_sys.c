/* potts_sys.c — the Potts model in the system layer (core/sys.h): its operations (advance,
 * observe, controls T and beta, frames while the sweeps go on), checkpoints and restore. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "potts/potts.h"

#define SYS(c) ((potts_system *)(c))

static int fail(potts_system *s)
{
    s->dead |= s->device == CARLO_GPU;
    return -1;
}

static int op_advance(carlo_sys *c, uint64_t n)
{
    potts_system *s = SYS(c);
    return s->be->sweeps(s, n) ? fail(s) : 0;
}

static int op_sync(carlo_sys *c)
{
    potts_system *s = SYS(c);
    return s->be->sync(s) ? fail(s) : 0;
}

/* ---------- observables: e and m per replica; C, chi and V_L from their moments ---------- */

enum { OBS_E, OBS_M, OBS_N };

static double f_C(const double *mu, const carlo_sys *c, int k)
{
    const potts_system *s = (const potts_system *)c;
    double b = 1.0 / s->temperatures[k];
    return (double)s->L * (double)s->L * b * b * (mu[1] - mu[0] * mu[0]);
}

static double f_chi(const double *mu, const carlo_sys *c, int k)
{
    const potts_system *s = (const potts_system *)c;
    return (double)s->L * (double)s->L / s->temperatures[k] * (mu[1] - mu[0] * mu[0]);
}

static double f_VL(const double *mu, const carlo_sys *c, int k)
{
    (void)c;
    (void)k;
    return 1.0 - mu[1] / (3.0 * mu[0] * mu[0]);
}

static int op_observables(carlo_sys *c, const void *opt, carlo_obs_set *o)
{
    (void)c;
    (void)opt;
    carlo_obs_add(o, "e");
    carlo_obs_add(o, "m");
    const int e[2] = {OBS_E, OBS_E}, m[2] = {OBS_M, OBS_M}, p12[2] = {1, 2}, p24[2] = {2, 4};
    carlo_obs_derive(o, "C", f_C, 2, e, p12);
    carlo_obs_derive(o, "chi", f_chi, 2, m, p12);
    carlo_obs_derive(o, "V_L", f_VL, 2, e, p24);
    return 0;
}

static int op_observe(carlo_sys *c, const void *opt, double *v)
{
    (void)opt;
    potts_system *s = SYS(c);
    potts_obs *o = carlo_malloc(sizeof *o * (size_t)s->R, "Potts observations");
    if (!o)
        return -1;
    int rc = potts_observe(s, o);
    for (int k = 0; rc == 0 && k < s->R; k++) { /* in temperature order */
        v[k * OBS_N + OBS_E] = o[s->slot[k]].e;
        v[k * OBS_N + OBS_M] = o[s->slot[k]].m;
    }
    free(o);
    return rc;
}

/* ---------- controls: one temperature (an ensemble's are set when it is made) ---------- */

static int single(const potts_system *s)
{
    return s->R == 1 ? 0 : carlo_seterr("an ensemble has temperatures, one per replica");
}

static int get_T(carlo_sys *c, double *v)
{
    if (single(SYS(c)))
        return -1;
    *v = SYS(c)->temperatures[0];
    return 0;
}

static int get_beta(carlo_sys *c, double *v)
{
    if (single(SYS(c)))
        return -1;
    *v = SYS(c)->beta[0];
    return 0;
}

static int set_beta(carlo_sys *c, double beta)
{
    potts_system *s = SYS(c);
    if (single(s) || potts_set_beta(s, 0, beta))
        return -1;
    s->temperatures[0] = 1.0 / beta;
    return 0;
}

static int set_T(carlo_sys *c, double T)
{
    return set_beta(c, 1.0 / T);
}

static const carlo_control controls[] = {
    {"T", 1.0 / POTTS_BETA_MAX, INFINITY, 1, 0, get_T, set_T},
    {"beta", 0, POTTS_BETA_MAX, 1, 1, get_beta, set_beta},
};

/* ---------- frames ---------- */

/* The frame's lattices chunk: all replicas row-major, R L x L bytes in a buffer of
 * lattice_bytes(s) that the frame takes over (and frees on failure). */
static size_t lattice_bytes(const potts_system *s)
{
    return carlo_mulsize((size_t)s->L * (size_t)s->L, (size_t)s->R);
}

static int add_spins(const potts_system *s, carlo_frame *f, uint8_t *all)
{
    return carlo_frame_add_owned(f, "lattice/spins", CARLO_U8, (uint64_t)s->R * (uint64_t)s->L,
                                 (uint64_t)s->L, all);
}

static int add_lattices(potts_system *s, carlo_frame *f)
{
    size_t plane = (size_t)s->L * (size_t)s->L;
    uint8_t *all = carlo_malloc(lattice_bytes(s), "a lattice frame");
    if (!all)
        return -1;
    for (int r = 0; r < s->R; r++)
        if (s->be->get_lattice(s, r, all + (size_t)r * plane)) {
            free(all);
            return -1;
        }
    return add_spins(s, f, all);
}

/* Everything of a trajectory frame but the lattices. */
static int frame_head(potts_system *s, carlo_frame *f)
{
    uint32_t q = (uint32_t)s->q;
    if (carlo_frame_add_u64(f, "configuration/step", s->step) ||
        carlo_frame_add_copy(f, "lattice/q", CARLO_U32, 1, 1, &q) ||
        carlo_frame_add_copy(f, "lattice/temperature", CARLO_F64, (uint64_t)s->R, 1,
                             s->temperatures) ||
        carlo_frame_add_copy(f, "lattice/slot", CARLO_I32, (uint64_t)s->R, 1, s->slot))
        return -1;
    return 0;
}

int potts_frame(potts_system *s, carlo_frame *f)
{
    return frame_head(s, f) || add_lattices(s, f) ? -1 : 0;
}

static int op_frame(carlo_sys *c, carlo_frame *f)
{
    return potts_frame(SYS(c), f);
}

/* A frame whose lattices travel from the device while the sweeps go on (lattices_start). */
static int op_frame_start(carlo_sys *c, carlo_frame *f)
{
    potts_system *s = SYS(c);
    if (!s->be->lattices_start)
        return 1;
    if (frame_head(s, f))
        return -1;
    return s->be->lattices_start(s);
}

static int op_frame_fetch(carlo_sys *c, carlo_frame *f, int wait)
{
    potts_system *s = SYS(c);
    const uint8_t *data = NULL;
    int got = s->be->lattices_fetch(s, wait, &data);
    if (got <= 0)
        return got;
    const size_t bytes = lattice_bytes(s);
    uint8_t *all = carlo_malloc(bytes, "a lattice frame");
    if (!all)
        return -1;
    /* in slices over the cores: the one copy a frame costs the run's thread */
    const size_t slice = (size_t)1 << 22;
    const int64_t n = (int64_t)((bytes + slice - 1) / slice);
#pragma omp parallel for schedule(static) if (n > 4)
    for (int64_t k = 0; k < n; k++) {
        size_t at = (size_t)k * slice;
        memcpy(all + at, data + at, bytes - at < slice ? bytes - at : slice);
    }
    return add_spins(s, f, all) ? -1 : 1;
}

/* ---------- checkpoints ---------- */

int potts_checkpoint(potts_system *s, carlo_frame *f)
{
    int32_t shape[4] = {s->L, s->q, s->R, (int32_t)s->algorithm};
    if (carlo_frame_add_string(f, "carlo/model", "potts") ||
        carlo_frame_add_u64(f, "configuration/step", s->step) ||
        carlo_frame_add_u64(f, "carlo/seed", s->seed) ||
        carlo_frame_add_u64(f, "potts/halfstep", s->halfstep) ||
        carlo_frame_add_copy(f, "potts/shape", CARLO_I32, 4, 1, shape) ||
        carlo_frame_add_copy(f, "potts/beta", CARLO_F64, (uint64_t)s->R, 1, s->beta) ||
        carlo_frame_add_copy(f, "potts/temperatures", CARLO_F64, (uint64_t)s->R, 1, s->temperatures) ||
        carlo_frame_add_copy(f, "potts/slot", CARLO_I32, (uint64_t)s->R, 1, s->slot) ||
        carlo_frame_add_copy(f, "potts/swap_tried", CARLO_U64, (uint64_t)s->R, 1, s->swap_tried) ||
        carlo_frame_add_copy(f, "potts/swap_accepted", CARLO_U64, (uint64_t)s->R, 1, s->swap_accepted) ||
        carlo_frame_add_copy(f, "potts/direction", CARLO_I32, (uint64_t)s->R, 1, s->direction) ||
        carlo_frame_add_copy(f, "potts/round_trips", CARLO_U64, (uint64_t)s->R, 1, s->round_trips) ||
        carlo_frame_add_u64(f, "potts/exchanges", s->exchanges) ||
        (s->split && carlo_frame_add_u64(f, "potts/split", 1)))
        return -1;
    return add_lattices(s, f); /* a split system's gathered from every rank */
}

static int op_checkpoint(carlo_sys *c, carlo_frame *f)
{
    return potts_checkpoint(SYS(c), f);
}

static potts_system *restore_fail(potts_system *s, const char *msg)
{
    if (msg)
        carlo_seterr("%s", msg);
    potts_destroy(s);
    return NULL;
}

potts_system *potts_restore(const carlo_frame *f, carlo_device_kind device)
{
    const int32_t *shape = carlo_frame_expect(f, "potts/shape", CARLO_I32, 4, 1);
    const uint64_t *seed = carlo_frame_expect(f, "carlo/seed", CARLO_U64, 1, 1);
    const uint64_t *step = carlo_frame_expect(f, "configuration/step", CARLO_U64, 1, 1);
    const uint64_t *half = carlo_frame_expect(f, "potts/halfstep", CARLO_U64, 1, 1);
    if (!shape || !seed || !step || !half)
        return NULL;
    int R = shape[2];
    if (R < 1 || R > 1 << 20 || shape[3] < 0 || shape[3] > 1) {
        carlo_seterr("bad shape");
        return NULL;
    }
    uint64_t Lu = (uint64_t)(shape[0] > 0 ? shape[0] : 0);
    const double *beta = carlo_frame_expect(f, "potts/beta", CARLO_F64, (uint64_t)R, 1);
    const double *temps = carlo_frame_expect(f, "potts/temperatures", CARLO_F64, (uint64_t)R, 1);
    const int32_t *slot = carlo_frame_expect(f, "potts/slot", CARLO_I32, (uint64_t)R, 1);
    const uint64_t *tried = carlo_frame_expect(f, "potts/swap_tried", CARLO_U64, (uint64_t)R, 1);
    const uint64_t *acc = carlo_frame_expect(f, "potts/swap_accepted", CARLO_U64, (uint64_t)R, 1);
    const int32_t *dir = carlo_frame_expect(f, "potts/direction", CARLO_I32, (uint64_t)R, 1);
    const uint64_t *trips = carlo_frame_expect(f, "potts/round_trips", CARLO_U64, (uint64_t)R, 1);
    const uint64_t *exch = carlo_frame_expect(f, "potts/exchanges", CARLO_U64, 1, 1);
    const uint8_t *spins = carlo_frame_expect(f, "lattice/spins", CARLO_U8, Lu * (uint64_t)R, Lu);
    if (!beta || !temps || !slot || !tried || !acc || !dir || !trips || !exch || !spins)
        return NULL;
    /* a split system's checkpoint holds the whole lattice; restored split again, over the
     * ranks there are now (as many or not) */
    const carlo_chunk *split = carlo_frame_find(f, "potts/split");
    potts_params p = {.L = shape[0], .q = shape[1], .R = R, .algorithm = (potts_algorithm)shape[3],
                      .device = device, .seed = *seed, .beta = beta, .split = split != NULL};
    potts_system *s = potts_create(&p);
    if (!s)
        return NULL;
    size_t plane = (size_t)s->L * (size_t)s->L;
    for (size_t i = 0; i < plane * (size_t)R; i++)
        if (spins[i] >= s->q)
            return restore_fail(s, "a state is out of range");
    /* the tempering map must be a permutation, each temperature the one of its beta */
    int *seen = carlo_calloc((size_t)R, sizeof *seen, "a tempering check");
    if (!seen)
        return restore_fail(s, NULL);
    for (int r = 0; r < R; r++) {
        int ok = slot[r] >= 0 && slot[r] < R && !seen[slot[r]] && temps[r] > 0;
        if (ok) {
            double b = beta[slot[r]], T = temps[r];
            ok = (b == 0 && isinf(T)) || fabs(T * b - 1.0) < 1e-12;
        }
        if (ok)
            seen[slot[r]] = 1;
        if (!ok) {
            free(seen);
            return restore_fail(s, "bad tempering state");
        }
    }
    free(seen);
    for (int r = 0; r < R; r++) {
        if (s->be->set_lattice(s, r, spins + (size_t)r * plane))
            return restore_fail(s, NULL);
        s->slot[r] = slot[r];
        s->temperatures[r] = temps[r];
        s->swap_tried[r] = tried[r];
        s->swap_accepted[r] = acc[r];
        s->direction[r] = dir[r];
        s->round_trips[r] = trips[r];
    }
    s->step = *step;
    s->halfstep = *half;
    s->exchanges = *exch;
    return s;
}

static carlo_sys *op_restore(const carlo_frame *f, carlo_device_kind device)
{
    potts_system *s = potts_restore(f, device);
    return s ? &s->sys : NULL;
}

static void op_destroy(carlo_sys *c)
{
    potts_destroy(SYS(c));
}

const carlo_ops potts_ops = {
    .name = "potts",
    .unit = "sweeps",
    .advance = op_advance,
    .sync = op_sync,
    .observables = op_observables,
    .observe = op_observe,
    .controls = controls,
    .ncontrols = 2,
    .frame = op_frame,
    .checkpoint = op_checkpoint,
    .restore = op_restore,
    .frame_start = op_frame_start,
    .frame_fetch = op_frame_fetch,
    .destroy = op_destroy,
};
