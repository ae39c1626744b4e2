// Provides seeded graph generators: an R-MAT power-law generator fast enough
// for tens of millions of edges, and small fixtures (edge list, star, chain)
// for tests.
#ifndef FAULTLINE_REFERENCE_GRAPH_GENERATORS_H_
#define FAULTLINE_REFERENCE_GRAPH_GENERATORS_H_

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "reference/base/status.h"
#include "reference/graph/csc_graph.h"

namespace faultline {

// Generates an R-MAT graph (a=0.57, b=0.19, c=0.19, d=0.05) with exactly
// `num_edges` edges over `num_nodes` nodes; the result depends only on the
// arguments. Duplicate edges and self loops are kept. Edges of one node keep
// their generation order. With `weighted`, every edge gets a weight in (0, 1].
Result<CscGraph> GeneratePowerLaw(int64_t num_nodes, int64_t num_edges, uint64_t seed, bool weighted);

// Builds a graph from (src, dst) pairs: edge (s, d) lands in d's segment, and
// edges of one node keep their order in `edges`. `weights`, when given, are
// in the order of `edges`.
//
// The fixtures (GraphFromEdges, MakeStar, MakeChain) refuse a size whose
// byte count overflows int64 (InvalidArgument naming the argument: "MakeStar:
// num_leaves=...: the graph's byte count overflows int64; ..."), and return
// Unavailable when the memory runs out, as GeneratePowerLaw does.
Result<CscGraph> GraphFromEdges(int64_t num_nodes, const std::vector<std::pair<int64_t, int64_t>>& edges,
                                std::optional<std::vector<float>> weights = std::nullopt);

// Builds a star: node 0 has incoming edges from nodes 1..num_leaves, edge i
// coming from node i + 1; leaves have no incoming edges. `weights`, when
// given, has one entry per leaf.
Result<CscGraph> MakeStar(int64_t num_leaves, std::optional<std::vector<float>> weights = std::nullopt);

// Builds a chain: node i (i >= 1) has a single incoming edge, from node i - 1.
Result<CscGraph> MakeChain(int64_t num_nodes);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_GRAPH_GENERATORS_H_
