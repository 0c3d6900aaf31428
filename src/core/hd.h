/* hd.h — the one macro that lets a kernel header compile for the host (gcc)
 * and for the device (nvcc): CARLO_HD marks functions usable on both. */
#ifndef CARLO_HD_H
#define CARLO_HD_H

#ifdef __CUDACC__
#define CARLO_HD static __host__ __device__ __forceinline__
#else
#define CARLO_HD static inline
#endif

#endif
