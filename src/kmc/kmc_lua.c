/* kmc_lua.c — the Lua binding of lattice KMC: carlo.kmc{...}, the userdata "carlo.kmc".
 * A user model's rates function is called here, once per neighbourhood configuration, to
 * fill the table both backends read; the Lua state is never touched while a run works. */
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
#include "core/system.h"
#include "kmc/kmc.h"
#include "kmc/kmc_lua.h"
#include "traj/checkpoint.h"
#include "traj/traj_lua.h"

#define KMC_MT "carlo.kmc"
/* Defaults measured with scripts/bench.lua kmc variants (BENCHMARKS.md): on the GPU a tile
 * without events costs next to nothing, so a wider halo (longer steps) pays off where events
 * are rare; on the CPU every domain cell is work. */
#define KMC_HALO_DEFAULT_CPU 4
#define KMC_HALO_DEFAULT_GPU 5
#define KMC_TPB_DEFAULT 2

typedef struct kmc_ud {
    kmc_system *s;
} kmc_ud;

static const char *const ALGORITHMS[] = {"tiled", "serial", "bkl", NULL};
static const char *const DEVICES[] = {"auto", "cpu", "gpu", NULL};
static const char *const MODELS[] = {"sos_growth", NULL};

static kmc_system *check(lua_State *L, int idx)
{
    kmc_ud *u = (kmc_ud *)luaL_checkudata(L, idx, KMC_MT);
    if (!u->s)
        luaL_error(L, "carlo.kmc: this system was closed");
    return u->s;
}

static void push_system(lua_State *L, kmc_system *s)
{
    kmc_ud *u = (kmc_ud *)lua_newuserdatauv(L, sizeof *u, 0);
    u->s = s;
    luaL_setmetatable(L, KMC_MT);
}

/* ---------- tabulating a user model ---------- */

typedef struct growbuf {
    void *p;
    size_t cap, elem;
    int slot; /* stack slot of the userdata holding p (collected if an error unwinds) */
} growbuf;

static void grow_init(lua_State *L, growbuf *b, size_t elem, size_t cap)
{
    b->elem = elem;
    b->cap = cap;
    b->p = lua_newuserdatauv(L, elem * cap, 0);
    b->slot = lua_gettop(L);
}

static void *grow_at(lua_State *L, growbuf *b, size_t i)
{
    if (i >= b->cap) {
        size_t cap = b->cap * 2;
        void *p = lua_newuserdatauv(L, b->elem * cap, 0);
        memcpy(p, b->p, b->elem * b->cap);
        lua_replace(L, b->slot);
        b->p = p;
        b->cap = cap;
    }
    return (char *)b->p + i * b->elem;
}

static const char *config_text(lua_State *L, const int32_t *v, int nbh)
{
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    lua_pushfstring(L, "rates(%d, {", (int)v[0]);
    luaL_addvalue(&b);
    for (int k = 1; k <= nbh; k++) {
        lua_pushfstring(L, k > 1 ? ", %d" : "%d", (int)v[k]);
        luaL_addvalue(&b);
    }
    luaL_addstring(&b, "})");
    luaL_pushresult(&b);
    return lua_tostring(L, -1);
}

/* Whether no event's rate or outcome depends on the neighbourhood. */
static int neighbour_free(const kmc_params *p)
{
    if (p->kind == KMC_SOS)
        return p->phi == 0;
    uint32_t S = (uint32_t)p->S, nc = 1;
    for (int k = 0; k <= p->nbh; k++)
        nc *= S;
    size_t *start = malloc(((size_t)nc + 1) * sizeof *start);
    if (!start)
        return 0;
    start[0] = 0;
    for (uint32_t c = 0; c < nc; c++)
        start[c + 1] = start[c] + p->counts[c];
    int same = 1;
    for (uint32_t c = S; c < nc && same; c++) { /* configuration c holds state c % S */
        uint32_t base = c % S;
        same = p->counts[c] == p->counts[base];
        for (uint32_t e = 0; same && e < p->counts[c]; e++)
            same = p->rates[start[c] + e] == p->rates[start[base] + e] &&
                   p->targets[start[c] + e] == p->targets[start[base] + e];
    }
    free(start);
    return same;
}

