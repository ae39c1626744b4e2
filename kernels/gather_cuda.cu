// Compiles the gather kernels for the GPU.
#include "kernels/cuda_launch.cuh"
#include "kernels/gather_kernels.cuh"

namespace faultline {
namespace kernels {

int LaunchGatherRowsOnCuda(const GatherRowsKernel& kernel, const LaunchConfig& config) {
  return LaunchOnCuda(kernel, config);
}

}  // namespace kernels
}  // namespace faultline
