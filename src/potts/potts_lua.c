/* potts_lua.c — the Lua binding of the Potts model: carlo.potts{...} (one lattice) and
 * carlo.potts_ensemble{...} (R lattices at R temperatures), both the userdata "carlo.potts".
 * Arguments are checked here; the work is done through the backend table only. */
#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"
#include "core/array.h"
#include "core/error.h"
#include "core/png.h"
#include "core/progress.h"
#include "core/stats.h"
#include "core/system.h"
#include "potts/potts.h"
#include "potts/potts_lua.h"
#include "traj/checkpoint.h"
#include "traj/traj_lua.h"

#define POTTS_MT "carlo.potts"

typedef struct potts_ud {
    potts_system *s;
} potts_ud;

static const char *const ALGORITHMS[] = {"metropolis", "heatbath", NULL};
static const char *const STARTS[] = {"random", "ordered", NULL};
static const char *const DEVICES[] = {"auto", "cpu", "gpu", NULL};

static potts_system *check(lua_State *L, int idx)
{
    potts_ud *u = (potts_ud *)luaL_checkudata(L, idx, POTTS_MT);
    if (!u->s)
        luaL_error(L, "carlo.potts: this system was closed");
    return u->s;
}

static void push_system(lua_State *L, potts_system *s)
{
    potts_ud *u = (potts_ud *)lua_newuserdatauv(L, sizeof *u, 0);
    u->s = s;
    luaL_setmetatable(L, POTTS_MT);
}

/* ---------- constructors ---------- */

static int construct(lua_State *L, int ensemble)
{
    const char *where = ensemble ? "carlo.potts_ensemble" : "carlo.potts";
    static const char *const single_keys[] = {"L", "q", "T", "beta", "seed", "start", "device",
                                              "algorithm", NULL};
    static const char *const ensemble_keys[] = {"L", "q", "temperatures", "seed", "start",
                                                "device", "algorithm", NULL};
    luaL_checktype(L, 1, LUA_TTABLE);
    carlo_args_allowed(L, 1, where, ensemble ? ensemble_keys : single_keys);

    int64_t Lside = carlo_arg_int(L, 1, where, "L", 1, 0, 2, POTTS_L_MAX);
    if (Lside % 2)
        return luaL_error(L, "%s: L must be an even integer from 2 to %d (got %I)", where,
                          POTTS_L_MAX, (lua_Integer)Lside);
    int q = (int)carlo_arg_int(L, 1, where, "q", 1, 0, 2, POTTS_Q_MAX);

    int R = 1;
    double *beta = NULL;
    if (ensemble) {
        if (lua_getfield(L, 1, "temperatures") != LUA_TTABLE)
            return luaL_error(L, "%s: temperatures is required (a list of temperatures > 0)", where);
        R = (int)lua_rawlen(L, -1);
        if (R < 1 || R > 1 << 20)
            return luaL_error(L, "%s: temperatures must list 1 to %d temperatures (got %d)", where,
                              1 << 20, R);
        beta = (double *)lua_newuserdatauv(L, sizeof(double) * (size_t)R, 0); /* freed by the GC */
        int up = 0, down = 0;
        for (int k = 0; k < R; k++) {
            lua_rawgeti(L, -2, k + 1);
            int isnum;
            double T = lua_tonumberx(L, -1, &isnum);
            if (!isnum || !(T > 0) || !isfinite(T) || !isfinite(exp(4.0 / T)))
                return luaL_error(L, "%s: temperatures[%d] must be a number > 0 with exp(4/T) "
                                     "finite (T > 0.0057)", where, k + 1);
            lua_pop(L, 1);
            beta[k] = 1.0 / T;
            if (k > 0) {
                up += T > 1.0 / beta[k - 1];
                down += T < 1.0 / beta[k - 1];
            }
        }
        if (R > 1 && up != R - 1 && down != R - 1)
            return luaL_error(L, "%s: temperatures must be strictly increasing or strictly "
                                 "decreasing (neighbours in the list exchange)", where);
    } else {
        int hasT = carlo_arg_has(L, 1, "T"), hasB = carlo_arg_has(L, 1, "beta");
        if (hasT == hasB)
            return luaL_error(L, "%s: give exactly one of T and beta (a number > 0)", where);
        beta = (double *)lua_newuserdatauv(L, sizeof(double), 0);
        if (hasT)
            beta[0] = 1.0 / carlo_arg_num(L, 1, where, "T", 1, 0, 1.0 / 177.0, 0, INFINITY, 0);
        else
            beta[0] = carlo_arg_num(L, 1, where, "beta", 1, 0, 0, 0, 177.0, 1);
    }
    int beta_idx = lua_gettop(L);
    uint64_t seed = carlo_arg_seed(L, 1, where);
    int start = carlo_arg_enum(L, 1, where, "start", "random", STARTS);
    int algorithm = carlo_arg_enum(L, 1, where, "algorithm", "metropolis", ALGORITHMS);
    carlo_arg_enum(L, 1, where, "device", carlo_device_default(), DEVICES);
    const char *device = carlo_arg_str(L, 1, where, "device", 0);
    carlo_device_kind kind = carlo_lua_device(L, where, device);

    potts_params p = {.L = (int)Lside, .q = q, .R = R, .algorithm = (potts_algorithm)algorithm,
                      .device = kind, .seed = seed, .beta = beta};
    potts_system *s = potts_create(&p);
    if (!s)
        return carlo_raise(L, where);
    if (start == 0 ? potts_start_random(s) : potts_start_ordered(s)) {
        lua_pushfstring(L, "%s: %s", where, carlo_errmsg());
        potts_destroy(s);
        return lua_error(L);
    }
    lua_settop(L, beta_idx);
    push_system(L, s);
    return 1;
}