/* Calls rates(x, nbrs) for every configuration (the function at index fn). Leaves three
 * userdata on the stack; fills the table fields of p. */
static void tabulate(lua_State *L, int fn, int S, int nbh, kmc_params *p, const char *where)
{
    double configs = pow((double)S, (double)(nbh + 1));
    if (configs > (double)KMC_CONFIGS_MAX) {
        char n[32];
        snprintf(n, sizeof n, "%.0f", configs);
        luaL_error(L, "%s: the rate table would have states^(neighbourhood + 1) = %d^%d = %s "
                      "entries (at most %d): use fewer states or neighbourhood = 4",
                   where, S, nbh + 1, n, (int)KMC_CONFIGS_MAX);
    }
    uint32_t nc = (uint32_t)configs;
    growbuf rates, targets;
    uint32_t *counts = (uint32_t *)lua_newuserdatauv(L, sizeof(uint32_t) * nc, 0);
    int counts_slot = lua_gettop(L);
    grow_init(L, &rates, sizeof(double), 1024);
    grow_init(L, &targets, sizeof(int32_t), 1024);
    size_t ne = 0;
    int32_t v[9];
    for (uint32_t cfg = 0; cfg < nc; cfg++) {
        uint32_t rest = cfg;
        for (int k = 0; k <= nbh; k++) {
            v[k] = (int32_t)(rest % (uint32_t)S);
            rest /= (uint32_t)S;
        }
        lua_pushvalue(L, fn);
        lua_pushinteger(L, v[0]);
        lua_createtable(L, nbh, 0);
        for (int k = 1; k <= nbh; k++) {
            lua_pushinteger(L, v[k]);
            lua_rawseti(L, -2, k);
        }
        lua_call(L, 2, 1);
        int top = lua_gettop(L);
        if (!lua_istable(L, top))
            luaL_error(L, "%s: %s must return a list of {rate, new_state} (got a %s)", where,
                       config_text(L, v, nbh), luaL_typename(L, top));
        lua_Integer len = luaL_len(L, top);
        uint32_t count = 0;
        for (lua_Integer e = 1; e <= len; e++) {
            lua_geti(L, top, e);
            if (!lua_istable(L, -1))
                luaL_error(L, "%s: %s: event %d must be a table {rate, new_state} (got a %s)",
                           where, config_text(L, v, nbh), (int)e, luaL_typename(L, -1));
            lua_geti(L, -1, 1);
            lua_geti(L, -2, 2);
            int isnum, isint;
            double r = lua_tonumberx(L, -2, &isnum);
            lua_Integer t = lua_tointegerx(L, -1, &isint);
            if (!isnum || !isfinite(r) || r < 0)
                luaL_error(L, "%s: %s: event %d has rate %s; rates must be finite numbers >= 0",
                           where, config_text(L, v, nbh), (int)e, luaL_tolstring(L, -2, NULL));
            if (!isint || t < 0 || t >= S || t == v[0])
                luaL_error(L, "%s: %s: event %d goes to state %s; it must be an integer from 0 "
                              "to %d other than the site's own state %d",
                           where, config_text(L, v, nbh), (int)e, luaL_tolstring(L, -1, NULL),
                           S - 1, (int)v[0]);
            lua_pop(L, 3);
            if (r == 0)
                continue; /* an event that never happens */
            if (ne >= KMC_EVENTS_MAX)
                luaL_error(L, "%s: the rate table lists more than %u events", where, KMC_EVENTS_MAX);
            *(double *)grow_at(L, &rates, ne) = r;
            *(int32_t *)grow_at(L, &targets, ne) = (int32_t)t;
            ne++;
            count++;
        }
        lua_settop(L, top - 1);
        counts[cfg] = count;
    }
    (void)counts_slot;
    p->counts = counts;
    p->rates = (const double *)rates.p;
    p->targets = (const int32_t *)targets.p;
    p->nevents = (uint32_t)ne;
    p->S = S;
    p->nbh = nbh;
}

