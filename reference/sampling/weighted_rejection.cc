// Implements WeightedRejectionBatch (weighted_rejection.h).
#include "reference/sampling/weighted_rejection.h"

namespace faultline {

namespace core = kernels::sampling;

void WeightedRejectionBatch::Add(int64_t node, int64_t begin, int64_t degree, int64_t* out_edges) {
  assert(begin == p_.indptr[node] && degree == p_.indptr[node + 1] - begin && "not the node's edges");
  const int k = static_cast<int>(p_.fanout);
  if (!draws_.Fits(k)) Flush();
  queued_[num_queued_++] = Queued{node, begin, degree, out_edges, draws_.Add(core::kTagWeightedPick, node, k)};
}

void WeightedRejectionBatch::Flush() {
  if (num_queued_ == 0) return;
  draws_.Compute(p_.rng_seed, p_.layer);
  for (int q = 0; q < num_queued_; ++q) {
    const Queued& node = queued_[q];
    for (int i = 0; i < p_.fanout; ++i) {
      const uint64_t column = core::MulHi64(draws_.bits()[node.first_lane + i], static_cast<uint64_t>(node.degree));
      __builtin_prefetch(p_.weight_alias + node.begin + static_cast<int64_t>(column));
    }
  }
  for (int q = 0; q < num_queued_; ++q) Pick(queued_[q]);
  draws_.Clear();
  num_queued_ = 0;
}

void WeightedRejectionBatch::Pick(const Queued& node) const {
  int64_t* out = node.out_edges;
  int64_t picked = 0;
  auto offer = [&](uint64_t bits) {
    core::KeepIfNew(core::WeightedAliasDraw(p_.weight_alias, node.begin, node.degree, bits), out, &picked);
  };
  for (int i = 0; i < p_.fanout; ++i) offer(draws_.bits()[node.first_lane + i]);
  for (int64_t j = p_.fanout; picked < p_.fanout; ++j) {
    offer(core::DrawBits(p_.rng_seed, p_.layer, core::kTagWeightedPick, node.node, j));
  }
  core::SortEdgeIds(out, picked);
}

}  // namespace faultline
