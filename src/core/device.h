/* device.h — which compute devices exist and which one a system runs on.
 * The GPU side is plugged in from above (cuda/register.cu); a CPU-only build has none. */
#ifndef CARLO_DEVICE_H
#define CARLO_DEVICE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum carlo_device_kind { CARLO_CPU = 0, CARLO_GPU = 1 } carlo_device_kind;

typedef struct carlo_gpu_info {
    char name[256];
    size_t memory_bytes;
    int sm_count;
    int cc_major, cc_minor;
} carlo_gpu_info;

/* What the CUDA layer provides. count() returns 0 when no usable GPU is present. */
typedef struct carlo_gpu_driver {
    int (*count)(void);
    int (*info)(int index, carlo_gpu_info *out);
    const char *(*runtime_version)(void);
    int (*select)(int index); /* make GPU index the calling thread's current one */
} carlo_gpu_driver;

void carlo_gpu_driver_set(const carlo_gpu_driver *driver);
int carlo_gpu_compiled(void);         /* 1 when this build has CUDA backends */
int carlo_gpu_count(void);            /* usable GPUs now (0 in a CPU-only build) */
int carlo_gpu_info_get(int index, carlo_gpu_info *out);
const char *carlo_gpu_runtime(void);  /* "CUDA 13.0" or "none" */
/* The GPU this process runs its GPU systems on: the node-local MPI rank modulo the GPUs it
 * sees (CUDA_VISIBLE_DEVICES set per rank to one GPU makes that one index 0); -1 without a GPU.
 * One process, one GPU. carlo_gpu_bind makes it current on the calling thread (once a
 * thread; every thread that launches GPU work calls it: the device is per host thread). */
int carlo_gpu_pick(void);
int carlo_gpu_bind(void);
int carlo_cpu_threads(void);          /* OpenMP threads the CPU backends use at most */
/* The thread count: fixed by carlo.threads(n) or OMP_NUM_THREADS (returns n), or chosen by
 * carlo per system and chunk of work (returns 0: one thread or all, whichever measures
 * faster; see carlo_thread_pick in core/sys.h). carlo_threads_fix(0) returns to that. */
int carlo_threads_fixed(void);
void carlo_threads_fix(int n);
int carlo_threads_all(void);          /* the count "all" means: OMP_NUM_THREADS or the cores */

/* The default for device = "auto" in constructors; the command's --device sets it. */
void carlo_device_set_default(const char *name);
const char *carlo_device_default(void);

/* Resolve "auto" | "cpu" | "gpu" (NULL means the default). Returns 0 and sets *kind,
 * or -1 with the message set ("gpu" without a GPU is an error, never a fallback).
 * "auto" picking the GPU says so once on stderr unless carlo_quiet. */
int carlo_device_resolve(const char *request, carlo_device_kind *kind);
const char *carlo_device_name(carlo_device_kind kind);

void carlo_register_gpu_backends(void); /* cuda/register.cu (or its CPU-only stand-in) */

#ifdef __cplusplus
}
#endif

#endif
