/* check.h — every CUDA call and launch is checked: a failure becomes the error message
 * (call, file, line, CUDA's words) and the function returns -1. Out-of-memory names the
 * size asked for. */
#ifndef CARLO_CUDA_CHECK_H
#define CARLO_CUDA_CHECK_H

#include <cuda_runtime.h>
#include <stddef.h>

int carlo_cuda_fail(cudaError_t e, const char *call, const char *file, int line);
int carlo_cuda_malloc(void **p, size_t bytes, const char *what, const char *file, int line);

#define CK(call)                                                                   \
    do {                                                                           \
        cudaError_t ck_e_ = (call);                                                \
        if (ck_e_ != cudaSuccess)                                                  \
            return carlo_cuda_fail(ck_e_, #call, __FILE__, __LINE__);              \
    } while (0)

/* After a kernel launch: launch-configuration errors now, faults at the next sync. */
#define CK_LAUNCH(name) CK(cudaPeekAtLastError() == cudaSuccess ? cudaSuccess : cudaGetLastError())

#define CK_MALLOC(ptr, bytes, what)                                                          \
    do {                                                                                     \
        if (carlo_cuda_malloc((void **)(ptr), (bytes), (what), __FILE__, __LINE__))          \
            return -1;                                                                       \
    } while (0)

#endif
