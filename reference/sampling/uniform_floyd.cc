// Implements the CPU's Floyd sampling (uniform_floyd.h): DrawBits for eight
// or sixteen draws per Philox call (philox_avx2.h), then the same Floyd steps as
// kernels::sampling::FloydDraw, keeping the picks in a bitset (nodes of up to
// 256 edges) or a sorted array (larger ones), so they come out in ascending
// order without a sort.
#include "reference/sampling/uniform_floyd.h"

#include <immintrin.h>

#include <algorithm>

#include "reference/sampling/philox_avx2.h"

namespace faultline {
namespace {

namespace core = kernels::sampling;

// counter = (layer, tag | (node bits 32..55) << 8, node low 32, draw), as DrawBits.
template <int kBlocks>
__attribute__((target("avx2"))) void DrawBitsAvx2(uint64_t rng_seed, uint32_t layer, uint32_t tag, int64_t node,
                                                  int64_t first_draw, uint64_t* out) {
  const uint64_t id = static_cast<uint64_t>(node);
  const __m256i c0 = _mm256_set1_epi32(static_cast<int>(layer));
  const __m256i c1 = _mm256_set1_epi32(static_cast<int>(tag | (static_cast<uint32_t>(id >> 32) << 8)));
  const __m256i c2 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(id)));
  __m256i counters[kBlocks][4];
  for (int b = 0; b < kBlocks; ++b) {
    counters[b][0] = c0;
    counters[b][1] = c1;
    counters[b][2] = c2;
    counters[b][3] = philox_avx2::Consecutive(static_cast<uint32_t>(first_draw + b * kDrawBitsBlock));
  }
  philox_avx2::RandomBitsBlocks<kBlocks>(rng_seed, counters, out);
}

}  // namespace

void DrawBitsBlocksScalar(uint64_t rng_seed, uint32_t layer, uint32_t tag, int64_t node, int64_t first_draw,
                          int blocks, uint64_t* out) {
  for (int i = 0; i < blocks * kDrawBitsBlock; ++i) out[i] = core::DrawBits(rng_seed, layer, tag, node, first_draw + i);
}

void DrawBitsBlocks(uint64_t rng_seed, uint32_t layer, uint32_t tag, int64_t node, int64_t first_draw, int blocks,
                    uint64_t* out) {
  if (!philox_avx2::CpuHasAvx2()) {
    DrawBitsBlocksScalar(rng_seed, layer, tag, node, first_draw, blocks, out);
    return;
  }
  for (int done = 0; done < blocks; done += 2) {
    const int64_t first = first_draw + done * kDrawBitsBlock;
    if (blocks - done >= 2) {
      DrawBitsAvx2<2>(rng_seed, layer, tag, node, first, out + done * kDrawBitsBlock);
    } else {
      DrawBitsAvx2<1>(rng_seed, layer, tag, node, first, out + done * kDrawBitsBlock);
    }
  }
}

namespace {

// Calls draw(i, bits) for Floyd's draws i = 0 .. fanout - 1 with their
// random values, eight or sixteen per Philox call.
template <typename Draw>
void ForEachFloydDraw(const core::SamplingParams& p, int64_t node, const Draw& draw) {
  uint64_t bits[kMaxDrawBitsBlocks * kDrawBitsBlock];
  for (int64_t first = 0; first < p.fanout; first += kMaxDrawBitsBlocks * kDrawBitsBlock) {
    const int blocks = p.fanout - first > kDrawBitsBlock ? kMaxDrawBitsBlocks : 1;
    DrawBitsBlocks(p.rng_seed, p.layer, core::kTagUniformPick, node, first, blocks, bits);
    const int64_t last = std::min<int64_t>(first + blocks * kDrawBitsBlock, p.fanout);
    for (int64_t i = first; i < last; ++i) draw(i, bits[i - first]);
  }
}

// Nodes of up to kBitsetEdges edges keep the picked positions in a bitset:
// "drawn before?" is one bit test instead of a scan of the earlier draws,
// and reading the set bits in order gives the edges already sorted.
constexpr int64_t kBitsetEdges = 256;

int64_t FloydWithBitset(const core::SamplingParams& p, int64_t begin, int64_t degree, int64_t node,
                        int64_t* out_edges) {
  const int64_t k = p.fanout;
  uint64_t picked[kBitsetEdges / 64] = {};
  ForEachFloydDraw(p, node, [&](int64_t i, uint64_t bits) {
    int64_t at = core::FloydCandidate(degree, k, i, bits);
    if ((picked[at >> 6] >> (at & 63)) & 1) at = degree - k + i;  // FloydDraw: drawn before, take j
    picked[at >> 6] |= uint64_t{1} << (at & 63);
  });
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
int64_t FloydSorted(const core::SamplingParams& p, int64_t begin, int64_t degree, int64_t node, int64_t* out_edges) {
  const int64_t k = p.fanout;
  ForEachFloydDraw(p, node, [&](int64_t i, uint64_t bits) {
    const int64_t candidate = begin + core::FloydCandidate(degree, k, i, bits);
    int64_t at = i;
    while (at > 0 && out_edges[at - 1] > candidate) --at;
    if (at > 0 && out_edges[at - 1] == candidate) {
      out_edges[i] = begin + degree - k + i;  // FloydDraw: drawn before, take j
      return;
    }
    for (int64_t m = i; m > at; --m) out_edges[m] = out_edges[m - 1];
    out_edges[at] = candidate;
  });
  return k;
}

}  // namespace

int64_t SampleUniformFloyd(const core::SamplingParams& p, int64_t node, int64_t* out_edges) {
  const int64_t begin = p.indptr[node], degree = p.indptr[node + 1] - begin;
  if (degree <= kBitsetEdges) return FloydWithBitset(p, begin, degree, node, out_edges);
  return FloydSorted(p, begin, degree, node, out_edges);
}

}  // namespace faultline
