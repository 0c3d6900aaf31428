/* system_lua.c — see system_lua.h. Systems are userdata holding a carlo_sys pointer; their
 * metatable (one per model, named after it) carries the model in __carlo_lua_model. */
#include "system/system_lua.h"

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
#include "traj/checkpoint.h"
#include "traj/traj_lua.h"

#define MODEL_KEY "__carlo_lua_model"
#define LUA_MODELS "carlo.lua_models"

typedef struct sys_ud {
    carlo_sys *s;
} sys_ud;

/* ---------- small helpers ---------- */

void carlo_lua_setnum(lua_State *L, const char *key, double v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, key);
}

void carlo_lua_setint(lua_State *L, const char *key, long long v)
{
    lua_pushinteger(L, (lua_Integer)v);
    lua_setfield(L, -2, key);
}

void carlo_lua_renamed(const char *where, const char *old, const char *new_name)
{
    /* once per (where, old) pair, for the life of the process */
    static char seen[32][96];
    static int nseen;
    char key[96];
    snprintf(key, sizeof key, "%s.%s", where, old);
    for (int k = 0; k < nseen; k++)
        if (strcmp(seen[k], key) == 0)
            return;
    if (nseen < 32)
        snprintf(seen[nseen++], sizeof seen[0], "%s", key);
    if (!carlo_quiet)
        fprintf(stderr, "carlo: %s: '%s' is now '%s'; the old name goes in the next release\n",
                where, old, new_name);
}

int carlo_lua_init_arg(lua_State *L, int args, const char *where, const char *old,
                       const char *def, const char *const *names, int allow_table)
{
    args = lua_absindex(L, args);
    const char *key = "init";
    int has_old = old && carlo_arg_has(L, args, old);
    if (has_old && carlo_arg_has(L, args, "init"))
        luaL_error(L, "%s: give init, not both init and %s", where, old);
    if (has_old) {
        carlo_lua_renamed(where, old, "init");
        key = old;
    }
    if (allow_table) {
        if (lua_getfield(L, args, key) == LUA_TTABLE)
            return -1;
        lua_pop(L, 1);
    }
    return carlo_arg_enum(L, args, where, key, def, names);
}

static const carlo_lua_model *model_of(lua_State *L, int idx)
{
    if (lua_type(L, idx) != LUA_TUSERDATA || !lua_getmetatable(L, idx))
        return NULL;
    lua_getfield(L, -1, MODEL_KEY);
    const carlo_lua_model *m = (const carlo_lua_model *)lua_touserdata(L, -1);
    lua_pop(L, 2);
    return m;
}

carlo_sys *carlo_lua_tosys(lua_State *L, int idx)
{
    if (!model_of(L, idx))
        return NULL;
    return ((sys_ud *)lua_touserdata(L, idx))->s;
}

carlo_sys *carlo_lua_check(lua_State *L, int idx, const carlo_lua_model *m)
{
    const carlo_lua_model *have = model_of(L, idx);
    if (!have || (m && have != m))
        luaL_error(L, "expected a %s system (got %s)", m ? m->metatable : "carlo",
                   luaL_typename(L, idx));
    carlo_sys *s = ((sys_ud *)lua_touserdata(L, idx))->s;
    if (!s)
        luaL_error(L, "%s: this system was closed", have->metatable);
    return s;
}

static const carlo_lua_model *check_model(lua_State *L, int idx, carlo_sys **s)
{
    *s = carlo_lua_check(L, idx, NULL);
    return model_of(L, idx);
}

/* "potts:run" */
static const char *where_of(lua_State *L, const carlo_lua_model *m, const char *verb)
{
    return lua_pushfstring(L, "%s:%s", m->ops->name, verb);
}

/* The model's keys followed by the common ones, as one NULL-terminated list (a userdata). */
static const char *const *keys_with(lua_State *L, const char *const *common,
                                    const char *const *own)
{
    int n = 0, k = 0;
    while (common[n])
        n++;
    while (own && own[k])
        k++;
    const char **all = (const char **)lua_newuserdatauv(L, sizeof(char *) * (size_t)(n + k + 1), 0);
    memcpy(all, common, sizeof(char *) * (size_t)n);
    if (k)
        memcpy(all + n, own, sizeof(char *) * (size_t)k);
    all[n + k] = NULL;
    return all;
}

/* ---------- run ---------- */

/* The model's refused keys of run and sample, each with its message. */
static void refuse_keys(lua_State *L, const carlo_lua_model *m, int args, const char *where)
{
    for (int k = 0; m->refused && m->refused[k]; k += 2)
        if (carlo_arg_has(L, args, m->refused[k]))
            luaL_error(L, "%s: %s", where, m->refused[k + 1]);
}

static int write_frame(void *ctx, carlo_frame *f)
{
    return traj_sink_take((traj_sink *)ctx, f);
}

