/* shape_sys.c — hard shapes in the system layer (core/sys.h): advance = n sweeps, the move
 * counts, the pressure control of NPT systems, the observables of the shared sample (phi, rho,
 * [volume and the compressibility], the SDF pressure, psi_n, Q4, Q6, S),
 * trajectory frames (positions, orientations as quaternions, the shape as GSD's type_shapes),
 * checkpoints and restore. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "mpi/cell_split.h"
#include "shape/shape.h"

#define SYS(c) ((shape_system *)(c))

static int op_advance(carlo_sys *c, uint64_t n)
{
    for (uint64_t k = 0; k < n; k++)
        if (shape_sweep(SYS(c)))
            return -1;
    return 0;
}

static int op_sync(carlo_sys *c)
{
    shape_system *s = SYS(c);
    if (carlo_sys_alive(c))
        return -1;
    if (s->be && s->be->sync(s)) {
        s->dead = 1;
        return -1;
    }
    return 0;
}

static int op_counts(carlo_sys *c, carlo_counts *out)
{
    uint64_t n[4];
    memset(out, 0, sizeof *out);
    if (shape_counts(SYS(c), n))
        return -1;
    out->tried = n[0] + n[2];
    out->accepted = n[1] + n[3];
    out->volume_tried = SYS(c)->vcnt[0] + SYS(c)->lcnt[0] + SYS(c)->tcnt[0]; /* every box move */
    out->volume_accepted = SYS(c)->vcnt[1] + SYS(c)->lcnt[1] + SYS(c)->tcnt[1];
    return 0;
}

/* ---------- observables: phi, rho, [volume], [P], [psi, psi6], [Q4, Q6], [S] ---------- */

static const shape_observe_opt defaults = {0};

void shape_observe_defaults(shape_observe_opt *o)
{
    memset(o, 0, sizeof *o);
    o->dx = 1e-4;
    o->xmax = 0.02;
    o->degree = 5;
}

/* (<V^2> - <V>^2) / <V>: the isothermal compressibility times V / (k_B T), k_B T = 1 */
static double f_compressibility(const double *mu, const carlo_sys *c, int k)
{
    (void)c;
    (void)k;
    return (mu[1] - mu[0] * mu[0]) / mu[0];
}

static int op_observables(carlo_sys *c, const void *opt, carlo_obs_set *o)
{
    const shape_observe_opt *op = opt ? opt : &defaults;
    carlo_obs_add(o, "phi");
    carlo_obs_add(o, "rho");
    if (SYS(c)->npt) {
        const int iV = carlo_obs_add(o, "volume");
        const int in[2] = {iV, iV}, pw[2] = {1, 2};
        carlo_obs_derive(o, "compressibility", f_compressibility, 2, in, pw);
    }
    if (!op->no_pressure)
        carlo_obs_add(o, "P");
    if (op->psi > 0) {
        carlo_obs_add(o, "psi");
        carlo_obs_add(o, "psi6");
    }
    if (op->steinhardt) {
        carlo_obs_add(o, "Q4");
        carlo_obs_add(o, "Q6");
    }
    if (op->nematic)
        carlo_obs_add(o, "S");
    return 0;
}

static int op_observe(carlo_sys *c, const void *opt, double *v)
{
    shape_system *s = SYS(c);
    shape_observe_opt d;
    const shape_observe_opt *o = opt ? opt : &defaults;
    if (!o->fit) {
        shape_observe_defaults(&d);
        d.no_pressure = o->no_pressure;
        d.psi = o->psi;
        d.steinhardt = o->steinhardt;
        d.nematic = o->nematic;
        d.rc = o->rc;
        o = &d;
    }
    const double V = carlo_box_volume(&s->box);
    int k = 0;
    v[k++] = (double)s->N * s->volume1 / V;
    v[k++] = (double)s->N / V;
    if (s->npt)
        v[k++] = V;
    if (!o->no_pressure && shape_pressure_sdf(s, o->dx, o->xmax, o->degree, &v[k++]))
        return -1;
    if (o->psi > 0) {
        double rc = o->rc > 0 ? o->rc : 2.4 * s->shape.R;
        if (shape_psi(s, o->psi, 6, rc, &v[k], &v[k + 1]))
            return -1;
        k += 2;
    }
    if (o->steinhardt) {
        if (shape_steinhardt(s, o->rc, &v[k], &v[k + 1]))
            return -1;
        k += 2;
    }
    if (o->nematic && shape_nematic(s, &v[k++], NULL))
        return -1;
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
    return shape_set_pressure(SYS(c), v);
}

