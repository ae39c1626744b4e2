// Implements the CPU's weighted top-k: Philox4x32-10 (Random123's round and
// key schedule) on eight counters at once, one per AVX2 32-bit lane, and a
// vector pre-filter that drops edges whose key certainly cannot enter the
// heap before the exact per-edge code (OfferWeightedEdge) sees them.
#include "reference/sampling/weighted_top_k.h"

#include <immintrin.h>

#include <algorithm>

namespace faultline {
namespace {

namespace core = kernels::sampling;

// The low and high 32 bits of a * m for eight 32-bit lanes.
__attribute__((target("avx2"))) inline void MulHiLo(__m256i a, __m256i m, __m256i* lo, __m256i* hi) {
  const __m256i even = _mm256_mul_epu32(a, m);                        // lanes 0, 2, 4, 6 as 64-bit products
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);  // lanes 1, 3, 5, 7
  *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xaa);
  *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xaa);
}

__attribute__((target("avx2"))) void EdgeBitsBlockAvx2(uint64_t rng_seed, uint32_t layer, uint32_t tag,
                                                        int64_t first_edge, uint64_t out[kEdgeBitsBlock]) {
  alignas(32) uint32_t edge_lo[kEdgeBitsBlock], edge_hi[kEdgeBitsBlock];
  for (int i = 0; i < kEdgeBitsBlock; ++i) {
    const uint64_t edge = static_cast<uint64_t>(first_edge) + static_cast<uint64_t>(i);
    edge_lo[i] = static_cast<uint32_t>(edge);
    edge_hi[i] = static_cast<uint32_t>(edge >> 32);
  }
  // counter = (layer, tag, edge low 32, edge high 32), as EdgeBits.
  __m256i c0 = _mm256_set1_epi32(static_cast<int>(layer));
  __m256i c1 = _mm256_set1_epi32(static_cast<int>(tag));
  __m256i c2 = _mm256_load_si256(reinterpret_cast<const __m256i*>(edge_lo));
  __m256i c3 = _mm256_load_si256(reinterpret_cast<const __m256i*>(edge_hi));
  uint32_t k0 = static_cast<uint32_t>(rng_seed), k1 = static_cast<uint32_t>(rng_seed >> 32);
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(PHILOX_M4x32_0));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(PHILOX_M4x32_1));
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += PHILOX_W32_0;
      k1 += PHILOX_W32_1;
    }
    __m256i lo0, hi0, lo1, hi1;
    MulHiLo(c0, m0, &lo0, &hi0);
    MulHiLo(c2, m1, &lo1, &hi1);
    const __m256i next0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32(static_cast<int>(k0)));
    const __m256i next2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32(static_cast<int>(k1)));
    c0 = next0;
    c1 = lo1;
    c2 = next2;
    c3 = lo0;
  }
  // value = (out[1] << 32) | out[0], lanes in edge order.
  const __m256i low_half = _mm256_unpacklo_epi32(c0, c1);   // values 0, 1, 4, 5
  const __m256i high_half = _mm256_unpackhi_epi32(c0, c1);  // values 2, 3, 6, 7
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_permute2x128_si256(low_half, high_half, 0x20));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 4), _mm256_permute2x128_si256(low_half, high_half, 0x31));
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
  for (int half = 0; half < 2; ++half) {
    const __m256i v = _mm256_srli_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bits + 4 * half)), 12);
    const __m256d v_real = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(v, magic)), two52);
    const __m256d one_minus_u = _mm256_sub_pd(one, _mm256_mul_pd(v_real, scale));
    const __m256d w = _mm256_cvtps_pd(_mm_loadu_ps(weights + 4 * half));
    const __m256d bound = _mm256_add_pd(_mm256_mul_pd(_mm256_mul_pd(worst, w), margin), slack);
    const __m256d keep = _mm256_andnot_pd(_mm256_cmp_pd(one_minus_u, bound, _CMP_GT_OQ),
                                          _mm256_cmp_pd(w, zero, _CMP_GT_OQ));
    lanes |= static_cast<uint32_t>(_mm256_movemask_pd(keep)) << (4 * half);
  }
  return lanes;
}

__attribute__((target("avx2"))) int64_t CountPositiveWeightsAvx2(const float* weights, int64_t n) {
  int64_t count = 0, i = 0;
  const __m256 zero = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    const __m256 positive = _mm256_cmp_ps(_mm256_loadu_ps(weights + i), zero, _CMP_GT_OQ);
    count += __builtin_popcount(static_cast<unsigned>(_mm256_movemask_ps(positive)));
  }
  for (; i < n; ++i) count += weights[i] > 0.0f ? 1 : 0;
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

bool WeightedTopKUsesAvx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
}

int64_t SampleWeightedTopK(const core::SamplingParams& p, int64_t node, int64_t* out_edges, core::SampleKey* keys) {
  return WeightedTopKUsesAvx2() ? SampleWeightedTopKAvx2(p, node, out_edges, keys)
                                : SampleWeightedTopKScalar(p, node, out_edges, keys);
}

int64_t CountPositiveWeights(const float* weights, int64_t n) {
  if (WeightedTopKUsesAvx2()) return CountPositiveWeightsAvx2(weights, n);
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) count += weights[i] > 0.0f ? 1 : 0;
  return count;
}

void EdgeBitsBlockScalar(uint64_t rng_seed, uint32_t layer, uint32_t tag, int64_t first_edge,
                         uint64_t out[kEdgeBitsBlock]) {
  for (int i = 0; i < kEdgeBitsBlock; ++i) out[i] = core::EdgeBits(rng_seed, layer, tag, first_edge + i);
}

void EdgeBitsBlock(uint64_t rng_seed, uint32_t layer, uint32_t tag, int64_t first_edge,
                   uint64_t out[kEdgeBitsBlock]) {
  if (WeightedTopKUsesAvx2()) {
    EdgeBitsBlockAvx2(rng_seed, layer, tag, first_edge, out);
  } else {
    EdgeBitsBlockScalar(rng_seed, layer, tag, first_edge, out);
  }
}

}  // namespace faultline
