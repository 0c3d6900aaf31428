/* register.cu — plugs the GPU backends into the models' backend tables at start-up;
 * models never include or call anything in cuda/ themselves. */
extern "C" {
#include "core/device.h"
#include "hard/hard.h"
#include "kmc/kmc.h"
#include "lj/lj_cb.h"
#include "lj/lj_dec.h"
#include "potts/potts.h"
#include "potts/potts_wl.h"
#include "shape/shape.h"
extern const carlo_gpu_driver carlo_cuda_driver;
extern const potts_backend potts_cuda_backend;
extern const potts_wl_backend potts_wl_cuda_backend;
extern const hard_backend hard_cuda_backend;
extern const lj_dec_backend lj_dec_cuda_backend;
extern const lj_cb_backend lj_cb_cuda_backend;
extern const kmc_backend kmc_cuda_backend;
extern const shape_backend shape_cuda_backend;
}

extern "C" void carlo_register_gpu_backends(void)
{
    carlo_gpu_driver_set(&carlo_cuda_driver);
    potts_gpu_backend = &potts_cuda_backend;
    potts_wl_gpu_backend = &potts_wl_cuda_backend;
    hard_gpu_backend = &hard_cuda_backend;
    lj_dec_gpu_backend = &lj_dec_cuda_backend;
    lj_cb_gpu_backend = &lj_cb_cuda_backend;
    kmc_gpu_backend = &kmc_cuda_backend;
    shape_gpu_backend = &shape_cuda_backend;
}
