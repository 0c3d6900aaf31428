/* lj_lua.c — the Lua binding of the Lennard-Jones model: the constructor carlo.lj{...} and
 * what is the model's own (trial, substep, tune, recompute, widom, rdf, launch; the observe
 * options widom and rdf; fields). The common verbs are the system layer's (system_lua.h). */
#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"
#include "core/array.h"
#include "core/error.h"
#include "core/progress.h"
#include "lj/lj.h"
#include "lj/lj_cb.h"
#include "lj/lj_dec.h"
#include "lj/lj_lua.h"
#include "system/system_lua.h"

static const char *const MODES[] = {"decomposition", "checkerboard", NULL};
static const char *const SUMS[] = {"all", "cells", "auto", NULL};
static const char *const ORDERS[] = {"near", "cell", NULL};
static const char *const INITS[] = {"fcc", "random", NULL};
static const char *const DEVICES[] = {"auto", "cpu", "gpu", NULL};
static const char *const KERNELS[] = {"persistent", "launch", "graph", NULL};

#define CHECK_EVERY_DEFAULT 1000

extern const carlo_lua_model lj_lua_model;

static lj_system *check(lua_State *L, int idx)
{
    return (lj_system *)carlo_lua_check(L, idx, &lj_lua_model);
}

/* ---------- the constructor ---------- */

/* box = L (a cube or square), { Lx, Ly [, Lz] } or the six GSD numbers { Lx, Ly, Lz, xy, xz,
 * yz } (untilted; Lz = 0 means 2D): returns its dimension (0 for a number). */
static int read_box(lua_State *L, int idx, const char *where, const char *key, double box[3])
{
    int t = lua_getfield(L, idx, key);
    int n = 0;
    if (t == LUA_TNUMBER) {
        double v = lua_tonumber(L, -1);
        if (!(v > 0) || !isfinite(v))
            luaL_error(L, "%s: %s must be a number > 0 or a list of 2 or 3 numbers > 0 (got %s)",
                       where, key, luaL_tolstring(L, -1, NULL));
        box[0] = box[1] = box[2] = v;
    } else if (t == LUA_TTABLE) {
        n = (int)lua_rawlen(L, -1);
        if (n != 2 && n != 3 && n != 6)
            luaL_error(L, "%s: %s must list 2 or 3 lengths, or the six GSD numbers (got %d)", where,
                       key, n);
        double v6[6] = {0, 0, 0, 0, 0, 0};
        for (int a = 0; a < n; a++) {
            lua_rawgeti(L, -1, a + 1);
            int isnum;
            v6[a] = lua_tonumberx(L, -1, &isnum);
            if (!isnum || !isfinite(v6[a]))
                luaL_error(L, "%s: %s[%d] must be a finite number (got %s)", where, key, a + 1,
                           luaL_tolstring(L, -1, NULL));
            lua_pop(L, 1);
        }
        if (n == 6) {
            if (v6[3] != 0 || v6[4] != 0 || v6[5] != 0)
                luaL_error(L, "%s: %s: tilted boxes are not supported (xy = xz = yz = 0 required, "
                              "got %f, %f, %f)", where, key, v6[3], v6[4], v6[5]);
            n = v6[2] == 0 ? 2 : 3;
        }
        for (int a = 0; a < n; a++)
            if (!(v6[a] > 0))
                luaL_error(L, "%s: %s[%d] must be a number > 0 (got %f)", where, key, a + 1, v6[a]);
        box[0] = v6[0];
        box[1] = v6[1];
        box[2] = n == 3 ? v6[2] : 1.0;
    } else {
        luaL_error(L, "%s: %s must be a number > 0 or a list of 2 or 3 numbers > 0 (got a %s)",
                   where, key, lua_typename(L, t));
    }
    lua_pop(L, 1);
    return n;
}

/* init = a snapshot { position = N x d array, box = ..., step = }: N, the positions (left on
 * the stack), the box; returns the box's dimension. */
