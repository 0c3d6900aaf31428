/* hard_sys.c — hard particles in the system layer (core/sys.h): the operations (advance = n
 * sweeps, the pressure control of NPT systems, move counts), the observables of the shared
 * sample (phi, rho, volume, the two pressure estimators, psi6, and the derived Pv0 and
 * compressibility), trajectory frames, checkpoints and restore. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/steinhardt.h"
#include "hard/hard.h"
#include "hard/hard_mpi.h"

#define SYS(c) ((hard_system *)(c))

static int fail(hard_system *s)
{
    s->dead |= s->device == CARLO_GPU;
    return -1;
}

static int op_advance(carlo_sys *c, uint64_t n)
{
    hard_system *s = SYS(c);
    for (uint64_t k = 0; k < n; k++)
        if (hard_sweep(s))
            return -1; /* hard_sweep marks a GPU system dead on a device error */
    return 0;
}

static int op_sync(carlo_sys *c)
{
    hard_system *s = SYS(c);
    if (carlo_sys_alive(c))
        return -1;
    return s->be->sync(s) ? fail(s) : 0;
}

static int op_counts(carlo_sys *c, carlo_counts *out)
{
    return hard_counts_get(SYS(c), out);
}

/* ---------- observables ---------- */

/* Which values observe writes, in this order: phi, rho, [volume], [P_gr, P_sdf, P_diff, P],
 * [psi6, psi6_local], [msd_site], [p_insert], [Q4, Q6]. */
typedef struct layout {
    int volume, pressure, psi6, tether, widom, steinhardt;
} layout;

static const hard_observe_opt defaults = {0};

static layout layout_of(const hard_system *s, const hard_observe_opt *o)
{
    layout l = {s->npt, !o->no_pressure, o->psi6 && s->dim == 2, s->sites != NULL, o->widom > 0,
                o->steinhardt && s->dim == 3};
    return l;
}

static double f_Pv0(const double *mu, const carlo_sys *c, int k)
{
    (void)c;
    (void)k;
    return mu[0] * hard_particle_volume(3);
}

/* (<V^2> - <V>^2) / <V>: the isothermal compressibility times V / (k_B T), k_B T = 1 */
static double f_compressibility(const double *mu, const carlo_sys *c, int k)
{
    (void)c;
    (void)k;
    return (mu[1] - mu[0] * mu[0]) / mu[0];
}

/* beta mu_ex = -ln P_insert */
static double f_mu_ex(const double *mu, const carlo_sys *c, int k)
{
    (void)c;
    (void)k;
    return -log(mu[0]);
}

static int op_observables(carlo_sys *c, const void *opt, carlo_obs_set *o)
{
    hard_system *s = SYS(c);
    layout l = layout_of(s, opt ? (const hard_observe_opt *)opt : &defaults);
    carlo_obs_add(o, "phi");
    carlo_obs_add(o, "rho");
    int iV = l.volume ? carlo_obs_add(o, "volume") : -1, iP = -1;
    if (l.pressure) {
        carlo_obs_add(o, "P_gr");
        carlo_obs_add(o, "P_sdf");
        carlo_obs_add(o, "P_diff");
        iP = carlo_obs_add(o, "P");
    }
    if (l.psi6) {
        carlo_obs_add(o, "psi6");
        carlo_obs_add(o, "psi6_local");
    }
    if (l.tether)
        carlo_obs_add(o, "msd_site");
    if (l.widom) {
        const int in[1] = {carlo_obs_add(o, "p_insert")}, pw[1] = {1};
        carlo_obs_derive(o, "mu_ex", f_mu_ex, 1, in, pw);
    }
    if (l.steinhardt) {
        carlo_obs_add(o, "Q4");
        carlo_obs_add(o, "Q6");
    }
    if (iP >= 0 && s->dim == 3) { /* beta P v0, HPMC's Table 1 unit */
        const int in[1] = {iP}, pw[1] = {1};
        carlo_obs_derive(o, "Pv0", f_Pv0, 1, in, pw);
    }
    if (iV >= 0) {
        const int in[2] = {iV, iV}, pw[2] = {1, 2};
        carlo_obs_derive(o, "compressibility", f_compressibility, 2, in, pw);
    }
    return 0;
}