static const carlo_control npt_controls[] = {
    {"pressure", 0, INFINITY, 0, 0, get_pressure, set_pressure},
};

/* ---------- frames and checkpoints ---------- */

/* The shape as HOOMD's shape specification (GSD particles/type_shapes, which OVITO draws):
 * "Polygon" / "ConvexPolyhedron" with the body-frame vertices and rounding_radius, "Ellipsoid"
 * with a, b, c (an ellipse: c = the smaller of a and b). A NUL-terminated string, malloc'd. */
char *shape_type_json(const shape_def *d)
{
    const size_t cap = 256 + (size_t)SHAPE_VMAX * 3 * 32;
    char *s = carlo_malloc(cap, "a shape description");
    if (!s)
        return NULL;
    size_t n = 0;
    if (d->kind == SHAPE_ELLIPSOID) {
        const double c = d->dim == 3 ? d->axes[2] : fmin(d->axes[0], d->axes[1]);
        snprintf(s, cap, "{\"type\": \"Ellipsoid\", \"a\": %.9g, \"b\": %.9g, \"c\": %.9g}", d->axes[0],
                 d->axes[1], c);
        return s;
    }
    n += (size_t)snprintf(s + n, cap - n, "{\"type\": \"%s\", \"rounding_radius\": %.9g, \"vertices\": [",
                          d->dim == 2 ? "Polygon" : "ConvexPolyhedron", d->sweep);
    for (int k = 0; k < d->nv && n < cap; k++) {
        if (d->dim == 2)
            n += (size_t)snprintf(s + n, cap - n, "%s[%.9g, %.9g]", k ? ", " : "", d->v[k][0], d->v[k][1]);
        else
            n += (size_t)snprintf(s + n, cap - n, "%s[%.9g, %.9g, %.9g]", k ? ", " : "", d->v[k][0], d->v[k][1],
                                  d->v[k][2]);
    }
    if (n < cap)
        snprintf(s + n, cap - n, "]}");
    return s;
}

static int op_frame(carlo_sys *c, carlo_frame *f)
{
    shape_system *s = SYS(c);
    const int64_t N = s->N;
    double *x = carlo_malloc(carlo_mulsize((size_t)N, 3 * sizeof(double)), "positions");
    uint32_t *o = x ? carlo_malloc(carlo_mulsize((size_t)N, 4 * sizeof(uint32_t)), "orientations") : NULL;
    float *xf = o ? carlo_malloc(carlo_mulsize((size_t)N, 3 * sizeof(float)), "a position frame") : NULL;
    float *qf = xf ? carlo_malloc(carlo_mulsize((size_t)N, 4 * sizeof(float)), "an orientation frame") : NULL;
    int rc = -1;
    if (qf && shape_state(s, x, o) == 0) {
        for (int64_t k = 0; k < N; k++) {
            double q[4];
            shape_orient_values(s->dim, o + 4 * k, q);
            if (s->dim == 2) { /* a turn about z: (cos t/2, 0, 0, sin t/2) */
                double t = q[0];
                q[0] = cos(0.5 * t);
                q[3] = sin(0.5 * t);
            }
            for (int a = 0; a < 3; a++)
                xf[3 * k + a] = (float)x[3 * k + a];
            for (int a = 0; a < 4; a++)
                qf[4 * k + a] = (float)q[a];
        }
        double b[6];
        carlo_box_gsd(&s->box, b);
        float box[6];
        for (int k = 0; k < 6; k++)
            box[k] = (float)b[k];
        uint8_t dims = (uint8_t)s->dim;
        uint32_t n32 = (uint32_t)N;
        static const int8_t types[2] = {'A', 0};
        rc = carlo_frame_add_u64(f, "configuration/step", s->step) ||
             carlo_frame_add_copy(f, "configuration/dimensions", CARLO_U8, 1, 1, &dims) ||
             carlo_frame_add_copy(f, "configuration/box", CARLO_F32, 6, 1, box) ||
             carlo_frame_add_copy(f, "particles/N", CARLO_U32, 1, 1, &n32) ||
             carlo_frame_add_copy(f, "particles/types", CARLO_I8, 1, 2, types);
        if (!rc) { /* one type: every particle 0 */
            uint32_t *typeid = carlo_calloc((size_t)N, sizeof(uint32_t), "type ids");
            rc = !typeid || carlo_frame_add_owned(f, "particles/typeid", CARLO_U32, (uint64_t)N, 1, typeid);
        }
        if (!rc) {
            rc = carlo_frame_add_owned(f, "particles/position", CARLO_F32, (uint64_t)N, 3, xf);
            xf = NULL;
        }
        if (!rc) {
            rc = carlo_frame_add_owned(f, "particles/orientation", CARLO_F32, (uint64_t)N, 4, qf);
            qf = NULL;
        }
        if (!rc) { /* one type: one row, NUL-terminated */
            char *json = shape_type_json(&s->shape);
            rc = !json || carlo_frame_add_copy(f, "particles/type_shapes", CARLO_I8, 1, strlen(json) + 1, json);
            free(json);
        }
        rc = rc ? -1 : 0;
    }
    free(x);
    free(o);
    free(xf);
    free(qf);
    return rc;
}