/* How much of the run the keyword table at args asks for: the clock and its amount. */
static void run_amount(lua_State *L, int args, carlo_sys *s, const char *where, carlo_run_opts *o)
{
    const carlo_ops *ops = s->ops;
    if (!ops->continuous) {
        int has_n = carlo_arg_has(L, args, ops->unit), has_upto = carlo_arg_has(L, args, "upto");
        if (has_n == has_upto)
            luaL_error(L, "%s: give exactly one of %s (how many) and upto (the step to reach)",
                       where, ops->unit);
        o->clock = CARLO_CLOCK_STEP;
        if (has_n) {
            o->n = (uint64_t)carlo_arg_int(L, args, where, ops->unit, 1, 0, 0, (int64_t)1 << 47);
        } else {
            uint64_t upto = (uint64_t)carlo_arg_int(L, args, where, "upto", 1, 0, 0, (int64_t)1 << 47);
            o->n = upto > s->step ? upto - s->step : 0;
        }
        return;
    }
    double t;
    uint64_t ev;
    ops->clock(s, &t, &ev);
    int has_t = carlo_arg_has(L, args, "time"), has_e = carlo_arg_has(L, args, "events"),
        has_upto = carlo_arg_has(L, args, "upto");
    if (has_t + has_e + has_upto != 1)
        luaL_error(L, "%s: give exactly one of time (how long), events (how many) and upto (the "
                      "time to reach)", where);
    if (has_e) {
        o->clock = CARLO_CLOCK_EVENTS;
        o->n = (uint64_t)carlo_arg_int(L, args, where, "events", 1, 0, 1, INT64_MAX);
    } else if (has_t) {
        o->clock = CARLO_CLOCK_TIME;
        o->time = carlo_arg_num(L, args, where, "time", 1, 0, 0, 0, 1e300, 1);
    } else {
        o->clock = CARLO_CLOCK_TIME;
        double upto = carlo_arg_num(L, args, where, "upto", 1, 0, -INFINITY, 0, 1e300, 1);
        o->time = upto - t;
    }
}

/* Frames: `trajectory` and `every` (units between frames; model time for continuous models). */
static void run_frames(lua_State *L, int args, int sys_idx, carlo_sys *s, const char *where,
                       traj_sink *sink, carlo_run_opts *o)
{
    if (!s->ops->continuous) {
        o->every = traj_lua_sink(L, args, sys_idx, where, s->step, sink);
    } else {
        int has_tr = carlo_arg_has(L, args, "trajectory"), has_every = carlo_arg_has(L, args, "every");
        if (has_tr != has_every)
            luaL_error(L, "%s: trajectory and every go together (every: model time between "
                          "frames)", where);
        memset(sink, 0, sizeof *sink);
        if (has_tr) {
            double t;
            uint64_t ev;
            s->ops->clock(s, &t, &ev);
            o->every_time = carlo_arg_num(L, args, where, "every", 1, 0, 0, 0, 1e300, 1);
            double frames = o->clock == CARLO_CLOCK_TIME ? o->time / o->every_time : 0;
            if (frames > 1e9)
                luaL_error(L, "%s: every = %f would write %f frames over time = %f (at most 1e9)",
                           where, o->every_time, frames, o->time);
            if (!(t + o->every_time > t))
                luaL_error(L, "%s: every = %f is below the resolution of t = %f", where,
                           o->every_time, t);
            traj_lua_sink_target(L, args, sys_idx, where, s->step, sink);
        }
    }
    if (sink->tr) {
        o->write = write_frame;
        o->ctx = sink;
    }
}

/* sys:run{ sweeps = n | upto = step (| events = | time = ), every =, trajectory =, walltime =,
 *          checkpoint =, quiet =, <the model's keys> } */