static int read_snapshot(lua_State *L, const char *where, lj_params *p)
{
    lua_getfield(L, 1, "init");
    int snap = lua_gettop(L);
    if (lua_getfield(L, snap, "position") == LUA_TNIL)
        luaL_error(L, "%s: init: a snapshot needs position (an N x d carlo.array)", where);
    carlo_array *a = carlo_array_test(L, -1);
    if (!a || a->ndim != 2 || (a->shape[1] != 3 && a->shape[1] != 2) ||
        (a->type != CARLO_F64 && a->type != CARLO_F32))
        luaL_error(L, "%s: init.position must be an N x 3 (or N x 2) f64 or f32 carlo.array (got %s)",
                   where, a ? carlo_dtype_name(a->type) : luaL_typename(L, -1));
    if (a->shape[0] < 2 || a->shape[0] > LJ_N_MAX)
        luaL_error(L, "%s: init.position must hold 2 to %d particles (got %I)", where, LJ_N_MAX,
                   (lua_Integer)a->shape[0]);
    p->N = (uint32_t)a->shape[0];
    double *positions = (double *)lua_newuserdatauv(L, sizeof(double) * 3 * p->N, 0);
    int cols = (int)a->shape[1];
    for (uint32_t i = 0; i < p->N; i++)
        for (int c = 0; c < 3; c++) {
            double v = c < cols ? carlo_array_get(a, (size_t)i * cols + c) : 0.0;
            if (!isfinite(v))
                luaL_error(L, "%s: init.position[%I][%d] must be finite (got %f)", where,
                           (lua_Integer)i + 1, c + 1, v);
            positions[3 * i + c] = v;
        }
    p->positions = positions;
    int dim = read_box(L, snap, where, "box", p->box); /* the arrays stay on the stack */
    if (dim == 0)
        luaL_error(L, "%s: init.box must list the 2 or 3 box lengths (or six GSD numbers)", where);
    if (lua_getfield(L, snap, "dimensions") != LUA_TNIL && lua_tointeger(L, -1) != dim)
        luaL_error(L, "%s: init.dimensions = %s does not match init.box (%d lengths)", where,
                   luaL_tolstring(L, -1, NULL), dim);
    lua_pop(L, 1);
    if (cols != 3 && cols != dim)
        luaL_error(L, "%s: init.position has %d columns but init.box %d lengths", where, cols, dim);
    if (lua_getfield(L, snap, "step") != LUA_TNIL) {
        int isint;
        lua_Integer st = lua_tointegerx(L, -1, &isint);
        if (!isint || st < 0)
            luaL_error(L, "%s: init.step must be an integer >= 0 (got %s)", where,
                       luaL_tolstring(L, -1, NULL));
        p->step = (uint64_t)st;
    }
    lua_pop(L, 1);
    if (carlo_arg_has(L, 1, "N") && carlo_arg_int(L, 1, where, "N", 1, 0, 2, LJ_N_MAX) != (int64_t)p->N)
        luaL_error(L, "%s: N must match the snapshot's %I particles", where, (lua_Integer)p->N);
    p->init = LJ_INIT_POSITIONS;
    return dim;
}

/* The snapshot brings its box: rho or box given as well must describe the same one. */
static void check_snapshot_box(lua_State *L, const char *where, const lj_params *p, int dim)
{
    double V = p->box[0] * p->box[1] * (dim == 3 ? p->box[2] : 1.0), rho_snap = p->N / V;
    if (carlo_arg_has(L, 1, "rho")) {
        double rho = carlo_arg_num(L, 1, where, "rho", 1, 0, 0, 0, INFINITY, 0);
        if (fabs(rho - rho_snap) > 1e-9 * rho_snap)
            luaL_error(L, "%s: rho = %f does not match the snapshot's density %f (the snapshot "
                          "brings its box)", where, rho, rho_snap);
    }
    if (carlo_arg_has(L, 1, "box")) {
        double b[3];
        int n = read_box(L, 1, where, "box", b);
        for (int a = 0; a < dim; a++)
            if ((n && n != dim) || fabs(b[a] - p->box[a]) > 1e-9 * p->box[a])
                luaL_error(L, "%s: box does not match the snapshot's box (side %d: %f, the "
                              "snapshot's %f)", where, a + 1, b[a], p->box[a]);
    }
}

/* T or beta, exactly one. */
static double read_temperature(lua_State *L, const char *where)
{
    int hasT = carlo_arg_has(L, 1, "T"), hasB = carlo_arg_has(L, 1, "beta");
    if (hasT == hasB)
        luaL_error(L, "%s: give exactly one of T (> 0) and beta (> 0)", where);
    if (hasT)
        return carlo_arg_num(L, 1, where, "T", 1, 0, 0, 0, INFINITY, 0);
    return 1.0 / carlo_arg_num(L, 1, where, "beta", 1, 0, 0, 0, INFINITY, 0);
}

/* The checkerboard's sum order: sum_order, or the old lanes (a warning); 0: by the size. */
static int read_order(lua_State *L, const char *where)
{
    int has_lanes = carlo_arg_has(L, 1, "lanes");
    if (has_lanes && carlo_arg_has(L, 1, "sum_order"))
        luaL_error(L, "%s: give sum_order, not both sum_order and lanes", where);
    if (has_lanes) {
        carlo_lua_renamed(where, "lanes", "sum_order");
        int64_t lanes = carlo_arg_int(L, 1, where, "lanes", 1, 0, 32, 128);
        if (lanes != LJ_ORDER_NEAR && lanes != LJ_ORDER_CELL)
            luaL_error(L, "%s: lanes must be 32 (sum_order = \"near\") or 128 (sum_order = "
                          "\"cell\") (got %I)", where, (lua_Integer)lanes);
        return (int)lanes;
    }
    if (!carlo_arg_has(L, 1, "sum_order"))
        return 0;
    return carlo_arg_enum(L, 1, where, "sum_order", NULL, ORDERS) == 0 ? LJ_ORDER_NEAR : LJ_ORDER_CELL;
}

/* Sites at idx: an N x d (or N x 3) carlo.array, or a list of N points { x, y [, z] }: N x 3
 * doubles (z = 0 in 2D) in a userdata left on the stack. */
