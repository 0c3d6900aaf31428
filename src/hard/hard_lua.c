/* hard_lua.c — the Lua binding of hard particles: carlo.hard_disks{...} and
 * carlo.hard_spheres{...}, both the userdata "carlo.hard". Arguments are checked here; the work
 * goes through hard.h, which talks to the backend table only. */
#include <lauxlib.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"
#include "core/array.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/stats.h"
#include "core/system.h"
#include "hard/hard.h"
#include "hard/hard_lua.h"
#include "traj/checkpoint.h"
#include "traj/traj_lua.h"

#define HARD_MT "carlo.hard"

typedef struct hard_ud {
    hard_system *s;
} hard_ud;

static const char *const DEVICES[] = {"auto", "cpu", "gpu", NULL};

/* luaL_error with the full printf formats (%g, %.9f, %lld), which lua_pushfstring lacks. */
static int fail(lua_State *L, const char *fmt, ...) CARLO_PRINTF(2, 3);
static int fail(lua_State *L, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    luaL_where(L, 1);
    lua_pushstring(L, msg);
    lua_concat(L, 2);
    return lua_error(L);
}

static hard_system *check(lua_State *L, int idx)
{
    hard_ud *u = (hard_ud *)luaL_checkudata(L, idx, HARD_MT);
    if (!u->s)
        luaL_error(L, "carlo.hard: this system was closed");
    return u->s;
}

static void push_system(lua_State *L, hard_system *s)
{
    hard_ud *u = (hard_ud *)lua_newuserdatauv(L, sizeof *u, 0);
    u->s = s;
    luaL_setmetatable(L, HARD_MT);
}

static const char *model_name(const hard_system *s)
{
    return s->dim == 2 ? "hard disks" : "hard spheres";
}

/* ---------- arguments ---------- */

/* A box: a number (square / cube), { Lx, Ly [, Lz] } or the six GSD numbers
 * { Lx, Ly, Lz, xy, xz, yz } (tilts must be 0; Lz 0 or 1 in 2D, as HOOMD writes it). */
static carlo_box parse_box(lua_State *L, int idx, int dim, const char *where, const char *key)
{
    idx = lua_absindex(L, idx);
    double v[6] = {0, 0, 0, 0, 0, 0};
    int n = 0;
    if (lua_type(L, idx) == LUA_TNUMBER) {
        for (int a = 0; a < dim; a++)
            v[a] = lua_tonumber(L, idx);
        n = dim;
    } else if (lua_type(L, idx) == LUA_TTABLE) {
        n = (int)lua_rawlen(L, idx);
        if (n != dim && n != 6)
            fail(L, "%s: %s must be a number, %d side lengths or the six GSD numbers "
                          "{ Lx, Ly, Lz, xy, xz, yz } (got %d numbers)", where, key, dim, n);
        for (int k = 0; k < n; k++) {
            lua_rawgeti(L, idx, k + 1);
            int isnum;
            v[k] = lua_tonumberx(L, -1, &isnum);
            lua_pop(L, 1);
            if (!isnum || !isfinite(v[k]))
                fail(L, "%s: %s[%d] must be a finite number", where, key, k + 1);
        }
    } else {
        fail(L, "%s: %s must be a number or a table of side lengths (got a %s)", where, key,
                   luaL_typename(L, idx));
    }
    if (n == 6 && (v[3] != 0 || v[4] != 0 || v[5] != 0))
        fail(L, "%s: %s: tilted boxes are not supported (xy = xz = yz = 0 required)", where, key);
    if (n == 6 && dim == 2 && v[2] != 0 && v[2] != 1)
        fail(L, "%s: %s: a 2D box has Lz = 0 (got %g)", where, key, v[2]);
    for (int a = 0; a < dim; a++)
        if (!(v[a] > 0))
            fail(L, "%s: %s: side %d must be > 0 (got %g)", where, key, a + 1, v[a]);
    return carlo_box_make(dim, v);
}

/* Positions: a carlo.array N x 3 (or N x 2 in 2D), or a list of { x, y [, z] }; box coordinates
 * as doubles in a Lua-owned buffer left on the stack. */
