// Provides the sampling kernels: per-seed pick counts, then the picks
// themselves with their source nodes. Both call the per-seed routine the CPU
// reference uses, so every device returns the same bits.
#ifndef FAULTLINE_KERNELS_SAMPLING_KERNELS_CUH_
#define FAULTLINE_KERNELS_SAMPLING_KERNELS_CUH_

#include "kernels/kernel_api.h"
#include "kernels/sampling_core.h"

namespace faultline {
namespace kernels {

// Writes counts[i] = the number of picks of seeds[i], and, when `chunks`
// is not null, chunks[i] = the chunks its top-k is split into (TopKChunks).
// With `live_seeds` set, only the first *live_seeds of the num_seeds are
// seeds (a count the device wrote: the host launches over a bound of it
// without waiting to read it) and the rest count 0. Word num_seeds of each
// is zeroed too: their exclusive sums read it (it does not change them),
// and it would otherwise be uninitialised (compute-sanitizer's initcheck).
struct SampleCountKernel {
  sampling::SamplingParams params;
  const int64_t* seeds;
  int64_t num_seeds;
  int64_t* counts;
  int64_t* chunks;                      // null when !MayUseKeyScratch(params)
  const int64_t* live_seeds = nullptr;  // at most num_seeds

  FL_HOST_DEVICE void operator()(const ThreadIndex& t) const {
    if (t.global() == 0) {
      counts[num_seeds] = 0;
      if (chunks != nullptr) chunks[num_seeds] = 0;
    }
    const uint64_t live = static_cast<uint64_t>(live_seeds != nullptr ? *live_seeds : num_seeds);
    for (uint64_t i = t.global(); i < static_cast<uint64_t>(num_seeds); i += t.stride()) {
      if (i >= live) {
        counts[i] = 0;
        if (chunks != nullptr) chunks[i] = 0;
        continue;
      }
      const int64_t node = seeds[i];
      const int64_t eligible = sampling::EligibleCountForSampling(params, node);
      counts[i] = sampling::SampledCountOf(params, eligible);
      if (chunks != nullptr) {
        chunks[i] = sampling::TopKChunksOf(params, node, eligible);
      }
    }
  }
};

// Runs chunk c of every split seed (SampleTopKChunk): thread j of
// [0, chunk_offsets[num_seeds]) takes the seed whose range
// [chunk_offsets[i], chunk_offsets[i+1]) holds j (the exclusive sum of
// TopKChunks) and writes its survivors to survivors[j * fanout, ...).
// num_chunks sizes the launch and the buffers: the total, or a bound of it
// (the threads past the total, which the device wrote, do nothing).
struct SampleTopKChunksKernel {
  sampling::SamplingParams params;
  const int64_t* seeds;
  int64_t num_seeds;
  const int64_t* chunk_offsets;
  int64_t num_chunks;
  int64_t* survivors;
  sampling::SampleKey* keys;  // fanout per chunk

  FL_HOST_DEVICE void operator()(const ThreadIndex& t) const {
    const int64_t total = chunk_offsets[num_seeds] < num_chunks ? chunk_offsets[num_seeds] : num_chunks;
    for (uint64_t j = t.global(); j < static_cast<uint64_t>(total); j += t.stride()) {
      int64_t lo = 0, hi = num_seeds;  // chunk_offsets[lo] <= j < chunk_offsets[hi]: find the seed
      while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (chunk_offsets[mid] <= static_cast<int64_t>(j))
          lo = mid;
        else
          hi = mid;
      }
      const int64_t slot = static_cast<int64_t>(j) * params.fanout;
      sampling::SampleTopKChunk(params, seeds[lo], static_cast<int64_t>(j) - chunk_offsets[lo], keys + slot,
                                survivors + slot);
    }
  }
};

// Samples every seed into its slice [out_indptr[i], out_indptr[i+1]) of
// out_edges (edge ids) and out_indices (their source nodes). A seed of no
// picks is skipped unread: the words past a live count the device wrote
// (SampleCountKernel's live_seeds) count no picks and hold no seed.
struct SampleSeedsKernel {
  sampling::SamplingParams params;
  const int64_t* graph_indices;
  const int64_t* seeds;
  int64_t num_seeds;
  const int64_t* out_indptr;
  int64_t* out_edges;
  int64_t* out_indices;
  sampling::SampleKey* scratch;  // null when !MayUseKeyScratch(params)
  // The split seeds' chunks (SampleTopKChunksKernel); null when none.
  const int64_t* chunk_offsets;
  const int64_t* survivors;

  FL_HOST_DEVICE void operator()(const ThreadIndex& t) const {
    for (uint64_t i = t.global(); i < static_cast<uint64_t>(num_seeds); i += t.stride()) {
      const int64_t offset = out_indptr[i];
      if (out_indptr[i + 1] == offset) continue;
      const int64_t chunks = chunk_offsets == nullptr ? 0 : chunk_offsets[i + 1] - chunk_offsets[i];
      const int64_t n = chunks > 0 ? sampling::MergeTopKChunks(params, survivors + chunk_offsets[i] * params.fanout,
                                                               chunks, out_edges + offset, scratch + offset)
                                   : sampling::SampleSeed(params, seeds[i], out_edges + offset,
                                                          scratch == nullptr ? nullptr : scratch + offset);
      for (int64_t j = 0; j < n; ++j) out_indices[offset + j] = graph_indices[out_edges[offset + j]];
    }
  }
};

int LaunchSampleCountOnCuda(const SampleCountKernel& kernel, const LaunchConfig& config);
int LaunchSampleSeedsOnCuda(const SampleSeedsKernel& kernel, const LaunchConfig& config);
int LaunchSampleTopKChunksOnCuda(const SampleTopKChunksKernel& kernel, const LaunchConfig& config);

}  // namespace kernels
}  // namespace faultline

#endif  // FAULTLINE_KERNELS_SAMPLING_KERNELS_CUH_
