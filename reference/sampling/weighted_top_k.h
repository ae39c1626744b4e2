// The CPU's fast path for weighted sampling without replacement, the one
// mode that needs a Philox value for every edge of a seed (hubs have
// thousands): sixteen edges at a time with AVX2 where the CPU has it. It picks
// exactly the edges kernels::sampling::SampleSeed picks (the goldens and the
// device-vs-CPU tests compare them); only the order of the arithmetic for
// edges that certainly cannot be picked differs.
#ifndef FAULTLINE_REFERENCE_SAMPLING_WEIGHTED_TOP_K_H_
#define FAULTLINE_REFERENCE_SAMPLING_WEIGHTED_TOP_K_H_

#include <cstdint>

#include "kernels/sampling_core.h"

namespace faultline {

inline constexpr int kEdgeBitsBlock = 16;  // two Philox blocks of eight lanes, whose rounds overlap

// SampleSeed(p, node, out_edges, keys) for a node where
// UsesWeightedTopK(p, node, eligible) holds; `keys` has room for p.fanout entries.
// Returns the number of edges written (p.fanout).
int64_t SampleWeightedTopK(const kernels::sampling::SamplingParams& p, int64_t node, int64_t* out_edges,
                           kernels::sampling::SampleKey* keys);

// EligibleCount for weighted sampling: how many of weights[0, n) are > 0.
int64_t CountPositiveWeights(const float* weights, int64_t n);

// The same, but it may stop once the count reaches `enough`: returns the
// full count when it is below `enough`, else some value >= enough.
int64_t CountPositiveWeightsUpTo(const float* weights, int64_t n, int64_t enough);

// out[i] = kernels::sampling::EdgeBits(rng_seed, layer, tag, first_edge + i)
// for i in [0, kEdgeBitsBlock). Expects first_edge >= 0.
void EdgeBitsBlock(uint64_t rng_seed, uint32_t layer, uint32_t tag, int64_t first_edge, uint64_t out[kEdgeBitsBlock]);

// The same with one scalar Philox call per edge (the reference the AVX2
// path is tested against, and the path on CPUs without AVX2).
void EdgeBitsBlockScalar(uint64_t rng_seed, uint32_t layer, uint32_t tag, int64_t first_edge,
                         uint64_t out[kEdgeBitsBlock]);

// Whether this CPU runs the AVX2 paths.
bool WeightedTopKUsesAvx2();

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_SAMPLING_WEIGHTED_TOP_K_H_
