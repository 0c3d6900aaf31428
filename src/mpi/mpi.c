/* mpi.c — carlo_mpi_* with MPI (make MPI=1): MPI_COMM_WORLD, errors returned as messages
 * rather than aborting inside MPI, and every call from the main thread only (OpenMP threads
 * never call MPI: MPI_THREAD_FUNNELED). */
#include "mpi/mpi.h"

#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h> /* MPIX_CUDA_AWARE_SUPPORT, MPIX_Query_cuda_support */
#endif
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

int carlo_mpi_built(void) { return 1; }

static int active(void)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    return init && !fin;
}

static int check(int rc, const char *call)
{
    if (rc == MPI_SUCCESS)
        return 0;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return carlo_seterr("MPI: %s failed: %.*s", call, len, msg);
}

/* Started by an MPI launcher: Open MPI's mpirun, PMI (MPICH's Hydra, Intel MPI, Slurm's srun),
 * PMIx; or CARLO_MPI=1 for another. Without one carlo runs as one process and skips MPI_Init,
 * which as a singleton costs half a second at every start. */
static int launched(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK",
                                       "PMIX_RANK", "MPI_LOCALNRANKS", NULL};
    const char *force = getenv("CARLO_MPI");
    if (force && *force)
        return strcmp(force, "0") != 0;
    for (int i = 0; vars[i]; i++)
        if (getenv(vars[i]))
            return 1;
    return 0;
}

int carlo_mpi_init(int *argc, char ***argv)
{
    if (active() || !launched())
        return 0;
    int provided;
    if (check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread"))
        return -1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    carlo_mpi_local_rank();
    return 0;
}

/* The shared windows made (carlo_mpi_shared_alloc), freed at the end. */
static MPI_Win *windows;
static int nwindows;

void carlo_mpi_finalize(void)
{
    if (!active())
        return;
    for (int k = 0; k < nwindows; k++)
        MPI_Win_free(&windows[k]);
    free(windows);
    windows = NULL;
    nwindows = 0;
    MPI_Finalize();
}

void carlo_mpi_abort(int code)
{
    if (active())
        MPI_Abort(MPI_COMM_WORLD, code);
}

int carlo_mpi_rank(void)
{
    int r = 0;
    if (active())
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

int carlo_mpi_size(void)
{
    int n = 1;
    if (active())
        MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
}

int carlo_mpi_local_size(void)
{
    if (!active())
        return 1;
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) !=
        MPI_SUCCESS)
        return 1;
    int n = 1;
    MPI_Comm_size(node, &n);
    MPI_Comm_free(&node);
    return n;
}

static int local_rank_known = -1;

/* A collective call (every rank makes it): carlo_mpi_init makes it at the start, so that a
 * GPU system made on some ranks only finds the answer ready. */
int carlo_mpi_local_rank(void)
{
    if (!active())
        return 0;
    if (local_rank_known >= 0)
        return local_rank_known;
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) !=
        MPI_SUCCESS)
        return 0;
    int r = 0;
    MPI_Comm_rank(node, &r);
    MPI_Comm_free(&node);
    local_rank_known = r;
    return r;
}

/* Compiled CUDA-aware (MPIX_CUDA_AWARE_SUPPORT from Open MPI's mpi-ext.h) and so at run time
 * too: the library found may differ from the headers. */
int carlo_mpi_cuda_aware(void)
{
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    return active() && MPIX_Query_cuda_support() == 1;
#else
    return 0;
#endif
}

int carlo_mpi_barrier(void)
{
    return active() ? check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier") : 0;
}

/* Displacements of counts (size entries), or NULL with the message set. */
static int *displacements(const int *counts, int size)
{
    int *d = carlo_malloc((size_t)size * sizeof *d, "MPI displacements");
    if (!d)
        return NULL;
    int at = 0;
    for (int r = 0; r < size; r++) {
        d[r] = at;
        at += counts[r];
    }
    return d;
}

