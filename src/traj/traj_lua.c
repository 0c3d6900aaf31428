/* traj_lua.c — carlo.trajectory(path, mode, opts), its methods, and carlo.load(path).
 * Frames built here live in a userdata until written, so a Lua error never leaks them. */
#include "traj/traj_lua.h"

#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"
#include "core/array.h"
#include "core/error.h"
#include "core/progress.h"
#include "traj/checkpoint.h"

#define FRAMEBOX_MT "carlo.trajectory.frame"

typedef struct traj_ud {
    traj_file *t;
    int quiet;
} traj_ud;


traj_file *traj_lua_check(lua_State *L, int idx, const char *where)
{
    traj_ud *u = (traj_ud *)luaL_testudata(L, idx, TRAJ_MT);
    if (!u)
        luaL_error(L, "%s: expected a carlo.trajectory (got %s)", where, luaL_typename(L, idx));
    if (!u->t)
        luaL_error(L, "%s: this trajectory was closed", where);
    return u->t;
}

/* ---------- frames held by the Lua state ---------- */

static int framebox_gc(lua_State *L)
{
    carlo_frame_free((carlo_frame *)luaL_checkudata(L, 1, FRAMEBOX_MT));
    return 0;
}

static carlo_frame *push_framebox(lua_State *L)
{
    carlo_frame *f = (carlo_frame *)lua_newuserdatauv(L, sizeof *f, 0);
    carlo_frame_init(f);
    luaL_setmetatable(L, FRAMEBOX_MT);
    return f;
}

int traj_write_system(traj_file *t, const carlo_model *m, void *sys)
{
    carlo_frame f;
    carlo_frame_init(&f);
    int rc = m->frame(sys, &f) || traj_write_take(t, &f);
    carlo_frame_free(&f);
    return rc ? -1 : 0;
}

int traj_sink_write(traj_sink *s)
{
    if (!s->tr)
        return 0;
    return traj_write_system(s->tr, s->model, s->sys);
}

int traj_sink_take(traj_sink *s, carlo_frame *f)
{
    return s->tr ? traj_write_take(s->tr, f) : 0;
}

int traj_lua_sink_target(lua_State *L, int args, int sys_idx, const char *where, uint64_t step,
                         traj_sink *sink)
{
    memset(sink, 0, sizeof *sink);
    args = lua_absindex(L, args);
    if (!carlo_arg_has(L, args, "trajectory"))
        return 0;
    lua_getfield(L, args, "trajectory");
    traj_file *t = traj_lua_check(L, -1, where);
    lua_pop(L, 1);
    if (traj_mode(t) == 'r')
        luaL_error(L, "%s: trajectory %s is open for reading; open it with \"w\" or \"a\"", where,
                   traj_path(t));
    sink->model = carlo_model_of(L, sys_idx, &sink->sys);
    if (!sink->model)
        luaL_error(L, "%s: the system has no trajectory frame", where);
    if (traj_append_pending(t) && traj_drop_after(t, step, 0) < 0)
        carlo_raise(L, where);
    sink->tr = t;
    return 1;
}

uint64_t traj_lua_sink(lua_State *L, int args, int sys_idx, const char *where, uint64_t step,
                       traj_sink *sink)
{
    args = lua_absindex(L, args);
    int has_tr = carlo_arg_has(L, args, "trajectory"), has_every = carlo_arg_has(L, args, "every");
    memset(sink, 0, sizeof *sink);
    if (!has_tr && !has_every)
        return 0;
    if (has_tr != has_every)
        luaL_error(L, "%s: trajectory and every go together (every: sweeps between frames)", where);
    uint64_t every = (uint64_t)carlo_arg_int(L, args, where, "every", 1, 0, 1, (int64_t)1 << 40);
    traj_lua_sink_target(L, args, sys_idx, where, step, sink);
    return every;
}

