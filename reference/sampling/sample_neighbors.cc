// Implements SampleNeighbors: validate, count picks per seed, prefix-sum the
// counts into indptr, then sample every seed into its own output slots.
// Both passes hand out chunks of consecutive seeds to the threads.
#include "reference/sampling/sample_neighbors.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <string>
#include <thread>

#include "kernels/sampling_core.h"
#include "reference/sampling/uniform_floyd.h"
#include "reference/sampling/weighted_top_k.h"

namespace faultline {
namespace {

namespace core = kernels::sampling;

// Runs fn(begin, end) over [0, n) in chunks of consecutive seeds that up to
// num_threads threads (this one and helpers) take in turn, so a thread that
// drew hub seeds does not hold up the others. Each seed's output is its own,
// so the result does not depend on which thread ran it.
template <typename Fn>
void ParallelFor(int64_t n, int num_threads, const Fn& fn) {
  // Chunks of up to 64 seeds, about 8 per thread for small inputs (which split too).
  const int64_t chunk = std::clamp<int64_t>(n / (8 * int64_t{num_threads}), 1, 64);
  const int64_t threads = std::max<int64_t>(1, std::min<int64_t>(num_threads, (n + chunk - 1) / chunk));
  if (threads == 1) {
    fn(int64_t{0}, n);
    return;
  }
  std::atomic<int64_t> next{0};
  auto run = [&] {
    for (int64_t begin; (begin = next.fetch_add(chunk, std::memory_order_relaxed)) < n;) {
      fn(begin, std::min(n, begin + chunk));
    }
  };
  std::vector<std::thread> helpers;
  for (int64_t t = 1; t < threads; ++t) helpers.emplace_back(run);
  run();
  for (std::thread& t : helpers) t.join();
}

// EligibleCount, with the weights counted eight at a time on the CPU.
int64_t EligibleEdges(const core::SamplingParams& p, int64_t node) {
  if (!p.weighted) return p.indptr[node + 1] - p.indptr[node];
  return CountPositiveWeights(p.weights + p.indptr[node], p.indptr[node + 1] - p.indptr[node]);
}

}  // namespace

Status ValidateSampleRequest(int64_t num_nodes, bool has_weights, const std::vector<int64_t>& seeds, int64_t fanout,
                             bool weighted) {
  if (fanout < -1 || fanout > std::numeric_limits<int32_t>::max()) {
    return InvalidArgumentError("fanout=" + std::to_string(fanout) + "; expected -1 (all neighbours) or 0.." +
                                std::to_string(std::numeric_limits<int32_t>::max()));
  }
  if (weighted && !has_weights) {
    return InvalidArgumentError("weighted sampling was requested but the graph has no edge weights");
  }
  for (size_t i = 0; i < seeds.size(); ++i) {
    if (seeds[i] < 0 || seeds[i] >= num_nodes) {
      return OutOfRangeError("seeds[" + std::to_string(i) + "]=" + std::to_string(seeds[i]) +
                             " is out of range [0, " + std::to_string(num_nodes) + ")");
    }
  }
  return OkStatus();
}

Result<SampledSubgraph> SampleNeighbors(const CscGraph& graph, const std::vector<int64_t>& seeds, int64_t fanout,
                                        uint32_t layer, const SamplingOptions& options) {
  const bool replace = options.replace, weighted = options.weighted;
  const uint64_t rng_seed = options.rng_seed;
  const int num_threads = options.num_threads;
  if (num_threads < 1) {
    return InvalidArgumentError("num_threads=" + std::to_string(num_threads) + "; expected >= 1");
  }
  FL_RETURN_IF_ERROR(ValidateSampleRequest(graph.num_nodes(), graph.has_weights(), seeds, fanout, weighted));

  core::SamplingParams params;
  params.indptr = graph.indptr().data();
  params.weights = weighted ? graph.weights().data() : nullptr;
  params.fanout = fanout;
  params.replace = replace;
  params.weighted = weighted;
  params.rng_seed = rng_seed;
  params.layer = layer;

  const int64_t n = static_cast<int64_t>(seeds.size());
  SampledSubgraph out;
  out.seeds = seeds;
  out.indptr.assign(n + 1, 0);
  ParallelFor(n, num_threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (i + 16 < end) __builtin_prefetch(params.indptr + seeds[i + 16]);  // a random read per seed
      out.indptr[i + 1] = core::SampledCountOf(params, EligibleEdges(params, seeds[i]));
    }
  });
  for (int64_t i = 0; i < n; ++i) out.indptr[i + 1] += out.indptr[i];

  out.original_edge_ids.resize(out.indptr[n]);
  out.indices.resize(out.indptr[n]);
  const std::vector<int64_t>& graph_indices = graph.indices();
  // The picked edges' sources are random reads of a large array: prefetch
  // them as soon as a seed is sampled and read them kPipelineDepth seeds
  // later, so the misses overlap the next seeds' sampling instead of
  // stalling it (the next seeds' indptr entries are prefetched likewise).
  constexpr int64_t kPipelineDepth = 8;
  auto gather = [&](int64_t i) {
    for (int64_t j = out.indptr[i]; j < out.indptr[i + 1]; ++j) {
      out.indices[j] = graph_indices[out.original_edge_ids[j]];
    }
  };
  ParallelFor(n, num_threads, [&](int64_t begin, int64_t end) {
    std::vector<core::SampleKey> scratch;
    for (int64_t i = begin; i < end; ++i) {
      if (i + kPipelineDepth < end) __builtin_prefetch(params.indptr + seeds[i + kPipelineDepth]);
      const int64_t offset = out.indptr[i];
      const int64_t count = out.indptr[i + 1] - offset;
      if (static_cast<int64_t>(scratch.size()) < count) scratch.resize(count);
      int64_t* picks = out.original_edge_ids.data() + offset;
      // Both batched paths sample without replacement; with it the count
      // (a weight scan when weighted) would be wasted.
      const int64_t eligible = replace ? 0 : EligibleEdges(params, seeds[i]);
      if (core::UsesFloyd(params, eligible)) {
        SampleUniformFloyd(params, seeds[i], picks);
      } else if (core::UsesWeightedTopK(params, eligible)) {
        SampleWeightedTopK(params, seeds[i], picks, scratch.data());
      } else {
        core::SampleSeed(params, seeds[i], picks, scratch.data());
      }
      for (int64_t j = 0; j < count; ++j) __builtin_prefetch(graph_indices.data() + picks[j]);
      if (i - kPipelineDepth >= begin) gather(i - kPipelineDepth);
    }
    for (int64_t i = std::max(begin, end - kPipelineDepth); i < end; ++i) gather(i);
  });
  return out;
}

}  // namespace faultline
