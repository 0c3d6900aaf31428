/* device.cu — the GPU side of device discovery (core/device.h's carlo_gpu_driver) and the
 * checked-call helpers of check.h. */
#include <stdio.h>

extern "C" {
#include "core/device.h"
#include "core/error.h"
}
#include "check.h"

int carlo_cuda_fail(cudaError_t e, const char *call, const char *file, int line)
{
    return carlo_seterr("CUDA error in %s (%s:%d): %s", call, file, line, cudaGetErrorString(e));
}

int carlo_cuda_malloc(void **p, size_t bytes, const char *what, const char *file, int line)
{
    *p = NULL;
    cudaError_t e = cudaMalloc(p, bytes ? bytes : 1);
    if (e == cudaSuccess)
        return 0;
    cudaGetLastError(); /* out-of-memory is not sticky: clear it */
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    if (e == cudaErrorMemoryAllocation)
        return carlo_seterr("out of GPU memory: %zu bytes (%.3g GiB) asked for %s, %.3g GiB free "
                            "of %.3g GiB (%s:%d)", bytes, (double)bytes / 1073741824.0, what,
                            (double)free_b / 1073741824.0, (double)total_b / 1073741824.0, file, line);
    return carlo_cuda_fail(e, "cudaMalloc", file, line);
}

static int gpu_count(void)
{
    static int cached = -1;
    if (cached < 0) {
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess) {
            cudaGetLastError();
            n = 0;
        }
        cached = n;
    }
    return cached;
}

static int gpu_info(int index, carlo_gpu_info *out)
{
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, index));
    snprintf(out->name, sizeof out->name, "%s", p.name);
    out->memory_bytes = p.totalGlobalMem;
    out->sm_count = p.multiProcessorCount;
    out->cc_major = p.major;
    out->cc_minor = p.minor;
    return 0;
}

static const char *gpu_runtime(void)
{
    static char buf[64];
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    cudaGetLastError();
    snprintf(buf, sizeof buf, "CUDA %d.%d (driver %d.%d)", rt / 1000, rt % 1000 / 10, drv / 1000,
             drv % 1000 / 10);
    return buf;
}

static int gpu_select(int index)
{
    CK(cudaSetDevice(index));
    return 0;
}

extern "C" const carlo_gpu_driver carlo_cuda_driver = {gpu_count, gpu_info, gpu_runtime,
                                                       gpu_select};