static int allgatherv(const void *mine, int n, void *all, const int *counts, MPI_Datatype t)
{
    int size = carlo_mpi_size();
    int *d = displacements(counts, size);
    if (!d)
        return -1;
    int rc = check(MPI_Allgatherv(mine, n, t, all, counts, d, t, MPI_COMM_WORLD), "MPI_Allgatherv");
    free(d);
    return rc;
}

int carlo_mpi_allgatherv_f64(const double *mine, int n, double *all, const int *counts)
{
    if (active())
        return allgatherv(mine, n, all, counts, MPI_DOUBLE);
    if (n > 0 && all != mine)
        memmove(all, mine, (size_t)n * sizeof *all);
    return 0;
}

int carlo_mpi_allgatherv_u8(const uint8_t *mine, int n, uint8_t *all, const int *counts)
{
    if (active())
        return allgatherv(mine, n, all, counts, MPI_BYTE);
    if (n > 0 && all != mine)
        memmove(all, mine, (size_t)n);
    return 0;
}

int carlo_mpi_allgather_u8(const uint8_t *mine, int n, uint8_t *all)
{
    if (active())
        return check(MPI_Allgather(mine, n, MPI_BYTE, all, n, MPI_BYTE, MPI_COMM_WORLD),
                     "MPI_Allgather");
    if (n > 0 && all != mine)
        memmove(all, mine, (size_t)n);
    return 0;
}

int carlo_mpi_allgather_rows(const uint8_t *mine, int nrows, uint8_t *all, const int *counts,
                             int rowbytes)
{
    if (!active()) {
        if (nrows > 0 && all != mine)
            memmove(all, mine, (size_t)nrows * (size_t)rowbytes);
        return 0;
    }
    MPI_Datatype row;
    if (check(MPI_Type_contiguous(rowbytes, MPI_BYTE, &row), "MPI_Type_contiguous"))
        return -1;
    MPI_Type_commit(&row);
    int rc = allgatherv(mine, nrows, all, counts, row);
    MPI_Type_free(&row);
    return rc;
}

int carlo_mpi_allgather_int(int mine, int *counts)
{
    if (!active()) {
        counts[0] = mine;
        return 0;
    }
    return check(MPI_Allgather(&mine, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD),
                 "MPI_Allgather");
}

static int root_ok(int root)
{
    int size = carlo_mpi_size();
    if (root < 0 || root >= size)
        return carlo_seterr("MPI: root must be a rank from 0 to %d (got %d)", size - 1, root);
    return 0;
}

int carlo_mpi_bcast_f64(double *v, int n, int root)
{
    if (root_ok(root))
        return -1;
    return active() ? check(MPI_Bcast(v, n, MPI_DOUBLE, root, MPI_COMM_WORLD), "MPI_Bcast") : 0;
}

int carlo_mpi_bcast_u8(uint8_t *v, size_t n, int root)
{
    if (root_ok(root))
        return -1;
    if (!active())
        return 0;
    /* in pieces below INT_MAX bytes */
    const size_t piece = (size_t)1 << 30;
    for (size_t at = 0; at < n; at += piece) {
        int m = (int)(n - at < piece ? n - at : piece);
        if (check(MPI_Bcast(v + at, m, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast"))
            return -1;
    }
    return 0;
}

int carlo_mpi_sum_f64(double *v, int n)
{
    if (!active())
        return 0;
    return check(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
                 "MPI_Allreduce");
}

int carlo_mpi_sum_i64(int64_t *v, int n)
{
    if (!active())
        return 0;
    return check(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD),
                 "MPI_Allreduce");
}

int carlo_mpi_min_f64(double *v, int n)
{
    if (!active())
        return 0;
    return check(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD),
                 "MPI_Allreduce");
}

int carlo_mpi_max_f64(double *v, int n)
{
    if (!active())
        return 0;
    return check(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD),
                 "MPI_Allreduce");
}