static const double *read_sites(lua_State *L, int idx, const char *where, uint32_t N, int dim)
{
    idx = lua_absindex(L, idx);
    carlo_array *a = carlo_array_test(L, idx);
    int64_t n;
    int cols = 3;
    if (a) {
        if (a->ndim != 2 || (a->shape[1] != 3 && a->shape[1] != dim) ||
            (a->type != CARLO_F64 && a->type != CARLO_F32))
            luaL_error(L, "%s: sites must be an N x %d f64 or f32 carlo.array (got %s with %d "
                          "dimensions)", where, dim, carlo_dtype_name(a->type), a->ndim);
        n = a->shape[0];
        cols = (int)a->shape[1];
    } else if (lua_type(L, idx) == LUA_TTABLE) {
        n = (int64_t)lua_rawlen(L, idx);
    } else {
        luaL_error(L, "%s: sites must be a carlo.array or a list of points (got a %s)", where,
                   luaL_typename(L, idx));
        return NULL;
    }
    if (n != (int64_t)N)
        luaL_error(L, "%s: sites must list one site per particle, %I (got %I)", where,
                   (lua_Integer)N, (lua_Integer)n);
    double *x = (double *)lua_newuserdatauv(L, sizeof(double) * 3 * (size_t)N, 0);
    for (uint32_t i = 0; i < N; i++) {
        if (!a && lua_rawgeti(L, idx, (lua_Integer)i + 1) != LUA_TTABLE)
            luaL_error(L, "%s: sites[%I] must be a point { x, y%s } (got a %s)", where,
                       (lua_Integer)i + 1, dim == 3 ? ", z" : "", luaL_typename(L, -1));
        for (int c = 0; c < 3; c++) {
            double v = 0.0;
            if (c < dim && a) {
                v = c < cols ? carlo_array_get(a, (size_t)i * cols + c) : 0.0;
            } else if (c < dim) {
                lua_rawgeti(L, -1, c + 1);
                int isnum;
                v = lua_tonumberx(L, -1, &isnum);
                if (!isnum)
                    luaL_error(L, "%s: sites[%I][%d] must be a number (got %s)", where,
                               (lua_Integer)i + 1, c + 1, luaL_typename(L, -1));
                lua_pop(L, 1);
            }
            if (!isfinite(v))
                luaL_error(L, "%s: sites[%I][%d] must be finite (got %f)", where, (lua_Integer)i + 1,
                           c + 1, v);
            x[3 * (size_t)i + c] = v;
        }
        if (!a)
            lua_pop(L, 1);
    }
    return x;
}

static int l_lj(lua_State *L)
{
    const char *where = "carlo.lj";
    static const char *const keys[] = {"N", "rho", "box", "dim", "T", "beta", "rc", "shift", "tail",
                                       "seed", "init", "mode", "device", "delta", "energy_sum",
                                       "sum_order", "passes", "quiet", "lanes", "lambda",
                                       "sites", NULL};
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    carlo_args_allowed(L, 1, where, keys);
    lj_params p;
    memset(&p, 0, sizeof p);
    p.quiet = carlo_arg_bool(L, 1, where, "quiet", 0);

    /* the starting configuration decides where N and the box come from */
    int init = carlo_lua_init_arg(L, 1, where, NULL, "fcc", INITS, 1);
    int snapshot = init < 0, dim = 0;
    if (snapshot) {
        lua_pop(L, 1);
        dim = read_snapshot(L, where, &p);
        check_snapshot_box(L, where, &p, dim);
    } else {
        p.init = (lj_init)init;
        p.N = (uint32_t)carlo_arg_int(L, 1, where, "N", 1, 0, 2, LJ_N_MAX);
        int has_rho = carlo_arg_has(L, 1, "rho"), has_box = carlo_arg_has(L, 1, "box");
        if (has_rho == has_box)
            return luaL_error(L, "%s: give exactly one of rho (a number > 0) and box", where);
        if (has_box)
            dim = read_box(L, 1, where, "box", p.box);
    }
    int dim_given = carlo_arg_has(L, 1, "dim");
    int d = (int)carlo_arg_int(L, 1, where, "dim", 0, dim ? dim : 3, 2, 3);
    if (dim_given && dim && d != dim)
        return luaL_error(L, "%s: dim = %d but the box lists %d lengths", where, d, dim);
    p.dim = d;
    if (!snapshot && carlo_arg_has(L, 1, "rho")) {
        double rho = carlo_arg_num(L, 1, where, "rho", 1, 0, 0, 0, INFINITY, 0);
        double side = pow((double)p.N / rho, 1.0 / d);
        p.box[0] = p.box[1] = p.box[2] = side;
        if (d == 2)
            p.box[2] = 1.0;
    } else if (!snapshot && dim == 0 && d == 2) {
        p.box[2] = 1.0;
    }
    p.T = read_temperature(L, where);
    p.rc = carlo_arg_num(L, 1, where, "rc", 0, 2.5, 0, 0, INFINITY, 0);
    p.shift = carlo_arg_bool(L, 1, where, "shift", 0);
    p.tail = carlo_arg_bool(L, 1, where, "tail", !p.shift);
    p.delta = carlo_arg_num(L, 1, where, "delta", 0, 0.1, 0, 0, INFINITY, 0);
    p.mode = (lj_mode)carlo_arg_enum(L, 1, where, "mode", "decomposition", MODES);
    if (p.mode == LJ_CHECKERBOARD && carlo_arg_has(L, 1, "energy_sum"))
        return luaL_error(L, "%s: energy_sum belongs to mode = \"decomposition\"", where);
    for (int k = 0; k < 3; k++) {
        const char *key = (const char *[]){"sum_order", "passes", "lanes"}[k];
        if (p.mode != LJ_CHECKERBOARD && carlo_arg_has(L, 1, key))
            return luaL_error(L, "%s: %s belongs to mode = \"checkerboard\"", where, key);
    }
    int sum = carlo_arg_enum(L, 1, where, "energy_sum", "auto", SUMS);
    p.sum = sum == 2 ? -1 : sum;
    p.order = read_order(L, where);
    p.passes = (int)carlo_arg_int(L, 1, where, "passes", 0, 1, 1, 1000);
    p.seed = carlo_arg_seed(L, 1, where);
    carlo_arg_enum(L, 1, where, "device", carlo_device_default(), DEVICES);
    p.device = carlo_lua_device(L, where, carlo_arg_str(L, 1, where, "device", 0));
    double Lmin = p.box[0]; /* the shortest box length, for the messages below */
    for (int a = 1; a < p.dim; a++)
        Lmin = fmin(Lmin, p.box[a]);
    if (p.rc > 0.5 * Lmin)
        return luaL_error(L, "%s: rc must be at most half the shortest box length, %f (got %f)",
                          where, 0.5 * Lmin, p.rc);
    if (p.delta > 0.25 * Lmin)
        return luaL_error(L, "%s: delta must be at most a quarter of the shortest box length, "
                             "%f (got %f)", where, 0.25 * Lmin, p.delta);
    /* the tether (checkerboard): lambda and the sites, set once the system stands */
    const double lambda = carlo_arg_num(L, 1, where, "lambda", 0, 0, 0, 1, LJ_LAMBDA_MAX, 1);
    if (p.mode != LJ_CHECKERBOARD && (lambda > 0 || carlo_arg_has(L, 1, "sites")))
        return luaL_error(L, "%s: %s: the tether runs in mode = \"checkerboard\" (this system "
                             "runs mode = \"decomposition\")", where, lambda > 0 ? "lambda" : "sites");
    const double *sites = NULL;
    if (carlo_arg_has(L, 1, "sites")) {
        lua_getfield(L, 1, "sites");
        sites = read_sites(L, -1, where, p.N, p.dim); /* stays on the stack */
    }
    lj_system *s = lj_create(&p);
    if (!s)
        return carlo_raise(L, where);
    if ((sites && lj_set_sites(s, sites)) || (lambda > 0 && lj_set_lambda(s, lambda))) {
        lj_destroy(s);
        return carlo_raise(L, where);
    }
    carlo_lua_push_system(L, &lj_lua_model, &s->sys);
    return 1;
}

