// Implements SampleNeighborsInChunks (validate, then sample chunks of
// consecutive seeds on up to num_threads threads, handing them over in seed
// order) and SampleNeighbors (the chunks joined).
#include "reference/sampling/sample_neighbors.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <thread>

#include <sys/sysinfo.h>

#include "kernels/sampling_core.h"
#include "reference/sampling/subgraph_assembly.h"
#include "reference/sampling/uniform_floyd.h"
#include "reference/sampling/weighted_rejection.h"
#include "reference/sampling/weighted_top_k.h"

namespace faultline {
namespace {

namespace core = kernels::sampling;

// EligibleCountForSampling, with the weights counted eight at a time on
// the CPU and only as far as the sampler tells counts apart (all of them
// for fanout -1, one with replacement, fanout + 1 without). The count may
// pass that bound by less than a block; every decision and SampledCountOf
// are the same as with the full count. A seed that the rule sends to
// rejection is not counted at all: its table says it has more than fanout
// eligible edges, so it gets fanout + 1 and reads no weight.
int64_t EligibleEdges(const core::SamplingParams& p, int64_t node) {
  const int64_t degree = p.indptr[node + 1] - p.indptr[node];
  if (!p.weighted) return degree;
  if (core::UsesWeightedRejection(p, node)) return p.fanout + 1;
  const int64_t enough = p.fanout < 0 ? degree : (p.replace ? 1 : p.fanout + 1);
  return CountPositiveWeightsUpTo(p.weights + p.indptr[node], degree, enough);
}

// The batches that hold seeds' picks until they are flushed.
struct SeedBatches {
  UniformFloydBatch floyd;
  WeightedRejectionBatch rejection;
  explicit SeedBatches(const core::SamplingParams& p) : floyd(p), rejection(p) {}
  void Flush() {
    floyd.Flush();
    rejection.Flush();
  }
};

// Samples `seed` (count picks, from its `eligible` edges, the first of its
// edges at first_edge) into picks; a Floyd or rejection seed's picks are
// there once `batches` are flushed.
void SampleSeedInto(const core::SamplingParams& p, int64_t seed, int64_t first_edge, int64_t eligible, int64_t count,
                    int64_t* picks, std::vector<core::SampleKey>& scratch, SeedBatches& batches) {
  // Only the top-k modes keep keys (one per pick): fanout -1 over a hub, say,
  // must not cost 16 bytes per edge of it.
  const bool top_k = core::MayUseKeyScratch(p) && eligible > p.fanout;
  if (top_k && static_cast<int64_t>(scratch.size()) < count) scratch.resize(count);
  if (core::UsesFloyd(p, eligible)) {
    batches.floyd.Add(seed, first_edge, eligible, picks);  // Floyd is unweighted: every edge is eligible
  } else if (core::UsesWeightedRejection(p, seed)) {
    batches.rejection.Add(seed, first_edge, p.indptr[seed + 1] - first_edge, picks);
  } else if (core::UsesWeightedTopK(p, seed, eligible)) {
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

// What a thread reuses from chunk to chunk.
struct ChunkScratch {
  std::vector<int64_t> eligible, first_edge;
  std::vector<core::SampleKey> keys;
};

// How a chunk's sampling ended: sampled, or not for want of memory (its
// picks more than max_picks, or an allocation for them failed).
enum class ChunkOutcome { kSampled, kTooLarge, kOutOfMemory };

// Samples seeds[0, n) into `out`: their counts first (one pass over their
// nodes, which keeps each seed's first edge and eligible edges for the
// second), then their picks, then the picked edges' sources. More than
// max_picks picks are not even allocated.
ChunkOutcome SampleChunk(const core::SamplingParams& params, const int64_t* seeds, int64_t n,
                         const int64_t* graph_indices, int64_t max_picks, ChunkScratch& scratch, SampledChunk& out) {
  out.counts.resize(static_cast<size_t>(n));
  scratch.eligible.resize(static_cast<size_t>(n));
  scratch.first_edge.resize(static_cast<size_t>(n));
  int64_t picks = 0;
  // Weighted without replacement: each seed's rejection fanout is fetched
  // with its node entry.
  const bool rejection_possible = params.weighted && !params.replace && params.rejection_fanouts != nullptr &&
                                  params.fanout > 0 && params.fanout <= core::kMaxRejectionFanout;
  for (int64_t i = 0; i < n; ++i) {
    if (i + kIndptrAhead < n) {
      __builtin_prefetch(params.indptr + seeds[i + kIndptrAhead]);
      if (rejection_possible) __builtin_prefetch(params.rejection_fanouts + seeds[i + kIndptrAhead]);
    }
    scratch.first_edge[i] = params.indptr[seeds[i]];
    scratch.eligible[i] = EligibleEdges(params, seeds[i]);
    out.counts[i] = core::SampledCountOf(params, scratch.eligible[i]);
    picks += out.counts[i];
  }
  if (picks > max_picks) return ChunkOutcome::kTooLarge;
  out.original_edge_ids.Resize(picks);  // a std::bad_alloc here or below: the caller's kOutOfMemory
  out.indices.Resize(picks);
  SeedBatches batches(params);
  for (int64_t i = 0, offset = 0; i < n; offset += out.counts[i], ++i) {
    SampleSeedInto(params, seeds[i], scratch.first_edge[i], scratch.eligible[i], out.counts[i],
                   out.original_edge_ids.data() + offset, scratch.keys, batches);
  }
  batches.Flush();
  ReadSources(out.original_edge_ids.data(), graph_indices, 0, picks, out.indices.data());
  return ChunkOutcome::kSampled;
}

// Chunks of consecutive seeds: up to 1024, about 8 per thread for small
// inputs (which split too). Larger chunks cost less per chunk (the Floyd
// batch's flush, the compaction's prefetch window restarting); 1024 was the
// fastest of 64..16384 on one and on two threads (docs/benchmarks.md).
int64_t ChunkSeeds(int64_t n, int num_threads) { return std::clamp<int64_t>(n / (8 * int64_t{num_threads}), 1, 1024); }

// The bytes of RAM and swap of this machine (no single allocation, nor all
// of a call's picks together, can be larger). Read once: it does not change
// while the process runs.
uint64_t MachineMemoryBytes() {
  static const uint64_t machine = [] {
    struct sysinfo info;
    if (sysinfo(&info) != 0) return std::numeric_limits<uint64_t>::max();
    const unsigned __int128 bytes =
        (static_cast<unsigned __int128>(info.totalram) + info.totalswap) * std::max<unsigned>(info.mem_unit, 1);
    return static_cast<uint64_t>(std::min<unsigned __int128>(bytes, std::numeric_limits<uint64_t>::max()));
  }();
  return machine;
}

// The picks of all of `seeds` (the counts SampleChunk takes), up to 2^64 - 1.
uint64_t TotalPicks(const core::SamplingParams& params, const std::vector<int64_t>& seeds) {
  unsigned __int128 total = 0;
  for (int64_t seed : seeds) total += static_cast<uint64_t>(core::SampledCountOf(params, EligibleEdges(params, seed)));
  return static_cast<uint64_t>(std::min<unsigned __int128>(total, std::numeric_limits<uint64_t>::max()));
}

std::string Decimal(unsigned __int128 value) {
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(value % 10)));
    value /= 10;
  } while (value != 0);
  return digits;
}

// Each calling thread's chunks, reused from call to call (no allocation
// once they have grown to a layer's size), unless a call is under way on the
// thread already (a sink that samples): that one's chunks are its own.
thread_local std::vector<SampledChunk> t_chunks;
thread_local bool t_chunks_in_use = false;

// The validated sampling parameters of a call.
Result<core::SamplingParams> CheckedParams(const CscGraph& graph, const std::vector<int64_t>& seeds, int64_t fanout,
                                           uint32_t layer, const SamplingOptions& options) {
  FL_RETURN_IF_ERROR(ValidateSampleRequest(graph.num_nodes(), graph.has_weights(), seeds, fanout, options));
  core::SamplingParams params;
  params.indptr = graph.indptr().data();
  params.weights = options.weighted ? graph.weights().data() : nullptr;
  params.weight_alias = options.weighted ? graph.weight_alias().data() : nullptr;
  params.rejection_fanouts = options.weighted ? graph.rejection_fanouts().data() : nullptr;
  params.fanout = fanout;
  params.replace = options.replace;
  params.weighted = options.weighted;
  params.rng_seed = options.rng_seed;
  params.layer = layer;
  return params;
}

}  // namespace

