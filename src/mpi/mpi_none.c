/* mpi_none.c — carlo_mpi_* in a build without MPI: one process, rank 0 of 1, every collective
 * a copy of this rank's part (mpi.h). */
#include "mpi/mpi.h"

#include <string.h>

#include "core/error.h"

int carlo_mpi_built(void) { return 0; }

int carlo_mpi_init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

void carlo_mpi_finalize(void) {}
void carlo_mpi_abort(int code) { (void)code; }
int carlo_mpi_rank(void) { return 0; }
int carlo_mpi_size(void) { return 1; }
int carlo_mpi_local_size(void) { return 1; }
int carlo_mpi_local_rank(void) { return 0; }
int carlo_mpi_cuda_aware(void) { return 0; }
int carlo_mpi_barrier(void) { return 0; }

int carlo_mpi_allgatherv_f64(const double *mine, int n, double *all, const int *counts)
{
    (void)counts;
    if (n > 0 && all != mine)
        memmove(all, mine, (size_t)n * sizeof *all);
    return 0;
}

int carlo_mpi_allgather_int(int mine, int *counts)
{
    counts[0] = mine;
    return 0;
}

int carlo_mpi_allgatherv_u8(const uint8_t *mine, int n, uint8_t *all, const int *counts)
{
    (void)counts;
    if (n > 0 && all != mine)
        memmove(all, mine, (size_t)n);
    return 0;
}

int carlo_mpi_allgather_u8(const uint8_t *mine, int n, uint8_t *all)
{
    if (n > 0 && all != mine)
        memmove(all, mine, (size_t)n);
    return 0;
}

int carlo_mpi_allgather_rows(const uint8_t *mine, int nrows, uint8_t *all, const int *counts,
                             int rowbytes)
{
    (void)counts;
    if (nrows > 0 && all != mine)
        memmove(all, mine, (size_t)nrows * (size_t)rowbytes);
    return 0;
}

int carlo_mpi_bcast_f64(double *v, int n, int root)
{
    (void)v;
    (void)n;
    return root == 0 ? 0 : carlo_seterr("MPI: root must be a rank from 0 to 0 (got %d)", root);
}

int carlo_mpi_bcast_u8(uint8_t *v, size_t n, int root)
{
    (void)v;
    (void)n;
    return root == 0 ? 0 : carlo_seterr("MPI: root must be a rank from 0 to 0 (got %d)", root);
}

int carlo_mpi_sum_f64(double *v, int n)
{
    (void)v;
    (void)n;
    return 0;
}

int carlo_mpi_sum_i64(int64_t *v, int n)
{
    (void)v;
    (void)n;
    return 0;
}

int carlo_mpi_min_f64(double *v, int n)
{
    (void)v;
    (void)n;
    return 0;
}

int carlo_mpi_max_f64(double *v, int n)
{
    (void)v;
    (void)n;
    return 0;
}

int carlo_mpi_sendrecv_u8(const uint8_t *send, int dest, uint8_t *recv, int src, int n, int tag)
{
    (void)dest;
    (void)src;
    (void)tag;
    if (n > 0 && recv != send)
        memmove(recv, send, (size_t)n);
    return 0;
}

int carlo_mpi_exchange2(uint8_t *const send[2], const int nsend[2], const int dest[2],
                        uint8_t *const recv[2], const int nrecv[2], const int src[2], int tag)
{
    (void)dest;
    (void)src;
    (void)tag;
    for (int k = 0; k < 2; k++)
        if (nsend[k] > 0 && nsend[k] == nrecv[k] && recv[k] != send[k])
            memmove(recv[k], send[k], (size_t)nsend[k]);
    return 0;
}

int carlo_mpi_shared_alloc(size_t bytes, uint8_t **base)
{
    (void)bytes;
    (void)base;
    return 0;
}

int carlo_mpi_notify2(const int to[2], const int from[2], int tag)
{
    (void)to;
    (void)from;
    (void)tag;
    return 0;
}