void traj_lua_save(lua_State *L, int sys_idx, const char *path, const char *where)
{
    void *sys;
    const carlo_model *m = carlo_model_of(L, sys_idx, &sys);
    if (!m)
        luaL_error(L, "%s: not a carlo system", where);
    carlo_frame f;
    carlo_frame_init(&f);
    int rc = m->checkpoint(sys, &f) || traj_checkpoint_save(path, &f);
    carlo_frame_free(&f);
    if (rc)
        carlo_raise(L, where);
}

void traj_lua_stopped_early(lua_State *L, int sys_idx, const char *where, uint64_t step,
                            uint64_t done, uint64_t asked, double walltime, const char *ckpt,
                            int quiet)
{
    if (ckpt)
        traj_lua_save(L, sys_idx, ckpt, where);
    if (!carlo_quiet && !quiet)
        fprintf(stderr, "carlo: %s stopped early at step %llu (%llu of %llu sweeps) to stay within "
                        "walltime = %g s%s%s\n", where, (unsigned long long)step,
                (unsigned long long)done, (unsigned long long)asked, walltime,
                ckpt ? "; checkpoint written to " : "", ckpt ? ckpt : "");
}

/* ---------- tr:write ---------- */

typedef struct name_rule {
    const char *name;
    int kind;      /* 0 scalar, 1 per particle */
    int cols;      /* per particle: 1, 2 or 3, 3, 4; 0 for a string list */
    carlo_dtype want;
    int floats;    /* 1: f32 or f64 accepted (f64 kept), 0: exactly `want` */
} name_rule;

static const name_rule RULES[] = {
    {"configuration/step", 0, 1, CARLO_U64, 0},
    {"configuration/dimensions", 0, 1, CARLO_U8, 0},
    {"configuration/box", 0, 6, CARLO_F32, 1},
    {"particles/N", 0, 1, CARLO_U32, 0},
    {"particles/types", 2, 0, CARLO_U8, 0},
    {"particles/position", 1, 3, CARLO_F32, 1},
    {"particles/velocity", 1, 3, CARLO_F32, 1},
    {"particles/orientation", 1, 4, CARLO_F32, 1},
    {"particles/angmom", 1, 4, CARLO_F32, 1},
    {"particles/moment_inertia", 1, 3, CARLO_F32, 1},
    {"particles/image", 1, 3, CARLO_I32, 0},
    {"particles/typeid", 1, 1, CARLO_U32, 0},
    {"particles/mass", 1, 1, CARLO_F32, 1},
    {"particles/charge", 1, 1, CARLO_F32, 1},
    {"particles/diameter", 1, 1, CARLO_F32, 1},
    {"particles/body", 1, 1, CARLO_I32, 0},
    {NULL, 0, 0, CARLO_U8, 0}};

#define ALLOWED_NAMES "log/..., lattice/..., configuration/step, configuration/box, " \
    "configuration/dimensions, particles/N, particles/types, particles/position, particles/velocity, " \
    "particles/orientation, particles/angmom, particles/moment_inertia, particles/image, " \
    "particles/typeid, particles/mass, particles/charge, particles/diameter, particles/body"

static const name_rule *rule_of(const char *name)
{
    for (const name_rule *r = RULES; r->name; r++)
        if (strcmp(r->name, name) == 0)
            return r;
    return NULL;
}

static int prefixed(const char *name, const char *prefix)
{
    size_t n = strlen(prefix);
    return strncmp(name, prefix, n) == 0 && name[n] != 0;
}

