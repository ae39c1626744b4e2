// Provides the sampling kernels: per-seed pick counts, then the picks
// themselves with their source nodes. Both call the per-seed routine the CPU
// reference uses, so every device returns the same bits.
#ifndef FAULTLINE_KERNELS_SAMPLING_KERNELS_CUH_
#define FAULTLINE_KERNELS_SAMPLING_KERNELS_CUH_

#include "kernels/kernel_api.h"
#include "kernels/sampling_core.h"

namespace faultline {
namespace kernels {

// Writes counts[i] = the number of picks of seeds[i].
struct SampleCountKernel {
  sampling::SamplingParams params;
  const int64_t* seeds;
  int64_t num_seeds;
  int64_t* counts;

  FL_HOST_DEVICE void operator()(const ThreadIndex& t) const {
    for (uint64_t i = t.global(); i < static_cast<uint64_t>(num_seeds); i += t.stride()) {
      counts[i] = sampling::SampledCount(params, seeds[i]);
    }
  }
};

// Samples every seed into its slice [out_indptr[i], out_indptr[i+1]) of
// out_edges (edge ids) and out_indices (their source nodes).
struct SampleSeedsKernel {
  sampling::SamplingParams params;
  const int64_t* graph_indices;
  const int64_t* seeds;
  int64_t num_seeds;
  const int64_t* out_indptr;
  int64_t* out_edges;
  int64_t* out_indices;
  sampling::SampleKey* scratch;  // null when !MayUseKeyScratch(params)

  FL_HOST_DEVICE void operator()(const ThreadIndex& t) const {
    for (uint64_t i = t.global(); i < static_cast<uint64_t>(num_seeds); i += t.stride()) {
      const int64_t offset = out_indptr[i];
      const int64_t n = sampling::SampleSeed(params, seeds[i], out_edges + offset,
                                             scratch == nullptr ? nullptr : scratch + offset);
      for (int64_t j = 0; j < n; ++j) out_indices[offset + j] = graph_indices[out_edges[offset + j]];
    }
  }
};

int LaunchSampleCountOnCuda(const SampleCountKernel& kernel, const LaunchConfig& config);
int LaunchSampleSeedsOnCuda(const SampleSeedsKernel& kernel, const LaunchConfig& config);

}  // namespace kernels
}  // namespace faultline

#endif  // FAULTLINE_KERNELS_SAMPLING_KERNELS_CUH_
