// Philox4x32-10 (Random123's rounds and key schedule) on eight counters at
// once, one per AVX2 32-bit lane: the CPU's batched form of
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

// The low and high 32 bits of a * m for eight 32-bit lanes.
__attribute__((target("avx2"))) inline void MulHiLo(__m256i a, __m256i m, __m256i* lo, __m256i* hi) {
  const __m256i even = _mm256_mul_epu32(a, m);                        // lanes 0, 2, 4, 6 as 64-bit products
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);  // lanes 1, 3, 5, 7
  *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xaa);
  *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xaa);
}

// out[i] = RandomBits(rng_seed, c0[i], c1[i], c2[i], c3[i]) for the eight
// lanes i: counter (c0, c1, c2, c3), key (seed low 32, seed high 32),
// value (result[1] << 32) | result[0].
__attribute__((target("avx2"))) inline void RandomBitsLanes(uint64_t rng_seed, __m256i c0, __m256i c1, __m256i c2,
                                                            __m256i c3, uint64_t out[8]) {
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
  const __m256i low_half = _mm256_unpacklo_epi32(c0, c1);   // values 0, 1, 4, 5
  const __m256i high_half = _mm256_unpackhi_epi32(c0, c1);  // values 2, 3, 6, 7
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_permute2x128_si256(low_half, high_half, 0x20));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 4), _mm256_permute2x128_si256(low_half, high_half, 0x31));
}

// Eight consecutive 32-bit values first, first + 1, ... (wrapping).
__attribute__((target("avx2"))) inline __m256i Consecutive(uint32_t first) {
  return _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(first)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

}  // namespace philox_avx2
}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_SAMPLING_PHILOX_AVX2_H_
