/* shape_lua.c — the Lua binding of hard shapes: carlo.hard_polygons{...},
 * carlo.hard_polyhedra{...}, carlo.hard_ellipses{...} and carlo.hard_ellipsoids{...}, all the
 * userdata "carlo.shape" of the system layer (system/system_lua.h), which gives them run,
 * sample, observe, snapshot, save, close. Here: the constructors' keys, the model's fields and
 * its own methods (sweep, substep, shift_cells, tune, overlaps, verify, psi, steinhardt,
 * nematic, png, pressure, launch). */
#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"
#include "core/array.h"
#include "core/error.h"
#include "core/device.h"
#include "core/progress.h"
#include "mpi/cell_split.h"
#include "shape/shape.h"
#include "core/steinhardt.h"
#include "shape/shape_lua.h"
#include "system/particle_lua.h"
#include "system/system_lua.h"

#define PI 3.141592653589793

extern const carlo_lua_model shape_lua_model;

static shape_system *check(lua_State *L, int idx)
{
    return (shape_system *)carlo_lua_check(L, idx, &shape_lua_model);
}

/* ---------- arguments ---------- */

/* A list of n points of `cols` numbers (a carlo.array n x cols, or a list of tables) at idx,
 * into a Lua-owned buffer (n x 3 doubles, missing columns 0) left on the stack top. */
static double *parse_points(lua_State *L, int idx, int cols, int64_t nmin, int64_t nmax, int64_t *n_out,
                            const char *where, const char *key)
{
    idx = lua_absindex(L, idx);
    carlo_array *a = carlo_array_test(L, idx);
    int64_t n;
    if (a) {
        n = a->shape[0];
        int64_t c = a->ndim == 2 ? a->shape[1] : 1;
        if (c != cols)
            carlo_lua_fail(L, "%s: %s must be an N x %d array (got %lld x %lld)", where, key, cols,
                           (long long)a->shape[0], (long long)c);
    } else if (lua_type(L, idx) == LUA_TTABLE) {
        n = (int64_t)lua_rawlen(L, idx);
    } else {
        carlo_lua_fail(L, "%s: %s must be a carlo.array or a list (got a %s)", where, key, luaL_typename(L, idx));
        return NULL;
    }
    if (n < nmin || n > nmax)
        carlo_lua_fail(L, "%s: %s must hold %lld to %lld entries (got %lld)", where, key, (long long)nmin,
                       (long long)nmax, (long long)n);
    double *x = (double *)lua_newuserdatauv(L, carlo_mulsize((size_t)n, 3 * sizeof(double)), 0);
    for (int64_t k = 0; k < n; k++) {
        double p[3] = {0, 0, 0};
        if (a) {
            for (int c = 0; c < cols; c++)
                p[c] = carlo_array_get(a, (size_t)k * (size_t)cols + (size_t)c);
        } else if (cols == 1 && lua_rawgeti(L, idx, (lua_Integer)k + 1) == LUA_TNUMBER) {
            p[0] = lua_tonumber(L, -1);
            lua_pop(L, 1);
        } else {
            if (cols != 1)
                lua_rawgeti(L, idx, (lua_Integer)k + 1);
            if (!lua_istable(L, -1) || (int)lua_rawlen(L, -1) != cols)
                carlo_lua_fail(L, "%s: %s[%lld] must be %s of %d numbers (got %s)", where, key, (long long)k + 1,
                               cols == 1 ? "a number or a list" : "a list", cols, luaL_typename(L, -1));
            for (int c = 0; c < cols; c++) {
                lua_rawgeti(L, -1, c + 1);
                int isnum;
                p[c] = lua_tonumberx(L, -1, &isnum);
                if (!isnum)
                    carlo_lua_fail(L, "%s: %s[%lld][%d] must be a number", where, key, (long long)k + 1, c + 1);
                lua_pop(L, 1);
            }
            lua_pop(L, 1);
        }
        for (int c = 0; c < 3; c++)
            if (!isfinite(p[c]))
                carlo_lua_fail(L, "%s: %s[%lld] is not finite", where, key, (long long)k + 1);
        memcpy(x + 3 * k, p, sizeof p);
    }
    *n_out = n;
    return x;
}

/* The largest tilt factor a box may have: beyond it the faces of a lattice-reduced box would
 * do, and a box this sheared is almost surely a mistake. */
#define SHAPE_TILT_MAX 10.0

/* A box: a number (square / cube), { Lx, Ly [, Lz] } with optional tilt factors xy =, xz =, yz =
 * (HOOMD's convention; 2D: xy only), or GSD's six numbers { Lx, Ly, Lz, xy, xz, yz }. */
static carlo_box parse_box(lua_State *L, int idx, int dim, const char *where, const char *key)
{
    static const char *const tilts[3] = {"xy", "xz", "yz"};
    idx = lua_absindex(L, idx);
    double v[3] = {0, 0, 0}, t[3] = {0, 0, 0};
    if (lua_type(L, idx) == LUA_TNUMBER) {
        for (int a = 0; a < dim; a++)
            v[a] = lua_tonumber(L, idx);
    } else if (lua_type(L, idx) == LUA_TTABLE && (lua_rawlen(L, idx) == (size_t)dim || lua_rawlen(L, idx) == 6)) {
        const int six = lua_rawlen(L, idx) == 6;
        for (int a = 0; a < dim; a++) {
            lua_rawgeti(L, idx, a + 1);
            v[a] = lua_tonumber(L, -1);
            lua_pop(L, 1);
        }
        for (int a = 0; a < 3; a++) {
            int named = lua_getfield(L, idx, tilts[a]) != LUA_TNIL;
            if (named && six)
                carlo_lua_fail(L, "%s: %s: give the tilts either as the last three of six numbers or as %s =, not both",
                               where, key, tilts[a]);
            if (!named) {
                lua_pop(L, 1);
                if (!six)
                    continue;
                lua_rawgeti(L, idx, 4 + a);
            }
            if (lua_type(L, -1) != LUA_TNUMBER)
                carlo_lua_fail(L, "%s: %s: tilt %s must be a number (got %s)", where, key, tilts[a],
                               luaL_typename(L, -1));
            t[a] = lua_tonumber(L, -1);
            lua_pop(L, 1);
        }
        if (six && dim == 2) {
            lua_rawgeti(L, idx, 3);
            double lz = lua_tonumber(L, -1);
            lua_pop(L, 1);
            if (lz != 0 && lz != 1)
                carlo_lua_fail(L, "%s: %s: a 2D box has Lz = 0 (or 1, as HOOMD writes it; got %g)", where, key, lz);
        }
    } else {
        carlo_lua_fail(L, "%s: %s must be a number, %d side lengths (with tilts xy =%s), or the six numbers "
                          "{ Lx, Ly, Lz, xy, xz, yz }", where, key, dim, dim == 3 ? ", xz =, yz =" : "");
    }
    for (int a = 0; a < dim; a++)
        if (!(v[a] > 0) || !isfinite(v[a]))
            carlo_lua_fail(L, "%s: %s: side %d must be a finite number > 0 (got %g)", where, key, a + 1, v[a]);
    for (int a = 0; a < 3; a++) {
        if (!isfinite(t[a]) || fabs(t[a]) > SHAPE_TILT_MAX)
            carlo_lua_fail(L, "%s: %s: tilt %s must be a finite number in [-%g, %g] (got %g)", where, key, tilts[a],
                           SHAPE_TILT_MAX, SHAPE_TILT_MAX, t[a]);
        if (dim == 2 && a > 0 && t[a] != 0)
            carlo_lua_fail(L, "%s: %s: a 2D box has the tilt xy only (got %s = %g)", where, key, tilts[a], t[a]);
    }
    carlo_box b = carlo_box_make(dim, v);
    b.xy = t[0];
    b.xz = t[1];
    b.yz = t[2];
    return b;
}