static int l_run(lua_State *L)
{
    static const char *const common[] = {"upto", "every", "trajectory", "walltime", "checkpoint",
                                         "quiet", "sweeps", "events", "time", NULL};
    lua_settop(L, 2);
    carlo_sys *s;
    const carlo_lua_model *m = check_model(L, 1, &s);
    const char *where = where_of(L, m, "run");
    luaL_checktype(L, 2, LUA_TTABLE);
    refuse_keys(L, m, 2, where);
    /* the unit keys of other clocks are refused by name */
    const char *const *keys = keys_with(L, common, m->run_keys);
    carlo_args_allowed(L, 2, where, keys);
    if (!s->ops->continuous) {
        for (int k = 0; k < 3; k++) {
            const char *u = (const char *[]){"sweeps", "events", "time"}[k];
            if (strcmp(u, s->ops->unit) != 0 && carlo_arg_has(L, 2, u))
                return luaL_error(L, "%s: %s counts %s, not %s", where, s->ops->name, s->ops->unit, u);
        }
    } else if (carlo_arg_has(L, 2, "sweeps")) {
        return luaL_error(L, "%s: %s runs for a time or a number of events, not sweeps", where,
                          s->ops->name);
    }
    carlo_run_opts o = {0};
    run_amount(L, 2, s, where, &o);
    o.walltime = carlo_arg_num(L, 2, where, "walltime", 0, 0, 0, 0, INFINITY, 0);
    o.quiet = carlo_arg_bool(L, 2, where, "quiet", 0);
    const char *ckpt = carlo_arg_str(L, 2, where, "checkpoint", 0);
    if (ckpt && o.walltime <= 0)
        return luaL_error(L, "%s: checkpoint goes with walltime (use sys:save(path) otherwise)", where);
    if (o.walltime > 0)
        o.reserve = ckpt ? (m->reserve ? m->reserve(s) : 0.5) : 0;
    if (m->run_args)
        m->run_args(L, 2, s, &o, where);
    traj_sink sink;
    run_frames(L, 2, 1, s, where, &sink, &o);
    carlo_run_result res;
    if (carlo_run(s, &o, &res))
        return carlo_raise(L, where);
    uint64_t asked = o.clock == CARLO_CLOCK_STEP ? o.n : 0;
    if (res.stopped_early)
        traj_lua_stopped_early(L, 1, where, s->step, res.done, asked, o.walltime, ckpt, o.quiet);
    lua_createtable(L, 0, 8);
    if (s->ops->continuous) {
        double t;
        uint64_t ev;
        s->ops->clock(s, &t, &ev);
        carlo_lua_setint(L, "events", (long long)res.done);
        carlo_lua_setnum(L, "time", res.time_done);
        carlo_lua_setnum(L, "t", t);
    } else {
        carlo_lua_setint(L, s->ops->unit, (long long)res.done);
    }
    carlo_lua_setint(L, "step", (long long)s->step);
    lua_pushboolean(L, !res.stopped_early);
    lua_setfield(L, -2, "completed");
    carlo_lua_setnum(L, "seconds", res.seconds);
    return 1;
}

/* ---------- observe and sample ---------- */

typedef struct obs_call {
    void *opt;
    carlo_obs_set set;
} obs_call;

static void observe_setup(lua_State *L, const carlo_lua_model *m, carlo_sys *s, int args,
                          const char *where, obs_call *c)
{
    c->opt = NULL;
    if (m->opt_size) {
        c->opt = lua_newuserdatauv(L, m->opt_size, 0);
        memset(c->opt, 0, m->opt_size);
    }
    if (m->observe_args)
        m->observe_args(L, args, s, c->opt, where);
    memset(&c->set, 0, sizeof c->set);
    if (s->ops->observables(s, c->opt, &c->set))
        carlo_raise(L, where);
}

/* sys:observe([{ <the model's keys> }]) -> { name = value, ... } (an ensemble: one per replica) */
static int l_observe(lua_State *L)
{
    carlo_sys *s;
    const carlo_lua_model *m = check_model(L, 1, &s);
    lua_settop(L, 2);
    if (lua_isnil(L, 2)) {
        lua_newtable(L);
        lua_replace(L, 2);
    }
    const char *where = where_of(L, m, "observe");
    luaL_checktype(L, 2, LUA_TTABLE);
    static const char *const none[] = {NULL};
    carlo_args_allowed(L, 2, where, m->observe_keys ? m->observe_keys : none);
    obs_call c;
    observe_setup(L, m, s, 2, where, &c);
    const int R = s->replicas, n = c.set.n;
    double *v = (double *)lua_newuserdatauv(L, sizeof(double) * (size_t)(n ? n * R : 1), 0);
    if (carlo_observe(s, c.opt, v))
        return carlo_raise(L, where);
    if (R > 1)
        lua_createtable(L, R, 0);
    for (int r = 0; r < R; r++) {
        lua_createtable(L, 0, n + 1);
        for (int k = 0; k < n; k++)
            carlo_lua_setnum(L, c.set.name[k], v[r * n + k]);
        carlo_lua_setint(L, "step", (long long)s->step);
        if (m->sample_extra)
            m->sample_extra(L, s, r, c.opt);
        if (m->observe_extra)
            m->observe_extra(L, s, r, v + r * n);
        if (R > 1)
            lua_rawseti(L, -2, r + 1);
    }
    return 1;
}

static void push_estimate(lua_State *L, const char *name, double mean, double err, double tau,
                          int plateau)
{
    lua_createtable(L, 0, 4);
    carlo_lua_setnum(L, "mean", mean);
    carlo_lua_setnum(L, "err", err);
    carlo_lua_setnum(L, "tau", tau);
    lua_pushboolean(L, plateau);
    lua_setfield(L, -2, "plateau");
    lua_setfield(L, -2, name);
}

typedef struct derived_ctx {
    const carlo_derived *d;
    const carlo_sys *s;
    int replica;
} derived_ctx;

static double derived_value(const double *means, void *ctx)
{
    const derived_ctx *c = (const derived_ctx *)ctx;
    return c->d->fn(means, c->s, c->replica);
}

static double ipow(double x, int p)
{
    double y = 1;
    for (int k = 0; k < p; k++)
        y *= x;
    return y;
}

