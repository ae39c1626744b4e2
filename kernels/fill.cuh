// Provides FillKernel: writes one value to every element of a float buffer
// (and FillWordsKernel: of an int64 one).
// The smallest real kernel; the conformance test also aims it at an illegal
// address to raise the sticky cudaErrorIllegalAddress.
#ifndef FAULTLINE_KERNELS_FILL_CUH_
#define FAULTLINE_KERNELS_FILL_CUH_

#include "kernels/kernel_api.h"

namespace faultline {
namespace kernels {

struct FillKernel {
  float* out;
  uint64_t n;
  float value;

  FL_HOST_DEVICE void operator()(const ThreadIndex& t) const {
    for (uint64_t i = t.global(); i < n; i += t.stride()) out[i] = value;
  }
};

// Launches FillKernel on the GPU (defined in the nvcc-compiled object).
int LaunchFillOnCuda(const FillKernel& kernel, const LaunchConfig& config);

// Writes one 8-byte word to every element: the device sampler's tables and
// counters start filled on the device instead of copied from the host.
struct FillWordsKernel {
  int64_t* out;
  uint64_t n;
  int64_t value;
  FL_HOST_DEVICE void operator()(const ThreadIndex& t) const {
    for (uint64_t i = t.global(); i < n; i += t.stride()) out[i] = value;
  }
};
int LaunchFillWordsOnCuda(const FillWordsKernel& kernel, const LaunchConfig& config);

}  // namespace kernels
}  // namespace faultline

#endif  // FAULTLINE_KERNELS_FILL_CUH_
