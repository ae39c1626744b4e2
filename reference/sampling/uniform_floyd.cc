// Implements the CPU's Floyd sampling (uniform_floyd.h): a node's draws'
// DrawBits first (eight or sixteen per Philox call, philox_avx2.h; in a
// UniformFloydBatch the draws of several nodes share the calls), then the
// same Floyd steps as kernels::sampling::FloydDraw, keeping the picks in a
// bitset (nodes of up to 256 edges) or a sorted array (larger ones), so they
// come out in ascending order without a sort.
#include "reference/sampling/uniform_floyd.h"

#include <immintrin.h>

#include <algorithm>
#include <cassert>

#include "reference/sampling/philox_avx2.h"

namespace faultline {
namespace {

namespace core = kernels::sampling;

// A draw's counter is (layer, tag | (node bits 32..55) << 8, node low 32,
// draw), as DrawBits builds it; these are its second and third words.
uint32_t DrawTagWord(uint32_t tag, int64_t node) {
  return tag | (static_cast<uint32_t>(static_cast<uint64_t>(node) >> 32) << 8);
}
uint32_t DrawNodeWord(int64_t node) { return static_cast<uint32_t>(static_cast<uint64_t>(node)); }

}  // namespace

void DrawBitsBlocksScalar(uint64_t rng_seed, uint32_t layer, uint32_t tag, int64_t node, int64_t first_draw, int blocks,
                          uint64_t* out) {
  for (int i = 0; i < blocks * kDrawBitsBlock; ++i) out[i] = core::DrawBits(rng_seed, layer, tag, node, first_draw + i);
}

void DrawBitsBlocks(uint64_t rng_seed, uint32_t layer, uint32_t tag, int64_t node, int64_t first_draw, int blocks,
                    uint64_t* out) {
  // The node's draws as the lanes of PackedDrawBits, a pair of blocks at a time.
  constexpr int kPairLanes = kMaxDrawBitsBlocks * kDrawBitsBlock;
  uint32_t tag_words[kPairLanes], node_words[kPairLanes], draws[kPairLanes];
  std::fill(tag_words, tag_words + kPairLanes, DrawTagWord(tag, node));
  std::fill(node_words, node_words + kPairLanes, DrawNodeWord(node));
  const int total = blocks * kDrawBitsBlock;
  for (int done = 0; done < total; done += kPairLanes) {
    for (int i = 0; i < kPairLanes; ++i) draws[i] = static_cast<uint32_t>(first_draw + done + i);
    PackedDrawBits(rng_seed, layer, tag_words, node_words, draws, std::min(kPairLanes, total - done), out + done);
  }
}

namespace {

// Nodes of up to kBitsetEdges edges keep the picked positions in a bitset:
// "drawn before?" is one bit test instead of a scan of the earlier draws,
// and reading the set bits in order gives the edges already sorted.
constexpr int64_t kBitsetEdges = 256;

// Floyd's k draws over [begin, begin + degree) with the draws' random values
// bits[0 .. k), the picks written in ascending order.
int64_t FloydWithBitset(int64_t k, int64_t begin, int64_t degree, const uint64_t* bits, int64_t* out_edges) {
  uint64_t picked[kBitsetEdges / 64] = {};
  for (int64_t i = 0; i < k; ++i) {
    int64_t at = core::FloydCandidate(degree, k, i, bits[i]);
    if ((picked[at >> 6] >> (at & 63)) & 1) at = degree - k + i;  // FloydDraw: drawn before, take j
    picked[at >> 6] |= uint64_t{1} << (at & 63);
  }
  int64_t written = 0;
  for (int64_t word = 0; word * 64 < degree; ++word) {
    for (uint64_t m = picked[word]; m != 0; m &= m - 1) out_edges[written++] = begin + word * 64 + __builtin_ctzll(m);
  }
  return written;
}

// Larger nodes keep the picks in ascending order as they are drawn, which
// gives the sorted output without a sort: a new pick is inserted in place,
// and a pick drawn before is replaced by j = degree - k + i, larger than
// every earlier pick (draw i' < i picks at most degree - k + i'), so it
// goes last.
// (GCC would turn the shift of the larger picks into a call to memmove, whose
// cost for a shift of a few elements is most of an insertion.)
#if defined(__GNUC__) && !defined(__clang__)
#define FL_NO_MEMMOVE_IDIOM __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define FL_NO_MEMMOVE_IDIOM
#endif
FL_NO_MEMMOVE_IDIOM int64_t FloydSorted(int64_t k, int64_t begin, int64_t degree, const uint64_t* bits,
                                        int64_t* out_edges) {
  for (int64_t i = 0; i < k; ++i) {
    const int64_t candidate = begin + core::FloydCandidate(degree, k, i, bits[i]);
    int64_t at = i;
    while (at > 0 && out_edges[at - 1] > candidate) --at;
    if (at > 0 && out_edges[at - 1] == candidate) {
      out_edges[i] = begin + degree - k + i;  // FloydDraw: drawn before, take j
      continue;
    }
    for (int64_t m = i; m > at; --m) out_edges[m] = out_edges[m - 1];
    out_edges[at] = candidate;
  }
  return k;
}

int64_t FloydOnBits(int64_t k, int64_t begin, int64_t degree, const uint64_t* bits, int64_t* out_edges) {
  if (degree <= kBitsetEdges) return FloydWithBitset(k, begin, degree, bits, out_edges);
  return FloydSorted(k, begin, degree, bits, out_edges);
}

__attribute__((target("avx2"))) inline __m256i LoadLanes(const uint32_t* words) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words));
}

