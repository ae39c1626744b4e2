// Provides the device side of LaunchKernel: a __global__ wrapper that calls a
// kernel functor with the thread's index. Included only by .cu files.
#ifndef FAULTLINE_KERNELS_CUDA_LAUNCH_CUH_
#define FAULTLINE_KERNELS_CUDA_LAUNCH_CUH_

#include <cuda_runtime.h>

#include "kernels/kernel_api.h"

namespace faultline {
namespace kernels {

template <class K>
__global__ void RunOnDevice(K kernel) {
  kernel(ThreadIndex{blockIdx.x, threadIdx.x, blockDim.x, gridDim.x});
}

// Launches `kernel` without synchronizing; returns the launch's cudaError_t.
// Through cudaLaunchKernel, whose return is this launch's own status: after
// <<<>>>, cudaGetLastError would also return (and clear) an earlier call's
// error that was already reported, and blame this launch for it.
template <class K>
int LaunchOnCuda(const K& kernel, const LaunchConfig& config) {
  void* args[] = {const_cast<K*>(&kernel)};
  return static_cast<int>(cudaLaunchKernel(reinterpret_cast<const void*>(&RunOnDevice<K>), dim3(config.grid),
                                           dim3(config.block), args, 0, static_cast<cudaStream_t>(config.stream)));
}

}  // namespace kernels
}  // namespace faultline

#endif  // FAULTLINE_KERNELS_CUDA_LAUNCH_CUH_
