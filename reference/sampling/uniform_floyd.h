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