/* A list of numbers at idx as a new owned buffer of type t (n values). */
static void *list_values(lua_State *L, int idx, const char *where, const char *name, carlo_dtype t,
                         size_t *n)
{
    *n = lua_rawlen(L, idx);
    void *buf = carlo_malloc((*n ? *n : 1) * carlo_dtype_size(t), "a chunk");
    if (!buf)
        luaL_error(L, "%s: %s", where, carlo_errmsg());
    for (size_t i = 0; i < *n; i++) {
        lua_rawgeti(L, idx, (lua_Integer)i + 1);
        int isnum;
        double v = lua_tonumberx(L, -1, &isnum);
        lua_pop(L, 1);
        if (!isnum) {
            free(buf);
            luaL_error(L, "%s: %s[%d] is not a number", where, name, (int)i + 1);
        }
        if (t == CARLO_F32) ((float *)buf)[i] = (float)v;
        else ((double *)buf)[i] = v;
    }
    return buf;
}

/* Add the value at vidx as chunk `name` to f (the frame box keeps it alive). */
static void add_value(lua_State *L, carlo_frame *f, const char *where, const char *name, int vidx)
{
    int rc = 0;
    const name_rule *r = rule_of(name);
    int is_log = prefixed(name, "log/"), is_lattice = prefixed(name, "lattice/");
    if (!r && !is_log && !is_lattice)
        luaL_error(L, "%s: unknown chunk name '%s' (allowed: %s)", where, name, ALLOWED_NAMES);
    int vt = lua_type(L, vidx);
    carlo_array *a = carlo_array_test(L, vidx);
    if (r && r->kind == 0) { /* scalars and the box */
        if (r->cols == 6) {
            float box[6];
            if (a && a->n == 6 && (a->type == CARLO_F32 || a->type == CARLO_F64)) {
                for (int i = 0; i < 6; i++)
                    box[i] = (float)carlo_array_get(a, (size_t)i);
            } else if (vt == LUA_TTABLE && !a && lua_rawlen(L, vidx) == 6) {
                size_t n;
                float *v = list_values(L, vidx, where, name, CARLO_F32, &n);
                memcpy(box, v, sizeof box);
                free(v);
            } else {
                luaL_error(L, "%s: %s must be 6 numbers (Lx, Ly, Lz, xy, xz, yz)", where, name);
            }
            for (int i = 0; i < 6; i++)
                if (!isfinite(box[i]))
                    luaL_error(L, "%s: %s[%d] is %f: the box must be finite (Lx, Ly, Lz, xy, xz, "
                                  "yz)", where, name, i + 1, (double)box[i]);
            if (!(box[0] > 0 && box[1] > 0 && box[2] >= 0))
                luaL_error(L, "%s: %s needs Lx > 0, Ly > 0, Lz >= 0 (Lz = 0 in 2D)", where, name);
            rc = carlo_frame_add_copy(f, name, CARLO_F32, 6, 1, box);
        } else {
            int isint;
            lua_Integer v = lua_tointegerx(L, vidx, &isint);
            lua_Integer hi = r->want == CARLO_U8 ? 3 : r->want == CARLO_U32 ? 4294967295LL : LUA_MAXINTEGER;
            lua_Integer lo = r->want == CARLO_U8 ? 2 : 0;
            if (vt != LUA_TNUMBER || !isint || v < lo || v > hi)
                luaL_error(L, "%s: %s must be an integer from %I to %I", where, name, lo, hi);
            uint64_t u = (uint64_t)v;
            uint32_t u32 = (uint32_t)v;
            uint8_t u8 = (uint8_t)v;
            rc = carlo_frame_add_copy(f, name, r->want, 1, 1,
                                      r->want == CARLO_U64 ? (void *)&u : r->want == CARLO_U32 ? (void *)&u32
                                                                                           : (void *)&u8);
        }
    } else if (r && r->kind == 2) { /* particles/types: a list of names */
        if (vt != LUA_TTABLE || a)
            luaL_error(L, "%s: %s must be a list of type names", where, name);
        size_t nt = lua_rawlen(L, vidx), width = 1;
        for (size_t i = 1; i <= nt; i++) {
            lua_rawgeti(L, vidx, (lua_Integer)i);
            if (lua_type(L, -1) != LUA_TSTRING)
                luaL_error(L, "%s: %s[%d] is not a string", where, name, (int)i);
            size_t len = lua_rawlen(L, -1);
            if (len + 1 > width) width = len + 1;
            lua_pop(L, 1);
        }
        if (nt == 0 || width > 64)
            luaL_error(L, "%s: %s must list 1 or more names of at most 63 bytes", where, name);
        uint8_t *buf = carlo_calloc(nt, width, "particles/types");
        if (!buf)
            luaL_error(L, "%s: %s", where, carlo_errmsg());
        for (size_t i = 0; i < nt; i++) {
            lua_rawgeti(L, vidx, (lua_Integer)i + 1);
            memcpy(buf + i * width, lua_tostring(L, -1), lua_rawlen(L, -1));
            lua_pop(L, 1);
        }
        rc = carlo_frame_add_owned(f, name, CARLO_U8, nt, width, buf);
    } else if (r) { /* per-particle arrays */
        if (!a)
            luaL_error(L, "%s: %s must be a carlo.array of N x %d", where, name, r->cols);
        uint64_t cols = a->ndim == 2 ? (uint64_t)a->shape[1] : 1;
        int type_ok = r->floats ? (a->type == CARLO_F32 || a->type == CARLO_F64) : a->type == r->want;
        int cols_ok = cols == (uint64_t)r->cols || (r->cols == 3 && cols == 2 &&
                                                     strcmp(name, "particles/position") == 0);
        if (!type_ok || !cols_ok)
            luaL_error(L, "%s: %s must be %s array of N x %d (got %s %I x %I)", where, name,
                       r->floats ? "an f32 or f64" : carlo_dtype_name(r->want), r->cols,
                       carlo_dtype_name(a->type), (lua_Integer)a->shape[0], (lua_Integer)cols);
        rc = carlo_frame_add(f, name, a->type, (uint64_t)a->shape[0], cols, a->data);
    } else if (a) {
        rc = carlo_frame_add(f, name, a->type, (uint64_t)a->shape[0],
                             a->ndim == 2 ? (uint64_t)a->shape[1] : 1, a->data);
    } else if (is_lattice) {
        luaL_error(L, "%s: %s must be a carlo.array", where, name);
    } else if (vt == LUA_TNUMBER) {
        if (lua_isinteger(L, vidx)) {
            int64_t v = (int64_t)lua_tointeger(L, vidx);
            rc = carlo_frame_add_copy(f, name, CARLO_I64, 1, 1, &v);
        } else {
            rc = carlo_frame_add_f64(f, name, lua_tonumber(L, vidx));
        }
    } else if (vt == LUA_TBOOLEAN) {
        uint8_t v = (uint8_t)lua_toboolean(L, vidx);
        rc = carlo_frame_add_copy(f, name, CARLO_U8, 1, 1, &v);
    } else if (vt == LUA_TSTRING) {
        rc = carlo_frame_add_copy(f, name, CARLO_U8, lua_rawlen(L, vidx), 1, lua_tostring(L, vidx));
    } else if (vt == LUA_TTABLE) {
        size_t n;
        double *v = list_values(L, vidx, where, name, CARLO_F64, &n);
        rc = carlo_frame_add_owned(f, name, CARLO_F64, n, 1, v);
    } else {
        luaL_error(L, "%s: %s cannot hold a %s (numbers, lists of numbers, strings, booleans and "
                      "carlo.arrays can be written)", where, name, luaL_typename(L, vidx));
    }
    if (rc)
        carlo_raise(L, where);
}

