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
#include "mpi/mpi.h"
#include "potts/potts.h"
#include "potts/potts_lua.h"
#include "system/system_lua.h"

static const char *const ALGORITHMS[] = {"metropolis", "heatbath", NULL};
static const char *const INITS[] = {"random", "ordered", NULL};
static const char *const DEVICES[] = {"auto", "cpu", "gpu", NULL};
/* potts_halo's names: what may be asked for (the first three), and what is in use */
static const char *const HALOS[] = {"auto", "staged", "direct", "none", "host", NULL};

extern const carlo_lua_model potts_lua_model;

static potts_system *check(lua_State *L, int idx)
{
    return (potts_system *)carlo_lua_check(L, idx, &potts_lua_model);
}

/* Item k of the list at idx, a temperature: its beta. The message names the item and the value
 * received ("temperatures[2] must be a number >= 0.00564972 (got the string "1")"). */
static double beta_of_T(lua_State *L, int idx, const char *where, const char *what, int k)
{
    double T = carlo_arg_item_num(L, idx, where, what, k, 1.0 / POTTS_BETA_MAX, 1, INFINITY, 0);
    double beta = 1.0 / T;
    if (!potts_beta_ok(beta))
        luaL_error(L, "%s: %s[%d] must be a temperature >= 1/%f (got %f)", where, what, k,
                   POTTS_BETA_MAX, T);
    return beta;
}

/* init = a snapshot table: its state array (u8 L x L, or R x L x L for an ensemble). */
static int init_from_snapshot(lua_State *L, potts_system *s, int idx, const char *where)
{
    lua_getfield(L, idx, "state");
    carlo_array *a = carlo_array_test(L, -1);
    size_t plane = (size_t)s->L * (size_t)s->L;
    if (!a || a->type != CARLO_U8 || (a->n != plane && a->n != plane * (size_t)s->R))
        return carlo_seterr("%s: init must be \"random\", \"ordered\" or a snapshot whose state is "
                            "a u8 array of %d x %d states", where, s->L, s->L);
    const uint8_t *v = (const uint8_t *)a->data;
    for (size_t i = 0; i < a->n; i++)
        if (v[i] >= s->q)
            return carlo_seterr("%s: init: state %zu is %d, states run from 0 to %d", where, i + 1,
                                v[i], s->q - 1);
    for (int r = 0; r < s->R; r++)
        if (s->be->set_lattice(s, r, v + (a->n == plane ? 0 : (size_t)r * plane)))
            return -1;
    lua_pop(L, 1);
    return 0;
}

/* ---------- constructors ---------- */

static int construct(lua_State *L, int ensemble)
{
    const char *where = ensemble ? "carlo.potts_ensemble" : "carlo.potts";
    static const char *const single_keys[] = {"L", "q", "T", "beta", "seed", "init", "start",
                                              "device", "algorithm", "quiet", "decompose", "halo",
                                              NULL};
    static const char *const ensemble_keys[] = {"L", "q", "temperatures", "seed", "init", "start",
                                                "device", "algorithm", "quiet", "decompose", "halo",
                                                NULL};
    static const char *const ASKED[] = {"auto", "staged", "direct", NULL};
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    carlo_args_allowed(L, 1, where, ensemble ? ensemble_keys : single_keys);
    carlo_arg_bool(L, 1, where, "quiet", 0);
    int split = carlo_arg_bool(L, 1, where, "decompose", 0); /* rows over the MPI ranks */

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
        for (int k = 0; k < R; k++)
            beta[k] = beta_of_T(L, -2, where, "temperatures", k + 1);
        int up = 0, down = 0;
        for (int k = 1; k < R; k++) {
            up += beta[k] < beta[k - 1];
            down += beta[k] > beta[k - 1];
        }
        if (R > 1 && up != R - 1 && down != R - 1)
            return luaL_error(L, "%s: temperatures must be strictly increasing or strictly "
                                 "decreasing (neighbours in the list exchange)", where);
    } else {
        int hasT = carlo_arg_has(L, 1, "T"), hasB = carlo_arg_has(L, 1, "beta");
        if (hasT == hasB)
            return luaL_error(L, "%s: give exactly one of T and beta (T >= 1/%f, beta in [0, %f])",
                              where, POTTS_BETA_MAX, POTTS_BETA_MAX);
        beta = (double *)lua_newuserdatauv(L, sizeof(double), 0);
        if (hasT)
            beta[0] = 1.0 / carlo_arg_num(L, 1, where, "T", 1, 0, 1.0 / POTTS_BETA_MAX, 1,
                                          INFINITY, 0);
        else
            beta[0] = carlo_arg_num(L, 1, where, "beta", 1, 0, 0, 1, POTTS_BETA_MAX, 1);
    }
    uint64_t seed = carlo_arg_seed(L, 1, where);
    int algorithm = carlo_arg_enum(L, 1, where, "algorithm", "metropolis", ALGORITHMS);
    carlo_arg_enum(L, 1, where, "device", carlo_device_default(), DEVICES);
    const char *device = carlo_arg_str(L, 1, where, "device", 0);
    carlo_device_kind kind = carlo_lua_device(L, where, device);
    /* how a split GPU system's halos travel ("auto": CARLO_HALO's choice, else the best) */
    int halo = carlo_arg_enum(L, 1, where, "halo", "auto", ASKED);
    int init = carlo_lua_init_arg(L, 1, where, "start", "random", INITS, 1);
    int init_idx = lua_gettop(L);

    potts_params p = {.L = (int)Lside, .q = q, .R = R, .algorithm = (potts_algorithm)algorithm,
                      .device = kind, .seed = seed, .beta = beta, .split = split,
                      .halo = (potts_halo)halo};
    potts_system *s = potts_create(&p);
    if (!s)
        return carlo_raise(L, where);
    int rc = init < 0   ? init_from_snapshot(L, s, init_idx, where)
             : init == 0 ? potts_start_random(s)
                         : potts_start_ordered(s);
    if (rc) {
        lua_pushstring(L, carlo_errmsg());
        potts_destroy(s);
        return lua_error(L);
    }
    carlo_lua_push_system(L, &potts_lua_model, &s->sys);
    return 1;
}