static double *parse_positions(lua_State *L, int idx, int dim, int64_t *N, const char *where)
{
    idx = lua_absindex(L, idx);
    carlo_array *a = carlo_array_test(L, idx);
    int64_t n;
    int cols;
    if (a) {
        n = a->shape[0];
        cols = (int)a->shape[1];
        if (a->ndim != 2 || (cols != 3 && !(dim == 2 && cols == 2)))
            fail(L, "%s: position must be an N x 3 array%s (got %s %lld x %lld)", where,
                       dim == 2 ? " (or N x 2)" : "", carlo_dtype_name(a->type), (long long)a->shape[0],
                       (long long)a->shape[1]);
    } else if (lua_type(L, idx) == LUA_TTABLE) {
        n = (int64_t)lua_rawlen(L, idx);
        cols = 3;
    } else {
        fail(L, "%s: position must be a carlo.array or a list of points", where);
        return NULL;
    }
    if (n < 1 || n > HARD_N_MAX)
        fail(L, "%s: position must hold 1 to %lld particles (got %lld)", where,
                   (long long)HARD_N_MAX, (long long)n);
    *N = 0;
    double *x = (double *)lua_newuserdatauv(L, carlo_mulsize((size_t)n, 3 * sizeof(double)), 0);
    for (int64_t k = 0; k < n; k++) {
        double p[3] = {0, 0, 0};
        if (a) {
            for (int c = 0; c < cols; c++)
                p[c] = carlo_array_get(a, (size_t)k * (size_t)cols + (size_t)c);
        } else {
            lua_rawgeti(L, idx, (lua_Integer)k + 1);
            if (!lua_istable(L, -1))
                fail(L, "%s: position[%lld] must be a point { x, y%s }", where, (long long)k + 1,
                           dim == 3 ? ", z" : "");
            int m = (int)lua_rawlen(L, -1);
            if (m != dim && m != 3)
                fail(L, "%s: position[%lld] must have %d coordinates", where, (long long)k + 1, dim);
            for (int c = 0; c < m; c++) {
                lua_rawgeti(L, -1, c + 1);
                p[c] = lua_tonumber(L, -1);
                lua_pop(L, 1);
            }
            lua_pop(L, 1);
        }
        for (int c = 0; c < 3; c++)
            if (!isfinite(p[c]))
                fail(L, "%s: position[%lld] is not finite", where, (long long)k + 1);
        if (dim == 2 && p[2] != 0)
            fail(L, "%s: position[%lld] has z = %g; disks live in the plane z = 0", where,
                       (long long)k + 1, p[2]);
        memcpy(x + 3 * k, p, sizeof p);
    }
    *N = n;
    return x;
}

/* An optional keyword table at idx (absent or nil: an empty one). */
static void optional_table(lua_State *L, int idx)
{
    lua_settop(L, idx);
    if (lua_isnil(L, idx)) {
        lua_newtable(L);
        lua_replace(L, idx);
    }
    luaL_checktype(L, idx, LUA_TTABLE);
}

/* ---------- constructors ---------- */

static int construct(lua_State *L, int dim)
{
    const char *where = dim == 2 ? "carlo.hard_disks" : "carlo.hard_spheres";
    const char *lattice = dim == 2 ? "hex" : "fcc";
    static const char *const keys[] = {"N", "phi", "box", "seed", "init", "device", "d", "moves",
                                       "shuffle", "cell_width", "quiet", NULL};
    luaL_checktype(L, 1, LUA_TTABLE);
    carlo_args_allowed(L, 1, where, keys);
    double cp = hard_close_packing(dim);
    hard_params p;
    memset(&p, 0, sizeof p);
    p.dim = dim;
    p.d = carlo_arg_num(L, 1, where, "d", 0, 0.16, 0, 0, 2, 1);
    p.moves = (int)carlo_arg_int(L, 1, where, "moves", 0, 4, 1, 4096);
    p.shuffle = carlo_arg_bool(L, 1, where, "shuffle", 1);
    p.quiet = carlo_arg_bool(L, 1, where, "quiet", 0);
    p.w_pref = carlo_arg_num(L, 1, where, "cell_width", 0, 0, 1, 1,
                             dim == 2 ? HARD_WMAX_2D : HARD_WMAX_3D, 0);
    int has_phi = carlo_arg_has(L, 1, "phi"), has_box = carlo_arg_has(L, 1, "box");
    int t = lua_getfield(L, 1, "init");
    int snap = t == LUA_TTABLE;
    if (snap) {
        static const char *const skeys[] = {"position", "box", "step", "dimensions", NULL};
        carlo_args_allowed(L, -1, "init", skeys);
        if (has_phi || has_box)
            return fail(L, "%s: a snapshot brings its own box: give neither phi nor box", where);
        if (lua_getfield(L, -1, "dimensions") != LUA_TNIL && lua_tointeger(L, -1) != dim)
            return fail(L, "%s: init holds a %lld-dimensional snapshot", where,
                        (long long)lua_tointeger(L, -1));
        lua_pop(L, 1);
        if (lua_getfield(L, -1, "box") == LUA_TNIL)
            return fail(L, "%s: init.box is required (the snapshot's box)", where);
        p.box = parse_box(L, -1, dim, where, "init.box");
        lua_pop(L, 1);
        lua_getfield(L, -1, "position");
        int64_t n = 0;
        p.positions = parse_positions(L, -1, dim, &n, where);
        p.init = HARD_INIT_POSITIONS;
        p.N = n;
        if (carlo_arg_has(L, 1, "N") && carlo_arg_int(L, 1, where, "N", 1, 0, 1, HARD_N_MAX) != n)
            return fail(L, "%s: N = %lld does not match the snapshot's %lld particles", where,
                        (long long)carlo_arg_int(L, 1, where, "N", 1, 0, 1, HARD_N_MAX), (long long)n);
        lua_insert(L, 2); /* keep the positions buffer below the table */
        lua_pop(L, 1);
    } else {
        lua_pop(L, 1);
        const char *inits[] = {"random", lattice, NULL};
        int which = carlo_arg_enum(L, 1, where, "init", "random", inits);
        p.init = which == 0 ? HARD_INIT_RANDOM : HARD_INIT_LATTICE;
        p.N = carlo_arg_int(L, 1, where, "N", 1, 0, 1, HARD_N_MAX);
        if (has_phi == has_box)
            return fail(L, "%s: give exactly one of phi (packing fraction in (0, %.9f)) and box",
                              where, cp);
        if (has_phi) {
            double phi = carlo_arg_num(L, 1, where, "phi", 1, 0, 0, 0, cp, 0);
            if (p.init == HARD_INIT_LATTICE) {
                if (hard_lattice_box(dim, p.N, phi, &p.box))
                    return fail(L, "%s: %s", where, carlo_errmsg());
            } else {
                double side = pow((double)p.N * hard_particle_volume(dim) / phi, 1.0 / dim);
                double L3[3] = {side, side, side};
                p.box = carlo_box_make(dim, L3);
            }
        } else {
            lua_getfield(L, 1, "box");
            p.box = parse_box(L, -1, dim, where, "box");
            lua_pop(L, 1);
            double phi = hard_phi_of(dim, p.N, &p.box);
            if (!(phi < cp))
                return fail(L, "%s: N = %lld in this box packs phi = %.9g, at or above close "
                                     "packing %.9g", where, (long long)p.N, phi, cp);
        }
    }
    p.seed = carlo_arg_seed(L, 1, where);
    carlo_arg_enum(L, 1, where, "device", carlo_device_default(), DEVICES);
    p.device = carlo_lua_device(L, where, carlo_arg_str(L, 1, where, "device", 0));
    lua_Integer step = 0; /* a snapshot's step carries on (trajectories continue their numbering) */
    if (snap) {
        lua_getfield(L, 1, "init");
        if (lua_getfield(L, -1, "step") != LUA_TNIL) {
            step = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : -1;
            if (step < 0)
                return fail(L, "%s: init.step must be an integer >= 0", where);
        }
        lua_pop(L, 2);
    }
    hard_system *s = hard_create(&p);
    if (!s)
        return carlo_raise(L, where);
    s->step = (uint64_t)step;
    push_system(L, s);
    return 1;
}