/* The chunks of the keyword table at idx (only log/... when logs_only). */
static void add_table(lua_State *L, carlo_frame *f, int idx, const char *where, int logs_only)
{
    idx = lua_absindex(L, idx);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lua_type(L, -2) != LUA_TSTRING)
            luaL_error(L, "%s: chunk names must be strings (got a %s key)", where, luaL_typename(L, -2));
        const char *name = lua_tostring(L, -2);
        if (strlen(name) != lua_rawlen(L, -2)) /* C would cut it at the NUL */
            luaL_error(L, "%s: chunk name '%s\\0...' holds a NUL byte", where, name);
        if (logs_only && !prefixed(name, "log/"))
            luaL_error(L, "%s: with a system, the table adds log/... chunks only (got '%s')", where, name);
        if (carlo_frame_find(f, name))
            luaL_error(L, "%s: chunk '%s' is given twice", where, name);
        add_value(L, f, where, name, lua_gettop(L));
        lua_pop(L, 1);
    }
}

/* Per-particle chunks agree on N; particles/N is added when missing. */
static void check_particles(lua_State *L, carlo_frame *f, const char *where)
{
    uint64_t N = 0;
    const char *first = NULL;
    const carlo_chunk *nc = carlo_frame_find(f, "particles/N");
    const carlo_chunk *pc = carlo_frame_find(f, "particles/position");
    if (nc) { /* the reference: N, else the positions (tables have no order) */
        N = *(const uint32_t *)nc->data;
        first = "particles/N";
    } else if (pc) {
        N = pc->rows;
        first = pc->name;
    }
    for (int i = 0; i < f->n; i++) {
        const name_rule *r = rule_of(f->chunk[i].name);
        if (!r || r->kind != 1)
            continue;
        if (!first) {
            N = f->chunk[i].rows;
            first = f->chunk[i].name;
        } else if (f->chunk[i].rows != N) {
            luaL_error(L, "%s: %s has %I rows but %s says N = %I", where, f->chunk[i].name,
                       (lua_Integer)f->chunk[i].rows, first, (lua_Integer)N);
        }
    }
    if (first && !nc) {
        if (N > 4294967295ull)
            luaL_error(L, "%s: more than 2^32 - 1 particles", where);
        uint32_t n32 = (uint32_t)N;
        if (carlo_frame_add_copy(f, "particles/N", CARLO_U32, 1, 1, &n32))
            carlo_raise(L, where);
    }
}

