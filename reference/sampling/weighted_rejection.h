// The CPU's fast path for weighted sampling without replacement by
// rejection (kernels::sampling::SampleWeightedRejection): the first fanout
// draws of consecutive seeds share AVX2 Philox blocks (PackedDrawBits), and
// every queued draw's alias column is fetched before any is read, so that a
// whole batch's cache misses overlap. It picks exactly the edges
// kernels::sampling::SampleSeed picks.
#ifndef FAULTLINE_REFERENCE_SAMPLING_WEIGHTED_REJECTION_H_
#define FAULTLINE_REFERENCE_SAMPLING_WEIGHTED_REJECTION_H_

#include <cassert>
#include <cstdint>
#include <exception>

#include "kernels/sampling_core.h"
#include "reference/sampling/uniform_floyd.h"

namespace faultline {

// Add queues a node where UsesWeightedRejection(p, node) holds; its picks
// are in out_edges (p.fanout of them, ascending) once Flush has returned,
// which Add also calls when the queue is full, so out_edges must stay valid
// until the next Flush.
class WeightedRejectionBatch {
 public:
  explicit WeightedRejectionBatch(const kernels::sampling::SamplingParams& p) : p_(p) {}
  WeightedRejectionBatch(const WeightedRejectionBatch&) = delete;
  WeightedRejectionBatch& operator=(const WeightedRejectionBatch&) = delete;
  // Unflushed seeds are a caller's bug, except while an exception (a failed
  // allocation of the chunk) unwinds past the batch: their picks are dropped.
  ~WeightedRejectionBatch() {
    assert((num_queued_ == 0 || std::uncaught_exceptions() > 0) && "queued rejection seeds were never flushed");
  }
  static_assert(kernels::sampling::kMaxRejectionFanout <= PackedDraws::kMaxLanes, "one node's draws must fit");

  // Queues `node`, whose edges are [begin, begin + degree).
  void Add(int64_t node, int64_t begin, int64_t degree, int64_t* out_edges);
  void Flush();

 private:
  struct Queued {
    int64_t node, begin, degree;
    int64_t* out_edges;
    int first_lane;  // its first draw's lane
  };
  // The node's picks from its first fanout draws' bits, then (for each
  // repeat) further draws one at a time, as SampleWeightedRejection takes them.
  void Pick(const Queued& node) const;

  const kernels::sampling::SamplingParams p_;  // a copy: the caller's may change or go
  PackedDraws draws_;
  Queued queued_[PackedDraws::kMaxLanes];
  int num_queued_ = 0;
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_SAMPLING_WEIGHTED_REJECTION_H_