static int l_hard_disks(lua_State *L) { return construct(L, 2); }
static int l_hard_spheres(lua_State *L) { return construct(L, 3); }

/* ---------- running ---------- */

/* sys:run{ sweeps = n | upto = step, walltime =, checkpoint =, quiet = } */
static int write_frame(void *ctx, hard_system *s)
{
    (void)s;
    return traj_sink_write((traj_sink *)ctx);
}

static int l_run(lua_State *L)
{
    static const char *const keys[] = {"sweeps", "upto", "walltime", "checkpoint", "every",
                                       "trajectory", "quiet", NULL};
    const char *where = "hard:run";
    hard_system *s = check(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    carlo_args_allowed(L, 2, where, keys);
    int has_sweeps = carlo_arg_has(L, 2, "sweeps"), has_upto = carlo_arg_has(L, 2, "upto");
    if (has_sweeps == has_upto)
        return fail(L, "%s: give exactly one of sweeps (how many) and upto (the step to reach)",
                          where);
    hard_run_opts o = {0};
    if (has_sweeps) {
        o.sweeps = (uint64_t)carlo_arg_int(L, 2, where, "sweeps", 1, 0, 0, (int64_t)1 << 47);
    } else {
        uint64_t upto = (uint64_t)carlo_arg_int(L, 2, where, "upto", 1, 0, 0, (int64_t)1 << 47);
        o.sweeps = upto > s->step ? upto - s->step : 0;
    }
    o.walltime = carlo_arg_num(L, 2, where, "walltime", 0, 0, 0, 0, INFINITY, 0);
    o.quiet = carlo_arg_bool(L, 2, where, "quiet", 0);
    o.label = model_name(s);
    const char *ckpt = carlo_arg_str(L, 2, where, "checkpoint", 0);
    if (ckpt && o.walltime <= 0)
        return fail(L, "%s: checkpoint goes with walltime (use sys:save(path) otherwise)", where);
    if (o.walltime > 0)
        o.reserve = ckpt ? 0.5 + (double)s->N * 48.0 / 1e8 : 0;
    traj_sink sink; /* a frame every `every` sweeps, written from C */
    o.every = traj_lua_sink(L, 2, 1, where, s->step, &sink);
    if (sink.tr) {
        o.callback = write_frame;
        o.ctx = &sink;
    }
    hard_run_result res;
    if (hard_run_ex(s, &o, &res))
        return carlo_raise(L, where);
    if (res.stopped_early)
        traj_lua_stopped_early(L, 1, where, s->step, res.sweeps, o.sweeps, o.walltime, ckpt,
                               o.quiet);
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, (lua_Integer)res.sweeps);
    lua_setfield(L, -2, "sweeps");
    lua_pushinteger(L, (lua_Integer)s->step);
    lua_setfield(L, -2, "step");
    lua_pushboolean(L, !res.stopped_early);
    lua_setfield(L, -2, "completed");
    lua_pushnumber(L, res.seconds);
    lua_setfield(L, -2, "seconds");
    return 1;
}

static int l_sweep(lua_State *L)
{
    if (hard_sweep(check(L, 1)))
        return carlo_raise(L, "hard:sweep");
    return 0;
}

