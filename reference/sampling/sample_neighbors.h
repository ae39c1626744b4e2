// Provides SampleNeighbors: the multi-threaded CPU reference of neighbor
// sampling. It runs the per-seed routine that device kernels share, so its
// output is bit-identical to theirs and independent of the thread count.
// SampleNeighborsInChunks hands the same output over chunk by chunk, so that
// a caller can work on each chunk while the next ones are sampled.
#ifndef FAULTLINE_REFERENCE_SAMPLING_SAMPLE_NEIGHBORS_H_
#define FAULTLINE_REFERENCE_SAMPLING_SAMPLE_NEIGHBORS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "reference/base/status.h"
#include "reference/graph/csc_graph.h"
#include "reference/sampling/helper_crew.h"
#include "reference/sampling/sampled_subgraph.h"

namespace faultline {

// The most CPU threads one sampling call takes (far above any core count;
// thread counts near the system's limit would fail to start).
inline constexpr int kMaxSamplingThreads = 1024;

// How to sample: what every sampling entry point (CPU, simcuda, cuda; one
// hop or several) takes besides the graph, the seeds and the fanouts.
struct SamplingOptions {
  bool replace = false;   // with replacement: exactly `fanout` draws per seed
  bool weighted = false;  // picks follow the graph's weights
  uint64_t rng_seed = 0;  // the Philox key (docs/sampling.md)
  // 1..kMaxSamplingThreads on every backend (the same rejections
  // everywhere), but only the CPU reference uses it; results never depend on it.
  int num_threads = 1;
  // The CPU reference's memory bound: the picks of a call are checked
  // against this many bytes; 0 = this machine's RAM and swap. A caller may
  // cap what one call takes.
  uint64_t memory_bytes = 0;
  // The CPU reference runs this before it samples each chunk, on whichever
  // of its threads samples it (empty: nothing). The loader's fault
  // injection makes it throw; it must be safe to call from several threads.
  std::function<void()> before_each_chunk;
};

// Checks the arguments every sampling backend shares, in this order:
// options.num_threads in [1, kMaxSamplingThreads], fanout in [-1, 2^31-1],
// weights present when options.weighted, seeds in [0, num_nodes). The
// errors name the argument, the position and the value.
Status ValidateSampleRequest(int64_t num_nodes, bool has_weights, const std::vector<int64_t>& seeds, int64_t fanout,
                             const SamplingOptions& options);

// Sampled edges take this many bytes each, in a chunk and in the result:
// the edge id and the source node.
inline constexpr int64_t kBytesPerSampledEdge = 16;

// Names a request by what its output needs, for the error of one that does
// not fit in memory: "sampling N seeds with fanout F needs P picks (B
// bytes)", B = P * kBytesPerSampledEdge.
std::string SampledEdgesNeed(int64_t num_seeds, int64_t fanout, uint64_t picks);

// Samples up to `fanout` incoming edges of every seed (-1 = all of them).
// Without replacement a seed keeps min(fanout, eligible) edges in ascending
// edge id; with replacement it gets exactly `fanout` draws in draw order when
// it has an eligible edge. With `weighted`, picks follow the graph's weights
// and zero-weight edges are never picked. `layer` separates the random
// streams of the layers of multi-layer sampling. Fails when a seed is out of
// range, fanout < -1, num_threads < 1, or `weighted` is set on a graph
// without weights (ValidateSampleRequest), and when the picks do not fit in
// memory: an Unavailable error, "sampling N seeds with fanout F needs P picks
// (B bytes)" (SampledEdgesNeed) followed by ", more than this machine's
// memory (M bytes)" when they exceed its RAM and swap (", more than the
// memory this call may use" under options.memory_bytes; checked before
// anything is allocated for them) or ": out of memory" when an allocation
// fails. Duplicate seeds get identical picks.
Result<SampledSubgraph> SampleNeighbors(const CscGraph& graph, const std::vector<int64_t>& seeds, int64_t fanout,
                                        uint32_t layer, const SamplingOptions& options);

// Receives the chunks of a layer in seed order, on the calling thread; an
// error stops the sampling.
using SampledChunkSink = std::function<Status(const SampledChunk&)>;

// SampleNeighbors, handed over chunk by chunk: `sink` gets each chunk of
// consecutive seeds in seed order on the calling thread (its memory is
// reused after `sink` returns) while options.num_threads threads in all
// sample the next ones, so the caller's work on a chunk overlaps theirs.
// Fails as SampleNeighbors does: a bad argument before any chunk; picks that
// do not fit in memory when a chunk shows it (a chunk larger than the
// memory, or the chunks handed over so far, which every sink keeps; or a
// std::bad_alloc from the sampling or from `sink`). Any other error or
// exception from `sink` reaches the caller once the other threads have
// stopped. Each calling thread keeps its chunks' memory for the next call
// (about 16 bytes per edge of the largest layer it sampled).
Status SampleNeighborsInChunks(const CscGraph& graph, const std::vector<int64_t>& seeds, int64_t fanout, uint32_t layer,
                               const SamplingOptions& options, const SampledChunkSink& sink);
// The same with the threads of `crew` (up to options.num_threads - 1 of
// them) as the helpers, instead of threads of the call's own: a caller that
// samples several hops keeps one crew for all of them.
Status SampleNeighborsInChunks(const CscGraph& graph, const std::vector<int64_t>& seeds, int64_t fanout, uint32_t layer,
                               const SamplingOptions& options, const SampledChunkSink& sink, HelperCrew& crew);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_SAMPLING_SAMPLE_NEIGHBORS_H_