// Threads take chunks in turn (a thread that drew hub seeds does not hold up
// the others) and mark each one done; this thread hands the done ones to
// `sink` in order, and samples the next free chunk while the one it waits
// for is not done. Each seed's output is its own, so the result does not
// depend on which thread sampled it.
Status SampleNeighborsInChunks(const CscGraph& graph, const std::vector<int64_t>& seeds, int64_t fanout, uint32_t layer,
                               const SamplingOptions& options, const SampledChunkSink& sink) {
  HelperCrew crew(options.num_threads - 1);  // checked with the rest, before any thread starts
  return SampleNeighborsInChunks(graph, seeds, fanout, layer, options, sink, crew);
}

Status SampleNeighborsInChunks(const CscGraph& graph, const std::vector<int64_t>& seeds, int64_t fanout, uint32_t layer,
                               const SamplingOptions& options, const SampledChunkSink& sink, HelperCrew& crew) {
  FL_ASSIGN_OR_RETURN(const core::SamplingParams params, CheckedParams(graph, seeds, fanout, layer, options));
  const int64_t n = static_cast<int64_t>(seeds.size());
  const int64_t chunk_seeds = ChunkSeeds(n, options.num_threads);
  const int64_t num_chunks = (n + chunk_seeds - 1) / chunk_seeds;
  std::vector<SampledChunk> own_chunks;
  std::vector<SampledChunk>& chunks = t_chunks_in_use ? own_chunks : t_chunks;
  struct InUse {
    bool owner;
    ~InUse() {
      if (owner) t_chunks_in_use = false;
    }
  } in_use{!t_chunks_in_use};
  t_chunks_in_use = true;
  if (static_cast<int64_t>(chunks.size()) < num_chunks) chunks.resize(static_cast<size_t>(num_chunks));
  std::unique_ptr<std::atomic<bool>[]> done(new std::atomic<bool>[static_cast<size_t>(num_chunks)]);
  for (int64_t c = 0; c < num_chunks; ++c) done[c].store(false, std::memory_order_relaxed);
  std::atomic<int64_t> next{0};
  // A thread that throws (a helper; the hook of a test) or finds no memory
  // for its chunk leaves the chunk undone: it stops the others' claims, and
  // this thread rethrows what it threw, as it would have thrown sampling the
  // chunk itself, or returns the error.
  std::atomic<bool> failure_claimed{false};              // the first thread to fail writes the failure
  std::exception_ptr helper_failure;                     // written before failed is set
  ChunkOutcome failed_outcome = ChunkOutcome::kSampled;  // the same; with no exception, why memory failed
  std::atomic<bool> failed{false};
  auto fail = [&](std::exception_ptr exception, ChunkOutcome outcome) {
    if (failure_claimed.exchange(true)) return;
    helper_failure = std::move(exception);
    failed_outcome = outcome;
    next.store(num_chunks, std::memory_order_relaxed);
    failed.store(true, std::memory_order_release);
  };
  const uint64_t memory = options.memory_bytes != 0 ? options.memory_bytes : MachineMemoryBytes();
  const char* const memory_is = options.memory_bytes != 0 ? "the memory this call may use" : "this machine's memory";
  const int64_t max_picks =
      static_cast<int64_t>(std::min<uint64_t>(memory / kBytesPerSampledEdge, std::numeric_limits<int64_t>::max()));
  // The error of picks that do not fit (the request's, counted only now).
  auto no_room = [&](ChunkOutcome outcome) {
    const std::string need = SampledEdgesNeed(n, fanout, TotalPicks(params, seeds));
    return UnavailableError(outcome == ChunkOutcome::kTooLarge
                                ? need + ", more than " + memory_is + " (" + std::to_string(memory) + " bytes)"
                                : need + ": out of memory");
  };
  // Samples the next chunk nobody has taken; false when none is left.
  auto sample_next = [&](ChunkScratch& scratch) {
    const int64_t c = next.fetch_add(1, std::memory_order_relaxed);
    if (c >= num_chunks) return false;
    const int64_t first = c * chunk_seeds, count = std::min(n, first + chunk_seeds) - first;
    chunks[c].first_seed = first;
    if (options.before_each_chunk) options.before_each_chunk();
    ChunkOutcome outcome;
    try {  // any allocation of the chunk's sampling: its picks, a seed's keys, the Floyd batch
      outcome = SampleChunk(params, seeds.data() + first, count, graph.indices().data(), max_picks, scratch, chunks[c]);
    } catch (const std::bad_alloc&) {
      outcome = ChunkOutcome::kOutOfMemory;
    }
    if (outcome != ChunkOutcome::kSampled) {
      fail(nullptr, outcome);
      return false;
    }
    done[c].store(true, std::memory_order_release);
    return true;
  };
  // The helpers' part of this call: sample chunks until none is left.
  const std::function<void()> help = [&] {
    try {
      ChunkScratch scratch;
      while (sample_next(scratch)) {
      }
    } catch (...) {
      fail(std::current_exception(), ChunkOutcome::kSampled);  // the exception is the failure
    }
  };
  // Waits for the helpers however this function returns (stopping their claims first).
  struct Stopper {
    HelperCrew& crew;
    std::atomic<int64_t>& next;
    int64_t end;
    ~Stopper() {
      next.store(end, std::memory_order_relaxed);
      crew.Wait();
    }
  } stopper{crew, next, num_chunks};
  crew.Run(static_cast<int>(std::min<int64_t>(options.num_threads, num_chunks) - 1), help);
  ChunkScratch scratch;
  int64_t handed_picks = 0;  // every sink keeps them all (SampleNeighbors, a minibatch, the compaction)
  for (int64_t c = 0; c < num_chunks; ++c) {
    while (!done[c].load(std::memory_order_acquire)) {
      if (failed.load(std::memory_order_acquire)) {
        if (helper_failure) std::rethrow_exception(helper_failure);
        return no_room(failed_outcome);
      }
      if (!sample_next(scratch)) std::this_thread::yield();  // every chunk is taken: c is being sampled
    }
    handed_picks += chunks[c].indices.size();  // each at most max_picks: no overflow
    if (handed_picks > max_picks) return no_room(ChunkOutcome::kTooLarge);
    Status handed;
    bool sink_out_of_memory = false;
    try {
      handed = sink(chunks[c]);
    } catch (const std::bad_alloc&) {
      sink_out_of_memory = true;  // the error is built once the exception has released what it held
    }
    if (sink_out_of_memory) return no_room(ChunkOutcome::kOutOfMemory);
    FL_RETURN_IF_ERROR(handed);
  }
  return OkStatus();
}

