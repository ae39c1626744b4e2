// The CPU's Floyd sampling picks what SampleSeed picks, and its batched
// random values equal DrawBits bit for bit: Random123's known answer, node
// ids above 32 bits, random inputs.
#include "reference/sampling/uniform_floyd.h"

#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/sampling_core.h"
#include "reference/base/status_matchers.h"
#include "reference/graph/csc_graph.h"
#include "reference/graph/generators.h"

namespace faultline {
namespace {

namespace core = kernels::sampling;

// Compares SampleUniformFloyd, and a UniformFloydBatch given every such
// node in turn, with SampleSeed on every node of `graph` that takes the
// Floyd path under `p`; counts the nodes compared in *compared.
void ExpectFloydPicksWhatSampleSeedPicks(const CscGraph& graph, const core::SamplingParams& p, int64_t* compared) {
  std::vector<int64_t> fast(p.fanout), reference(p.fanout);
  std::vector<core::SampleKey> scratch(p.fanout);
  std::vector<int64_t> floyd_nodes;
  for (int64_t node = 0; node < graph.num_nodes(); ++node) {
    if (core::UsesFloyd(p, core::EligibleCount(p, node))) floyd_nodes.push_back(node);
  }
  const int64_t k = p.fanout;
  std::vector<int64_t> batched(floyd_nodes.size() * k, -1);
  UniformFloydBatch batch(p);
  for (size_t j = 0; j < floyd_nodes.size(); ++j) {
    const int64_t node = floyd_nodes[j], begin = graph.indptr()[node];
    batch.Add(node, begin, graph.indptr()[node + 1] - begin, batched.data() + j * k);
  }
  batch.Flush();
  for (size_t j = 0; j < floyd_nodes.size(); ++j) {
    const int64_t node = floyd_nodes[j];
    ASSERT_EQ(SampleUniformFloyd(p, node, fast.data()), p.fanout);
    ASSERT_EQ(core::SampleSeed(p, node, reference.data(), scratch.data()), p.fanout);
    ASSERT_EQ(fast, reference) << "node " << node << " (degree " << graph.indptr()[node + 1] - graph.indptr()[node]
                               << ") fanout " << p.fanout << " seed " << p.rng_seed;
    ASSERT_EQ(std::vector<int64_t>(batched.begin() + j * k, batched.begin() + (j + 1) * k), reference)
        << "batched: node " << node << " (the " << j << "th queued) fanout " << p.fanout << " seed " << p.rng_seed;
    ++*compared;
  }
}

TEST(UniformFloydTest, PicksWhatSampleSeedPicksOnEveryNode) {
  Result<CscGraph> graph = GeneratePowerLaw(3000, 120000, 13, /*weighted=*/false);
  FL_ASSERT_OK(graph);
  int64_t compared = 0;
  // Fanouts below, at and across the 8-draw blocks, up to kMaxFloydFanout.
  for (int64_t fanout : {int64_t{1}, int64_t{5}, int64_t{8}, int64_t{9}, int64_t{15}, int64_t{16}, int64_t{17},
                         int64_t{100}, core::kMaxFloydFanout}) {
    core::SamplingParams p;
    p.indptr = graph->indptr().data();
    p.fanout = fanout;
    p.rng_seed = 0xf10d0000 + static_cast<uint64_t>(fanout);
    p.layer = static_cast<uint32_t>(fanout % 3);
    ExpectFloydPicksWhatSampleSeedPicks(*graph, p, &compared);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(compared, 1000) << "too few nodes took the Floyd path to compare";
}

// Node d has d edges, for every degree up to past the bitset's 256 (the
// word boundaries 64, 128, 192 and 256 on both sides), so both of
// SampleUniformFloyd's paths pick what SampleSeed picks.
TEST(UniformFloydTest, PicksWhatSampleSeedPicksForEveryDegreeOnBothSidesOfTheBitset) {
  constexpr int64_t kMaxDegree = 300;
  std::vector<int64_t> indptr = {0}, indices;
  for (int64_t degree = 0; degree <= kMaxDegree; ++degree) {
    for (int64_t e = 0; e < degree; ++e) indices.push_back((degree * 7 + e) % (kMaxDegree + 1));
    indptr.push_back(static_cast<int64_t>(indices.size()));
  }
  Result<CscGraph> graph = CscGraph::Create(std::move(indptr), std::move(indices));
  FL_ASSERT_OK(graph);
  int64_t compared = 0, expected = 0;
  for (int64_t fanout : {int64_t{1}, int64_t{5}, int64_t{15}, int64_t{63}, int64_t{64}, int64_t{65}, int64_t{200},
                         core::kMaxFloydFanout}) {
    expected += 2 * (kMaxDegree - fanout);  // the nodes of degree fanout + 1 .. kMaxDegree, with two seeds
    core::SamplingParams p;
    p.indptr = graph->indptr().data();
    p.fanout = fanout;
    for (uint64_t seed : {uint64_t{1}, uint64_t{0xfeed}}) {
      p.rng_seed = seed;
      ExpectFloydPicksWhatSampleSeedPicks(*graph, p, &compared);
      if (HasFatalFailure()) return;
    }
  }
  EXPECT_EQ(compared, expected);
}

// PackedDrawBits (AVX2 where the CPU has it) and its scalar twin give each
// lane DrawBits of its own node and draw, for nodes up to 2^56 (the counter's
// second word carries bits 32..55), lane counts across block and pair
// boundaries.
TEST(UniformFloydTest, PackedDrawBitsGiveEachLaneItsOwnDrawBits) {
  std::mt19937_64 rng(29);
  for (int lanes : {1, 7, 8, 9, 16, 17, 40, 256}) {
    const int rounded = (lanes + 15) / 16 * 16;
    std::vector<uint32_t> tag_node_high(rounded, 0), node_low(rounded, 0), draw(rounded, 0);
    std::vector<int64_t> nodes(lanes), draws(lanes);
    const uint64_t seed = rng();
    const uint32_t layer = static_cast<uint32_t>(rng() % 4);
    for (int i = 0; i < lanes; ++i) {
      nodes[i] = static_cast<int64_t>(rng() >> (8 + rng() % 40));  // < 2^56, some below 2^32
      draws[i] = static_cast<int64_t>(rng() % 300);
      tag_node_high[i] = core::kTagUniformPick | (static_cast<uint32_t>(static_cast<uint64_t>(nodes[i]) >> 32) << 8);
      node_low[i] = static_cast<uint32_t>(nodes[i]);
      draw[i] = static_cast<uint32_t>(draws[i]);
    }
    std::vector<uint64_t> packed(rounded), scalar(rounded);
    PackedDrawBits(seed, layer, tag_node_high.data(), node_low.data(), draw.data(), lanes, packed.data());
    PackedDrawBitsScalar(seed, layer, tag_node_high.data(), node_low.data(), draw.data(), lanes, scalar.data());
    for (int i = 0; i < lanes; ++i) {
      const uint64_t expected = core::DrawBits(seed, layer, core::kTagUniformPick, nodes[i], draws[i]);
      ASSERT_EQ(packed[i], expected) << "lane " << i << " of " << lanes << ", node " << nodes[i];
      ASSERT_EQ(scalar[i], expected) << "scalar: lane " << i << " of " << lanes << ", node " << nodes[i];
    }
  }
}

// Random123 tests/kat_vectors, "philox4x32 10" line 1: counter and key zero.
TEST(UniformFloydTest, MatchesRandom123KnownAnswer) {
  uint64_t out[kDrawBitsBlock];
  DrawBitsBlocks(0, 0, 0, 0, 0, 1, out);
  EXPECT_EQ(out[0], 0xe169c58d6627e8d5u);
}

TEST(UniformFloydTest, EqualsTheScalarPathOnRandomInputs) {
  std::mt19937_64 random(17);
  for (int trial = 0; trial < 20000; ++trial) {
    const uint64_t seed = random();
    const uint32_t layer = static_cast<uint32_t>(random()), tag = static_cast<uint32_t>(random() & 0xff);
    const int64_t node = static_cast<int64_t>(random() >> (8 + trial % 48));  // small ids and ids up to 2^56
    const int blocks = 1 + trial % kMaxDrawBitsBlocks;
    const int64_t draws = blocks * kDrawBitsBlock;
    const int64_t last_first = (int64_t{1} << 32) - draws;  // the largest first draw the header allows
    const int64_t first = trial % 8 == 7  ? last_first
                          : trial % 4 < 2 ? static_cast<int64_t>((random() >> 32) & ~7ull) % last_first
                                          : 8 * (trial % 32);
    uint64_t block[kMaxDrawBitsBlocks * kDrawBitsBlock], scalar[kMaxDrawBitsBlocks * kDrawBitsBlock];
    DrawBitsBlocks(seed, layer, tag, node, first, blocks, block);
    DrawBitsBlocksScalar(seed, layer, tag, node, first, blocks, scalar);
    for (int i = 0; i < draws; ++i) {
      ASSERT_EQ(block[i], scalar[i]) << "trial " << trial << " lane " << i << " of " << blocks << " blocks, seed "
                                     << seed << " layer " << layer << " tag " << tag << " node " << node
                                     << " first draw " << first;
    }
  }
}

}  // namespace
}  // namespace faultline