/* sys:set_sites([sites]): the tether's sites (N x d, the snapshots' frame), the positions now
 * when none are given; translated so that particle 1 (index 0, the reference) is on its own. */
static int l_set_sites(lua_State *L)
{
    lj_system *s = check(L, 1);
    const double *x = NULL;
    if (!lua_isnoneornil(L, 2))
        x = read_sites(L, 2, "lj:set_sites", s->N, s->dim);
    if (lj_set_sites(s, x))
        return carlo_raise(L, "lj:set_sites");
    return 0;
}

/* ---------- steps ---------- */

/* sys:sweep(): one sweep (N trial moves, or one checkerboard sweep). */
static int l_sweep(lua_State *L)
{
    lj_system *s = check(L, 1);
    if (carlo_sys_alive(&s->sys) || s->algo->sweeps(s, 1))
        return carlo_raise(L, "lj:sweep");
    return 0;
}

/* sys:substep(set): the checkerboard's sub-sweep of set 0 .. 2^dim - 1. */
static int l_substep(lua_State *L)
{
    lj_system *s = check(L, 1);
    lua_Integer set = luaL_checkinteger(L, 2);
    if (set < 0 || set >= 1 << s->dim)
        return luaL_error(L, "lj:substep: the set must be from 0 to %d (got %I)", (1 << s->dim) - 1,
                          set);
    if (lj_substep(s, (int)set))
        return carlo_raise(L, "lj:substep");
    return 0;
}

/* sys:trial(n): n single trial moves (decomposition), Ctrl-C polled every 2^20. */
static int l_trial(lua_State *L)
{
    lj_system *s = check(L, 1);
    lua_Integer n = luaL_checkinteger(L, 2);
    if (n < 0 || n > ((lua_Integer)1 << 50))
        return luaL_error(L, "lj:trial: n must be an integer from 0 to 2^50 (got %I)", n);
    for (uint64_t done = 0; done < (uint64_t)n;) {
        uint64_t m = (uint64_t)n - done < ((uint64_t)1 << 20) ? (uint64_t)n - done : ((uint64_t)1 << 20);
        if (lj_trial_moves(s, m))
            return carlo_raise(L, "lj:trial");
        done += m;
        if (carlo_interrupted)
            return luaL_error(L, "lj:trial: interrupted");
    }
    return 0;
}

