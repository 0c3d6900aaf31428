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

/* A kernel's dynamic shared memory limit raised to at least bytes, never lowered: systems that
 * run on several host threads at once (carlo_advance_all) share their kernels, and one must
 * not lower the limit between another's setting and its launch. */
#ifdef __cplusplus
#include <mutex>
#include <unordered_map>
inline cudaError_t carlo_smem_raise(const void *kernel, size_t bytes)
{
    static std::mutex mu;
    static std::unordered_map<const void *, size_t> set;
    std::lock_guard<std::mutex> lock(mu);
    size_t &now = set[kernel];
    if (bytes <= now)
        return cudaSuccess;
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (e == cudaSuccess)
        now = bytes;
    return e;
}
#endif

#endif
