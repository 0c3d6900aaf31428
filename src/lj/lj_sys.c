/* lj_sys.c — the Lennard-Jones model in the system layer (core/sys.h): creation and restore by
 * algorithm, its operations (advance, observe U and P with Widom and g(r) as options, counts,
 * controls T and beta, frames, checkpoints), move-size tuning and energy checks. It reaches
 * the algorithms through their lj_algo tables (lj_dec.c, lj_cb.c), which never call back. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h"
#include "lj/lj.h"
#include "lj/lj_cb.h"
#include "lj/lj_dec.h"

#define SYS(c) ((lj_system *)(c))

lj_system *lj_create(const lj_params *p)
{
    if (p->mode != LJ_DECOMPOSITION && p->mode != LJ_CHECKERBOARD) {
        carlo_seterr("mode must be decomposition or checkerboard (got %d)", (int)p->mode);
        return NULL;
    }
    lj_system *s = p->mode == LJ_CHECKERBOARD ? lj_cb_create(p) : lj_dec_create(p);
    if (s)
        s->ops = &lj_ops;
    return s;
}

void lj_destroy(lj_system *s)
{
    if (s)
        s->algo->destroy(s);
}

/* ---------- runs ---------- */

int lj_run(lj_system *s, uint64_t sweeps)
{
    return carlo_advance(&s->sys, sweeps);
}

int lj_trial_moves(lj_system *s, uint64_t n)
{
    if (s->mode != LJ_DECOMPOSITION)
        return carlo_seterr("single trial moves belong to mode = \"decomposition\"; the "
                            "checkerboard runs sweeps and sub-sweeps (substep)");
    return lj_dec_moves(LJ_DEC(s), n);
}

int lj_substep(lj_system *s, int set)
{
    if (s->mode != LJ_CHECKERBOARD)
        return carlo_seterr("sub-sweeps of checkerboard sets belong to mode = \"checkerboard\"; "
                            "the decomposition runs single trial moves (trial)");
    return lj_cb_substep(LJ_CB(s), set);
}

int lj_positions(lj_system *s, double *pos)
{
    return carlo_sys_alive(&s->sys) ? -1 : s->algo->positions(s, pos);
}

/* ---------- parameters ---------- */

double lj_delta_max(const lj_system *s)
{
    return s->algo->delta_max(s);
}

int lj_set_temperature(lj_system *s, double T)
{
    if (!(T > 0) || !isfinite(T) || !isfinite(1.0 / T))
        return carlo_seterr("T must be a number > 0 (got %g)", T);
    s->T = T;
    s->beta = 1.0 / T;
    return 0;
}

int lj_set_delta(lj_system *s, double delta)
{
    if (!(delta > 0) || !(delta <= lj_delta_max(s)))
        return carlo_seterr("delta must be a number in (0, %.17g] (got %g)", lj_delta_max(s), delta);
    s->delta = delta;
    return 0;
}

int lj_tune(lj_system *s, uint64_t chunks, double target, int *reached)
{
    if (!(target > 0 && target < 1))
        return carlo_seterr("target must be a number in (0, 1) (got %g)", target);
    if (carlo_sys_alive(&s->sys))
        return -1;
    const double floor_ = 1e-6, top = lj_delta_max(s);
    double acc = target;
    for (uint64_t k = 0; k < chunks; k++) {
        uint64_t t0 = s->tried, a0 = s->accepted;
        if (s->algo->tune_chunk(s))
            return -1;
        acc = (double)(s->accepted - a0) / (double)(s->tried - t0);
        double f = acc / target;
        f = f < 0.5 ? 0.5 : (f > 1.5 ? 1.5 : f);
        double d = s->delta * f;
        s->delta = d > top ? top : (d < floor_ ? floor_ : d);
        if (carlo_interrupted)
            return carlo_seterr("interrupted");
    }
    *reached = !((s->delta == top && acc > target) || (s->delta == floor_ && acc < target));
    return 0;
}

