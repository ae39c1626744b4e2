// Provides SampleNeighbors: the multi-threaded CPU reference of neighbor
// sampling. It runs the per-seed routine that device kernels share, so its
// output is bit-identical to theirs and independent of the thread count.
#ifndef FAULTLINE_REFERENCE_SAMPLING_SAMPLE_NEIGHBORS_H_
#define FAULTLINE_REFERENCE_SAMPLING_SAMPLE_NEIGHBORS_H_

#include <cstdint>
#include <vector>

#include "reference/base/status.h"
#include "reference/graph/csc_graph.h"

namespace faultline {

// Holds the sampled incoming edges of a list of seeds, like GraphBolt's
// FusedSampledSubgraph: the picks of seeds[i] are positions
// [indptr[i], indptr[i+1]) of `indices` (source node ids) and
// `original_edge_ids` (edge ids in the graph).
struct SampledSubgraph {
  std::vector<int64_t> seeds;
  std::vector<int64_t> indptr;
  std::vector<int64_t> indices;
  std::vector<int64_t> original_edge_ids;
};

// How to sample: what every sampling entry point (CPU, simcuda, cuda; one
// hop or several) takes besides the graph, the seeds and the fanouts.
struct SamplingOptions {
  bool replace = false;   // with replacement: exactly `fanout` draws per seed
  bool weighted = false;  // picks follow the graph's weights
  uint64_t rng_seed = 0;  // the Philox key (docs/sampling.md)
  int num_threads = 1;    // CPU reference only; results never depend on it
};

// Checks the arguments every sampling backend shares: fanout in
// [-1, 2^31-1], weights present when weighted, seeds in [0, num_nodes). The
// errors name the argument, the position and the value.
Status ValidateSampleRequest(int64_t num_nodes, bool has_weights, const std::vector<int64_t>& seeds, int64_t fanout,
                             bool weighted);

// Samples up to `fanout` incoming edges of every seed (-1 = all of them).
// Without replacement a seed keeps min(fanout, eligible) edges in ascending
// edge id; with replacement it gets exactly `fanout` draws in draw order when
// it has an eligible edge. With `weighted`, picks follow the graph's weights
// and zero-weight edges are never picked. `layer` separates the random
// streams of the layers of multi-layer sampling. Fails when a seed is out of
// range, fanout < -1, num_threads < 1, or `weighted` is set on a graph
// without weights. Duplicate seeds get identical picks.
Result<SampledSubgraph> SampleNeighbors(const CscGraph& graph, const std::vector<int64_t>& seeds, int64_t fanout,
                                        uint32_t layer, const SamplingOptions& options);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_SAMPLING_SAMPLE_NEIGHBORS_H_
