/* hard_lua.c — the Lua binding of hard particles: carlo.hard_disks{...} and
 * carlo.hard_spheres{...}, both the userdata "carlo.hard" of the system layer
 * (system/system_lua.h), which gives them run, sample, observe, snapshot, save, sync, close.
 * Here: the constructors' keys, the model's fields and its own methods (sweep, substep,
 * shift_cells, volume_move, compress, tune, psi6, steinhardt, overlaps, verify, launch, set_sites,
 * widom). */
#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"
#include "core/array.h"
#include "core/error.h"
#include "core/progress.h"
#include "hard/hard.h"
#include "hard/hard_lua.h"
#include "hard/hard_mpi.h"
#include "core/steinhardt.h"
#include "system/particle_lua.h"
#include "system/system_lua.h"

static const char *const DEVICES[] = {"auto", "cpu", "gpu", NULL};

extern const carlo_lua_model hard_lua_model;

static hard_system *check(lua_State *L, int idx)
{
    return (hard_system *)carlo_lua_check(L, idx, &hard_lua_model);
}

/* ---------- arguments ---------- */

/* A box: a number (square / cube), { Lx, Ly [, Lz], xy =, xz =, yz = } or the six GSD numbers
 * { Lx, Ly, Lz, xy, xz, yz } (Lz 0 or 1 in 2D, as HOOMD writes it; 2D: the tilt xy only). */
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
            carlo_lua_fail(L, "%s: %s must be a number, %d side lengths or the six GSD numbers "
                              "{ Lx, Ly, Lz, xy, xz, yz } (got %d numbers)", where, key, dim, n);
        for (int k = 0; k < n; k++) {
            lua_rawgeti(L, idx, k + 1);
            int isnum;
            v[k] = lua_tonumberx(L, -1, &isnum);
            lua_pop(L, 1);
            if (!isnum || !isfinite(v[k]))
                carlo_lua_fail(L, "%s: %s[%d] must be a finite number (got %s)", where, key, k + 1,
                               isnum ? "a non-finite number" : "no number");
        }
    } else {
        carlo_lua_fail(L, "%s: %s must be a number or a table of side lengths (got a %s)", where, key,
                       luaL_typename(L, idx));
    }
    static const char *const tilt_keys[3] = {"xy", "xz", "yz"};
    for (int k = 0; lua_type(L, idx) == LUA_TTABLE && k < 3; k++) {
        if (lua_getfield(L, idx, tilt_keys[k]) != LUA_TNIL) {
            int isnum;
            const double t = lua_tonumberx(L, -1, &isnum);
            if (n == 6)
                carlo_lua_fail(L, "%s: %s: give the tilts either as the six GSD numbers or as %s =, not both", where,
                               key, tilt_keys[k]);
            if (!isnum || !isfinite(t))
                carlo_lua_fail(L, "%s: %s.%s must be a finite number (got %s)", where, key, tilt_keys[k],
                               luaL_tolstring(L, -1, NULL));
            v[3 + k] = t;
        }
        lua_pop(L, 1);
    }
    if (n == 6 && dim == 2 && v[2] != 0 && v[2] != 1)
        carlo_lua_fail(L, "%s: %s: a 2D box has Lz = 0 (got %g)", where, key, v[2]);
    for (int a = 0; a < dim; a++)
        if (!(v[a] > 0))
            carlo_lua_fail(L, "%s: %s: side %d must be > 0 (got %g)", where, key, a + 1, v[a]);
    carlo_box b = carlo_box_make(dim, v);
    b.xy = v[3];
    b.xz = v[4];
    b.yz = v[5];
    if (hard_tilt_check(&b))
        carlo_lua_fail(L, "%s: %s: %s", where, key, carlo_errmsg());
    return b;
}

/* Positions: a carlo.array N x d (N x 3 with z = 0 in 2D also), or a list of { x, y [, z] };
 * box coordinates as doubles in a Lua-owned buffer left on the stack. */
static double *parse_positions(lua_State *L, int idx, int dim, int64_t *N, const char *where,
                               const char *key)
{
    idx = lua_absindex(L, idx);
    carlo_array *a = carlo_array_test(L, idx);
    int64_t n;
    int cols;
    if (a) {
        n = a->shape[0];
        cols = (int)a->shape[1];
        if (a->ndim != 2 || (cols != 3 && cols != dim))
            carlo_lua_fail(L, "%s: %s must be an N x %d array%s (got %s %lld x %lld)", where, key, dim,
                           dim == 2 ? " (or N x 3 with z = 0)" : "", carlo_dtype_name(a->type),
                           (long long)a->shape[0], (long long)a->shape[1]);
    } else if (lua_type(L, idx) == LUA_TTABLE) {
        n = (int64_t)lua_rawlen(L, idx);
        cols = 3;
    } else {
        carlo_lua_fail(L, "%s: %s must be a carlo.array or a list of points (got a %s)", where, key,
                       luaL_typename(L, idx));
        return NULL;
    }
    if (n < 1 || n > HARD_N_MAX)
        carlo_lua_fail(L, "%s: %s must hold 1 to %lld particles (got %lld)", where, key,
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
                carlo_lua_fail(L, "%s: %s[%lld] must be a point { x, y%s } (got a %s)", where, key,
                               (long long)k + 1, dim == 3 ? ", z" : "", luaL_typename(L, -1));
            int m = (int)lua_rawlen(L, -1);
            if (m != dim && m != 3)
                carlo_lua_fail(L, "%s: %s[%lld] must have %d coordinates (got %d)", where, key,
                               (long long)k + 1, dim, m);
            for (int c = 0; c < m; c++) {
                lua_rawgeti(L, -1, c + 1);
                p[c] = lua_tonumber(L, -1);
                lua_pop(L, 1);
            }
            lua_pop(L, 1);
        }
        for (int c = 0; c < 3; c++)
            if (!isfinite(p[c]))
                carlo_lua_fail(L, "%s: %s[%lld] is not finite (coordinate %d is %g)", where, key,
                               (long long)k + 1, c + 1, p[c]);
        if (dim == 2 && p[2] != 0)
            carlo_lua_fail(L, "%s: %s[%lld] has z = %g; disks live in the plane z = 0", where, key,
                           (long long)k + 1, p[2]);
        memcpy(x + 3 * k, p, sizeof p);
    }
    *N = n;
    return x;
}