/* sys:tune{ sweeps = n, target = 0.5, quiet = } -> { delta =, acceptance =, target =, reached = } */
static int l_tune(lua_State *L)
{
    static const char *const keys[] = {"sweeps", "target", "quiet", NULL};
    const char *where = "lj:tune";
    lj_system *s = check(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    carlo_args_allowed(L, 2, where, keys);
    uint64_t sweeps = (uint64_t)carlo_arg_int(L, 2, where, "sweeps", 1, 0, 1, (int64_t)1 << 40);
    double target = carlo_arg_num(L, 2, where, "target", 0, 0.5, 0, 0, 1, 0);
    int quiet = carlo_arg_bool(L, 2, where, "quiet", s->quiet);
    uint64_t t0 = s->tried, a0 = s->accepted;
    int reached;
    if (lj_tune(s, sweeps, target, &reached))
        return carlo_raise(L, where);
    double acc = (double)(s->accepted - a0) / (double)(s->tried - t0);
    if (!reached && !quiet && !carlo_quiet)
        fprintf(stderr, "carlo: %s: the acceptance (%.3g) cannot reach the target %.3g: delta "
                "stopped at %s (%.6g)\n", where, acc, target,
                s->delta == lj_delta_max(s) ? "delta_max" : "its floor", s->delta);
    lua_createtable(L, 0, 4);
    carlo_lua_setnum(L, "delta", s->delta);
    carlo_lua_setnum(L, "acceptance", acc);
    carlo_lua_setnum(L, "target", target);
    lua_pushboolean(L, reached);
    lua_setfield(L, -2, "reached");
    return 1;
}

/* sys:launch([{ kernel = }]) -> the launch shapes now. Benchmarks only: the chain is the same
 * with every one. Decomposition on the GPU: kernel; the checkerboard's lanes follow its sum
 * order (a model choice, sum_order). */
static int l_launch(lua_State *L)
{
    static const char *const keys[] = {"kernel", "lanes", NULL};
    const char *where = "lj:launch";
    lj_system *s = check(L, 1);
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        carlo_args_allowed(L, 2, where, keys);
        if (carlo_arg_has(L, 2, "lanes"))
            return luaL_error(L, "%s: the checkerboard's lanes follow sum_order (\"near\": 32, "
                                 "\"cell\": 128), which changes the chain's rounding: choose it "
                                 "in carlo.lj{}", where);
        if (carlo_arg_has(L, 2, "kernel")) {
            int k = carlo_arg_enum(L, 2, where, "kernel", NULL, KERNELS);
            if (s->mode != LJ_DECOMPOSITION || s->device != CARLO_GPU)
                return luaL_error(L, "%s: kernel picks the GPU kernel of decomposition moves; this "
                                     "system runs %s on the %s", where, lj_mode_name(s->mode),
                                  carlo_device_name(s->device));
            LJ_DEC(s)->kernel = (lj_kernel_variant)k;
            s->tuner.fixed = 1; /* chosen by hand: the tuner leaves it */
        }
    }
    lua_createtable(L, 0, 2);
    if (s->mode == LJ_DECOMPOSITION) {
        lua_pushstring(L, s->device == CARLO_GPU ? lj_kernel_name(LJ_DEC(s)->kernel) : "cpu");
        lua_setfield(L, -2, "kernel");
    } else {
        carlo_lua_setint(L, "lanes", LJ_CB(s)->geom.lanes);
    }
    return 1;
}

/* ---------- measuring ---------- */

/* sys:recompute() -> { U_running =, U_fresh =, W_running =, W_fresh =, drift = } (totals,
 * not per particle; drift: the larger relative difference of energy and virial) */
static int l_recompute(lua_State *L)
{
    lj_system *s = check(L, 1);
    double run = s->U, wrun = s->W, fresh, wfresh;
    if (lj_recompute_w(s, &fresh, &wfresh))
        return carlo_raise(L, "lj:recompute");
    lua_createtable(L, 0, 5);
    carlo_lua_setnum(L, "U_running", run);
    carlo_lua_setnum(L, "U_fresh", fresh);
    carlo_lua_setnum(L, "W_running", wrun);
    carlo_lua_setnum(L, "W_fresh", wfresh);
    carlo_lua_setnum(L, "drift", s->drift);
    return 1;
}

/* sys:widom(n) -> { boltzmann =, mu_ex = } from n test particles now */
static int l_widom(lua_State *L)
{
    lj_system *s = check(L, 1);
    lua_Integer n = luaL_checkinteger(L, 2);
    if (n < 1 || n > (1 << 24))
        return luaL_error(L, "lj:widom: n must be an integer from 1 to %d (got %I)", 1 << 24, n);
    double w;
    if (lj_widom(s, (uint32_t)n, &w))
        return carlo_raise(L, "lj:widom");
    lua_createtable(L, 0, 2);
    carlo_lua_setnum(L, "boltzmann", w);
    carlo_lua_setnum(L, "mu_ex", -s->T * log(w));
    return 1;
}

static double shell_volume(int dim, double r0, double r1)
{
    const double pi = 3.14159265358979323846;
    return dim == 3 ? 4.0 / 3.0 * pi * (r1 * r1 * r1 - r0 * r0 * r0) : pi * (r1 * r1 - r0 * r0);
}

/* rdf = true | { bins = 100, rmax = half the shortest box length }, at idx: an accumulator
 * (a userdata, pushed) for the configurations to come. */
