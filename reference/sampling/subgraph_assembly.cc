// Implements the assembly of a SampledSubgraph out of chunks.
#include "reference/sampling/subgraph_assembly.h"

#include <algorithm>

namespace faultline {

int64_t ExpectedSampledEdges(const CscGraph& graph, int64_t num_seeds, int64_t fanout) {
  const int64_t nodes = std::max<int64_t>(graph.num_nodes(), 1);
  const int64_t mean_degree = (graph.num_edges() + nodes - 1) / nodes;
  const int64_t per_seed = fanout < 0 ? mean_degree : std::min(fanout, mean_degree);
  // No more than the graph's edges (which also keeps the product in range).
  const int64_t edges = graph.num_edges();
  return num_seeds > 0 && per_seed > edges / num_seeds ? edges : num_seeds * per_seed;
}

SampledSubgraph SubgraphToFill(const std::vector<int64_t>& seeds, size_t expected_edges) {
  SampledSubgraph out;
  out.seeds = seeds;
  out.indptr.reserve(seeds.size() + 1);
  out.indptr.push_back(0);
  out.original_edge_ids.reserve(expected_edges);
  out.indices.reserve(expected_edges);
  return out;
}

void AppendChunk(const SampledChunk& chunk, SampledSubgraph& out) {
  for (int64_t count : chunk.counts) out.indptr.push_back(out.indptr.back() + count);
  out.original_edge_ids.insert(out.original_edge_ids.end(), chunk.original_edge_ids.begin(),
                               chunk.original_edge_ids.end());
  out.indices.insert(out.indices.end(), chunk.indices.begin(), chunk.indices.end());
}

}  // namespace faultline