static int op_observe(carlo_sys *c, const void *opt, double *v)
{
    hard_system *s = SYS(c);
    const hard_observe_opt *o = opt ? (const hard_observe_opt *)opt : &defaults;
    layout l = layout_of(s, o);
    if (carlo_sys_alive(c))
        return -1;
    const double V = carlo_box_volume(&s->box);
    int k = 0;
    v[k++] = hard_phi(s);
    v[k++] = (double)s->N / V;
    if (l.volume)
        v[k++] = V;
    if (l.pressure) {
        hard_pressure_params pp;
        if (o->fit)
            pp = o->pp;
        else
            hard_pressure_defaults(&pp);
        double pg, ps;
        if (hard_pressure_now(s, &pp, &pg, &ps))
            return -1;
        v[k++] = pg;
        v[k++] = ps;
        v[k++] = pg - ps;
        v[k++] = ps;
    }
    if (l.psi6) {
        double g, loc;
        if (hard_psi6(s, o->rc > 0 ? o->rc : 1.4, &g, &loc, NULL))
            return -1;
        v[k++] = g;
        v[k++] = loc;
    }
    if (l.tether && hard_tether_msd(s, &v[k++]))
        return -1;
    if (l.widom) {
        uint64_t hits;
        if (hard_insert_test(s, o->widom, &hits))
            return -1;
        v[k++] = (double)hits / (double)o->widom;
    }
    if (l.steinhardt) {
        if (hard_steinhardt(s, carlo_steinhardt_rc((double)s->N / V), &v[k], &v[k + 1]))
            return -1;
        k += 2;
    }
    return 0;
}

/* ---------- the control of NPT systems ---------- */

static int get_pressure(carlo_sys *c, double *v)
{
    *v = SYS(c)->pressure;
    return 0;
}

static int set_pressure(carlo_sys *c, double v)
{
    return hard_set_pressure(SYS(c), v);
}

static int get_lambda(carlo_sys *c, double *v)
{
    *v = SYS(c)->lambda;
    return 0;
}

static int set_lambda(carlo_sys *c, double v)
{
    return hard_set_lambda(SYS(c), v);
}

static const carlo_control nvt_controls[] = {
    {"lambda", 0, INFINITY, 1, 0, get_lambda, set_lambda},
};

static const carlo_control npt_controls[] = {
    {"pressure", 0, INFINITY, 0, 0, get_pressure, set_pressure},
    {"lambda", 0, INFINITY, 1, 0, get_lambda, set_lambda},
};

/* ---------- frames and checkpoints ---------- */

int hard_frame(hard_system *s, carlo_frame *f)
{
    float *x = carlo_malloc(carlo_mulsize((size_t)s->N, 3 * sizeof(float)), "a position frame");
    uint32_t *typeid = x ? carlo_calloc((size_t)s->N, sizeof(uint32_t), "type ids") : NULL;
    if (!typeid || hard_positions_f32(s, x)) {
        free(x);
        free(typeid);
        return -1;
    }
    double b[6];
    carlo_box_gsd(&s->box, b);
    float box[6];
    for (int k = 0; k < 6; k++)
        box[k] = (float)b[k];
    uint8_t dims = (uint8_t)s->dim;
    uint32_t N = (uint32_t)s->N;
    static const int8_t types[2] = {'A', 0};
    if (carlo_frame_add_u64(f, "configuration/step", s->step) ||
        carlo_frame_add_copy(f, "configuration/dimensions", CARLO_U8, 1, 1, &dims) ||
        carlo_frame_add_copy(f, "configuration/box", CARLO_F32, 6, 1, box) ||
        carlo_frame_add_copy(f, "particles/N", CARLO_U32, 1, 1, &N) ||
        carlo_frame_add_copy(f, "particles/types", CARLO_I8, 1, 2, types)) {
        free(x);
        free(typeid);
        return -1;
    }
    if (carlo_frame_add_owned(f, "particles/typeid", CARLO_U32, (uint64_t)s->N, 1, typeid)) {
        free(x);
        return -1;
    }
    return carlo_frame_add_owned(f, "particles/position", CARLO_F32, (uint64_t)s->N, 3, x);
}

/* Everything to continue bit for bit: the cells as they are (float frames, storage order), the
 * box and origin in double, the counters and the move parameters. */
