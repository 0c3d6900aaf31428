/* kmc_sys.c — lattice KMC in the system layer (core/sys.h): a continuous-time model whose
 * advance_to runs the adaptive tiled steps (or serial events) towards a time or an event count,
 * its observables, controls (sos_growth: bond and k2), frames, checkpoints and restore. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h"
#include "kmc/kmc.h"
#include "mpi/mpi.h"

#define SYS(c) ((kmc_system *)(c))

int kmc_fail(kmc_system *s)
{
    s->dead |= s->device == CARLO_GPU;
    return -1;
}

void kmc_sync_step(kmc_system *s)
{
    s->step = s->algorithm == KMC_TILED ? s->ctrl.accepted + s->ctrl.rejected : s->ctrl.events;
}

/* ---------- advancing ---------- */

static int no_event(const kmc_ctrl *c)
{
    if (c->events == 0)
        return carlo_seterr("no event can happen: every rate is zero");
    return carlo_seterr("no event can happen any more (every rate is zero) after %llu events",
                        (unsigned long long)c->events);
}

/* The start of a run segment (a new stop): what the run used to check once. Nothing can ever
 * happen: an event stop is an error, a time stop is reached at once (frames due at model times
 * are still written); else the first adaptive step reaches the earliest event (Sec. 2.2). */
static int segment_start(kmc_system *s, double t_stop, uint64_t ev_stop, int *reached)
{
    kmc_ctrl *c = &s->ctrl;
    double mt;
    if (s->be->min_tau(s, &mt))
        return kmc_fail(s);
    if (!(mt < INFINITY)) {
        if (ev_stop != UINT64_MAX || !(t_stop < INFINITY))
            return no_event(c);
        if (c->t < t_stop)
            c->t = t_stop; /* nothing changes, ever */
        *reached = 1;
        return 0;
    }
    if (s->algorithm == KMC_TILED && !(c->dt > 0)) {
        c->dt = mt - c->t;
        if (!(c->dt > 0))
            c->dt = (fabs(c->t) > 1 ? fabs(c->t) : 1) * 0x1p-40;
    }
    return 0;
}

/* One call of the backend towards (t_stop, ev_stop): budget steps (tiled) or events at most. */
static int advance_segment(kmc_system *s, double t_stop, uint64_t ev_stop, uint64_t budget,
                           int *reached)
{
    kmc_ctrl *c = &s->ctrl;
    if (t_stop != s->seg_t_stop || ev_stop != s->seg_ev_stop) {
        s->seg_t_stop = t_stop;
        s->seg_ev_stop = ev_stop;
        if (segment_start(s, t_stop, ev_stop, reached) || *reached)
            return *reached ? 0 : -1;
    }
    c->t_stop = t_stop;
    c->ev_stop = ev_stop;
    c->mode = KMC_MODE_ADAPTIVE;
    c->force = 0;
    c->done = 0;
    kmc_ctrl_plan(c); /* the same plan as the step before made: planning is idempotent */
    if (c->done) {
        *reached = 1;
        return 0;
    }
    const uint64_t before = c->events;
    if (s->be->advance(s, budget))
        return kmc_fail(s);
    kmc_sync_step(s);
    if (c->overflow)
        return carlo_seterr("a site has drawn 2^32 waiting times: its random numbers would repeat "
                            "(the state at t = %.17g is kept)", c->t);
    if (carlo_interrupted)
        return 0; /* the driver stops; a step cut short was not decided */
    if (c->events == before && (!c->done || c->t < t_stop)) { /* no progress */
        double mt;
        if (s->be->min_tau(s, &mt))
            return kmc_fail(s);
        if (!(mt < INFINITY)) {
            if (ev_stop != UINT64_MAX)
                return no_event(c);
            c->t = t_stop;
            c->done = 1;
        }
    }
    *reached = c->done != 0;
    return 0;
}

