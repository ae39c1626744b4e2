// Compiles the sampling kernels for the GPU.
#include "kernels/cuda_launch.cuh"
#include "kernels/sampling_kernels.cuh"

namespace faultline {
namespace kernels {

int LaunchSampleCountOnCuda(const SampleCountKernel& kernel, const LaunchConfig& config) {
  return LaunchOnCuda(kernel, config);
}

int LaunchSampleSeedsOnCuda(const SampleSeedsKernel& kernel, const LaunchConfig& config) {
  return LaunchOnCuda(kernel, config);
}

int LaunchSampleTopKChunksOnCuda(const SampleTopKChunksKernel& kernel, const LaunchConfig& config) {
  return LaunchOnCuda(kernel, config);
}

}  // namespace kernels
}  // namespace faultline
