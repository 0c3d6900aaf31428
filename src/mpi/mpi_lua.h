/* mpi_lua.h — carlo.mpi, the Lua face of src/mpi/mpi.h (rank, size, collectives, print). */
#ifndef CARLO_MPI_LUA_H
#define CARLO_MPI_LUA_H

#include <lua.h>

/* Adds carlo.mpi to the module table at -1; on ranks other than 0, silences print. */
void carlo_mpi_lua_open(lua_State *L);

#endif