/* Everything to continue bit for bit: the shape as it is (no hull recomputed), the cells (or
 * the serial arrays) as stored, the box and origin, counters and move sizes. */
int shape_checkpoint(shape_system *s, carlo_frame *f)
{
    uint64_t n[4];
    if (shape_counts(s, n) || (!s->serial && shape_fetch(s)))
        return -1;
    const carlo_cell_grid *g = &s->grid;
    const shape_def *sh = &s->shape;
    int32_t shape[8] = {s->dim, sh->kind, sh->nv, g->m[0], g->m[1], g->m[2], g->nmax, s->serial};
    double geo[8] = {sh->sweep, sh->axes[0], sh->axes[1], sh->axes[2], sh->R, sh->r_in, s->volume1, 0};
    uint64_t counters[8] = {s->sweeps, s->substeps, (uint64_t)s->N, n[0], n[1], n[2], n[3], 0};
    double box[8] = {s->box.L[0], s->box.L[1], s->box.L[2], s->origin[0], s->origin[1], s->origin[2],
                     (double)s->mv.delta, s->mv.rotate};
    int32_t moves = s->mv.moves;
    double npt[4] = {s->pressure, s->dlnV, (double)s->npt, (double)s->volume_moves};
    uint64_t vol[4] = {s->vsteps, s->vcnt[0], s->vcnt[1], 0};
    double tilt[8] = {s->box.xy, s->box.xz, s->box.yz, (double)s->box_moves, s->dlnL, s->dtilt, 0, 0};
    uint64_t bmv[8] = {s->bsteps, s->lcnt[0], s->lcnt[1], s->tcnt[0], s->tcnt[1], s->reductions, 0, 0};
    int rc = carlo_frame_add_string(f, "carlo/model", "shape") ||
             carlo_frame_add_u64(f, "configuration/step", s->step) ||
             carlo_frame_add_u64(f, "carlo/seed", s->seed) ||
             carlo_frame_add_string(f, "shape/what", s->what) ||
             carlo_frame_add_copy(f, "shape/shape", CARLO_I32, 8, 1, shape) ||
             carlo_frame_add_copy(f, "shape/geometry", CARLO_F64, 8, 1, geo) ||
             carlo_frame_add_copy(f, "shape/vertices", CARLO_F64, SHAPE_VMAX, 3, sh->v) ||
             carlo_frame_add_copy(f, "shape/counters", CARLO_U64, 8, 1, counters) ||
             carlo_frame_add_copy(f, "shape/box", CARLO_F64, 8, 1, box) ||
             carlo_frame_add_copy(f, "shape/moves", CARLO_I32, 1, 1, &moves) ||
             carlo_frame_add_copy(f, "shape/npt", CARLO_F64, 4, 1, npt) ||
             carlo_frame_add_copy(f, "shape/volume_moves", CARLO_U64, 4, 1, vol) ||
             carlo_frame_add_copy(f, "shape/tilt", CARLO_F64, 8, 1, tilt) ||
             carlo_frame_add_copy(f, "shape/box_moves", CARLO_U64, 8, 1, bmv) ||
             /* split again when loaded: 1, or 2 with frozen edges */
             (s->split && carlo_frame_add_u64(f, "shape/split", 1 + (uint64_t)s->split->frozen));
    if (rc)
        return -1;
    if (s->serial)
        return carlo_frame_add_copy(f, "shape/x", CARLO_F64, (uint64_t)s->N, 3, s->x) ||
                       carlo_frame_add_copy(f, "shape/ori", CARLO_U32, (uint64_t)s->N, 4, s->ori)
                   ? -1
                   : 0;
    return carlo_cells_to_frame(f, "shape", g, &s->cur, 0);
}