static lj_rdf_acc *push_rdf_acc(lua_State *L, int idx, const char *where, const lj_system *s)
{
    static const char *const keys[] = {"bins", "rmax", NULL};
    double half = 0.5 * lj_min_box(s);
    int bins = 100;
    double rmax = half;
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) == LUA_TTABLE) {
        carlo_args_allowed(L, idx, where, keys);
        bins = (int)carlo_arg_int(L, idx, where, "bins", 0, 100, 1, 1 << 20);
        rmax = carlo_arg_num(L, idx, where, "rmax", 0, half, 0, 0, half, 1);
    } else if (lua_type(L, idx) != LUA_TBOOLEAN) {
        luaL_error(L, "%s: rdf must be true or a table { bins =, rmax = } (got %s)", where,
                   luaL_typename(L, idx));
    }
    size_t head = (sizeof(lj_rdf_acc) + 15) & ~(size_t)15;
    size_t bytes = head + sizeof(uint64_t) * 2 * (size_t)bins + sizeof(double) * 3 * (size_t)s->N;
    char *u = (char *)lua_newuserdatauv(L, bytes, 0);
    lj_rdf_acc *a = (lj_rdf_acc *)u;
    a->bins = bins;
    a->rmax = rmax;
    a->frames = 0;
    a->count = (uint64_t *)(u + head);
    a->pos = (double *)(a->count + 2 * (size_t)bins);
    memset(a->count, 0, sizeof(uint64_t) * (size_t)bins);
    return a;
}

/* { r = array, g = array } of the accumulated configurations */
static void push_rdf(lua_State *L, const lj_system *s, const lj_rdf_acc *a)
{
    lua_createtable(L, 0, 2);
    carlo_array *r = carlo_array_push(L, CARLO_F64, a->bins, 0);
    lua_setfield(L, -2, "r");
    carlo_array *g = carlo_array_push(L, CARLO_F64, a->bins, 0);
    lua_setfield(L, -2, "g");
    double dr = a->rmax / a->bins, V = lj_volume(s), N = (double)s->N;
    for (int b = 0; b < a->bins; b++) {
        double r0 = b * dr, r1 = (b + 1) * dr;
        ((double *)r->data)[b] = 0.5 * (r0 + r1);
        double ideal = 0.5 * N * (N - 1.0) / V * shell_volume(s->dim, r0, r1);
        ((double *)g->data)[b] = (double)a->count[b] / (a->frames * ideal);
    }
}

/* sys:rdf{ bins =, rmax = } -> { r = array, g = array } of the configuration now */
static int l_rdf(lua_State *L)
{
    lj_system *s = check(L, 1);
    if (lua_isnoneornil(L, 2)) {
        lua_settop(L, 1);
        lua_pushboolean(L, 1);
    }
    lj_rdf_acc *a = push_rdf_acc(L, 2, "lj:rdf", s);
    if (lj_positions(s, a->pos) || lj_rdf_count(s, a->pos, a->rmax, a->bins, a->count))
        return carlo_raise(L, "lj:rdf");
    a->frames = 1.0;
    push_rdf(L, s, a);
    return 1;
}

/* ---------- the system layer's Lua face ---------- */

static void describe(lua_State *L, carlo_sys *c)
{
    lj_system *s = (lj_system *)c;
    if (s->mode == LJ_DECOMPOSITION)
        lua_pushfstring(L, "N = %I, rho = %f, T = %f, rc = %f, %dD, decomposition over %s",
                        (lua_Integer)s->N, lj_density(s), s->T, s->rc, s->dim,
                        lj_sum_name(LJ_DEC(s)->sum));
    else
        lua_pushfstring(L, "N = %I, rho = %f, T = %f, rc = %f, %dD, checkerboard, sum order %s%s",
                        (lua_Integer)s->N, lj_density(s), s->T, s->rc, s->dim,
                        lj_cb_order_name(LJ_CB(s)), LJ_CB(s)->lambda > 0 ? ", tethered" : "");
}

static void push_lengths(lua_State *L, const lj_system *s)
{
    lua_createtable(L, s->dim, 0);
    for (int a = 0; a < s->dim; a++) {
        lua_pushnumber(L, s->g.L[a]);
        lua_rawseti(L, -2, a + 1);
    }
}

/* The checkerboard's fields (nil in decomposition mode). */
static int index_cb(lua_State *L, lj_system *s, const char *k)
{
    lj_cb_system *cb = s->mode == LJ_CHECKERBOARD ? LJ_CB(s) : NULL;
    if (strcmp(k, "sum_order") == 0)
        cb ? (void)lua_pushstring(L, lj_cb_order_name(cb)) : lua_pushnil(L);
    else if (strcmp(k, "passes") == 0)
        cb ? lua_pushinteger(L, cb->passes) : lua_pushnil(L);
    else if (strcmp(k, "sites") == 0) { /* N x d, the snapshots' frame; nil when none are set */
        if (!cb || !cb->sites) {
            lua_pushnil(L);
            return 1;
        }
        carlo_array *a = carlo_array_push(L, CARLO_F64, cb->N, cb->dim);
        lj_cb_sites_out(cb, (double *)a->data);
    }
    else if (strcmp(k, "nmax") == 0)
        cb ? lua_pushinteger(L, cb->grid.nmax) : lua_pushnil(L);
    else if (strcmp(k, "set_order") == 0 || strcmp(k, "sets_done") == 0) {
        if (!cb) {
            lua_pushnil(L);
            return 1;
        }
        int order[8], n = 1 << cb->dim, m = 0;
        lj_cb_set_order(cb, order);
        lua_createtable(L, n, 0);
        for (int q = 0; q < n; q++)
            if (k[4] == 'o' || (cb->sets_done >> order[q] & 1)) {
                lua_pushinteger(L, order[q]);
                lua_rawseti(L, -2, ++m);
            }
    } else if (strcmp(k, "lanes") == 0) {
        carlo_lua_renamed("lj", "lanes", "sum_order");
        cb ? lua_pushinteger(L, cb->geom.lanes) : lua_pushnil(L);
    } else
        return 0;
    return 1;
}

