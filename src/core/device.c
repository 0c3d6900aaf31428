/* device.c — device discovery and the "auto"/"cpu"/"gpu" choice. */
#include "core/device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/error.h"
#include "core/progress.h"
#include "mpi/mpi.h"

static const carlo_gpu_driver *gpu_driver;
static char default_device[8] = "auto";
static int auto_announced;

void carlo_gpu_driver_set(const carlo_gpu_driver *driver) { gpu_driver = driver; }
int carlo_gpu_compiled(void) { return gpu_driver != NULL; }

int carlo_gpu_count(void)
{
    return gpu_driver ? gpu_driver->count() : 0;
}

int carlo_gpu_info_get(int index, carlo_gpu_info *out)
{
    if (!gpu_driver)
        return carlo_seterr("this carlo was built without CUDA");
    return gpu_driver->info(index, out);
}

int carlo_gpu_pick(void)
{
    static int picked = -2; /* -2: not decided yet */
    if (picked == -2) {
        int n = carlo_gpu_count();
        picked = n > 0 ? carlo_mpi_local_rank() % n : -1;
    }
    return picked;
}

int carlo_gpu_bind(void)
{
    static _Thread_local int bound = -1;
    int k = carlo_gpu_pick();
    if (k < 0 || k == bound)
        return 0;
    if (gpu_driver->select(k))
        return -1;
    bound = k;
    return 0;
}

const char *carlo_gpu_runtime(void)
{
    return gpu_driver ? gpu_driver->runtime_version() : "none";
}

int carlo_cpu_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static int threads_fixed = -1; /* -1: not decided yet; 0: carlo chooses; n: fixed */
static int threads_all;

static void threads_init(void)
{
    if (threads_fixed >= 0)
        return;
    threads_all = carlo_cpu_threads();
    const char *env = getenv("OMP_NUM_THREADS");
    threads_fixed = env && *env ? threads_all : 0;
}

int carlo_threads_fixed(void)
{
    threads_init();
    return threads_fixed;
}

int carlo_threads_all(void)
{
    threads_init();
    return threads_all;
}

void carlo_threads_fix(int n)
{
    threads_init();
    threads_fixed = n > 0 ? n : 0;
#ifdef _OPENMP
    omp_set_num_threads(n > 0 ? n : threads_all);
#endif
}

void carlo_device_set_default(const char *name)
{
    snprintf(default_device, sizeof default_device, "%s", name);
}

const char *carlo_device_default(void) { return default_device; }

const char *carlo_device_name(carlo_device_kind kind)
{
    return kind == CARLO_GPU ? "gpu" : "cpu";
}

int carlo_device_resolve(const char *request, carlo_device_kind *kind)
{
    if (!request)
        request = default_device;
    if (strcmp(request, "cpu") == 0) {
        *kind = CARLO_CPU;
        return 0;
    }
    if (strcmp(request, "gpu") == 0) {
        if (!gpu_driver)
            return carlo_seterr("device = \"gpu\": this carlo was built without CUDA "
                                "(rebuild with nvcc on the PATH, or use device = \"cpu\")");
        if (carlo_gpu_count() < 1)
            return carlo_seterr("device = \"gpu\": no usable GPU was found "
                                "(carlo --devices lists what is there)");
        *kind = CARLO_GPU;
        return carlo_gpu_bind();
    }
    if (strcmp(request, "auto") == 0) {
        if (carlo_gpu_count() > 0) {
            *kind = CARLO_GPU;
            if (carlo_gpu_bind())
                return -1;
            if (!auto_announced && !carlo_quiet) {
                carlo_gpu_info info;
                if (carlo_gpu_info_get(carlo_gpu_pick(), &info) == 0)
                    fprintf(stderr, "carlo: device \"auto\" runs on the GPU (%s)\n", info.name);
                auto_announced = 1;
            }
        } else {
            *kind = CARLO_CPU;
        }
        return 0;
    }
    return carlo_seterr("device must be \"auto\", \"cpu\" or \"gpu\" (got \"%s\")", request);
}
