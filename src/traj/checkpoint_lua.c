/* checkpoint_lua.c — carlo.load(path [, { device = }]): rebuilds any model's system from
 * its checkpoint through the model registry (core/system.h). */
#include <lauxlib.h>
#include <string.h>

#include "core/args.h"
#include "core/error.h"
#include "core/system.h"
#include "traj/checkpoint.h"

static int l_load(lua_State *L)
{
    static const char *const keys[] = {"device", NULL};
    const char *path = luaL_checkstring(L, 1);
    const char *device = NULL;
    if (!lua_isnoneornil(L, 2)) {
        carlo_args_allowed(L, 2, "carlo.load", keys);
        device = carlo_arg_str(L, 2, "carlo.load", "device", 0);
    }
    carlo_frame f;
    if (traj_checkpoint_load(path, &f))
        return carlo_raise(L, "carlo.load");
    const carlo_chunk *m = carlo_frame_find(&f, "carlo/model");
    char name[64] = "";
    if (m && m->type == CARLO_U8 && m->cols == 1 && m->rows < sizeof name)
        memcpy(name, m->data, (size_t)m->rows);
    const carlo_model *model = name[0] ? carlo_model_find(L, name) : NULL;
    if (!model) {
        carlo_frame_free(&f);
        return luaL_error(L, "carlo.load: %s holds no known model%s%s", path, name[0] ? ": " : "", name);
    }
    /* the frame is freed even when restore raises: a userdata whose __gc frees it */
    carlo_frame *keep = (carlo_frame *)lua_newuserdatauv(L, sizeof f, 0);
    *keep = f;
    luaL_setmetatable(L, "carlo.frame");
    return model->restore(L, keep, device);
}

static int frame_gc(lua_State *L)
{
    carlo_frame_free((carlo_frame *)luaL_checkudata(L, 1, "carlo.frame"));
    return 0;
}

void checkpoint_lua_open(lua_State *L)
{
    if (luaL_newmetatable(L, "carlo.frame")) {
        lua_pushcfunction(L, frame_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_pop(L, 1);
    lua_pushcfunction(L, l_load);
    lua_setfield(L, -2, "load");
}
