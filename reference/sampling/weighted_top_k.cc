// Implements the CPU's weighted top-k: Philox4x32-10 on sixteen edges at
// once (two interleaved blocks, philox_avx2.h), and a vector pre-filter that drops edges whose key
// certainly cannot enter the heap before the exact per-edge code
// (OfferWeightedEdge) sees them.
#include "reference/sampling/weighted_top_k.h"

#include <immintrin.h>

#include <algorithm>

#include "reference/sampling/philox_avx2.h"

namespace faultline {
namespace {

namespace core = kernels::sampling;

__attribute__((target("avx2"))) void EdgeBitsBlockAvx2(uint64_t rng_seed, uint32_t layer, uint32_t tag,
                                                       int64_t first_edge, uint64_t out[kEdgeBitsBlock]) {
  alignas(32) uint32_t edge_lo[kEdgeBitsBlock], edge_hi[kEdgeBitsBlock];
  for (int i = 0; i < kEdgeBitsBlock; ++i) {
    const uint64_t edge = static_cast<uint64_t>(first_edge) + static_cast<uint64_t>(i);
    edge_lo[i] = static_cast<uint32_t>(edge);
    edge_hi[i] = static_cast<uint32_t>(edge >> 32);
  }
  // counter = (layer, tag, edge low 32, edge high 32), as EdgeBits.
  constexpr int kBlocks = kEdgeBitsBlock / 8;
  __m256i counters[kBlocks][4];
  for (int b = 0; b < kBlocks; ++b) {
    counters[b][0] = _mm256_set1_epi32(static_cast<int>(layer));
    counters[b][1] = _mm256_set1_epi32(static_cast<int>(tag));
    counters[b][2] = _mm256_load_si256(reinterpret_cast<const __m256i*>(edge_lo + 8 * b));
    counters[b][3] = _mm256_load_si256(reinterpret_cast<const __m256i*>(edge_hi + 8 * b));
  }
  philox_avx2::RandomBitsBlocks<kBlocks>(rng_seed, counters, out);
}

// The lanes (bit i for edge i of the block) worth offering to a full heap
// whose worst key is `worst_kept`: weight > 0 and not certainly out.
// WeightedKeyCannotEnter drops an edge when 1 - u > worst_kept * w *
// 1.000000001, u = ((bits >> 11) + 1) * 2^-53. Here 1 - u is approximated
// from bits >> 12 (exact as a double), which is at most 2^-52 + 2^-53
// above the exact value after rounding, so an edge is dropped only when the
// approximation exceeds the bound by 2^-50: then the exact test drops it too,
// with any later (smaller) worst_kept. Kept lanes get the exact test.
__attribute__((target("avx2"))) uint32_t CandidateLanes(const uint64_t bits[kEdgeBitsBlock],
                                                        const float weights[kEdgeBitsBlock], double worst_kept) {
  const __m256i magic = _mm256_set1_epi64x(0x4330000000000000);  // 2^52: v | magic is 2^52 + v for v < 2^52
  const __m256d two52 = _mm256_set1_pd(0x1p52), scale = _mm256_set1_pd(0x1p-52), one = _mm256_set1_pd(1.0);
  const __m256d worst = _mm256_set1_pd(worst_kept), margin = _mm256_set1_pd(1.000000001);
  const __m256d slack = _mm256_set1_pd(0x1p-50), zero = _mm256_setzero_pd();
  uint32_t lanes = 0;
  for (int quarter = 0; quarter < kEdgeBitsBlock / 4; ++quarter) {
    const __m256i v = _mm256_srli_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bits + 4 * quarter)), 12);
    const __m256d v_real = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(v, magic)), two52);
    const __m256d one_minus_u = _mm256_sub_pd(one, _mm256_mul_pd(v_real, scale));
    const __m256d w = _mm256_cvtps_pd(_mm_loadu_ps(weights + 4 * quarter));
    const __m256d bound = _mm256_add_pd(_mm256_mul_pd(_mm256_mul_pd(worst, w), margin), slack);
    const __m256d keep =
        _mm256_andnot_pd(_mm256_cmp_pd(one_minus_u, bound, _CMP_GT_OQ), _mm256_cmp_pd(w, zero, _CMP_GT_OQ));
    lanes |= static_cast<uint32_t>(_mm256_movemask_pd(keep)) << (4 * quarter);
  }
  return lanes;
}

