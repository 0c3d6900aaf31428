/* fe_lua.c — the raw binding of the MBAR core, carlo._mbar(spec); lua/carlo/free_energy.lua
 * builds carlo.mbar on it (argument checking, subsampling, heat capacity, ...). */
#include "fe/fe_lua.h"

#include <lauxlib.h>
#include <math.h>
#include <string.h>

#include "core/array.h"
#include "fe/mbar.h"

#define MBAR_MT "carlo.mbar_core"

typedef struct mbar_ud {
    fe_mbar *m;
    int solved;
} mbar_ud;

static mbar_ud *check_ud(lua_State *L, int idx)
{
    mbar_ud *u = luaL_checkudata(L, idx, MBAR_MT);
    if (!u->m)
        luaL_error(L, "carlo.mbar: the object was released");
    return u;
}

static int l_gc(lua_State *L)
{
    mbar_ud *u = luaL_checkudata(L, 1, MBAR_MT);
    fe_mbar_free(u->m);
    u->m = NULL;
    return 0;
}

/* Length of the series at idx (a list or a carlo.array). */
static size_t series_len(lua_State *L, int idx, const char *what)
{
    carlo_array *a = carlo_array_test(L, idx);
    if (a)
        return a->n;
    if (!lua_istable(L, idx))
        luaL_error(L, "carlo.mbar: %s must be a list of numbers or a carlo.array", what);
    return lua_rawlen(L, idx);
}

/* Copy the series at idx into dst (n values), refusing what is not a finite number. */
static void series_read(lua_State *L, int idx, const char *what, size_t n, double *dst)
{
    carlo_array *a = carlo_array_test(L, idx);
    for (size_t j = 0; j < n; j++) {
        double v;
        int ok = 1;
        if (a)
            v = carlo_array_get(a, j);
        else {
            lua_rawgeti(L, idx, (lua_Integer)j + 1);
            v = lua_tonumberx(L, -1, &ok);
            lua_pop(L, 1);
        }
        if (!ok || !isfinite(v))
            luaL_error(L, "carlo.mbar: %s[%I] must be a finite number", what, (lua_Integer)j + 1);
        dst[j] = v;
    }
}

/* The table field key of the table at idx, which must be a list of K lists; pushes it. */
static int per_state(lua_State *L, int idx, int K, const char *what)
{
    if (!lua_istable(L, idx) || (int)lua_rawlen(L, idx) != K)
        return luaL_error(L, "carlo.mbar: %s must hold one series per state (%d)", what, K);
    return 0;
}

/* spec[key] holds `count` blocks, each one series per state (in the order of nk): copy block
 * b into dst + b n, the states' series one after the other. */