static const char *const BOX_MOVES[] = {"isotropic", "anisotropic", "triclinic", NULL};

typedef struct kind {
    const char *where, *what;
    int dim;
    int ellipsoid;
    const char *lattice; /* the name of the lattice start */
} kind;

static const kind KINDS[] = {
    {"carlo.hard_polygons", "polygons", 2, 0, "hex"},
    {"carlo.hard_polyhedra", "polyhedra", 3, 0, "sc"},
    {"carlo.hard_ellipses", "ellipses", 2, 1, "hex"},
    {"carlo.hard_ellipsoids", "ellipsoids", 3, 1, "sc"},
};

static void parse_shape(lua_State *L, const kind *k, shape_def *sd, double *v1)
{
    const char *where = k->where;
    if (k->ellipsoid) {
        double ax[3] = {0, 0, 0};
        const char *names[3] = {"a", "b", "c"};
        for (int a = 0; a < k->dim; a++)
            ax[a] = carlo_arg_num(L, 1, where, names[a], 1, 0, 0, 0, INFINITY, 0);
        if (shape_make_ellipsoid(sd, k->dim, ax, v1))
            carlo_raise(L, where);
        return;
    }
    double sweep = carlo_arg_num(L, 1, where, "sweep_radius", 0, 0, 0, 1, INFINITY, 0);
    if (lua_getfield(L, 1, "vertices") == LUA_TNIL)
        carlo_lua_fail(L, "%s: vertices is required (a list of { x, y%s } points)", where, k->dim == 3 ? ", z" : "");
    int64_t nv = 0;
    double *v = parse_points(L, -1, k->dim, k->dim + 1, SHAPE_VMAX, &nv, where, "vertices");
    if (shape_make_poly(sd, k->dim, (int)nv, v, sweep, v1, NULL))
        carlo_raise(L, where);
    lua_pop(L, 2);
}

/* init = a snapshot { position =, orientation =, box =, step =, N = } at index snap: positions
 * and orientation words into buffers left on the stack; returns the step. */
static lua_Integer snapshot_init(lua_State *L, int snap, const kind *k, shape_params *p)
{
    static const char *const skeys[] = {"position", "orientation", "box", "step", "N", "dimensions", NULL};
    const char *where = k->where;
    carlo_args_allowed(L, snap, "init", skeys);
    if (lua_getfield(L, snap, "box") == LUA_TNIL)
        carlo_lua_fail(L, "%s: init.box is required (the snapshot's box)", where);
    p->box = parse_box(L, -1, k->dim, where, "init.box");
    lua_pop(L, 1);
    if (lua_getfield(L, snap, "position") == LUA_TNIL)
        carlo_lua_fail(L, "%s: init.position is required", where);
    int64_t n = 0, no = 0;
    p->positions = parse_points(L, -1, k->dim, 1, SHAPE_N_MAX, &n, where, "init.position");
    lua_remove(L, -2);
    uint32_t *o = (uint32_t *)lua_newuserdatauv(L, carlo_mulsize((size_t)n, 4 * sizeof(uint32_t)), 0);
    if (lua_getfield(L, snap, "orientation") == LUA_TNIL) {
        for (int64_t j = 0; j < n; j++)
            shape_orient_identity(k->dim, o + 4 * j);
        lua_pop(L, 1);
    } else {
        const double *q = NULL;
        int cols = k->dim == 2 ? 1 : 4;
        /* 4 columns do not fit parse_points' 3: read quaternions by hand */
        if (cols == 1) {
            q = parse_points(L, -1, 1, n, n, &no, where, "init.orientation");
            for (int64_t j = 0; j < n; j++) {
                double in[4] = {q[3 * j], 0, 0, 0};
                shape_orient_words(2, in, o + 4 * j);
            }
            lua_pop(L, 2);
        } else {
            carlo_array *a = carlo_array_test(L, -1);
            int64_t m = a ? a->shape[0] : (lua_istable(L, -1) ? (int64_t)lua_rawlen(L, -1) : -1);
            if (m != n || (a && (a->ndim != 2 || a->shape[1] != 4)))
                carlo_lua_fail(L, "%s: init.orientation must hold %lld quaternions { w, x, y, z }", where,
                               (long long)n);
            for (int64_t j = 0; j < n; j++) {
                double in[4];
                for (int c = 0; c < 4; c++) {
                    if (a) {
                        in[c] = carlo_array_get(a, (size_t)j * 4 + (size_t)c);
                    } else {
                        lua_rawgeti(L, -1, (lua_Integer)j + 1);
                        lua_rawgeti(L, -1, c + 1);
                        in[c] = lua_tonumber(L, -1);
                        lua_pop(L, 2);
                    }
                }
                if (shape_orient_words(3, in, o + 4 * j))
                    carlo_lua_fail(L, "%s: init.orientation[%lld] must be a finite quaternion, not 0", where,
                                   (long long)j + 1);
            }
            lua_pop(L, 1);
        }
    }
    p->orients = o;
    p->init = SHAPE_INIT_GIVEN;
    p->N = n;
    if (carlo_arg_has(L, 1, "N") && carlo_arg_int(L, 1, where, "N", 1, 0, 1, SHAPE_N_MAX) != n)
        carlo_lua_fail(L, "%s: N does not match the snapshot's %lld positions", where, (long long)n);
    /* the snapshot brings its box; phi or box given as well must describe the same one */
    const double phi_snap = (double)n * p->volume1 / carlo_box_volume(&p->box);
    if (carlo_arg_has(L, 1, "phi")) {
        double phi = carlo_arg_num(L, 1, where, "phi", 1, 0, 0, 0, 1, 0);
        if (fabs(phi - phi_snap) > 1e-6 * phi_snap)
            carlo_lua_fail(L, "%s: phi = %.9g does not match the snapshot's packing fraction %.9g (the snapshot "
                              "brings its box)", where, phi, phi_snap);
    }
    if (carlo_arg_has(L, 1, "box")) {
        lua_getfield(L, 1, "box");
        carlo_box b = parse_box(L, -1, k->dim, where, "box");
        lua_pop(L, 1);
        for (int a = 0; a < k->dim; a++)
            if (fabs(b.L[a] - p->box.L[a]) > 1e-6 * p->box.L[a])
                carlo_lua_fail(L, "%s: box side %d = %.9g does not match the snapshot's %.9g", where, a + 1, b.L[a],
                               p->box.L[a]);
        const double bt[3] = {b.xy, b.xz, b.yz}, pt[3] = {p->box.xy, p->box.xz, p->box.yz};
        for (int a = 0; a < 3; a++)
            if (fabs(bt[a] - pt[a]) > 1e-6 * (1 + fabs(pt[a])))
                carlo_lua_fail(L, "%s: box tilt %s = %.9g does not match the snapshot's %.9g", where,
                               a == 0 ? "xy" : (a == 1 ? "xz" : "yz"), bt[a], pt[a]);
    }
    lua_Integer step = 0;
    if (lua_getfield(L, snap, "step") != LUA_TNIL) {
        step = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : -1;
        if (step < 0)
            carlo_lua_fail(L, "%s: init.step must be an integer >= 0", where);
    }
    lua_pop(L, 1);
    return step;
}

