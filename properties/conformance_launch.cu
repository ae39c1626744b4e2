// Compiles the conformance scenarios' empty kernel for the GPU.
#include <cuda_runtime.h>

#include "properties/conformance_launch.h"

namespace faultline {
namespace conformance {
namespace {

__global__ void EmptyKernel() {}

}  // namespace

int LaunchEmptyKernelOnCuda(const LaunchConfig& config) {
  return static_cast<int>(cudaLaunchKernel(reinterpret_cast<const void*>(&EmptyKernel), dim3(config.grid),
                                           dim3(config.block), nullptr, 0, static_cast<cudaStream_t>(config.stream)));
}

}  // namespace conformance
}  // namespace faultline