/* The estimates of one replica: series[k] holds its n samples of value k. */
static void push_estimates(lua_State *L, const carlo_sys *s, int replica, const obs_call *c,
                           double *const *series, size_t n, double unit, int want_series,
                           double *prod /* n x CARLO_DERIVED_IN scratch */)
{
    const carlo_obs_set *o = &c->set;
    carlo_estimate est[CARLO_OBS_MAX];
    size_t block = 1;
    for (int k = 0; k < o->n; k++) {
        carlo_blocking(series[k], n, &est[k]);
        push_estimate(L, o->name[k], est[k].mean, est[k].err, est[k].tau * unit, est[k].plateau);
        if (est[k].block > block)
            block = est[k].block;
    }
    /* jackknife blocks longer than the longest blocking length seen, 8 to 64 of them */
    size_t nb = n / (2 * block);
    if (nb > 64)
        nb = 64;
    if (nb < 8)
        nb = n < 8 ? n : 8;
    for (int j = 0; j < o->nderived; j++) {
        const carlo_derived *d = &o->derived[j];
        const double *in[CARLO_DERIVED_IN];
        double tau = 0;
        int plateau = 1;
        for (int k = 0; k < d->n; k++) {
            double *p = prod + (size_t)k * n;
            const double *x = series[d->in[k]];
            for (size_t i = 0; i < n; i++)
                p[i] = ipow(x[i], d->pow[k]);
            in[k] = p;
            if (est[d->in[k]].tau > tau)
                tau = est[d->in[k]].tau;
            plateau &= est[d->in[k]].plateau;
        }
        derived_ctx dc = {d, s, replica};
        double v, err;
        carlo_jackknife(in, d->n, n, nb, derived_value, &dc, &v, &err);
        push_estimate(L, d->name, v, err, tau * unit, plateau);
    }
    if (want_series) {
        lua_createtable(L, 0, o->n);
        for (int k = 0; k < o->n; k++) {
            carlo_array *a = carlo_array_push(L, CARLO_F64, (int64_t)n, 0);
            memcpy(a->data, series[k], n * sizeof(double));
            lua_setfield(L, -2, o->name[k]);
        }
        lua_setfield(L, -2, "series");
    }
}

static void push_acceptance(lua_State *L, const carlo_counts *a, const carlo_counts *b)
{
    uint64_t t = b->tried - a->tried, acc = b->accepted - a->accepted;
    uint64_t vt = b->volume_tried - a->volume_tried, va = b->volume_accepted - a->volume_accepted;
    if (t)
        carlo_lua_setnum(L, "acceptance", (double)acc / (double)t);
    if (vt)
        carlo_lua_setnum(L, "volume_acceptance", (double)va / (double)vt);
}

/* sys:sample{ sweeps = n (events = | time =), every = k, series = false, quiet =,
 *             <the model's observe and run keys> } -> { name = { mean =, err =, tau =, plateau = }, ... } */