static int op_advance_to(carlo_sys *cs, double t_stop, uint64_t ev_stop, uint64_t budget,
                         int *reached)
{
    kmc_system *s = SYS(cs);
    *reached = 0;
    if (carlo_sys_alive(cs))
        return -1;
    if (s->split) {
        /* the driver sizes budgets by each rank's clock: the ranks take the smallest, so that
         * every call does the same steps (and the same collective calls) on every rank */
        double b = (double)budget;
        if (carlo_mpi_min_f64(&b, 1))
            return -1;
        budget = (uint64_t)b;
    }
    int rc = advance_segment(s, t_stop, ev_stop, budget, reached);
    kmc_ctrl *c = &s->ctrl;
    c->t_stop = INFINITY;
    c->ev_stop = UINT64_MAX;
    if (rc || *reached)
        s->seg_t_stop = NAN; /* the next call starts a segment */
    return rc;
}

static void op_clock(const carlo_sys *cs, double *t, uint64_t *events)
{
    const kmc_system *s = (const kmc_system *)cs;
    *t = s->ctrl.t;
    *events = s->ctrl.events;
}

static int op_sync(carlo_sys *cs)
{
    kmc_system *s = SYS(cs);
    return s->be->sync(s) ? kmc_fail(s) : 0;
}

static int op_counts(carlo_sys *cs, carlo_counts *k)
{
    const kmc_system *s = SYS(cs);
    memset(k, 0, sizeof *k);
    if (s->algorithm == KMC_TILED) { /* tiled steps; every event of serial and bkl is one */
        k->tried = s->ctrl.accepted + s->ctrl.rejected;
        k->accepted = s->ctrl.accepted;
    }
    return 0;
}

/* ---------- observables ---------- */

enum { OBS_MEAN, OBS_WIDTH, OBS_MIN, OBS_MAX, OBS_NEXT };

/* "n_0" ... "n_255": the population of each state of a user model */
static const char *population_name(int k)
{
    static char names[256][16];
    if (!names[k][0])
        snprintf(names[k], sizeof names[k], "n_%d", k);
    return names[k];
}

static int op_observables(carlo_sys *cs, const void *opt, carlo_obs_set *o)
{
    (void)opt;
    const kmc_system *s = SYS(cs);
    carlo_obs_add(o, "mean");
    carlo_obs_add(o, "width");
    carlo_obs_add(o, "min");
    carlo_obs_add(o, "max");
    if (s->model.kind == KMC_SOS) {
        carlo_obs_add(o, "step_fraction");
        return 0;
    }
    for (int k = 0; k < s->model.S; k++)
        if (carlo_obs_add(o, population_name(k)) < 0)
            return carlo_seterr("%d states are more observables than %d", s->model.S, CARLO_OBS_MAX);
    return 0;
}

static int op_observe(carlo_sys *cs, const void *opt, double *v)
{
    (void)opt;
    kmc_system *s = SYS(cs);
    if (carlo_sys_alive(cs))
        return -1;
    kmc_obs o;
    uint64_t *counts = NULL;
    if (s->model.kind == KMC_TABLE &&
        !(counts = carlo_malloc(sizeof *counts * (size_t)s->model.S, "the KMC populations")))
        return -1;
    int rc = kmc_observe(s, &o, counts);
    if (rc == 0) {
        v[OBS_MEAN] = o.mean;
        v[OBS_WIDTH] = o.width;
        v[OBS_MIN] = (double)o.min;
        v[OBS_MAX] = (double)o.max;
        if (s->model.kind == KMC_SOS)
            v[OBS_NEXT] = o.step_fraction;
        else
            for (int k = 0; k < s->model.S; k++)
                v[OBS_NEXT + k] = (double)counts[k];
    }
    free(counts);
    return rc;
}

/* ---------- controls: sos_growth's bond and k2 ---------- */

static int get_bond(carlo_sys *cs, double *v)
{
    *v = SYS(cs)->bond;
    return 0;
}

static int get_k2(carlo_sys *cs, double *v)
{
    *v = SYS(cs)->k2;
    return 0;
}

static int set_bond(carlo_sys *cs, double v)
{
    return kmc_set_sos(SYS(cs), v, SYS(cs)->k2);
}

static int set_k2(carlo_sys *cs, double v)
{
    return kmc_set_sos(SYS(cs), SYS(cs)->bond, v);
}

static const carlo_control controls[] = {
    {"bond", -KMC_BOND_MAX, KMC_BOND_MAX, 1, 1, get_bond, set_bond},
    {"k2", 0, INFINITY, 0, 0, get_k2, set_k2},
};

