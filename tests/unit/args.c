/* unit/core/args — the keyword-argument checks every binding uses: each refusal names the key
 * and the value received (never a neighbouring stack slot), and strings are never read as
 * numbers. Each case runs a Lua chunk that calls one checker through a C function. */
#include <lauxlib.h>
#include <lualib.h>
#include <math.h>
#include <string.h>

#include "check.h"
#include "core/args.h"

static const char *const INITS[] = {"random", "ordered", NULL};

/* checker(kind, table): kind names the function to call on the table's keys. */
static int checker(lua_State *L)
{
    const char *kind = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_pushlightuserdata(L, (void *)L); /* a slot above the table, as a binding often has */
    if (strcmp(kind, "enum") == 0)
        lua_pushinteger(L, carlo_arg_enum(L, 2, "carlo.test", "init", "random", INITS));
    else if (strcmp(kind, "enum-required") == 0)
        lua_pushinteger(L, carlo_arg_enum(L, 2, "carlo.test", "init", NULL, INITS));
    else if (strcmp(kind, "num") == 0)
        lua_pushnumber(L, carlo_arg_num(L, 2, "carlo.test", "T", 1, 0, 0, 0, INFINITY, 0));
    else if (strcmp(kind, "num-range") == 0)
        lua_pushnumber(L, carlo_arg_num(L, 2, "carlo.test", "T", 1, 0, 1.0 / 177, 1, 0.25, 1));
    else if (strcmp(kind, "int") == 0)
        lua_pushinteger(L, (lua_Integer)carlo_arg_int(L, 2, "carlo.test", "L", 1, 0, 2, 64));
    else if (strcmp(kind, "item") == 0) {
        lua_getfield(L, 2, "temperatures");
        double sum = 0;
        for (lua_Integer k = 1; k <= (lua_Integer)lua_rawlen(L, -1); k++)
            sum += carlo_arg_item_num(L, -1, "carlo.test", "temperatures", k, 0, 0, INFINITY, 0);
        lua_pushnumber(L, sum);
    } else if (strcmp(kind, "bool") == 0)
        lua_pushboolean(L, carlo_arg_bool(L, 2, "carlo.test", "quiet", 0));
    else if (strcmp(kind, "str") == 0)
        lua_pushstring(L, carlo_arg_str(L, 2, "carlo.test", "path", 1));
    else
        return luaL_error(L, "no checker %s", kind);
    return 1;
}

/* Runs chunk: with p1, wants an error containing p1 (and p2) but not not_in; without, no error. */
static void expect(const char *name, lua_State *L, const char *chunk, const char *p1,
                   const char *p2, const char *not_in)
{
    int rc = luaL_loadstring(L, chunk) || lua_pcall(L, 0, 1, 0);
    const char *msg = lua_tostring(L, -1);
    if (!p1) {
        CHECK(name, rc == 0, "raised %s", msg ? msg : "?");
    } else {
        int ok = rc != 0 && msg && strstr(msg, p1) && (!p2 || strstr(msg, p2)) &&
                 (!not_in || !strstr(msg, not_in));
        CHECK(name, ok, "%s: message %s (wants '%s'%s%s%s%s)", chunk,
              rc ? (msg ? msg : "?") : "none: no error", p1, p2 ? ", '" : "", p2 ? p2 : "",
              p2 ? "'" : "", not_in ? ", and no userdata" : "");
    }
    lua_settop(L, 0);
}

int main(void)
{
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    lua_register(L, "check", checker);

    /* the value received, not the slot below it */
    expect("unit/core/args/enum-names-value", L, "return check('enum', { init = 'bogus' })",
           "init must be one of \"random\", \"ordered\"", "(got \"bogus\")", "userdata");
    expect("unit/core/args/enum-non-string", L, "return check('enum', { init = 3 })",
           "init must be one of", "(got 3)", "userdata");
    expect("unit/core/args/enum-table", L, "return check('enum', { init = {} })",
           "init must be one of", "(got a table)", NULL);
    expect("unit/core/args/enum-required", L, "return check('enum-required', {})",
           "init is required (one of \"random\", \"ordered\")", NULL, NULL);
    expect("unit/core/args/enum-ok", L, "assert(check('enum', { init = 'ordered' }) == 1)", NULL,
           NULL, NULL);
    expect("unit/core/args/enum-default", L, "assert(check('enum', {}) == 0)", NULL, NULL, NULL);

    /* strings are not numbers */
    expect("unit/core/args/num-string-refused", L, "return check('num', { T = '1' })",
           "T must be a number > 0", "(got the string \"1\")", NULL);
    expect("unit/core/args/num-string-hex-refused", L, "return check('num', { T = '0x10' })",
           "T must be", "(got the string \"0x10\")", NULL);
    expect("unit/core/args/int-string-refused", L, "return check('int', { L = '16' })",
           "L must be an integer from 2 to 64", "(got the string \"16\")", NULL);
    expect("unit/core/args/list-string-refused", L,
           "return check('item', { temperatures = { 1, '2' } })",
           "temperatures[2] must be a number > 0", "(got the string \"2\")", NULL);
    expect("unit/core/args/list-bad-value", L,
           "return check('item', { temperatures = { 1, -2 } })",
           "temperatures[2] must be a number > 0", "(got -2)", NULL);
    expect("unit/core/args/list-ok", L,
           "assert(check('item', { temperatures = { 1, 2.5 } }) == 3.5)", NULL, NULL, NULL);
    expect("unit/core/args/num-ok", L, "assert(check('num', { T = 2 }) == 2)", NULL, NULL, NULL);
    expect("unit/core/args/int-float-valued-ok", L, "assert(check('int', { L = 16.0 }) == 16)",
           NULL, NULL, NULL);

    /* values and ranges print readably */
    expect("unit/core/args/num-nan", L, "return check('num', { T = 0/0 })", "T must be a number",
           "nan)", NULL);
    expect("unit/core/args/int-fraction", L, "return check('int', { L = 16.5 })",
           "L must be an integer", "(got 16.5)", NULL);
    expect("unit/core/args/num-range-shortest", L, "return check('num-range', { T = 1 })",
           "T must be a number in [0.005649717514124294, 0.25]", "(got 1)", NULL);
    expect("unit/core/args/num-required", L, "return check('num', {})",
           "T is required (a number > 0)", NULL, NULL);
    expect("unit/core/args/bool-value", L, "return check('bool', { quiet = 'yes' })",
           "quiet must be true or false", "(got the string \"yes\")", NULL);
    expect("unit/core/args/str-value", L, "return check('str', { path = 42 })",
           "path must be a string", "(got 42)", NULL);
    expect("unit/core/args/long-string-cut", L,
           "return check('num', { T = ('x'):rep(100) .. '\\n' })", "(got the string \"xxxx",
           "xxx...\")", NULL);
    expect("unit/core/args/array-named", L, "return check('num', { T = setmetatable({}, "
           "{ __name = 'carlo.array' }) })", "(got a carlo.array)", NULL, NULL);

    lua_close(L);
    return check_failed;
}