static int l_potts(lua_State *L) { return construct(L, 0); }
static int l_potts_ensemble(lua_State *L) { return construct(L, 1); }

/* ---------- running ---------- */

/* Seconds kept in hand for the checkpoint when a walltime is given: the lattices at a
 * conservative 100 MB/s plus half a second. */
static double checkpoint_reserve(const potts_system *s)
{
    return 0.5 + (double)s->L * (double)s->L * (double)s->R / 1e8;
}

static int write_frame(void *ctx, carlo_frame *f)
{
    return traj_sink_take((traj_sink *)ctx, f);
}

/* sys:run{ sweeps = n | upto = step, exchange_every =, walltime =, checkpoint =,
 *          every = m, trajectory = tr, quiet = } */
static int l_run(lua_State *L)
{
    static const char *const keys[] = {"sweeps", "upto", "exchange_every", "walltime",
                                       "checkpoint", "every", "trajectory", "quiet", NULL};
    const char *where = "potts:run";
    potts_system *s = check(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    carlo_args_allowed(L, 2, where, keys);
    int has_sweeps = carlo_arg_has(L, 2, "sweeps"), has_upto = carlo_arg_has(L, 2, "upto");
    if (has_sweeps == has_upto)
        return luaL_error(L, "%s: give exactly one of sweeps (how many) and upto (the step to reach)",
                          where);
    potts_run_opts o = {0};
    if (has_sweeps) {
        o.sweeps = (uint64_t)carlo_arg_int(L, 2, where, "sweeps", 1, 0, 0, (int64_t)1 << 47);
    } else {
        uint64_t upto = (uint64_t)carlo_arg_int(L, 2, where, "upto", 1, 0, 0, (int64_t)1 << 47);
        o.sweeps = upto > s->step ? upto - s->step : 0;
    }
    o.exchange_every = (uint64_t)carlo_arg_int(L, 2, where, "exchange_every", 0, 0, 1, (int64_t)1 << 40);
    o.walltime = carlo_arg_num(L, 2, where, "walltime", 0, 0, 0, 0, INFINITY, 0);
    o.quiet = carlo_arg_bool(L, 2, where, "quiet", 0);
    const char *ckpt = carlo_arg_str(L, 2, where, "checkpoint", 0);
    if (ckpt && o.walltime <= 0)
        return luaL_error(L, "%s: checkpoint goes with walltime (use sys:save(path) otherwise)", where);
    if (o.walltime > 0)
        o.reserve = ckpt ? checkpoint_reserve(s) : 0;
    traj_sink sink; /* a frame every `every` sweeps, written from C */
    o.every = traj_lua_sink(L, 2, 1, where, s->step, &sink);
    if (sink.tr) {
        o.write = write_frame;
        o.ctx = &sink;
    }
    potts_run_result res;
    if (potts_run_ex(s, &o, &res))
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

static int l_sweep_color(lua_State *L)
{
    potts_system *s = check(L, 1);
    lua_Integer c = luaL_checkinteger(L, 2);
    if (c != 0 && c != 1)
        return luaL_error(L, "potts:sweep_color: the colour must be 0 or 1 (got %I)", c);
    if (potts_sweep_color(s, (int)c))
        return carlo_raise(L, "potts:sweep_color");
    return 0;
}

/* sys:sync(): wait until the queued sweeps have run (for timing; errors surface here). */
static int l_sync(lua_State *L)
{
    potts_system *s = check(L, 1);
    if (s->be->sync(s))
        return carlo_raise(L, "potts:sync");
    return 0;
}

static int l_exchange(lua_State *L)
{
    potts_system *s = check(L, 1);
    if (potts_exchange(s))
        return carlo_raise(L, "potts:exchange");
    return 0;
}

/* ---------- observing ---------- */

static void push_obs(lua_State *L, const potts_system *s, const potts_obs *o, int k)
{
    lua_createtable(L, 0, 6);
    lua_pushnumber(L, o->e);
    lua_setfield(L, -2, "e");
    lua_pushnumber(L, o->m);
    lua_setfield(L, -2, "m");
    lua_pushinteger(L, o->equal_bonds);
    lua_setfield(L, -2, "equal_bonds");
    lua_pushinteger(L, o->nmax);
    lua_setfield(L, -2, "nmax");
    lua_pushnumber(L, s->temperatures[k]);
    lua_setfield(L, -2, "T");
    lua_pushinteger(L, (lua_Integer)s->step);
    lua_setfield(L, -2, "step");
}

/* Observations indexed by temperature (k), not by replica. */
static potts_obs *observe_all(lua_State *L, potts_system *s, const char *where)
{
    potts_obs *o = (potts_obs *)lua_newuserdatauv(L, sizeof *o * (size_t)s->R, 0);
    if (potts_observe(s, o))
        carlo_raise(L, where);
    return o;
}

static int l_observe(lua_State *L)
{
    potts_system *s = check(L, 1);
    potts_obs *o = observe_all(L, s, "potts:observe");
    if (s->R == 1) {
        push_obs(L, s, &o[0], 0);
        return 1;
    }
    lua_createtable(L, s->R, 0);
    for (int k = 0; k < s->R; k++) {
        push_obs(L, s, &o[s->slot[k]], k);
        lua_rawseti(L, -2, k + 1);
    }
    return 1;
}

static void push_estimate(lua_State *L, const char *name, double mean, double err, double tau,
                          int plateau)
{
    lua_createtable(L, 0, 4);
    lua_pushnumber(L, mean);
    lua_setfield(L, -2, "mean");
    lua_pushnumber(L, err);
    lua_setfield(L, -2, "err");
    lua_pushnumber(L, tau);
    lua_setfield(L, -2, "tau");
    lua_pushboolean(L, plateau);
    lua_setfield(L, -2, "plateau");
    lua_setfield(L, -2, name);
}

typedef struct derived_ctx {
    double N, beta;
} derived_ctx;

/* means[] = <e>, <e^2>, <e^4>, <m>, <m^2> */
static double f_C(const double *mu, void *c)
{
    derived_ctx *d = c;
    return d->N * d->beta * d->beta * (mu[1] - mu[0] * mu[0]);
}
static double f_chi(const double *mu, void *c)
{
    derived_ctx *d = c;
    return d->N * d->beta * (mu[4] - mu[3] * mu[3]);
}
static double f_V(const double *mu, void *c)
{
    (void)c;
    return 1.0 - mu[2] / (3.0 * mu[1] * mu[1]);
}

static void push_sample(lua_State *L, const potts_system *s, int k, double *const ser[5],
                        size_t n, uint64_t every, int want_series)
{
    static const char *const names[5] = {"e", "e2", "e4", "m", "m2"};
    lua_createtable(L, 0, 12);
    double T = s->temperatures[k];
    lua_pushnumber(L, T);
    lua_setfield(L, -2, "T");
    lua_pushinteger(L, (lua_Integer)n);
    lua_setfield(L, -2, "samples");
    carlo_estimate est[5];
    size_t block = 1;
    for (int q = 0; q < 5; q++) {
        carlo_blocking(ser[q], n, &est[q]);
        push_estimate(L, names[q], est[q].mean, est[q].err, est[q].tau * (double)every,
                      est[q].plateau);
        if (est[q].block > block)
            block = est[q].block;
    }
    /* jackknife blocks longer than the longest blocking length seen, 8 to 64 of them */
    size_t nb = n / (2 * block);
    if (nb > 64) nb = 64;
    if (nb < 8) nb = n < 8 ? n : 8;
    derived_ctx ctx = {(double)s->L * (double)s->L, 1.0 / T};
    const double *const *cs = (const double *const *)ser;
    double v, err;
    carlo_jackknife(cs, 5, n, nb, f_C, &ctx, &v, &err);
    push_estimate(L, "C", v, err, est[1].tau * (double)every, est[1].plateau);
    carlo_jackknife(cs, 5, n, nb, f_chi, &ctx, &v, &err);
    push_estimate(L, "chi", v, err, est[4].tau * (double)every, est[4].plateau);
    carlo_jackknife(cs, 5, n, nb, f_V, &ctx, &v, &err);
    push_estimate(L, "V", v, err, est[2].tau * (double)every, est[2].plateau);
    if (want_series) {
        lua_createtable(L, 0, 2);
        int pick[2] = {0, 3};
        for (int j = 0; j < 2; j++) {
            carlo_array *a = carlo_array_push(L, CARLO_F64, (int64_t)n, 0);
            memcpy(a->data, ser[pick[j]], n * sizeof(double));
            lua_setfield(L, -2, names[pick[j]]);
        }
        lua_setfield(L, -2, "series");
    }
}

/* sys:sample{ sweeps = n, every = k, exchange_every =, series = false, quiet = } */
static int l_sample(lua_State *L)
{
    static const char *const keys[] = {"sweeps", "every", "exchange_every", "series", "quiet", NULL};
    const char *where = "potts:sample";
    potts_system *s = check(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    carlo_args_allowed(L, 2, where, keys);
    uint64_t every = (uint64_t)carlo_arg_int(L, 2, where, "every", 0, 1, 1, (int64_t)1 << 40);
    uint64_t sweeps = (uint64_t)carlo_arg_int(L, 2, where, "sweeps", 1, 0, 1, (int64_t)1 << 47);
    if (sweeps % every || sweeps / every < 2)
        return luaL_error(L, "%s: sweeps must be a multiple of every giving at least 2 samples "
                             "(got sweeps = %I, every = %I)", where, (lua_Integer)sweeps,
                          (lua_Integer)every);
    size_t n = (size_t)(sweeps / every);
    potts_run_opts o = {0};
    o.sweeps = every;
    o.quiet = 1;
    o.exchange_every = (uint64_t)carlo_arg_int(L, 2, where, "exchange_every", 0, 0, 1, (int64_t)1 << 40);
    int want_series = carlo_arg_bool(L, 2, where, "series", 0);
    int quiet = carlo_arg_bool(L, 2, where, "quiet", 0);
    /* series[k][q][j]: temperature k, quantity q, sample j (a userdata, freed by the GC) */
    size_t per = carlo_mulsize(carlo_mulsize(n, 5), (size_t)s->R);
    double *buf = (double *)lua_newuserdatauv(L, carlo_mulsize(per, sizeof(double)), 0);
    potts_obs *obs = (potts_obs *)lua_newuserdatauv(L, sizeof *obs * (size_t)s->R, 0);
    carlo_progress pr;
    carlo_progress_start(&pr, "potts sample", "sweeps", (double)sweeps, quiet);
    for (size_t j = 0; j < n; j++) {
        potts_run_result res;
        if (potts_run_ex(s, &o, &res) || potts_observe(s, obs)) {
            carlo_progress_end(&pr);
            return carlo_raise(L, where);
        }
        for (int k = 0; k < s->R; k++) {
            const potts_obs *ob = &obs[s->slot[k]];
            double *b = buf + (size_t)k * 5 * n;
            double e2 = ob->e * ob->e;
            b[0 * n + j] = ob->e;
            b[1 * n + j] = e2;
            b[2 * n + j] = e2 * e2;
            b[3 * n + j] = ob->m;
            b[4 * n + j] = ob->m * ob->m;
        }
        carlo_progress_update(&pr, (double)((j + 1) * every));
    }
    carlo_progress_end(&pr);
    if (s->R == 1) {
        double *ser[5] = {buf, buf + n, buf + 2 * n, buf + 3 * n, buf + 4 * n};
        push_sample(L, s, 0, ser, n, every, want_series);
        return 1;
    }
    lua_createtable(L, s->R, 0);
    for (int k = 0; k < s->R; k++) {
        double *b = buf + (size_t)k * 5 * n;
        double *ser[5] = {b, b + n, b + 2 * n, b + 3 * n, b + 4 * n};
        push_sample(L, s, k, ser, n, every, want_series);
        lua_rawseti(L, -2, k + 1);
    }
    return 1;
}

/* Replica holding temperature index k (1-based argument, default 1). */
static int replica_arg(lua_State *L, potts_system *s, int idx, const char *where)
{
    lua_Integer k = luaL_optinteger(L, idx, 1);
    if (k < 1 || k > s->R)
        luaL_error(L, "%s: temperature index must be from 1 to %d (got %I)", where, s->R, k);
    return s->slot[k - 1];
}

/* sys:snapshot([k]) -> carlo.array u8 L x L, row-major, of temperature index k */
static int l_snapshot(lua_State *L)
{
    potts_system *s = check(L, 1);
    int r = replica_arg(L, s, 2, "potts:snapshot");
    carlo_array *a = carlo_array_push(L, CARLO_U8, s->L, s->L);
    if (s->be->get_lattice(s, r, (uint8_t *)a->data))
        return carlo_raise(L, "potts:snapshot");
    return 1;
}

/* sys:set_lattice(array [, k]): states 0..q-1, L x L row-major */
static int l_set_lattice(lua_State *L)
{
    potts_system *s = check(L, 1);
    carlo_array *a = carlo_array_check(L, 2);
    int r = replica_arg(L, s, 3, "potts:set_lattice");
    if (a->type != CARLO_U8 || a->n != (size_t)s->L * (size_t)s->L)
        return luaL_error(L, "potts:set_lattice: expected a u8 array of %d x %d states (got %s, %I "
                             "elements)", s->L, s->L, carlo_dtype_name(a->type), (lua_Integer)a->n);
    const uint8_t *v = (const uint8_t *)a->data;
    for (size_t i = 0; i < a->n; i++)
        if (v[i] >= s->q)
            return luaL_error(L, "potts:set_lattice: element %I is %d, states run from 0 to %d",
                              (lua_Integer)i + 1, v[i], s->q - 1);
    if (s->be->set_lattice(s, r, v))
        return carlo_raise(L, "potts:set_lattice");
    return 0;
}

/* sys:png(path [, { scale =, index = }]) */
static int l_png(lua_State *L)
{
    static const char *const keys[] = {"scale", "index", NULL};
    potts_system *s = check(L, 1);
    const char *path = luaL_checkstring(L, 2);
    int scale = 1, k = 1;
    if (!lua_isnoneornil(L, 3)) {
        carlo_args_allowed(L, 3, "potts:png", keys);
        scale = (int)carlo_arg_int(L, 3, "potts:png", "scale", 0, 1, 1, 64);
        k = (int)carlo_arg_int(L, 3, "potts:png", "index", 0, 1, 1, s->R);
    }
    size_t n = (size_t)s->L * (size_t)s->L;
    uint8_t *spins = (uint8_t *)lua_newuserdatauv(L, n, 0);
    if (s->be->get_lattice(s, s->slot[k - 1], spins) ||
        carlo_png_states(path, spins, s->L, s->L, s->q, scale))
        return carlo_raise(L, "potts:png");
    return 0;
}

static int l_save(lua_State *L)
{
    check(L, 1);
    traj_lua_save(L, 1, luaL_checkstring(L, 2), "potts:save");
    return 0;
}

/* sys:tempering() -> { acceptance = {...}, tried =, accepted =, round_trips = {...}, map = {...} } */
static int l_tempering(lua_State *L)
{
    potts_system *s = check(L, 1);
    lua_createtable(L, 0, 6);
    int pairs = s->R - 1;
    lua_createtable(L, pairs, 0);
    for (int k = 0; k < pairs; k++) {
        lua_pushnumber(L, s->swap_tried[k] ? (double)s->swap_accepted[k] / (double)s->swap_tried[k] : 0.0);
        lua_rawseti(L, -2, k + 1);
    }
    lua_setfield(L, -2, "acceptance");
    lua_createtable(L, pairs, 0);
    for (int k = 0; k < pairs; k++) {
        lua_pushinteger(L, (lua_Integer)s->swap_tried[k]);
        lua_rawseti(L, -2, k + 1);
    }
    lua_setfield(L, -2, "tried");
    lua_createtable(L, s->R, 0);
    for (int r = 0; r < s->R; r++) {
        lua_pushinteger(L, (lua_Integer)s->round_trips[r]);
        lua_rawseti(L, -2, r + 1);
    }
    lua_setfield(L, -2, "round_trips");
    lua_createtable(L, s->R, 0);
    for (int k = 0; k < s->R; k++) {
        lua_pushinteger(L, s->slot[k] + 1);
        lua_rawseti(L, -2, k + 1);
    }
    lua_setfield(L, -2, "map");
    lua_pushinteger(L, (lua_Integer)s->exchanges);
    lua_setfield(L, -2, "exchanges");
    return 1;
}

static int l_close(lua_State *L)
{
    potts_ud *u = (potts_ud *)luaL_checkudata(L, 1, POTTS_MT);
    potts_destroy(u->s);
    u->s = NULL;
    return 0;
}

static int l_tostring(lua_State *L)
{
    potts_ud *u = (potts_ud *)luaL_checkudata(L, 1, POTTS_MT);
    if (!u->s) {
        lua_pushliteral(L, "carlo.potts (closed)");
        return 1;
    }
    potts_system *s = u->s;
    if (s->R == 1)
        lua_pushfstring(L, "carlo.potts(L = %d, q = %d, T = %f, %s, step %I, %s)", s->L, s->q,
                        s->temperatures[0], ALGORITHMS[s->algorithm], (lua_Integer)s->step,
                        carlo_device_name(s->device));
    else
        lua_pushfstring(L, "carlo.potts_ensemble(L = %d, q = %d, %d temperatures, %s, step %I, %s)",
                        s->L, s->q, s->R, ALGORITHMS[s->algorithm], (lua_Integer)s->step,
                        carlo_device_name(s->device));
    return 1;
}

static int l_index(lua_State *L)
{
    potts_system *s = check(L, 1);
    const char *k = luaL_checkstring(L, 2);
    if (strcmp(k, "L") == 0) lua_pushinteger(L, s->L);
    else if (strcmp(k, "q") == 0) lua_pushinteger(L, s->q);
    else if (strcmp(k, "N") == 0) lua_pushinteger(L, (lua_Integer)s->L * s->L);
    else if (strcmp(k, "R") == 0) lua_pushinteger(L, s->R);
    else if (strcmp(k, "step") == 0) lua_pushinteger(L, (lua_Integer)s->step);
    else if (strcmp(k, "seed") == 0) lua_pushinteger(L, (lua_Integer)s->seed);
    else if (strcmp(k, "device") == 0) lua_pushstring(L, carlo_device_name(s->device));
    else if (strcmp(k, "algorithm") == 0) lua_pushstring(L, ALGORITHMS[s->algorithm]);
    else if (strcmp(k, "T") == 0 || strcmp(k, "beta") == 0) {
        if (s->R != 1)
            return luaL_error(L, "potts: an ensemble has sys.temperatures, not sys.%s", k);
        lua_pushnumber(L, k[0] == 'T' ? s->temperatures[0] : s->beta[0]);
    } else if (strcmp(k, "temperatures") == 0) {
        lua_createtable(L, s->R, 0);
        for (int i = 0; i < s->R; i++) {
            lua_pushnumber(L, s->temperatures[i]);
            lua_rawseti(L, -2, i + 1);
        }
    } else if (strcmp(k, "map") == 0) {
        lua_createtable(L, s->R, 0);
        for (int i = 0; i < s->R; i++) {
            lua_pushinteger(L, s->slot[i] + 1);
            lua_rawseti(L, -2, i + 1);
        }
    } else {
        luaL_getmetatable(L, POTTS_MT);
        lua_getfield(L, -1, "methods");
        if (lua_getfield(L, -1, k) == LUA_TNIL)
            return luaL_error(L, "potts: no field or method '%s'", k);
    }
    return 1;
}

static int l_newindex(lua_State *L)
{
    potts_system *s = check(L, 1);
    const char *k = luaL_checkstring(L, 2);
    if (strcmp(k, "T") == 0 || strcmp(k, "beta") == 0) {
        if (s->R != 1)
            return luaL_error(L, "potts: set the temperatures of an ensemble when creating it");
        int isnum;
        double v = lua_tonumberx(L, 3, &isnum);
        double beta = k[0] == 'T' ? 1.0 / v : v;
        if (!isnum || !(v > 0) || !isfinite(v) || potts_set_beta(s, 0, beta))
            return luaL_error(L, "potts: %s must be a number > 0 with exp(4 beta) finite (got %s)", k,
                              luaL_tolstring(L, 3, NULL));
        s->temperatures[0] = 1.0 / beta;
        return 0;
    }
    return luaL_error(L, "potts: field '%s' is read-only (settable: T, beta)", k);
}

/* carlo.reference.potts_sweep(spins, q, beta, seed, sweep): one sweep of the serial
 * random-site Metropolis reference on a u8 L x L array, in place (tests only). */
static int l_reference_sweep(lua_State *L)
{
    carlo_array *a = carlo_array_check(L, 1);
    lua_Integer q = luaL_checkinteger(L, 2);
    double beta = luaL_checknumber(L, 3);
    lua_Integer seed = luaL_checkinteger(L, 4), sweep = luaL_checkinteger(L, 5);
    if (a->type != CARLO_U8 || a->ndim != 2 || a->shape[0] != a->shape[1] || a->shape[0] % 2 ||
        q < 2 || q > POTTS_Q_MAX || !(beta > 0) || seed < 0 || sweep < 0)
        return luaL_error(L, "carlo.reference.potts_sweep: expects (u8 L x L array, q, beta, seed, sweep)");
    potts_serial_sweep((uint8_t *)a->data, (int)a->shape[0], (int)q, beta, (uint64_t)seed,
                       (uint64_t)sweep);
    return 0;
}

/* ---------- generic model interface ---------- */

static int model_frame(void *ud, carlo_frame *f)
{
    potts_system *s = ((potts_ud *)ud)->s;
    return s ? potts_frame(s, f) : carlo_seterr("potts: this system was closed");
}

static int model_checkpoint(void *ud, carlo_frame *f)
{
    potts_system *s = ((potts_ud *)ud)->s;
    return s ? potts_checkpoint(s, f) : carlo_seterr("potts: this system was closed");
}

static int restore_fail(lua_State *L, potts_system *s)
{
    lua_pushfstring(L, "carlo.load: potts checkpoint: %s", carlo_errmsg());
    potts_destroy(s);
    return lua_error(L);
}

static int model_restore(lua_State *L, const carlo_frame *f, const char *device)
{
    const int32_t *shape = carlo_frame_expect(f, "potts/shape", CARLO_I32, 4, 1);
    const uint64_t *seed = carlo_frame_expect(f, "carlo/seed", CARLO_U64, 1, 1);
    const uint64_t *step = carlo_frame_expect(f, "configuration/step", CARLO_U64, 1, 1);
    const uint64_t *half = carlo_frame_expect(f, "potts/halfstep", CARLO_U64, 1, 1);
    if (!shape || !seed || !step || !half)
        return luaL_error(L, "carlo.load: potts checkpoint: %s", carlo_errmsg());
    int R = shape[2];
    if (R < 1 || R > 1 << 20 || shape[3] < 0 || shape[3] > 1)
        return luaL_error(L, "carlo.load: potts checkpoint: bad shape");
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
        return luaL_error(L, "carlo.load: potts checkpoint: %s", carlo_errmsg());
    carlo_device_kind kind = carlo_lua_device(L, "carlo.load", device);
    potts_params p = {.L = shape[0], .q = shape[1], .R = R, .algorithm = (potts_algorithm)shape[3],
                      .device = kind, .seed = *seed, .beta = beta};
    potts_system *s = potts_create(&p);
    if (!s)
        return luaL_error(L, "carlo.load: potts checkpoint: %s", carlo_errmsg());
    size_t plane = (size_t)s->L * (size_t)s->L;
    for (size_t i = 0; i < plane * (size_t)R; i++)
        if (spins[i] >= s->q) {
            carlo_seterr("a state is out of range");
            return restore_fail(L, s);
        }
    for (int r = 0; r < R; r++) {
        if (slot[r] < 0 || slot[r] >= R || !(temps[r] > 0)) {
            carlo_seterr("bad tempering state");
            return restore_fail(L, s);
        }
        if (s->be->set_lattice(s, r, spins + (size_t)r * plane))
            return restore_fail(L, s);
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
    push_system(L, s);
    return 1;
}

static const carlo_model potts_model = {
    .name = "potts",
    .metatable = POTTS_MT,
    .frame = model_frame,
    .checkpoint = model_checkpoint,
    .restore = model_restore,
};

void potts_lua_open(lua_State *L)
{
    static const luaL_Reg meta[] = {
        {"__index", l_index}, {"__newindex", l_newindex}, {"__gc", l_close}, {"__close", l_close},
        {"__tostring", l_tostring}, {NULL, NULL}};
    static const luaL_Reg methods[] = {
        {"run", l_run}, {"sweep_color", l_sweep_color}, {"observe", l_observe},
        {"sample", l_sample}, {"snapshot", l_snapshot}, {"set_lattice", l_set_lattice},
        {"png", l_png}, {"save", l_save}, {"exchange", l_exchange}, {"tempering", l_tempering},
        {"sync", l_sync}, {"close", l_close}, {NULL, NULL}};
    if (luaL_newmetatable(L, POTTS_MT)) {
        luaL_setfuncs(L, meta, 0);
        luaL_newlib(L, methods);
        lua_setfield(L, -2, "methods");
    }
    lua_pop(L, 1);
    carlo_model_register(L, &potts_model);
    lua_pushcfunction(L, l_potts);
    lua_setfield(L, -2, "potts");
    lua_pushcfunction(L, l_potts_ensemble);
    lua_setfield(L, -2, "potts_ensemble");
    luaL_getsubtable(L, -1, "reference");
    lua_pushcfunction(L, l_reference_sweep);
    lua_setfield(L, -2, "potts_sweep");
    lua_pop(L, 1);
}
