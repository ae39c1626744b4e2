// Philox4x32-10 (Random123's rounds and key schedule) on blocks of eight
// counters at once, one per AVX2 32-bit lane: the CPU's batched form of
// kernels::sampling::RandomBits. Only for .cc files that check for AVX2 at
// run time before calling (every function here is compiled for AVX2).
#ifndef FAULTLINE_REFERENCE_SAMPLING_PHILOX_AVX2_H_
#define FAULTLINE_REFERENCE_SAMPLING_PHILOX_AVX2_H_

#include <immintrin.h>

#include <cstdint>

#include "kernels/sampling_core.h"

namespace faultline {
namespace philox_avx2 {

// Whether this CPU has AVX2 (checked once): callers take their scalar path if not.
inline bool CpuHasAvx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
}

// For each block b of kBlocks: out[8 * b + i] = RandomBits(rng_seed,
// c[b][0][i], c[b][1][i], c[b][2][i], c[b][3][i]) for its eight lanes i:
// counter (c0, c1, c2, c3), key (seed low 32, seed high 32), value
// (result[1] << 32) | result[0].
//
// The rounds run on the even lanes and the odd lanes apart, each word a
// 32-bit value in the low half of a 64-bit lane: one _mm256_mul_epu32 then
// gives a word's whole product (lo in the low half, hi >> 32), with no
// shuffling back into 32-bit lanes per round. The high halves carry junk
// that nothing reads (the multiply reads low halves only; the output masks).
// The 2 * kBlocks halves are independent chains of ten rounds, interleaved
// so that the core overlaps their latencies.
template <int kBlocks>
__attribute__((target("avx2"))) inline void RandomBitsBlocks(uint64_t rng_seed, const __m256i (&c)[kBlocks][4],
                                                             uint64_t out[8 * kBlocks]) {
  const __m256i m0 = _mm256_set1_epi64x(PHILOX_M4x32_0);
  const __m256i m1 = _mm256_set1_epi64x(PHILOX_M4x32_1);
  __m256i word[2 * kBlocks][4];
#pragma GCC unroll 4
  for (int b = 0; b < kBlocks; ++b) {
#pragma GCC unroll 4
    for (int w = 0; w < 4; ++w) {
      word[2 * b][w] = c[b][w];                             // even lanes: the low halves as they are
      word[2 * b + 1][w] = _mm256_srli_epi64(c[b][w], 32);  // odd lanes
    }
  }
  uint32_t k0 = static_cast<uint32_t>(rng_seed), k1 = static_cast<uint32_t>(rng_seed >> 32);
#pragma GCC unroll 10
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += PHILOX_W32_0;
      k1 += PHILOX_W32_1;
    }
    const __m256i key0 = _mm256_set1_epi64x(k0), key1 = _mm256_set1_epi64x(k1);
#pragma GCC unroll 8
    for (int half = 0; half < 2 * kBlocks; ++half) {
      __m256i* w = word[half];
      const __m256i product0 = _mm256_mul_epu32(w[0], m0), product1 = _mm256_mul_epu32(w[2], m1);
      const __m256i next0 = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(product1, 32), w[1]), key0);
      const __m256i next2 = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(product0, 32), w[3]), key1);
      w[0] = next0;
      w[1] = product1;  // lo in the low half
      w[2] = next2;
      w[3] = product0;
    }
  }
  // A counter's value = word 1 << 32 | word 0 (low halves); even holds
  // counters 0, 2, 4, 6 of the block and odd 1, 3, 5, 7.
  const __m256i low = _mm256_set1_epi64x(0xffffffff);
#pragma GCC unroll 4
  for (int b = 0; b < kBlocks; ++b) {
    const __m256i* even_words = word[2 * b];
    const __m256i* odd_words = word[2 * b + 1];
    const __m256i even = _mm256_or_si256(_mm256_and_si256(even_words[0], low), _mm256_slli_epi64(even_words[1], 32));
    const __m256i odd = _mm256_or_si256(_mm256_and_si256(odd_words[0], low), _mm256_slli_epi64(odd_words[1], 32));
    const __m256i first = _mm256_unpacklo_epi64(even, odd);   // counters 0, 1, 4, 5
    const __m256i second = _mm256_unpackhi_epi64(even, odd);  // counters 2, 3, 6, 7
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8 * b), _mm256_permute2x128_si256(first, second, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8 * b + 4), _mm256_permute2x128_si256(first, second, 0x31));
  }
}

}  // namespace philox_avx2
}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_SAMPLING_PHILOX_AVX2_H_