int hard_checkpoint(hard_system *s, carlo_frame *f)
{
    if (carlo_sys_alive(&s->sys))
        return -1;
    carlo_cell_data h;
    if (carlo_cell_data_alloc(&s->grid, &h))
        return -1;
    if (s->be->download(s, &h)) {
        carlo_cell_data_free(&h);
        return fail(s);
    }
    carlo_counts c;
    if (hard_counts_get(s, &c)) {
        carlo_cell_data_free(&h);
        return -1;
    }
    const carlo_cell_grid *g = &s->grid;
    int32_t shape[6] = {s->dim, g->m[0], g->m[1], g->m[2], g->nmax, g->naux};
    uint64_t counters[8] = {s->sweeps, s->substeps, s->vsteps, (uint64_t)s->N,
                            c.tried, c.accepted, c.volume_tried, c.volume_accepted};
    double geom[8] = {s->box.L[0], s->box.L[1], s->box.L[2], s->origin[0], s->origin[1],
                      s->origin[2], s->w_pref, 0};
    double par[4] = {(double)s->mv.delta, s->pressure, s->dlnV, s->lambda};
    int32_t flags[4] = {s->mv.moves, s->mv.shuffle, s->npt, s->volume_moves};
    double tilts[3] = {s->box.xy, s->box.xz, s->box.yz};
    int rc = carlo_frame_add_string(f, "carlo/model", "hard") ||
             carlo_frame_add_u64(f, "configuration/step", s->step) ||
             carlo_frame_add_u64(f, "carlo/seed", s->seed) ||
             carlo_frame_add_copy(f, "hard/shape", CARLO_I32, 6, 1, shape) ||
             carlo_frame_add_copy(f, "hard/counters", CARLO_U64, 8, 1, counters) ||
             carlo_frame_add_copy(f, "hard/geometry", CARLO_F64, 8, 1, geom) ||
             carlo_frame_add_copy(f, "hard/params", CARLO_F64, 4, 1, par) ||
             carlo_frame_add_copy(f, "hard/flags", CARLO_I32, 4, 1, flags) ||
             carlo_frame_add_u64(f, "hard/insert_calls", s->icalls) ||
             (s->sites && carlo_frame_add_copy(f, "hard/sites", CARLO_F64, (uint64_t)s->N, 3, s->sites)) ||
             /* split again when loaded: 1, or 2 with frozen edges */
             (s->split && carlo_frame_add_u64(f, "hard/split", 1 + (uint64_t)s->split->frozen)) ||
             (s->mv.skew && carlo_frame_add_copy(f, "hard/tilts", CARLO_F64, 3, 1, tilts));
    if (!rc)
        rc = carlo_cells_to_frame(f, "hard", g, &h, 1);
    carlo_cell_data_free(&h);
    return rc ? -1 : 0;
}

hard_system *hard_restore(const carlo_frame *f, carlo_device_kind device)
{
    const int32_t *shape = carlo_frame_expect(f, "hard/shape", CARLO_I32, 6, 1);
    const uint64_t *cnt = carlo_frame_expect(f, "hard/counters", CARLO_U64, 8, 1);
    const double *geom = carlo_frame_expect(f, "hard/geometry", CARLO_F64, 8, 1);
    const double *par = carlo_frame_expect(f, "hard/params", CARLO_F64, 4, 1);
    const int32_t *flags = carlo_frame_expect(f, "hard/flags", CARLO_I32, 4, 1);
    const uint64_t *seed = carlo_frame_expect(f, "carlo/seed", CARLO_U64, 1, 1);
    const uint64_t *step = carlo_frame_expect(f, "configuration/step", CARLO_U64, 1, 1);
    if (!shape || !cnt || !geom || !par || !flags || !seed || !step)
        return NULL;
    int dim = shape[0];
    if ((dim != 2 && dim != 3) || cnt[3] < 1 || cnt[3] > (uint64_t)HARD_N_MAX) {
        carlo_seterr("bad dimension or particle count (dimension %d, N = %llu)", dim,
                     (unsigned long long)cnt[3]);
        return NULL;
    }
    carlo_box box = carlo_box_make(dim, geom);
    if (carlo_frame_find(f, "hard/tilts")) { /* a triclinic box: xy, xz, yz */
        const double *t = carlo_frame_expect(f, "hard/tilts", CARLO_F64, 3, 1);
        if (!t)
            return NULL;
        box.xy = t[0];
        box.xz = t[1];
        box.yz = t[2];
    }
    hard_system *s = hard_alloc(dim, (int64_t)cnt[3], &box, device, *seed, geom[6]);
    if (!s)
        return NULL;
    const carlo_cell_grid *g = &s->grid;
    if (shape[1] != g->m[0] || shape[2] != g->m[1] || shape[3] != g->m[2] || shape[4] != g->nmax ||
        shape[5] != g->naux) {
        carlo_seterr("the cell grid does not match the box (%d x %d x %d cells of %d slots recorded, "
                     "%d x %d x %d of %d planned)", shape[1], shape[2], shape[3], shape[4], g->m[0],
                     g->m[1], g->m[2], g->nmax);
        hard_destroy(s);
        return NULL;
    }
    carlo_cell_data h;
    if (carlo_cells_from_frame(f, "hard", g, &h) || carlo_cells_verify(g, &h, s->N) || s->be->upload(s, &h)) {
        hard_destroy(s);
        return NULL;
    }
    s->origin[0] = geom[3];
    s->origin[1] = geom[4];
    s->origin[2] = geom[5];
    s->step = *step;
    s->sweeps = cnt[0];
    s->substeps = cnt[1];
    s->vsteps = cnt[2];
    s->counts.tried = cnt[4];
    s->counts.accepted = cnt[5];
    s->counts.volume_tried = cnt[6];
    s->counts.volume_accepted = cnt[7];
    s->mv.delta = (float)par[0];
    s->pressure = par[1];
    s->dlnV = par[2];
    s->mv.moves = flags[0];
    s->mv.shuffle = flags[1];
    s->npt = flags[2] != 0;
    s->volume_moves = flags[3] ? flags[3] : 1; /* 0 in checkpoints from before volume_moves */
    s->lambda = par[3];
    const uint64_t *icalls = carlo_frame_find(f, "hard/insert_calls")
                                 ? carlo_frame_expect(f, "hard/insert_calls", CARLO_U64, 1, 1) : NULL;
    s->icalls = icalls ? *icalls : 0;
    s->ops = s->npt ? &hard_ops_npt : &hard_ops_nvt;
    if (!(s->mv.delta > 0) || s->mv.moves < 1 || s->mv.moves > 4096 || !(s->dlnV > 0) ||
        !isfinite(s->pressure) || (s->npt && !(s->pressure > 0)) || s->volume_moves < 1 ||
        s->volume_moves > 1024 || !(s->lambda >= 0) || !isfinite(s->lambda) ||
        (s->npt && s->lambda > 0)) {
        carlo_seterr("bad move parameters (delta %.9g, moves per cell %d, dlnV %.9g, pressure %.9g, "
                     "volume moves %d, lambda %.9g)", (double)s->mv.delta, s->mv.moves, s->dlnV,
                     s->pressure, s->volume_moves, s->lambda);
        hard_destroy(s);
        return NULL;
    }
    if (carlo_frame_find(f, "hard/sites")) {
        const double *sites = carlo_frame_expect(f, "hard/sites", CARLO_F64, (uint64_t)s->N, 3);
        s->sites = sites ? carlo_malloc(carlo_mulsize((size_t)s->N, 3 * sizeof(double)), "tether sites")
                         : NULL;
        if (!s->sites) {
            hard_destroy(s);
            return NULL;
        }
        memcpy(s->sites, sites, (size_t)s->N * 3 * sizeof(double));
        if (s->be->sites(s)) {
            hard_destroy(s);
            return NULL;
        }
    } else if (s->lambda > 0) {
        carlo_seterr("the checkpoint has the tether on (lambda = %.9g) but no sites", s->lambda);
        hard_destroy(s);
        return NULL;
    }
    if (hard_verify(s)) {
        hard_destroy(s);
        return NULL;
    }
    /* a split system's checkpoint holds the whole grid; split again over the ranks there are
     * now (as many or not: every rank loads the same file), its edges frozen as they were */
    const int split = carlo_frame_split(f, "hard/split");
    if (split < 0 || (split && hard_split_on(s, split == 2))) {
        hard_destroy(s);
        return NULL;
    }
    return s;
}

