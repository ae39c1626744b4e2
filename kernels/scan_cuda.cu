// Compiles the prefix sum for the GPU with CUB (CCCL, shipped with the toolkit).
#include <cuda_runtime.h>
#include <cub/device/device_scan.cuh>

#include <cstdint>

namespace faultline {
namespace kernels {

int ExclusiveSumScratchBytesOnCuda(int64_t n, size_t* bytes) {
  *bytes = 0;
  return static_cast<int>(cub::DeviceScan::ExclusiveSum(nullptr, *bytes, static_cast<const int64_t*>(nullptr),
                                                        static_cast<int64_t*>(nullptr), n));
}

int ExclusiveSumOnCuda(const int64_t* in, int64_t* out, int64_t n, void* stream, void* scratch, size_t scratch_bytes) {
  const auto s = static_cast<cudaStream_t>(stream);
  if (scratch != nullptr) {
    return static_cast<int>(cub::DeviceScan::ExclusiveSum(scratch, scratch_bytes, in, out, n, s));
  }
  size_t temp_bytes = 0;
  cudaError_t err = cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, in, out, n, s);
  if (err != cudaSuccess) return static_cast<int>(err);
  void* temp = nullptr;
  err = cudaMallocAsync(&temp, temp_bytes, s);
  if (err != cudaSuccess) return static_cast<int>(err);
  err = cub::DeviceScan::ExclusiveSum(temp, temp_bytes, in, out, n, s);
  const cudaError_t freed = cudaFreeAsync(temp, s);
  return static_cast<int>(err != cudaSuccess ? err : freed);
}

}  // namespace kernels
}  // namespace faultline