static void sized_init(lua_State *L, const kind *k, int init, shape_params *p)
{
    const char *where = k->where;
    const int lattice = init != 0;
    p->init = init == 3 ? SHAPE_INIT_FCC
            : init == 2 ? SHAPE_INIT_BCC
                        : (init == 1 ? SHAPE_INIT_LATTICE : SHAPE_INIT_RANDOM);
    p->N = carlo_arg_int(L, 1, where, "N", 1, 0, 1, SHAPE_N_MAX);
    if (init == 2 && !shape_bcc_n(p->N))
        carlo_lua_fail(L, "%s: init = \"bcc\" needs N = 2 n^3 (got %lld)", where, (long long)p->N);
    if (init == 3 && !shape_fcc_n(p->N))
        carlo_lua_fail(L, "%s: init = \"fcc\" needs N = 4 n^3 (got %lld)", where, (long long)p->N);
    int has_phi = carlo_arg_has(L, 1, "phi"), has_box = carlo_arg_has(L, 1, "box");
    if (has_phi == has_box)
        carlo_lua_fail(L, "%s: give exactly one of phi (packing fraction in (0, 1)) and box", where);
    if (has_box) {
        lua_getfield(L, 1, "box");
        p->box = parse_box(L, -1, k->dim, where, "box");
        lua_pop(L, 1);
        double phi = (double)p->N * p->volume1 / carlo_box_volume(&p->box);
        if (!(phi < 1))
            carlo_lua_fail(L, "%s: N = %lld in this box packs phi = %.9g, not below 1", where, (long long)p->N, phi);
        return;
    }
    double phi = carlo_arg_num(L, 1, where, "phi", 1, 0, 0, 0, 1, 0);
    if (lattice) {
        shape_lattice_box(k->dim, p->N, p->volume1, phi, &p->box);
        return;
    }
    double side = pow((double)p->N * p->volume1 / phi, 1.0 / k->dim), L3[3] = {side, side, side};
    p->box = carlo_box_make(k->dim, L3);
}

static int construct(lua_State *L, const kind *k)
{
    const char *where = k->where;
    static const char *const poly_keys[] = {"vertices", "sweep_radius", "N", "phi", "box", "seed", "init",
                                            "device", "delta", "rotate", "moves_per_cell", "serial",
                                            "quiet", "pressure", "dlnV", "volume_moves", "box_moves", "dlnL",
                                            "dtilt", "decompose", NULL};
    static const char *const ell_keys[] = {"a", "b", "c", "N", "phi", "box", "seed", "init", "device",
                                           "delta", "rotate", "moves_per_cell", "serial", "quiet",
                                           "pressure", "dlnV", "volume_moves", "box_moves", "dlnL", "dtilt",
                                           "decompose", NULL};
    static const char *const devices[] = {"auto", "cpu", "gpu", NULL};
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    carlo_args_allowed(L, 1, where, k->ellipsoid ? ell_keys : poly_keys);
    if (k->ellipsoid && k->dim == 2 && carlo_arg_has(L, 1, "c"))
        carlo_lua_fail(L, "%s: an ellipse has semi-axes a and b only", where);
    shape_def sd;
    shape_params p;
    memset(&p, 0, sizeof p);
    parse_shape(L, k, &sd, &p.volume1);
    p.shape = &sd;
    p.what = k->what;
    p.delta = carlo_arg_num(L, 1, where, "delta", 0, 0.1 * sd.R, 0, 0, INFINITY, 0);
    p.rotate = carlo_arg_num(L, 1, where, "rotate", 0, 0.1, 0, 0, SHAPE_ROTATE_MAX, 1);
    p.moves_per_cell = (int)carlo_arg_int(L, 1, where, "moves_per_cell", 0, 4, 1, SHAPE_MOVES_MAX);
    p.serial = carlo_arg_bool(L, 1, where, "serial", 0);
    (void)carlo_arg_bool(L, 1, where, "quiet", 0);
    const double pressure = carlo_arg_num(L, 1, where, "pressure", 0, 0, 0, 0, INFINITY, 0);
    const double dlnV = carlo_arg_num(L, 1, where, "dlnV", 0, 0, 0, 0, 1, 1);
    const int volume_moves = (int)carlo_arg_int(L, 1, where, "volume_moves", 0, 1, 1, SHAPE_VOLUME_MOVES_MAX);
    const double dlnL = carlo_arg_num(L, 1, where, "dlnL", 0, 0, 0, 0, 1, 1);
    const double dtilt = carlo_arg_num(L, 1, where, "dtilt", 0, 0, 0, 0, 1, 1);
    const int box_moves = carlo_arg_enum(L, 1, where, "box_moves", "isotropic", BOX_MOVES);
    const char *inits[] = {"random", k->lattice, k->dim == 3 ? "bcc" : NULL, k->dim == 3 ? "fcc" : NULL, NULL};
    int init = carlo_lua_init_arg(L, 1, where, NULL, "random", inits, 1);
    lua_Integer step = 0;
    if (init < 0)
        step = snapshot_init(L, lua_gettop(L), k, &p); /* buffers stay on the stack */
    else
        sized_init(L, k, init, &p);
    p.seed = carlo_arg_seed(L, 1, where);
    carlo_arg_enum(L, 1, where, "device", carlo_device_default(), devices);
    const int split = carlo_arg_decompose(L, 1, where); /* cell layers over the MPI ranks */
    p.device = p.serial ? CARLO_CPU : carlo_lua_device(L, where, carlo_arg_str(L, 1, where, "device", 0));
    shape_system *s = shape_create(&p);
    if (!s)
        return carlo_raise(L, where);
    s->step = (uint64_t)step;
    if (dlnV > 0)
        s->dlnV = dlnV;
    s->volume_moves = volume_moves;
    if (dlnL > 0)
        s->dlnL = dlnL;
    if (dtilt > 0)
        s->dtilt = dtilt;
    if (shape_set_box_moves(s, box_moves) || (pressure > 0 && shape_set_pressure(s, pressure)) ||
        (split && shape_split_on(s, split == 2))) {
        shape_destroy(s);
        return carlo_raise(L, where);
    }
    carlo_lua_push_system(L, &shape_lua_model, &s->sys);
    return 1;
}