/* initial = an integer (every site) or a carlo.array of m x n values; pushes the buffer. */
static const int32_t *initial_states(lua_State *L, int idx, int m, int n, int lo, int hi,
                                     const char *where)
{
    int t = lua_getfield(L, idx, "initial");
    if (t == LUA_TNIL) {
        lua_pop(L, 1);
        return NULL;
    }
    size_t N = (size_t)m * (size_t)n;
    int32_t *x = (int32_t *)lua_newuserdatauv(L, carlo_mulsize(N, sizeof *x), 0);
    lua_insert(L, -2);
    if (t == LUA_TNUMBER) {
        int isint;
        lua_Integer v = lua_tointegerx(L, -1, &isint);
        if (!isint || v < lo || v > hi)
            luaL_error(L, "%s: initial must be an integer from %d to %d or a carlo.array (got %s)",
                       where, lo, hi, luaL_tolstring(L, -1, NULL));
        for (size_t i = 0; i < N; i++)
            x[i] = (int32_t)v;
    } else {
        carlo_array *a = carlo_array_test(L, -1);
        if (!a || a->n != N)
            luaL_error(L, "%s: initial must be an integer or a carlo.array of m x n = %d x %d "
                          "states (got %s)", where, m, n,
                       a ? lua_pushfstring(L, "%I elements", (lua_Integer)a->n) : luaL_typename(L, -1));
        for (size_t i = 0; i < N; i++) {
            double v = carlo_array_get(a, i);
            if (!(v >= lo && v <= hi) || v != floor(v))
                luaL_error(L, "%s: initial element %I is %g; states must be integers from %d to %d",
                           where, (lua_Integer)i + 1, v, lo, hi);
            x[i] = (int32_t)v;
        }
    }
    lua_pop(L, 1);
    return x;
}

