// Implements the R-MAT generator (two passes over a counter-seeded edge
// stream, so the CSC arrays are built by a counting sort with no edge list in
// memory) and the small test fixtures.
#include "reference/graph/generators.h"

#include <algorithm>
#include <cstdint>
#include <new>
#include <string>

namespace faultline {
namespace {

// Returns the next value of a SplitMix64 stream.
uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Generates edge `edge` of an R-MAT graph from its own random stream.
class RmatEdgeSource {
 public:
  RmatEdgeSource(int64_t num_nodes, uint64_t seed) : num_nodes_(num_nodes), seed_(seed) {
    // scale_ < 62: callers keep num_nodes far below 2^62 (a wider shift would be undefined).
    while (scale_ < 62 && (int64_t{1} << scale_) < num_nodes) ++scale_;
  }

  // Produces the endpoints of edge `edge` and, when `weight` is not null, its weight.
  void Edge(int64_t edge, int64_t* src, int64_t* dst, float* weight) const {
    uint64_t state = seed_ ^ (static_cast<uint64_t>(edge) * 0xd1b54a32d192ed03ULL);
    SplitMix64(&state);
    // 16-bit thresholds for a=0.57, a+b=0.76, a+b+c=0.95.
    constexpr uint32_t kA = 37356, kAB = 49807, kABC = 62259;
    while (true) {
      int64_t s = 0, d = 0;
      uint64_t bits = 0;
      int left = 0;
      for (int level = 0; level < scale_; ++level) {
        if (left == 0) {
          bits = SplitMix64(&state);
          left = 4;
        }
        const uint32_t r = static_cast<uint32_t>(bits & 0xffff);
        bits >>= 16;
        --left;
        const int sbit = r >= kAB ? 1 : 0;                           // quadrants c and d: lower half (source)
        const int dbit = (r >= kA && r < kAB) || r >= kABC ? 1 : 0;  // quadrants b and d
        s = (s << 1) | sbit;
        d = (d << 1) | dbit;
      }
      if (s < num_nodes_ && d < num_nodes_) {
        *src = s;
        *dst = d;
        break;
      }
    }
    if (weight != nullptr) {
      // (0, 1]: 24 random bits, never zero.
      *weight = static_cast<float>((SplitMix64(&state) >> 40) + 1) * (1.0f / 16777216.0f);
    }
  }