/* ---------- observing ---------- */

int lj_observe(lj_system *s, lj_obs *o)
{
    if (carlo_sys_alive(&s->sys))
        return -1;
    double rho = lj_density(s);
    o->U = s->U / (double)s->N + lj_tail_energy(s);
    o->W = s->W;
    o->P = rho * s->T + s->W / ((double)s->dim * lj_volume(s)) + lj_tail_pressure(s);
    o->acceptance = s->tried ? (double)s->accepted / (double)s->tried : 0.0;
    return 0;
}

int lj_widom(lj_system *s, uint32_t n, double *mean)
{
    if (carlo_sys_alive(&s->sys))
        return -1;
    double *b = carlo_malloc(sizeof *b * (n ? n : 1), "Widom insertions");
    if (!b)
        return -1;
    if (s->algo->widom(s, n, s->samples, b)) {
        free(b);
        return -1;
    }
    if (carlo_interrupted) { /* the CPU loops stop early on Ctrl-C: no partial mean */
        free(b);
        return carlo_seterr("interrupted");
    }
    s->samples++;
    double sum = 0.0;
    for (uint32_t k = 0; k < n; k++)
        sum += b[k];
    free(b);
    *mean = sum / (double)n;
    return 0;
}

int lj_recompute_w(lj_system *s, double *U_fresh, double *W_fresh)
{
    if (carlo_sys_alive(&s->sys))
        return -1;
    double U, W;
    if (s->algo->fresh(s, &U, &W))
        return -1;
    double du = fabs(s->U - U) / fmax(fabs(U), 1e-300);
    double dw = fabs(s->W - W) / fmax(fabs(W), 1e-300);
    s->drift = du > dw ? du : dw;
    s->checks++;
    if (s->drift > s->drift_max)
        s->drift_max = s->drift;
    if (U_fresh)
        *U_fresh = U;
    if (W_fresh)
        *W_fresh = W;
    return 0;
}

int lj_recompute(lj_system *s, double *U_running, double *U_fresh)
{
    if (U_running)
        *U_running = s->U;
    return lj_recompute_w(s, U_fresh, NULL);
}

int lj_check_hook(carlo_sys *c, void *ctx)
{
    (void)ctx;
    return lj_recompute(SYS(c), NULL, NULL);
}

/* ---------- frames and checkpoints ---------- */

int lj_frame(lj_system *s, carlo_frame *f)
{
    double *pos = carlo_malloc(carlo_mulsize(sizeof(double) * 3, s->N), "a frame");
    float *p32 = pos ? carlo_malloc(carlo_mulsize(sizeof(float) * 3, s->N), "a frame") : NULL;
    uint32_t *typeid = p32 ? carlo_calloc(s->N, sizeof *typeid, "a frame") : NULL;
    if (!typeid || lj_positions(s, pos)) {
        free(pos);
        free(p32);
        free(typeid);
        return -1;
    }
    /* GSD convention: positions in [-L/2, L/2) */
    for (uint32_t i = 0; i < s->N; i++)
        for (int a = 0; a < 3; a++)
            p32[3 * i + a] = a < s->dim ? (float)(pos[3 * i + a] - s->g.half[a]) : 0.0f;
    free(pos);
    float box[6] = {(float)s->g.L[0], (float)s->g.L[1], s->dim == 3 ? (float)s->g.L[2] : 0.0f,
                    0, 0, 0};
    uint8_t dims = (uint8_t)s->dim;
    int8_t types[2] = {'A', 0};
    uint32_t n = s->N;
    if (carlo_frame_add_u64(f, "configuration/step", s->step) ||
        carlo_frame_add_copy(f, "configuration/dimensions", CARLO_U8, 1, 1, &dims) ||
        carlo_frame_add_copy(f, "configuration/box", CARLO_F32, 6, 1, box) ||
        carlo_frame_add_copy(f, "particles/N", CARLO_U32, 1, 1, &n) ||
        carlo_frame_add_copy(f, "particles/types", CARLO_I8, 1, 2, types)) {
        free(p32);
        free(typeid);
        return -1;
    }
    if (carlo_frame_add_owned(f, "particles/position", CARLO_F32, s->N, 3, p32)) {
        free(typeid);
        return -1;
    }
    return carlo_frame_add_owned(f, "particles/typeid", CARLO_U32, s->N, 1, typeid);
}