static int l_polygons(lua_State *L) { return construct(L, &KINDS[0]); }
static int l_polyhedra(lua_State *L) { return construct(L, &KINDS[1]); }
static int l_ellipses(lua_State *L) { return construct(L, &KINDS[2]); }
static int l_ellipsoids(lua_State *L) { return construct(L, &KINDS[3]); }

/* carlo.shape_hull(vertices [, sweep_radius]) -> { volume =, centroid = {...}, vertices = {...},
 * circumradius =, inradius = }: the geometry the constructors compute (2 or 3 columns). */
static int l_hull(lua_State *L)
{
    const char *where = "carlo.shape_hull";
    int dim = 2;
    carlo_array *a = carlo_array_test(L, 1);
    if (a)
        dim = a->ndim == 2 ? (int)a->shape[1] : 0;
    else if (lua_istable(L, 1) && lua_rawgeti(L, 1, 1) == LUA_TTABLE) {
        dim = (int)lua_rawlen(L, -1);
        lua_pop(L, 1);
    } else
        return carlo_lua_fail(L, "%s: vertices must be a list of points", where);
    if (dim != 2 && dim != 3)
        return carlo_lua_fail(L, "%s: points have 2 or 3 coordinates (got %d)", where, dim);
    double sweep = luaL_optnumber(L, 2, 0);
    lua_settop(L, 2);
    int64_t nv = 0;
    double *v = parse_points(L, 1, dim, dim + 1, SHAPE_VMAX, &nv, where, "vertices");
    shape_def sd;
    double vol, c[3];
    if (shape_make_poly(&sd, dim, (int)nv, v, sweep, &vol, c))
        return carlo_raise(L, where);
    lua_createtable(L, 0, 5);
    carlo_lua_setnum(L, "volume", vol);
    carlo_lua_setnum(L, "circumradius", sd.R);
    carlo_lua_setnum(L, "inradius", sd.r_in);
    lua_createtable(L, dim, 0);
    for (int q = 0; q < dim; q++) {
        lua_pushnumber(L, c[q]);
        lua_rawseti(L, -2, q + 1);
    }
    lua_setfield(L, -2, "centroid");
    lua_createtable(L, sd.nv, 0);
    for (int i = 0; i < sd.nv; i++) {
        lua_createtable(L, dim, 0);
        for (int q = 0; q < dim; q++) {
            lua_pushnumber(L, sd.v[i][q]);
            lua_rawseti(L, -2, q + 1);
        }
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "vertices");
    return 1;
}

/* ---------- the model's own methods ---------- */

static int l_sweep(lua_State *L)
{
    if (shape_sweep(check(L, 1)))
        return carlo_raise(L, "shape:sweep");
    return 0;
}

static int l_substep(lua_State *L)
{
    shape_system *s = check(L, 1);
    lua_Integer set = luaL_checkinteger(L, 2);
    if (set < 0 || set >= (1 << s->dim))
        return luaL_error(L, "shape:substep: the set must be from 0 to %d (got %I)", (1 << s->dim) - 1, set);
    if (shape_subsweep(s, (int)set))
        return carlo_raise(L, "shape:substep");
    return 0;
}

static int l_shift_cells(lua_State *L)
{
    if (shape_shift_cells(check(L, 1)))
        return carlo_raise(L, "shape:shift_cells");
    return 0;
}

/* sys:tune{ target = 0.3, volume_target = 0.3, length_target = volume_target, shear_target =
 * volume_target, rounds = 20, sweeps = 50 } -> { delta =, rotate =, acceptance =,
 * rotate_acceptance = [, dlnV =, volume_acceptance =, dlnL =, length_acceptance =, dtilt =,
 * shear_acceptance =] } */
