/* carlo.h — the public C API: embed the carlo runtime (Lua 5.4 with the carlo module)
 * in a host program. This is the only header a host program includes.
 *
 *   carlo_runtime *rt = carlo_open();
 *   if (carlo_dostring(rt, "sys = carlo.potts{ L = 64, q = 3, T = 1, seed = 1 }", "setup"))
 *       fprintf(stderr, "%s\n", carlo_error(rt));
 *   double e;
 *   carlo_eval_number(rt, "sys:observe().e", &e);
 *   carlo_close(rt);
 */
#ifndef CARLO_H
#define CARLO_H

#ifdef __cplusplus
extern "C" {
#endif

struct lua_State;
typedef struct carlo_runtime carlo_runtime;

/* A new runtime: a Lua state with the standard libraries, `require "carlo"` available and
 * the module also in the global `carlo`. NULL when memory runs out. */
carlo_runtime *carlo_open(void);

/* Run a script file with arguments in the global `arg` (as the carlo command does), or a
 * chunk of Lua. Return 0, or nonzero with carlo_error() holding the message and traceback. */
int carlo_dofile(carlo_runtime *rt, const char *path, int argc, char **argv);
int carlo_dostring(carlo_runtime *rt, const char *chunk, const char *chunkname);

/* Evaluate a Lua expression that yields a number. */
int carlo_eval_number(carlo_runtime *rt, const char *expression, double *out);

/* The message of the last failure (empty when none). */
const char *carlo_error(const carlo_runtime *rt);

/* The Lua state, for hosts that talk Lua's C API directly (include lua.h for that). */
struct lua_State *carlo_lua(carlo_runtime *rt);

/* Close the runtime: every system, log and trajectory is finalized and flushed. */
void carlo_close(carlo_runtime *rt);

/* The module loader, also exported by carlo.so so that a stock lua5.4 can require it. */
int luaopen_carlo(struct lua_State *L);

const char *carlo_version(void);

#ifdef __cplusplus
}
#endif

#endif
