// Tests WeightedRejectionBatch against kernels::sampling::SampleSeed.
#include "reference/sampling/weighted_rejection.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <new>
#include <vector>

#include "kernels/sampling_core.h"
#include "reference/base/status_matchers.h"
#include "reference/graph/generators.h"

namespace faultline {
namespace {

namespace core = kernels::sampling;

// The batch picks what SampleSeed picks, on every node of a power-law graph
// that the rule sends to rejection, for fanouts from 1 to 256 (one node
// fills a batch), queued many nodes per flush.
TEST(WeightedRejectionTest, BatchPicksWhatSampleSeedPicks) {
  FL_ASSERT_OK_AND_ASSIGN(const CscGraph graph, GeneratePowerLaw(3000, 120000, 12, /*weighted=*/true));
  int64_t compared = 0, flushed_by_add = 0;
  for (int64_t fanout : {int64_t{1}, int64_t{5}, int64_t{15}, int64_t{40}, int64_t{255}, int64_t{256}}) {
    core::SamplingParams p;
    p.indptr = graph.indptr().data();
    p.weights = graph.weights().data();
    p.weight_alias = graph.weight_alias().data();
    p.rejection_fanouts = graph.rejection_fanouts().data();
    p.fanout = fanout;
    p.weighted = true;
    p.rng_seed = 0xfeed + fanout;
    p.layer = 1;
    std::vector<int64_t> nodes;
    for (int64_t node = 0; node < graph.num_nodes(); ++node) {
      if (core::UsesWeightedRejection(p, node)) nodes.push_back(node);
    }
    std::vector<int64_t> batched(nodes.size() * fanout, -1), reference(fanout);
    {
      WeightedRejectionBatch batch(p);
      for (size_t i = 0; i < nodes.size(); ++i) {
        const int64_t begin = graph.indptr()[nodes[i]];
        batch.Add(nodes[i], begin, graph.indptr()[nodes[i] + 1] - begin, batched.data() + i * fanout);
        if (i > 0 && batched[(i - 1) * fanout] >= 0) ++flushed_by_add;  // picks already written
      }
      batch.Flush();
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      ASSERT_EQ(core::SampleSeed(p, nodes[i], reference.data(), nullptr), fanout);
      ASSERT_EQ(std::vector<int64_t>(batched.begin() + i * fanout, batched.begin() + (i + 1) * fanout), reference)
          << "node " << nodes[i] << " fanout " << fanout;
      ++compared;
    }
  }
  EXPECT_GT(compared, 500) << "too few nodes took the rejection path to compare";
  EXPECT_GT(flushed_by_add, 0) << "no batch filled up";
}

// A failed allocation later in the chunk (a top-k seed's keys) may unwind
// past a batch that still holds queued seeds: their picks are dropped, and
// the batch does not abort the process.
TEST(WeightedRejectionTest, AnExceptionMayUnwindPastQueuedSeeds) {
  FL_ASSERT_OK_AND_ASSIGN(const CscGraph graph, GeneratePowerLaw(3000, 120000, 12, /*weighted=*/true));
  core::SamplingParams p;
  p.indptr = graph.indptr().data();
  p.weights = graph.weights().data();
  p.weight_alias = graph.weight_alias().data();
  p.rejection_fanouts = graph.rejection_fanouts().data();
  p.fanout = 5;
  p.weighted = true;
  int64_t node = 0;
  while (!core::UsesWeightedRejection(p, node)) ++node;
  std::vector<int64_t> picks(5);
  auto unwind = [&] {
    WeightedRejectionBatch batch(p);
    batch.Add(node, graph.indptr()[node], graph.indptr()[node + 1] - graph.indptr()[node], picks.data());
    throw std::bad_alloc();
  };
  EXPECT_THROW(unwind(), std::bad_alloc);
}

}  // namespace
}  // namespace faultline
