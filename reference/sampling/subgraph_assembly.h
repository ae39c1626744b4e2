// Provides what the sampling entry points of this package share to build a
// SampledSubgraph out of chunks. Package-private (//reference/sampling).
#ifndef FAULTLINE_REFERENCE_SAMPLING_SUBGRAPH_ASSEMBLY_H_
#define FAULTLINE_REFERENCE_SAMPLING_SUBGRAPH_ASSEMBLY_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "reference/graph/csc_graph.h"
#include "reference/sampling/sampled_subgraph.h"

namespace faultline {

// How many edges a call is expected to sample, for reserving its output
// and choosing a compaction table: per seed the fanout, but no more than
// the graph's mean degree rounded up (fanout -1 counts the mean degree).
// A guess: hubs, replacement or duplicate seeds can give more.
int64_t ExpectedSampledEdges(const CscGraph& graph, int64_t num_seeds, int64_t fanout);

// An empty SampledSubgraph of `seeds` (indptr {0}) with room reserved for
// `expected_edges` edges; AppendChunk fills it.
SampledSubgraph SubgraphToFill(const std::vector<int64_t>& seeds, size_t expected_edges);

// Appends a chunk's picks to `out` as SampleNeighbors joins them.
void AppendChunk(const SampledChunk& chunk, SampledSubgraph& out);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_SAMPLING_SUBGRAPH_ASSEMBLY_H_