static int l_sample(lua_State *L)
{
    static const char *const common[] = {"sweeps", "events", "time", "every", "series", "quiet",
                                         NULL};
    lua_settop(L, 2);
    carlo_sys *s;
    const carlo_lua_model *m = check_model(L, 1, &s);
    const char *where = where_of(L, m, "sample");
    luaL_checktype(L, 2, LUA_TTABLE);
    refuse_keys(L, m, 2, where);
    carlo_args_allowed(L, 2, where, keys_with(L, keys_with(L, common, m->observe_keys), m->run_keys));
    const carlo_ops *ops = s->ops;
    carlo_run_opts o = {0};
    o.quiet = 1;
    if (m->run_args) /* hooks while sampling: exchanges, energy checks */
        m->run_args(L, 2, s, &o, where);
    size_t n;
    double unit; /* tau's unit: sweeps (events, time) per sample */
    if (!ops->continuous || carlo_arg_has(L, 2, "events")) {
        const char *u = ops->continuous ? "events" : ops->unit;
        if (!ops->continuous && (carlo_arg_has(L, 2, "events") || carlo_arg_has(L, 2, "time")))
            return luaL_error(L, "%s: %s counts %s", where, ops->name, ops->unit);
        uint64_t every = (uint64_t)carlo_arg_int(L, 2, where, "every", 0, 1, 1, (int64_t)1 << 40);
        uint64_t total = (uint64_t)carlo_arg_int(L, 2, where, u, 1, 0, 1, (int64_t)1 << 47);
        if (total % every || total / every < 2)
            return luaL_error(L, "%s: %s must be a multiple of every giving at least 2 samples "
                                 "(got %s = %I, every = %I)", where, u, u, (lua_Integer)total,
                              (lua_Integer)every);
        n = (size_t)(total / every);
        o.clock = ops->continuous ? CARLO_CLOCK_EVENTS : CARLO_CLOCK_STEP;
        o.n = every;
        unit = (double)every;
    } else {
        double every = carlo_arg_num(L, 2, where, "every", 1, 0, 0, 0, 1e300, 1);
        double total = carlo_arg_num(L, 2, where, "time", 1, 0, 0, 0, 1e300, 1);
        double k = floor(total / every + 0.5);
        if (k < 2 || k > 1e8 || fabs(k * every - total) > 1e-9 * total)
            return luaL_error(L, "%s: time must be a multiple of every giving 2 to 1e8 samples "
                                 "(got time = %f, every = %f)", where, total, every);
        n = (size_t)k;
        o.clock = CARLO_CLOCK_TIME;
        o.time = every;
        unit = every;
    }
    int want_series = carlo_arg_bool(L, 2, where, "series", 0);
    int quiet = carlo_arg_bool(L, 2, where, "quiet", 0);
    obs_call c;
    observe_setup(L, m, s, 2, where, &c);
    const int R = s->replicas, nv = c.set.n;
    /* buf[(r * nv + k) * n + j]: replica r, value k, sample j */
    double *buf = (double *)lua_newuserdatauv(
        L, carlo_mulsize(carlo_mulsize(carlo_mulsize(n, (size_t)(nv ? nv : 1)), (size_t)R),
                         sizeof(double)), 0);
    double *now = (double *)lua_newuserdatauv(L, sizeof(double) * (size_t)(nv ? nv * R : 1), 0);
    carlo_counts c0 = {0}, c1 = {0};
    if (ops->counts && ops->counts(s, &c0))
        return carlo_raise(L, where);
    carlo_progress pr;
    char label[64];
    snprintf(label, sizeof label, "%s sample", ops->name);
    carlo_progress_start(&pr, label, o.clock == CARLO_CLOCK_TIME ? "time" : ops->continuous ? "events" : ops->unit,
                         (double)n * unit, quiet);
    for (size_t j = 0; j < n; j++) {
        carlo_run_result res;
        if (carlo_run(s, &o, &res) || carlo_observe(s, c.opt, now)) {
            carlo_progress_end(&pr);
            return carlo_raise(L, where);
        }
        for (int r = 0; r < R; r++)
            for (int k = 0; k < nv; k++)
                buf[((size_t)r * (size_t)nv + (size_t)k) * n + j] = now[r * nv + k];
        carlo_progress_update(&pr, (double)(j + 1) * unit);
    }
    carlo_progress_end(&pr);
    if (ops->counts && ops->counts(s, &c1))
        return carlo_raise(L, where);
    double **series = (double **)lua_newuserdatauv(L, sizeof(double *) * (size_t)(nv ? nv : 1), 0);
    double *prod = (double *)lua_newuserdatauv(L, carlo_mulsize(n, sizeof(double) * CARLO_DERIVED_IN), 0);
    if (R > 1)
        lua_createtable(L, R, 0);
    for (int r = 0; r < R; r++) {
        lua_createtable(L, 0, nv + c.set.nderived + 6);
        for (int k = 0; k < nv; k++)
            series[k] = buf + ((size_t)r * (size_t)nv + (size_t)k) * n;
        push_estimates(L, s, r, &c, series, n, unit, want_series, prod);
        carlo_lua_setint(L, "samples", (long long)n);
        carlo_lua_setint(L, "step", (long long)s->step);
        if (R == 1)
            push_acceptance(L, &c0, &c1);
        if (m->sample_extra)
            m->sample_extra(L, s, r, c.opt);
        if (R > 1)
            lua_rawseti(L, -2, r + 1);
    }
    return 1;
}

/* ---------- the other verbs ---------- */

static int l_snapshot(lua_State *L)
{
    carlo_sys *s;
    const carlo_lua_model *m = check_model(L, 1, &s);
    lua_Integer k = luaL_optinteger(L, 2, 1);
    if (k < 1 || k > s->replicas)
        return luaL_error(L, "%s:snapshot: replica index must be from 1 to %d (got %I)",
                          s->ops->name, s->replicas, k);
    m->snapshot(L, s, (int)k - 1);
    return 1;
}

static int l_save(lua_State *L)
{
    carlo_sys *s;
    const carlo_lua_model *m = check_model(L, 1, &s);
    traj_lua_save(L, 1, luaL_checkstring(L, 2), where_of(L, m, "save"));
    return 0;
}

/* sys:restore(path): this system takes the state saved in path (a checkpoint of the same
 * model, as sys:save writes it), on its own device; what it held before is freed. Protocols
 * use it to resume where a killed script stopped. */
static int l_restore(lua_State *L)
{
    carlo_sys *s;
    const carlo_lua_model *m = check_model(L, 1, &s);
    const char *path = luaL_checkstring(L, 2);
    const char *where = where_of(L, m, "restore");
    carlo_frame *f = (carlo_frame *)lua_newuserdatauv(L, sizeof *f, 0);
    carlo_frame_init(f);
    int rc = traj_checkpoint_load(path, f);
    const carlo_chunk *mc = rc ? NULL : carlo_frame_find(f, "carlo/model");
    char name[64] = "";
    if (mc && mc->type == CARLO_U8 && mc->rows < sizeof name) {
        memcpy(name, mc->data, (size_t)mc->rows);
        name[mc->rows] = 0;
    }
    carlo_sys *n = NULL;
    if (rc == 0 && strcmp(name, s->ops->name) == 0)
        n = s->ops->restore(f, s->device);
    else if (rc == 0)
        carlo_seterr("%s is a checkpoint of model '%s', not of this %s system", path,
                     name[0] ? name : "(none)", s->ops->name);
    carlo_frame_free(f);
    if (!n)
        return carlo_raise(L, where);
    sys_ud *u = (sys_ud *)lua_touserdata(L, 1);
    u->s = n;
    s->ops->destroy(s);
    return 0;
}

