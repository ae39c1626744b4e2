// Provides the feature-gather kernels (index_select of rows): from device
// memory or from pinned host memory read through unified addressing, plus
// the id range check that runs before a gather.
#ifndef FAULTLINE_KERNELS_GATHER_KERNELS_CUH_
#define FAULTLINE_KERNELS_GATHER_KERNELS_CUH_

#include "kernels/kernel_api.h"

namespace faultline {
namespace kernels {

// Writes into *first_bad the smallest position whose id is outside
// [0, num_rows) (left at num_ids when every id is valid).
struct CheckIdsKernel {
  const int64_t* ids;
  int64_t num_ids;
  int64_t num_rows;
  unsigned long long* first_bad;

  FL_HOST_DEVICE void operator()(const ThreadIndex& t) const {
    for (uint64_t i = t.global(); i < static_cast<uint64_t>(num_ids); i += t.stride()) {
      if (ids[i] >= 0 && ids[i] < num_rows) continue;
      AtomicMin(first_bad, static_cast<unsigned long long>(i));
    }
  }
};

// out[r, :] = table[ids[r], :] for a row-major float table of `dim` columns.
struct GatherRowsKernel {
  const float* table;
  int64_t dim;
  const int64_t* ids;
  int64_t num_ids;
  float* out;

  FL_HOST_DEVICE void operator()(const ThreadIndex& t) const {
    const uint64_t total = static_cast<uint64_t>(num_ids) * static_cast<uint64_t>(dim);
    for (uint64_t i = t.global(); i < total; i += t.stride()) {
      const uint64_t row = i / static_cast<uint64_t>(dim);
      const uint64_t col = i % static_cast<uint64_t>(dim);
      out[i] = table[static_cast<uint64_t>(ids[row]) * dim + col];
    }
  }
};

int LaunchCheckIdsOnCuda(const CheckIdsKernel& kernel, const LaunchConfig& config);
int LaunchGatherRowsOnCuda(const GatherRowsKernel& kernel, const LaunchConfig& config);

}  // namespace kernels
}  // namespace faultline

#endif  // FAULTLINE_KERNELS_GATHER_KERNELS_CUH_