/* The recorded kind ("polygons", ...): a string chunk of rows bytes, not terminated. */
static const char *what_name(const carlo_chunk *c)
{
    static const char *const names[] = {"polygons", "polyhedra", "ellipses", "ellipsoids", NULL};
    if (!c || c->type != CARLO_U8)
        return NULL;
    for (int i = 0; names[i]; i++)
        if (c->rows == strlen(names[i]) && memcmp(c->data, names[i], c->rows) == 0)
            return names[i];
    return NULL;
}

/* The NPT state (absent from checkpoints of NVT-only versions: NVT with the defaults). */
static int restore_npt(shape_system *s, const carlo_frame *f)
{
    if (!carlo_frame_find(f, "shape/npt"))
        return 0;
    const double *npt = carlo_frame_expect(f, "shape/npt", CARLO_F64, 4, 1);
    const uint64_t *vol = carlo_frame_expect(f, "shape/volume_moves", CARLO_U64, 4, 1);
    if (!npt || !vol)
        return -1;
    if (!(npt[1] > 0 && npt[1] <= 1) || !(npt[3] >= 1 && npt[3] <= SHAPE_VOLUME_MOVES_MAX) ||
        (npt[2] != 0 && npt[2] != 1) || vol[2] > vol[1])
        return carlo_seterr("bad NPT record (pressure %.9g, dlnV %.9g, volume moves %.9g)", npt[0], npt[1],
                            npt[3]);
    s->dlnV = npt[1];
    s->volume_moves = (int)npt[3];
    s->vsteps = vol[0];
    s->vcnt[0] = vol[1];
    s->vcnt[1] = vol[2];
    if (carlo_frame_find(f, "shape/tilt")) { /* absent before triclinic boxes: isotropic moves */
        const double *t = carlo_frame_expect(f, "shape/tilt", CARLO_F64, 8, 1);
        const uint64_t *b = carlo_frame_expect(f, "shape/box_moves", CARLO_U64, 8, 1);
        if (!t || !b)
            return -1;
        if (!(t[4] > 0 && t[4] <= 1) || !(t[5] > 0 && t[5] <= 1) || b[2] > b[1] || b[4] > b[3] ||
            shape_set_box_moves(s, t[3] == 1 ? SHAPE_BOX_ANISOTROPIC : (t[3] == 2 ? SHAPE_BOX_TRICLINIC
                                                                                 : (t[3] == 0 ? 0 : -1))))
            return carlo_seterr("bad box-move record (mode %.9g, dlnL %.9g, dtilt %.9g)", t[3], t[4], t[5]);
        s->dlnL = t[4];
        s->dtilt = t[5];
        s->bsteps = b[0];
        memcpy(s->lcnt, b + 1, sizeof s->lcnt);
        memcpy(s->tcnt, b + 3, sizeof s->tcnt);
        s->reductions = b[5];
    }
    return npt[2] != 0 ? shape_set_pressure(s, npt[0]) : 0;
}