/* dst:assign(src): dst takes src's state (a system of the same model), kept on dst's device
 * and with dst's own seed, so that the two go on with different random numbers from here
 * (population annealing's copies). */
static int l_assign(lua_State *L)
{
    carlo_sys *d;
    const carlo_lua_model *m = check_model(L, 1, &d);
    carlo_sys *src = carlo_lua_check(L, 2, m);
    const char *where = where_of(L, m, "assign");
    if (src == d)
        return 0;
    carlo_frame *f = (carlo_frame *)lua_newuserdatauv(L, sizeof *f, 0);
    carlo_frame_init(f);
    carlo_sys *n = NULL;
    if (carlo_sys_alive(src) == 0 && src->ops->checkpoint(src, f) == 0)
        n = d->ops->restore(f, d->device);
    carlo_frame_free(f);
    if (!n)
        return carlo_raise(L, where);
    n->seed = d->seed;
    ((sys_ud *)lua_touserdata(L, 1))->s = n;
    d->ops->destroy(d);
    return 0;
}

static int l_sync(lua_State *L)
{
    carlo_sys *s;
    const carlo_lua_model *m = check_model(L, 1, &s);
    if (carlo_sys_alive(s))
        return carlo_raise(L, where_of(L, m, "sync"));
    if (s->ops->sync(s)) {
        s->dead |= s->device == CARLO_GPU;
        return carlo_raise(L, where_of(L, m, "sync"));
    }
    return 0;
}

static int l_close(lua_State *L)
{
    sys_ud *u = (sys_ud *)lua_touserdata(L, 1);
    if (!model_of(L, 1) || !u)
        return luaL_error(L, "close: expected a carlo system (got %s)", luaL_typename(L, 1));
    if (u->s) {
        carlo_sys *s = u->s;
        u->s = NULL;
        s->ops->destroy(s);
    }
    return 0;
}

static int l_tostring(lua_State *L)
{
    const carlo_lua_model *m = model_of(L, 1);
    sys_ud *u = (sys_ud *)lua_touserdata(L, 1);
    if (!u->s) {
        lua_pushfstring(L, "%s (closed)", m->metatable);
        return 1;
    }
    carlo_sys *s = u->s;
    m->describe(L, s);
    lua_pushfstring(L, "%s(%s, step %I, %s)", m->metatable, lua_tostring(L, -1),
                    (lua_Integer)s->step, carlo_device_name(s->device));
    return 1;
}

static const char *alias_of(const carlo_lua_model *m, const char *key)
{
    for (int k = 0; m->aliases && m->aliases[k]; k += 2)
        if (strcmp(m->aliases[k], key) == 0)
            return m->aliases[k + 1];
    return NULL;
}

static void push_names(lua_State *L, const char *const *names, int n)
{
    lua_createtable(L, n, 0);
    for (int k = 0; k < n; k++) {
        lua_pushstring(L, names[k]);
        lua_rawseti(L, -2, k + 1);
    }
}

/* The method key of the system at 1, or a Lua error naming the model. */
static int push_method(lua_State *L, const carlo_lua_model *m, const char *key)
{
    lua_getmetatable(L, 1);
    lua_getfield(L, -1, "methods");
    if (lua_getfield(L, -1, key) == LUA_TNIL)
        return luaL_error(L, "%s: no field or method '%s'", m->ops->name, key);
    return 1;
}