 private:
  int64_t num_nodes_;
  uint64_t seed_;
  int scale_ = 0;
};

// The bytes a fixture built from an edge list needs: the list (16 per
// edge), indptr and the cursor (8 per node each, and 8) and the indices and
// weights (12 per edge). False when the count overflows int64: no such
// graph fits in memory, and num_nodes + 1 would overflow on the way.
bool FixtureBytes(int64_t num_nodes, int64_t num_edges, int64_t* bytes) {
  int64_t node_bytes = 0, edge_bytes = 0;
  return !__builtin_mul_overflow(num_nodes, int64_t{16}, &node_bytes) &&
         !__builtin_mul_overflow(num_edges, int64_t{28}, &edge_bytes) &&
         !__builtin_add_overflow(node_bytes, edge_bytes, bytes) && !__builtin_add_overflow(*bytes, int64_t{8}, bytes);
}

// The error of a fixture too large to count ("MakeStar: num_leaves=...").
Status FixtureTooLarge(const std::string& size) {
  return InvalidArgumentError(size +
                              ": the graph's byte count overflows int64; expected a size whose arrays fit in memory");
}

// The error of a fixture too large for the memory.
Status FixtureOutOfMemory(const std::string& size, int64_t bytes) {
  return UnavailableError(size + ": out of memory allocating " + std::to_string(bytes) + " bytes for the graph");
}

}  // namespace

Result<CscGraph> GeneratePowerLaw(int64_t num_nodes, int64_t num_edges, uint64_t seed, bool weighted) {
  if (num_nodes < 1) return InvalidArgumentError("num_nodes=" + std::to_string(num_nodes) + "; expected >= 1");
  if (num_edges < 0) return InvalidArgumentError("num_edges=" + std::to_string(num_edges) + "; expected >= 0");
  const std::string sizes = "num_nodes=" + std::to_string(num_nodes) + ", num_edges=" + std::to_string(num_edges);
  // Bytes of the arrays below: indptr and cursor (8 per node), indices (8
  // per edge) and weights (4 per edge). Checked, so that no size can wrap
  // or reach the generator's 2^62-node limit.
  int64_t bytes = 0, node_bytes = 0, edge_bytes = 0;
  if (__builtin_mul_overflow(num_nodes, int64_t{16}, &node_bytes) ||
      __builtin_mul_overflow(num_edges, int64_t{weighted ? 12 : 8}, &edge_bytes) ||
      __builtin_add_overflow(node_bytes, edge_bytes, &bytes) || __builtin_add_overflow(bytes, int64_t{8}, &bytes)) {
    return InvalidArgumentError("GeneratePowerLaw: " + sizes +
                                ": the graph's byte count overflows int64; expected sizes whose arrays fit in memory");
  }
  // Everything is allocated before the generation passes, so a graph too
  // large for the memory fails at once rather than after hours of work.
  std::vector<int64_t> indptr, cursor, indices;
  std::optional<std::vector<float>> weights;
  try {
    indptr.assign(num_nodes + 1, 0);
    cursor.resize(num_nodes);
    indices.resize(num_edges);
    if (weighted) weights.emplace(num_edges);
  } catch (const std::bad_alloc&) {
    return UnavailableError("GeneratePowerLaw: " + sizes + ": out of memory allocating " + std::to_string(bytes) +
                            " bytes for the graph");
  }
  RmatEdgeSource source(num_nodes, seed);
  int64_t src, dst;

  // Pass 1: in-degree of every node, then the prefix sum.
  for (int64_t e = 0; e < num_edges; ++e) {
    source.Edge(e, &src, &dst, nullptr);
    ++indptr[dst + 1];
  }
  for (int64_t v = 0; v < num_nodes; ++v) indptr[v + 1] += indptr[v];

  // Pass 2: regenerate the same edges and place them (stable counting sort).
  std::copy(indptr.begin(), indptr.end() - 1, cursor.begin());
  float w = 0;
  for (int64_t e = 0; e < num_edges; ++e) {
    source.Edge(e, &src, &dst, weighted ? &w : nullptr);
    const int64_t slot = cursor[dst]++;
    indices[slot] = src;
    if (weighted) (*weights)[slot] = w;
  }
  cursor = {};
  CscStorage storage;
  if (num_nodes - 1 <= INT32_MAX) storage.indices = npy::DType::kInt32;
  return CscGraph::Create(std::move(indptr), std::move(indices), std::move(weights), std::nullopt, storage);
}

Result<CscGraph> GraphFromEdges(int64_t num_nodes, const std::vector<std::pair<int64_t, int64_t>>& edges,
                                std::optional<std::vector<float>> weights) {
  if (num_nodes < 0) return InvalidArgumentError("num_nodes=" + std::to_string(num_nodes) + "; expected >= 0");
  if (weights && weights->size() != edges.size()) {
    return InvalidArgumentError("weights has " + std::to_string(weights->size()) + " entries; expected one per edge (" +
                                std::to_string(edges.size()) + ")");
  }
  const std::string size = "GraphFromEdges: num_nodes=" + std::to_string(num_nodes);
  int64_t bytes = 0;
  if (!FixtureBytes(num_nodes, static_cast<int64_t>(edges.size()), &bytes)) return FixtureTooLarge(size);
  std::vector<int64_t> indptr, cursor, indices;
  std::optional<std::vector<float>> csc_weights;
  try {
    indptr.assign(num_nodes + 1, 0);
    cursor.resize(num_nodes);
    indices.resize(edges.size());
    if (weights) csc_weights.emplace(edges.size());
  } catch (const std::bad_alloc&) {
    return FixtureOutOfMemory(size, bytes);
  }
  for (size_t i = 0; i < edges.size(); ++i) {
    const auto& [s, d] = edges[i];
    if (s < 0 || s >= num_nodes || d < 0 || d >= num_nodes) {
      return InvalidArgumentError("edges[" + std::to_string(i) + "]=(" + std::to_string(s) + ", " + std::to_string(d) +
                                  ") has an endpoint out of range [0, " + std::to_string(num_nodes) + ")");
    }
    ++indptr[d + 1];
  }
  for (int64_t v = 0; v < num_nodes; ++v) indptr[v + 1] += indptr[v];
  std::copy(indptr.begin(), indptr.end() - 1, cursor.begin());
  for (size_t i = 0; i < edges.size(); ++i) {
    const int64_t slot = cursor[edges[i].second]++;
    indices[slot] = edges[i].first;
    if (weights) (*csc_weights)[slot] = (*weights)[i];
  }
  return CscGraph::Create(std::move(indptr), std::move(indices), std::move(csc_weights));
}

Result<CscGraph> MakeStar(int64_t num_leaves, std::optional<std::vector<float>> weights) {
  if (num_leaves < 0) return InvalidArgumentError("num_leaves=" + std::to_string(num_leaves) + "; expected >= 0");
  const std::string size = "MakeStar: num_leaves=" + std::to_string(num_leaves);
  int64_t bytes = 0;
  // num_leaves + 1 nodes: checked first, so that the sum cannot overflow.
  if (num_leaves == INT64_MAX || !FixtureBytes(num_leaves + 1, num_leaves, &bytes)) return FixtureTooLarge(size);
  std::vector<std::pair<int64_t, int64_t>> edges;
  try {
    edges.reserve(static_cast<size_t>(num_leaves));
  } catch (const std::bad_alloc&) {
    return FixtureOutOfMemory(size, bytes);
  }
  for (int64_t i = 1; i <= num_leaves; ++i) edges.emplace_back(i, 0);
  return GraphFromEdges(num_leaves + 1, edges, std::move(weights));
}

Result<CscGraph> MakeChain(int64_t num_nodes) {
  if (num_nodes < 1) return InvalidArgumentError("num_nodes=" + std::to_string(num_nodes) + "; expected >= 1");
  const std::string size = "MakeChain: num_nodes=" + std::to_string(num_nodes);
  int64_t bytes = 0;
  if (!FixtureBytes(num_nodes, num_nodes - 1, &bytes)) return FixtureTooLarge(size);
  std::vector<std::pair<int64_t, int64_t>> edges;
  try {
    edges.reserve(static_cast<size_t>(num_nodes - 1));
  } catch (const std::bad_alloc&) {
    return FixtureOutOfMemory(size, bytes);
  }
  for (int64_t i = 1; i < num_nodes; ++i) edges.emplace_back(i - 1, i);
  return GraphFromEdges(num_nodes, edges);
}

}  // namespace faultline