static void read_blocks(lua_State *L, const char *key, int count, const double *nk, fe_mbar *m,
                        double *dst)
{
    char what[64];
    lua_getfield(L, 1, key);
    if (!lua_istable(L, -1) || (int)lua_rawlen(L, -1) != count)
        luaL_error(L, "carlo.mbar: %s must hold %d lists of series", key, count);
    for (int b = 0; b < count; b++) {
        lua_rawgeti(L, -1, b + 1);
        snprintf(what, sizeof what, "%s[%d]", key, b + 1);
        per_state(L, -1, m->K, what);
        size_t off = 0;
        for (int l = 0; l < m->K; l++) {
            lua_rawgeti(L, -1, l + 1);
            snprintf(what, sizeof what, "%s[%d][%d]", key, b + 1, l + 1);
            if (series_len(L, -1, what) != (size_t)nk[l])
                luaL_error(L, "carlo.mbar: %s must hold %I values", what, (lua_Integer)nk[l]);
            series_read(L, lua_gettop(L), what, (size_t)nk[l], dst + (size_t)b * m->n + off);
            off += (size_t)nk[l];
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

/* carlo._mbar{ nk = {N_1, ...}, coef = {{c_11, ..}, ..}, x = { {series per state}, ... }
 *             | u = { [k] = { [l] = series } }, obs = { {series per state}, ... }, bins = w }
 * Series are stored state by state in the order of nk. */
static int l_new(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_getfield(L, 1, "nk");
    int K = (int)lua_rawlen(L, -1);
    if (K < 1)
        return luaL_error(L, "carlo.mbar: nk must list the samples of each state");
    size_t n = 0;
    double *nk = lua_newuserdatauv(L, (size_t)K * sizeof(double), 0);
    lua_insert(L, -2);
    for (int k = 0; k < K; k++) {
        lua_rawgeti(L, -1, k + 1);
        lua_Integer v = lua_tointeger(L, -1);
        lua_pop(L, 1);
        if (v < 1)
            return luaL_error(L, "carlo.mbar: state %d has no samples", k + 1);
        nk[k] = (double)v;
        n += (size_t)v;
    }
    lua_pop(L, 1);
    int M = 0, nobs = 0;
    lua_getfield(L, 1, "coef");
    int linear = lua_istable(L, -1);
    if (linear) {
        per_state(L, -1, K, "coef");
        lua_rawgeti(L, -1, 1);
        M = (int)lua_rawlen(L, -1);
        lua_pop(L, 1);
        if (M < 1 || M > 8)
            return luaL_error(L, "carlo.mbar: coef must give 1 to 8 coefficients per state");
    }
    lua_pop(L, 1);
    lua_getfield(L, 1, "obs");
    if (lua_istable(L, -1))
        nobs = (int)lua_rawlen(L, -1);
    lua_pop(L, 1);
    mbar_ud *u = lua_newuserdatauv(L, sizeof *u, 0);
    u->m = NULL;
    u->solved = 0;
    luaL_setmetatable(L, MBAR_MT);
    int ud = lua_gettop(L);
    fe_mbar *m = fe_mbar_new(K, M, nobs, n);
    if (!m)
        return luaL_error(L, "carlo.mbar: out of memory for %d states x %I samples", K, (lua_Integer)n);
    u->m = m;
    memcpy(m->Nk, nk, (size_t)K * sizeof(double));
    char what[64];
    if (linear) {
        lua_getfield(L, 1, "coef");
        for (int k = 0; k < K; k++) {
            lua_rawgeti(L, -1, k + 1);
            snprintf(what, sizeof what, "coef[%d]", k + 1);
            if ((int)series_len(L, -1, what) != M)
                return luaL_error(L, "carlo.mbar: %s must hold %d numbers", what, M);
            series_read(L, lua_gettop(L), what, (size_t)M, m->coef + (size_t)k * M);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    read_blocks(L, linear ? "x" : "u", linear ? M : K, nk, m, linear ? m->x : m->u);
    if (nobs)
        read_blocks(L, "obs", nobs, nk, m, m->obs);
    lua_settop(L, ud);
    return 1;
}

/* core:solve([tol [, maxit [, bins]]]): the starting point from the state-by-state rows, then
 * the rows binned when bins is given, then the solver. Returns the passes it took. */
static int l_solve(lua_State *L)
{
    mbar_ud *u = check_ud(L, 1);
    fe_mbar *m = u->m;
    double tol = luaL_optnumber(L, 2, 1e-12);
    int maxit = (int)luaL_optinteger(L, 3, 200);
    double bins = luaL_optnumber(L, 4, 0.0);
    double *f0 = lua_newuserdatauv(L, (size_t)m->K * sizeof(double), 0);
    fe_mbar_guess(m, f0);
    if (bins > 0.0) {
        if (m->M != 1)
            return luaL_error(L, "carlo.mbar: the histogram method needs a beta ladder (one energy)");
        if (fe_mbar_bin(m, bins))
            return luaL_error(L, "carlo.mbar: out of memory binning %I samples", (lua_Integer)m->n);
    }
    char err[200];
    if (fe_mbar_solve(m, f0, tol, maxit, err, sizeof err))
        return luaL_error(L, "carlo.mbar: %s", err);
    u->solved = 1;
    lua_pushinteger(L, m->iterations);
    lua_pushnumber(L, m->residual);
    lua_pushinteger(L, (lua_Integer)m->n);
    return 3;
}

static void push_vec(lua_State *L, const double *v, int n)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushnumber(L, v[i]);
        lua_rawseti(L, -2, i + 1);
    }
}

static void push_mat(lua_State *L, const double *v, int n)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        push_vec(L, v + (size_t)i * n, n);
        lua_rawseti(L, -2, i + 1);
    }
}

static fe_mbar *solved(lua_State *L)
{
    mbar_ud *u = check_ud(L, 1);
    if (!u->solved)
        luaL_error(L, "carlo.mbar: not solved");
    return u->m;
}

static int l_f(lua_State *L)
{
    fe_mbar *m = solved(L);
    push_vec(L, m->f, m->K);
    return 1;
}

static int l_theta(lua_State *L)
{
    fe_mbar *m = solved(L);
    double *t = lua_newuserdatauv(L, (size_t)m->K * (size_t)m->K * sizeof(double), 0);
    if (fe_mbar_theta(m, t))
        return luaL_error(L, "carlo.mbar: out of memory for the covariance");
    push_mat(L, t, m->K);
    return 1;
}

/* core:expect(target, { obs indices }) -> f_t, df_t, { means }, { cov rows }; target: the
 * coefficients of a linear problem, or one series per state of the reduced energy. */
static int l_expect(lua_State *L)
{
    fe_mbar *m = solved(L);
    luaL_checktype(L, 2, LUA_TTABLE);
    int na = lua_istable(L, 3) ? (int)lua_rawlen(L, 3) : 0;
    if (na > 16)
        return luaL_error(L, "carlo.mbar: at most 16 observables at once");
    int which[na > 0 ? na : 1];
    for (int a = 0; a < na; a++) {
        lua_rawgeti(L, 3, a + 1);
        lua_Integer v = lua_tointeger(L, -1);
        lua_pop(L, 1);
        if (v < 1 || v > m->nobs)
            return luaL_error(L, "carlo.mbar: observable index %I out of range", v);
        which[a] = (int)v - 1;
    }
    double *tcoef = NULL, *tu = NULL;
    double coef[8];
    if (m->M > 0) {
        if ((int)lua_rawlen(L, 2) != m->M)
            return luaL_error(L, "carlo.mbar: the target needs %d coefficients", m->M);
        series_read(L, 2, "target", (size_t)m->M, coef);
        tcoef = coef;
    } else {
        per_state(L, 2, m->K, "the target's reduced energies");
        tu = lua_newuserdatauv(L, (m->n ? m->n : 1) * sizeof(double), 0);
        size_t off = 0;
        char what[64];
        for (int l = 0; l < m->K; l++) {
            lua_rawgeti(L, 2, l + 1);
            snprintf(what, sizeof what, "target[%d]", l + 1);
            if (series_len(L, -1, what) != (size_t)m->Nk[l])
                return luaL_error(L, "carlo.mbar: %s must hold %I values", what, (lua_Integer)m->Nk[l]);
            series_read(L, lua_gettop(L), what, (size_t)m->Nk[l], tu + off);
            off += (size_t)m->Nk[l];
            lua_pop(L, 1);
        }
    }
    double ft, dft, mean[na > 0 ? na : 1], cov[na > 0 ? na * na : 1];
    int rc = fe_mbar_expect(m, tcoef, tu, na, which, &ft, &dft, mean, cov);
    if (rc == -2)
        return luaL_error(L, "carlo.mbar: interrupted");
    if (rc)
        return luaL_error(L, "carlo.mbar: out of memory reweighting");
    lua_pushnumber(L, ft);
    lua_pushnumber(L, dft);
    push_vec(L, mean, na);
    push_mat(L, cov, na);
    return 4;
}

void fe_lua_open(lua_State *L)
{
    static const luaL_Reg methods[] = {
        {"solve", l_solve}, {"f", l_f}, {"theta", l_theta}, {"expect", l_expect}, {NULL, NULL}};
    if (luaL_newmetatable(L, MBAR_MT)) {
        lua_pushcfunction(L, l_gc);
        lua_setfield(L, -2, "__gc");
        luaL_newlib(L, methods);
        lua_setfield(L, -2, "__index");
    }
    lua_pop(L, 1);
    lua_pushcfunction(L, l_new);
    lua_setfield(L, -2, "_mbar");
}
