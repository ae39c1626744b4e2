// Provides CheckIdsKernel: finds the first id outside [0, limit) of a device
// id array. Every device op that indexes with caller-supplied ids (feature
// gather, partition lookup) runs it first, through FirstIdOutside.
#ifndef FAULTLINE_KERNELS_ID_CHECK_KERNELS_CUH_
#define FAULTLINE_KERNELS_ID_CHECK_KERNELS_CUH_

#include "kernels/kernel_api.h"

namespace faultline {
namespace kernels {

// Lowers *first_bad to the smallest position whose id is outside
// [0, limit) (left untouched when every id is valid).
struct CheckIdsKernel {
  const int64_t* ids;
  int64_t num_ids;
  int64_t limit;
  unsigned long long* first_bad;

  FL_HOST_DEVICE void operator()(const ThreadIndex& t) const {
    for (uint64_t i = t.global(); i < static_cast<uint64_t>(num_ids); i += t.stride()) {
      if (ids[i] >= 0 && ids[i] < limit) continue;
      AtomicMin(first_bad, static_cast<unsigned long long>(i));
    }
  }
};

// Launches CheckIdsKernel on the GPU (defined in the nvcc-compiled object).
int LaunchCheckIdsOnCuda(const CheckIdsKernel& kernel, const LaunchConfig& config);

}  // namespace kernels
}  // namespace faultline

#endif  // FAULTLINE_KERNELS_ID_CHECK_KERNELS_CUH_
