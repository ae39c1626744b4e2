// Tests SampleMultiLayer: the seeds of each hop, the layer index in the
// random counter, and errors naming the hop.
#include "reference/sampling/multi_layer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "reference/graph/generators.h"

namespace faultline {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SampleMultiLayerTest, EachHopStartsFromThePreviousUniqueNodes) {
  Result<CscGraph> chain = MakeChain(6);
  Result<std::vector<SampledLayer>> layers = SampleMultiLayer(*chain, {4}, {-1, -1, -1}, SamplingOptions{false, false, 1, 1});
  ASSERT_TRUE(layers.ok()) << layers.status();
  ASSERT_EQ(layers->size(), 3u);
  EXPECT_THAT((*layers)[0].subgraph.seeds, ElementsAre(4));
  EXPECT_THAT((*layers)[0].unique_nodes, ElementsAre(4, 3));
  EXPECT_THAT((*layers)[1].subgraph.seeds, ElementsAre(4, 3));
  EXPECT_THAT((*layers)[1].subgraph.indices, ElementsAre(3, 2));
  EXPECT_THAT((*layers)[1].compacted_indices, ElementsAre(1, 2));
  EXPECT_THAT((*layers)[2].unique_nodes, ElementsAre(4, 3, 2, 1));
  EXPECT_THAT((*layers)[2].compacted_indices, ElementsAre(1, 2, 3));
}

TEST(SampleMultiLayerTest, HopKUsesLayerIndexK) {
  Result<CscGraph> graph = GeneratePowerLaw(500, 10000, 3, false);
  ASSERT_TRUE(graph.ok());
  const std::vector<int64_t> seeds = {0, 1, 2, 3, 10, 20};
  Result<std::vector<SampledLayer>> layers = SampleMultiLayer(*graph, seeds, {4, 3}, SamplingOptions{false, false, 77, 2});
  ASSERT_TRUE(layers.ok()) << layers.status();
  Result<SampledSubgraph> hop0 = SampleNeighbors(*graph, seeds, 4, 0, SamplingOptions{false, false, 77, 1});
  Result<SampledSubgraph> hop1 = SampleNeighbors(*graph, (*layers)[0].unique_nodes, 3, 1, SamplingOptions{false, false, 77, 1});
  EXPECT_EQ((*layers)[0].subgraph.original_edge_ids, hop0->original_edge_ids);
  EXPECT_EQ((*layers)[1].subgraph.original_edge_ids, hop1->original_edge_ids);
}

TEST(SampleMultiLayerTest, ErrorsNameTheLayer) {
  Result<CscGraph> chain = MakeChain(3);
  EXPECT_THAT(SampleMultiLayer(*chain, {0}, {}, SamplingOptions{false, false, 1, 1}).status().message(),
              HasSubstr("fanouts is empty"));
  EXPECT_THAT(SampleMultiLayer(*chain, {2}, {1, -2}, SamplingOptions{false, false, 1, 1}).status().message(),
              HasSubstr("layer 1: fanout=-2"));
  EXPECT_THAT(SampleMultiLayer(*chain, {3}, {1}, SamplingOptions{false, false, 1, 1}).status().message(),
              HasSubstr("layer 0: seeds[0]=3 is out of range [0, 3)"));
}

}  // namespace
}  // namespace faultline