/* tr:write(sys [, logs]) or tr:write{ name = value, ... } -> the frame's number */
static int l_write(lua_State *L)
{
    const char *where = "trajectory:write";
    traj_file *t = traj_lua_check(L, 1, where);
    int nargs = lua_gettop(L);
    lua_settop(L, 3);
    carlo_frame *f = push_framebox(L);
    void *sys;
    const carlo_model *m = carlo_model_of(L, 2, &sys);
    if (m) {
        if (m->frame(sys, f))
            return carlo_raise(L, where);
        if (!lua_isnil(L, 3)) {
            luaL_checktype(L, 3, LUA_TTABLE);
            add_table(L, f, 3, where, 1);
        }
    } else if (lua_type(L, 2) == LUA_TTABLE && !carlo_array_test(L, 2)) {
        if (nargs > 2)
            return luaL_error(L, "%s: give a system (and a table of log/... values), or one table "
                                 "of chunks", where);
        add_table(L, f, 2, where, 0);
        check_particles(L, f, where);
        if (f->n == 0)
            return luaL_error(L, "%s: the table holds no chunks", where);
    } else {
        return luaL_error(L, "%s: expected a carlo system or a table of chunks (got %s)", where,
                          luaL_typename(L, 2));
    }
    if (traj_write_take(t, f))
        return carlo_raise(L, where);
    carlo_frame_free(f);
    return 0;
}

/* ---------- reading ---------- */

static uint64_t frame_arg(lua_State *L, traj_file *t, int idx, const char *where)
{
    lua_Integer k = luaL_checkinteger(L, idx);
    lua_Integer n = (lua_Integer)traj_count(t);
    if (k < 0)
        k = n + 1 + k;
    if (k < 1 || k > n)
        luaL_error(L, "%s: frame %I out of range 1..%I (negative counts from the end)", where,
                   luaL_checkinteger(L, idx), n);
    return (uint64_t)(k - 1);
}