/* A renamed key: its value under the new name or, with a warning, the old one (not both).
 * Returns the name to read. */
static const char *renamed_key(lua_State *L, int idx, const char *where, const char *old,
                               const char *key)
{
    if (!carlo_arg_has(L, idx, old))
        return key;
    if (carlo_arg_has(L, idx, key))
        carlo_lua_fail(L, "%s: give %s, not both %s and %s", where, key, key, old);
    carlo_lua_renamed(where, old, key);
    return old;
}

/* ---------- constructors ---------- */

/* init = a snapshot { position =, box =, step =, N = } (at index snap): positions, box, N; the
 * positions buffer stays on the stack. Returns the snapshot's step. */
static lua_Integer snapshot_init(lua_State *L, int snap, int dim, const char *where, hard_params *p)
{
    static const char *const skeys[] = {"position", "box", "step", "N", "dimensions", NULL};
    carlo_args_allowed(L, snap, "init", skeys);
    if (lua_getfield(L, snap, "dimensions") != LUA_TNIL && lua_tointeger(L, -1) != dim)
        carlo_lua_fail(L, "%s: init holds a %lld-dimensional snapshot", where, (long long)lua_tointeger(L, -1));
    lua_pop(L, 1);
    if (lua_getfield(L, snap, "box") == LUA_TNIL)
        carlo_lua_fail(L, "%s: init.box is required (the snapshot's box)", where);
    p->box = parse_box(L, -1, dim, where, "init.box");
    lua_pop(L, 1);
    lua_getfield(L, snap, "position");
    int64_t n = 0;
    p->positions = parse_positions(L, -1, dim, &n, where, "position");
    lua_remove(L, -2); /* the buffer stays, the array goes */
    p->init = HARD_INIT_POSITIONS;
    p->N = n;
    int64_t sn = carlo_arg_has(L, snap, "N") ? carlo_arg_int(L, snap, where, "N", 1, 0, 1, HARD_N_MAX) : n;
    int64_t kn = carlo_arg_has(L, 1, "N") ? carlo_arg_int(L, 1, where, "N", 1, 0, 1, HARD_N_MAX) : n;
    if (sn != n || kn != n)
        carlo_lua_fail(L, "%s: N = %lld does not match the snapshot's %lld positions", where,
                       (long long)(sn != n ? sn : kn), (long long)n);
    /* the snapshot brings its box; phi or box given as well must describe the same one (to
     * the grid's rounding of the box, a relative 1e-7) */
    const double phi_snap = hard_phi_of(dim, n, &p->box);
    if (carlo_arg_has(L, 1, "phi")) {
        double phi = carlo_arg_num(L, 1, where, "phi", 1, 0, 0, 0, hard_close_packing(dim), 0);
        if (fabs(phi - phi_snap) > 1e-6 * phi_snap)
            carlo_lua_fail(L, "%s: phi = %.9g does not match the snapshot's packing fraction %.9g (the "
                              "snapshot brings its box)", where, phi, phi_snap);
    }
    if (carlo_arg_has(L, 1, "box")) {
        lua_getfield(L, 1, "box");
        carlo_box b = parse_box(L, -1, dim, where, "box");
        lua_pop(L, 1);
        for (int a = 0; a < dim; a++)
            if (fabs(b.L[a] - p->box.L[a]) > 1e-6 * p->box.L[a])
                carlo_lua_fail(L, "%s: box side %d = %.9g does not match the snapshot's %.9g (the snapshot "
                                  "brings its box)", where, a + 1, b.L[a], p->box.L[a]);
        if (b.xy != p->box.xy || b.xz != p->box.xz || b.yz != p->box.yz)
            carlo_lua_fail(L, "%s: box tilts %.9g, %.9g, %.9g do not match the snapshot's %.9g, %.9g, %.9g (the "
                              "snapshot brings its box)", where, b.xy, b.xz, b.yz, p->box.xy, p->box.xz, p->box.yz);
    }
    lua_Integer step = 0; /* a snapshot's step carries on (trajectories continue their numbering) */
    if (lua_getfield(L, snap, "step") != LUA_TNIL) {
        step = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : -1;
        if (step < 0)
            carlo_lua_fail(L, "%s: init.step must be an integer >= 0 (got %s)", where, luaL_tolstring(L, -1, NULL));
    }
    lua_pop(L, 1);
    return step;
}

