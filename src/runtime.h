/* runtime.h — private to the command and the runtime: the message handler that adds a
 * traceback, used by every protected call. */
#ifndef CARLO_RUNTIME_H
#define CARLO_RUNTIME_H

#include <lua.h>

int carlo_msghandler(lua_State *L);
/* lua_pcall with carlo_msghandler below the function. */
int carlo_pcall(lua_State *L, int nargs, int nresults);

#endif
