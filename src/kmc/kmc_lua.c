/* kmc_lua.c — the Lua binding of lattice KMC: carlo.kmc{...}, the userdata "carlo.kmc" of the
 * system layer (system/system_lua.h), which gives it run, sample, observe, snapshot, save and
 * the rest. Here: the constructor keys, a user model's rates function called once per
 * neighbourhood configuration to fill the table every backend reads (the Lua state is never
 * touched while a run works), and KMC's own methods (try_step, substep, clocks, counters, png,
 * launch). decompose = true splits the tile rows over the MPI ranks (carlo-mpi(7)). */
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
#include "kmc/kmc.h"
#include "kmc/kmc_lua.h"
#include "mpi/mpi.h"
#include "system/system_lua.h"

/* Defaults measured with scripts/bench.lua kmc fig3 and variants (BENCHMARKS.md). On the CPU
 * every domain cell is work: halo 4, and the repair (kmc_kernel.h), which makes the steps
 * longer, at every size. On the GPU a step of a small lattice costs its kernel launches more
 * than its work, and the repair's rounds add launches to every step: below KMC_GPU_REPAIR_TILES
 * tiles (n = 1024 square) halo 5 without the repair is faster. From there the repair pays, and
 * from KMC_GPU_HALO3_TILES (n = 2048) a narrow halo does too: the few tiles that mismatch are
 * stepped again with halo 7, so halo 3 does the least work short of the halos whose repairs
 * cost more than they save. The defaults go by the whole lattice, split or not. */
#define KMC_HALO_DEFAULT_CPU 4
#define KMC_HALO_DEFAULT_GPU 5
#define KMC_HALO_DEFAULT_GPU_LARGE 3
#define KMC_GPU_REPAIR_TILES 16384
#define KMC_GPU_HALO3_TILES 65536

static const char *const ALGORITHMS[] = {"tiled", "serial", "bkl", NULL};
static const char *const DEVICES[] = {"auto", "cpu", "gpu", NULL};
static const char *const MODELS[] = {"sos_growth", NULL};

extern const carlo_lua_model kmc_lua_model;