static int op_frame(carlo_sys *c, carlo_frame *f)
{
    return hard_frame(SYS(c), f);
}

static int op_checkpoint(carlo_sys *c, carlo_frame *f)
{
    return hard_checkpoint(SYS(c), f);
}

static carlo_sys *op_restore(const carlo_frame *f, carlo_device_kind device)
{
    hard_system *s = hard_restore(f, device);
    return s ? &s->sys : NULL;
}

static void op_destroy(carlo_sys *c)
{
    hard_destroy(SYS(c));
}

/* Launch shapes the tuner tries on the GPU (core/sys.h), today's default first: block sizes
 * of the one-thread kernel for disks, team sizes for spheres (BENCHMARKS.md). */
static const hard_launch LAUNCH_2D[] = {
    {{64, 2}, 1, 1, 1}, {{32, 2}, 1, 1, 1}, {{64, 4}, 1, 1, 1}, {{128, 1}, 1, 1, 1}};
static const hard_launch LAUNCH_3D[] = {
    {{32, 4}, 0, 0, 4}, {{32, 4}, 0, 0, 2}, {{32, 4}, 0, 0, 8}, {{32, 4}, 0, 0, 1}};

static int op_launch_candidates(const carlo_sys *c)
{
    (void)c;
    return 4;
}

static int op_launch_pick(carlo_sys *c, int k)
{
    hard_system *s = (hard_system *)c;
    s->launch = s->dim == 2 ? LAUNCH_2D[k] : LAUNCH_3D[k];
    return 0;
}

#define HARD_OPS                                                                                   \
    .name = "hard", .unit = "sweeps", .advance = op_advance, .sync = op_sync,                      \
    .observables = op_observables, .observe = op_observe, .counts = op_counts,                     \
    .frame = op_frame, .checkpoint = op_checkpoint, .restore = op_restore, .destroy = op_destroy,  \
    .launch_candidates = op_launch_candidates, .launch_pick = op_launch_pick

const carlo_ops hard_ops_nvt = {HARD_OPS, .controls = nvt_controls, .ncontrols = 1};
const carlo_ops hard_ops_npt = {HARD_OPS, .controls = npt_controls, .ncontrols = 2};
