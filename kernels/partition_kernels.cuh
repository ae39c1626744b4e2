// Provides RangeLocateKernel: the device side of a range partition book
// (DGL's RangePartitionBook.nid2partid and nid2localid in one pass).
#ifndef FAULTLINE_KERNELS_PARTITION_KERNELS_CUH_
#define FAULTLINE_KERNELS_PARTITION_KERNELS_CUH_

#include "kernels/kernel_api.h"

namespace faultline {
namespace kernels {

// Partition p owns ids [ends[p-1], ends[p]) (ends[-1] = 0). For every id,
// writes its partition (searchsorted(ends, id, side=right)) and its local id.
// Callers check the ids first (FirstIdOutside); an id outside
// [0, ends[num_parts-1]) still gets -1 in both rather than a wild read.
struct RangeLocateKernel {
  const int64_t* ids;
  int64_t num_ids;
  const int64_t* ends;
  int num_parts;
  int64_t* partids;
  int64_t* localids;

  FL_HOST_DEVICE void operator()(const ThreadIndex& t) const {
    const int64_t num_total = ends[num_parts - 1];
    for (uint64_t i = t.global(); i < static_cast<uint64_t>(num_ids); i += t.stride()) {
      const int64_t id = ids[i];
      if (id < 0 || id >= num_total) {
        partids[i] = -1;
        localids[i] = -1;
        continue;
      }
      int lo = 0, hi = num_parts - 1;  // the first partition whose end is > id
      while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (ends[mid] > id) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      partids[i] = lo;
      localids[i] = id - (lo == 0 ? 0 : ends[lo - 1]);
    }
  }
};

// Launches RangeLocateKernel on the GPU (defined in the nvcc-compiled object).
int LaunchRangeLocateOnCuda(const RangeLocateKernel& kernel, const LaunchConfig& config);

}  // namespace kernels
}  // namespace faultline

#endif  // FAULTLINE_KERNELS_PARTITION_KERNELS_CUH_