static int l_index(lua_State *L)
{
    const carlo_lua_model *m = model_of(L, 1);
    const char *key = luaL_checkstring(L, 2);
    if (m && !((sys_ud *)lua_touserdata(L, 1))->s) /* closed: methods only (close again is fine) */
        return push_method(L, m, key);
    carlo_sys *s;
    m = check_model(L, 1, &s);
    const char *alias = alias_of(m, key);
    if (alias) {
        carlo_lua_renamed(m->ops->name, key, alias);
        key = alias;
    }
    if (strcmp(key, "step") == 0) {
        lua_pushinteger(L, (lua_Integer)s->step);
    } else if (strcmp(key, "seed") == 0) {
        lua_pushinteger(L, (lua_Integer)s->seed);
    } else if (strcmp(key, "device") == 0) {
        lua_pushstring(L, carlo_device_name(s->device));
    } else if (strcmp(key, "model") == 0) {
        lua_pushstring(L, s->ops->name);
    } else if (strcmp(key, "replicas") == 0) {
        lua_pushinteger(L, s->replicas);
    } else if (strcmp(key, "unit") == 0) {
        lua_pushstring(L, s->ops->unit);
    } else if (strcmp(key, "threads") == 0) {
        char buf[96];
        lua_pushstring(L, carlo_threads_describe(s, buf, sizeof buf));
    } else if (strcmp(key, "controls") == 0) {
        const char *names[32];
        int n = s->ops->ncontrols < 32 ? s->ops->ncontrols : 32;
        for (int k = 0; k < n; k++)
            names[k] = s->ops->controls[k].name;
        push_names(L, names, n);
    } else if (strcmp(key, "observables") == 0) {
        carlo_obs_set o;
        memset(&o, 0, sizeof o);
        void *opt = m->opt_size ? memset(lua_newuserdatauv(L, m->opt_size, 0), 0, m->opt_size) : NULL;
        if (s->ops->observables(s, opt, &o))
            return carlo_raise(L, m->ops->name);
        push_names(L, o.name, o.n);
    } else if (strcmp(key, "t") == 0 && s->ops->continuous) {
        double t;
        uint64_t ev;
        s->ops->clock(s, &t, &ev);
        lua_pushnumber(L, t);
    } else if (strcmp(key, "events") == 0 && s->ops->continuous) {
        double t;
        uint64_t ev;
        s->ops->clock(s, &t, &ev);
        lua_pushinteger(L, (lua_Integer)ev);
    } else {
        const carlo_control *c = carlo_control_find(s, key);
        if (c) {
            double v;
            if (c->get(s, &v))
                return carlo_raise(L, m->ops->name);
            lua_pushnumber(L, v);
            return 1;
        }
        if (m->index && m->index(L, s, key))
            return 1;
        return push_method(L, m, key);
    }
    return 1;
}

static int l_newindex(lua_State *L)
{
    carlo_sys *s;
    const carlo_lua_model *m = check_model(L, 1, &s);
    const char *key = luaL_checkstring(L, 2);
    const char *alias = alias_of(m, key);
    if (alias) {
        carlo_lua_renamed(m->ops->name, key, alias);
        key = alias;
    }
    if (m->newindex && m->newindex(L, s, key, 3))
        return 0;
    const carlo_control *c = carlo_control_find(s, key);
    if (!c) {
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        int nset = 0;
        for (int k = 0; k < s->ops->ncontrols; k++, nset++) {
            luaL_addstring(&b, nset ? ", " : "");
            luaL_addstring(&b, s->ops->controls[k].name);
        }
        for (int k = 0; m->settable && m->settable[k]; k++, nset++) {
            luaL_addstring(&b, nset ? ", " : "");
            luaL_addstring(&b, m->settable[k]);
        }
        luaL_pushresult(&b);
        int top = lua_gettop(L);
        int known = (m->index && m->index(L, s, key)) || strcmp(key, "step") == 0 ||
                    strcmp(key, "seed") == 0 || strcmp(key, "device") == 0 ||
                    strcmp(key, "model") == 0 || strcmp(key, "replicas") == 0;
        lua_settop(L, top);
        return luaL_error(L, "%s: %s field '%s' (settable: %s)", m->ops->name,
                          known ? "read-only" : "unknown", key,
                          nset ? lua_tostring(L, top) : "none");
    }
    if (lua_type(L, 3) != LUA_TNUMBER) {
        char r[128];
        return luaL_error(L, "%s: %s must be a number with %s (got %s)", m->ops->name, key,
                          carlo_control_range(c, r, sizeof r), luaL_typename(L, 3));
    }
    if (carlo_control_set(s, c, lua_tonumber(L, 3)))
        return carlo_raise(L, m->ops->name);
    return 0;
}

/* ---------- registration and carlo.load ---------- */

static int legacy_frame(void *ud, carlo_frame *f)
{
    carlo_sys *s = ((sys_ud *)ud)->s;
    if (!s)
        return carlo_seterr("this system was closed");
    return carlo_sys_alive(s) ? -1 : s->ops->frame(s, f);
}

static int legacy_checkpoint(void *ud, carlo_frame *f)
{
    carlo_sys *s = ((sys_ud *)ud)->s;
    if (!s)
        return carlo_seterr("this system was closed");
    return carlo_sys_alive(s) ? -1 : s->ops->checkpoint(s, f);
}

static int legacy_restore(lua_State *L, const carlo_frame *f, const char *device)
{
    const carlo_chunk *mc = carlo_frame_find(f, "carlo/model");
    char name[64] = "";
    if (mc && mc->rows < sizeof name) {
        memcpy(name, mc->data, (size_t)mc->rows);
        name[mc->rows] = 0;
    }
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_MODELS);
    lua_getfield(L, -1, name);
    const carlo_lua_model *m = (const carlo_lua_model *)lua_touserdata(L, -1);
    lua_pop(L, 2);
    if (!m)
        return luaL_error(L, "carlo.load: no model '%s'", name);
    if (!device && m->load_device)
        device = m->load_device(f);
    carlo_device_kind kind = carlo_lua_device(L, "carlo.load", device);
    carlo_sys *s = m->ops->restore(f, kind);
    if (!s)
        return luaL_error(L, "carlo.load: %s checkpoint: %s", m->ops->name, carlo_errmsg());
    carlo_lua_push_system(L, m, s);
    return 1;
}

