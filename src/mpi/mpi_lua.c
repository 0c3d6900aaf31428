/* mpi_lua.c — carlo.mpi: rank, size, built, barrier, allgather, broadcast, sum, print_all.
 * The same functions in every build: without MPI (or outside mpirun) they are those of rank 0
 * of 1, so a script runs unchanged. On ranks other than 0, print is silenced until
 * carlo.mpi.print_all(true). */
#include "mpi/mpi_lua.h"

#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/frame.h"
#include "mpi/mpi.h"
#include "system/system_lua.h"

static int print_all;

static int fail(lua_State *L, const char *where)
{
    return luaL_error(L, "carlo.mpi.%s: %s", where, carlo_errmsg());
}

/* The numbers at idx (a number or a list of numbers) into a new buffer; *n their count. */
static double *numbers(lua_State *L, int idx, int *n, const char *where)
{
    if (lua_type(L, idx) == LUA_TNUMBER) {
        double *v = malloc(sizeof *v);
        if (!v)
            luaL_error(L, "carlo.mpi.%s: out of memory", where);
        *v = lua_tonumber(L, idx);
        *n = 1;
        return v;
    }
    if (!lua_istable(L, idx))
        luaL_error(L, "carlo.mpi.%s: expects a number or a list of numbers (got a %s)", where,
                   luaL_typename(L, idx));
    lua_Integer len = luaL_len(L, idx);
    if (len > (1 << 28))
        luaL_error(L, "carlo.mpi.%s: at most %d numbers (got %I)", where, 1 << 28, len);
    double *v = malloc(((size_t)len + 1) * sizeof *v);
    if (!v)
        luaL_error(L, "carlo.mpi.%s: out of memory for %I numbers", where, len);
    for (lua_Integer i = 1; i <= len; i++) {
        int isnum;
        lua_geti(L, idx, i);
        v[i - 1] = lua_tonumberx(L, -1, &isnum);
        lua_pop(L, 1);
        if (!isnum) {
            free(v);
            luaL_error(L, "carlo.mpi.%s: element %I is not a number", where, i);
        }
    }
    *n = (int)len;
    return v;
}

/* Numbers travel as doubles and come back as floats (exact for integers up to 2^53). */
static void push_list(lua_State *L, const double *v, int n)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushnumber(L, v[i]);
        lua_rawseti(L, -2, i + 1);
    }
}

static int l_barrier(lua_State *L)
{
    if (carlo_mpi_barrier())
        return fail(L, "barrier");
    return 0;
}

/* allgather(x) -> every rank's numbers in rank order, and the count from each rank. */
static int l_allgather(lua_State *L)
{
    int n, size = carlo_mpi_size();
    double *mine = numbers(L, 1, &n, "allgather");
    int *counts = malloc((size_t)size * sizeof *counts);
    double *all = NULL;
    int total = 0, rc = counts ? carlo_mpi_allgather_int(n, counts) : carlo_seterr("out of memory");
    for (int r = 0; rc == 0 && r < size; r++) {
        if (counts[r] > (1 << 28) - total)
            rc = carlo_seterr("more than %d numbers in all", 1 << 28);
        else
            total += counts[r];
    }
    if (rc == 0) {
        all = malloc(((size_t)total + 1) * sizeof *all);
        rc = all ? carlo_mpi_allgatherv_f64(mine, n, all, counts) : carlo_seterr("out of memory");
    }
    free(mine);
    if (rc) {
        free(counts);
        free(all);
        return fail(L, "allgather");
    }
    push_list(L, all, total);
    lua_createtable(L, size, 0);
    for (int r = 0; r < size; r++) {
        lua_pushinteger(L, counts[r]);
        lua_rawseti(L, -2, r + 1);
    }
    free(counts);
    free(all);
    return 2;
}

/* sum(x) -> x summed over the ranks (a number, or a list element by element); every rank
 * passes as many numbers. */
static int l_sum(lua_State *L)
{
    int n, size = carlo_mpi_size();
    double *v = numbers(L, 1, &n, "sum");
    int *counts = malloc((size_t)size * sizeof *counts);
    int rc = counts ? carlo_mpi_allgather_int(n, counts) : carlo_seterr("out of memory");
    for (int r = 0; rc == 0 && r < size; r++)
        if (counts[r] != n)
            rc = carlo_seterr("rank %d passes %d numbers, rank %d passes %d", carlo_mpi_rank(), n,
                              r, counts[r]);
    free(counts);
    if (rc == 0)
        rc = carlo_mpi_sum_f64(v, n);
    if (rc) {
        free(v);
        return fail(L, "sum");
    }
    if (lua_type(L, 1) == LUA_TNUMBER)
        lua_pushnumber(L, v[0]);
    else
        push_list(L, v, n);
    free(v);
    return 1;
}