/* tr:frame(k) -> { name = carlo.array, ... } (k from 1; -1 is the last frame) */
static int l_frame(lua_State *L)
{
    const char *where = "trajectory:frame";
    traj_file *t = traj_lua_check(L, 1, where);
    uint64_t k = frame_arg(L, t, 2, where);
    traj_frame_info *info = (traj_frame_info *)lua_newuserdatauv(L, sizeof *info, 0);
    if (traj_frame_info_get(t, k, info))
        return carlo_raise(L, where);
    lua_createtable(L, 0, info->nchunks);
    for (int i = 0; i < info->nchunks; i++) {
        const traj_chunk_info *c = &info->chunk[i];
        if (c->rows > (uint64_t)1 << 40 || c->cols > (uint64_t)1 << 40)
            return luaL_error(L, "%s: chunk %s too large", where, c->name);
        carlo_array *a = carlo_array_push(L, c->type, (int64_t)c->rows, c->cols == 1 ? 0 : (int64_t)c->cols);
        if (traj_read_chunk(t, k, c->name, c->type, c->rows, c->cols, a->data,
                            a->n * carlo_dtype_size(a->type)))
            return carlo_raise(L, where);
        lua_setfield(L, -2, c->name);
    }
    return 1;
}

static const char *const CODECS[] = {"zlib", "shuffle", "delta", "quantized", "nibble"};

/* tr:info(k) -> { frame =, step =, names = {...}, chunks = { name = { type, rows, cols,
 * precision, codec } } } */
static int l_info(lua_State *L)
{
    const char *where = "trajectory:info";
    traj_file *t = traj_lua_check(L, 1, where);
    uint64_t k = frame_arg(L, t, 2, where);
    traj_frame_info *info = (traj_frame_info *)lua_newuserdatauv(L, sizeof *info, 0);
    if (traj_frame_info_get(t, k, info))
        return carlo_raise(L, where);
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, (lua_Integer)k + 1);
    lua_setfield(L, -2, "frame");
    if (info->has_step) {
        lua_pushinteger(L, (lua_Integer)info->step);
        lua_setfield(L, -2, "step");
    }
    lua_createtable(L, info->nchunks, 0);
    lua_createtable(L, 0, info->nchunks);
    for (int i = 0; i < info->nchunks; i++) {
        const traj_chunk_info *c = &info->chunk[i];
        lua_pushstring(L, c->name);
        lua_rawseti(L, -3, i + 1);
        lua_createtable(L, 0, 5);
        lua_pushstring(L, carlo_dtype_name(c->type));
        lua_setfield(L, -2, "type");
        lua_pushinteger(L, (lua_Integer)c->rows);
        lua_setfield(L, -2, "rows");
        lua_pushinteger(L, (lua_Integer)c->cols);
        lua_setfield(L, -2, "cols");
        lua_pushnumber(L, c->precision);
        lua_setfield(L, -2, "precision");
        lua_pushstring(L, CODECS[c->codec]);
        lua_setfield(L, -2, "codec");
        lua_setfield(L, -2, c->name);
    }
    lua_setfield(L, -3, "chunks");
    lua_setfield(L, -2, "names");
    return 1;
}

static int l_len(lua_State *L)
{
    traj_file *t = traj_lua_check(L, 1, "#trajectory");
    lua_pushinteger(L, (lua_Integer)traj_count(t));
    return 1;
}

static int l_flush(lua_State *L)
{
    traj_file *t = traj_lua_check(L, 1, "trajectory:flush");
    if (traj_flush(t))
        return carlo_raise(L, "trajectory:flush");
    return 0;
}

/* tr:stats() -> { raw = bytes of frame data written, stored = bytes in the file, ratio = } */
static int l_stats(lua_State *L)
{
    traj_file *t = traj_lua_check(L, 1, "trajectory:stats");
    traj_flush(t);
    uint64_t raw, stored;
    traj_written(t, &raw, &stored);
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, (lua_Integer)raw);
    lua_setfield(L, -2, "raw");
    lua_pushinteger(L, (lua_Integer)stored);
    lua_setfield(L, -2, "stored");
    lua_pushnumber(L, stored ? (double)raw / (double)stored : 0);
    lua_setfield(L, -2, "ratio");
    return 1;
}

