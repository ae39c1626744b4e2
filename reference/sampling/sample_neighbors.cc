// Implements SampleNeighbors: validate, then on one thread sample the seeds
// in one pass, appending each seed's picks; on several, count picks per seed,
// prefix-sum the counts into indptr, then sample every seed into its own
// output slots (both passes hand out chunks of consecutive seeds to the
// threads). Either way the picked edges' sources are read last.
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

// Samples `seed` (count picks, from its `eligible` edges) into picks; a
// Floyd seed's picks are there once `floyd` is flushed.
void SampleSeedInto(const core::SamplingParams& p, int64_t seed, int64_t eligible, int64_t count, int64_t* picks,
                    std::vector<core::SampleKey>& scratch, UniformFloydBatch& floyd) {
  if (static_cast<int64_t>(scratch.size()) < count) scratch.resize(count);
  if (core::UsesFloyd(p, eligible)) {
    floyd.Add(seed, picks);
  } else if (core::UsesWeightedTopK(p, eligible)) {
    SampleWeightedTopK(p, seed, picks, scratch.data());
  } else {
    core::SampleSeed(p, seed, picks, scratch.data());
  }
}

// The picked edges' sources are random reads of a large array, independent
// of each other: one tight loop, each read prefetched kGatherAhead reads
// before it is made, keeps many misses in flight. (Interleaved with the
// sampling, a burst of prefetches per seed, they ran ~10 % slower in total;
// spread evenly over the next chunk's sampling, no faster.)
void ReadSources(const int64_t* edges, const int64_t* graph_indices, int64_t first, int64_t last, int64_t* out) {
  constexpr int64_t kGatherAhead = 32;
  for (int64_t j = first; j < last; ++j) {
    if (j + kGatherAhead < last) __builtin_prefetch(graph_indices + edges[j + kGatherAhead]);
    out[j] = graph_indices[edges[j]];
  }
}

// Each seed's node entry (a random read) is prefetched this many seeds ahead.
constexpr int64_t kIndptrAhead = 16;

// On one thread: each seed's count and picks from one read of its node (for
// weighted sampling, one scan of its weights), the picks appended where the
// previous seed's ended.
void SampleInOnePass(const core::SamplingParams& params, const std::vector<int64_t>& seeds,
                     const std::vector<int64_t>& graph_indices, SampledSubgraph& out) {
  const int64_t n = static_cast<int64_t>(seeds.size());
  out.indptr.assign(n + 1, 0);
  out.original_edge_ids.resize(n * std::clamp<int64_t>(params.fanout, 1, 16));
  std::vector<core::SampleKey> scratch;
  UniformFloydBatch floyd(params);
  int64_t offset = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (i + kIndptrAhead < n) __builtin_prefetch(params.indptr + seeds[i + kIndptrAhead]);
    const int64_t eligible = EligibleEdges(params, seeds[i]);
    const int64_t count = core::SampledCountOf(params, eligible);
    if (offset + count > static_cast<int64_t>(out.original_edge_ids.size())) {
      floyd.Flush();  // its queued seeds' picks point into the memory that moves
      out.original_edge_ids.resize(std::max<int64_t>(2 * out.original_edge_ids.size(), offset + count));
    }
    SampleSeedInto(params, seeds[i], eligible, count, out.original_edge_ids.data() + offset, scratch, floyd);
    offset += count;
    out.indptr[i + 1] = offset;
  }
  floyd.Flush();
  out.original_edge_ids.resize(offset);
  out.indices.resize(offset);
  ReadSources(out.original_edge_ids.data(), graph_indices.data(), 0, offset, out.indices.data());
}

// On several threads: the counts first (a pass over the seeds' nodes, which
// keeps each seed's eligible edges for the second), so that each seed's
// output slots are known; then each chunk samples its seeds and reads its
// edges' sources.
void SampleInTwoPasses(const core::SamplingParams& params, const std::vector<int64_t>& seeds,
                       const std::vector<int64_t>& graph_indices, int num_threads, SampledSubgraph& out) {
  const int64_t n = static_cast<int64_t>(seeds.size());
  out.indptr.assign(n + 1, 0);
  std::vector<int64_t> eligible(n);
  ParallelFor(n, num_threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (i + kIndptrAhead < end) __builtin_prefetch(params.indptr + seeds[i + kIndptrAhead]);
      eligible[i] = EligibleEdges(params, seeds[i]);
      out.indptr[i + 1] = core::SampledCountOf(params, eligible[i]);
    }
  });
  for (int64_t i = 0; i < n; ++i) out.indptr[i + 1] += out.indptr[i];

  out.original_edge_ids.resize(out.indptr[n]);
  out.indices.resize(out.indptr[n]);
  ParallelFor(n, num_threads, [&](int64_t begin, int64_t end) {
    std::vector<core::SampleKey> scratch;
    UniformFloydBatch floyd(params);
    for (int64_t i = begin; i < end; ++i) {
      if (i + kIndptrAhead < end) __builtin_prefetch(params.indptr + seeds[i + kIndptrAhead]);
      const int64_t count = out.indptr[i + 1] - out.indptr[i];
      SampleSeedInto(params, seeds[i], eligible[i], count, out.original_edge_ids.data() + out.indptr[i], scratch,
                     floyd);
    }
    floyd.Flush();
    ReadSources(out.original_edge_ids.data(), graph_indices.data(), out.indptr[begin], out.indptr[end],
                out.indices.data());
  });
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

  SampledSubgraph out;
  out.seeds = seeds;
  if (num_threads == 1) {
    SampleInOnePass(params, seeds, graph.indices(), out);
  } else {
    SampleInTwoPasses(params, seeds, graph.indices(), num_threads, out);
  }
  return out;
}

}  // namespace faultline
