// Provides the feature-gather kernels (index_select of rows): from device
// memory or from pinned host memory read through unified addressing (ids are
// checked first by the id check, kernels/id_check.h).
#ifndef FAULTLINE_KERNELS_GATHER_KERNELS_CUH_
#define FAULTLINE_KERNELS_GATHER_KERNELS_CUH_

#include "kernels/kernel_api.h"

namespace faultline {
namespace kernels {

// out[r, :] = table[ids[r], :] for a row-major float table of `dim` columns.
// With `verdict` (the id check of these ids, queued before it in the same
// stream: QueueIdCheck) it writes nothing when an id is bad, so that the
// host can read the verdict after the gather, with one wait for both.
struct GatherRowsKernel {
  const float* table;
  int64_t dim;
  const int64_t* ids;
  int64_t num_ids;
  float* out;
  const unsigned long long* verdict = nullptr;

  FL_HOST_DEVICE void operator()(const ThreadIndex& t) const {
    if (verdict != nullptr && *verdict < static_cast<unsigned long long>(num_ids)) return;
    const uint64_t total = static_cast<uint64_t>(num_ids) * static_cast<uint64_t>(dim);
    for (uint64_t i = t.global(); i < total; i += t.stride()) {
      const uint64_t row = i / static_cast<uint64_t>(dim);
      const uint64_t col = i % static_cast<uint64_t>(dim);
      out[i] = table[static_cast<uint64_t>(ids[row]) * dim + col];
    }
  }
};

int LaunchGatherRowsOnCuda(const GatherRowsKernel& kernel, const LaunchConfig& config);

}  // namespace kernels
}  // namespace faultline

#endif  // FAULTLINE_KERNELS_GATHER_KERNELS_CUH_