/* The decomposition's fields (nil in checkerboard mode). */
static int index_dec(lua_State *L, lj_system *s, const char *k)
{
    lj_dec_system *d = s->mode == LJ_DECOMPOSITION ? LJ_DEC(s) : NULL;
    if (strcmp(k, "energy_sum") == 0)
        d ? (void)lua_pushstring(L, lj_sum_name(d->sum)) : lua_pushnil(L);
    else if (strcmp(k, "cell_capacity") == 0)
        d ? lua_pushinteger(L, d->cell_cap) : lua_pushnil(L);
    else if (strcmp(k, "kernel") == 0) {
        carlo_lua_renamed("lj", "kernel", "launch().kernel");
        d ? (void)lua_pushstring(L, lj_kernel_name(d->kernel)) : lua_pushnil(L);
    } else
        return 0;
    return 1;
}

static int index_field(lua_State *L, carlo_sys *c, const char *k)
{
    lj_system *s = (lj_system *)c;
    if (index_cb(L, s, k) || index_dec(L, s, k))
        return 1;
    if (strcmp(k, "N") == 0)
        lua_pushinteger(L, s->N);
    else if (strcmp(k, "dim") == 0)
        lua_pushinteger(L, s->dim);
    else if (strcmp(k, "rho") == 0)
        lua_pushnumber(L, lj_density(s));
    else if (strcmp(k, "volume") == 0)
        lua_pushnumber(L, lj_volume(s));
    else if (strcmp(k, "box") == 0)
        push_lengths(L, s);
    else if (strcmp(k, "rc") == 0)
        lua_pushnumber(L, s->rc);
    else if (strcmp(k, "shift") == 0)
        lua_pushboolean(L, s->shift);
    else if (strcmp(k, "tail") == 0)
        lua_pushboolean(L, s->tail);
    else if (strcmp(k, "mode") == 0)
        lua_pushstring(L, lj_mode_name(s->mode));
    else if (strcmp(k, "delta") == 0)
        lua_pushnumber(L, s->delta);
    else if (strcmp(k, "delta_max") == 0)
        lua_pushnumber(L, lj_delta_max(s));
    else if (strcmp(k, "tried") == 0)
        lua_pushinteger(L, (lua_Integer)s->tried);
    else if (strcmp(k, "accepted") == 0)
        lua_pushinteger(L, (lua_Integer)s->accepted);
    else if (strcmp(k, "acceptance") == 0)
        lua_pushnumber(L, s->tried ? (double)s->accepted / (double)s->tried : 0.0);
    else if (strcmp(k, "drift") == 0)
        lua_pushnumber(L, s->drift);
    else if (strcmp(k, "drift_max") == 0)
        lua_pushnumber(L, s->drift_max);
    else if (strcmp(k, "checks") == 0)
        lua_pushinteger(L, (lua_Integer)s->checks);
    else if (strcmp(k, "tail_energy") == 0)
        lua_pushnumber(L, lj_tail_energy(s));
    else if (strcmp(k, "tail_pressure") == 0)
        lua_pushnumber(L, lj_tail_pressure(s));
    else if (strcmp(k, "cells") == 0) {
        lua_createtable(L, s->dim, 0);
        for (int a = 0; a < s->dim; a++) {
            lua_pushinteger(L, s->mode == LJ_CHECKERBOARD ? LJ_CB(s)->grid.m[a] : s->g.n[a]);
            lua_rawseti(L, -2, a + 1);
        }
    } else if (strcmp(k, "U") == 0 || strcmp(k, "P") == 0 || strcmp(k, "W") == 0) {
        lj_obs o;
        if (lj_observe(s, &o))
            carlo_raise(L, "lj");
        lua_pushnumber(L, k[0] == 'U' ? o.U : k[0] == 'P' ? o.P : o.W);
    } else
        return 0;
    return 1;
}

/* sys.delta = d: the maximum displacement, in (0, delta_max]. */
static int newindex(lua_State *L, carlo_sys *c, const char *k, int value)
{
    lj_system *s = (lj_system *)c;
    if (strcmp(k, "kernel") == 0)
        return luaL_error(L, "lj: kernel is a launch detail: sys:launch{ kernel = ... } (benchmarks "
                             "only; it never changes the chain)");
    if (strcmp(k, "delta") != 0)
        return 0;
    int isnum;
    double v = lua_tonumberx(L, value, &isnum);
    if (!isnum)
        return luaL_error(L, "lj: delta must be a number in (0, %f] (got %s)", lj_delta_max(s),
                          luaL_typename(L, value));
    if (lj_set_delta(s, v))
        carlo_raise(L, "lj");
    return 1;
}

