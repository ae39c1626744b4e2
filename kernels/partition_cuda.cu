// Compiles RangeLocateKernel for the GPU.
#include "kernels/cuda_launch.cuh"
#include "kernels/partition_kernels.cuh"

namespace faultline {
namespace kernels {

int LaunchRangeLocateOnCuda(const RangeLocateKernel& kernel, const LaunchConfig& config) {
  return LaunchOnCuda(kernel, config);
}

}  // namespace kernels
}  // namespace faultline
