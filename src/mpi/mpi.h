/* mpi.h — carlo's only door to MPI: start and stop, rank and size, and the few collectives
 * the Lua layer (carlo.mpi) and the lattice decomposition need. mpi.c implements it with MPI
 * (make MPI=1); mpi_none.c is the single-process stand-in of every other build: rank 0 of 1,
 * every collective a copy. Nothing else in carlo includes <mpi.h>.
 * All calls return 0, or -1 with the message set (carlo_errmsg). Before carlo_mpi_init (or
 * when the host program never started MPI) carlo runs as rank 0 of 1. */
#ifndef CARLO_MPI_H
#define CARLO_MPI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 in a build with MPI (make MPI=1), 0 otherwise. */
int carlo_mpi_built(void);
/* The carlo command's start (when an MPI launcher started it, or CARLO_MPI=1) and end; a host
 * program may start MPI itself: carlo uses it. */
int carlo_mpi_init(int *argc, char ***argv);
void carlo_mpi_finalize(void);
/* Stop every rank with exit status code (after an error or Ctrl-C on one of them). */
void carlo_mpi_abort(int code);

int carlo_mpi_rank(void);
int carlo_mpi_size(void);
/* The ranks on this machine (this rank's node), for sharing its cores among them. */
int carlo_mpi_local_size(void);
/* This rank's place among them (0 .. local_size - 1, in the order of their ranks): the rule
 * that gives each rank its GPU (core/device.h, carlo_gpu_pick). */
int carlo_mpi_local_rank(void);
/* 1 when the MPI takes device (CUDA) pointers in its calls: Open MPI built CUDA-aware and saying
 * so at run time (MPIX_Query_cuda_support); 0 for any other MPI, or without MPI. */
int carlo_mpi_cuda_aware(void);

int carlo_mpi_barrier(void);
/* all = the n values of every rank, in rank order; counts[r] (size entries) is rank r's n,
 * all holds their sum. */
int carlo_mpi_allgatherv_f64(const double *mine, int n, double *all, const int *counts);
/* The n of every rank into counts (size entries). */
int carlo_mpi_allgather_int(int mine, int *counts);
/* Bytes: the same as allgatherv_f64 (counts in bytes). */
int carlo_mpi_allgatherv_u8(const uint8_t *mine, int n, uint8_t *all, const int *counts);
/* n bytes from every rank (the same n on all), in rank order: all holds size n bytes. */
int carlo_mpi_allgather_u8(const uint8_t *mine, int n, uint8_t *all);
/* Rows of rowbytes bytes: rank r's counts[r] rows follow rank r - 1's in all (a lattice's row
 * slabs gathered into the whole lattice on every rank; counts in rows, so sizes stay ints). */
int carlo_mpi_allgather_rows(const uint8_t *mine, int nrows, uint8_t *all, const int *counts,
                             int rowbytes);
/* v (n values) from root to every rank. */
int carlo_mpi_bcast_f64(double *v, int n, int root);
int carlo_mpi_bcast_u8(uint8_t *v, size_t n, int root);
/* Sum (in place) over the ranks, element by element. */
int carlo_mpi_sum_f64(double *v, int n);
int carlo_mpi_sum_i64(int64_t *v, int n);
/* Smallest, largest (in place) over the ranks, element by element (NaN-free values). */
int carlo_mpi_min_f64(double *v, int n);
int carlo_mpi_max_f64(double *v, int n);
/* Send n bytes to rank dest while receiving n bytes from rank src (halo rows). */
int carlo_mpi_sendrecv_u8(const uint8_t *send, int dest, uint8_t *recv, int src, int n, int tag);
/* Two messages out and two in at once (halo layers both ways): send[k] (nsend[k] bytes) to
 * rank dest[k] with tag tag + k, recv[k] (nrecv[k] bytes) from rank src[k] with tag tag + k; a
 * message of 0 bytes is not sent (its receiver expects 0 too). */
int carlo_mpi_exchange2(uint8_t *const send[2], const int nsend[2], const int dest[2],
                        uint8_t *const recv[2], const int nrecv[2], const int src[2], int tag);

/* bytes of memory for each rank, shared by the ranks of one machine (an MPI-3 shared window):
 * base[r] (size entries) is rank r's part as this process maps it, the parts one contiguous
 * range from base[0]. Returns 1 when made, 0 when the ranks are not all on this machine (or
 * without MPI): nothing made, no message; -1 on an error. Collective; the memory lives until
 * carlo_mpi_finalize (freeing it is collective too, and a system may be collected at different
 * moments on different ranks). */
int carlo_mpi_shared_alloc(size_t bytes, uint8_t **base);
/* Notes of no bytes: one to rank to[k] and one from rank from[k] with tag tag + k (k = 0, 1;
 * -1: none), all at once. */
int carlo_mpi_notify2(const int to[2], const int from[2], int tag);

#ifdef __cplusplus
}
#endif

#endif