static int l_kmc(lua_State *L)
{
    const char *where = "carlo.kmc";
    static const char *const keys[] = {"model", "m", "n", "phi", "k2", "states", "neighbourhood",
                                       "rates", "initial", "seed", "device", "algorithm", "halo",
                                       "tiles_per_block", "alpha_initial", "alpha", "beta", NULL};
    luaL_checktype(L, 1, LUA_TTABLE);
    carlo_args_allowed(L, 1, where, keys);
    lua_settop(L, 1);
    kmc_params p;
    memset(&p, 0, sizeof p);
    p.m = (int)carlo_arg_int(L, 1, where, "m", 1, 0, 1, KMC_SIDE_MAX);
    p.n = (int)carlo_arg_int(L, 1, where, "n", 1, 0, 1, KMC_SIDE_MAX);
    if (p.m % KMC_TILE)
        return luaL_error(L, "%s: m must be a multiple of the tile size %d (got %d)", where, KMC_TILE, p.m);
    if (p.n % KMC_TILE)
        return luaL_error(L, "%s: n must be a multiple of the tile size %d (got %d)", where, KMC_TILE, p.n);
    int user = carlo_arg_has(L, 1, "rates") || carlo_arg_has(L, 1, "states") ||
               carlo_arg_has(L, 1, "neighbourhood");
    if (carlo_arg_has(L, 1, "model") == user)
        return luaL_error(L, "%s: give either model = \"sos_growth\" (with phi, k2) or a user model "
                             "(states, neighbourhood, rates)", where);
    const int32_t *initial = NULL;
    if (!user) {
        carlo_arg_enum(L, 1, where, "model", NULL, MODELS);
        p.kind = KMC_SOS;
        p.phi = carlo_arg_num(L, 1, where, "phi", 1, 0, -INFINITY, 0, INFINITY, 0);
        p.k2 = carlo_arg_num(L, 1, where, "k2", 0, 1.0, 0, 0, INFINITY, 0);
        double rate[5];
        if (kmc_sos_rates(p.phi, p.k2, rate))
            return carlo_raise(L, where);
        initial = initial_states(L, 1, p.m, p.n, INT32_MIN / 2, INT32_MAX / 2, where);
    } else {
        if (carlo_arg_has(L, 1, "phi") || carlo_arg_has(L, 1, "k2"))
            return luaL_error(L, "%s: phi and k2 belong to model = \"sos_growth\"", where);
        p.kind = KMC_TABLE;
        int S = (int)carlo_arg_int(L, 1, where, "states", 1, 0, 2, 256);
        int nbh = (int)carlo_arg_int(L, 1, where, "neighbourhood", 0, 4, 4, 8);
        if (nbh != 4 && nbh != 8)
            return luaL_error(L, "%s: neighbourhood must be 4 or 8 (got %d)", where, nbh);
        if (lua_getfield(L, 1, "rates") != LUA_TFUNCTION)
            return luaL_error(L, "%s: rates is required (a function(x, nbrs) returning "
                                 "{ {rate, new_state}, ... })", where);
        int fn = lua_gettop(L);
        initial = initial_states(L, 1, p.m, p.n, 0, S - 1, where);
        tabulate(L, fn, S, nbh, &p, where);
    }
    p.initial = initial;
    p.seed = carlo_arg_seed(L, 1, where);
    p.algorithm = (kmc_algorithm)carlo_arg_enum(L, 1, where, "algorithm", "tiled", ALGORITHMS);
    carlo_arg_enum(L, 1, where, "device", carlo_device_default(), DEVICES);
    const char *device = carlo_arg_str(L, 1, where, "device", 0);
    if (p.algorithm != KMC_TILED && !device)
        device = "cpu"; /* the serial algorithms run on the CPU whatever the default device */
    p.device = carlo_lua_device(L, where, device);
    /* Events that never depend on the neighbours (sos_growth at phi = 0, a table whose events
     * are the same in every neighbourhood) keep tiles independent: the narrowest halo is then
     * exact without a single rejected step and does the least work. */
    const int halo_default = neighbour_free(&p) ? 1
                             : p.device == CARLO_GPU ? KMC_HALO_DEFAULT_GPU
                                                     : KMC_HALO_DEFAULT_CPU;
    p.halo = (int)carlo_arg_int(L, 1, where, "halo", 0, halo_default, 1, KMC_HALO_MAX);
    p.tiles_per_block = (int)carlo_arg_int(L, 1, where, "tiles_per_block", 0, KMC_TPB_DEFAULT, 1,
                                              KMC_TPB_MAX);
    p.alpha_initial = carlo_arg_num(L, 1, where, "alpha_initial", 0, 10.0, 1, 0, INFINITY, 0);
    p.alpha_after = carlo_arg_num(L, 1, where, "alpha", 0, 1.03, 1, 0, INFINITY, 0);
    p.beta = carlo_arg_num(L, 1, where, "beta", 0, 0.5, 0, 0, 1, 0);
    kmc_system *s = kmc_create(&p);
    if (!s)
        return carlo_raise(L, where);
    lua_settop(L, 1);
    push_system(L, s);
    return 1;
}

/* ---------- running ---------- */

static void push_run(lua_State *L, const kmc_system *s, const kmc_run_result *r)
{
    lua_createtable(L, 0, 5);
    lua_pushinteger(L, (lua_Integer)r->events);
    lua_setfield(L, -2, "events");
    lua_pushinteger(L, (lua_Integer)r->steps);
    lua_setfield(L, -2, "steps");
    lua_pushinteger(L, (lua_Integer)r->rejected);
    lua_setfield(L, -2, "rejected");
    lua_pushnumber(L, r->seconds);
    lua_setfield(L, -2, "seconds");
    lua_pushnumber(L, s->ctrl.t);
    lua_setfield(L, -2, "t");
}

/* sys:run{ time = | events =, quiet = } */
static int write_frame(void *ctx, kmc_system *s)
{
    (void)s;
    return traj_sink_write((traj_sink *)ctx);
}