/* ---------- frames and checkpoints ---------- */

static int add_states(kmc_system *s, carlo_frame *f, int for_frame)
{
    size_t N = (size_t)s->m * (size_t)s->n;
    int32_t *x = carlo_malloc(carlo_mulsize(N, sizeof *x), "a KMC frame");
    if (!x)
        return -1;
    if (s->be->get_state(s, x, NULL, NULL)) {
        free(x);
        return kmc_fail(s);
    }
    if (for_frame && s->model.kind == KMC_TABLE) { /* states fit a byte (S <= 256) */
        uint8_t *b = carlo_malloc(N, "a KMC frame");
        if (!b) {
            free(x);
            return -1;
        }
        for (size_t i = 0; i < N; i++)
            b[i] = (uint8_t)x[i];
        free(x);
        return carlo_frame_add_owned(f, "lattice/state", CARLO_U8, (uint64_t)s->m, (uint64_t)s->n, b);
    }
    return carlo_frame_add_owned(f, for_frame ? "lattice/height" : "kmc/x", CARLO_I32,
                                 (uint64_t)s->m, (uint64_t)s->n, x);
}

int kmc_frame(kmc_system *s, carlo_frame *f)
{
    return carlo_frame_add_u64(f, "configuration/step", s->step) ||
           carlo_frame_add_f64(f, "log/t", s->ctrl.t) ||
           carlo_frame_add_u64(f, "log/events", s->ctrl.events) || add_states(s, f, 1);
}

int kmc_checkpoint(kmc_system *s, carlo_frame *f)
{
    const kmc_ctrl *c = &s->ctrl;
    int32_t shape[8] = {s->m, s->n, (int32_t)s->algorithm, s->model.kind, s->model.nbh, s->model.S,
                        s->geom.halo, s->tiles_per_block};
    double params[5] = {s->bond, s->k2, c->grow_initial, c->grow_after, c->shrink};
    double time[4] = {c->t, c->dt, c->grow, c->rate_est};
    uint64_t counters[6] = {c->events, c->simulated, c->accepted, c->rejected, c->rejected_once,
                            c->domain_events};
    uint64_t repair[2] = {c->repair, c->repaired};
    if (carlo_frame_add_string(f, "carlo/model", "kmc") ||
        carlo_frame_add_u64(f, "configuration/step", s->step) ||
        carlo_frame_add_u64(f, "carlo/seed", s->seed) ||
        carlo_frame_add_copy(f, "kmc/shape", CARLO_I32, 8, 1, shape) ||
        carlo_frame_add_copy(f, "kmc/params", CARLO_F64, 5, 1, params) ||
        carlo_frame_add_copy(f, "kmc/time", CARLO_F64, 4, 1, time) ||
        carlo_frame_add_copy(f, "kmc/counters", CARLO_U64, 6, 1, counters) ||
        carlo_frame_add_copy(f, "kmc/repair", CARLO_U64, 2, 1, repair) || add_states(s, f, 0) ||
        (s->split && carlo_frame_add_u64(f, "kmc/split", 1)))
        return -1;
    if (s->model.kind == KMC_TABLE) {
        double *rates = carlo_malloc(sizeof *rates * (s->nevents ? s->nevents : 1), "a checkpoint");
        int32_t *targets = carlo_malloc(sizeof *targets * (s->nevents ? s->nevents : 1), "a checkpoint");
        uint32_t *counts = carlo_malloc(sizeof *counts * s->nconfigs, "a checkpoint");
        if (!rates || !targets || !counts) {
            free(rates);
            free(targets);
            free(counts);
            return -1;
        }
        for (uint32_t cfg = 0; cfg < s->nconfigs; cfg++) {
            const kmc_config *k = &s->configs[cfg];
            counts[cfg] = k->count;
            for (uint32_t e = k->first; e < k->first + k->count; e++) {
                rates[e] = s->event_rates[e];
                targets[e] = s->events[e].target;
            }
        }
        if (carlo_frame_add_owned(f, "kmc/event_count", CARLO_U32, s->nconfigs, 1, counts) ||
            carlo_frame_add_owned(f, "kmc/event_target", CARLO_I32, s->nevents, 1, targets) ||
            carlo_frame_add_owned(f, "kmc/event_rate", CARLO_F64, s->nevents, 1, rates))
            return -1;
    }
    if (s->algorithm == KMC_BKL)
        return 0;
    size_t N = (size_t)s->m * (size_t)s->n;
    double *tau = carlo_malloc(carlo_mulsize(N, sizeof *tau), "a checkpoint");
    uint32_t *cnt = tau ? carlo_malloc(carlo_mulsize(N, sizeof *cnt), "a checkpoint") : NULL;
    if (!cnt || s->be->get_state(s, NULL, tau, cnt)) {
        free(tau);
        free(cnt);
        return cnt ? kmc_fail(s) : -1;
    }
    return carlo_frame_add_owned(f, "kmc/tau", CARLO_F64, (uint64_t)s->m, (uint64_t)s->n, tau) ||
           carlo_frame_add_owned(f, "kmc/draws", CARLO_U32, (uint64_t)s->m, (uint64_t)s->n, cnt);
}