int lj_checkpoint(lj_system *s, carlo_frame *f)
{
    return carlo_sys_alive(&s->sys) ? -1 : s->algo->checkpoint(s, f);
}

lj_system *lj_restore(const carlo_frame *f, carlo_device_kind device)
{
    const int32_t *shape = carlo_frame_expect(f, "lj/shape", CARLO_I32, 7, 1);
    if (!shape)
        return NULL;
    lj_system *s = shape[4] == LJ_CHECKERBOARD ? lj_cb_restore(f, device) : lj_dec_restore(f, device);
    if (s)
        s->ops = &lj_ops;
    return s;
}

/* ---------- the operations ---------- */

static int op_advance(carlo_sys *c, uint64_t n)
{
    return SYS(c)->algo->sweeps(SYS(c), n);
}

static int op_sync(carlo_sys *c)
{
    return SYS(c)->algo->sync(SYS(c));
}

enum { OBS_U, OBS_P, OBS_BOLTZMANN };

/* mu_ex = -T ln <exp(-beta dU)> */
static double f_mu(const double *mu, const carlo_sys *c, int k)
{
    (void)k;
    return -((const lj_system *)c)->T * log(mu[0]);
}

/* Whether the tether has sites: msd_site is observed then. */
static int has_sites(const lj_system *s)
{
    return s->mode == LJ_CHECKERBOARD && LJ_CB(s)->sites != NULL;
}

static int op_observables(carlo_sys *c, const void *opt, carlo_obs_set *o)
{
    const lj_observe_opt *w = opt;
    carlo_obs_add(o, "U");
    carlo_obs_add(o, "P");
    if (w && w->widom) {
        const int in[1] = {OBS_BOLTZMANN}, pow1[1] = {1};
        carlo_obs_add(o, "boltzmann");
        carlo_obs_derive(o, "mu_ex", f_mu, 1, in, pow1);
    }
    if (has_sites(SYS(c)))
        carlo_obs_add(o, "msd_site");
    return 0;
}

static int add_rdf(lj_system *s, lj_rdf_acc *a)
{
    if (lj_positions(s, a->pos) || lj_rdf_count(s, a->pos, a->rmax, a->bins, a->count + a->bins))
        return -1;
    for (int b = 0; b < a->bins; b++)
        a->count[b] += a->count[a->bins + b];
    a->frames += 1.0;
    return 0;
}

static int op_observe(carlo_sys *c, const void *opt, double *v)
{
    lj_system *s = SYS(c);
    const lj_observe_opt *w = opt;
    lj_obs o;
    if (lj_observe(s, &o))
        return -1;
    v[OBS_U] = o.U;
    v[OBS_P] = o.P;
    if (w && w->widom && lj_widom(s, w->widom, &v[OBS_BOLTZMANN]))
        return -1;
    if (has_sites(s) && lj_cb_msd_site(LJ_CB(s), &v[w && w->widom ? OBS_BOLTZMANN + 1 : OBS_P + 1]))
        return -1;
    if (w && w->rdf && add_rdf(s, w->rdf))
        return -1;
    return 0;
}

static int op_counts(carlo_sys *c, carlo_counts *n)
{
    memset(n, 0, sizeof *n);
    n->tried = SYS(c)->tried;
    n->accepted = SYS(c)->accepted;
    return 0;
}

static int get_T(carlo_sys *c, double *v)
{
    *v = SYS(c)->T;
    return 0;
}