/* phi or box, with N, for a random or lattice start. */
static void sized_init(lua_State *L, int dim, int lattice, const char *where, hard_params *p)
{
    double cp = hard_close_packing(dim);
    p->init = lattice ? HARD_INIT_LATTICE : HARD_INIT_RANDOM;
    p->N = carlo_arg_int(L, 1, where, "N", 1, 0, 1, HARD_N_MAX);
    int has_phi = carlo_arg_has(L, 1, "phi"), has_box = carlo_arg_has(L, 1, "box");
    if (has_phi == has_box)
        carlo_lua_fail(L, "%s: give exactly one of phi (packing fraction in (0, %.9f)) and box", where, cp);
    if (has_box) {
        lua_getfield(L, 1, "box");
        p->box = parse_box(L, -1, dim, where, "box");
        lua_pop(L, 1);
        double phi = hard_phi_of(dim, p->N, &p->box);
        if (!(phi < cp))
            carlo_lua_fail(L, "%s: N = %lld in this box packs phi = %.9g, at or above close packing %.9g",
                           where, (long long)p->N, phi, cp);
        return;
    }
    double phi = carlo_arg_num(L, 1, where, "phi", 1, 0, 0, 0, cp, 0);
    if (lattice) {
        if (hard_lattice_box(dim, p->N, phi, &p->box))
            carlo_lua_fail(L, "%s: %s", where, carlo_errmsg());
        return;
    }
    double side = pow((double)p->N * hard_particle_volume(dim) / phi, 1.0 / dim);
    double L3[3] = {side, side, side};
    p->box = carlo_box_make(dim, L3);
}

static int construct(lua_State *L, int dim)
{
    const char *where = dim == 2 ? "carlo.hard_disks" : "carlo.hard_spheres";
    static const char *const keys[] = {"N", "phi", "box", "seed", "init", "device", "delta",
                                       "moves_per_cell", "shuffle", "cell_width", "pressure",
                                       "dlnV", "quiet", "d", "moves", "volume_moves", "lambda",
                                       "sites", "decompose", NULL};
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    carlo_args_allowed(L, 1, where, keys);
    hard_params p;
    memset(&p, 0, sizeof p);
    p.dim = dim;
    p.delta = carlo_arg_num(L, 1, where, renamed_key(L, 1, where, "d", "delta"), 0, 0.16, 0, 0, 2, 1);
    p.moves_per_cell = (int)carlo_arg_int(L, 1, where, renamed_key(L, 1, where, "moves", "moves_per_cell"),
                                          0, 4, 1, 4096);
    p.shuffle = carlo_arg_bool(L, 1, where, "shuffle", 1);
    p.quiet = carlo_arg_bool(L, 1, where, "quiet", 0);
    p.w_pref = carlo_arg_num(L, 1, where, "cell_width", 0, 0, 1, 1,
                             dim == 2 ? HARD_WMAX_2D : HARD_WMAX_3D, 0);
    p.pressure = carlo_arg_num(L, 1, where, "pressure", 0, 0, 0, 0, INFINITY, 0);
    p.dlnV = carlo_arg_num(L, 1, where, "dlnV", 0, 0, 0, 0, 1, 1);
    const int volume_moves = (int)carlo_arg_int(L, 1, where, "volume_moves", 0, 1, 1, 1024);
    const double lambda = carlo_arg_num(L, 1, where, "lambda", 0, 0, 0, 1, INFINITY, 0);
    if (lambda > 0 && p.pressure > 0)
        carlo_lua_fail(L, "%s: lambda (the tether) runs in NVT only: give no pressure with it", where);
    const char *inits[] = {"random", dim == 2 ? "hex" : "fcc", NULL};
    int init = carlo_lua_init_arg(L, 1, where, NULL, "random", inits, 1);
    lua_Integer step = 0;
    if (init < 0)
        step = snapshot_init(L, lua_gettop(L), dim, where, &p); /* positions stay on the stack */
    else
        sized_init(L, dim, init == 1, where, &p);
    p.seed = carlo_arg_seed(L, 1, where);
    carlo_arg_enum(L, 1, where, "device", carlo_device_default(), DEVICES);
    p.device = carlo_lua_device(L, where, carlo_arg_str(L, 1, where, "device", 0));
    const int split = carlo_arg_decompose(L, 1, where); /* cell layers over the MPI ranks */
    const double *sites = NULL;
    if (lua_getfield(L, 1, "sites") != LUA_TNIL) {
        int64_t ns;
        sites = parse_positions(L, -1, dim, &ns, where, "sites"); /* stays on the stack */
        if (ns != p.N)
            carlo_lua_fail(L, "%s: sites must list one site per particle, %lld (got %lld)", where,
                           (long long)p.N, (long long)ns);
    } else {
        lua_pop(L, 1);
    }
    hard_system *s = hard_create(&p);
    if (!s)
        return carlo_raise(L, where);
    s->step = (uint64_t)step;
    s->volume_moves = volume_moves;
    if ((sites && hard_set_sites(s, sites)) || (lambda > 0 && hard_set_lambda(s, lambda)) ||
        (split && hard_split_on(s, split == 2))) {
        hard_destroy(s);
        return carlo_raise(L, where);
    }
    carlo_lua_push_system(L, &hard_lua_model, &s->sys);
    return 1;
}