static int l_close(lua_State *L)
{
    traj_ud *u = (traj_ud *)luaL_checkudata(L, 1, TRAJ_MT);
    if (!u->t)
        return 0;
    traj_file *t = u->t;
    u->t = NULL;
    if (traj_close(t))
        return carlo_raise(L, "trajectory:close");
    return 0;
}

static int l_gc(lua_State *L)
{
    traj_ud *u = (traj_ud *)luaL_checkudata(L, 1, TRAJ_MT);
    if (u->t && traj_close(u->t) && !carlo_quiet)
        fprintf(stderr, "carlo: %s\n", carlo_errmsg());
    u->t = NULL;
    return 0;
}

static int l_tostring(lua_State *L)
{
    traj_ud *u = (traj_ud *)luaL_checkudata(L, 1, TRAJ_MT);
    if (!u->t)
        lua_pushliteral(L, "carlo.trajectory (closed)");
    else
        lua_pushfstring(L, "carlo.trajectory(%s, \"%c\", %I frames)", traj_path(u->t),
                        traj_mode(u->t), (lua_Integer)traj_count(u->t));
    return 1;
}

static int l_index(lua_State *L)
{
    traj_ud *u = (traj_ud *)luaL_checkudata(L, 1, TRAJ_MT);
    const char *k = luaL_checkstring(L, 2);
    if (u->t) {
        if (strcmp(k, "path") == 0) {
            lua_pushstring(L, traj_path(u->t));
            return 1;
        }
        if (strcmp(k, "mode") == 0) {
            char m[2] = {traj_mode(u->t), 0};
            lua_pushstring(L, m);
            return 1;
        }
        if (strcmp(k, "precision") == 0) {
            lua_pushnumber(L, traj_precision(u->t));
            return 1;
        }
        if (strcmp(k, "recovered") == 0) {
            lua_pushboolean(L, traj_recovered(u->t));
            return 1;
        }
    }
    luaL_getmetatable(L, TRAJ_MT);
    lua_getfield(L, -1, "methods");
    if (lua_getfield(L, -1, k) == LUA_TNIL)
        return luaL_error(L, "trajectory: no field or method '%s'", k);
    return 1;
}

/* carlo.trajectory(path [, "r" | "w" | "a"] [, { precision =, threads =, level =, restart =,
 * quiet = }]) */