static int l_potts(lua_State *L) { return construct(L, 0); }
static int l_potts_ensemble(lua_State *L) { return construct(L, 1); }

/* sys:sweep(): one sweep, colour 0 then colour 1 (the two checkerboard substeps). */
static int l_sweep(lua_State *L)
{
    potts_system *s = check(L, 1);
    if (potts_sweep_color(s, 0) || potts_sweep_color(s, 1))
        return carlo_raise(L, "potts:sweep");
    return 0;
}

static int substep(lua_State *L, const char *where)
{
    potts_system *s = check(L, 1);
    lua_Integer c = luaL_checkinteger(L, 2);
    if (c != 0 && c != 1)
        return luaL_error(L, "%s: the colour must be 0 or 1 (got %I)", where, c);
    if (potts_sweep_color(s, (int)c))
        return carlo_raise(L, where);
    return 0;
}

/* sys:substep(c): one checkerboard colour (0 or 1); a sweep is substep(0), substep(1). */
static int l_substep(lua_State *L)
{
    return substep(L, "potts:substep");
}

static int l_sweep_color(lua_State *L)
{
    carlo_lua_renamed("potts", "sweep_color", "substep");
    return substep(L, "potts:sweep_color");
}

static int l_exchange(lua_State *L)
{
    potts_system *s = check(L, 1);
    if (potts_exchange(s))
        return carlo_raise(L, "potts:exchange");
    return 0;
}