int carlo_mpi_sendrecv_u8(const uint8_t *send, int dest, uint8_t *recv, int src, int n, int tag)
{
    if (!active()) {
        if (n > 0 && recv != send)
            memmove(recv, send, (size_t)n);
        return 0;
    }
    return check(MPI_Sendrecv(send, n, MPI_BYTE, dest, tag, recv, n, MPI_BYTE, src, tag,
                              MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Sendrecv");
}

int carlo_mpi_exchange2(uint8_t *const send[2], const int nsend[2], const int dest[2],
                        uint8_t *const recv[2], const int nrecv[2], const int src[2], int tag)
{
    if (!active()) {
        for (int k = 0; k < 2; k++)
            if (nsend[k] > 0 && nsend[k] == nrecv[k] && recv[k] != send[k])
                memmove(recv[k], send[k], (size_t)nsend[k]);
        return 0;
    }
    MPI_Request req[4];
    int n = 0, rc = MPI_SUCCESS;
    for (int k = 0; k < 2 && rc == MPI_SUCCESS; k++)
        if (nrecv[k] > 0)
            rc = MPI_Irecv(recv[k], nrecv[k], MPI_BYTE, src[k], tag + k, MPI_COMM_WORLD, &req[n++]);
    for (int k = 0; k < 2 && rc == MPI_SUCCESS; k++)
        if (nsend[k] > 0)
            rc = MPI_Isend(send[k], nsend[k], MPI_BYTE, dest[k], tag + k, MPI_COMM_WORLD, &req[n++]);
    if (rc != MPI_SUCCESS)
        return check(rc, "MPI_Isend/MPI_Irecv");
    return check(MPI_Waitall(n, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
}

int carlo_mpi_shared_alloc(size_t bytes, uint8_t **base)
{
    if (!active())
        return 0;
    MPI_Comm node;
    if (check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
              "MPI_Comm_split_type"))
        return -1;
    int n = 0, size = carlo_mpi_size();
    MPI_Comm_size(node, &n);
    if (n != size) { /* the same answer on every rank */
        MPI_Comm_free(&node);
        return 0;
    }
    MPI_Win *w = realloc(windows, (size_t)(nwindows + 1) * sizeof *w);
    if (!w) {
        MPI_Comm_free(&node);
        return carlo_seterr("out of memory for the shared windows");
    }
    windows = w;
    void *mine = NULL;
    /* the ranks of node in the order of MPI_COMM_WORLD (split with key 0 keeps it) */
    int rc = MPI_Win_allocate_shared((MPI_Aint)bytes, 1, MPI_INFO_NULL, node, &mine, &windows[nwindows]);
    MPI_Comm_free(&node);
    if (check(rc, "MPI_Win_allocate_shared"))
        return -1;
    MPI_Win win = windows[nwindows++];
    for (int r = 0; r < size; r++) {
        MPI_Aint len = 0;
        int unit = 0;
        void *at = NULL;
        if (check(MPI_Win_shared_query(win, r, &len, &unit, &at), "MPI_Win_shared_query"))
            return -1;
        base[r] = at;
    }
    return 1;
}

int carlo_mpi_notify2(const int to[2], const int from[2], int tag)
{
    if (!active())
        return 0;
    MPI_Request req[4];
    int n = 0, rc = MPI_SUCCESS;
    for (int k = 0; k < 2 && rc == MPI_SUCCESS; k++)
        if (from[k] >= 0)
            rc = MPI_Irecv(NULL, 0, MPI_BYTE, from[k], tag + k, MPI_COMM_WORLD, &req[n++]);
    for (int k = 0; k < 2 && rc == MPI_SUCCESS; k++)
        if (to[k] >= 0)
            rc = MPI_Isend(NULL, 0, MPI_BYTE, to[k], tag + k, MPI_COMM_WORLD, &req[n++]);
    if (rc != MPI_SUCCESS)
        return check(rc, "MPI_Isend/MPI_Irecv");
    return check(MPI_Waitall(n, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
}