/* { position = f64 N x d in [-L/2, L/2), box = the six GSD numbers, step =, N = } */
static void snapshot(lua_State *L, carlo_sys *c, int k)
{
    (void)k;
    lj_system *s = (lj_system *)c;
    lua_createtable(L, 0, 4);
    carlo_array *a = carlo_array_push(L, CARLO_F64, s->N, s->dim);
    double *pos = (double *)lua_newuserdatauv(L, sizeof(double) * 3 * s->N, 0);
    if (lj_positions(s, pos))
        carlo_raise(L, "lj:snapshot");
    double *out = (double *)a->data;
    for (uint32_t i = 0; i < s->N; i++)
        for (int d = 0; d < s->dim; d++)
            out[(size_t)s->dim * i + d] = pos[3 * (size_t)i + d] - s->g.half[d];
    lua_pop(L, 1);
    lua_setfield(L, -2, "position");
    lua_createtable(L, 6, 0);
    for (int d = 0; d < 6; d++) {
        lua_pushnumber(L, d < s->dim ? s->g.L[d] : 0.0);
        lua_rawseti(L, -2, d + 1);
    }
    lua_setfield(L, -2, "box");
    carlo_lua_setint(L, "step", (long long)s->step);
    carlo_lua_setint(L, "N", s->N);
}

static const char *const run_keys[] = {"check_every", NULL};
static const char *const refused[] = {
    "moves", "moves = n is sys:trial(n) now (n single trial moves); run and sample count sweeps",
    NULL};

/* check_every = sweeps between energy recomputations (0: never). */
static void run_args(lua_State *L, int args, carlo_sys *c, carlo_run_opts *o, const char *where)
{
    (void)c;
    o->hook[0].every = (uint64_t)carlo_arg_int(L, args, where, "check_every", 0, CHECK_EVERY_DEFAULT,
                                               0, (int64_t)1 << 40);
    o->hook[0].fn = o->hook[0].every ? lj_check_hook : NULL;
}

static const char *const observe_keys[] = {"widom", "rdf", NULL};

/* widom = n insertions per observation; rdf = true | { bins =, rmax = } */
static void observe_args(lua_State *L, int args, carlo_sys *c, void *opt, const char *where)
{
    lj_observe_opt *o = (lj_observe_opt *)opt;
    o->widom = (uint32_t)carlo_arg_int(L, args, where, "widom", 0, 0, 0, 1 << 24);
    int t = lua_getfield(L, args, "rdf");
    if (t == LUA_TNIL || (t == LUA_TBOOLEAN && !lua_toboolean(L, -1))) {
        lua_pop(L, 1);
        return;
    }
    o->rdf = push_rdf_acc(L, -1, where, (lj_system *)c); /* stays on the stack for the call */
    lua_remove(L, -2);
}

static void sample_extra(lua_State *L, carlo_sys *c, int k, const void *opt)
{
    (void)k;
    lj_system *s = (lj_system *)c;
    const lj_observe_opt *o = (const lj_observe_opt *)opt;
    carlo_lua_setnum(L, "T", s->T);
    carlo_lua_setnum(L, "rho", lj_density(s));
    carlo_lua_setnum(L, "delta", s->delta);
    carlo_lua_setnum(L, "drift", s->drift);
    carlo_lua_setnum(L, "drift_max", s->drift_max);
    if (o && o->rdf && o->rdf->frames > 0) {
        push_rdf(L, s, o->rdf);
        lua_setfield(L, -2, "rdf");
    }
}

/* observe's extras: the virial sum and the move counters since creation. */
static void observe_extra(lua_State *L, carlo_sys *c, int k, const double *v)
{
    (void)k;
    (void)v;
    lj_system *s = (lj_system *)c;
    carlo_lua_setnum(L, "W", s->W);
    carlo_lua_setnum(L, "acceptance", s->tried ? (double)s->accepted / (double)s->tried : 0.0);
    carlo_lua_setint(L, "tried", (long long)s->tried);
    carlo_lua_setint(L, "accepted", (long long)s->accepted);
}

/* Seconds kept in hand for the checkpoint of a walltime-limited run. */
static double reserve(const carlo_sys *c)
{
    return 0.5 + (double)((const lj_system *)c)->N * 48.0 / 1e8;
}

static const luaL_Reg methods[] = {
    {"sweep", l_sweep}, {"substep", l_substep}, {"trial", l_trial}, {"tune", l_tune},
    {"recompute", l_recompute}, {"widom", l_widom}, {"rdf", l_rdf}, {"launch", l_launch},
    {"set_sites", l_set_sites}, {NULL, NULL}};

static const char *const aliases[] = {"moves", "tried", NULL};
static const char *const settable[] = {"delta", NULL};

const carlo_lua_model lj_lua_model = {
    .ops = &lj_ops,
    .metatable = "carlo.lj",
    .methods = methods,
    .index = index_field,
    .describe = describe,
    .snapshot = snapshot,
    .run_keys = run_keys,
    .run_args = run_args,
    .observe_keys = observe_keys,
    .opt_size = sizeof(lj_observe_opt),
    .observe_args = observe_args,
    .sample_extra = sample_extra,
    .observe_extra = observe_extra,
    .reserve = reserve,
    .aliases = aliases,
    .newindex = newindex,
    .settable = settable,
    .refused = refused,
};

void lj_lua_open(lua_State *L)
{
    carlo_lua_model_register(L, &lj_lua_model);
    lua_pushcfunction(L, l_lj);
    lua_setfield(L, -2, "lj");
}