static int set_T(carlo_sys *c, double v)
{
    return lj_set_temperature(SYS(c), v);
}

static int get_beta(carlo_sys *c, double *v)
{
    *v = SYS(c)->beta;
    return 0;
}

static int set_beta(carlo_sys *c, double v)
{
    if (!isfinite(1.0 / v))
        return carlo_seterr("beta must be a number > 0 with 1 / beta finite (got %g)", v);
    SYS(c)->beta = v;
    SYS(c)->T = 1.0 / v;
    return 0;
}

static int get_lambda(carlo_sys *c, double *v)
{
    *v = SYS(c)->mode == LJ_CHECKERBOARD ? LJ_CB(SYS(c))->lambda : 0.0;
    return 0;
}

int lj_set_lambda(lj_system *s, double lambda)
{
    if (s->mode != LJ_CHECKERBOARD) {
        if (!(lambda >= 0) || !(lambda <= LJ_LAMBDA_MAX))
            return carlo_seterr("lambda must be a number in [0, %g] (got %.17g)", LJ_LAMBDA_MAX, lambda);
        if (lambda > 0)
            return carlo_seterr("the tether runs in mode = \"checkerboard\" (this system runs mode = "
                                "\"decomposition\"; lambda = %.17g refused)", lambda);
        return 0;
    }
    return lj_cb_set_lambda(LJ_CB(s), lambda);
}

int lj_set_sites(lj_system *s, const double *sites)
{
    if (s->mode != LJ_CHECKERBOARD)
        return carlo_seterr("the tether runs in mode = \"checkerboard\" (this system runs mode = "
                            "\"decomposition\"): no sites");
    return lj_cb_set_sites(LJ_CB(s), sites);
}

static int set_lambda(carlo_sys *c, double v)
{
    return lj_set_lambda(SYS(c), v);
}

static const carlo_control controls[] = {
    {"T", 0, INFINITY, 0, 0, get_T, set_T},
    {"beta", 0, INFINITY, 0, 0, get_beta, set_beta},
    {"lambda", 0, LJ_LAMBDA_MAX, 1, 1, get_lambda, set_lambda},
};

static int op_frame(carlo_sys *c, carlo_frame *f)
{
    return lj_frame(SYS(c), f);
}

static int op_checkpoint(carlo_sys *c, carlo_frame *f)
{
    return lj_checkpoint(SYS(c), f);
}

static carlo_sys *op_restore(const carlo_frame *f, carlo_device_kind device)
{
    lj_system *s = lj_restore(f, device);
    return s ? &s->sys : NULL;
}

static void op_destroy(carlo_sys *c)
{
    lj_destroy(SYS(c));
}

/* The decomposition kernel variants the tuner tries on the GPU (core/sys.h); the
 * checkerboard has one launch. */
static int op_launch_candidates(const carlo_sys *c)
{
    const lj_system *s = (const lj_system *)c;
    return s->mode == LJ_DECOMPOSITION ? 3 : 1;
}

static int op_launch_pick(carlo_sys *c, int k)
{
    lj_system *s = SYS(c);
    static const lj_kernel_variant order[3] = {LJ_KERNEL_PERSISTENT, LJ_KERNEL_GRAPH, LJ_KERNEL_LAUNCH};
    if (s->mode == LJ_DECOMPOSITION)
        LJ_DEC(s)->kernel = order[k];
    return 0;
}

const carlo_ops lj_ops = {
    .launch_candidates = op_launch_candidates,
    .launch_pick = op_launch_pick,
    .name = "lj",
    .unit = "sweeps",
    .advance = op_advance,
    .sync = op_sync,
    .observables = op_observables,
    .observe = op_observe,
    .counts = op_counts,
    .controls = controls,
    .ncontrols = 3,
    .frame = op_frame,
    .checkpoint = op_checkpoint,
    .restore = op_restore,
    .destroy = op_destroy,
};
