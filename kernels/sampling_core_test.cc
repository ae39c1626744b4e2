// Tests the building blocks of the shared sampling routine: Philox known
// answers, the deterministic logarithm, 64-bit multiply-high, the heap top-k
// and the per-seed counts.
#include "kernels/sampling_core.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/weight_table.h"

namespace faultline {
namespace kernels {
namespace sampling {
namespace {

TEST(SamplingCoreTest, PhiloxMatchesRandom123KnownAnswers) {
  // Known-answer vectors of Philox4x32-10 from the Random123 distribution.
  EXPECT_EQ(RandomBits(0, 0, 0, 0, 0), 0xe169c58d6627e8d5ULL);
  EXPECT_EQ(RandomBits(0x299f31d0a4093822ULL, 0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u),
            0x94fdccebd16cfe09ULL);
}

TEST(SamplingCoreTest, KeysArePinned) {
  // The counter layouts of docs/sampling.md, with its tag numbers written
  // out (not the code's constants): any change here changes every sample.
  EXPECT_EQ(UniformEdgeKey(42, 0, 0), RandomBits(42, 0, 1, 0, 0));
  EXPECT_EQ(UniformEdgeKey(42, 3, (int64_t{5} << 32) | 9), RandomBits(42, 3, 1, 9, 5));
  for (uint32_t tag : {3u, 4u, 5u}) {  // uniform draw, weighted draw, Floyd draw
    EXPECT_EQ(DrawBits(42, 1, tag, (int64_t{7} << 32) | 11, 4), RandomBits(42, 1, tag | (7u << 8), 11, 4));
  }
  EXPECT_EQ(kTagUniformEdge, 1u);
  EXPECT_EQ(kTagWeightedEdge, 2u);
  EXPECT_EQ(kTagUniformDraw, 3u);
  EXPECT_EQ(kTagWeightedDraw, 4u);
  EXPECT_EQ(kTagUniformPick, 5u);
  EXPECT_EQ(kTagShuffle, 16u);  // the loader's item shuffle
  const uint64_t bits = RandomBits(7, 2, 2, 13, 0);
  EXPECT_DOUBLE_EQ(WeightedEdgeKey(7, 2, 13, 2.0f), -std::log(((bits >> 11) + 1) * 0x1p-53) / 2.0);
}

TEST(SamplingCoreTest, MulHi64AndItsDeviceFormMatchA128BitProduct) {
  std::mt19937_64 rng(1);
  std::vector<uint64_t> values = {0, 1, 2, ~0ULL, ~0ULL - 1, 1ULL << 32, (1ULL << 32) - 1, 1ULL << 63};
  for (int i = 0; i < 1000; ++i) values.push_back(rng());
  for (uint64_t a : values) {
    for (uint64_t b : std::vector<uint64_t>{1, 3, 1000003, ~0ULL, rng()}) {
      const unsigned __int128 product = static_cast<unsigned __int128>(a) * b;
      ASSERT_EQ(MulHi64(a, b), static_cast<uint64_t>(product >> 64)) << a << " * " << b;
      ASSERT_EQ(MulHi64Portable(a, b), static_cast<uint64_t>(product >> 64)) << a << " * " << b;
    }
  }
}

TEST(SamplingCoreTest, NegLogUnitIsWithinTwoUlpsOfLibm) {
  std::mt19937_64 rng(2);
  std::vector<uint64_t> values = {1, 2, 3, 1ULL << 52, (1ULL << 53) - 1, 1ULL << 53};
  for (int shift = 0; shift <= 53; ++shift) {
    values.push_back(1ULL << shift);
    values.push_back(static_cast<uint64_t>(std::ldexp(std::sqrt(2.0), shift)));  // near the sqrt(2) switch
    values.push_back(static_cast<uint64_t>(std::ldexp(std::sqrt(2.0), shift)) + 1);
  }
  for (int i = 0; i < 100000; ++i) values.push_back((rng() >> 11) + 1);
  for (uint64_t n : values) {
    if (n == 0 || n > (1ULL << 53)) continue;
    const double expected = -std::log(static_cast<double>(n) * 0x1p-53);
    const double got = NegLogUnit(n);
    ASSERT_NEAR(got, expected, 4.5e-16 * std::max(1.0, expected)) << "n=" << n;
  }
  EXPECT_EQ(NegLogUnit(1ULL << 53), 0.0);
  // u = 1 gives key +0 (docs/sampling.md), not -0: a key's sign bit is part
  // of what a re-implementation must reproduce.
  EXPECT_FALSE(std::signbit(NegLogUnit(1ULL << 53)));
  EXPECT_FALSE(std::signbit(WeightedKeyFromBits(~0ULL, 2.0f)));  // (bits >> 11) + 1 = 2^53
  EXPECT_EQ(WeightedKeyFromBits(~0ULL, 2.0f), 0.0);
}

TEST(SamplingCoreTest, SortEdgeIdsSorts) {
  std::mt19937_64 rng(3);
  for (int n = 0; n < 40; ++n) {
    std::vector<int64_t> ids(n);
    for (auto& id : ids) id = static_cast<int64_t>(rng() % 50);
    std::vector<int64_t> expected = ids;
    std::sort(expected.begin(), expected.end());
    SortEdgeIds(ids.data(), n);
    ASSERT_EQ(ids, expected);
  }
}

TEST(SamplingCoreTest, HeapKeepsTheKSmallestKeys) {
  std::mt19937_64 rng(4);
  for (int64_t k = 1; k < 12; ++k) {
    std::vector<std::pair<uint64_t, int64_t>> all;
    std::vector<SampleKey> keys(k);
    std::vector<int64_t> edges(k);
    int64_t size = 0;
    for (int64_t e = 0; e < 60; ++e) {
      const uint64_t bits = rng() % 20;  // many ties: the edge id breaks them
      all.emplace_back(bits, e);
      HeapOffer(keys.data(), edges.data(), &size, k, SampleKey{0.0, bits}, e);
    }
    std::sort(all.begin(), all.end());
    std::vector<int64_t> expected;
    for (int64_t i = 0; i < k; ++i) expected.push_back(all[i].second);
    std::sort(expected.begin(), expected.end());
    SortEdgeIds(edges.data(), size);
    ASSERT_EQ(edges, expected) << "k=" << k;
  }
}

TEST(SamplingCoreTest, SampledCountFollowsTheSpec) {
  // Node 0: edges 0..4 with weights {1, 0, 2, 0, 3}; node 1: no edges.
  const int64_t indptr[] = {0, 5, 5};
  const float weights[] = {1, 0, 2, 0, 3};
  SamplingParams p;
  p.indptr = indptr;
  p.weights = weights;
  struct Case {
    int64_t fanout;
    bool replace, weighted;
    int64_t count0;
  };
  const Case cases[] = {
      {-1, false, false, 5}, {-1, false, true, 3}, {2, false, false, 2}, {9, false, false, 5},
      {9, false, true, 3},   {9, true, true, 9},   {0, false, false, 0}, {-1, true, true, 3},
  };
  for (const Case& c : cases) {
    p.fanout = c.fanout;
    p.replace = c.replace;
    p.weighted = c.weighted;
    EXPECT_EQ(SampledCount(p, 0), c.count0) << c.fanout << " " << c.replace << " " << c.weighted;
    EXPECT_EQ(SampledCount(p, 1), 0);
  }
}

TEST(SamplingCoreTest, SampleSeedNeverPicksZeroWeightEdges) {
  const int64_t indptr[] = {0, 5};
  const float weights[] = {1, 0, 2, 0, 3};
  SamplingParams p;
  p.indptr = indptr;
  p.weights = weights;
  p.weighted = true;
  int64_t out[16];
  SampleKey scratch[16];
  for (bool replace : {false, true}) {
    for (int64_t fanout : {-1, 1, 2, 3, 16}) {
      for (uint64_t seed = 0; seed < 50; ++seed) {
        p.fanout = fanout;
        p.replace = replace;
        p.rng_seed = seed;
        const int64_t n = SampleSeed(p, 0, out, scratch);
        ASSERT_EQ(n, SampledCount(p, 0));
        for (int64_t i = 0; i < n; ++i) ASSERT_GT(weights[out[i]], 0.0f);
      }
    }
  }
}

// The counts SampleSeed and SampledCountOf need, read only as far as they
// tell cases apart, give the full count's answers.
TEST(SamplingCoreTest, TheCountForSamplingDecidesAsTheFullCount) {
  // Node 0: 12 edges, positive at 1, 5, 6, 11; node 1: all zero.
  const int64_t indptr[] = {0, 12, 15};
  const float weights[] = {0, 1, 0, 0, 0, 2, 3, 0, 0, 0, 0, 4, 0, 0, 0};
  SamplingParams p;
  p.indptr = indptr;
  p.weights = weights;
  p.weighted = true;
  for (bool replace : {false, true}) {
    for (int64_t fanout : {-1, 0, 1, 2, 3, 4, 5, 12}) {
      p.fanout = fanout;
      p.replace = replace;
      for (int64_t node : {0, 1}) {
        const int64_t full = EligibleCount(p, node);
        const int64_t capped = EligibleCountForSampling(p, node);
        EXPECT_EQ(SampledCountOf(p, capped), SampledCountOf(p, full)) << fanout << replace << node;
        EXPECT_EQ(UsesWeightedTopK(p, node, capped), UsesWeightedTopK(p, node, full)) << fanout << replace << node;
        EXPECT_EQ(capped == 0, full == 0);
        EXPECT_LE(capped, full);
      }
    }
  }
  p.fanout = 1;
  p.replace = false;
  EXPECT_EQ(EligibleCountForSampling(p, 0), 2);  // stops at fanout + 1
}

// A hub's top-k taken chunk by chunk, then merged, is SampleSeed's, in
// every top-k mode, for hubs whose last chunk is one edge, whose weights
// are mostly zero, and fanouts whose chunks grow past 1024 edges.
TEST(SamplingCoreTest, AHubsTopKInChunksIsSampleSeeds) {
  const std::vector<int64_t> degrees = {5000, kTopKChunkEdges + 1, 3000, 2 * kTopKChunkEdges, 40, 20000};
  std::vector<int64_t> indptr = {0};
  for (int64_t d : degrees) indptr.push_back(indptr.back() + d);
  std::mt19937_64 random(7);
  std::vector<float> weights(indptr.back());
  for (float& w : weights) w = random() % 7 == 0 ? 0.0f : static_cast<float>((random() >> 40) + 1);
  for (int64_t e = indptr[2]; e < indptr[3]; ++e) weights[e] = e < indptr[2] + 3 ? 1.0f : 0.0f;  // 3 eligible
  SamplingParams p;
  p.indptr = indptr.data();
  p.weights = weights.data();
  p.rng_seed = 99;
  p.layer = 2;
  struct Mode {
    bool weighted;
    int64_t fanout;
  };
  int split = 0;
  for (const Mode& m : {Mode{true, 1}, Mode{true, 5}, Mode{true, 300}, Mode{true, kTopKChunkEdges - 1},
                        Mode{true, kTopKChunkEdges}, Mode{false, 5}, Mode{false, 300}, Mode{false, 1000}}) {
    p.weighted = m.weighted;
    p.fanout = m.fanout;
    for (int64_t node = 0; node < static_cast<int64_t>(degrees.size()); ++node) {
      SCOPED_TRACE(std::to_string(m.weighted) + " fanout " + std::to_string(m.fanout) + " node " +
                   std::to_string(node));
      const int64_t chunks = TopKChunks(p, node);
      if (chunks == 0) continue;
      ++split;
      EXPECT_EQ(chunks, (degrees[node] + TopKChunkEdges(p) - 1) / TopKChunkEdges(p));
      EXPECT_LE(chunks * m.fanout, degrees[node] / 8 + m.fanout);  // what the merge offers
      std::vector<int64_t> expected(m.fanout), merged(m.fanout), survivors(chunks * m.fanout);
      std::vector<SampleKey> keys(m.fanout);
      const int64_t n = SampleSeed(p, node, expected.data(), keys.data());
      for (int64_t c = 0; c < chunks; ++c) SampleTopKChunk(p, node, c, keys.data(), survivors.data() + c * m.fanout);
      ASSERT_EQ(MergeTopKChunks(p, survivors.data(), chunks, merged.data(), keys.data()), n);
      EXPECT_EQ(merged, expected);
    }
  }
  // Chunks are 1024 edges up to fanout 128, then 8 x fanout. Split:
  // weighted 1 nodes 0-3 (node 2 has 3 eligible edges), weighted 5 nodes
  // 0, 1, 3, weighted 300 (chunks of 2400) node 0, uniform 300 nodes 0 and
  // 2, and node 5 (20,000 edges) in every mode but Floyd's 5.
  EXPECT_EQ(split, 4 + 3 + 1 + 2 + 7);
}

// Which weighted seeds take the rejection path, and what it picks: fanout
// distinct edges of weight > 0, ascending, never split into chunks.
TEST(SamplingCoreTest, TheRejectionRuleAndItsPicks) {
  // Node 0: a 5000-edge hub of weights 1..4 and zeros; node 1: 50 edges,
  // one of weight 1000; node 2: 10 edges of weight 1; node 3: 600 edges of
  // weight 1; node 4: 3 edges.
  const std::vector<int64_t> degrees = {5000, 50, 10, 600, 3};
  std::vector<int64_t> indptr = {0};
  for (int64_t d : degrees) indptr.push_back(indptr.back() + d);
  std::vector<float> weights(indptr.back(), 1.0f);
  for (int64_t e = 0; e < 5000; ++e) weights[e] = e % 5 == 4 ? 0.0f : static_cast<float>(e % 5 + 1);
  weights[indptr[1] + 7] = 1000.0f;
  const WeightTable table = BuildWeightTable(indptr, weights);
  SamplingParams p;
  p.indptr = indptr.data();
  p.weights = weights.data();
  p.weight_alias = table.alias.data();
  p.rejection_fanouts = table.rejection_fanouts.data();
  p.weighted = true;
  p.rng_seed = 5;
  struct Case {
    int64_t node, fanout;
    bool rejection;
  };
  // Node 0: 4 * fanout <= 10000 up to 256; node 1: 1000 * fanout <= 1049
  // for fanout 1 only; node 2: fanout 9 < 10 eligible, 10 takes them all;
  // node 3: fanout above 256; node 4: fanout >= eligible.
  for (const Case& c : {Case{0, 1, true}, Case{0, 15, true}, Case{0, 256, true}, Case{0, 257, false}, Case{1, 1, true},
                        Case{1, 2, false}, Case{2, 9, true}, Case{2, 10, false}, Case{3, 300, false},
                        Case{3, 256, true}, Case{4, 3, false}}) {
    SCOPED_TRACE("node " + std::to_string(c.node) + " fanout " + std::to_string(c.fanout));
    p.fanout = c.fanout;
    const int64_t full = EligibleCount(p, c.node), capped = EligibleCountForSampling(p, c.node);
    EXPECT_EQ(UsesWeightedRejection(p, c.node), c.rejection);
    EXPECT_EQ(capped > c.fanout, full > c.fanout);
    EXPECT_EQ(UsesWeightedTopK(p, c.node, capped), !c.rejection && full > c.fanout);
    if (c.rejection) {
      EXPECT_EQ(TopKChunks(p, c.node), 0);
    }
    std::vector<int64_t> picks(c.fanout);
    std::vector<SampleKey> keys(c.fanout);
    const int64_t n = SampleSeed(p, c.node, picks.data(), keys.data());
    ASSERT_EQ(n, std::min(c.fanout, full));
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_GE(picks[i], indptr[c.node]);
      EXPECT_LT(picks[i], indptr[c.node + 1]);
      EXPECT_GT(weights[picks[i]], 0.0f);
      if (i > 0) {
        EXPECT_LT(picks[i - 1], picks[i]);
      }
    }
  }
  // Without the table every weighted seed uses keys.
  p.weight_alias = nullptr;
  p.fanout = 15;
  EXPECT_FALSE(UsesWeightedRejection(p, 0));
  EXPECT_TRUE(UsesWeightedTopK(p, 0, EligibleCount(p, 0)));
}

// A draw takes column mulhi64(bits, d) and keeps it while its coin (bits
// 32..63 of bits * d) is below the column's threshold, else takes the
// alias; it never lands on a zero-weight edge.
TEST(SamplingCoreTest, AnAliasDrawTakesItsColumnOrTheAlias) {
  constexpr uint64_t kWhole = uint64_t{0xffffffff} << 32;
  // Weights {1, 0, 1, 2}: column 1 (weight 0) always moves on to edge 3.
  const std::vector<uint64_t> alias = {kWhole | 0, 3, kWhole | 2, kWhole | 3};
  EXPECT_EQ(WeightedAliasDraw(alias.data(), 0, 4, 0), 0);
  EXPECT_EQ(WeightedAliasDraw(alias.data(), 0, 4, uint64_t{1} << 62), 3);  // column 1, coin 0
  EXPECT_EQ(WeightedAliasDraw(alias.data(), 0, 4, uint64_t{2} << 62), 2);
  EXPECT_EQ(WeightedAliasDraw(alias.data(), 0, 4, ~uint64_t{0}), 3);
  // A half-threshold column: coin below 2^31 keeps it, at or above takes the alias.
  const std::vector<uint64_t> half = {(uint64_t{1} << 63) | 1, kWhole | 1};
  EXPECT_EQ(WeightedAliasDraw(half.data(), 0, 2, uint64_t{0x3fffffff} << 32), 0);  // coin 2^31 - 2
  EXPECT_EQ(WeightedAliasDraw(half.data(), 0, 2, uint64_t{0x40000000} << 32), 1);  // coin 2^31
  // Segments are offset by begin; the alias is segment-local.
  const std::vector<uint64_t> shifted = {7, 7, kWhole | 1, 0};
  EXPECT_EQ(WeightedAliasDraw(shifted.data(), 2, 2, uint64_t{1} << 63), 2);  // column 1, coin 0: alias 0
  EXPECT_EQ(WeightedAliasDraw(shifted.data(), 2, 2, 0), 2);

  const std::vector<float> weights = {0, 0, 2, 0, 1, 0, 0, 3, 0};
  const WeightTable table = BuildWeightTable({0, 9}, weights);
  for (uint64_t i = 0; i < 1000; ++i) {
    const int64_t e = WeightedAliasDraw(table.alias.data(), 0, 9, i * 0x9e3779b97f4a7c15ULL);
    EXPECT_GT(weights[e], 0.0f) << i;
  }
}

}  // namespace
}  // namespace sampling
}  // namespace kernels
}  // namespace faultline
