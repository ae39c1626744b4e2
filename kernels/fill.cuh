// Provides FillKernel and FillWordsKernel: write one value to every element
// of a float or an int64 buffer.
// The smallest real kernels; the conformance test also aims FillKernel at an
// illegal address to raise the sticky cudaErrorIllegalAddress.
#ifndef FAULTLINE_KERNELS_FILL_CUH_
#define FAULTLINE_KERNELS_FILL_CUH_

#include "kernels/kernel_api.h"

namespace faultline {
namespace kernels {

// Writes one value to every element of out[0, n).
template <typename T>
struct FillValuesKernel {
  T* out;
  uint64_t n;
  T value;

  FL_HOST_DEVICE void operator()(const ThreadIndex& t) const {
    for (uint64_t i = t.global(); i < n; i += t.stride()) out[i] = value;
  }
};
using FillKernel = FillValuesKernel<float>;
// The device sampler's tables and counters start filled on the device
// instead of copied from the host.
using FillWordsKernel = FillValuesKernel<int64_t>;

// Launch FillKernel and FillWordsKernel on the GPU (defined in the
// nvcc-compiled object).
int LaunchFillOnCuda(const FillKernel& kernel, const LaunchConfig& config);
int LaunchFillWordsOnCuda(const FillWordsKernel& kernel, const LaunchConfig& config);

}  // namespace kernels
}  // namespace faultline

#endif  // FAULTLINE_KERNELS_FILL_CUH_
