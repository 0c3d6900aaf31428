/* lj_lua.c — the Lua binding of the Lennard-Jones model: carlo.lj{...}, the userdata
 * "carlo.lj" with its methods and properties. Arguments are checked here; the work goes
 * through lj.h (and from there the backend table) only. */
#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"
#include "core/array.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/stats.h"
#include "core/system.h"
#include "lj/lj.h"
#include "lj/lj_lua.h"
#include "traj/checkpoint.h"
#include "traj/traj_lua.h"

#define LJ_MT "carlo.lj"

typedef struct lj_ud {
    lj_system *s;
} lj_ud;

static const char *const MODES[] = {"decomposition", "checkerboard", NULL};
static const char *const SUMS[] = {"all", "cells", "auto", NULL};
static const char *const INITS[] = {"fcc", "random", NULL};
static const char *const DEVICES[] = {"auto", "cpu", "gpu", NULL};
static const char *const KERNELS[] = {"persistent", "launch", "graph", NULL};

static lj_system *check(lua_State *L, int idx)
{
    lj_ud *u = (lj_ud *)luaL_checkudata(L, idx, LJ_MT);
    if (!u->s)
        luaL_error(L, "carlo.lj: this system was closed");
    return u->s;
}

static void push_system(lua_State *L, lj_system *s)
{
    lj_ud *u = (lj_ud *)lua_newuserdatauv(L, sizeof *u, 0);
    u->s = s;
    luaL_setmetatable(L, LJ_MT);
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
                luaL_error(L, "%s: %s: tilted boxes are not supported (xy = xz = yz = 0 required)",
                           where, key);
            n = v6[2] == 0 ? 2 : 3;
        }
        for (int a = 0; a < n; a++)
            if (!(v6[a] > 0))
                luaL_error(L, "%s: %s[%d] must be a number > 0 (got %g)", where, key, a + 1, v6[a]);
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