std::string SampledEdgesNeed(int64_t num_seeds, int64_t fanout, uint64_t picks) {
  return "sampling " + std::to_string(num_seeds) + " seeds with fanout " + std::to_string(fanout) + " needs " +
         std::to_string(picks) + " picks (" + Decimal(static_cast<unsigned __int128>(picks) * kBytesPerSampledEdge) +
         " bytes)";
}

Status ValidateSampleRequest(int64_t num_nodes, bool has_weights, const std::vector<int64_t>& seeds, int64_t fanout,
                             const SamplingOptions& options) {
  if (options.num_threads < 1 || options.num_threads > kMaxSamplingThreads) {
    return InvalidArgumentError("num_threads=" + std::to_string(options.num_threads) + "; expected 1.." +
                                std::to_string(kMaxSamplingThreads));
  }
  if (fanout < -1 || fanout > std::numeric_limits<int32_t>::max()) {
    return InvalidArgumentError("fanout=" + std::to_string(fanout) + "; expected -1 (all neighbours) or 0.." +
                                std::to_string(std::numeric_limits<int32_t>::max()));
  }
  if (options.weighted && !has_weights) {
    return InvalidArgumentError("weighted sampling was requested but the graph has no edge weights");
  }
  for (size_t i = 0; i < seeds.size(); ++i) {
    if (seeds[i] < 0 || seeds[i] >= num_nodes) {
      return OutOfRangeError("seeds[" + std::to_string(i) + "]=" + std::to_string(seeds[i]) + " is out of range [0, " +
                             std::to_string(num_nodes) + ")");
    }
  }
  return OkStatus();
}

Result<SampledSubgraph> SampleNeighbors(const CscGraph& graph, const std::vector<int64_t>& seeds, int64_t fanout,
                                        uint32_t layer, const SamplingOptions& options) {
  SampledSubgraph out = SubgraphToFill(
      seeds, static_cast<size_t>(ExpectedSampledEdges(graph, static_cast<int64_t>(seeds.size()), fanout)));
  FL_RETURN_IF_ERROR(SampleNeighborsInChunks(graph, seeds, fanout, layer, options, [&](const SampledChunk& chunk) {
    AppendChunk(chunk, out);
    return OkStatus();
  }));
  return out;
}

}  // namespace faultline