/* The tilts of a checkpoint's box (absent before triclinic boxes: 0). */
static int restore_tilt(const carlo_frame *f, carlo_box *b)
{
    if (!carlo_frame_find(f, "shape/tilt"))
        return 0;
    const double *t = carlo_frame_expect(f, "shape/tilt", CARLO_F64, 8, 1);
    if (!t)
        return -1;
    for (int a = 0; a < 3; a++)
        if (!isfinite(t[a]) || fabs(t[a]) > 1e3 || (b->dim == 2 && a > 0 && t[a] != 0))
            return carlo_seterr("bad box tilts (%.9g, %.9g, %.9g)", t[0], t[1], t[2]);
    b->xy = t[0];
    b->xz = t[1];
    b->yz = t[2];
    return 0;
}

shape_system *shape_restore(const carlo_frame *f, carlo_device_kind device)
{
    const int32_t *shape = carlo_frame_expect(f, "shape/shape", CARLO_I32, 8, 1);
    const double *geo = carlo_frame_expect(f, "shape/geometry", CARLO_F64, 8, 1);
    const double *v = carlo_frame_expect(f, "shape/vertices", CARLO_F64, SHAPE_VMAX, 3);
    const uint64_t *cnt = carlo_frame_expect(f, "shape/counters", CARLO_U64, 8, 1);
    const double *bx = carlo_frame_expect(f, "shape/box", CARLO_F64, 8, 1);
    const int32_t *moves = carlo_frame_expect(f, "shape/moves", CARLO_I32, 1, 1);
    const uint64_t *seed = carlo_frame_expect(f, "carlo/seed", CARLO_U64, 1, 1);
    const uint64_t *step = carlo_frame_expect(f, "configuration/step", CARLO_U64, 1, 1);
    const carlo_chunk *wc = carlo_frame_find(f, "shape/what");
    if (!shape || !geo || !v || !cnt || !bx || !moves || !seed || !step)
        return NULL;
    const char *what = what_name(wc);
    int dim = shape[0];
    if ((dim != 2 && dim != 3) || (shape[1] != SHAPE_POLY && shape[1] != SHAPE_ELLIPSOID) ||
        (shape[1] == SHAPE_POLY && (shape[2] < dim + 1 || shape[2] > SHAPE_VMAX)) || !what ||
        cnt[2] < 1 || cnt[2] > (uint64_t)SHAPE_N_MAX || !(geo[4] > 0) || !(geo[5] > 0) ||
        !(geo[5] <= geo[4]) || !(geo[6] > 0) || !(geo[0] >= 0)) {
        carlo_seterr("bad shape record (dimension %d, kind %d, %d vertices, N = %llu)", dim, shape[1],
                     shape[2], (unsigned long long)cnt[2]);
        return NULL;
    }
    shape_def sd;
    memset(&sd, 0, sizeof sd);
    sd.dim = dim;
    sd.kind = shape[1];
    sd.nv = shape[1] == SHAPE_POLY ? shape[2] : 0;
    sd.sweep = geo[0];
    sd.axes[0] = geo[1];
    sd.axes[1] = geo[2];
    sd.axes[2] = geo[3];
    sd.R = geo[4];
    sd.r_in = geo[5];
    memcpy(sd.v, v, sizeof sd.v);
    shape_find_pairs(&sd);
    shape_params p;
    memset(&p, 0, sizeof p);
    p.shape = &sd;
    p.volume1 = geo[6];
    p.what = what;
    p.N = (int64_t)cnt[2];
    p.box = carlo_box_make(dim, bx);
    if (restore_tilt(f, &p.box))
        return NULL;
    p.seed = *seed;
    p.delta = bx[6];
    p.rotate = bx[7];
    p.moves_per_cell = moves[0];
    p.serial = shape[7] != 0;
    p.device = device;
    if (p.moves_per_cell < 1 || p.moves_per_cell > SHAPE_MOVES_MAX) {
        carlo_seterr("bad moves per cell %d", p.moves_per_cell);
        return NULL;
    }
    shape_system *s = shape_alloc(&p);
    if (!s)
        return NULL;
    const carlo_cell_grid *g = &s->grid;
    int ok = 1;
    if (s->serial) {
        const double *x = carlo_frame_expect(f, "shape/x", CARLO_F64, (uint64_t)s->N, 3);
        const uint32_t *o = carlo_frame_expect(f, "shape/ori", CARLO_U32, (uint64_t)s->N, 4);
        ok = x && o;
        if (ok) {
            memcpy(s->x, x, sizeof(double) * 3 * (size_t)s->N);
            memcpy(s->ori, o, sizeof(uint32_t) * 4 * (size_t)s->N);
        }
    } else {
        if (shape[3] != g->m[0] || shape[4] != g->m[1] || shape[5] != g->m[2] || shape[6] != g->nmax) {
            carlo_seterr("the cell grid does not match the box (%d x %d x %d cells of %d slots recorded, "
                         "%d x %d x %d of %d planned)", shape[3], shape[4], shape[5], shape[6], g->m[0],
                         g->m[1], g->m[2], g->nmax);
            shape_destroy(s);
            return NULL;
        }
        carlo_cell_data h;
        ok = !carlo_cells_from_frame(f, "shape", g, &h);
        if (ok) {
            memcpy(s->cur.pos, h.pos, carlo_cells_pos_len(g) * sizeof(float));
            memcpy(s->cur.aux, h.aux, carlo_cells_aux_len(g) * sizeof(uint32_t));
            memcpy(s->cur.count, h.count, (size_t)g->ncells * sizeof(uint32_t));
        }
    }
    if (!ok) {
        shape_destroy(s);
        return NULL;
    }
    if (!s->serial && (carlo_cells_verify(g, &s->cur, s->N) || shape_push(s))) {
        shape_destroy(s);
        return NULL;
    }
    s->origin[0] = bx[3];
    s->origin[1] = bx[4];
    s->origin[2] = bx[5];
    s->step = *step;
    s->sweeps = cnt[0];
    s->substeps = cnt[1];
    memcpy(s->cnt, cnt + 3, sizeof s->cnt);
    if (restore_npt(s, f)) {
        shape_destroy(s);
        return NULL;
    }
    /* a split system's checkpoint holds the whole grid; split again over the ranks there are
     * now (as many or not: every rank loads the same file) */
    const int split = carlo_frame_split(f, "shape/split"); /* split again, its edges as they were */
    if (shape_verify(s) || split < 0 || (split && shape_split_on(s, split == 2))) {
        shape_destroy(s);
        return NULL;
    }
    return s;
}