static int l_lj(lua_State *L)
{
    const char *where = "carlo.lj";
    static const char *const keys[] = {"N", "rho", "box", "dim", "T", "rc", "shift", "tail",
                                       "seed", "init", "mode", "device", "delta", "energy_sum",
                                       "lanes", "passes", NULL};
    luaL_checktype(L, 1, LUA_TTABLE);
    carlo_args_allowed(L, 1, where, keys);
    lj_params p;
    memset(&p, 0, sizeof p);

    /* the starting configuration decides where N and the box come from */
    int t = lua_getfield(L, 1, "init");
    int snapshot = t == LUA_TTABLE;
    lua_pop(L, 1);
    int dim = 0;
    double *positions = NULL;
    uint64_t snap_step = 0;
    if (snapshot) {
        if (carlo_arg_has(L, 1, "rho") || carlo_arg_has(L, 1, "box"))
            return luaL_error(L, "%s: %s: the box comes from the snapshot given as init", where,
                              carlo_arg_has(L, 1, "rho") ? "rho" : "box");
        lua_getfield(L, 1, "init");
        int snap = lua_gettop(L);
        if (lua_getfield(L, snap, "position") == LUA_TNIL)
            return luaL_error(L, "%s: init: a snapshot needs position (an N x 3 carlo.array)", where);
        carlo_array *a = carlo_array_test(L, -1);
        if (!a || a->ndim != 2 || (a->shape[1] != 3 && a->shape[1] != 2) ||
            (a->type != CARLO_F64 && a->type != CARLO_F32))
            return luaL_error(L, "%s: init.position must be an N x 3 (or N x 2) f64 or f32 "
                                 "carlo.array", where);
        if (a->shape[0] < 2 || a->shape[0] > LJ_N_MAX)
            return luaL_error(L, "%s: init.position must hold 2 to %d particles (got %I)", where,
                              LJ_N_MAX, (lua_Integer)a->shape[0]);
        p.N = (uint32_t)a->shape[0];
        positions = (double *)lua_newuserdatauv(L, sizeof(double) * 3 * p.N, 0);
        int cols = (int)a->shape[1];
        for (uint32_t i = 0; i < p.N; i++)
            for (int c = 0; c < 3; c++) {
                double v = c < cols ? carlo_array_get(a, (size_t)i * cols + c) : 0.0;
                if (!isfinite(v))
                    return luaL_error(L, "%s: init.position[%d][%d] is not finite", where, i + 1, c + 1);
                positions[3 * i + c] = v;
            }
        dim = read_box(L, snap, where, "box", p.box); /* the arrays stay on the stack */
        if (dim == 0)
            return luaL_error(L, "%s: init.box must list the 2 or 3 box lengths (or six GSD "
                                 "numbers)", where);
        if (lua_getfield(L, snap, "dimensions") != LUA_TNIL && lua_tointeger(L, -1) != dim)
            return luaL_error(L, "%s: init.dimensions does not match init.box", where);
        lua_pop(L, 1);
        if (cols == 2 && dim == 3)
            return luaL_error(L, "%s: init.position has 2 columns but init.box 3 lengths", where);
        if (lua_getfield(L, snap, "step") != LUA_TNIL) {
            int isint;
            lua_Integer st = lua_tointegerx(L, -1, &isint);
            if (!isint || st < 0)
                return luaL_error(L, "%s: init.step must be an integer >= 0", where);
            snap_step = (uint64_t)st;
        }
        lua_pop(L, 1);
        if (carlo_arg_has(L, 1, "N") &&
            carlo_arg_int(L, 1, where, "N", 1, 0, 2, LJ_N_MAX) != (int64_t)p.N)
            return luaL_error(L, "%s: N must match the snapshot's %u particles", where, p.N);
        p.init = LJ_INIT_POSITIONS;
        p.positions = positions;
    } else {
        p.init = (lj_init)carlo_arg_enum(L, 1, where, "init", "fcc", INITS);
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
    p.T = carlo_arg_num(L, 1, where, "T", 1, 0, 0, 0, INFINITY, 0);
    p.rc = carlo_arg_num(L, 1, where, "rc", 0, 2.5, 0, 0, INFINITY, 0);
    p.shift = carlo_arg_bool(L, 1, where, "shift", 0);
    p.tail = carlo_arg_bool(L, 1, where, "tail", !p.shift);
    p.delta = carlo_arg_num(L, 1, where, "delta", 0, 0.1, 0, 0, INFINITY, 0);
    p.mode = (lj_mode)carlo_arg_enum(L, 1, where, "mode", "decomposition", MODES);
    int sum = carlo_arg_enum(L, 1, where, "energy_sum", "auto", SUMS);
    p.sum = sum == 2 ? -1 : sum;
    if (p.mode == LJ_CHECKERBOARD && carlo_arg_has(L, 1, "energy_sum"))
        return luaL_error(L, "%s: energy_sum belongs to mode = \"decomposition\"", where);
    for (int k = 0; k < 2; k++) {
        const char *key = k ? "passes" : "lanes";
        if (p.mode != LJ_CHECKERBOARD && carlo_arg_has(L, 1, key))
            return luaL_error(L, "%s: %s belongs to mode = \"checkerboard\"", where, key);
    }
    p.lanes = (int)carlo_arg_int(L, 1, where, "lanes", 0, 0, 32, 128);
    if (p.lanes && p.lanes != 32 && p.lanes != 64 && p.lanes != 128)
        return luaL_error(L, "%s: lanes must be 32, 64 or 128 (got %d)", where, p.lanes);
    p.passes = (int)carlo_arg_int(L, 1, where, "passes", 0, 1, 1, 1000);
    p.seed = carlo_arg_seed(L, 1, where);
    carlo_arg_enum(L, 1, where, "device", carlo_device_default(), DEVICES);
    p.device = carlo_lua_device(L, where, carlo_arg_str(L, 1, where, "device", 0));
    /* the shortest box length, for the messages below */
    double Lmin = p.box[0];
    for (int a = 1; a < p.dim; a++)
        Lmin = fmin(Lmin, p.box[a]);
    if (p.rc > 0.5 * Lmin)
        return luaL_error(L, "%s: rc must be at most half the shortest box length, %f (got %f)",
                          where, 0.5 * Lmin, p.rc);
    if (p.delta > 0.25 * Lmin)
        return luaL_error(L, "%s: delta must be at most a quarter of the shortest box length, "
                             "%f (got %f)", where, 0.25 * Lmin, p.delta);
    lj_system *s = lj_create(&p);
    if (!s)
        return carlo_raise(L, where);
    /* a snapshot's step carries on (trajectories continue their numbering) */
    s->step = snap_step;
    if (s->mode == LJ_DECOMPOSITION)
        s->moves = snap_step * s->N;
    push_system(L, s);
    return 1;
}

/* ---------- running ---------- */

#define CHECK_EVERY_DEFAULT 1000

static int write_frame(void *ctx, lj_system *s)
{
    (void)s;
    return traj_sink_write((traj_sink *)ctx);
}

/* sys:run{ sweeps = n | moves = n, check_every =, walltime =, checkpoint =, every =,
 *          trajectory =, quiet = } */
static int l_run(lua_State *L)
{
    static const char *const keys[] = {"sweeps", "moves", "check_every", "walltime", "checkpoint",
                                       "every", "trajectory", "quiet", NULL};
    const char *where = "lj:run";
    lj_system *s = check(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    carlo_args_allowed(L, 2, where, keys);
    int has_sweeps = carlo_arg_has(L, 2, "sweeps"), has_moves = carlo_arg_has(L, 2, "moves");
    if (has_sweeps == has_moves)
        return luaL_error(L, "%s: give exactly one of sweeps (N trial moves each) and moves", where);
    lj_run_opts o = {0};
    o.quiet = carlo_arg_bool(L, 2, where, "quiet", 0);
    o.check_every = (uint64_t)carlo_arg_int(L, 2, where, "check_every", 0, CHECK_EVERY_DEFAULT, 0,
                                            (int64_t)1 << 40);
    o.walltime = carlo_arg_num(L, 2, where, "walltime", 0, 0, 0, 0, INFINITY, 0);
    const char *ckpt = carlo_arg_str(L, 2, where, "checkpoint", 0);
    if (ckpt && o.walltime <= 0)
        return luaL_error(L, "%s: checkpoint goes with walltime (use sys:save(path) otherwise)", where);
    if (has_moves) {
        if (s->mode == LJ_CHECKERBOARD)
            return luaL_error(L, "%s: moves = is for mode = \"decomposition\"; the checkerboard "
                                 "runs sweeps", where);
        if (o.walltime > 0)
            return luaL_error(L, "%s: walltime goes with sweeps", where);
        if (carlo_arg_has(L, 2, "every") || carlo_arg_has(L, 2, "trajectory"))
            return luaL_error(L, "%s: every and trajectory go with sweeps", where);
        uint64_t n = (uint64_t)carlo_arg_int(L, 2, where, "moves", 1, 0, 0, (int64_t)1 << 50);
        double t0 = carlo_now();
        for (uint64_t done = 0; done < n;) {
            uint64_t m = n - done < ((uint64_t)1 << 20) ? n - done : ((uint64_t)1 << 20);
            if (lj_moves(s, m))
                return carlo_raise(L, where);
            done += m;
            if (carlo_interrupted)
                return luaL_error(L, "%s: interrupted", where);
        }
        lua_createtable(L, 0, 4);
        lua_pushinteger(L, (lua_Integer)n);
        lua_setfield(L, -2, "moves");
        lua_pushinteger(L, (lua_Integer)s->step);
        lua_setfield(L, -2, "step");
        lua_pushnumber(L, carlo_now() - t0);
        lua_setfield(L, -2, "seconds");
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, "completed");
        return 1;
    }
    o.sweeps = (uint64_t)carlo_arg_int(L, 2, where, "sweeps", 1, 0, 0, (int64_t)1 << 47);
    if (o.walltime > 0 && ckpt)
        o.reserve = 0.5 + (double)s->N * 48.0 / 1e8;
    traj_sink sink; /* a frame every `every` sweeps, written from C */
    o.every = traj_lua_sink(L, 2, 1, where, s->step, &sink);
    if (sink.tr) {
        o.callback = write_frame;
        o.ctx = &sink;
    }
    lj_run_result res;
    if (lj_run_ex(s, &o, &res))
        return carlo_raise(L, where);
    if (res.stopped_early)
        traj_lua_stopped_early(L, 1, where, s->step, res.sweeps, o.sweeps, o.walltime, ckpt,
                               o.quiet);
    lua_createtable(L, 0, 5);
    lua_pushinteger(L, (lua_Integer)res.sweeps);
    lua_setfield(L, -2, "sweeps");
    lua_pushinteger(L, (lua_Integer)(res.sweeps * s->N));
    lua_setfield(L, -2, "moves");
    lua_pushinteger(L, (lua_Integer)s->step);
    lua_setfield(L, -2, "step");
    lua_pushboolean(L, !res.stopped_early);
    lua_setfield(L, -2, "completed");
    lua_pushnumber(L, res.seconds);
    lua_setfield(L, -2, "seconds");
    return 1;
}

/* sys:tune{ sweeps = n, target = 0.5 } -> { delta =, acceptance = } (equilibration only) */
static int l_tune(lua_State *L)
{
    static const char *const keys[] = {"sweeps", "target", NULL};
    const char *where = "lj:tune";
    lj_system *s = check(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    carlo_args_allowed(L, 2, where, keys);
    uint64_t sweeps = (uint64_t)carlo_arg_int(L, 2, where, "sweeps", 1, 0, 1, (int64_t)1 << 40);
    double target = carlo_arg_num(L, 2, where, "target", 0, 0.5, 0, 0, 1, 0);
    uint64_t t0 = s->tried, a0 = s->accepted;
    if (lj_tune(s, sweeps, target))
        return carlo_raise(L, where);
    lua_createtable(L, 0, 2);
    lua_pushnumber(L, s->delta);
    lua_setfield(L, -2, "delta");
    lua_pushnumber(L, (double)(s->accepted - a0) / (double)(s->tried - t0));
    lua_setfield(L, -2, "acceptance");
    return 1;
}

static int l_sync(lua_State *L)
{
    lj_system *s = check(L, 1);
    if (s->be->sync(s))
        return carlo_raise(L, "lj:sync");
    return 0;
}

/* ---------- observing ---------- */

static void setnum(lua_State *L, const char *k, double v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

static void setint(lua_State *L, const char *k, uint64_t v)
{
    lua_pushinteger(L, (lua_Integer)v);
    lua_setfield(L, -2, k);
}

/* sys:observe() -> { U =, P =, W =, acceptance =, step =, moves =, delta =, drift = } */
static int l_observe(lua_State *L)
{
    lj_system *s = check(L, 1);
    lj_obs o;
    if (lj_observe(s, &o))
        return carlo_raise(L, "lj:observe");
    lua_createtable(L, 0, 8);
    setnum(L, "U", o.U);
    setnum(L, "P", o.P);
    setnum(L, "W", o.W);
    setnum(L, "acceptance", o.acceptance);
    setint(L, "step", s->step);
    setint(L, "moves", s->moves);
    setnum(L, "delta", s->delta);
    setnum(L, "drift", s->drift);
    return 1;
}

/* sys:recompute() -> { U_running =, U_fresh =, W_running =, W_fresh =, drift = } (totals,
 * not per particle; drift: the larger relative difference of energy and virial) */
static int l_recompute(lua_State *L)
{
    lj_system *s = check(L, 1);
    double run = s->U, wrun = s->W, fresh, wfresh;
    if (lj_recompute_w(s, &fresh, &wfresh))
        return carlo_raise(L, "lj:recompute");
    lua_createtable(L, 0, 5);
    setnum(L, "U_running", run);
    setnum(L, "U_fresh", fresh);
    setnum(L, "W_running", wrun);
    setnum(L, "W_fresh", wfresh);
    setnum(L, "drift", s->drift);
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
    setnum(L, "boltzmann", w);
    setnum(L, "mu_ex", -s->T * log(w));
    return 1;
}

static void push_estimate(lua_State *L, const char *name, double mean, double err, double tau,
                          int plateau)
{
    lua_createtable(L, 0, 4);
    setnum(L, "mean", mean);
    setnum(L, "err", err);
    setnum(L, "tau", tau);
    lua_pushboolean(L, plateau);
    lua_setfield(L, -2, "plateau");
    lua_setfield(L, -2, name);
}

static double shell_volume(int dim, double r0, double r1)
{
    const double pi = 3.14159265358979323846;
    return dim == 3 ? 4.0 / 3.0 * pi * (r1 * r1 * r1 - r0 * r0 * r0) : pi * (r1 * r1 - r0 * r0);
}

/* rdf = true | { bins = 100, rmax = half the shortest box length } */
static void read_rdf(lua_State *L, int idx, const char *where, const lj_system *s, int *bins,
                     double *rmax)
{
    static const char *const keys[] = {"bins", "rmax", NULL};
    double half = s->g.half[0];
    for (int a = 1; a < s->dim; a++)
        half = fmin(half, s->g.half[a]);
    *bins = 100;
    *rmax = half;
    if (lua_type(L, idx) == LUA_TBOOLEAN)
        return;
    if (lua_type(L, idx) != LUA_TTABLE)
        luaL_error(L, "%s: rdf must be true or a table { bins =, rmax = }", where);
    carlo_args_allowed(L, idx, where, keys);
    *bins = (int)carlo_arg_int(L, idx, where, "bins", 0, 100, 1, 1 << 20);
    *rmax = carlo_arg_num(L, idx, where, "rmax", 0, half, 0, 0, half, 1);
}

static void push_rdf(lua_State *L, const lj_system *s, const uint64_t *count, int bins,
                     double rmax, double frames)
{
    lua_createtable(L, 0, 2);
    carlo_array *r = carlo_array_push(L, CARLO_F64, bins, 0);
    lua_setfield(L, -2, "r");
    carlo_array *g = carlo_array_push(L, CARLO_F64, bins, 0);
    lua_setfield(L, -2, "g");
    double dr = rmax / bins, V = lj_volume(s), N = (double)s->N;
    for (int b = 0; b < bins; b++) {
        double r0 = b * dr, r1 = (b + 1) * dr;
        ((double *)r->data)[b] = 0.5 * (r0 + r1);
        double ideal = 0.5 * N * (N - 1.0) / V * shell_volume(s->dim, r0, r1);
        ((double *)g->data)[b] = (double)count[b] / (frames * ideal);
    }
}

static int rdf_accumulate(lj_system *s, double *pos, int bins, double rmax, uint64_t *acc,
                          uint64_t *tmp)
{
    if (lj_positions(s, pos) || lj_rdf_count(s, pos, rmax, bins, tmp))
        return -1;
    for (int b = 0; b < bins; b++)
        acc[b] += tmp[b];
    return 0;
}

/* sys:rdf{ bins =, rmax = } -> { r = array, g = array } of the configuration now */
static int l_rdf(lua_State *L)
{
    lj_system *s = check(L, 1);
    int bins;
    double rmax;
    if (lua_isnoneornil(L, 2))
        lua_pushboolean(L, 1);
    read_rdf(L, 2, "lj:rdf", s, &bins, &rmax);
    double *pos = (double *)lua_newuserdatauv(L, sizeof(double) * 3 * s->N, 0);
    uint64_t *count = (uint64_t *)lua_newuserdatauv(L, sizeof(uint64_t) * (size_t)bins * 2, 0);
    memset(count, 0, sizeof(uint64_t) * (size_t)bins);
    if (rdf_accumulate(s, pos, bins, rmax, count, count + bins))
        return carlo_raise(L, "lj:rdf");
    push_rdf(L, s, count, bins, rmax, 1.0);
    return 1;
}

/* sys:sample{ sweeps =, every =, widom = n, rdf = true | {bins =, rmax =}, check_every =,
 *             series = false, quiet = } -> { U =, P =, mu_ex =, acceptance =, rdf =, ... } */
static int l_sample(lua_State *L)
{
    static const char *const keys[] = {"sweeps", "every", "widom", "rdf", "check_every", "series",
                                       "quiet", NULL};
    const char *where = "lj:sample";
    lj_system *s = check(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    carlo_args_allowed(L, 2, where, keys);
    uint64_t every = (uint64_t)carlo_arg_int(L, 2, where, "every", 0, 1, 1, (int64_t)1 << 40);
    uint64_t sweeps = (uint64_t)carlo_arg_int(L, 2, where, "sweeps", 1, 0, 1, (int64_t)1 << 47);
    if (sweeps % every || sweeps / every < 2)
        return luaL_error(L, "%s: sweeps must be a multiple of every giving at least 2 samples "
                             "(got sweeps = %I, every = %I)", where, (lua_Integer)sweeps,
                          (lua_Integer)every);
    size_t n = (size_t)(sweeps / every);
    int widom = (int)carlo_arg_int(L, 2, where, "widom", 0, 0, 0, 1 << 24);
    int want_series = carlo_arg_bool(L, 2, where, "series", 0);
    int quiet = carlo_arg_bool(L, 2, where, "quiet", 0);
    int bins = 0;
    double rmax = 0;
    if (lua_getfield(L, 2, "rdf") != LUA_TNIL && !(lua_isboolean(L, -1) && !lua_toboolean(L, -1)))
        read_rdf(L, lua_gettop(L), where, s, &bins, &rmax);
    lua_pop(L, 1);
    lj_run_opts o = {0};
    o.sweeps = every;
    o.quiet = 1;
    o.check_every = (uint64_t)carlo_arg_int(L, 2, where, "check_every", 0, CHECK_EVERY_DEFAULT, 0,
                                            (int64_t)1 << 40);
    double *buf = (double *)lua_newuserdatauv(L, carlo_mulsize(n * 3, sizeof(double)), 0);
    double *ser_U = buf, *ser_P = buf + n, *ser_w = buf + 2 * n;
    double *pos = NULL;
    uint64_t *count = NULL;
    if (bins) {
        pos = (double *)lua_newuserdatauv(L, sizeof(double) * 3 * s->N, 0);
        count = (uint64_t *)lua_newuserdatauv(L, sizeof(uint64_t) * 2 * (size_t)bins, 0);
        memset(count, 0, sizeof(uint64_t) * (size_t)bins);
    }
    uint64_t t0 = s->tried, a0 = s->accepted;
    carlo_progress pr;
    carlo_progress_start(&pr, "lj sample", "sweeps", (double)sweeps, quiet);
    for (size_t j = 0; j < n; j++) {
        lj_run_result res;
        lj_obs ob;
        if (lj_run_ex(s, &o, &res) || lj_observe(s, &ob) ||
            (widom && lj_widom(s, (uint32_t)widom, &ser_w[j])) ||
            (bins && rdf_accumulate(s, pos, bins, rmax, count, count + bins))) {
            carlo_progress_end(&pr);
            return carlo_raise(L, where);
        }
        ser_U[j] = ob.U;
        ser_P[j] = ob.P;
        carlo_progress_update(&pr, (double)((j + 1) * every));
    }
    carlo_progress_end(&pr);
    lua_createtable(L, 0, 10);
    setint(L, "samples", n);
    setnum(L, "T", s->T);
    setnum(L, "rho", lj_density(s));
    setnum(L, "acceptance", (double)(s->accepted - a0) / (double)(s->tried - t0));
    setnum(L, "delta", s->delta);
    setnum(L, "drift", s->drift_max);
    carlo_estimate e;
    carlo_blocking(ser_U, n, &e);
    push_estimate(L, "U", e.mean, e.err, e.tau * (double)every, e.plateau);
    carlo_blocking(ser_P, n, &e);
    push_estimate(L, "P", e.mean, e.err, e.tau * (double)every, e.plateau);
    if (widom) {
        carlo_blocking(ser_w, n, &e);
        push_estimate(L, "boltzmann", e.mean, e.err, e.tau * (double)every, e.plateau);
        /* mu_ex = -T ln <exp(-beta dU)>, its error from the mean's by the delta method */
        push_estimate(L, "mu_ex", -s->T * log(e.mean), s->T * e.err / e.mean,
                      e.tau * (double)every, e.plateau);
    }
    if (bins) {
        push_rdf(L, s, count, bins, rmax, (double)n);
        lua_setfield(L, -2, "rdf");
    }
    if (want_series) {
        lua_createtable(L, 0, 3);
        const char *names[3] = {"U", "P", "boltzmann"};
        for (int q = 0; q < (widom ? 3 : 2); q++) {
            carlo_array *a = carlo_array_push(L, CARLO_F64, (int64_t)n, 0);
            memcpy(a->data, buf + (size_t)q * n, n * sizeof(double));
            lua_setfield(L, -2, names[q]);
        }
        lua_setfield(L, -2, "series");
    }
    return 1;
}

/* sys:snapshot() -> { position = f64 N x 3 in [-L/2, L/2) (z = 0 in 2D), box = the six GSD
 * numbers, step =, dimensions =, N = }: the hard particles' form, positions in double */
static int l_snapshot(lua_State *L)
{
    lj_system *s = check(L, 1);
    lua_createtable(L, 0, 5);
    carlo_array *a = carlo_array_push(L, CARLO_F64, s->N, 3);
    double *pos = (double *)lua_newuserdatauv(L, sizeof(double) * 3 * s->N, 0);
    if (lj_positions(s, pos))
        return carlo_raise(L, "lj:snapshot");
    for (uint32_t i = 0; i < s->N; i++)
        for (int c = 0; c < 3; c++)
            ((double *)a->data)[3 * (size_t)i + c] = c < s->dim ? pos[3 * i + c] - s->g.half[c] : 0.0;
    lua_pop(L, 1);
    lua_setfield(L, -2, "position");
    lua_createtable(L, 6, 0);
    for (int c = 0; c < 6; c++) {
        lua_pushnumber(L, c < s->dim ? s->g.L[c] : 0.0);
        lua_rawseti(L, -2, c + 1);
    }
    lua_setfield(L, -2, "box");
    setint(L, "step", s->step);
    setint(L, "N", s->N);
    setint(L, "dimensions", (uint64_t)s->dim);
    return 1;
}

static int l_save(lua_State *L)
{
    check(L, 1);
    traj_lua_save(L, 1, luaL_checkstring(L, 2), "lj:save");
    return 0;
}

static int l_close(lua_State *L)
{
    lj_ud *u = (lj_ud *)luaL_checkudata(L, 1, LJ_MT);
    lj_destroy(u->s);
    u->s = NULL;
    return 0;
}

static int l_tostring(lua_State *L)
{
    lj_ud *u = (lj_ud *)luaL_checkudata(L, 1, LJ_MT);
    if (!u->s) {
        lua_pushliteral(L, "carlo.lj (closed)");
        return 1;
    }
    lj_system *s = u->s;
    lua_pushfstring(L, "carlo.lj(N = %d, rho = %f, T = %f, rc = %f, %dD, %s%s%s, step %I, %s)",
                    (int)s->N, lj_density(s), s->T, s->rc, s->dim, lj_mode_name(s->mode),
                    s->mode == LJ_DECOMPOSITION ? " over " : "",
                    s->mode == LJ_DECOMPOSITION ? lj_sum_name(s->sum) : "", (lua_Integer)s->step,
                    carlo_device_name(s->device));
    return 1;
}

static int l_index(lua_State *L)
{
    lj_system *s = check(L, 1);
    const char *k = luaL_checkstring(L, 2);
    if (strcmp(k, "N") == 0) lua_pushinteger(L, s->N);
    else if (strcmp(k, "dim") == 0) lua_pushinteger(L, s->dim);
    else if (strcmp(k, "rho") == 0) lua_pushnumber(L, lj_density(s));
    else if (strcmp(k, "volume") == 0) lua_pushnumber(L, lj_volume(s));
    else if (strcmp(k, "T") == 0) lua_pushnumber(L, s->T);
    else if (strcmp(k, "beta") == 0) lua_pushnumber(L, s->beta);
    else if (strcmp(k, "rc") == 0) lua_pushnumber(L, s->rc);
    else if (strcmp(k, "shift") == 0) lua_pushboolean(L, s->shift);
    else if (strcmp(k, "tail") == 0) lua_pushboolean(L, s->tail);
    else if (strcmp(k, "mode") == 0) lua_pushstring(L, lj_mode_name(s->mode));
    else if (strcmp(k, "energy_sum") == 0) {
        if (s->mode == LJ_CHECKERBOARD)
            lua_pushnil(L);
        else
            lua_pushstring(L, lj_sum_name(s->sum));
    } else if (strcmp(k, "lanes") == 0 || strcmp(k, "passes") == 0 || strcmp(k, "nmax") == 0) {
        if (s->mode != LJ_CHECKERBOARD)
            lua_pushnil(L);
        else
            lua_pushinteger(L, k[0] == 'l' ? s->cb.geom.lanes : k[0] == 'p' ? s->cb.passes
                                                                             : s->cb.grid.nmax);
    }
    else if (strcmp(k, "kernel") == 0) lua_pushstring(L, lj_kernel_name(s->kernel));
    else if (strcmp(k, "delta") == 0) lua_pushnumber(L, s->delta);
    else if (strcmp(k, "delta_max") == 0) lua_pushnumber(L, lj_delta_max(s));
    else if (strcmp(k, "step") == 0) lua_pushinteger(L, (lua_Integer)s->step);
    else if (strcmp(k, "moves") == 0) lua_pushinteger(L, (lua_Integer)s->moves);
    else if (strcmp(k, "seed") == 0) lua_pushinteger(L, (lua_Integer)s->seed);
    else if (strcmp(k, "device") == 0) lua_pushstring(L, carlo_device_name(s->device));
    else if (strcmp(k, "acceptance") == 0)
        lua_pushnumber(L, s->tried ? (double)s->accepted / (double)s->tried : 0.0);
    else if (strcmp(k, "drift") == 0) lua_pushnumber(L, s->drift);
    else if (strcmp(k, "cell_capacity") == 0) lua_pushinteger(L, s->cell_cap);
    else if (strcmp(k, "drift_max") == 0) lua_pushnumber(L, s->drift_max);
    else if (strcmp(k, "checks") == 0) lua_pushinteger(L, (lua_Integer)s->checks);
    else if (strcmp(k, "cells") == 0) {
        lua_createtable(L, s->dim, 0);
        for (int a = 0; a < s->dim; a++) {
            lua_pushinteger(L, s->mode == LJ_CHECKERBOARD ? s->cb.grid.m[a] : s->g.n[a]);
            lua_rawseti(L, -2, a + 1);
        }
    } else if (strcmp(k, "box") == 0) {
        lua_createtable(L, s->dim, 0);
        for (int a = 0; a < s->dim; a++) {
            lua_pushnumber(L, s->g.L[a]);
            lua_rawseti(L, -2, a + 1);
        }
    } else if (strcmp(k, "U") == 0 || strcmp(k, "P") == 0) {
        lj_obs o;
        if (lj_observe(s, &o))
            return carlo_raise(L, "lj");
        lua_pushnumber(L, k[0] == 'U' ? o.U : o.P);
    } else if (strcmp(k, "tail_energy") == 0) lua_pushnumber(L, lj_tail_energy(s));
    else if (strcmp(k, "tail_pressure") == 0) lua_pushnumber(L, lj_tail_pressure(s));
    else {
        luaL_getmetatable(L, LJ_MT);
        lua_getfield(L, -1, "methods");
        if (lua_getfield(L, -1, k) == LUA_TNIL)
            return luaL_error(L, "lj: no field or method '%s'", k);
    }
    return 1;
}

static int l_newindex(lua_State *L)
{
    lj_system *s = check(L, 1);
    const char *k = luaL_checkstring(L, 2);
    if (strcmp(k, "T") == 0 || strcmp(k, "delta") == 0) {
        int isnum;
        double v = lua_tonumberx(L, 3, &isnum);
        if (!isnum)
            return luaL_error(L, "lj: %s must be a number (got %s)", k, luaL_typename(L, 3));
        if ((k[0] == 'T' ? lj_set_temperature(s, v) : lj_set_delta(s, v)))
            return carlo_raise(L, "lj");
        return 0;
    }
    if (strcmp(k, "kernel") == 0) {
        const char *v = luaL_checkstring(L, 3);
        int found = -1;
        for (int i = 0; KERNELS[i]; i++)
            if (strcmp(KERNELS[i], v) == 0)
                found = i;
        if (found < 0)
            return luaL_error(L, "lj: kernel must be one of \"persistent\", \"launch\", \"graph\" "
                                 "(got \"%s\")", v);
        if (s->device != CARLO_GPU)
            return luaL_error(L, "lj: kernel picks a GPU kernel variant; this system runs on the %s",
                              carlo_device_name(s->device));
        s->kernel = (lj_kernel_variant)found;
        return 0;
    }
    return luaL_error(L, "lj: field '%s' is read-only (settable: T, delta, kernel)", k);
}

/* ---------- generic model interface ---------- */

static int model_frame(void *ud, carlo_frame *f) { return lj_frame(((lj_ud *)ud)->s, f); }

static int model_checkpoint(void *ud, carlo_frame *f)
{
    return lj_checkpoint(((lj_ud *)ud)->s, f);
}

static int model_restore(lua_State *L, const carlo_frame *f, const char *device)
{
    carlo_device_kind kind = carlo_lua_device(L, "carlo.load", device);
    lj_system *s = lj_restore(f, kind);
    if (!s)
        return luaL_error(L, "carlo.load: lj checkpoint: %s", carlo_errmsg());
    push_system(L, s);
    return 1;
}

static const carlo_model lj_model = {
    .name = "lj",
    .metatable = LJ_MT,
    .frame = model_frame,
    .checkpoint = model_checkpoint,
    .restore = model_restore,
};

void lj_lua_open(lua_State *L)
{
    static const luaL_Reg meta[] = {
        {"__index", l_index}, {"__newindex", l_newindex}, {"__gc", l_close}, {"__close", l_close},
        {"__tostring", l_tostring}, {NULL, NULL}};
    static const luaL_Reg methods[] = {
        {"run", l_run}, {"tune", l_tune}, {"observe", l_observe}, {"sample", l_sample},
        {"recompute", l_recompute}, {"widom", l_widom}, {"rdf", l_rdf},
        {"snapshot", l_snapshot}, {"save", l_save}, {"sync", l_sync}, {"close", l_close},
        {NULL, NULL}};
    if (luaL_newmetatable(L, LJ_MT)) {
        luaL_setfuncs(L, meta, 0);
        luaL_newlib(L, methods);
        lua_setfield(L, -2, "methods");
    }
    lua_pop(L, 1);
    carlo_model_register(L, &lj_model);
    lua_pushcfunction(L, l_lj);
    lua_setfield(L, -2, "lj");
}
