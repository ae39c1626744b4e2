// Implements WeightedRejectionBatch (weighted_rejection.h).
#include "reference/sampling/weighted_rejection.h"

namespace faultline {

namespace core = kernels::sampling;

void WeightedRejectionBatch::Add(int64_t node, int64_t begin, int64_t degree, int64_t* out_edges) {
  assert(begin == p_.indptr[node] && degree == p_.indptr[node + 1] - begin && "not the node's edges");
  const int k = static_cast<int>(p_.fanout);
  if (lanes_ + k > kLanes) Flush();
  // DrawBits' counter words 1..3 for draws 0 .. k - 1 of the node.
  const uint64_t id = static_cast<uint64_t>(node);
  const uint32_t high_tag = core::kTagWeightedPick | (static_cast<uint32_t>(id >> 32) << 8);
  for (int i = 0; i < k; ++i) {
    tag_node_high_[lanes_ + i] = high_tag;
    node_low_[lanes_ + i] = static_cast<uint32_t>(id);
    draw_[lanes_ + i] = static_cast<uint32_t>(i);
  }
  queued_[num_queued_++] = Queued{node, begin, degree, out_edges, lanes_};
  lanes_ += k;
}

void WeightedRejectionBatch::Flush() {
  if (num_queued_ == 0) return;
  // Lanes past the last draw, up to the end of its pair of blocks, are
  // computed and not read: give them defined counters.
  for (int lane = lanes_; lane % kPairLanes != 0; ++lane) tag_node_high_[lane] = node_low_[lane] = draw_[lane] = 0;
  PackedDrawBits(p_.rng_seed, p_.layer, tag_node_high_, node_low_, draw_, lanes_, bits_);
  for (int q = 0; q < num_queued_; ++q) {
    const Queued& node = queued_[q];
    for (int i = 0; i < p_.fanout; ++i) {
      const uint64_t column = core::MulHi64(bits_[node.first_lane + i], static_cast<uint64_t>(node.degree));
      __builtin_prefetch(p_.weight_alias + node.begin + static_cast<int64_t>(column));
    }
  }
  for (int q = 0; q < num_queued_; ++q) Pick(queued_[q]);
  lanes_ = 0;
  num_queued_ = 0;
}

void WeightedRejectionBatch::Pick(const Queued& node) const {
  int64_t* out = node.out_edges;
  int64_t picked = 0;
  auto offer = [&](uint64_t bits) {
    const int64_t e = core::WeightedAliasDraw(p_.weight_alias, node.begin, node.degree, bits);
    bool taken = false;
    for (int64_t m = 0; m < picked && !taken; ++m) taken = out[m] == e;
    if (!taken) out[picked++] = e;
  };
  for (int i = 0; i < p_.fanout; ++i) offer(bits_[node.first_lane + i]);
  for (int64_t j = p_.fanout; picked < p_.fanout; ++j) {
    offer(core::DrawBits(p_.rng_seed, p_.layer, core::kTagWeightedPick, node.node, j));
  }
  core::SortEdgeIds(out, picked);
}

}  // namespace faultline