kmc_system *kmc_restore(const carlo_frame *f, carlo_device_kind device)
{
    const int32_t *shape = carlo_frame_expect(f, "kmc/shape", CARLO_I32, 8, 1);
    const double *params = carlo_frame_expect(f, "kmc/params", CARLO_F64, 5, 1);
    const double *time = carlo_frame_expect(f, "kmc/time", CARLO_F64, 4, 1);
    const uint64_t *counters = carlo_frame_expect(f, "kmc/counters", CARLO_U64, 6, 1);
    const uint64_t *seed = carlo_frame_expect(f, "carlo/seed", CARLO_U64, 1, 1);
    if (!shape || !params || !time || !counters || !seed)
        return NULL;
    if (shape[0] < KMC_TILE || shape[0] > KMC_SIDE_MAX || shape[1] < KMC_TILE ||
        shape[1] > KMC_SIDE_MAX || shape[2] < 0 || shape[2] > 2 || shape[3] < 0 || shape[3] > 1) {
        carlo_seterr("bad kmc/shape");
        return NULL;
    }
    uint64_t m = (uint64_t)shape[0], n = (uint64_t)shape[1];
    const int32_t *x = carlo_frame_expect(f, "kmc/x", CARLO_I32, m, n);
    if (!x)
        return NULL;
    kmc_params p;
    memset(&p, 0, sizeof p);
    p.m = shape[0];
    p.n = shape[1];
    p.algorithm = (kmc_algorithm)shape[2];
    p.device = device;
    p.seed = *seed;
    p.kind = shape[3];
    p.nbh = shape[4];
    p.S = shape[5];
    p.halo = shape[6];
    p.tiles_per_block = shape[7];
    p.bond = params[0];
    p.k2 = params[1];
    p.grow_initial = params[2];
    p.grow = params[3];
    p.shrink = params[4];
    p.initial = x;
    /* a split system's checkpoint holds the whole lattice: split again over the ranks now, on
     * the device asked for */
    p.split = carlo_frame_find(f, "kmc/split") != NULL;
    /* checkpoints from before the repair (kmc_kernel.h) go on without it, as they ran */
    const uint64_t *repair = NULL;
    if (carlo_frame_find(f, "kmc/repair")) {
        repair = carlo_frame_expect(f, "kmc/repair", CARLO_U64, 2, 1);
        if (!repair)
            return NULL;
    }
    p.repair = repair && repair[0];
    if (p.kind == KMC_TABLE) {
        if ((p.nbh != 4 && p.nbh != 8) || p.S < 2 || p.S > 256 ||
            kmc_ipow((uint32_t)p.S, p.nbh + 1) > KMC_CONFIGS_MAX) {
            carlo_seterr("bad kmc/shape");
            return NULL;
        }
        uint32_t nc = kmc_ipow((uint32_t)p.S, p.nbh + 1);
        p.counts = carlo_frame_expect(f, "kmc/event_count", CARLO_U32, nc, 1);
        const carlo_chunk *rc = carlo_frame_find(f, "kmc/event_rate");
        if (!p.counts || !rc)
            return p.counts ? (carlo_seterr("missing chunk kmc/event_rate"), NULL) : NULL;
        p.nevents = (uint32_t)rc->rows;
        p.rates = carlo_frame_expect(f, "kmc/event_rate", CARLO_F64, rc->rows, 1);
        p.targets = carlo_frame_expect(f, "kmc/event_target", CARLO_I32, rc->rows, 1);
        if (!p.rates || !p.targets || rc->rows > KMC_EVENTS_MAX)
            return p.rates && p.targets ? (carlo_seterr("too many events"), NULL) : NULL;
    }
    const double *tau = NULL;
    const uint32_t *draws = NULL;
    if (p.algorithm != KMC_BKL) {
        tau = carlo_frame_expect(f, "kmc/tau", CARLO_F64, m, n);
        draws = carlo_frame_expect(f, "kmc/draws", CARLO_U32, m, n);
        if (!tau || !draws)
            return NULL;
        for (uint64_t i = 0; i < m * n; i++)
            if (!(tau[i] >= time[0]) || isnan(tau[i])) {
                carlo_seterr("a clock lies before t");
                return NULL;
            }
    }
    kmc_system *s = kmc_create(&p);
    if (!s)
        return NULL;
    kmc_ctrl *c = &s->ctrl;
    c->t = time[0];
    c->dt = time[1];
    c->grow = time[2];
    c->rate_est = time[3];
    c->events = counters[0];
    c->simulated = counters[1];
    c->accepted = counters[2];
    c->rejected = counters[3];
    c->rejected_once = counters[4] != 0;
    c->domain_events = counters[5];
    c->repaired = repair ? repair[1] : 0;
    if (!isfinite(c->t) || c->t < 0 || !(c->dt >= 0) || !(c->grow > 1) || !isfinite(c->grow)) {
        carlo_seterr("bad kmc/time");
        kmc_destroy(s);
        return NULL;
    }
    if (tau && s->be->set_state(s, x, tau, draws)) {
        kmc_destroy(s);
        return NULL;
    }
    kmc_sync_step(s);
    return s;
}