void carlo_lua_push_system(lua_State *L, const carlo_lua_model *m, carlo_sys *s)
{
    sys_ud *u = (sys_ud *)lua_newuserdatauv(L, sizeof *u, 0);
    u->s = s;
    luaL_setmetatable(L, m->metatable);
}

static int cmp_address(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return (x > y) - (x < y);
}

/* carlo.advance(systems, n): every system of the list n more units of its own (sweeps;
 * events for continuous models), together (carlo_advance_all): GPU systems in flight at once,
 * CPU systems across threads. Ensembles advance their replicas with it. */
static int l_advance_all(lua_State *L)
{
    const char *where = "carlo.advance";
    if (!lua_istable(L, 1))
        return luaL_error(L, "%s: expects a list of systems and a count (got %s)", where,
                          carlo_arg_got(L, 1));
    if (!lua_isinteger(L, 2) || lua_tointeger(L, 2) < 0 || lua_tointeger(L, 2) > ((lua_Integer)1 << 47))
        return luaL_error(L, "%s: the count must be an integer in [0, 2^47] (got %s)", where,
                          carlo_arg_got(L, 2));
    const uint64_t n = (uint64_t)lua_tointeger(L, 2);
    const lua_Integer R = luaL_len(L, 1);
    if (R < 1 || R > 1000000)
        return luaL_error(L, "%s: the list must hold 1 to 1000000 systems (got %d)", where, (int)R);
    carlo_sys **s = (carlo_sys **)lua_newuserdatauv(L, (size_t)R * sizeof *s, 0);
    for (lua_Integer i = 0; i < R; i++) {
        lua_geti(L, 1, i + 1);
        s[i] = carlo_lua_tosys(L, -1);
        if (!s[i])
            return luaL_error(L, "%s: entry %d is not an open carlo system (got %s)", where,
                              (int)(i + 1), carlo_arg_got(L, -1));
        lua_pop(L, 1);
    }
    /* the same system twice would be advanced by two threads at once */
    uintptr_t *sorted = (uintptr_t *)lua_newuserdatauv(L, (size_t)R * sizeof *sorted, 0);
    for (lua_Integer i = 0; i < R; i++)
        sorted[i] = (uintptr_t)s[i];
    qsort(sorted, (size_t)R, sizeof *sorted, cmp_address);
    for (lua_Integer i = 1; i < R; i++)
        if (sorted[i] == sorted[i - 1])
            return luaL_error(L, "%s: the list holds the same system twice", where);
    int bad;
    if (carlo_advance_all(s, (int)R, n, &bad))
        return luaL_error(L, "%s: system %d: %s", where, bad + 1, carlo_errmsg());
    return 0;
}

void carlo_system_lua_open(lua_State *L)
{
    lua_pushcfunction(L, l_advance_all);
    lua_setfield(L, -2, "advance");
}

void carlo_lua_model_register(lua_State *L, const carlo_lua_model *m)
{
    static const luaL_Reg meta[] = {
        {"__index", l_index}, {"__newindex", l_newindex}, {"__gc", l_close},
        {"__close", l_close}, {"__tostring", l_tostring}, {NULL, NULL}};
    static const luaL_Reg common[] = {
        {"run", l_run}, {"sample", l_sample}, {"observe", l_observe}, {"snapshot", l_snapshot},
        {"save", l_save}, {"restore", l_restore}, {"assign", l_assign}, {"sync", l_sync}, {"close", l_close},
        {NULL, NULL}};
    if (luaL_newmetatable(L, m->metatable)) {
        luaL_setfuncs(L, meta, 0);
        luaL_newlib(L, common);
        if (m->methods)
            luaL_setfuncs(L, m->methods, 0);
        lua_setfield(L, -2, "methods");
        lua_pushlightuserdata(L, (void *)m);
        lua_setfield(L, -2, MODEL_KEY);
    }
    lua_pop(L, 1);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_MODELS);
    lua_pushlightuserdata(L, (void *)m);
    lua_setfield(L, -2, m->ops->name);
    lua_pop(L, 1);
    carlo_ops_register(m->ops);
    /* trajectories and carlo.load reach the model through its carlo_model */
    carlo_model *legacy = (carlo_model *)lua_newuserdatauv(L, sizeof *legacy, 0);
    legacy->name = m->ops->name;
    legacy->metatable = m->metatable;
    legacy->frame = legacy_frame;
    legacy->checkpoint = legacy_checkpoint;
    legacy->restore = legacy_restore;
    luaL_ref(L, LUA_REGISTRYINDEX); /* kept alive with the state */
    carlo_model_register(L, legacy);
}
