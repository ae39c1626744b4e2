// Compiles FillKernel and FillWordsKernel for the GPU.
#include "kernels/cuda_launch.cuh"
#include "kernels/fill.cuh"

namespace faultline {
namespace kernels {

int LaunchFillOnCuda(const FillKernel& kernel, const LaunchConfig& config) { return LaunchOnCuda(kernel, config); }
int LaunchFillWordsOnCuda(const FillWordsKernel& kernel, const LaunchConfig& config) {
  return LaunchOnCuda(kernel, config);
}

}  // namespace kernels
}  // namespace faultline