static int op_frame(carlo_sys *cs, carlo_frame *f)
{
    return carlo_sys_alive(cs) ? -1 : kmc_frame(SYS(cs), f);
}

static int op_checkpoint(carlo_sys *cs, carlo_frame *f)
{
    return carlo_sys_alive(cs) ? -1 : kmc_checkpoint(SYS(cs), f);
}

static carlo_sys *op_restore(const carlo_frame *f, carlo_device_kind device)
{
    kmc_system *s = kmc_restore(f, device);
    return s ? &s->sys : NULL;
}

static void op_destroy(carlo_sys *cs)
{
    kmc_destroy(SYS(cs));
}

/* Tiles per block the tuner tries on the GPU (core/sys.h), the default first; a shape the
 * shared memory cannot hold keeps the one in use. Tiled only: the serial algorithms have none. */
static int op_launch_candidates(const carlo_sys *cs)
{
    return ((const kmc_system *)cs)->algorithm == KMC_TILED ? 4 : 1;
}

static int op_launch_pick(carlo_sys *cs, int k)
{
    static const int tpb[4] = {KMC_TPB_DEFAULT, 1, 4, 8};
    kmc_system *s = SYS(cs);
    int keep = s->tiles_per_block;
    if (kmc_set_launch(s, tpb[k]))
        kmc_set_launch(s, keep);
    return 0;
}

#define KMC_OPS_COMMON                                                                         \
    .name = "kmc", .unit = "events", .continuous = 1, .advance_to = op_advance_to,             \
    .clock = op_clock, .sync = op_sync, .observables = op_observables, .observe = op_observe,  \
    .counts = op_counts, .frame = op_frame, .checkpoint = op_checkpoint,                       \
    .restore = op_restore, .destroy = op_destroy, .launch_candidates = op_launch_candidates,   \
    .launch_pick = op_launch_pick

const carlo_ops kmc_ops = {KMC_OPS_COMMON, .controls = controls, .ncontrols = 2};
const carlo_ops kmc_user_ops = {KMC_OPS_COMMON, .controls = NULL, .ncontrols = 0};