// PackedDrawBits on AVX2, two blocks per Philox call where there are two.
__attribute__((target("avx2"))) void PackedDrawBitsAvx2(uint64_t rng_seed, uint32_t layer,
                                                        const uint32_t* tag_node_high, const uint32_t* node_low,
                                                        const uint32_t* draw, int lanes, uint64_t* out) {
  const __m256i c0 = _mm256_set1_epi32(static_cast<int>(layer));
  for (int lane = 0; lane < lanes; lane += 2 * kDrawBitsBlock) {
    const int next = lane + kDrawBitsBlock;
    const __m256i block[4] = {c0, LoadLanes(tag_node_high + lane), LoadLanes(node_low + lane), LoadLanes(draw + lane)};
    if (lanes > next) {
      const __m256i counters[2][4] = {
          {block[0], block[1], block[2], block[3]},
          {c0, LoadLanes(tag_node_high + next), LoadLanes(node_low + next), LoadLanes(draw + next)}};
      philox_avx2::RandomBitsBlocks<2>(rng_seed, counters, out + lane);
    } else {
      const __m256i counters[1][4] = {{block[0], block[1], block[2], block[3]}};
      philox_avx2::RandomBitsBlocks<1>(rng_seed, counters, out + lane);
    }
  }
}

}  // namespace

int64_t SampleUniformFloyd(const core::SamplingParams& p, int64_t node, int64_t* out_edges) {
  uint64_t bits[core::kMaxFloydFanout + kMaxDrawBitsBlocks * kDrawBitsBlock];
  const int blocks = static_cast<int>((p.fanout + kDrawBitsBlock - 1) / kDrawBitsBlock);
  DrawBitsBlocks(p.rng_seed, p.layer, core::kTagUniformPick, node, 0, blocks, bits);
  return FloydOnBits(p.fanout, p.indptr[node], p.indptr[node + 1] - p.indptr[node], bits, out_edges);
}

void PackedDrawBitsScalar(uint64_t rng_seed, uint32_t layer, const uint32_t* tag_node_high, const uint32_t* node_low,
                          const uint32_t* draw, int lanes, uint64_t* out) {
  for (int lane = 0; lane < lanes; ++lane) {
    out[lane] = core::RandomBits(rng_seed, layer, tag_node_high[lane], node_low[lane], draw[lane]);
  }
}

void PackedDrawBits(uint64_t rng_seed, uint32_t layer, const uint32_t* tag_node_high, const uint32_t* node_low,
                    const uint32_t* draw, int lanes, uint64_t* out) {
  if (philox_avx2::CpuHasAvx2()) {
    PackedDrawBitsAvx2(rng_seed, layer, tag_node_high, node_low, draw, lanes, out);
  } else {
    PackedDrawBitsScalar(rng_seed, layer, tag_node_high, node_low, draw, lanes, out);
  }
}

int PackedDraws::Add(uint32_t tag, int64_t node, int count) {
  assert(Fits(count) && "more draws than the queue holds");
  const int first = lanes_;
  const uint32_t high_tag = DrawTagWord(tag, node), low = DrawNodeWord(node);
  for (int i = 0; i < count; ++i) {
    tag_node_high_[first + i] = high_tag;
    node_low_[first + i] = low;
    draw_[first + i] = static_cast<uint32_t>(i);
  }
  lanes_ += count;
  return first;
}

void PackedDraws::Compute(uint64_t rng_seed, uint32_t layer) {
  // The lanes past the last draw, up to the end of the last pair of blocks,
  // are computed and not read: give them defined counters.
  for (int lane = lanes_; lane % kPairLanes != 0; ++lane) tag_node_high_[lane] = node_low_[lane] = draw_[lane] = 0;
  PackedDrawBits(rng_seed, layer, tag_node_high_, node_low_, draw_, lanes_, bits_);
}

void UniformFloydBatch::Add(int64_t node, int64_t begin, int64_t degree, int64_t* out_edges) {
  assert(begin == p_.indptr[node] && degree == p_.indptr[node + 1] - begin && "not the node's edges");
  const int k = static_cast<int>(p_.fanout);
  if (!draws_.Fits(k)) Flush();
  queued_[num_queued_++] = Queued{begin, degree, out_edges, draws_.Add(core::kTagUniformPick, node, k)};
}

void UniformFloydBatch::Flush() {
  if (num_queued_ == 0) return;
  draws_.Compute(p_.rng_seed, p_.layer);
  for (int q = 0; q < num_queued_; ++q) {
    const Queued& node = queued_[q];
    FloydOnBits(p_.fanout, node.begin, node.degree, draws_.bits() + node.first_lane, node.out_edges);
  }
  draws_.Clear();
  num_queued_ = 0;
}

}  // namespace faultline
