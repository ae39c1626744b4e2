// The CPU's weighted top-k picks what SampleSeed picks, and its parts give
// the scalar values bit for bit: Random123's known answers, the 2^32 carry of
// the edge id, random inputs, weights that are zero, tiny, huge or tied.
#include "reference/sampling/weighted_top_k.h"

#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/sampling_core.h"
#include "reference/base/status_matchers.h"
#include "reference/graph/generators.h"

namespace faultline {
namespace {

namespace core = kernels::sampling;
using core::EdgeBits;

TEST(WeightedTopKTest, RunsOnAvx2WhereTheCpuHasIt) {
  // This project's machines have AVX2; without it only the scalar path would be tested.
  EXPECT_TRUE(WeightedTopKUsesAvx2()) << "the CPU has no AVX2: only the scalar path was tested";
}

// Weights for `graph`'s edges that stress the pre-filter: zeros (never
// picked), tiny and huge weights next to ordinary ones, and runs of ties.
std::vector<float> StressWeights(int64_t num_edges, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<float> weights(num_edges);
  for (float& w : weights) {
    switch (random() % 8) {
      case 0: w = 0.0f; break;
      case 1: w = 1e-30f; break;
      case 2: w = 1e30f; break;
      case 3: w = 1.0f; break;
      default: w = static_cast<float>((random() >> 11) * 0x1p-53) + 1e-6f;
    }
  }
  return weights;
}

TEST(WeightedTopKTest, PicksWhatSampleSeedPicksOnEveryNode) {
  Result<CscGraph> graph = GeneratePowerLaw(3000, 120000, 11, /*weighted=*/false);
  FL_ASSERT_OK(graph);
  int64_t compared = 0;
  for (uint64_t weight_seed : {1, 2}) {
    const std::vector<float> weights = StressWeights(static_cast<int64_t>(graph->indices().size()), weight_seed);
    for (int64_t fanout : {1, 3, 15, 100}) {
      core::SamplingParams p;
      p.indptr = graph->indptr().data();
      p.weights = weights.data();
      p.fanout = fanout;
      p.weighted = true;
      p.rng_seed = 0x5eed0000 + weight_seed;
      p.layer = static_cast<uint32_t>(fanout);
      std::vector<int64_t> fast(fanout), reference(fanout);
      std::vector<core::SampleKey> keys(fanout);
      for (int64_t node = 0; node < graph->num_nodes(); ++node) {
        const int64_t eligible = core::EligibleCount(p, node);
        ASSERT_EQ(CountPositiveWeights(weights.data() + p.indptr[node], p.indptr[node + 1] - p.indptr[node]), eligible)
            << "node " << node;
        if (!core::UsesWeightedTopK(p, node, eligible)) continue;
        ASSERT_EQ(SampleWeightedTopK(p, node, fast.data(), keys.data()), fanout);
        ASSERT_EQ(core::SampleSeed(p, node, reference.data(), keys.data()), fanout);
        ASSERT_EQ(fast, reference) << "node " << node << " fanout " << fanout << " weights " << weight_seed;
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 1000) << "too few nodes took the weighted top-k path to compare";
}

// Random123 tests/kat_vectors, "philox4x32 10" lines 1 and 3 (counter[4],
// key[2], result[4]): EdgeBits' counter is (layer, tag, edge low, edge high)
// and its key (seed low, seed high); its value is result[1] << 32 | result[0].
TEST(WeightedTopKTest, MatchesRandom123KnownAnswers) {
  uint64_t out[kEdgeBitsBlock];
  EdgeBitsBlock(0, 0, 0, 0, out);
  EXPECT_EQ(out[0], 0xe169c58d6627e8d5u);

  const int64_t edge = 0x0370734413198a2e;
  const int lane = 5;
  EdgeBitsBlock(0x299f31d0a4093822u, 0x243f6a88u, 0x85a308d3u, edge - lane, out);
  EXPECT_EQ(out[lane], 0x94fdccebd16cfe09u);
}

TEST(WeightedTopKTest, EqualsEdgeBitsAcrossTheCarryIntoTheHighWord) {
  uint64_t out[kEdgeBitsBlock];
  const int64_t first = (int64_t{1} << 32) - 3;  // lanes 3.. have a high word of 1
  EdgeBitsBlock(42, 2, core::kTagWeightedEdge, first, out);
  for (int i = 0; i < kEdgeBitsBlock; ++i) {
    EXPECT_EQ(out[i], EdgeBits(42, 2, core::kTagWeightedEdge, first + i)) << "lane " << i;
  }
}

TEST(WeightedTopKTest, EqualsTheScalarPathOnRandomInputs) {
  std::mt19937_64 random(7);
  for (int trial = 0; trial < 20000; ++trial) {
    const uint64_t seed = random();
    const uint32_t layer = static_cast<uint32_t>(random()), tag = static_cast<uint32_t>(random());
    const int64_t first = static_cast<int64_t>(random() >> (1 + trial % 40));  // small and large ids
    uint64_t block[kEdgeBitsBlock], scalar[kEdgeBitsBlock];
    EdgeBitsBlock(seed, layer, tag, first, block);
    EdgeBitsBlockScalar(seed, layer, tag, first, scalar);
    for (int i = 0; i < kEdgeBitsBlock; ++i) {
      ASSERT_EQ(block[i], scalar[i]) << "trial " << trial << " lane " << i << " seed " << seed << " layer " << layer
                                     << " tag " << tag << " first edge " << first;
    }
  }
}

// The count stops once it reaches `enough` (a hub sampled by rejection
// reads O(fanout) weights), and is the full count below it.
TEST(WeightedTopKTest, CountsPositiveWeightsUpToEnough) {
  std::vector<float> weights(1000, 0.0f);
  for (size_t i = 0; i < weights.size(); i += 3) weights[i] = 1.0f;  // 334 positive
  EXPECT_EQ(CountPositiveWeights(weights.data(), 1000), 334);
  EXPECT_EQ(CountPositiveWeightsUpTo(weights.data(), 1000, 335), 334);
  EXPECT_EQ(CountPositiveWeightsUpTo(weights.data(), 1000, 1000), 334);
  for (int64_t enough : {1, 2, 7, 16, 100, 334}) {
    for (int64_t n : {int64_t{5}, int64_t{33}, int64_t{1000}}) {
      const int64_t full = CountPositiveWeights(weights.data(), n);
      const int64_t capped = CountPositiveWeightsUpTo(weights.data(), n, enough);
      EXPECT_EQ(capped >= enough, full >= enough) << enough << " " << n;
      if (full < enough) {
        EXPECT_EQ(capped, full) << enough << " " << n;
      }
      EXPECT_LE(capped, full);
    }
  }
}

}  // namespace
}  // namespace faultline