/* sys:run{ time = | events =, every = (time between frames), trajectory =, quiet = } */
static int l_run(lua_State *L)
{
    static const char *const keys[] = {"time", "events", "every", "trajectory", "quiet", NULL};
    const char *where = "kmc:run";
    kmc_system *s = check(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    carlo_args_allowed(L, 2, where, keys);
    int has_time = carlo_arg_has(L, 2, "time"), has_events = carlo_arg_has(L, 2, "events");
    if (has_time == has_events)
        return luaL_error(L, "%s: give exactly one of time (how long) and events (how many)", where);
    kmc_run_opts o;
    memset(&o, 0, sizeof o);
    if (has_time)
        o.time = carlo_arg_num(L, 2, where, "time", 1, 0, 0, 0, INFINITY, 0);
    else
        o.events = (uint64_t)carlo_arg_int(L, 2, where, "events", 1, 0, 1, (int64_t)1 << 62);
    o.quiet = carlo_arg_bool(L, 2, where, "quiet", 0);
    if (carlo_arg_has(L, 2, "every") != carlo_arg_has(L, 2, "trajectory"))
        return luaL_error(L, "%s: trajectory and every go together (every: the time between frames)",
                          where);
    traj_sink sink; /* a frame at every multiple of `every` in time, written from C */
    if (traj_lua_sink_target(L, 2, 1, where, s->ctrl.events, &sink)) {
        o.every = carlo_arg_num(L, 2, where, "every", 1, 0, 0, 0, INFINITY, 0);
        o.callback = write_frame;
        o.ctx = &sink;
    }
    kmc_run_result r;
    if (kmc_run_ex(s, &o, &r))
        return carlo_raise(L, where);
    push_run(L, s, &r);
    return 1;
}

/* sys:try_step(dt [, { force = false }]) -> accepted, events, matched */
static int l_try_step(lua_State *L)
{
    static const char *const keys[] = {"force", NULL};
    const char *where = "kmc:try_step";
    kmc_system *s = check(L, 1);
    double dt = luaL_checknumber(L, 2);
    int force = 0;
    if (!lua_isnoneornil(L, 3)) {
        carlo_args_allowed(L, 3, where, keys);
        force = carlo_arg_bool(L, 3, where, "force", 0);
    }
    int accepted, matched;
    uint64_t events;
    if (kmc_try_step(s, dt, force, &accepted, &matched, &events))
        return carlo_raise(L, where);
    lua_pushboolean(L, accepted);
    lua_pushinteger(L, (lua_Integer)events);
    lua_pushboolean(L, matched);
    return 3;
}

static int l_sync(lua_State *L)
{
    kmc_system *s = check(L, 1);
    if (s->be->sync(s))
        return carlo_raise(L, "kmc:sync");
    return 0;
}

/* ---------- observing ---------- */

/* sys:snapshot([{ clocks = false }]) -> { state =, t =, events = [, tau =, draws = ] } */
static int l_snapshot(lua_State *L)
{
    static const char *const keys[] = {"clocks", NULL};
    const char *where = "kmc:snapshot";
    kmc_system *s = check(L, 1);
    int clocks = 0;
    if (!lua_isnoneornil(L, 2)) {
        carlo_args_allowed(L, 2, where, keys);
        clocks = carlo_arg_bool(L, 2, where, "clocks", 0);
    }
    if (clocks && s->algorithm == KMC_BKL)
        return luaL_error(L, "%s: algorithm = \"bkl\" keeps no clocks", where);
    lua_createtable(L, 0, 5);
    carlo_array *x = carlo_array_push(L, CARLO_I32, s->m, s->n);
    lua_setfield(L, -2, "state");
    carlo_array *tau = NULL, *draws = NULL;
    if (clocks) {
        tau = carlo_array_push(L, CARLO_F64, s->m, s->n);
        lua_setfield(L, -2, "tau");
        draws = carlo_array_push(L, CARLO_U32, s->m, s->n);
        lua_setfield(L, -2, "draws");
    }
    if (s->dead)
        return luaL_error(L, "%s: this system died on an earlier device error", where);
    if (s->be->get_state(s, (int32_t *)x->data, tau ? (double *)tau->data : NULL,
                         draws ? (uint32_t *)draws->data : NULL)) {
        s->dead = s->device == CARLO_GPU;
        return carlo_raise(L, where);
    }
    lua_pushnumber(L, s->ctrl.t);
    lua_setfield(L, -2, "t");
    lua_pushinteger(L, (lua_Integer)s->ctrl.events);
    lua_setfield(L, -2, "events");
    return 1;
}

/* sys:observe() -> { t, events, mean, width, min, max [, step_fraction | counts] } */
static int l_observe(lua_State *L)
{
    kmc_system *s = check(L, 1);
    if (s->dead)
        return luaL_error(L, "kmc:observe: this system died on an earlier device error");
    kmc_obs o;
    uint64_t *counts = NULL;
    if (s->model.kind == KMC_TABLE)
        counts = (uint64_t *)lua_newuserdatauv(L, sizeof *counts * (size_t)s->model.S, 0);
    if (kmc_observe(s, &o, counts))
        return carlo_raise(L, "kmc:observe");
    lua_createtable(L, 0, 8);
    lua_pushnumber(L, s->ctrl.t);
    lua_setfield(L, -2, "t");
    lua_pushinteger(L, (lua_Integer)s->ctrl.events);
    lua_setfield(L, -2, "events");
    lua_pushnumber(L, o.mean);
    lua_setfield(L, -2, "mean");
    lua_pushnumber(L, o.width);
    lua_setfield(L, -2, "width");
    lua_pushinteger(L, (lua_Integer)o.min);
    lua_setfield(L, -2, "min");
    lua_pushinteger(L, (lua_Integer)o.max);
    lua_setfield(L, -2, "max");
    if (s->model.kind == KMC_SOS) {
        lua_pushnumber(L, o.step_fraction);
        lua_setfield(L, -2, "step_fraction");
    } else {
        lua_createtable(L, s->model.S, 0);
        for (int v = 0; v < s->model.S; v++) {
            lua_pushinteger(L, (lua_Integer)counts[v]);
            lua_rawseti(L, -2, v + 1);
        }
        lua_setfield(L, -2, "counts");
    }
    return 1;
}

/* sys:stats() -> the adaptive step's record */
static int l_stats(lua_State *L)
{
    kmc_system *s = check(L, 1);
    const kmc_ctrl *c = &s->ctrl;
    double ntiles = (double)s->geom.ntr * (double)s->geom.ntc;
    uint64_t steps = c->accepted + c->rejected;
    lua_createtable(L, 0, 10);
    lua_pushinteger(L, (lua_Integer)c->accepted);
    lua_setfield(L, -2, "accepted");
    lua_pushinteger(L, (lua_Integer)c->rejected);
    lua_setfield(L, -2, "rejected");
    lua_pushinteger(L, (lua_Integer)steps);
    lua_setfield(L, -2, "steps");
    lua_pushnumber(L, steps ? (double)c->rejected / (double)steps : 0.0);
    lua_setfield(L, -2, "rejected_fraction");
    lua_pushinteger(L, (lua_Integer)c->events);
    lua_setfield(L, -2, "events");
    lua_pushinteger(L, (lua_Integer)c->simulated);
    lua_setfield(L, -2, "simulated");
    lua_pushnumber(L, c->accepted ? (double)c->events / ((double)c->accepted * ntiles) : 0.0);
    lua_setfield(L, -2, "events_per_tile_step");
    lua_pushnumber(L, c->events ? (double)c->simulated / (double)c->events : 0.0);
    lua_setfield(L, -2, "work_per_event");
    lua_pushinteger(L, (lua_Integer)c->domain_events);
    lua_setfield(L, -2, "domain_events");
    lua_pushnumber(L, c->dt);
    lua_setfield(L, -2, "dt");
    lua_pushnumber(L, c->alpha);
    lua_setfield(L, -2, "alpha");
    return 1;
}

/* sys:png(path [, { scale =, lo =, hi = }]): heights on a colour ramp from lo (default the
 * lowest) to hi (the highest); user models' states in distinct colours. */
static int l_png(lua_State *L)
{
    static const char *const keys[] = {"scale", "lo", "hi", NULL};
    const char *where = "kmc:png";
    kmc_system *s = check(L, 1);
    const char *path = luaL_checkstring(L, 2);
    int scale = 1, has_lo = 0, has_hi = 0;
    double lo = 0, hi = 0;
    if (!lua_isnoneornil(L, 3)) {
        carlo_args_allowed(L, 3, where, keys);
        scale = (int)carlo_arg_int(L, 3, where, "scale", 0, 1, 1, 64);
        has_lo = carlo_arg_has(L, 3, "lo");
        has_hi = carlo_arg_has(L, 3, "hi");
        lo = carlo_arg_num(L, 3, where, "lo", 0, 0, -INFINITY, 0, INFINITY, 0);
        hi = carlo_arg_num(L, 3, where, "hi", 0, 0, -INFINITY, 0, INFINITY, 0);
    }
    size_t N = (size_t)s->m * (size_t)s->n;
    int32_t *x = (int32_t *)lua_newuserdatauv(L, carlo_mulsize(N, sizeof *x), 0);
    if (s->dead)
        return luaL_error(L, "%s: this system died on an earlier device error", where);
    if (s->be->get_state(s, x, NULL, NULL))
        return carlo_raise(L, where);
    if (s->model.kind == KMC_TABLE) {
        uint8_t *b = (uint8_t *)lua_newuserdatauv(L, N, 0);
        for (size_t i = 0; i < N; i++)
            b[i] = (uint8_t)x[i];
        if (carlo_png_states(path, b, s->m, s->n, s->model.S, scale))
            return carlo_raise(L, where);
        return 0;
    }
    int32_t mn = INT32_MAX, mx = INT32_MIN;
    for (size_t i = 0; i < N; i++) {
        if (x[i] < mn)
            mn = x[i];
        if (x[i] > mx)
            mx = x[i];
    }
    if (!has_lo)
        lo = mn;
    if (!has_hi)
        hi = mx;
    int w = s->n * scale, h = s->m * scale;
    if (w > (1 << 24) / 3 || h > (1 << 24))
        return luaL_error(L, "%s: image of %d x %d pixels is too large (lower scale)", where, w, h);
    uint8_t *rgb = (uint8_t *)lua_newuserdatauv(L, carlo_mulsize((size_t)w * 3, (size_t)h), 0);
    double span = hi > lo ? hi - lo : 1.0;
    for (int y = 0; y < h; y++)
        for (int xx = 0; xx < w; xx++)
            carlo_ramp_color((x[(size_t)(y / scale) * s->n + xx / scale] - lo) / span,
                             rgb + ((size_t)y * w + xx) * 3);
    if (carlo_png_write(path, w, h, rgb))
        return carlo_raise(L, where);
    return 0;
}

static int l_save(lua_State *L)
{
    check(L, 1);
    traj_lua_save(L, 1, luaL_checkstring(L, 2), "kmc:save");
    return 0;
}

static int l_close(lua_State *L)
{
    kmc_ud *u = (kmc_ud *)luaL_checkudata(L, 1, KMC_MT);
    kmc_destroy(u->s);
    u->s = NULL;
    return 0;
}

static const char *model_name(const kmc_system *s)
{
    return s->model.kind == KMC_SOS ? "sos_growth" : "user";
}

static int l_tostring(lua_State *L)
{
    kmc_ud *u = (kmc_ud *)luaL_checkudata(L, 1, KMC_MT);
    if (!u->s) {
        lua_pushliteral(L, "carlo.kmc (closed)");
        return 1;
    }
    kmc_system *s = u->s;
    char t[32];
    snprintf(t, sizeof t, "%.6g", s->ctrl.t);
    if (s->model.kind == KMC_SOS)
        lua_pushfstring(L, "carlo.kmc(sos_growth, %d x %d, phi = %f, %s, t = %s, %I events, %s)",
                        s->m, s->n, s->phi, kmc_algorithm_name(s->algorithm), t,
                        (lua_Integer)s->ctrl.events, carlo_device_name(s->device));
    else
        lua_pushfstring(L, "carlo.kmc(user, %d states, %d neighbours, %d x %d, %s, t = %s, %I events, %s)",
                        s->model.S, s->model.nbh, s->m, s->n, kmc_algorithm_name(s->algorithm), t,
                        (lua_Integer)s->ctrl.events, carlo_device_name(s->device));
    return 1;
}

static int l_index(lua_State *L)
{
    kmc_system *s = check(L, 1);
    const char *k = luaL_checkstring(L, 2);
    if (strcmp(k, "t") == 0) lua_pushnumber(L, s->ctrl.t);
    else if (strcmp(k, "events") == 0) lua_pushinteger(L, (lua_Integer)s->ctrl.events);
    else if (strcmp(k, "m") == 0) lua_pushinteger(L, s->m);
    else if (strcmp(k, "n") == 0) lua_pushinteger(L, s->n);
    else if (strcmp(k, "N") == 0) lua_pushinteger(L, (lua_Integer)s->m * s->n);
    else if (strcmp(k, "tiles") == 0) lua_pushinteger(L, (lua_Integer)s->geom.ntr * s->geom.ntc);
    else if (strcmp(k, "seed") == 0) lua_pushinteger(L, (lua_Integer)s->seed);
    else if (strcmp(k, "device") == 0) lua_pushstring(L, carlo_device_name(s->device));
    else if (strcmp(k, "algorithm") == 0) lua_pushstring(L, kmc_algorithm_name(s->algorithm));
    else if (strcmp(k, "model") == 0) lua_pushstring(L, model_name(s));
    else if (strcmp(k, "halo") == 0) lua_pushinteger(L, s->geom.halo);
    else if (strcmp(k, "tiles_per_block") == 0) lua_pushinteger(L, s->tiles_per_block);
    else if (strcmp(k, "dt") == 0) lua_pushnumber(L, s->ctrl.dt);
    else if (strcmp(k, "phi") == 0 && s->model.kind == KMC_SOS) lua_pushnumber(L, s->phi);
    else if (strcmp(k, "k2") == 0 && s->model.kind == KMC_SOS) lua_pushnumber(L, s->k2);
    else if (strcmp(k, "states") == 0 && s->model.kind == KMC_TABLE) lua_pushinteger(L, s->model.S);
    else if (strcmp(k, "neighbourhood") == 0) lua_pushinteger(L, s->model.nbh);
    else {
        luaL_getmetatable(L, KMC_MT);
        lua_getfield(L, -1, "methods");
        if (lua_getfield(L, -1, k) == LUA_TNIL)
            return luaL_error(L, "kmc: no field or method '%s'", k);
    }
    return 1;
}

static int l_newindex(lua_State *L)
{
    check(L, 1);
    const char *k = luaL_checkstring(L, 2);
    return luaL_error(L, "kmc: field '%s' is read-only", k);
}

/* ---------- generic model interface ---------- */

static int model_frame(void *ud, carlo_frame *f)
{
    return kmc_frame(((kmc_ud *)ud)->s, f);
}

static int model_checkpoint(void *ud, carlo_frame *f)
{
    return kmc_checkpoint(((kmc_ud *)ud)->s, f);
}

static int model_restore(lua_State *L, const carlo_frame *f, const char *device)
{
    const int32_t *shape = carlo_frame_expect(f, "kmc/shape", CARLO_I32, 8, 1);
    if (!shape)
        return luaL_error(L, "carlo.load: kmc checkpoint: %s", carlo_errmsg());
    if (!device && shape[2] != KMC_TILED)
        device = "cpu";
    kmc_system *s = kmc_restore(f, carlo_lua_device(L, "carlo.load", device));
    if (!s)
        return luaL_error(L, "carlo.load: kmc checkpoint: %s", carlo_errmsg());
    push_system(L, s);
    return 1;
}

static const carlo_model kmc_model_iface = {
    .name = "kmc",
    .metatable = KMC_MT,
    .frame = model_frame,
    .checkpoint = model_checkpoint,
    .restore = model_restore,
};

void kmc_lua_open(lua_State *L)
{
    static const luaL_Reg meta[] = {
        {"__index", l_index}, {"__newindex", l_newindex}, {"__gc", l_close}, {"__close", l_close},
        {"__tostring", l_tostring}, {NULL, NULL}};
    static const luaL_Reg methods[] = {
        {"run", l_run}, {"try_step", l_try_step}, {"snapshot", l_snapshot}, {"observe", l_observe},
        {"stats", l_stats}, {"png", l_png}, {"save", l_save}, {"sync", l_sync}, {"close", l_close},
        {NULL, NULL}};
    if (luaL_newmetatable(L, KMC_MT)) {
        luaL_setfuncs(L, meta, 0);
        luaL_newlib(L, methods);
        lua_setfield(L, -2, "methods");
    }
    lua_pop(L, 1);
    carlo_model_register(L, &kmc_model_iface);
    lua_pushcfunction(L, l_kmc);
    lua_setfield(L, -2, "kmc");
}
