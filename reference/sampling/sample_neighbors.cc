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
  // Each chunk first samples its seeds (the next seeds' indptr entries
  // prefetched kIndptrAhead seeds ahead), then reads the picked edges'
  // sources: random reads of a large array, independent of each other, each
  // prefetched kGatherAhead reads before it is made. As one tight loop these
  // keep many misses in flight; interleaved with the sampling (a burst of
  // prefetches per seed) they ran ~10 % slower in total.
  constexpr int64_t kIndptrAhead = 8, kGatherAhead = 32;
  ParallelFor(n, num_threads, [&](int64_t begin, int64_t end) {
    std::vector<core::SampleKey> scratch;
    for (int64_t i = begin; i < end; ++i) {
      if (i + kIndptrAhead < end) __builtin_prefetch(params.indptr + seeds[i + kIndptrAhead]);
      const int64_t count = out.indptr[i + 1] - out.indptr[i];
      if (static_cast<int64_t>(scratch.size()) < count) scratch.resize(count);
      int64_t* picks = out.original_edge_ids.data() + out.indptr[i];
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
    }
    const int64_t* edges = out.original_edge_ids.data();
    const int64_t first = out.indptr[begin], last = out.indptr[end];
    for (int64_t j = first; j < last; ++j) {
      if (j + kGatherAhead < last) __builtin_prefetch(graph_indices.data() + edges[j + kGatherAhead]);
      out.indices[j] = graph_indices[edges[j]];
    }
  });
  return out;
}

}  // namespace faultline
