// Builds the weight table that weighted sampling without replacement draws
// from (docs/sampling.md, "Weight table"): per node, Walker's alias table of
// its segment's weights (one draw: one random column, one coin, one 8-byte
// read) and the largest fanout that node samples by rejection. The table is
// a pure function of the weights, built once on the host; every backend
// reads the same bits, so cpu, simcuda and cuda pick the same edges.
#ifndef FAULTLINE_KERNELS_WEIGHT_TABLE_H_
#define FAULTLINE_KERNELS_WEIGHT_TABLE_H_

#include <cstdint>
#include <vector>

namespace faultline {
namespace kernels {
namespace sampling {

struct WeightTable {
  // One per edge, column i = e - indptr[v] of e's segment:
  // (threshold << 32) | alias. A draw on column i keeps i when its 32-bit
  // coin is below threshold, else takes column alias (segment-local).
  std::vector<uint64_t> alias;
  // One per node: the largest fanout its seeds sample by rejection (0: none).
  std::vector<int32_t> rejection_fanouts;
};

// Fills alias[0, weights.size()) and rejection_fanouts[0, indptr.size() - 1)
// (the caller chooses the memory: the graph puts them on huge pages).
// Expects a valid CSC (indptr non-decreasing from 0, indptr.back() ==
// weights.size()) and finite weights >= 0, as CscGraph::Create checks.
// Throws std::bad_alloc when its scratch (12 bytes per edge of the largest
// segment a thread builds) does not fit. Up to `num_threads` threads build
// ranges of nodes, a million edges or more each, joined before it returns;
// the table does not depend on how many.
void BuildWeightTable(const std::vector<int64_t>& indptr, const std::vector<float>& weights, uint64_t* alias,
                      int32_t* rejection_fanouts, int num_threads = 1);

// The same into a new WeightTable.
WeightTable BuildWeightTable(const std::vector<int64_t>& indptr, const std::vector<float>& weights);

}  // namespace sampling
}  // namespace kernels
}  // namespace faultline

#endif  // FAULTLINE_KERNELS_WEIGHT_TABLE_H_