__attribute__((target("avx2"))) int64_t CountPositiveWeightsAvx2(const float* weights, int64_t n, int64_t enough) {
  int64_t count = 0, i = 0;
  const __m256 zero = _mm256_setzero_ps();
  for (; i + 8 <= n && count < enough; i += 8) {
    const __m256 positive = _mm256_cmp_ps(_mm256_loadu_ps(weights + i), zero, _CMP_GT_OQ);
    count += __builtin_popcount(static_cast<unsigned>(_mm256_movemask_ps(positive)));
  }
  for (; i < n && count < enough; ++i) count += weights[i] > 0.0f ? 1 : 0;
  return count;
}

__attribute__((target("avx2"))) int64_t SampleWeightedTopKAvx2(const core::SamplingParams& p, int64_t node,
                                                               int64_t* out_edges, core::SampleKey* keys) {
  const int64_t begin = p.indptr[node], end = p.indptr[node + 1];
  int64_t size = 0;
  uint64_t bits[kEdgeBitsBlock];
  float tail_weights[kEdgeBitsBlock];
  for (int64_t block = begin; block < end; block += kEdgeBitsBlock) {
    EdgeBitsBlockAvx2(p.rng_seed, p.layer, core::kTagWeightedEdge, block, bits);
    const int64_t count = std::min<int64_t>(kEdgeBitsBlock, end - block);
    const float* weights = p.weights + block;
    if (count < kEdgeBitsBlock) {  // pad the last block with weight 0 (never offered)
      std::fill(tail_weights, tail_weights + kEdgeBitsBlock, 0.0f);
      std::copy(weights, weights + count, tail_weights);
      weights = tail_weights;
    }
    // Until the heap is full every positive edge enters: worst_kept +inf keeps them all.
    uint32_t lanes = CandidateLanes(bits, weights, size == p.fanout ? keys[0].real : __builtin_inf());
    while (lanes != 0) {
      const int lane = __builtin_ctz(lanes);
      lanes &= lanes - 1;
      core::OfferWeightedEdge(p, block + lane, bits[lane], keys, out_edges, &size);
    }
  }
  core::SortEdgeIds(out_edges, size);
  return size;
}

int64_t SampleWeightedTopKScalar(const core::SamplingParams& p, int64_t node, int64_t* out_edges,
                                 core::SampleKey* keys) {
  const int64_t begin = p.indptr[node], end = p.indptr[node + 1];
  int64_t size = 0;
  for (int64_t e = begin; e < end; ++e) {
    if (p.weights[e] > 0.0f) {
      core::OfferWeightedEdge(p, e, core::EdgeBits(p.rng_seed, p.layer, core::kTagWeightedEdge, e), keys, out_edges,
                              &size);
    }
  }
  core::SortEdgeIds(out_edges, size);
  return size;
}

}  // namespace

bool WeightedTopKUsesAvx2() { return philox_avx2::CpuHasAvx2(); }

int64_t SampleWeightedTopK(const core::SamplingParams& p, int64_t node, int64_t* out_edges, core::SampleKey* keys) {
  return WeightedTopKUsesAvx2() ? SampleWeightedTopKAvx2(p, node, out_edges, keys)
                                : SampleWeightedTopKScalar(p, node, out_edges, keys);
}

int64_t CountPositiveWeights(const float* weights, int64_t n) { return CountPositiveWeightsUpTo(weights, n, n + 1); }

int64_t CountPositiveWeightsUpTo(const float* weights, int64_t n, int64_t enough) {
  if (WeightedTopKUsesAvx2()) return CountPositiveWeightsAvx2(weights, n, enough);
  int64_t count = 0;
  for (int64_t i = 0; i < n && count < enough; ++i) count += weights[i] > 0.0f ? 1 : 0;
  return count;
}

void EdgeBitsBlockScalar(uint64_t rng_seed, uint32_t layer, uint32_t tag, int64_t first_edge,
                         uint64_t out[kEdgeBitsBlock]) {
  for (int i = 0; i < kEdgeBitsBlock; ++i) out[i] = core::EdgeBits(rng_seed, layer, tag, first_edge + i);
}

void EdgeBitsBlock(uint64_t rng_seed, uint32_t layer, uint32_t tag, int64_t first_edge, uint64_t out[kEdgeBitsBlock]) {
  if (WeightedTopKUsesAvx2()) {
    EdgeBitsBlockAvx2(rng_seed, layer, tag, first_edge, out);
  } else {
    EdgeBitsBlockScalar(rng_seed, layer, tag, first_edge, out);
  }
}

}  // namespace faultline
