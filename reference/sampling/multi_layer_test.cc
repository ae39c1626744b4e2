// Tests SampleMultiLayer: the seeds of each hop, the layer index in the
// random counter, and errors naming the hop.
#include "reference/sampling/multi_layer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "reference/base/status_matchers.h"
#include "reference/graph/generators.h"

namespace faultline {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SampleMultiLayerTest, EachHopStartsFromThePreviousUniqueNodes) {
  Result<CscGraph> chain = MakeChain(6);
  Result<std::vector<SampledLayer>> layers =
      SampleMultiLayer(*chain, {4}, {-1, -1, -1}, SamplingOptions{false, false, 1, 1});
  FL_ASSERT_OK(layers);
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
  FL_ASSERT_OK(graph);
  const std::vector<int64_t> seeds = {0, 1, 2, 3, 10, 20};
  Result<std::vector<SampledLayer>> layers =
      SampleMultiLayer(*graph, seeds, {4, 3}, SamplingOptions{false, false, 77, 2});
  FL_ASSERT_OK(layers);
  Result<SampledSubgraph> hop0 = SampleNeighbors(*graph, seeds, 4, 0, SamplingOptions{false, false, 77, 1});
  Result<SampledSubgraph> hop1 =
      SampleNeighbors(*graph, (*layers)[0].unique_nodes, 3, 1, SamplingOptions{false, false, 77, 1});
  EXPECT_EQ((*layers)[0].subgraph.original_edge_ids, hop0->original_edge_ids);
  EXPECT_EQ((*layers)[1].subgraph.original_edge_ids, hop1->original_edge_ids);
}

// On the CPU each hop's chunks are compacted as they are sampled: the
// layers are those of SampleNeighbors then UniqueAndCompact, hop by hop,
// whatever the thread count, in every sampling mode.
TEST(SampleMultiLayerTest, MatchesSampleNeighborsThenUniqueAndCompactOnAnyThreadCount) {
  Result<CscGraph> graph = GeneratePowerLaw(4000, 80000, 12, true);
  FL_ASSERT_OK(graph);
  std::vector<int64_t> seeds;
  for (int64_t v = 0; v < 4000; v += 5) seeds.push_back(v);
  for (bool replace : {false, true}) {
    for (bool weighted : {false, true}) {
      const SamplingOptions one_thread{replace, weighted, 21, 1};
      Result<std::vector<SampledLayer>> expected = SampleLayers(
          seeds, {10, -1, 3},
          [&](const std::vector<int64_t>& s, int64_t fanout, uint32_t layer) {
            return SampleNeighbors(*graph, s, fanout, layer, one_thread);
          },
          [](const std::vector<int64_t>& s, const std::vector<int64_t>& indices) {
            return UniqueAndCompact(s, indices);
          });
      FL_ASSERT_OK(expected);
      for (int threads : {1, 2, 3}) {
        Result<std::vector<SampledLayer>> layers =
            SampleMultiLayer(*graph, seeds, {10, -1, 3}, SamplingOptions{replace, weighted, 21, threads});
        FL_ASSERT_OK(layers);
        ASSERT_EQ(layers->size(), 3u);
        for (size_t k = 0; k < 3; ++k) {
          const SampledLayer &got = (*layers)[k], &want = (*expected)[k];
          const std::string where = "layer " + std::to_string(k) + ", " + std::to_string(threads) + " threads";
          EXPECT_EQ(got.subgraph.seeds, want.subgraph.seeds) << where;
          EXPECT_EQ(got.subgraph.indptr, want.subgraph.indptr) << where;
          EXPECT_EQ(got.subgraph.indices, want.subgraph.indices) << where;
          EXPECT_EQ(got.subgraph.original_edge_ids, want.subgraph.original_edge_ids) << where;
          EXPECT_EQ(got.unique_nodes, want.unique_nodes) << where;
          EXPECT_EQ(got.compacted_indices, want.compacted_indices) << where;
        }
      }
    }
  }
}

TEST(SampleMultiLayerTest, ErrorsNameTheLayer) {
  Result<CscGraph> chain = MakeChain(3);
  EXPECT_THAT(SampleMultiLayer(*chain, {0}, {}, SamplingOptions{false, false, 1, 1}).status().message(),
              HasSubstr("fanouts is empty"));
  EXPECT_THAT(SampleMultiLayer(*chain, {2}, {1, -2}, SamplingOptions{false, false, 1, 1}).status().message(),
              HasSubstr("layer 1: fanout=-2"));
  EXPECT_THAT(SampleMultiLayer(*chain, {3}, {1}, SamplingOptions{false, false, 1, 1}).status().message(),
              HasSubstr("layer 0: seeds[0]=3 is out of range [0, 3)"));
  // Seeds far outside the graph fail the same way before anything reads
  // with them (the compaction table covers the graph's ids only).
  for (int threads : {1, 2}) {
    EXPECT_THAT(SampleMultiLayer(*chain, {0, -1}, {1}, SamplingOptions{false, false, 1, threads}).status().message(),
                HasSubstr("layer 0: seeds[1]=-1 is out of range [0, 3)"));
    EXPECT_THAT(
        SampleMultiLayer(*chain, {int64_t{1} << 40}, {1}, SamplingOptions{false, false, 1, threads}).status().message(),
        HasSubstr("layer 0: seeds[0]=1099511627776 is out of range [0, 3)"));
  }
}

