// The CPU's fast path for uniform sampling without replacement (Robert
// Floyd's algorithm, the mode of most GNN training): the fanout draws' Philox
// values eight or sixteen at a time with AVX2 where the CPU has it. It picks exactly
// the edges kernels::sampling::SampleSeed picks (the goldens and the
// device-vs-CPU tests compare them).
#ifndef FAULTLINE_REFERENCE_SAMPLING_UNIFORM_FLOYD_H_
#define FAULTLINE_REFERENCE_SAMPLING_UNIFORM_FLOYD_H_

#include <cassert>
#include <cstdint>
#include <exception>

#include "kernels/sampling_core.h"

namespace faultline {

inline constexpr int kDrawBitsBlock = 8, kMaxDrawBitsBlocks = 2;

// SampleSeed(p, node, out_edges, ...) for a node where UsesFloyd(p,
// eligible) holds. Returns the number of edges written (p.fanout).
int64_t SampleUniformFloyd(const kernels::sampling::SamplingParams& p, int64_t node, int64_t* out_edges);

// out[i] = kernels::sampling::RandomBits(rng_seed, layer, tag_node_high[i],
// node_low[i], draw[i]) for i in [0, lanes): each lane its own counter
// (Philox blocks shared by the draws of several nodes). The AVX2 path
// computes whole pairs of blocks, so the arrays must have `lanes` rounded up
// to a multiple of kMaxDrawBitsBlocks * kDrawBitsBlock entries, all defined.
void PackedDrawBits(uint64_t rng_seed, uint32_t layer, const uint32_t* tag_node_high, const uint32_t* node_low,
                    const uint32_t* draw, int lanes, uint64_t* out);
// The same with one scalar Philox call per lane (what PackedDrawBits is
// tested against, and its path on CPUs without AVX2).
void PackedDrawBitsScalar(uint64_t rng_seed, uint32_t layer, const uint32_t* tag_node_high, const uint32_t* node_low,
                          const uint32_t* draw, int lanes, uint64_t* out);

// The first draws of a stream of nodes, queued as the lanes of
// PackedDrawBits (each lane its own counter) and computed together: what
// UniformFloydBatch and WeightedRejectionBatch share. Holds up to kMaxLanes.
class PackedDraws {
 public:
  static constexpr int kMaxLanes = 256;

  // Whether `count` more draws fit.
  bool Fits(int count) const { return lanes_ + count <= kMaxLanes; }
  // Queues draws 0 .. count - 1 of `node` under `tag` (DrawBits' counter);
  // returns the lane of its first draw. Expects Fits(count).
  int Add(uint32_t tag, int64_t node, int count);
  // Computes every queued lane's DrawBits value: bits()[lane].
  void Compute(uint64_t rng_seed, uint32_t layer);
  const uint64_t* bits() const { return bits_; }
  void Clear() { lanes_ = 0; }

 private:
  // PackedDrawBits' lanes: kMaxLanes rounded up to whole pairs of blocks.
  static constexpr int kPairLanes = kMaxDrawBitsBlocks * kDrawBitsBlock;
  static constexpr int kRoundedLanes = (kMaxLanes + kPairLanes - 1) / kPairLanes * kPairLanes;

  // Philox counter words 1..3 (word 0 is the layer) of each queued draw.
  uint32_t tag_node_high_[kRoundedLanes], node_low_[kRoundedLanes], draw_[kRoundedLanes];
  uint64_t bits_[kRoundedLanes];
  int lanes_ = 0;
};

// SampleUniformFloyd for a stream of nodes, with the draws of consecutive
// nodes packed into the same Philox blocks of kDrawBitsBlock lanes: at
// fanout 5, eight nodes take five blocks instead of eight, and the blocks
// are computed two at a time. Add queues a node (UsesFloyd must hold for
// it); its picks are in out_edges once Flush has returned, which Add also
// calls when the queue is full, so out_edges must stay valid until the
// next Flush. The picks are SampleUniformFloyd's, bit for bit.
class UniformFloydBatch {
 public:
  explicit UniformFloydBatch(const kernels::sampling::SamplingParams& p) : p_(p) {}
  UniformFloydBatch(const UniformFloydBatch&) = delete;
  UniformFloydBatch& operator=(const UniformFloydBatch&) = delete;
  // Unflushed seeds are a caller's bug, except while an exception (a failed
  // allocation of the chunk) unwinds past the batch: their picks are dropped.
  ~UniformFloydBatch() {
    assert((num_queued_ == 0 || std::uncaught_exceptions() > 0) && "queued Floyd seeds were never flushed");
  }
  static_assert(kernels::sampling::kMaxFloydFanout <= PackedDraws::kMaxLanes, "one node's draws must fit");

  // Queues `node`, whose edges are [begin, begin + degree) (the caller has
  // read them from indptr already: a second read cost ~6 %).
  void Add(int64_t node, int64_t begin, int64_t degree, int64_t* out_edges);
  void Flush();

 private:
  struct Queued {
    int64_t begin, degree;  // the node's edges
    int64_t* out_edges;
    int first_lane;  // its first draw's lane
  };

  const kernels::sampling::SamplingParams p_;  // a copy: the caller's may change or go
  PackedDraws draws_;
  Queued queued_[PackedDraws::kMaxLanes];
  int num_queued_ = 0;
};

// out[i] = kernels::sampling::DrawBits(rng_seed, layer, tag, node,
// first_draw + i) for i in [0, blocks * kDrawBitsBlock), blocks >= 0 (the
// AVX2 path computes two blocks at once where it can, for little more than
// one: their rounds overlap). Expects 0 <= node < 2^56, 0 <= first_draw and
// first_draw + blocks * kDrawBitsBlock <= 2^32.
void DrawBitsBlocks(uint64_t rng_seed, uint32_t layer, uint32_t tag, int64_t node, int64_t first_draw, int blocks,
                    uint64_t* out);

// The same with one scalar Philox call per draw, DrawBits itself (the
// reference DrawBitsBlocks is tested against).
void DrawBitsBlocksScalar(uint64_t rng_seed, uint32_t layer, uint32_t tag, int64_t node, int64_t first_draw, int blocks,
                          uint64_t* out);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_SAMPLING_UNIFORM_FLOYD_H_
