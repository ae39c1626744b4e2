// Provides CscGraph: a validated graph in compressed sparse column form
// (for each destination node, the segment of its incoming edges), with
// optional float32 edge weights and per-edge types, and its on-disk form as a
// folder of .npy files.
#ifndef FAULTLINE_REFERENCE_GRAPH_CSC_GRAPH_H_
#define FAULTLINE_REFERENCE_GRAPH_CSC_GRAPH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reference/base/status.h"
#include "reference/graph/npy.h"

namespace faultline {

// Chooses the element types used when a graph is written to files. In memory
// indices are always int64 and edge types int32.
struct CscStorage {
  npy::DType indices = npy::DType::kInt64;     // kInt32 or kInt64
  npy::DType edge_types = npy::DType::kInt32;  // kUInt8 or kInt32
};

// Holds an immutable, validated CSC graph. Edge e (a position in `indices`)
// goes from node indices[e] to the node v with indptr[v] <= e < indptr[v+1].
class CscGraph {
 public:
  // Validates the arrays and builds a graph. Checks: indptr is non-empty,
  // starts at 0, is non-decreasing and ends at indices.size(); every index is
  // in [0, num_nodes); weights (when given) have one finite, non-negative
  // value per edge; edge types (when given) have one non-negative value per
  // edge and are sorted within each node's segment; the storage types can
  // hold the values. Each error names the array, the position and the value.
  static Result<CscGraph> Create(std::vector<int64_t> indptr, std::vector<int64_t> indices,
                                 std::optional<std::vector<float>> weights = std::nullopt,
                                 std::optional<std::vector<int32_t>> edge_types = std::nullopt,
                                 CscStorage storage = {});

  // Reads indptr.npy, indices.npy and, when present, weights.npy and
  // edge_types.npy from `dir`, then validates them as Create does.
  static Result<CscGraph> Load(const std::string& dir);

  // Writes the graph into the existing folder `dir` in the layout Load reads.
  // All files are written under temporary names, then renamed into place: a
  // failed write leaves the previous files as they were. Removes stale
  // weights.npy / edge_types.npy (files or links) when the graph has none.
  Status Save(const std::string& dir) const;

  int64_t num_nodes() const { return static_cast<int64_t>(indptr_.size()) - 1; }
  int64_t num_edges() const { return static_cast<int64_t>(indices_.size()); }
  // Returns the number of incoming edges of `node`.
  int64_t degree(int64_t node) const { return indptr_[node + 1] - indptr_[node]; }

  const std::vector<int64_t>& indptr() const { return indptr_; }
  const std::vector<int64_t>& indices() const { return indices_; }
  bool has_weights() const { return weights_.has_value(); }
  // Returns the weights; valid only when has_weights().
  const std::vector<float>& weights() const { return *weights_; }
  // The weight table weighted sampling draws from (docs/sampling.md,
  // "Weight table"; kernels/weight_table.h), built once by Create when the
  // graph has weights, empty otherwise: per edge, its segment's alias
  // column; per node, the largest fanout it samples by rejection.
  const std::vector<uint64_t>& weight_alias() const { return weight_alias_; }
  const std::vector<int32_t>& rejection_fanouts() const { return rejection_fanouts_; }
  bool has_edge_types() const { return edge_types_.has_value(); }
  // Returns the edge types; valid only when has_edge_types().
  const std::vector<int32_t>& edge_types() const { return *edge_types_; }
  const CscStorage& storage() const { return storage_; }

 private:
  CscGraph() = default;

  std::vector<int64_t> indptr_;
  std::vector<int64_t> indices_;
  std::optional<std::vector<float>> weights_;
  std::optional<std::vector<int32_t>> edge_types_;
  std::vector<uint64_t> weight_alias_;  // on 2 MiB pages: read at random
  std::vector<int32_t> rejection_fanouts_;
  CscStorage storage_;
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_GRAPH_CSC_GRAPH_H_