// A LayerSink that records its calls (and keeps the unique nodes it is given).
class RecordingSink : public LayerSink {
 public:
  Status BeginLayer(uint32_t layer, const std::vector<int64_t>&, size_t) override {
    calls.push_back("BeginLayer " + std::to_string(layer));
    return OkStatus();
  }
  Result<int64_t*> AddChunk(const SampledChunk& chunk) override {
    calls.push_back("AddChunk");
    compacted_.resize(static_cast<size_t>(chunk.indices.size()));
    return compacted_.data();
  }
  Result<const std::vector<int64_t>*> EndLayer(std::vector<int64_t> unique_nodes) override {
    calls.push_back("EndLayer");
    unique_.push_back(std::move(unique_nodes));
    return &unique_.back();
  }
  std::vector<std::string> calls;

 private:
  std::vector<int64_t> compacted_;
  std::deque<std::vector<int64_t>> unique_;  // the addresses stay valid
};

// A bad request fails before the sink hears of any layer: every layer's
// fanout, the options and the seeds are checked first (a layer begun and
// never ended would leave a minibatch writer half-way), with the error the
// hop would have given.
TEST(SampleMultiLayerTest, ABadRequestFailsBeforeAnyLayerBegins) {
  Result<CscGraph> chain = MakeChain(3);
  FL_ASSERT_OK(chain);
  struct Case {
    std::vector<int64_t> seeds, fanouts;
    SamplingOptions options;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{2},
       {3, -2},
       SamplingOptions{false, false, 1, 1},
       "layer 1: fanout=-2; expected -1 (all neighbours) or 0..2147483647"},
      {{2},
       {3, 1, int64_t{1} << 31},
       SamplingOptions{false, false, 1, 1},
       "layer 2: fanout=2147483648; expected -1 (all neighbours) or 0..2147483647"},
      {{2}, {3, 2}, SamplingOptions{false, false, 1, 0}, "layer 0: num_threads=0; expected 1..1024"},
      {{2}, {3, 2}, SamplingOptions{false, false, 1, 100000}, "layer 0: num_threads=100000; expected 1..1024"},
      {{2},
       {3, 2},
       SamplingOptions{false, true, 1, 1},
       "layer 0: weighted sampling was requested but the graph has no edge weights"},
      {{0, 3}, {3, 2}, SamplingOptions{false, false, 1, 1}, "layer 0: seeds[1]=3 is out of range [0, 3)"},
      {{2}, {}, SamplingOptions{false, false, 1, 1}, "fanouts is empty; expected one fanout per layer"},
  };
  for (const Case& c : cases) {
    RecordingSink sink;
    const Status status = SampleMultiLayerInto(*chain, c.seeds, c.fanouts, c.options, sink);
    EXPECT_EQ(status.code(), c.seeds.size() == 2 ? StatusCode::kOutOfRange : StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(), c.message);
    EXPECT_THAT(sink.calls, testing::IsEmpty()) << c.message;
    EXPECT_EQ(ValidateMultiLayerRequest(3, false, c.seeds, c.fanouts, c.options).message(), c.message);
  }
  // A good request: each layer begun, its chunks (a seed each here), ended.
  RecordingSink sink;
  FL_ASSERT_OK(SampleMultiLayerInto(*chain, {2}, {1, 1}, SamplingOptions{false, false, 1, 1}, sink));
  EXPECT_THAT(sink.calls,
              ElementsAre("BeginLayer 0", "AddChunk", "EndLayer", "BeginLayer 1", "AddChunk", "AddChunk", "EndLayer"));
}

// Picks beyond the memory fail as SampleNeighbors fails, the layer named.
TEST(SampleMultiLayerTest, PicksBeyondTheMemoryAreAnErrorNamingTheLayer) {
  Result<CscGraph> chain = MakeChain(2);
  FL_ASSERT_OK(chain);
  Result<std::vector<SampledLayer>> layers = SampleMultiLayer(*chain, std::vector<int64_t>(1024, 1), {2147483647},
                                                              SamplingOptions{/*replace=*/true, false, 1, 1});
  ASSERT_FALSE(layers.ok());
  EXPECT_EQ(layers.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(layers.status().message(),
              testing::StartsWith("layer 0: sampling 1024 seeds with fanout 2147483647 needs 2199023254528 picks "
                                  "(35184372072448 bytes), more than this machine's memory ("));
}

}  // namespace
}  // namespace faultline