static kmc_system *check(lua_State *L, int idx)
{
    return (kmc_system *)carlo_lua_check(L, idx, &kmc_lua_model);
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
        return p->bond == 0;
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
                luaL_error(L, "%s: the rate table lists more than %d events", where,
                           (int)KMC_EVENTS_MAX);
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

/* ---------- the initial configuration ---------- */

static const char *const INIT_HELP =
    "an integer (every site), \"flat\" (every site 0), \"random\" (user models), a carlo.array "
    "of m x n states or a snapshot table { state = }";

/* init = a number, a name, a carlo.array or a snapshot table at idx: m x n states in [lo, hi]
 * pushed as a buffer (NULL, nothing pushed, for all zero). */
static const int32_t *initial_states(lua_State *L, int idx, const kmc_params *p, int lo, int hi,
                                     const char *where)
{
    idx = lua_absindex(L, idx);
    const int m = p->m, n = p->n;
    const size_t N = (size_t)m * (size_t)n;
    int t = lua_type(L, idx);
    if (t == LUA_TNIL)
        return NULL;
    if (t == LUA_TSTRING && strcmp(lua_tostring(L, idx), "flat") == 0)
        return NULL;
    int32_t *x = (int32_t *)lua_newuserdatauv(L, carlo_mulsize(N, sizeof *x), 0);
    if (t == LUA_TSTRING && strcmp(lua_tostring(L, idx), "random") == 0) {
        if (p->kind != KMC_TABLE)
            luaL_error(L, "%s: init = \"random\" needs a user model (states); sos_growth starts "
                          "from heights", where);
        /* uniform states from the seed (purpose KMC_PURPOSE_START, one draw per site) */
        for (size_t i = 0; i < N; i++) {
            carlo_u32x4 d = carlo_rng(p->seed, KMC_PURPOSE_START, 0, (uint64_t)i, 0);
            x[i] = (int32_t)((uint64_t)d.v[0] * (uint64_t)(hi + 1) >> 32);
        }
        return x;
    }
    if (t == LUA_TNUMBER) {
        int isint;
        lua_Integer v = lua_tointegerx(L, idx, &isint);
        if (!isint || v < lo || v > hi)
            luaL_error(L, "%s: init must be %s; an integer must lie from %d to %d (got %s)", where,
                       INIT_HELP, lo, hi, luaL_tolstring(L, idx, NULL));
        for (size_t i = 0; i < N; i++)
            x[i] = (int32_t)v;
        return x;
    }
    if (t == LUA_TSTRING)
        luaL_error(L, "%s: init must be %s (got \"%s\")", where, INIT_HELP, lua_tostring(L, idx));
    int from_table = t == LUA_TTABLE;
    if (from_table)
        lua_getfield(L, idx, "state");
    else
        lua_pushvalue(L, idx);
    carlo_array *a = carlo_array_test(L, -1);
    if (!a)
        luaL_error(L, "%s: init must be %s (got %s%s)", where, INIT_HELP,
                   from_table ? "a table whose state is " : "", luaL_typename(L, -1));
    if (a->n != N || (a->ndim == 2 && (a->shape[0] != m || a->shape[1] != n)))
        luaL_error(L, "%s: init: the state array must hold m x n = %d x %d states (got %I x %I)",
                   where, m, n, (lua_Integer)a->shape[0], (lua_Integer)a->shape[1]);
    for (size_t i = 0; i < N; i++) {
        double v = carlo_array_get(a, i);
        if (!(v >= lo && v <= hi) || v != floor(v))
            luaL_error(L, "%s: init: element %I is %f; states must be integers from %d to %d",
                       where, (lua_Integer)i + 1, v, lo, hi);
        x[i] = (int32_t)v;
    }
    lua_pop(L, 1);
    return x;
}

/* ---------- the constructor ---------- */

/* Old key names, read one release with a warning: {old, new}. */
static const char *const RENAMED[][2] = {
    {"phi", "bond"}, {"initial", "init"}, {"alpha_initial", "grow_initial"}, {"alpha", "grow"},
    {"beta", "shrink"}};

/* A copy of the keyword table at 1 with the old names moved to the new ones (warned once). */
static void rename_keys(lua_State *L, const char *where)
{
    lua_newtable(L);
    lua_pushnil(L);
    while (lua_next(L, 1)) {
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_settable(L, -4);
    }
    for (size_t k = 0; k < sizeof RENAMED / sizeof RENAMED[0]; k++) {
        const char *old = RENAMED[k][0], *new_name = RENAMED[k][1];
        if (!carlo_arg_has(L, -1, old))
            continue;
        if (carlo_arg_has(L, -1, new_name))
            luaL_error(L, "%s: give %s, not both %s and %s (its old name)", where, new_name,
                       new_name, old);
        carlo_lua_renamed(where, old, new_name);
        lua_getfield(L, -1, old);
        lua_setfield(L, -2, new_name);
        lua_pushnil(L);
        lua_setfield(L, -2, old);
    }
    lua_replace(L, 1);
}

/* model = "sos_growth": bond, k2 (and init heights); a user model: states, neighbourhood, rates
 * (tabulated) and init states. Leaves the init buffer and the tables on the stack. */
static void model_args(lua_State *L, kmc_params *p, const char *where)
{
    int user = carlo_arg_has(L, 1, "rates") || carlo_arg_has(L, 1, "states") ||
               carlo_arg_has(L, 1, "neighbourhood");
    if (carlo_arg_has(L, 1, "model") == user)
        luaL_error(L, "%s: give either model = \"sos_growth\" (with bond, k2) or a user model "
                      "(states, neighbourhood, rates)", where);
    lua_getfield(L, 1, "init");
    const int init = lua_gettop(L);
    if (!user) {
        carlo_arg_enum(L, 1, where, "model", NULL, MODELS);
        p->kind = KMC_SOS;
        p->bond = carlo_arg_num(L, 1, where, "bond", 1, 0, -INFINITY, 0, INFINITY, 0);
        p->k2 = carlo_arg_num(L, 1, where, "k2", 0, 1.0, 0, 0, INFINITY, 0);
        double rate[5];
        if (kmc_sos_rates(p->bond, p->k2, rate))
            carlo_raise(L, where);
        p->initial = initial_states(L, init, p, INT32_MIN / 2, INT32_MAX / 2, where);
        return;
    }
    if (carlo_arg_has(L, 1, "bond") || carlo_arg_has(L, 1, "k2"))
        luaL_error(L, "%s: bond and k2 belong to model = \"sos_growth\"", where);
    p->kind = KMC_TABLE;
    int S = (int)carlo_arg_int(L, 1, where, "states", 1, 0, 2, 256);
    int nbh = (int)carlo_arg_int(L, 1, where, "neighbourhood", 0, 4, 4, 8);
    if (nbh != 4 && nbh != 8)
        luaL_error(L, "%s: neighbourhood must be 4 or 8 (got %d)", where, nbh);
    if (lua_getfield(L, 1, "rates") != LUA_TFUNCTION)
        luaL_error(L, "%s: rates is required (a function(x, nbrs) returning "
                      "{ {rate, new_state}, ... }; got %s)", where, luaL_typename(L, -1));
    int fn = lua_gettop(L);
    p->S = S;
    p->initial = initial_states(L, init, p, 0, S - 1, where);
    tabulate(L, fn, S, nbh, p, where);
}

static int l_kmc(lua_State *L)
{
    const char *where = "carlo.kmc";
    static const char *const keys[] = {"model", "m", "n", "bond", "k2", "states", "neighbourhood",
                                       "rates", "init", "seed", "device", "algorithm", "halo",
                                       "grow_initial", "grow", "shrink", "quiet",
                                       "tiles_per_block", "decompose", "repair", NULL};
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    rename_keys(L, where);
    carlo_args_allowed(L, 1, where, keys);
    const int quiet = carlo_arg_bool(L, 1, where, "quiet", 0);
    kmc_params p;
    memset(&p, 0, sizeof p);
    p.m = (int)carlo_arg_int(L, 1, where, "m", 1, 0, 1, KMC_SIDE_MAX);
    p.n = (int)carlo_arg_int(L, 1, where, "n", 1, 0, 1, KMC_SIDE_MAX);
    if (p.m % KMC_TILE)
        return luaL_error(L, "%s: m must be a multiple of the tile size %d (got %d)", where, KMC_TILE, p.m);
    if (p.n % KMC_TILE)
        return luaL_error(L, "%s: n must be a multiple of the tile size %d (got %d)", where, KMC_TILE, p.n);
    /* quiet: no word on stderr about a drawn seed or the device "auto" chose */
    const int was_quiet = carlo_quiet;
    if (carlo_arg_has(L, 1, "seed")) {
        p.seed = carlo_arg_seed(L, 1, where);
    } else {
        carlo_quiet |= quiet;
        p.seed = carlo_arg_seed(L, 1, where); /* raises nothing without the key */
        carlo_quiet = was_quiet;
    }
    model_args(L, &p, where);
    p.algorithm = (kmc_algorithm)carlo_arg_enum(L, 1, where, "algorithm", "tiled", ALGORITHMS);
    carlo_arg_enum(L, 1, where, "device", carlo_device_default(), DEVICES);
    const char *device = carlo_arg_str(L, 1, where, "device", 0);
    if (p.algorithm != KMC_TILED && !device)
        device = "cpu"; /* the serial algorithms run on the CPU whatever the default device */
    carlo_device_kind kind = CARLO_CPU;
    carlo_quiet |= quiet;
    int unresolved = carlo_device_resolve(device, &kind);
    carlo_quiet = was_quiet;
    if (unresolved)
        return carlo_raise(L, where);
    p.device = kind;
    /* Events that never depend on the neighbours (sos_growth at bond = 0, a table whose events
     * are the same in every neighbourhood) keep tiles independent: the narrowest halo is then
     * exact without a single rejected step and does the least work. */
    const int64_t tiles = (int64_t)(p.m / KMC_TILE) * (p.n / KMC_TILE);
    const int gpu = p.device == CARLO_GPU;
    int halo_default = KMC_HALO_DEFAULT_CPU;
    if (neighbour_free(&p))
        halo_default = 1;
    else if (gpu)
        halo_default = tiles >= KMC_GPU_HALO3_TILES ? KMC_HALO_DEFAULT_GPU_LARGE : KMC_HALO_DEFAULT_GPU;
    p.halo = (int)carlo_arg_int(L, 1, where, "halo", 0, halo_default, 1, KMC_HALO_MAX);
    if (carlo_arg_has(L, 1, "tiles_per_block")) /* a launch shape: private since the system layer */
        carlo_lua_renamed(where, "tiles_per_block", "sys:launch{ tiles_per_block = }");
    p.tiles_per_block = (int)carlo_arg_int(L, 1, where, "tiles_per_block", 0, KMC_TPB_DEFAULT, 1,
                                           KMC_TPB_MAX);
    p.grow_initial = carlo_arg_num(L, 1, where, "grow_initial", 0, 10.0, 1, 0, INFINITY, 0);
    p.grow = carlo_arg_num(L, 1, where, "grow", 0, 1.03, 1, 0, INFINITY, 0);
    p.shrink = carlo_arg_num(L, 1, where, "shrink", 0, 0.5, 0, 0, 1, 0);
    p.split = carlo_arg_bool(L, 1, where, "decompose", 0); /* tile rows over the MPI ranks */
    /* mismatched tiles again, halo 7 */
    p.repair = carlo_arg_bool(L, 1, where, "repair", !gpu || tiles >= KMC_GPU_REPAIR_TILES);
    kmc_system *s = kmc_create(&p);
    if (!s)
        return carlo_raise(L, where);
    lua_settop(L, 1);
    carlo_lua_push_system(L, &kmc_lua_model, &s->sys);
    return 1;
}

/* ---------- KMC's own methods ---------- */

/* sys:try_step(dt [, { force = false }]) -> accepted, events, matched */
static int l_try_step(lua_State *L)
{
    static const char *const keys[] = {"force", NULL};
    const char *where = "kmc:try_step";
    kmc_system *s = check(L, 1);
    double dt = luaL_checknumber(L, 2);
    int force = 0;
    if (!lua_isnoneornil(L, 3)) {
        luaL_checktype(L, 3, LUA_TTABLE);
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

/* sys:substep() -> accepted, events, matched: one step of the adaptive scheme */
static int l_substep(lua_State *L)
{
    kmc_system *s = check(L, 1);
    int accepted, matched;
    uint64_t events;
    if (kmc_substep(s, &accepted, &matched, &events))
        return carlo_raise(L, "kmc:substep");
    lua_pushboolean(L, accepted);
    lua_pushinteger(L, (lua_Integer)events);
    lua_pushboolean(L, matched);
    return 3;
}

/* sys:clocks() -> { tau = f64 m x n, draws = u32 m x n, t =, events =, step = } */
static int l_clocks(lua_State *L)
{
    const char *where = "kmc:clocks";
    kmc_system *s = check(L, 1);
    if (s->algorithm == KMC_BKL)
        return luaL_error(L, "%s: algorithm = \"bkl\" keeps no clocks", where);
    if (carlo_sys_alive(&s->sys))
        return carlo_raise(L, where);
    lua_createtable(L, 0, 5);
    carlo_array *tau = carlo_array_push(L, CARLO_F64, s->m, s->n);
    lua_setfield(L, -2, "tau");
    carlo_array *draws = carlo_array_push(L, CARLO_U32, s->m, s->n);
    lua_setfield(L, -2, "draws");
    if (s->be->get_state(s, NULL, (double *)tau->data, (uint32_t *)draws->data)) {
        kmc_fail(s);
        return carlo_raise(L, where);
    }
    carlo_lua_setnum(L, "t", s->ctrl.t);
    carlo_lua_setint(L, "events", (long long)s->ctrl.events);
    carlo_lua_setint(L, "step", (long long)s->step);
    return 1;
}

/* The adaptive step's record, since the system was made. */
static void push_counters(lua_State *L, const kmc_system *s)
{
    const kmc_ctrl *c = &s->ctrl;
    double ntiles = (double)s->geom.ntr * (double)s->geom.ntc;
    uint64_t tried = c->accepted + c->rejected;
    lua_createtable(L, 0, 12);
    carlo_lua_setint(L, "tried", (long long)tried);
    carlo_lua_setint(L, "accepted", (long long)c->accepted);
    carlo_lua_setint(L, "rejected", (long long)c->rejected);
    carlo_lua_setnum(L, "rejected_fraction", tried ? (double)c->rejected / (double)tried : 0.0);
    carlo_lua_setint(L, "events", (long long)c->events);
    carlo_lua_setint(L, "simulated", (long long)c->simulated);
    carlo_lua_setnum(L, "events_per_tile_step",
                     c->accepted ? (double)c->events / ((double)c->accepted * ntiles) : 0.0);
    carlo_lua_setnum(L, "work_per_event", c->events ? (double)c->simulated / (double)c->events : 0.0);
    carlo_lua_setint(L, "domain_events", (long long)c->domain_events);
    carlo_lua_setint(L, "repaired", (long long)c->repaired);
    carlo_lua_setnum(L, "dt", c->dt);
    carlo_lua_setnum(L, "grow", c->grow);
}

/* sys:counters() -> { tried, accepted, rejected, rejected_fraction, events, simulated, ... } */
static int l_counters(lua_State *L)
{
    push_counters(L, check(L, 1));
    return 1;
}

/* sys:stats(): the old name of counters, with its old fields steps and alpha */
static int l_stats(lua_State *L)
{
    kmc_system *s = check(L, 1);
    carlo_lua_renamed("kmc", "stats()", "counters()");
    push_counters(L, s);
    carlo_lua_setint(L, "steps", (long long)(s->ctrl.accepted + s->ctrl.rejected));
    carlo_lua_setnum(L, "alpha", s->ctrl.grow);
    return 1;
}

/* sys:launch([{ tiles_per_block = }]) -> { tiles_per_block = }: benchmarks only; never changes
 * the chain. */
static int l_launch(lua_State *L)
{
    static const char *const keys[] = {"tiles_per_block", NULL};
    const char *where = "kmc:launch";
    kmc_system *s = check(L, 1);
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        carlo_args_allowed(L, 2, where, keys);
        if (carlo_arg_has(L, 2, "tiles_per_block")) {
            int tpb = (int)carlo_arg_int(L, 2, where, "tiles_per_block", 1, 0, 1, KMC_TPB_MAX);
            if (kmc_set_launch(s, tpb))
                return carlo_raise(L, where);
            s->tuner.fixed = 1; /* chosen by hand: the tuner leaves it */
        }
    }
    lua_createtable(L, 0, 1);
    carlo_lua_setint(L, "tiles_per_block", s->tiles_per_block);
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
        luaL_checktype(L, 3, LUA_TTABLE);
        carlo_args_allowed(L, 3, where, keys);
        scale = (int)carlo_arg_int(L, 3, where, "scale", 0, 1, 1, 64);
        has_lo = carlo_arg_has(L, 3, "lo");
        has_hi = carlo_arg_has(L, 3, "hi");
        lo = carlo_arg_num(L, 3, where, "lo", 0, 0, -INFINITY, 0, INFINITY, 0);
        hi = carlo_arg_num(L, 3, where, "hi", 0, 0, -INFINITY, 0, INFINITY, 0);
    }
    size_t N = (size_t)s->m * (size_t)s->n;
    int32_t *x = (int32_t *)lua_newuserdatauv(L, carlo_mulsize(N, sizeof *x), 0);
    if (carlo_sys_alive(&s->sys))
        return carlo_raise(L, where);
    if (s->be->get_state(s, x, NULL, NULL)) {
        kmc_fail(s);
        return carlo_raise(L, where);
    }
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

/* ---------- the system layer's Lua face ---------- */

static const char *kind_name(const kmc_system *s)
{
    return s->model.kind == KMC_SOS ? "sos_growth" : "user";
}

static void describe(lua_State *L, carlo_sys *c)
{
    kmc_system *s = (kmc_system *)c;
    char t[32];
    snprintf(t, sizeof t, "%.6g", s->ctrl.t);
    if (s->model.kind == KMC_SOS)
        lua_pushfstring(L, "sos_growth, %d x %d, bond = %f, %s, t = %s, %I events", s->m, s->n,
                        s->bond, kmc_algorithm_name(s->algorithm), t, (lua_Integer)s->ctrl.events);
    else
        lua_pushfstring(L, "user, %d states, %d neighbours, %d x %d, %s, t = %s, %I events",
                        s->model.S, s->model.nbh, s->m, s->n, kmc_algorithm_name(s->algorithm), t,
                        (lua_Integer)s->ctrl.events);
    /* ", GPU k" on the GPU; for a split system this rank's rows */
    if (s->device == CARLO_GPU) {
        lua_pushfstring(L, ", GPU %d", carlo_gpu_pick());
        lua_concat(L, 2);
    }
    if (s->split) {
        lua_pushfstring(L, ", rows %d-%d on rank %d of %d", s->tile_row0 * KMC_TILE + 1,
                        (s->tile_row0 + s->tile_rows) * KMC_TILE, carlo_mpi_rank(), carlo_mpi_size());
        lua_concat(L, 2);
    }
}

static int index_field(lua_State *L, carlo_sys *c, const char *k)
{
    kmc_system *s = (kmc_system *)c;
    if (strcmp(k, "t") == 0) /* read by the system layer; here so that setting it says read-only */
        lua_pushnumber(L, s->ctrl.t);
    else if (strcmp(k, "events") == 0)
        lua_pushinteger(L, (lua_Integer)s->ctrl.events);
    else if (strcmp(k, "m") == 0)
        lua_pushinteger(L, s->m);
    else if (strcmp(k, "n") == 0)
        lua_pushinteger(L, s->n);
    else if (strcmp(k, "N") == 0)
        lua_pushinteger(L, (lua_Integer)s->m * s->n);
    else if (strcmp(k, "tiles") == 0)
        lua_pushinteger(L, (lua_Integer)s->geom.ntr * s->geom.ntc);
    else if (strcmp(k, "algorithm") == 0)
        lua_pushstring(L, kmc_algorithm_name(s->algorithm));
    else if (strcmp(k, "kind") == 0)
        lua_pushstring(L, kind_name(s));
    else if (strcmp(k, "halo") == 0)
        lua_pushinteger(L, s->geom.halo);
    else if (strcmp(k, "repair") == 0)
        lua_pushboolean(L, s->ctrl.repair != 0);
    else if (strcmp(k, "dt") == 0)
        lua_pushnumber(L, s->ctrl.dt);
    else if (strcmp(k, "neighbourhood") == 0)
        lua_pushinteger(L, s->model.nbh);
    else if (strcmp(k, "states") == 0 && s->model.kind == KMC_TABLE)
        lua_pushinteger(L, s->model.S);
    else if (strcmp(k, "decomposed") == 0)
        lua_pushboolean(L, s->split);
    else if (strcmp(k, "gpu") == 0) { /* the CUDA index of the GPU it runs on; nil on the CPU */
        if (s->device == CARLO_GPU)
            lua_pushinteger(L, carlo_gpu_pick());
        else
            lua_pushnil(L);
    } else if (strcmp(k, "rows") == 0) { /* this rank's first and last lattice row, from 1 */
        lua_createtable(L, 2, 0);
        lua_pushinteger(L, (lua_Integer)s->tile_row0 * KMC_TILE + 1);
        lua_rawseti(L, -2, 1);
        lua_pushinteger(L, (lua_Integer)(s->tile_row0 + s->tile_rows) * KMC_TILE);
        lua_rawseti(L, -2, 2);
    } else if (strcmp(k, "tiles_per_block") == 0) { /* a launch shape: sys:launch() */
        carlo_lua_renamed("kmc", "tiles_per_block", "launch().tiles_per_block");
        lua_pushinteger(L, s->tiles_per_block);
    } else
        return 0;
    return 1;
}

/* { state = i32 m x n array, shape = { m, n }, step =, t =, events = } */
static void snapshot(lua_State *L, carlo_sys *c, int replica)
{
    (void)replica;
    kmc_system *s = (kmc_system *)c;
    if (carlo_sys_alive(c))
        carlo_raise(L, "kmc:snapshot");
    lua_createtable(L, 0, 5);
    carlo_array *x = carlo_array_push(L, CARLO_I32, s->m, s->n);
    lua_setfield(L, -2, "state");
    if (s->be->get_state(s, (int32_t *)x->data, NULL, NULL)) {
        kmc_fail(s);
        carlo_raise(L, "kmc:snapshot");
    }
    lua_createtable(L, 2, 0);
    lua_pushinteger(L, s->m);
    lua_rawseti(L, -2, 1);
    lua_pushinteger(L, s->n);
    lua_rawseti(L, -2, 2);
    lua_setfield(L, -2, "shape");
    carlo_lua_setint(L, "step", (long long)s->step);
    carlo_lua_setnum(L, "t", s->ctrl.t);
    carlo_lua_setint(L, "events", (long long)s->ctrl.events);
}

/* run{ events =, every =, trajectory = }: the events take at least events / (N rate_max) in
 * time, so a frame interval that would write more than 1e9 frames over that is refused (the
 * shared layer checks runs of a given time). */
static void run_args(lua_State *L, int args, carlo_sys *c, carlo_run_opts *o, const char *where)
{
    const kmc_system *s = (const kmc_system *)c;
    if (o->clock != CARLO_CLOCK_EVENTS || !carlo_arg_has(L, args, "trajectory") ||
        !carlo_arg_has(L, args, "every") || !(s->rate_max > 0))
        return;
    double every = carlo_arg_num(L, args, where, "every", 1, 0, 0, 0, 1e300, 1);
    double least = (double)o->n / ((double)s->m * (double)s->n * s->rate_max);
    if (least / every > 1e9)
        luaL_error(L, "%s: every = %f would write at least %f frames over events = %I (at most 1e9)",
                   where, every, least / every, (lua_Integer)o->n);
}

static void sample_extra(lua_State *L, carlo_sys *c, int replica, const void *opt)
{
    (void)replica;
    (void)opt;
    const kmc_system *s = (const kmc_system *)c;
    carlo_lua_setnum(L, "t", s->ctrl.t);
    carlo_lua_setint(L, "events", (long long)s->ctrl.events);
}

/* min and max as the integers they are; user models' populations as counts[x + 1] too */
static void observe_extra(lua_State *L, carlo_sys *c, int replica, const double *v)
{
    (void)replica;
    const kmc_system *s = (const kmc_system *)c;
    carlo_lua_setint(L, "min", (long long)v[2]);
    carlo_lua_setint(L, "max", (long long)v[3]);
    if (s->model.kind != KMC_TABLE)
        return;
    lua_createtable(L, s->model.S, 0);
    for (int k = 0; k < s->model.S; k++) {
        lua_pushinteger(L, (lua_Integer)v[4 + k]);
        lua_rawseti(L, -2, k + 1);
    }
    lua_setfield(L, -2, "counts");
}

/* Seconds kept in hand for the checkpoint of a walltime-limited run: states, clocks and draw
 * counters (16 bytes a site) at a conservative 100 MB/s plus half a second. */
static double reserve(const carlo_sys *c)
{
    const kmc_system *s = (const kmc_system *)c;
    return 0.5 + (double)s->m * (double)s->n * 16.0 / 1e8;
}

/* carlo.load without a device: the serial algorithms' checkpoints go to the CPU */
static const char *load_device(const carlo_frame *f)
{
    const int32_t *shape = carlo_frame_expect(f, "kmc/shape", CARLO_I32, 8, 1);
    return shape && shape[2] != KMC_TILED ? "cpu" : NULL;
}

static const char *const aliases[] = {"phi", "bond", NULL};
static const char *const refused[] = {
    "sweeps", "KMC counts model time (time =, upto =) or events (events =), not sweeps", NULL};

static const luaL_Reg methods[] = {
    {"try_step", l_try_step}, {"substep", l_substep}, {"clocks", l_clocks},
    {"counters", l_counters}, {"stats", l_stats}, {"launch", l_launch}, {"png", l_png},
    {NULL, NULL}};

const carlo_lua_model kmc_lua_model = {
    .ops = &kmc_ops,
    .metatable = "carlo.kmc",
    .methods = methods,
    .index = index_field,
    .describe = describe,
    .snapshot = snapshot,
    .run_args = run_args,
    .sample_extra = sample_extra,
    .observe_extra = observe_extra,
    .reserve = reserve,
    .aliases = aliases,
    .load_device = load_device,
    .refused = refused,
};

void kmc_lua_open(lua_State *L)
{
    carlo_lua_model_register(L, &kmc_lua_model);
    lua_pushcfunction(L, l_kmc);
    lua_setfield(L, -2, "kmc");
}