/* broadcast(x [, root = 0]) -> root's x (a number, a list of numbers or a string) on every
 * rank; the others' x is not read. */
static int l_broadcast(lua_State *L)
{
    lua_Integer root = luaL_optinteger(L, 2, 0);
    if (root < 0 || root >= carlo_mpi_size())
        return luaL_error(L, "carlo.mpi.broadcast: root must be a rank from 0 to %d (got %I)",
                          carlo_mpi_size() - 1, root);
    int me = carlo_mpi_rank() == (int)root;
    double head[2] = {0, 0}; /* kind (1 number, 2 list, 3 string), length */
    double *v = NULL;
    size_t slen = 0;
    const char *s = NULL;
    if (me) {
        if (lua_type(L, 1) == LUA_TSTRING) {
            s = lua_tolstring(L, 1, &slen);
            head[0] = 3;
            head[1] = (double)slen;
        } else {
            int n;
            v = numbers(L, 1, &n, "broadcast");
            head[0] = lua_type(L, 1) == LUA_TNUMBER ? 1 : 2;
            head[1] = n;
        }
    }
    if (carlo_mpi_bcast_f64(head, 2, (int)root)) {
        free(v);
        return fail(L, "broadcast");
    }
    if (head[0] == 3) {
        luaL_Buffer b;
        char *p = luaL_buffinitsize(L, &b, (size_t)head[1]);
        if (me)
            memcpy(p, s, slen);
        if (carlo_mpi_bcast_u8((uint8_t *)p, (size_t)head[1], (int)root))
            return fail(L, "broadcast");
        luaL_pushresultsize(&b, (size_t)head[1]);
        return 1;
    }
    int n = (int)head[1];
    if (!me) {
        v = malloc(((size_t)n + 1) * sizeof *v);
        if (!v)
            return luaL_error(L, "carlo.mpi.broadcast: out of memory");
    }
    if (carlo_mpi_bcast_f64(v, n, (int)root)) {
        free(v);
        return fail(L, "broadcast");
    }
    if (head[0] == 1)
        lua_pushnumber(L, v[0]);
    else
        push_list(L, v, n);
    free(v);
    return 1;
}

/* print_all(on) -> whether print was already on for every rank; with no argument, asks. */
static int l_print_all(lua_State *L)
{
    int was = print_all;
    if (!lua_isnoneornil(L, 1))
        print_all = lua_toboolean(L, 1);
    lua_pushboolean(L, was || carlo_mpi_rank() == 0);
    return 1;
}

/* print on ranks other than 0: the original print (upvalue 1) when print_all is on. */
static int l_print(lua_State *L)
{
    if (!print_all)
        return 0;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 0);
    return 0;
}

/* _checkpoint(sys): what sys:save does but the writing, on a rank that does not write: the
 * checkpoint of a system split over the ranks gathers its lattice from every rank. */
static int l_checkpoint(lua_State *L)
{
    carlo_sys *s = carlo_lua_check(L, 1, NULL);
    carlo_frame f;
    carlo_frame_init(&f);
    int rc = s->ops->checkpoint(s, &f);
    carlo_frame_free(&f);
    if (rc)
        return fail(L, "_checkpoint");
    return 0;
}

void carlo_mpi_lua_open(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"barrier", l_barrier}, {"allgather", l_allgather}, {"sum", l_sum},
        {"broadcast", l_broadcast}, {"print_all", l_print_all}, {"_checkpoint", l_checkpoint},
        {NULL, NULL}};
    luaL_newlib(L, fns);
    lua_pushinteger(L, carlo_mpi_rank());
    lua_setfield(L, -2, "rank");
    lua_pushinteger(L, carlo_mpi_size());
    lua_setfield(L, -2, "size");
    lua_pushboolean(L, carlo_mpi_built());
    lua_setfield(L, -2, "built");
    lua_setfield(L, -2, "mpi");
    if (carlo_mpi_rank() != 0 && lua_getglobal(L, "print") == LUA_TFUNCTION) {
        lua_pushcclosure(L, l_print, 1);
        lua_setglobal(L, "print");
    } else if (carlo_mpi_rank() != 0) {
        lua_pop(L, 1);
    }
}
