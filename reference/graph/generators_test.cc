// Tests the R-MAT generator (determinism, size, skew) and the fixtures.
#include "reference/graph/generators.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace faultline {
namespace {

using ::testing::HasSubstr;

TEST(GeneratePowerLawTest, IsDeterministicAndHasTheRequestedSize) {
  Result<CscGraph> a = GeneratePowerLaw(1000, 20000, 7, /*weighted=*/true);
  Result<CscGraph> b = GeneratePowerLaw(1000, 20000, 7, /*weighted=*/true);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->num_nodes(), 1000);
  EXPECT_EQ(a->num_edges(), 20000);
  EXPECT_EQ(a->indptr(), b->indptr());
  EXPECT_EQ(a->indices(), b->indices());
  EXPECT_EQ(a->weights(), b->weights());
  for (float w : a->weights()) {
    EXPECT_GT(w, 0.0f);
    EXPECT_LE(w, 1.0f);
  }
  Result<CscGraph> c = GeneratePowerLaw(1000, 20000, 8, /*weighted=*/false);
  EXPECT_NE(a->indices(), c->indices());
  EXPECT_FALSE(c->has_weights());
}

TEST(GeneratePowerLawTest, DegreesAreSkewed) {
  Result<CscGraph> graph = GeneratePowerLaw(1 << 14, 1 << 18, 1, false);
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<int64_t> degrees;
  for (int64_t v = 0; v < graph->num_nodes(); ++v) degrees.push_back(graph->degree(v));
  std::sort(degrees.rbegin(), degrees.rend());
  const double mean = static_cast<double>(graph->num_edges()) / graph->num_nodes();
  // A power law: the top node has far more than the mean, many nodes far fewer.
  EXPECT_GT(degrees[0], 50 * mean);
  EXPECT_LT(degrees[degrees.size() / 2], mean);
}

TEST(GeneratePowerLawTest, HandlesNonPowerOfTwoAndTinySizes) {
  for (int64_t n : {1, 2, 3, 1000, 1025}) {
    Result<CscGraph> graph = GeneratePowerLaw(n, 5000, 3, false);
    ASSERT_TRUE(graph.ok()) << graph.status();
    EXPECT_EQ(graph->num_nodes(), n);
    EXPECT_EQ(graph->num_edges(), 5000);
  }
  EXPECT_TRUE(GeneratePowerLaw(10, 0, 3, true).ok());
  EXPECT_THAT(GeneratePowerLaw(0, 5, 3, false).status().message(), HasSubstr("num_nodes=0"));
  EXPECT_THAT(GeneratePowerLaw(5, -1, 3, false).status().message(), HasSubstr("num_edges=-1"));
}

TEST(GeneratePowerLawTest, BuildsAMillionEdgesQuickly) {
  Result<CscGraph> graph = GeneratePowerLaw(200000, 2000000, 11, true);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->num_edges(), 2000000);
  EXPECT_EQ(graph->storage().indices, npy::DType::kInt32);
}

TEST(FixtureTest, GraphFromEdgesKeepsListOrderWithinANode) {
  Result<CscGraph> graph = GraphFromEdges(3, {{2, 0}, {1, 2}, {1, 0}, {0, 0}}, std::vector<float>{1, 2, 3, 4});
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->indptr(), (std::vector<int64_t>{0, 3, 3, 4}));
  EXPECT_EQ(graph->indices(), (std::vector<int64_t>{2, 1, 0, 1}));
  EXPECT_EQ(graph->weights(), (std::vector<float>{1, 3, 4, 2}));
  EXPECT_EQ(GraphFromEdges(3, {{0, 3}}).status().message(),
            "edges[0]=(0, 3) has an endpoint out of range [0, 3)");
  EXPECT_THAT(GraphFromEdges(3, {{0, 1}}, std::vector<float>{}).status().message(),
              HasSubstr("weights has 0 entries"));
}

TEST(FixtureTest, StarAndChain) {
  Result<CscGraph> star = MakeStar(4, std::vector<float>{1, 0, 2, 3});
  ASSERT_TRUE(star.ok()) << star.status();
  EXPECT_EQ(star->indptr(), (std::vector<int64_t>{0, 4, 4, 4, 4, 4}));
  EXPECT_EQ(star->indices(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(star->weights(), (std::vector<float>{1, 0, 2, 3}));

  Result<CscGraph> chain = MakeChain(4);
  ASSERT_TRUE(chain.ok()) << chain.status();
  EXPECT_EQ(chain->indptr(), (std::vector<int64_t>{0, 0, 1, 2, 3}));
  EXPECT_EQ(chain->indices(), (std::vector<int64_t>{0, 1, 2}));
}

}  // namespace
}  // namespace faultline