static int op_checkpoint(carlo_sys *c, carlo_frame *f)
{
    return shape_checkpoint(SYS(c), f);
}

static carlo_sys *op_restore(const carlo_frame *f, carlo_device_kind device)
{
    shape_system *s = shape_restore(f, device);
    return s ? &s->sys : NULL;
}

static void op_destroy(carlo_sys *c)
{
    shape_destroy(SYS(c));
}

/* Launch shapes the tuner tries on the GPU (core/sys.h), the default first: lanes per active
 * cell of a sub-sweep (cuda/shape.cu), a team of 4 in 2D and of 8 in 3D, then the other teams and
 * one thread per cell; in 3D also teams of 8 and 4 with their registers bounded. */
static const int TEAMS_2D[] = {4, 2, 8, 1}, TEAMS_3D[] = {8, 4, 2, 1, 8, 4};

static int op_launch_candidates(const carlo_sys *c)
{
    return ((const shape_system *)c)->dim == 2 ? 4 : 6;
}

static int op_launch_pick(carlo_sys *c, int k)
{
    shape_system *s = SYS(c);
    s->team = s->dim == 2 ? TEAMS_2D[k] : TEAMS_3D[k];
    s->capped = s->dim == 3 && k >= 4;
    return 0;
}

#define SHAPE_OPS                                                                              \
    .name = "shape", .unit = "sweeps", .advance = op_advance, .sync = op_sync,                 \
    .observables = op_observables, .observe = op_observe, .counts = op_counts, .frame = op_frame, \
    .checkpoint = op_checkpoint, .restore = op_restore, .destroy = op_destroy,                  \
    .launch_candidates = op_launch_candidates, .launch_pick = op_launch_pick

const carlo_ops shape_ops = {SHAPE_OPS};
const carlo_ops shape_ops_npt = {SHAPE_OPS, .controls = npt_controls, .ncontrols = 1};
