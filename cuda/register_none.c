/* register_none.c — the CPU-only build's stand-in for cuda/register.cu: no GPU backends,
 * so device = "gpu" reports that this carlo was built without CUDA. */
#include "core/device.h"

void carlo_register_gpu_backends(void) {}