/* sys:subsweep(set): one checkerboard set, set = 0 .. 2^dim - 1 (bit a: parity along axis a) */
static int l_subsweep(lua_State *L)
{
    hard_system *s = check(L, 1);
    lua_Integer set = luaL_checkinteger(L, 2);
    if (set < 0 || set >= (1 << s->dim))
        return fail(L, "hard:subsweep: the set must be from 0 to %d (got %lld)", (1 << s->dim) - 1,
                          (long long)set);
    if (hard_subsweep(s, (int)set))
        return carlo_raise(L, "hard:subsweep");
    return 0;
}

static int l_shift_cells(lua_State *L)
{
    if (hard_shift_cells(check(L, 1)))
        return carlo_raise(L, "hard:shift_cells");
    return 0;
}

static int l_volume_move(lua_State *L)
{
    hard_system *s = check(L, 1);
    if (!s->npt)
        return fail(L, "hard:volume_move: set sys.P first (volume moves sample NPT)");
    uint64_t before = s->counts.vol_accepted;
    if (hard_volume_move(s))
        return carlo_raise(L, "hard:volume_move");
    lua_pushboolean(L, s->counts.vol_accepted > before);
    return 1;
}

static int l_sync(lua_State *L)
{
    hard_system *s = check(L, 1);
    if (s->be->sync(s))
        return carlo_raise(L, "hard:sync");
    return 0;
}