/* Replica holding temperature index k (1-based argument, default 1). */
static int replica_arg(lua_State *L, potts_system *s, int idx, const char *where)
{
    lua_Integer k = luaL_optinteger(L, idx, 1);
    if (k < 1 || k > s->R)
        luaL_error(L, "%s: temperature index must be from 1 to %d (got %I)", where, s->R, k);
    return s->slot[k - 1];
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

/* ---------- the system layer's Lua face ---------- */

/* ", GPU k" on the GPU; for a split system this rank's rows and the halos' path. */
static void describe(lua_State *L, carlo_sys *c)
{
    potts_system *s = (potts_system *)c;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    if (s->R == 1)
        lua_pushfstring(L, "L = %d, q = %d, T = %f, %s", s->L, s->q, s->temperatures[0],
                        ALGORITHMS[s->algorithm]);
    else
        lua_pushfstring(L, "L = %d, q = %d, %d temperatures, %s", s->L, s->q, s->R,
                        ALGORITHMS[s->algorithm]);
    luaL_addvalue(&b);
    if (s->device == CARLO_GPU) {
        lua_pushfstring(L, ", GPU %d", carlo_gpu_pick());
        luaL_addvalue(&b);
    }
    if (s->split) {
        lua_pushfstring(L, ", rows %d-%d on rank %d of %d, halos %s", s->row0 + 1,
                        s->row0 + s->rows, carlo_mpi_rank(), carlo_mpi_size(), HALOS[s->halo]);
        luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
}

static int index_field(lua_State *L, carlo_sys *c, const char *k)
{
    potts_system *s = (potts_system *)c;
    if (strcmp(k, "L") == 0)
        lua_pushinteger(L, s->L);
    else if (strcmp(k, "q") == 0)
        lua_pushinteger(L, s->q);
    else if (strcmp(k, "N") == 0)
        lua_pushinteger(L, (lua_Integer)s->L * s->L);
    else if (strcmp(k, "R") == 0)
        lua_pushinteger(L, s->R);
    else if (strcmp(k, "algorithm") == 0)
        lua_pushstring(L, ALGORITHMS[s->algorithm]);
    else if (strcmp(k, "decomposed") == 0)
        lua_pushboolean(L, s->split);
    else if (strcmp(k, "halo") == 0) /* "none", "host", "staged" or "direct" */
        lua_pushstring(L, HALOS[s->halo]);
    else if (strcmp(k, "gpu") == 0) { /* the CUDA index of the GPU it runs on; nil on the CPU */
        if (s->device == CARLO_GPU)
            lua_pushinteger(L, carlo_gpu_pick());
        else
            lua_pushnil(L);
    }
    else if (strcmp(k, "rows") == 0) { /* this rank's rows, 1-based: { first, last } */
        lua_createtable(L, 2, 0);
        lua_pushinteger(L, s->row0 + 1);
        lua_rawseti(L, -2, 1);
        lua_pushinteger(L, s->row0 + s->rows);
        lua_rawseti(L, -2, 2);
    }
    else if (strcmp(k, "temperatures") == 0 || strcmp(k, "map") == 0) {
        lua_createtable(L, s->R, 0);
        for (int i = 0; i < s->R; i++) {
            if (k[0] == 't')
                lua_pushnumber(L, s->temperatures[i]);
            else
                lua_pushinteger(L, s->slot[i] + 1);
            lua_rawseti(L, -2, i + 1);
        }
    } else
        return 0;
    return 1;
}

/* { state = u8 L x L array, shape = { L, L }, step =, T = } of temperature index k */
static void snapshot(lua_State *L, carlo_sys *c, int k)
{
    potts_system *s = (potts_system *)c;
    lua_createtable(L, 0, 4);
    carlo_array *a = carlo_array_push(L, CARLO_U8, s->L, s->L);
    if (s->be->get_lattice(s, s->slot[k], (uint8_t *)a->data))
        carlo_raise(L, "potts:snapshot");
    lua_setfield(L, -2, "state");
    lua_createtable(L, 2, 0);
    lua_pushinteger(L, s->L);
    lua_rawseti(L, -2, 1);
    lua_pushinteger(L, s->L);
    lua_rawseti(L, -2, 2);
    lua_setfield(L, -2, "shape");
    carlo_lua_setint(L, "step", (long long)s->step);
    carlo_lua_setnum(L, "T", s->temperatures[k]);
}

static int exchange_hook(carlo_sys *c, void *ctx)
{
    (void)ctx;
    return potts_exchange((potts_system *)c);
}

static const char *const run_keys[] = {"exchange_every", NULL};

static void run_args(lua_State *L, int args, carlo_sys *c, carlo_run_opts *o, const char *where)
{
    (void)c;
    o->hook[0].every = (uint64_t)carlo_arg_int(L, args, where, "exchange_every", 0, 0, 1,
                                               (int64_t)1 << 40);
    o->hook[0].fn = o->hook[0].every ? exchange_hook : NULL;
}

static void sample_extra(lua_State *L, carlo_sys *c, int k, const void *opt)
{
    (void)opt;
    carlo_lua_setnum(L, "T", ((potts_system *)c)->temperatures[k]);
}

/* The exact counts behind e and m. */
static void observe_extra(lua_State *L, carlo_sys *c, int k, const double *v)
{
    (void)k;
    potts_system *s = (potts_system *)c;
    double N = (double)s->L * (double)s->L;
    carlo_lua_setint(L, "equal_bonds", llround(-v[0] * N));
    carlo_lua_setint(L, "nmax", llround((v[1] * (s->q - 1) + 1) * N / s->q));
}

/* Seconds kept in hand for the checkpoint when a walltime is given: the lattices at a
 * conservative 100 MB/s plus half a second. */
static double reserve(const carlo_sys *c)
{
    const potts_system *s = (const potts_system *)c;
    return 0.5 + (double)s->L * (double)s->L * (double)s->R / 1e8;
}

static const luaL_Reg methods[] = {
    {"sweep", l_sweep}, {"substep", l_substep}, {"sweep_color", l_sweep_color},
    {"set_lattice", l_set_lattice}, {"png", l_png}, {"exchange", l_exchange},
    {"tempering", l_tempering}, {NULL, NULL}};

const carlo_lua_model potts_lua_model = {
    .ops = &potts_ops,
    .metatable = "carlo.potts",
    .methods = methods,
    .index = index_field,
    .describe = describe,
    .snapshot = snapshot,
    .run_keys = run_keys,
    .run_args = run_args,
    .sample_extra = sample_extra,
    .observe_extra = observe_extra,
    .reserve = reserve,
};

void potts_lua_open(lua_State *L)
{
    carlo_lua_model_register(L, &potts_lua_model);
    lua_pushcfunction(L, l_potts);
    lua_setfield(L, -2, "potts");
    lua_pushcfunction(L, l_potts_ensemble);
    lua_setfield(L, -2, "potts_ensemble");
    luaL_getsubtable(L, -1, "reference");
    lua_pushcfunction(L, l_reference_sweep);
    lua_setfield(L, -2, "potts_sweep");
    lua_pop(L, 1);
}