static int l_tune(lua_State *L)
{
    static const char *const keys[] = {"target", "volume_target", "length_target", "shear_target", "rounds",
                                       "sweeps", NULL};
    const char *where = "shape:tune";
    shape_system *s = check(L, 1);
    carlo_lua_optional_table(L, 2);
    carlo_args_allowed(L, 2, where, keys);
    double target = carlo_arg_num(L, 2, where, "target", 0, 0.3, 0, 0, 1, 0);
    int rounds = (int)carlo_arg_int(L, 2, where, "rounds", 0, 20, 1, 100000);
    uint64_t sweeps = (uint64_t)carlo_arg_int(L, 2, where, "sweeps", 0, 50, 1, (int64_t)1 << 40);
    double vt = carlo_arg_num(L, 2, where, "volume_target", 0, 0.3, 0, 0, 1, 0);
    shape_box_tune bt = {vt, carlo_arg_num(L, 2, where, "length_target", 0, vt, 0, 0, 1, 0),
                         carlo_arg_num(L, 2, where, "shear_target", 0, vt, 0, 0, 1, 0), NAN, NAN, NAN};
    double at, ar;
    if (shape_tune_box(s, target, &bt, rounds, sweeps, &at, &ar))
        return carlo_raise(L, where);
    const double av = bt.volume_acc;
    lua_createtable(L, 0, 6);
    carlo_lua_setnum(L, "delta", (double)s->mv.delta);
    carlo_lua_setnum(L, "rotate", s->mv.rotate);
    carlo_lua_setnum(L, "acceptance", at);
    carlo_lua_setnum(L, "rotate_acceptance", ar);
    if (s->npt && s->box_moves == SHAPE_BOX_ISOTROPIC) {
        carlo_lua_setnum(L, "dlnV", s->dlnV);
        carlo_lua_setnum(L, "volume_acceptance", av);
    }
    if (s->npt && s->box_moves != SHAPE_BOX_ISOTROPIC) {
        carlo_lua_setnum(L, "dlnL", s->dlnL);
        carlo_lua_setnum(L, "length_acceptance", bt.length_acc);
    }
    if (s->npt && s->box_moves == SHAPE_BOX_TRICLINIC) {
        carlo_lua_setnum(L, "dtilt", s->dtilt);
        carlo_lua_setnum(L, "shear_acceptance", bt.shear_acc);
    }
    return 1;
}