static int l_hard_disks(lua_State *L) { return construct(L, 2); }
static int l_hard_spheres(lua_State *L) { return construct(L, 3); }

/* ---------- steps ---------- */

/* sys:sweep(): the sets in shuffled order, a cell shift, and a volume move in NPT */
static int l_sweep(lua_State *L)
{
    if (hard_sweep(check(L, 1)))
        return carlo_raise(L, "hard:sweep");
    return 0;
}

static int substep(lua_State *L, const char *where)
{
    hard_system *s = check(L, 1);
    lua_Integer set = luaL_checkinteger(L, 2);
    if (set < 0 || set >= (1 << s->dim))
        return luaL_error(L, "%s: the set must be from 0 to %d (got %I)", where, (1 << s->dim) - 1,
                          set);
    if (hard_subsweep(s, (int)set))
        return carlo_raise(L, where);
    return 0;
}

/* sys:substep(set): one checkerboard set, 0 .. 2^dim - 1 (bit a: the parity along axis a) */
static int l_substep(lua_State *L)
{
    return substep(L, "hard:substep");
}

static int l_subsweep(lua_State *L)
{
    carlo_lua_renamed("hard", "subsweep", "substep");
    return substep(L, "hard:subsweep");
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
        return luaL_error(L, "hard:volume_move: set sys.pressure first (volume moves sample NPT)");
    uint64_t before = s->counts.volume_accepted;
    if (hard_volume_move(s))
        return carlo_raise(L, "hard:volume_move");
    lua_pushboolean(L, s->counts.volume_accepted > before);
    return 1;
}

/* sys:set_sites([positions]): the tether's sites (N x d, box coordinates), the positions now
 * when none are given; translated so that the reference particle (1, tag 0) is on its site. */
static int l_set_sites(lua_State *L)
{
    hard_system *s = check(L, 1);
    const double *x = NULL;
    if (!lua_isnoneornil(L, 2)) {
        int64_t n;
        x = parse_positions(L, 2, s->dim, &n, "hard:set_sites", "sites");
        if (n != s->N)
            return carlo_lua_fail(L, "hard:set_sites: sites must list one site per particle, %lld (got %lld)",
                                  (long long)s->N, (long long)n);
    }
    if (hard_set_sites(s, x))
        return carlo_raise(L, "hard:set_sites");
    return 0;
}

/* sys:widom(n) -> { p_insert =, mu_ex =, free =, n = }: n test insertions into the
 * configuration now (free-volume estimator, beta mu_ex = -ln P_insert). */