static int l_trajectory(lua_State *L)
{
    const char *where = "carlo.trajectory";
    static const char *const keys[] = {"precision", "threads", "level", "restart", "quiet", NULL};
    size_t plen;
    const char *path = luaL_checklstring(L, 1, &plen);
    if (strlen(path) != plen)
        return luaL_error(L, "%s: the file name '%s\\0...' holds a NUL byte", where, path);
    int opts = 0;
    char mode = 'r';
    if (lua_type(L, 2) == LUA_TSTRING) {
        const char *m = lua_tostring(L, 2);
        if (strcmp(m, "r") && strcmp(m, "w") && strcmp(m, "a"))
            return luaL_error(L, "%s: mode must be \"r\", \"w\" or \"a\" (got \"%s\")", where, m);
        mode = m[0];
        opts = lua_istable(L, 3) ? 3 : 0;
        if (!opts && !lua_isnoneornil(L, 3))
            return luaL_error(L, "%s: the third argument is a table of options", where);
    } else if (lua_istable(L, 2)) {
        opts = 2;
    } else if (!lua_isnoneornil(L, 2)) {
        return luaL_error(L, "%s: the mode is \"r\", \"w\" or \"a\" (got a %s)", where,
                          luaL_typename(L, 2));
    }
    traj_options o;
    traj_options_init(&o);
    if (opts) {
        carlo_args_allowed(L, opts, where, keys);
        o.precision = carlo_arg_num(L, opts, where, "precision", 0, 0, 0, 0, 1e6, 1);
        o.threads = (int)carlo_arg_int(L, opts, where, "threads", 0, -1, 0, 256);
        o.level = (int)carlo_arg_int(L, opts, where, "level", 0, 1, 1, 9);
        o.restart = carlo_arg_int(L, opts, where, "restart", 0, -1, 0, INT64_MAX);
        o.quiet = carlo_arg_bool(L, opts, where, "quiet", 0);
        if (carlo_arg_has(L, opts, "precision") && mode == 'r')
            return luaL_error(L, "%s: precision applies when writing (\"w\" or \"a\"); a reader "
                                 "finds each chunk's precision in tr:info(k)", where);
        if (carlo_arg_has(L, opts, "restart") && mode != 'a')
            return luaL_error(L, "%s: restart applies to mode \"a\"", where);
    }
    traj_ud *u = (traj_ud *)lua_newuserdatauv(L, sizeof *u, 0);
    u->t = NULL;
    u->quiet = o.quiet;
    luaL_setmetatable(L, TRAJ_MT);
    u->t = traj_open(path, mode, &o);
    if (!u->t)
        return carlo_raise(L, where);
    return 1;
}

/* carlo.load(path [, { device = "auto" | "cpu" | "gpu" }]) -> the system saved in path */
static int l_load(lua_State *L)
{
    const char *where = "carlo.load";
    static const char *const keys[] = {"device", NULL};
    static const char *const devices[] = {"auto", "cpu", "gpu", NULL};
    const char *path = luaL_checkstring(L, 1);
    const char *device = NULL;
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        carlo_args_allowed(L, 2, where, keys);
        carlo_arg_enum(L, 2, where, "device", "auto", devices);
        device = carlo_arg_str(L, 2, where, "device", 0);
    }
    carlo_frame *f = push_framebox(L);
    if (traj_checkpoint_load(path, f))
        return carlo_raise(L, where);
    const carlo_chunk *mc = carlo_frame_find(f, "carlo/model");
    if (!mc || mc->type != CARLO_U8 || mc->cols != 1 || mc->rows == 0 || mc->rows > 63)
        return luaL_error(L, "%s: %s is not a checkpoint (no chunk carlo/model; write one with "
                             "sys:save(path))", where, path);
    char name[64];
    memcpy(name, mc->data, (size_t)mc->rows);
    name[mc->rows] = 0;
    const carlo_model *m = carlo_model_find(L, name);
    if (!m)
        return luaL_error(L, "%s: %s is a checkpoint of model '%s', which this carlo does not have",
                          where, path, name);
    return m->restore(L, f, device);
}

void traj_lua_open(lua_State *L)
{
    static const luaL_Reg meta[] = {
        {"__index", l_index}, {"__len", l_len}, {"__gc", l_gc}, {"__close", l_gc},
        {"__tostring", l_tostring}, {NULL, NULL}};
    static const luaL_Reg methods[] = {
        {"write", l_write}, {"frame", l_frame}, {"info", l_info}, {"flush", l_flush},
        {"stats", l_stats}, {"close", l_close}, {NULL, NULL}};
    if (luaL_newmetatable(L, TRAJ_MT)) {
        luaL_setfuncs(L, meta, 0);
        luaL_newlib(L, methods);
        lua_setfield(L, -2, "methods");
    }
    lua_pop(L, 1);
    if (luaL_newmetatable(L, FRAMEBOX_MT)) {
        lua_pushcfunction(L, framebox_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_pop(L, 1);
    lua_pushcfunction(L, l_trajectory);
    lua_setfield(L, -2, "trajectory");
    lua_pushcfunction(L, l_load);
    lua_setfield(L, -2, "load");
}
