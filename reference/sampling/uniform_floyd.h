// The CPU's fast path for uniform sampling without replacement (Robert
// Floyd's algorithm, the mode of most GNN training): the fanout draws' Philox
// values eight or sixteen at a time with AVX2 where the CPU has it. It picks exactly
// the edges kernels::sampling::SampleSeed picks (the goldens and the
// device-vs-CPU tests compare them).
#ifndef FAULTLINE_REFERENCE_SAMPLING_UNIFORM_FLOYD_H_
#define FAULTLINE_REFERENCE_SAMPLING_UNIFORM_FLOYD_H_

#include <cstdint>

#include "kernels/sampling_core.h"

namespace faultline {

inline constexpr int kDrawBitsBlock = 8, kMaxDrawBitsBlocks = 2;

// SampleSeed(p, node, out_edges, ...) for a node where UsesFloyd(p,
// eligible) holds. Returns the number of edges written (p.fanout).
int64_t SampleUniformFloyd(const kernels::sampling::SamplingParams& p, int64_t node, int64_t* out_edges);

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

  void Add(int64_t node, int64_t* out_edges);
  void Flush();

 private:
  // Lanes queued at most: one node of the largest Floyd fanout fits.
  static constexpr int kLanes = static_cast<int>(kernels::sampling::kMaxFloydFanout);
  // Room past kLanes for the last pair of blocks.
  static constexpr int kSlack = kMaxDrawBitsBlocks * kDrawBitsBlock;

  struct Queued {
    int64_t begin, degree;  // the node's edges
    int64_t* out_edges;
    int first_lane;         // its first draw's lane
  };

  const kernels::sampling::SamplingParams& p_;
  // Philox counter words 1..3 (word 0 is the layer) of each queued draw.
  uint32_t node_high_tag_[kLanes + kSlack], node_low_[kLanes + kSlack], draw_[kLanes + kSlack];
  uint64_t bits_[kLanes + kSlack];
  Queued queued_[kLanes];
  int lanes_ = 0, num_queued_ = 0;
};

// out[i] = kernels::sampling::DrawBits(rng_seed, layer, tag, node,
// first_draw + i) for i in [0, blocks * kDrawBitsBlock), blocks >= 0 (the
// AVX2 path computes two blocks at once where it can, for little more than
// one: their rounds overlap). Expects 0 <= node < 2^56, 0 <= first_draw and
// first_draw + blocks * kDrawBitsBlock <= 2^32.
void DrawBitsBlocks(uint64_t rng_seed, uint32_t layer, uint32_t tag, int64_t node, int64_t first_draw, int blocks,
                    uint64_t* out);

// The same with one scalar Philox call per draw (the reference the AVX2
// path is tested against, and the path on CPUs without AVX2).
void DrawBitsBlocksScalar(uint64_t rng_seed, uint32_t layer, uint32_t tag, int64_t node, int64_t first_draw,
                          int blocks, uint64_t* out);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_SAMPLING_UNIFORM_FLOYD_H_