static int l_widom(lua_State *L)
{
    hard_system *s = check(L, 1);
    lua_Integer n = luaL_checkinteger(L, 2);
    if (n < 1 || n > (lua_Integer)UINT32_MAX)
        return carlo_lua_fail(L, "hard:widom: n must be an integer from 1 to %u (got %lld)", (unsigned)UINT32_MAX,
                              (long long)n);
    uint64_t hits;
    if (hard_insert_test(s, (uint64_t)n, &hits))
        return carlo_raise(L, "hard:widom");
    const double p = (double)hits / (double)n;
    lua_createtable(L, 0, 4);
    carlo_lua_setnum(L, "p_insert", p);
    carlo_lua_setnum(L, "mu_ex", -log(p));
    carlo_lua_setint(L, "free", (long long)hits);
    carlo_lua_setint(L, "n", (long long)n);
    return 1;
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

/* The words for a tuning target that was not reached (stderr). */
static void tune_report(const char *what, const char *size, double value, double acc,
                        double target, int capped, int rounds)
{
    if (capped > 0)
        fprintf(stderr, "carlo: hard:tune: the %s acceptance %.3f stays above the target %.3f at "
                        "the largest %s = %g (a dilute system); %s stays there\n",
                what, acc, target, size, value, size);
    else if (capped < 0)
        fprintf(stderr, "carlo: hard:tune: the %s acceptance %.3f stays below the target %.3f at "
                        "the smallest %s = %g (a jammed system); %s stays there\n",
                what, acc, target, size, value, size);
    else
        fprintf(stderr, "carlo: hard:tune: the %s acceptance %.3f after %d rounds is not yet the "
                        "target %.3f (%s = %g); give more rounds or sweeps\n",
                what, acc, rounds, target, size, value);
}

/* sys:tune{ target = 0.2, volume_target = 0.3, rounds = 20, sweeps = 100, quiet = }
 *   -> { delta =, acceptance =, target =, reached = [, dlnV =, volume_acceptance =,
 *        volume_target =, volume_reached = ] } */
static int l_tune(lua_State *L)
{
    static const char *const keys[] = {"target", "volume_target", "rounds", "sweeps", "quiet", NULL};
    const char *where = "hard:tune";
    hard_system *s = check(L, 1);
    carlo_lua_optional_table(L, 2);
    carlo_args_allowed(L, 2, where, keys);
    double target = carlo_arg_num(L, 2, where, "target", 0, 0.2, 0, 0, 1, 0);
    double vt = carlo_arg_num(L, 2, where, "volume_target", 0, 0.3, 0, 0, 1, 0);
    int rounds = (int)carlo_arg_int(L, 2, where, "rounds", 0, 20, 1, 100000);
    uint64_t sweeps = (uint64_t)carlo_arg_int(L, 2, where, "sweeps", 0, 100, 1, (int64_t)1 << 40);
    int quiet = carlo_arg_bool(L, 2, where, "quiet", 0) || carlo_quiet;
    hard_tune_result r;
    if (hard_tune(s, target, vt, rounds, sweeps, &r))
        return carlo_raise(L, where);
    if (!quiet && !r.reached)
        tune_report("translation", "delta", (double)s->mv.delta, r.acceptance, target, r.capped, rounds);
    if (!quiet && !r.volume_reached)
        tune_report("volume", "dlnV", s->dlnV, r.volume_acceptance, vt, r.volume_capped, rounds);
    lua_createtable(L, 0, 8);
    carlo_lua_setnum(L, "delta", (double)s->mv.delta);
    carlo_lua_setnum(L, "acceptance", r.acceptance);
    carlo_lua_setnum(L, "target", target);
    lua_pushboolean(L, r.reached && r.volume_reached);
    lua_setfield(L, -2, "reached");
    if (s->npt) {
        carlo_lua_setnum(L, "dlnV", s->dlnV);
        carlo_lua_setnum(L, "volume_acceptance", r.volume_acceptance);
        carlo_lua_setnum(L, "volume_target", vt);
    }
    return 1;
}

/* ---------- the model's own observations ---------- */

/* sys:steinhardt{ rc = 1.2 (sqrt 2 / rho)^(1/3) } -> { Q4 =, Q6 =, rc = } (spheres): the
 * global bond order of the centres (core/steinhardt.h) */
static int steinhardt_of(void *s, double rc, double *q4, double *q6)
{
    return hard_steinhardt((hard_system *)s, rc, q4, q6);
}

static int l_steinhardt(lua_State *L)
{
    hard_system *s = check(L, 1);
    return carlo_lua_steinhardt(L, "hard:steinhardt", "the bond order of spheres", s->dim, s->N, &s->box,
                                steinhardt_of, s);
}

/* sys:psi6{ rc = 1.4, values = false } -> { global =, local =, values = array N x 2 } */
static int l_psi6(lua_State *L)
{
    static const char *const keys[] = {"rc", "values", NULL};
    const char *where = "hard:psi6";
    hard_system *s = check(L, 1);
    carlo_lua_optional_table(L, 2);
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
    carlo_lua_setnum(L, "global", g);
    carlo_lua_setnum(L, "local", loc);
    if (values) {
        lua_pushvalue(L, -2);
        lua_setfield(L, -2, "values");
    }
    return 1;
}

/* sys:overlaps([max = 100]) -> count, { {i, j}, ... } (1-based particle indices) */
static int l_overlaps(lua_State *L)
{
    hard_system *s = check(L, 1);
    lua_Integer max = luaL_optinteger(L, 2, 100);
    if (max < 0 || max > 1 << 24)
        return luaL_error(L, "hard:overlaps: max must be from 0 to %d (got %I)", 1 << 24, max);
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

/* ---------- launch shapes: benchmarks only ---------- */

static void push_launch(lua_State *L, const hard_launch *la)
{
    lua_createtable(L, 0, 4);
    lua_createtable(L, 2, 0);
    for (int i = 0; i < 2; i++) {
        lua_pushinteger(L, la->block[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "block");
    lua_pushstring(L, la->variant ? "registers" : "memory");
    lua_setfield(L, -2, "variant");
    lua_pushboolean(L, la->gather);
    lua_setfield(L, -2, "gather");
    carlo_lua_setint(L, "team", la->team);
}

/* sys:launch([{ block = { x, y }, variant = "registers" | "memory", gather =, team = }]) -> the
 * launch now. For benchmarks only: every launch makes the same decisions (the chain never
 * changes), and the defaults are the fastest measured. */
static int l_launch(lua_State *L)
{
    static const char *const keys[] = {"block", "variant", "gather", "team", NULL};
    static const char *const variants[] = {"memory", "registers", NULL};
    const char *where = "hard:launch";
    hard_system *s = check(L, 1);
    const int given = !lua_isnoneornil(L, 2);
    carlo_lua_optional_table(L, 2);
    carlo_args_allowed(L, 2, where, keys);
    hard_launch la = s->launch;
    if (carlo_arg_has(L, 2, "variant"))
        la.variant = carlo_arg_enum(L, 2, where, "variant", NULL, variants);
    la.gather = carlo_arg_bool(L, 2, where, "gather", la.gather);
    la.team = (int)carlo_arg_int(L, 2, where, "team", 0, la.team, 1, 8);
    if (la.team != 1 && la.team != 2 && la.team != 4 && la.team != 8)
        return luaL_error(L, "%s: team must be 1, 2, 4 or 8 (GPU lanes per active cell; got %d)",
                          where, la.team);
    if (lua_getfield(L, 2, "block") != LUA_TNIL) {
        /* the one-thread kernel's block: whole warps, within its launch bounds */
        int limit = s->dim == 2 ? 1024 : 256;
        lua_Integer b[2] = {0, 0};
        if (lua_type(L, -1) == LUA_TTABLE && lua_rawlen(L, -1) == 2)
            for (int i = 0; i < 2; i++) {
                lua_rawgeti(L, -1, i + 1);
                b[i] = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
                lua_pop(L, 1);
            }
        if (b[0] < 1 || b[1] < 1 || b[0] * b[1] > limit || (b[0] * b[1]) % 32)
            return luaL_error(L, "%s: block must be { x, y } with x y a multiple of 32 up to %d "
                                 "(got { %I, %I })", where, limit, b[0], b[1]);
        la.block[0] = (int)b[0];
        la.block[1] = (int)b[1];
    }
    lua_pop(L, 1);
    if (given)
        s->tuner.fixed = 1; /* chosen by hand: the tuner leaves it */
    s->launch = la;
    push_launch(L, &s->launch);
    return 1;
}

/* ---------- the system layer's Lua face ---------- */

static const char *const LAUNCH_FIELDS[] = {"block", "variant", "gather", "team", NULL};

static int is_launch_field(const char *k)
{
    for (int i = 0; LAUNCH_FIELDS[i]; i++)
        if (strcmp(k, LAUNCH_FIELDS[i]) == 0)
            return 1;
    return 0;
}

static void describe(lua_State *L, carlo_sys *c)
{
    hard_system *s = (hard_system *)c;
    char buf[160];
    if (s->npt)
        snprintf(buf, sizeof buf, "%s, N = %lld, phi = %.6f, NPT at pressure = %.9g",
                 s->dim == 2 ? "disks" : "spheres", (long long)s->N, hard_phi(s), s->pressure);
    else if (s->lambda > 0)
        snprintf(buf, sizeof buf, "%s, N = %lld, phi = %.6f, NVT, tether lambda = %.9g",
                 s->dim == 2 ? "disks" : "spheres", (long long)s->N, hard_phi(s), s->lambda);
    else
        snprintf(buf, sizeof buf, "%s, N = %lld, phi = %.6f, NVT", s->dim == 2 ? "disks" : "spheres",
                 (long long)s->N, hard_phi(s));
    lua_pushstring(L, buf);
}

static void push_cells(lua_State *L, const hard_system *s)
{
    lua_createtable(L, 0, 5);
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
    lua_createtable(L, s->dim, 0); /* where cell 0 starts: the cell shifts move it */
    for (int a = 0; a < s->dim; a++) {
        lua_pushnumber(L, s->origin[a]);
        lua_rawseti(L, -2, a + 1);
    }
    lua_setfield(L, -2, "origin");
    carlo_lua_setint(L, "nmax", s->grid.nmax);
    carlo_lua_setint(L, "count", s->grid.ncells);
}

/* A split system's own layers { first, last } (counted from 1), or nil. */
static void push_layers(lua_State *L, const hard_system *s)
{
    if (!s->split) {
        lua_pushnil(L);
        return;
    }
    lua_createtable(L, 2, 0);
    lua_pushinteger(L, s->split->lo + 1);
    lua_rawseti(L, -2, 1);
    lua_pushinteger(L, s->split->hi);
    lua_rawseti(L, -2, 2);
}

/* The tether's sites as an N x d array, or nil when none were set. */
static void push_sites(lua_State *L, const hard_system *s)
{
    if (!s->sites) {
        lua_pushnil(L);
        return;
    }
    carlo_array *a = carlo_array_push(L, CARLO_F64, s->N, s->dim);
    double *out = (double *)a->data;
    for (int64_t k = 0; k < s->N; k++)
        for (int d = 0; d < s->dim; d++)
            out[k * s->dim + d] = s->sites[3 * k + d];
}

static int index_field(lua_State *L, carlo_sys *c, const char *k)
{
    hard_system *s = (hard_system *)c;
    if (strcmp(k, "N") == 0)
        lua_pushinteger(L, (lua_Integer)s->N);
    else if (strcmp(k, "dim") == 0)
        lua_pushinteger(L, s->dim);
    else if (strcmp(k, "phi") == 0)
        lua_pushnumber(L, hard_phi(s));
    else if (strcmp(k, "rho") == 0)
        lua_pushnumber(L, (double)s->N / carlo_box_volume(&s->box));
    else if (strcmp(k, "volume") == 0)
        lua_pushnumber(L, carlo_box_volume(&s->box));
    else if (strcmp(k, "box") == 0)
        carlo_lua_push_box(L, &s->box);
    else if (strcmp(k, "delta") == 0)
        lua_pushnumber(L, (double)s->mv.delta);
    else if (strcmp(k, "moves_per_cell") == 0)
        lua_pushinteger(L, s->mv.moves);
    else if (strcmp(k, "shuffle") == 0)
        lua_pushboolean(L, s->mv.shuffle);
    else if (strcmp(k, "dlnV") == 0)
        lua_pushnumber(L, s->dlnV);
    else if (strcmp(k, "npt") == 0)
        lua_pushboolean(L, s->npt);
    else if (strcmp(k, "volume_moves") == 0)
        lua_pushinteger(L, s->volume_moves);
    else if (strcmp(k, "sites") == 0)
        push_sites(L, s);
    else if (strcmp(k, "pressure") == 0) /* an NVT system's; an NPT one's is its control */
        lua_pushnil(L);
    else if (strcmp(k, "cells") == 0)
        push_cells(L, s);
    else if (strcmp(k, "decomposed") == 0)
        lua_pushboolean(L, s->split != NULL);
    else if (strcmp(k, "frozen_edges") == 0) /* decompose = "frozen" */
        lua_pushboolean(L, s->split && s->split->frozen);
    else if (strcmp(k, "layers") == 0) /* this rank's cell layers along y (disks) or z, 1-based */
        push_layers(L, s);
    else if (is_launch_field(k))
        return luaL_error(L, "hard: '%s' is a launch choice now: sys:launch().%s (benchmarks only; "
                             "it never changes the chain)", k, k);
    else
        return 0;
    return 1;
}

/* sys.delta, moves_per_cell, shuffle, dlnV; sys.pressure = p makes an NVT system NPT (an NPT
 * system's pressure is its control), sys.pressure = nil makes it NVT. */
static int newindex_field(lua_State *L, carlo_sys *c, const char *k, int v)
{
    hard_system *s = (hard_system *)c;
    int isnum;
    double x = lua_tonumberx(L, v, &isnum);
    if (strcmp(k, "delta") == 0) {
        if (!isnum || !(x > 0) || x > 2)
            return carlo_lua_fail(L, "hard: delta must be a number in (0, 2] (got %s)", luaL_tolstring(L, v, NULL));
        s->mv.delta = (float)x;
    } else if (strcmp(k, "moves_per_cell") == 0) {
        if (!lua_isinteger(L, v) || x < 1 || x > 4096)
            return carlo_lua_fail(L, "hard: moves_per_cell must be an integer from 1 to 4096 (got %s)",
                                  luaL_tolstring(L, v, NULL));
        s->mv.moves = (int)x;
    } else if (strcmp(k, "shuffle") == 0) {
        if (!lua_isboolean(L, v))
            return carlo_lua_fail(L, "hard: shuffle must be true or false (got %s)", luaL_tolstring(L, v, NULL));
        s->mv.shuffle = lua_toboolean(L, v);
    } else if (strcmp(k, "volume_moves") == 0) {
        if (!lua_isinteger(L, v) || hard_set_volume_moves(s, (int)(x < 0 ? 0 : x > 4096 ? 4096 : x)))
            return carlo_lua_fail(L, "hard: volume_moves must be an integer from 1 to 1024 (got %s)",
                                  luaL_tolstring(L, v, NULL));
    } else if (strcmp(k, "dlnV") == 0) {
        if (!isnum || !(x > 0) || x > 1)
            return carlo_lua_fail(L, "hard: dlnV must be a number in (0, 1] (got %s)", luaL_tolstring(L, v, NULL));
        s->dlnV = x;
    } else if (strcmp(k, "pressure") == 0 && (lua_isnil(L, v) || !s->npt)) {
        if (!lua_isnil(L, v) && (!isnum || !(x > 0) || !isfinite(x)))
            return carlo_lua_fail(L, "hard: pressure must be a number > 0 (beta P sigma^%d), or nil for NVT "
                                     "(got %s)", s->dim, luaL_tolstring(L, v, NULL));
        if (hard_set_pressure(s, lua_isnil(L, v) ? 0 : x))
            return carlo_raise(L, "hard");
    } else if (is_launch_field(k)) {
        return luaL_error(L, "hard: '%s' is a launch choice now: sys:launch{ %s = ... } (benchmarks "
                             "only; it never changes the chain)", k, k);
    } else {
        return 0;
    }
    return 1;
}

/* { position = f64 N x d, box = { Lx, Ly, Lz, xy, xz, yz }, step =, N = } */
static void snapshot(lua_State *L, carlo_sys *c, int replica)
{
    (void)replica;
    hard_system *s = (hard_system *)c;
    lua_createtable(L, 0, 4);
    double *x = (double *)lua_newuserdatauv(L, carlo_mulsize((size_t)s->N, 3 * sizeof(double)), 0);
    if (hard_positions(s, x))
        carlo_raise(L, "hard:snapshot");
    carlo_array *a = carlo_array_push(L, CARLO_F64, s->N, s->dim);
    double *out = (double *)a->data;
    for (int64_t k = 0; k < s->N; k++)
        for (int d = 0; d < s->dim; d++)
            out[k * s->dim + d] = x[3 * k + d];
    lua_setfield(L, -3, "position");
    lua_pop(L, 1);
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
    o->label = ((hard_system *)c)->dim == 2 ? "hard disks" : "hard spheres";
}

static const char *const observe_keys[] = {"pressure", "psi6", "rc", "gr", "sdf", "widom", "steinhardt",
                                           NULL};

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

/* observe{ } and sample{ }: pressure = true, psi6 = false, rc = 1.4, gr = {...}, sdf = {...} */
static void observe_args(lua_State *L, int args, carlo_sys *c, void *opt, const char *where)
{
    hard_system *s = (hard_system *)c;
    hard_observe_opt *o = (hard_observe_opt *)opt;
    o->no_pressure = !carlo_arg_bool(L, args, where, "pressure", 1);
    o->psi6 = carlo_arg_bool(L, args, where, "psi6", 0);
    o->widom = (uint32_t)carlo_arg_int(L, args, where, "widom", 0, 0, 0, (lua_Integer)UINT32_MAX);
    if (o->psi6 && s->dim != 2)
        carlo_lua_fail(L, "%s: psi6 is the hexatic order of disks (this system holds spheres)", where);
    o->steinhardt = carlo_arg_bool(L, args, where, "steinhardt", 0);
    if (o->steinhardt && s->dim != 3)
        carlo_lua_fail(L, "%s: steinhardt (Q4, Q6) is the bond order of spheres (this system holds disks)", where);
    o->rc = carlo_arg_num(L, args, where, "rc", 0, 1.4, 0, 0, INFINITY, 0);
    double h[3];
    carlo_box_heights(&s->box, h); /* the widths between faces: L in an orthorhombic box */
    if (o->psi6 && o->rc > 0.5 * fmin(h[0], h[1]))
        carlo_lua_fail(L, "%s: rc must be below half the box's width, %g (got %g)", where, 0.5 * fmin(h[0], h[1]),
                       o->rc);
    hard_pressure_defaults(&o->pp);
    o->fit = carlo_arg_has(L, args, "gr") || carlo_arg_has(L, args, "sdf");
    parse_fit(L, args, where, "gr", &o->pp.gr_dr, &o->pp.gr_width, &o->pp.gr_degree, "dr", "width");
    parse_fit(L, args, where, "sdf", &o->pp.sdf_dx, &o->pp.sdf_xmax, &o->pp.sdf_degree, "dx", "xmax");
    hard_scan sc;
    if (o->fit && hard_scan_from(&o->pp, &sc))
        carlo_raise(L, where);
}

/* observe(): what the system is now besides its observables: counts since it was made, the
 * box and the move sizes. */
static void observe_extra(lua_State *L, carlo_sys *c, int replica, const double *values)
{
    (void)replica;
    (void)values;
    hard_system *s = (hard_system *)c;
    carlo_counts n;
    if (hard_counts_get(s, &n))
        carlo_raise(L, "hard:observe");
    carlo_lua_setint(L, "N", (long long)s->N);
    if (!s->npt) /* an NPT system's volume is one of its observables */
        carlo_lua_setnum(L, "volume", carlo_box_volume(&s->box));
    carlo_lua_push_box(L, &s->box);
    lua_setfield(L, -2, "box");
    carlo_lua_setnum(L, "delta", (double)s->mv.delta);
    carlo_lua_setnum(L, "dlnV", s->dlnV);
    carlo_lua_setint(L, "tried", (long long)n.tried);
    carlo_lua_setint(L, "accepted", (long long)n.accepted);
    carlo_lua_setint(L, "volume_tried", (long long)n.volume_tried);
    carlo_lua_setint(L, "volume_accepted", (long long)n.volume_accepted);
    if (n.tried)
        carlo_lua_setnum(L, "acceptance", (double)n.accepted / (double)n.tried);
    if (n.volume_tried)
        carlo_lua_setnum(L, "volume_acceptance", (double)n.volume_accepted / (double)n.volume_tried);
}

/* Seconds kept in hand for the checkpoint of a walltime-limited run: the cells at a
 * conservative 100 MB/s plus half a second. */
static double reserve(const carlo_sys *c)
{
    return 0.5 + (double)((const hard_system *)c)->N * 48.0 / 1e8;
}

static const char *const aliases[] = {"d", "delta", "moves", "moves_per_cell", "P", "pressure",
                                      "V", "volume", NULL};
static const char *const settable[] = {"delta", "moves_per_cell", "shuffle", "dlnV", "volume_moves",
                                       "pressure", NULL};

static const luaL_Reg methods[] = {
    {"sweep", l_sweep}, {"substep", l_substep}, {"subsweep", l_subsweep},
    {"shift_cells", l_shift_cells}, {"volume_move", l_volume_move}, {"compress", l_compress},
    {"tune", l_tune}, {"psi6", l_psi6}, {"steinhardt", l_steinhardt}, {"overlaps", l_overlaps}, {"verify", l_verify},
    {"launch", l_launch}, {"set_sites", l_set_sites}, {"widom", l_widom}, {NULL, NULL}};

const carlo_lua_model hard_lua_model = {
    .ops = &hard_ops_nvt,
    .metatable = "carlo.hard",
    .methods = methods,
    .index = index_field,
    .describe = describe,
    .snapshot = snapshot,
    .run_args = run_args,
    .observe_keys = observe_keys,
    .opt_size = sizeof(hard_observe_opt),
    .observe_args = observe_args,
    .observe_extra = observe_extra,
    .reserve = reserve,
    .aliases = aliases,
    .newindex = newindex_field,
    .settable = settable,
};

void hard_lua_open(lua_State *L)
{
    carlo_lua_model_register(L, &hard_lua_model);
    lua_pushcfunction(L, l_hard_disks);
    lua_setfield(L, -2, "hard_disks");
    lua_pushcfunction(L, l_hard_spheres);
    lua_setfield(L, -2, "hard_spheres");
}