/* sys:compress{ phi =, sweeps_between = 1, max_sweeps =, quiet = } */
static int l_compress(lua_State *L)
{
    static const char *const keys[] = {"phi", "sweeps_between", "max_sweeps", "quiet", NULL};
    const char *where = "hard:compress";
    hard_system *s = check(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    carlo_args_allowed(L, 2, where, keys);
    hard_compress_opts o = {0};
    o.phi = carlo_arg_num(L, 2, where, "phi", 1, 0, 0, 0, hard_close_packing(s->dim), 0);
    o.sweeps_between = (uint64_t)carlo_arg_int(L, 2, where, "sweeps_between", 0, 1, 1, 1 << 20);
    o.max_sweeps = (uint64_t)carlo_arg_int(L, 2, where, "max_sweeps", 0, 0, 0, (int64_t)1 << 47);
    o.quiet = carlo_arg_bool(L, 2, where, "quiet", 0);
    if (hard_compress(s, &o))
        return carlo_raise(L, where);
    lua_pushnumber(L, hard_phi(s));
    return 1;
}

/* sys:tune{ target = 0.2, volume_target = 0.3, rounds = 20, sweeps = 100 } -> d, dlnV */
static int l_tune(lua_State *L)
{
    static const char *const keys[] = {"target", "volume_target", "rounds", "sweeps", NULL};
    const char *where = "hard:tune";
    hard_system *s = check(L, 1);
    optional_table(L, 2);
    carlo_args_allowed(L, 2, where, keys);
    double target = carlo_arg_num(L, 2, where, "target", 0, 0.2, 0, 0, 1, 0);
    double vt = carlo_arg_num(L, 2, where, "volume_target", 0, 0.3, 0, 0, 1, 0);
    int rounds = (int)carlo_arg_int(L, 2, where, "rounds", 0, 20, 1, 100000);
    uint64_t sweeps = (uint64_t)carlo_arg_int(L, 2, where, "sweeps", 0, 100, 1, (int64_t)1 << 40);
    if (hard_tune(s, target, vt, rounds, sweeps))
        return carlo_raise(L, where);
    lua_pushnumber(L, (double)s->mv.d);
    lua_pushnumber(L, s->dlnV);
    return 2;
}

/* ---------- observing ---------- */

static void push_box(lua_State *L, const carlo_box *b)
{
    double v[6];
    carlo_box_gsd(b, v);
    lua_createtable(L, 6, 0);
    for (int k = 0; k < 6; k++) {
        lua_pushnumber(L, v[k]);
        lua_rawseti(L, -2, k + 1);
    }
}

static void set_num(lua_State *L, const char *k, double v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

static void set_int(lua_State *L, const char *k, int64_t v)
{
    lua_pushinteger(L, (lua_Integer)v);
    lua_setfield(L, -2, k);
}

static double ratio(uint64_t a, uint64_t b) { return b ? (double)a / (double)b : 0.0; }

static void push_acceptance(lua_State *L, const hard_counts *c)
{
    lua_createtable(L, 0, 2);
    set_num(L, "translation", ratio(c->accepted, c->tried));
    set_num(L, "volume", ratio(c->vol_accepted, c->vol_tried));
    lua_setfield(L, -2, "acceptance");
}

static int l_observe(lua_State *L)
{
    hard_system *s = check(L, 1);
    hard_counts c;
    if (hard_counts_get(s, &c))
        return carlo_raise(L, "hard:observe");
    double V = carlo_box_volume(&s->box);
    lua_createtable(L, 0, 16);
    set_int(L, "step", (int64_t)s->step);
    set_int(L, "N", s->N);
    set_num(L, "phi", hard_phi(s));
    set_num(L, "rho", (double)s->N / V);
    set_num(L, "V", V);
    push_box(L, &s->box);
    lua_setfield(L, -2, "box");
    set_num(L, "d", (double)s->mv.d);
    set_num(L, "dlnV", s->dlnV);
    push_acceptance(L, &c);
    set_int(L, "tried", (int64_t)c.tried);
    set_int(L, "accepted", (int64_t)c.accepted);
    set_int(L, "volume_tried", (int64_t)c.vol_tried);
    set_int(L, "volume_accepted", (int64_t)c.vol_accepted);
    return 1;
}

static void push_estimate(lua_State *L, const char *name, const double *x, size_t n, uint64_t every)
{
    carlo_estimate e;
    carlo_blocking(x, n, &e);
    lua_createtable(L, 0, 4);
    set_num(L, "mean", e.mean);
    set_num(L, "err", e.err);
    set_num(L, "tau", e.tau * (double)every);
    lua_pushboolean(L, e.plateau);
    lua_setfield(L, -2, "plateau");
    lua_setfield(L, -2, name);
}

/* Optional { dr =, width =, degree = } / { dx =, xmax =, degree = } tables. */
static void parse_fit(lua_State *L, int idx, const char *where, const char *key, double *a,
                      double *b, int *deg, const char *na, const char *nb)
{
    if (lua_getfield(L, idx, key) == LUA_TNIL) {
        lua_pop(L, 1);
        return;
    }
    const char *keys[4] = {na, nb, "degree", NULL};
    char w[64];
    snprintf(w, sizeof w, "%s: %s", where, key);
    carlo_args_allowed(L, -1, w, keys);
    *a = carlo_arg_num(L, -1, w, na, 0, *a, 0, 0, 0.5, 1);
    *b = carlo_arg_num(L, -1, w, nb, 0, *b, 0, 0, 0.5, 1);
    *deg = (int)carlo_arg_int(L, -1, w, "degree", 0, *deg, 0, 10);
    lua_pop(L, 1);
}

enum { Q_PGR, Q_PSDF, Q_PDIFF, Q_PHI, Q_RHO, Q_PSI6, Q_PSI6L, NQ };

/* sys:sample{ sweeps =, every =, pressure = true, psi6 = false, rc = 1.4, gr = {...},
 *             sdf = {...}, series = false, quiet = } */
static int l_sample(lua_State *L)
{
    static const char *const keys[] = {"sweeps", "every", "pressure", "psi6", "rc", "gr", "sdf",
                                       "series", "quiet", NULL};
    static const char *const names[NQ] = {"P_gr", "P_sdf", "P_diff", "phi", "rho", "psi6",
                                          "psi6_local"};
    const char *where = "hard:sample";
    hard_system *s = check(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    carlo_args_allowed(L, 2, where, keys);
    uint64_t every = (uint64_t)carlo_arg_int(L, 2, where, "every", 0, 1, 1, (int64_t)1 << 40);
    uint64_t sweeps = (uint64_t)carlo_arg_int(L, 2, where, "sweeps", 1, 0, 1, (int64_t)1 << 47);
    if (sweeps % every || sweeps / every < 2)
        return fail(L, "%s: sweeps must be a multiple of every giving at least 2 samples "
                             "(got sweeps = %llu, every = %llu)", where, (unsigned long long)sweeps,
                          (unsigned long long)every);
    int want_p = carlo_arg_bool(L, 2, where, "pressure", 1);
    int want_psi = carlo_arg_bool(L, 2, where, "psi6", 0);
    if (want_psi && s->dim != 2)
        return fail(L, "%s: psi6 is the hexatic order of disks", where);
    double rc = carlo_arg_num(L, 2, where, "rc", 0, 1.4, 0, 0, INFINITY, 0);
    int want_series = carlo_arg_bool(L, 2, where, "series", 0);
    int quiet = carlo_arg_bool(L, 2, where, "quiet", 0);
    hard_pressure_params pp;
    hard_pressure_defaults(&pp);
    parse_fit(L, 2, where, "gr", &pp.gr_dr, &pp.gr_width, &pp.gr_degree, "dr", "width");
    parse_fit(L, 2, where, "sdf", &pp.sdf_dx, &pp.sdf_xmax, &pp.sdf_degree, "dx", "xmax");
    hard_scan sc;
    if (hard_scan_from(&pp, &sc))
        return carlo_raise(L, where);
    size_t n = (size_t)(sweeps / every);
    double *buf = (double *)lua_newuserdatauv(L, carlo_mulsize(carlo_mulsize(n, NQ), sizeof(double)), 0);
    hard_counts c0, c1;
    if (hard_counts_get(s, &c0))
        return carlo_raise(L, where);
    hard_run_opts o = {.sweeps = every, .quiet = 1};
    carlo_progress pr;
    carlo_progress_start(&pr, "hard sample", "sweeps", (double)sweeps, quiet);
    for (size_t j = 0; j < n; j++) {
        hard_run_result res;
        double pg = NAN, ps = NAN, g = NAN, loc = NAN;
        if (hard_run_ex(s, &o, &res) || (want_p && hard_pressure_now(s, &pp, &pg, &ps)) ||
            (want_psi && hard_psi6(s, rc, &g, &loc, NULL))) {
            carlo_progress_end(&pr);
            return carlo_raise(L, where);
        }
        double V = carlo_box_volume(&s->box);
        buf[Q_PGR * n + j] = pg;
        buf[Q_PSDF * n + j] = ps;
        buf[Q_PDIFF * n + j] = pg - ps;
        buf[Q_PHI * n + j] = hard_phi(s);
        buf[Q_RHO * n + j] = (double)s->N / V;
        buf[Q_PSI6 * n + j] = g;
        buf[Q_PSI6L * n + j] = loc;
        carlo_progress_update(&pr, (double)((j + 1) * every));
    }
    carlo_progress_end(&pr);
    if (hard_counts_get(s, &c1))
        return carlo_raise(L, where);
    lua_createtable(L, 0, 16);
    set_int(L, "samples", (int64_t)n);
    set_int(L, "step", (int64_t)s->step);
    for (int q = 0; q < NQ; q++) {
        if ((q <= Q_PDIFF && !want_p) || (q >= Q_PSI6 && !want_psi))
            continue;
        push_estimate(L, names[q], buf + (size_t)q * n, n, every);
    }
    if (want_p) {
        lua_getfield(L, -1, "P_sdf");
        lua_setfield(L, -2, "P");
        if (s->dim == 3) { /* beta P v0, HPMC's Table 1 unit */
            lua_getfield(L, -1, "P");
            lua_createtable(L, 0, 4);
            lua_getfield(L, -2, "mean");
            lua_pushnumber(L, lua_tonumber(L, -1) * hard_particle_volume(3));
            lua_setfield(L, -3, "mean");
            lua_pop(L, 1);
            lua_getfield(L, -2, "err");
            lua_pushnumber(L, lua_tonumber(L, -1) * hard_particle_volume(3));
            lua_setfield(L, -3, "err");
            lua_pop(L, 1);
            lua_getfield(L, -2, "tau");
            lua_setfield(L, -2, "tau");
            lua_setfield(L, -3, "Pv0");
            lua_pop(L, 1);
        }
    }
    hard_counts d = {c1.tried - c0.tried, c1.accepted - c0.accepted, c1.vol_tried - c0.vol_tried,
                     c1.vol_accepted - c0.vol_accepted};
    push_acceptance(L, &d);
    if (want_series) {
        lua_createtable(L, 0, NQ);
        for (int q = 0; q < NQ; q++) {
            if ((q <= Q_PDIFF && !want_p) || (q >= Q_PSI6 && !want_psi))
                continue;
            carlo_array *a = carlo_array_push(L, CARLO_F64, (int64_t)n, 0);
            memcpy(a->data, buf + (size_t)q * n, n * sizeof(double));
            lua_setfield(L, -2, names[q]);
        }
        lua_setfield(L, -2, "series");
    }
    return 1;
}

/* sys:psi6{ rc = 1.4, values = false } -> { global =, local =, values = array N x 2 } */
static int l_psi6(lua_State *L)
{
    static const char *const keys[] = {"rc", "values", NULL};
    const char *where = "hard:psi6";
    hard_system *s = check(L, 1);
    optional_table(L, 2);
    carlo_args_allowed(L, 2, where, keys);
    double rc = carlo_arg_num(L, 2, where, "rc", 0, 1.4, 0, 0, INFINITY, 0);
    int values = carlo_arg_bool(L, 2, where, "values", 0);
    double g, loc;
    double *psi = NULL;
    if (values) {
        carlo_array *a = carlo_array_push(L, CARLO_F64, s->N, 2);
        psi = (double *)a->data;
    }
    if (hard_psi6(s, rc, &g, &loc, psi))
        return carlo_raise(L, where);
    lua_createtable(L, 0, 3);
    set_num(L, "global", g);
    set_num(L, "local", loc);
    if (values) {
        lua_pushvalue(L, -2);
        lua_setfield(L, -2, "values");
    }
    return 1;
}

/* sys:snapshot() -> { position = array N x 3 f32, box = { Lx, Ly, Lz, xy, xz, yz }, step = } */
static int l_snapshot(lua_State *L)
{
    hard_system *s = check(L, 1);
    lua_createtable(L, 0, 4);
    carlo_array *a = carlo_array_push(L, CARLO_F32, s->N, 3);
    if (hard_positions_f32(s, (float *)a->data))
        return carlo_raise(L, "hard:snapshot");
    lua_setfield(L, -2, "position");
    push_box(L, &s->box);
    lua_setfield(L, -2, "box");
    set_int(L, "step", (int64_t)s->step);
    set_int(L, "dimensions", s->dim);
    return 1;
}

/* sys:overlaps([max = 100]) -> count, { {i, j}, ... } (1-based particle indices) */
static int l_overlaps(lua_State *L)
{
    hard_system *s = check(L, 1);
    lua_Integer max = luaL_optinteger(L, 2, 100);
    if (max < 0 || max > 1 << 24)
        return fail(L, "hard:overlaps: max must be from 0 to %d", 1 << 24);
    int64_t *pairs = (int64_t *)lua_newuserdatauv(L, sizeof(int64_t) * 2 * (size_t)(max ? max : 1), 0);
    int64_t count;
    if (hard_overlaps(s, &count, pairs, max))
        return carlo_raise(L, "hard:overlaps");
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

/* sys:verify() -> true, or false and what is wrong (count, cells, overlaps, tags) */
static int l_verify(lua_State *L)
{
    hard_system *s = check(L, 1);
    if (hard_verify(s)) {
        lua_pushboolean(L, 0);
        lua_pushstring(L, carlo_errmsg());
        return 2;
    }
    lua_pushboolean(L, 1);
    return 1;
}

static int l_save(lua_State *L)
{
    check(L, 1);
    traj_lua_save(L, 1, luaL_checkstring(L, 2), "hard:save");
    return 0;
}

static int l_close(lua_State *L)
{
    hard_ud *u = (hard_ud *)luaL_checkudata(L, 1, HARD_MT);
    hard_destroy(u->s);
    u->s = NULL;
    return 0;
}

static int l_tostring(lua_State *L)
{
    hard_ud *u = (hard_ud *)luaL_checkudata(L, 1, HARD_MT);
    if (!u->s) {
        lua_pushliteral(L, "carlo.hard (closed)");
        return 1;
    }
    hard_system *s = u->s;
    char buf[200];
    snprintf(buf, sizeof buf, "carlo.%s(N = %lld, phi = %.6f, %s, step %llu, %s)",
             s->dim == 2 ? "hard_disks" : "hard_spheres", (long long)s->N, hard_phi(s),
             s->npt ? "NPT" : "NVT", (unsigned long long)s->step, carlo_device_name(s->device));
    lua_pushstring(L, buf);
    return 1;
}

static int l_index(lua_State *L)
{
    hard_system *s = check(L, 1);
    const char *k = luaL_checkstring(L, 2);
    if (strcmp(k, "N") == 0) lua_pushinteger(L, (lua_Integer)s->N);
    else if (strcmp(k, "dim") == 0) lua_pushinteger(L, s->dim);
    else if (strcmp(k, "phi") == 0) lua_pushnumber(L, hard_phi(s));
    else if (strcmp(k, "rho") == 0) lua_pushnumber(L, (double)s->N / carlo_box_volume(&s->box));
    else if (strcmp(k, "V") == 0) lua_pushnumber(L, carlo_box_volume(&s->box));
    else if (strcmp(k, "box") == 0) push_box(L, &s->box);
    else if (strcmp(k, "step") == 0) lua_pushinteger(L, (lua_Integer)s->step);
    else if (strcmp(k, "seed") == 0) lua_pushinteger(L, (lua_Integer)s->seed);
    else if (strcmp(k, "device") == 0) lua_pushstring(L, carlo_device_name(s->device));
    else if (strcmp(k, "d") == 0) lua_pushnumber(L, (double)s->mv.d);
    else if (strcmp(k, "moves") == 0) lua_pushinteger(L, s->mv.moves);
    else if (strcmp(k, "shuffle") == 0) lua_pushboolean(L, s->mv.shuffle);
    else if (strcmp(k, "dlnV") == 0) lua_pushnumber(L, s->dlnV);
    else if (strcmp(k, "npt") == 0) lua_pushboolean(L, s->npt);
    else if (strcmp(k, "P") == 0) {
        if (s->npt)
            lua_pushnumber(L, s->P);
        else
            lua_pushnil(L);
    } else if (strcmp(k, "variant") == 0) {
        lua_pushstring(L, s->variant ? "registers" : "memory");
    } else if (strcmp(k, "gather") == 0) {
        lua_pushboolean(L, s->gather);
    } else if (strcmp(k, "team") == 0) {
        lua_pushinteger(L, s->team);
    } else if (strcmp(k, "block") == 0) {
        lua_createtable(L, 2, 0);
        lua_pushinteger(L, s->block[0]);
        lua_rawseti(L, -2, 1);
        lua_pushinteger(L, s->block[1]);
        lua_rawseti(L, -2, 2);
    } else if (strcmp(k, "cells") == 0) {
        lua_createtable(L, 0, 4);
        lua_createtable(L, s->dim, 0);
        for (int a = 0; a < s->dim; a++) {
            lua_pushinteger(L, s->grid.m[a]);
            lua_rawseti(L, -2, a + 1);
        }
        lua_setfield(L, -2, "m");
        lua_createtable(L, s->dim, 0);
        for (int a = 0; a < s->dim; a++) {
            lua_pushnumber(L, s->grid.width[a]);
            lua_rawseti(L, -2, a + 1);
        }
        lua_setfield(L, -2, "width");
        set_int(L, "nmax", s->grid.nmax);
        set_int(L, "count", s->grid.ncells);
    } else {
        luaL_getmetatable(L, HARD_MT);
        lua_getfield(L, -1, "methods");
        if (lua_getfield(L, -1, k) == LUA_TNIL)
            return fail(L, "hard: no field or method '%s'", k);
    }
    return 1;
}

static int l_newindex(lua_State *L)
{
    hard_system *s = check(L, 1);
    const char *k = luaL_checkstring(L, 2);
    int isnum;
    double v = lua_tonumberx(L, 3, &isnum);
    if (strcmp(k, "d") == 0) {
        if (!isnum || !(v > 0) || v > 2)
            return fail(L, "hard: d must be a number in (0, 2] (got %s)", luaL_tolstring(L, 3, NULL));
        s->mv.d = (float)v;
    } else if (strcmp(k, "moves") == 0) {
        if (!lua_isinteger(L, 3) || v < 1 || v > 4096)
            return fail(L, "hard: moves must be an integer from 1 to 4096 (got %s)",
                              luaL_tolstring(L, 3, NULL));
        s->mv.moves = (int)v;
    } else if (strcmp(k, "shuffle") == 0) {
        if (!lua_isboolean(L, 3))
            return fail(L, "hard: shuffle must be true or false");
        s->mv.shuffle = lua_toboolean(L, 3);
    } else if (strcmp(k, "dlnV") == 0) {
        if (!isnum || !(v > 0) || v > 1)
            return fail(L, "hard: dlnV must be a number in (0, 1] (got %s)", luaL_tolstring(L, 3, NULL));
        s->dlnV = v;
    } else if (strcmp(k, "variant") == 0) {
        const char *v = lua_tostring(L, 3);
        if (!v || (strcmp(v, "memory") && strcmp(v, "registers")))
            return fail(L, "hard: variant must be \"memory\" or \"registers\"");
        s->variant = strcmp(v, "registers") == 0;
    } else if (strcmp(k, "gather") == 0) {
        if (!lua_isboolean(L, 3))
            return fail(L, "hard: gather must be true or false");
        s->gather = lua_toboolean(L, 3);
    } else if (strcmp(k, "team") == 0) {
        if (!lua_isinteger(L, 3) || (lua_tointeger(L, 3) != 1 && lua_tointeger(L, 3) != 2 &&
                                     lua_tointeger(L, 3) != 4 && lua_tointeger(L, 3) != 8))
            return fail(L, "hard: team must be 1, 2, 4 or 8 (GPU lanes per active cell)");
        s->team = (int)lua_tointeger(L, 3);
    } else if (strcmp(k, "block") == 0) {
        /* the GPU sub-sweep's thread block: whole warps, within the kernel's launch bounds */
        int limit = s->dim == 2 ? 1024 : 256;
        lua_Integer b[2] = {0, 0};
        if (lua_type(L, 3) == LUA_TTABLE && lua_rawlen(L, 3) == 2)
            for (int i = 0; i < 2; i++) {
                lua_rawgeti(L, 3, i + 1);
                b[i] = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
                lua_pop(L, 1);
            }
        if (b[0] < 1 || b[1] < 1 || b[0] * b[1] > limit || (b[0] * b[1]) % 32)
            return fail(L, "hard: block must be { x, y } with x y a multiple of 32 up to %d", limit);
        s->block[0] = (int)b[0];
        s->block[1] = (int)b[1];
    } else if (strcmp(k, "P") == 0) {
        if (lua_isnil(L, 3)) {
            s->npt = 0;
            return 0;
        }
        if (!isnum || !(v > 0) || !isfinite(v))
            return fail(L, "hard: P must be a number > 0 (beta P sigma^%d), or nil for NVT (got %s)",
                              s->dim, luaL_tolstring(L, 3, NULL));
        s->P = v;
        s->npt = 1;
    } else {
        return fail(L, "hard: field '%s' is read-only (settable: d, moves, shuffle, P, dlnV, block, variant, gather, team)", k);
    }
    return 0;
}

/* ---------- generic model interface ---------- */

static int model_frame(void *ud, carlo_frame *f)
{
    return hard_frame(((hard_ud *)ud)->s, f);
}

static int model_checkpoint(void *ud, carlo_frame *f)
{
    return hard_checkpoint(((hard_ud *)ud)->s, f);
}

static int model_restore(lua_State *L, const carlo_frame *f, const char *device)
{
    carlo_device_kind kind = carlo_lua_device(L, "carlo.load", device);
    hard_system *s = hard_restore(f, kind);
    if (!s)
        return fail(L, "carlo.load: hard-particle checkpoint: %s", carlo_errmsg());
    push_system(L, s);
    return 1;
}

static const carlo_model hard_model = {
    .name = "hard",
    .metatable = HARD_MT,
    .frame = model_frame,
    .checkpoint = model_checkpoint,
    .restore = model_restore,
};

void hard_lua_open(lua_State *L)
{
    static const luaL_Reg meta[] = {
        {"__index", l_index}, {"__newindex", l_newindex}, {"__gc", l_close}, {"__close", l_close},
        {"__tostring", l_tostring}, {NULL, NULL}};
    static const luaL_Reg methods[] = {
        {"run", l_run}, {"sweep", l_sweep}, {"subsweep", l_subsweep}, {"shift_cells", l_shift_cells},
        {"volume_move", l_volume_move}, {"compress", l_compress}, {"tune", l_tune},
        {"observe", l_observe}, {"sample", l_sample}, {"psi6", l_psi6}, {"snapshot", l_snapshot},
        {"overlaps", l_overlaps}, {"verify", l_verify}, {"save", l_save}, {"sync", l_sync},
        {"close", l_close}, {NULL, NULL}};
    if (luaL_newmetatable(L, HARD_MT)) {
        luaL_setfuncs(L, meta, 0);
        luaL_newlib(L, methods);
        lua_setfield(L, -2, "methods");
    }
    lua_pop(L, 1);
    carlo_model_register(L, &hard_model);
    lua_pushcfunction(L, l_hard_disks);
    lua_setfield(L, -2, "hard_disks");
    lua_pushcfunction(L, l_hard_spheres);
    lua_setfield(L, -2, "hard_spheres");
}