/* sys:compress{ phi =, sweeps_between = 1, max_sweeps = 0, quiet = false } -> phi */
static int l_compress(lua_State *L)
{
    static const char *const keys[] = {"phi", "sweeps_between", "max_sweeps", "quiet", NULL};
    const char *where = "shape:compress";
    shape_system *s = check(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    carlo_args_allowed(L, 2, where, keys);
    double phi = carlo_arg_num(L, 2, where, "phi", 1, 0, 0, 0, 1, 0);
    uint64_t between = (uint64_t)carlo_arg_int(L, 2, where, "sweeps_between", 0, 1, 1, 1 << 20);
    uint64_t max = (uint64_t)carlo_arg_int(L, 2, where, "max_sweeps", 0, 0, 0, (int64_t)1 << 47);
    int quiet = carlo_arg_bool(L, 2, where, "quiet", 0);
    if (shape_compress(s, phi, between, max, quiet))
        return carlo_raise(L, where);
    lua_pushnumber(L, (double)s->N * s->volume1 / carlo_box_volume(&s->box));
    return 1;
}

/* sys:overlaps([max = 100]) -> count, { {i, j}, ... } (1-based) */
static int l_overlaps(lua_State *L)
{
    shape_system *s = check(L, 1);
    lua_Integer max = luaL_optinteger(L, 2, 100);
    if (max < 0 || max > 1 << 24)
        return luaL_error(L, "shape:overlaps: max must be from 0 to %d (got %I)", 1 << 24, max);
    int64_t *pairs = (int64_t *)lua_newuserdatauv(L, sizeof(int64_t) * 2 * (size_t)(max ? max : 1), 0);
    double *x = (double *)lua_newuserdatauv(L, carlo_mulsize((size_t)s->N, 3 * sizeof(double)), 0);
    uint32_t *o = (uint32_t *)lua_newuserdatauv(L, carlo_mulsize((size_t)s->N, 4 * sizeof(uint32_t)), 0);
    int64_t count;
    if (shape_state(s, x, o) || shape_overlaps_of(&s->shape, &s->box, s->N, x, o, &count, pairs, max))
        return carlo_raise(L, "shape:overlaps");
    lua_pushinteger(L, (lua_Integer)count);
    int64_t shown = count < max ? count : max;
    lua_createtable(L, (int)shown, 0);
    for (int64_t k = 0; k < shown; k++) {
        lua_createtable(L, 2, 0);
        lua_pushinteger(L, (lua_Integer)pairs[2 * k] + 1);
        lua_rawseti(L, -2, 1);
        lua_pushinteger(L, (lua_Integer)pairs[2 * k + 1] + 1);
        lua_rawseti(L, -2, 2);
        lua_rawseti(L, -2, (lua_Integer)k + 1);
    }
    return 2;
}

static int l_verify(lua_State *L)
{
    if (shape_verify(check(L, 1))) {
        lua_pushboolean(L, 0);
        lua_pushstring(L, carlo_errmsg());
        return 2;
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* Half the box's smallest distance between faces (its side in an orthorhombic box): the
 * largest neighbour cutoff the minimum image serves. */
static double half_box(const shape_system *s)
{
    double h[3];
    carlo_box_heights(&s->box, h);
    double m = fmin(h[0], h[1]);
    return 0.5 * (s->dim == 3 ? fmin(m, h[2]) : m);
}

/* sys:steinhardt{ rc = 1.2 (sqrt 2 / rho)^(1/3) } -> { Q4 =, Q6 =, rc = } (3D) */
static int steinhardt_of(void *s, double rc, double *q4, double *q6)
{
    return shape_steinhardt((shape_system *)s, rc, q4, q6);
}

static int l_steinhardt(lua_State *L)
{
    shape_system *s = check(L, 1);
    return carlo_lua_steinhardt(L, "shape:steinhardt", "the order of polyhedra and ellipsoids", s->dim, s->N,
                                &s->box, steinhardt_of, s);
}

/* sys:nematic() -> { S =, director = {x, y, z}, axis = {x, y, z} (the body frame's) } (3D) */
static int l_nematic(lua_State *L)
{
    const char *where = "shape:nematic";
    shape_system *s = check(L, 1);
    if (s->dim != 3)
        return luaL_error(L, "%s: the nematic order is that of polyhedra and ellipsoids (3D)", where);
    double S, d[3], u[3];
    if (shape_nematic(s, &S, d))
        return carlo_raise(L, where);
    shape_axis(&s->shape, u);
    lua_createtable(L, 0, 3);
    carlo_lua_setnum(L, "S", S);
    const double *vs[2] = {d, u};
    const char *names[2] = {"director", "axis"};
    for (int t = 0; t < 2; t++) {
        lua_createtable(L, 3, 0);
        for (int a = 0; a < 3; a++) {
            lua_pushnumber(L, vs[t][a]);
            lua_rawseti(L, -2, a + 1);
        }
        lua_setfield(L, -2, names[t]);
    }
    return 1;
}

/* sys:png(path [, { size = 800, period = }]) (2D) */
static int l_png(lua_State *L)
{
    static const char *const keys[] = {"size", "period", NULL};
    const char *where = "shape:png";
    shape_system *s = check(L, 1);
    const char *path = luaL_checkstring(L, 2);
    lua_settop(L, 3);
    carlo_lua_optional_table(L, 3);
    carlo_args_allowed(L, 3, where, keys);
    if (s->dim != 2)
        return luaL_error(L, "%s: png draws polygons and ellipses (2D); write a trajectory and export it "
                             "to GSD for 3D shapes", where);
    int size = (int)carlo_arg_int(L, 3, where, "size", 0, 800, 16, 16384);
    int period = (int)carlo_arg_int(L, 3, where, "period", 0, 0, 1, 64);
    if (shape_png(s, path, size, period))
        return carlo_raise(L, where);
    return 0;
}

/* sys:psi{ n =, m = 6, rc = 2.4 R } -> { orient =, bond = } */
static int l_psi(lua_State *L)
{
    static const char *const keys[] = {"n", "m", "rc", NULL};
    const char *where = "shape:psi";
    shape_system *s = check(L, 1);
    carlo_lua_optional_table(L, 2);
    carlo_args_allowed(L, 2, where, keys);
    if (s->dim != 2)
        return luaL_error(L, "%s: psi is the order of polygons and ellipses (2D)", where);
    int n = (int)carlo_arg_int(L, 2, where, "n", 1, 0, 1, 64);
    int m = (int)carlo_arg_int(L, 2, where, "m", 0, 6, 1, 64);
    double rc = carlo_arg_num(L, 2, where, "rc", 0, 2.4 * s->shape.R, 0, 0, half_box(s), 1);
    double o, b;
    if (shape_psi(s, n, m, rc, &o, &b))
        return carlo_raise(L, where);
    lua_createtable(L, 0, 2);
    carlo_lua_setnum(L, "orient", o);
    carlo_lua_setnum(L, "bond", b);
    return 1;
}

/* ---------- the system layer's Lua face ---------- */

static void describe(lua_State *L, carlo_sys *c)
{
    shape_system *s = (shape_system *)c;
    char buf[160];
    char ens[48] = "NVT";
    if (s->npt)
        snprintf(ens, sizeof ens, "NPT at beta P = %.6g", s->pressure);
    snprintf(buf, sizeof buf, "%s, N = %lld, phi = %.6f, %s%s", s->what, (long long)s->N,
             (double)s->N * s->volume1 / carlo_box_volume(&s->box), ens, s->serial ? ", serial reference" : "");
    lua_pushstring(L, buf);
}

static int index_field(lua_State *L, carlo_sys *c, const char *k)
{
    shape_system *s = (shape_system *)c;
    const double V = carlo_box_volume(&s->box);
    if (strcmp(k, "N") == 0)
        lua_pushinteger(L, (lua_Integer)s->N);
    else if (strcmp(k, "dim") == 0)
        lua_pushinteger(L, s->dim);
    else if (strcmp(k, "phi") == 0)
        lua_pushnumber(L, (double)s->N * s->volume1 / V);
    else if (strcmp(k, "rho") == 0)
        lua_pushnumber(L, (double)s->N / V);
    else if (strcmp(k, "volume") == 0)
        lua_pushnumber(L, V);
    else if (strcmp(k, "box") == 0)
        carlo_lua_push_box(L, &s->box);
    else if (strcmp(k, "delta") == 0)
        lua_pushnumber(L, (double)s->mv.delta);
    else if (strcmp(k, "rotate") == 0)
        lua_pushnumber(L, s->mv.rotate);
    else if (strcmp(k, "moves_per_cell") == 0)
        lua_pushinteger(L, s->mv.moves);
    else if (strcmp(k, "serial") == 0)
        lua_pushboolean(L, s->serial);
    else if (strcmp(k, "npt") == 0)
        lua_pushboolean(L, s->npt);
    else if (strcmp(k, "dlnV") == 0)
        lua_pushnumber(L, s->dlnV);
    else if (strcmp(k, "volume_moves") == 0)
        lua_pushinteger(L, s->volume_moves);
    else if (strcmp(k, "box_moves") == 0)
        lua_pushstring(L, BOX_MOVES[s->box_moves]);
    else if (strcmp(k, "dlnL") == 0)
        lua_pushnumber(L, s->dlnL);
    else if (strcmp(k, "dtilt") == 0)
        lua_pushnumber(L, s->dtilt);
    else if (strcmp(k, "pressure") == 0) /* an NVT system's; an NPT one's is its control */
        lua_pushnil(L);
    else if (strcmp(k, "particle_volume") == 0)
        lua_pushnumber(L, s->volume1);
    else if (strcmp(k, "circumradius") == 0)
        lua_pushnumber(L, s->shape.R);
    else if (strcmp(k, "inradius") == 0)
        lua_pushnumber(L, s->shape.r_in);
    else if (strcmp(k, "cells") == 0) {
        lua_createtable(L, 0, 3);
        lua_createtable(L, s->dim, 0);
        for (int a = 0; a < s->dim; a++) {
            lua_pushinteger(L, s->grid.m[a]);
            lua_rawseti(L, -2, a + 1);
        }
        lua_setfield(L, -2, "m");
        carlo_lua_setnum(L, "width", s->grid.width[0]);
        carlo_lua_setint(L, "nmax", s->grid.nmax);
    } else if (strcmp(k, "decomposed") == 0)
        lua_pushboolean(L, s->split != NULL);
    else if (strcmp(k, "frozen_edges") == 0) /* decompose = "frozen" */
        lua_pushboolean(L, s->split && s->split->frozen);
    else if (strcmp(k, "layers") == 0) { /* this rank's cell layers along y (2D) or z, 1-based */
        if (!s->split)
            lua_pushnil(L);
        else {
            lua_createtable(L, 2, 0);
            lua_pushinteger(L, s->split->lo + 1);
            lua_rawseti(L, -2, 1);
            lua_pushinteger(L, s->split->hi);
            lua_rawseti(L, -2, 2);
        }
    } else
        return 0;
    return 1;
}

static int newindex_field(lua_State *L, carlo_sys *c, const char *k, int v)
{
    shape_system *s = (shape_system *)c;
    int isnum;
    double x = lua_tonumberx(L, v, &isnum);
    if (strcmp(k, "delta") == 0 || strcmp(k, "rotate") == 0) {
        if (!isnum)
            return carlo_lua_fail(L, "shape: %s must be a number (got %s)", k, luaL_tolstring(L, v, NULL));
        if (shape_set_moves(s, k[0] == 'd' ? x : (double)s->mv.delta, k[0] == 'r' ? x : s->mv.rotate))
            return carlo_raise(L, "shape");
    } else if (strcmp(k, "moves_per_cell") == 0) {
        if (!lua_isinteger(L, v) || x < 1 || x > SHAPE_MOVES_MAX)
            return carlo_lua_fail(L, "shape: moves_per_cell must be an integer from 1 to %d (got %s)", SHAPE_MOVES_MAX,
                                  luaL_tolstring(L, v, NULL));
        s->mv.moves = (int)x;
    } else if (strcmp(k, "volume_moves") == 0) {
        if (!lua_isinteger(L, v) || x < 1 || x > SHAPE_VOLUME_MOVES_MAX)
            return carlo_lua_fail(L, "shape: volume_moves must be an integer from 1 to %d (got %s)",
                                  SHAPE_VOLUME_MOVES_MAX, luaL_tolstring(L, v, NULL));
        s->volume_moves = (int)x;
    } else if (strcmp(k, "dlnV") == 0 || strcmp(k, "dlnL") == 0 || strcmp(k, "dtilt") == 0) {
        if (!isnum || !(x > 0) || x > 1)
            return carlo_lua_fail(L, "shape: %s must be a number in (0, 1] (got %s)", k, luaL_tolstring(L, v, NULL));
        *(k[1] == 't' ? &s->dtilt : (k[3] == 'L' ? &s->dlnL : &s->dlnV)) = x;
    } else if (strcmp(k, "box_moves") == 0) {
        int mode = -1;
        for (int i = 0; BOX_MOVES[i] && lua_type(L, v) == LUA_TSTRING; i++)
            if (strcmp(lua_tostring(L, v), BOX_MOVES[i]) == 0)
                mode = i;
        if (mode < 0)
            return carlo_lua_fail(L,
                                  "shape: box_moves must be \"isotropic\", \"anisotropic\" or \"triclinic\" (got %s)",
                                  luaL_tolstring(L, v, NULL));
        if (shape_set_box_moves(s, mode))
            return carlo_raise(L, "shape");
    } else if (strcmp(k, "pressure") == 0 && (lua_isnil(L, v) || !s->npt)) {
        if (!lua_isnil(L, v) && (!isnum || !(x > 0) || !isfinite(x)))
            return carlo_lua_fail(L, "shape: pressure must be a number > 0 (beta P in the vertices' length unit^-%d), "
                                     "or nil for NVT (got %s)", s->dim, luaL_tolstring(L, v, NULL));
        if (shape_set_pressure(s, lua_isnil(L, v) ? 0 : x))
            return carlo_raise(L, "shape");
    } else {
        return 0;
    }
    return 1;
}

/* { position = N x d, orientation = N (2D angles) or N x 4 (quaternions), box, step, N } */
static void snapshot(lua_State *L, carlo_sys *c, int replica)
{
    (void)replica;
    shape_system *s = (shape_system *)c;
    lua_createtable(L, 0, 5);
    double *x = (double *)lua_newuserdatauv(L, carlo_mulsize((size_t)s->N, 3 * sizeof(double)), 0);
    uint32_t *o = (uint32_t *)lua_newuserdatauv(L, carlo_mulsize((size_t)s->N, 4 * sizeof(uint32_t)), 0);
    if (shape_state(s, x, o))
        carlo_raise(L, "shape:snapshot");
    carlo_array *a = carlo_array_push(L, CARLO_F64, s->N, s->dim);
    double *out = (double *)a->data;
    for (int64_t k = 0; k < s->N; k++)
        for (int d = 0; d < s->dim; d++)
            out[k * s->dim + d] = x[3 * k + d];
    lua_setfield(L, -4, "position");
    const int cols = s->dim == 2 ? 1 : 4;
    a = carlo_array_push(L, CARLO_F64, s->N, s->dim == 2 ? 0 : 4);
    out = (double *)a->data;
    for (int64_t k = 0; k < s->N; k++) {
        double q[4];
        shape_orient_values(s->dim, o + 4 * k, q);
        for (int d = 0; d < cols; d++)
            out[k * cols + d] = q[d];
    }
    lua_setfield(L, -4, "orientation");
    lua_pop(L, 2);
    carlo_lua_push_box(L, &s->box);
    lua_setfield(L, -2, "box");
    carlo_lua_setint(L, "step", (long long)s->step);
    carlo_lua_setint(L, "N", (long long)s->N);
}

static void run_args(lua_State *L, int args, carlo_sys *c, carlo_run_opts *o, const char *where)
{
    (void)L;
    (void)args;
    (void)where;
    o->label = ((shape_system *)c)->what;
}

static const char *const observe_keys[] = {"pressure", "psi", "steinhardt", "nematic", "rc", "sdf", NULL};

static void observe_args(lua_State *L, int args, carlo_sys *c, void *opt, const char *where)
{
    shape_system *s = (shape_system *)c;
    shape_observe_opt *o = (shape_observe_opt *)opt;
    shape_observe_defaults(o);
    o->no_pressure = !carlo_arg_bool(L, args, where, "pressure", 1);
    o->psi = (int)carlo_arg_int(L, args, where, "psi", 0, 0, 0, 64);
    if (o->psi && s->dim != 2)
        carlo_lua_fail(L, "%s: psi is the order of a 2D system", where);
    o->steinhardt = carlo_arg_bool(L, args, where, "steinhardt", 0);
    o->nematic = carlo_arg_bool(L, args, where, "nematic", 0);
    if ((o->steinhardt || o->nematic) && s->dim != 3)
        carlo_lua_fail(L, "%s: %s is the order of a 3D system", where,
                       o->steinhardt ? "steinhardt (Q4, Q6)" : "nematic");
    o->rc = carlo_arg_num(L, args, where, "rc", 0, 0, 0, 0, half_box(s), 1);
    if (lua_getfield(L, args, "sdf") != LUA_TNIL) {
        static const char *const keys[] = {"dx", "xmax", "degree", NULL};
        char w[64];
        snprintf(w, sizeof w, "%s: sdf", where);
        carlo_args_allowed(L, -1, w, keys);
        o->dx = carlo_arg_num(L, -1, w, "dx", 0, o->dx, 0, 0, 0.25, 1);
        o->xmax = carlo_arg_num(L, -1, w, "xmax", 0, o->xmax, 0, 0, 0.5, 0);
        o->degree = (int)carlo_arg_int(L, -1, w, "degree", 0, o->degree, 0, 6);
        if (o->xmax / o->dx < o->degree + 2)
            carlo_lua_fail(L, "%s: xmax / dx must be at least degree + 2 (got %g / %g, degree %d)", w, o->xmax,
                           o->dx, o->degree);
    }
    lua_pop(L, 1);
    o->fit = 1;
}

static void observe_extra(lua_State *L, carlo_sys *c, int replica, const double *values)
{
    (void)replica;
    (void)values;
    shape_system *s = (shape_system *)c;
    carlo_lua_setint(L, "N", (long long)s->N);
    if (!s->npt) /* an NPT system's volume is one of its observables */
        carlo_lua_setnum(L, "volume", carlo_box_volume(&s->box));
    carlo_lua_setnum(L, "delta", (double)s->mv.delta);
    carlo_lua_setnum(L, "dlnV", s->dlnV);
    carlo_lua_setint(L, "volume_tried", (long long)s->vcnt[0]);
    carlo_lua_setint(L, "volume_accepted", (long long)s->vcnt[1]);
    if (s->vcnt[0])
        carlo_lua_setnum(L, "volume_acceptance", (double)s->vcnt[1] / (double)s->vcnt[0]);
    if (s->box_moves != SHAPE_BOX_ISOTROPIC || s->lcnt[0] || s->tcnt[0]) {
        carlo_lua_setnum(L, "dlnL", s->dlnL);
        carlo_lua_setnum(L, "dtilt", s->dtilt);
        carlo_lua_setint(L, "length_tried", (long long)s->lcnt[0]);
        carlo_lua_setint(L, "length_accepted", (long long)s->lcnt[1]);
        carlo_lua_setint(L, "shear_tried", (long long)s->tcnt[0]);
        carlo_lua_setint(L, "shear_accepted", (long long)s->tcnt[1]);
        carlo_lua_setint(L, "reductions", (long long)s->reductions);
        if (s->lcnt[0])
            carlo_lua_setnum(L, "length_acceptance", (double)s->lcnt[1] / (double)s->lcnt[0]);
        if (s->tcnt[0])
            carlo_lua_setnum(L, "shear_acceptance", (double)s->tcnt[1] / (double)s->tcnt[0]);
    }
    carlo_lua_setnum(L, "rotate", s->mv.rotate);
    uint64_t n[4];
    if (shape_counts(s, n))
        carlo_raise(L, "shape:observe");
    carlo_lua_setint(L, "tried", (long long)(n[0] + n[2]));
    carlo_lua_setint(L, "accepted", (long long)(n[1] + n[3]));
    if (n[0])
        carlo_lua_setnum(L, "acceptance", (double)n[1] / (double)n[0]);
    if (n[2])
        carlo_lua_setnum(L, "rotate_acceptance", (double)n[3] / (double)n[2]);
}

static const char *const settable[] = {"delta", "rotate", "moves_per_cell", "dlnV", "volume_moves",
                                       "pressure", "box_moves", "dlnL", "dtilt", NULL};

/* The serial reference is restored on the CPU. */
static const char *load_device(const carlo_frame *f)
{
    const carlo_chunk *c = carlo_frame_find(f, "shape/shape");
    if (c && c->type == CARLO_I32 && c->rows == 8 && ((const int32_t *)c->data)[7])
        return "cpu";
    return NULL;
}

/* sys:launch([{ team =, capped = }]) -> { team =, capped = }: the GPU lanes per active cell of a
 * sub-sweep, 1 (one thread) or a team of 2, 4 or 8, and (3D teams) whether their registers are
 * bounded for occupancy. For benchmarks only: every launch makes the same decisions (the chain
 * never changes); set by hand, the tuner leaves it. */
static int l_launch(lua_State *L)
{
    static const char *const keys[] = {"team", "capped", NULL};
    const char *where = "shape:launch";
    shape_system *s = check(L, 1);
    const int given = !lua_isnoneornil(L, 2);
    carlo_lua_optional_table(L, 2);
    carlo_args_allowed(L, 2, where, keys);
    const int now = s->team > 0 ? s->team : (s->dim == 2 ? 4 : 8);
    const int team = (int)carlo_arg_int(L, 2, where, "team", 0, now, 1, 8);
    if (team != 1 && team != 2 && team != 4 && team != 8)
        return luaL_error(L, "%s: team must be 1, 2, 4 or 8 (GPU lanes per active cell; got %d)", where, team);
    const int capped = carlo_arg_bool(L, 2, where, "capped", s->capped);
    if (capped && s->dim == 2)
        return luaL_error(L, "%s: capped is for 3D shapes (2D teams fit their registers already)", where);
    if (given) {
        s->team = team;
        s->capped = capped;
        s->tuner.fixed = 1;
    }
    lua_createtable(L, 0, 2);
    carlo_lua_setint(L, "team", team);
    lua_pushboolean(L, capped);
    lua_setfield(L, -2, "capped");
    return 1;
}

static const luaL_Reg methods[] = {
    {"sweep", l_sweep}, {"substep", l_substep}, {"shift_cells", l_shift_cells}, {"tune", l_tune},
    {"compress", l_compress},
    {"overlaps", l_overlaps}, {"verify", l_verify}, {"psi", l_psi},
    {"steinhardt", l_steinhardt}, {"nematic", l_nematic}, {"png", l_png}, {"launch", l_launch},
    {NULL, NULL}};

const carlo_lua_model shape_lua_model = {
    .ops = &shape_ops,
    .metatable = "carlo.shape",
    .methods = methods,
    .index = index_field,
    .describe = describe,
    .snapshot = snapshot,
    .run_args = run_args,
    .observe_keys = observe_keys,
    .opt_size = sizeof(shape_observe_opt),
    .observe_args = observe_args,
    .observe_extra = observe_extra,
    .newindex = newindex_field,
    .settable = settable,
    .load_device = load_device,
};

void shape_lua_open(lua_State *L)
{
    carlo_lua_model_register(L, &shape_lua_model);
    static const luaL_Reg fns[] = {{"hard_polygons", l_polygons}, {"hard_polyhedra", l_polyhedra},
                                   {"hard_ellipses", l_ellipses}, {"hard_ellipsoids", l_ellipsoids},
                                   {"shape_hull", l_hull}, {NULL, NULL}};
    luaL_setfuncs(L, fns, 0);
}
