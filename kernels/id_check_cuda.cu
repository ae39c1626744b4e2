// Compiles CheckIdsKernel for the GPU.
#include "kernels/cuda_launch.cuh"
#include "kernels/id_check_kernels.cuh"

namespace faultline {
namespace kernels {

int LaunchCheckIdsOnCuda(const CheckIdsKernel& kernel, const LaunchConfig& config) {
  return LaunchOnCuda(kernel, config);
}

}  // namespace kernels
}  // namespace faultline
