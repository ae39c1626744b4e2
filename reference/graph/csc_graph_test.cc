// Tests CscGraph validation messages and the .npy folder round trip.
#include "reference/graph/csc_graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>

#include "reference/graph/generators.h"

namespace faultline {
namespace {

using ::testing::HasSubstr;

std::string MakeTempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string templ = std::string(base != nullptr ? base : "/tmp") + "/csc_test.XXXXXX";
  EXPECT_NE(mkdtemp(&templ[0]), nullptr);
  return templ;
}

// Returns the error message of a Create call that must fail.
template <typename... Args>
std::string CreateError(Args&&... args) {
  Result<CscGraph> graph = CscGraph::Create(std::forward<Args>(args)...);
  EXPECT_FALSE(graph.ok());
  if (graph.ok()) return "";
  EXPECT_EQ(graph.status().code(), StatusCode::kInvalidArgument);
  return graph.status().message();
}

TEST(CscGraphTest, CreatesAValidGraph) {
  // Node 0 <- {1, 2}, node 1 <- {}, node 2 <- {0}.
  Result<CscGraph> graph = CscGraph::Create({0, 2, 2, 3}, {1, 2, 0}, std::vector<float>{1, 0, 2.5f},
                                            std::vector<int32_t>{0, 3, 1});
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->num_nodes(), 3);
  EXPECT_EQ(graph->num_edges(), 3);
  EXPECT_EQ(graph->degree(0), 2);
  EXPECT_EQ(graph->degree(1), 0);
  EXPECT_TRUE(graph->has_weights());
  EXPECT_TRUE(graph->has_edge_types());
}

TEST(CscGraphTest, AcceptsAnEmptyGraph) {
  Result<CscGraph> graph = CscGraph::Create({0}, {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->num_nodes(), 0);
  EXPECT_FALSE(graph->has_weights());
}

TEST(CscGraphTest, NamesTheArrayPositionAndValueOfEachError) {
  EXPECT_EQ(CreateError(std::vector<int64_t>{}, std::vector<int64_t>{}),
            "indptr is empty; expected num_nodes + 1 >= 1 entries");
  EXPECT_EQ(CreateError(std::vector<int64_t>{1, 1}, std::vector<int64_t>{0}), "indptr[0]=1; expected 0");
  EXPECT_EQ(CreateError(std::vector<int64_t>{0, 2, 7, 3, 3}, std::vector<int64_t>{0, 0, 0}),
            "indptr is not monotone: indptr[2]=7 > indptr[3]=3");
  EXPECT_EQ(CreateError(std::vector<int64_t>{0, 1, 2}, std::vector<int64_t>{0, 1, 1}),
            "indptr[2]=2 (the last entry) does not match the number of edges: indices has 3 entries");
  EXPECT_EQ(CreateError(std::vector<int64_t>{0, 1, 2}, std::vector<int64_t>{0, 2}),
            "indices[1]=2 is out of range [0, 2)");
  EXPECT_EQ(CreateError(std::vector<int64_t>{0, 1, 2}, std::vector<int64_t>{-1, 0}),
            "indices[0]=-1 is out of range [0, 2)");
}

TEST(CscGraphTest, RejectsBadWeights) {
  const std::vector<int64_t> indptr = {0, 1, 2};
  const std::vector<int64_t> indices = {1, 0};
  EXPECT_EQ(CreateError(indptr, indices, std::vector<float>{1}),
            "weights has 1 entries; expected one per edge (2)");
  EXPECT_EQ(CreateError(indptr, indices, std::vector<float>{1, -0.5f}),
            "weights[1]=-0.5 is negative; expected a finite value >= 0");
  EXPECT_EQ(CreateError(indptr, indices, std::vector<float>{std::nanf(""), 1}),
            "weights[0]=nan is not finite; expected a finite value >= 0");
  EXPECT_EQ(CreateError(indptr, indices, std::vector<float>{1, std::numeric_limits<float>::infinity()}),
            "weights[1]=inf is not finite; expected a finite value >= 0");
  const float subnormal = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(CreateError(indptr, indices, std::vector<float>{subnormal, 1}),
            "weights[0]=1.40129846e-45 is subnormal; expected 0 or a normal float (>= 2^-126), which every device "
            "reads alike");
  // The smallest normal float and 0 are both fine.
  EXPECT_TRUE(CscGraph::Create(indptr, indices, std::vector<float>{std::numeric_limits<float>::min(), 0}).ok());
}

TEST(CscGraphTest, RejectsBadEdgeTypes) {
  const std::vector<int64_t> indptr = {0, 3, 5};
  const std::vector<int64_t> indices = {1, 0, 1, 0, 1};
  EXPECT_TRUE(CscGraph::Create(indptr, indices, std::nullopt, std::vector<int32_t>{0, 0, 2, 1, 1}).ok());
  EXPECT_EQ(CreateError(indptr, indices, std::nullopt, std::vector<int32_t>{0, 2, 1, 0, 0}),
            "edge_types is not sorted within node 0's segment [0, 3): edge_types[1]=2 > edge_types[2]=1");
  EXPECT_EQ(CreateError(indptr, indices, std::nullopt, std::vector<int32_t>{0}),
            "edge_types has 1 entries; expected one per edge (5)");
  EXPECT_EQ(CreateError(indptr, indices, std::nullopt, std::vector<int32_t>{0, 0, 0, -1, 0}),
            "edge_types[3]=-1 is negative; expected >= 0");
  EXPECT_THAT(CreateError(indptr, indices, std::nullopt, std::vector<int32_t>{0, 0, 0, 1, 300},
                          CscStorage{npy::DType::kInt64, npy::DType::kUInt8}),
              HasSubstr("storage.edge_types is '|u1' but edge_types[4]=300 does not fit"));
}

TEST(CscGraphTest, SavesAndLoadsEveryArray) {
  const std::string dir = MakeTempDir();
  Result<CscGraph> graph =
      CscGraph::Create({0, 2, 2, 3}, {1, 2, 0}, std::vector<float>{1, 0, 2.5f}, std::vector<int32_t>{0, 3, 1},
                       CscStorage{npy::DType::kInt32, npy::DType::kUInt8});
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_TRUE(graph->Save(dir).ok());
  Result<CscGraph> loaded = CscGraph::Load(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->indptr(), graph->indptr());
  EXPECT_EQ(loaded->indices(), graph->indices());
  EXPECT_EQ(loaded->weights(), graph->weights());
  EXPECT_EQ(loaded->edge_types(), graph->edge_types());
  EXPECT_EQ(loaded->storage().indices, npy::DType::kInt32);
  EXPECT_EQ(loaded->storage().edge_types, npy::DType::kUInt8);

  // Saving an unweighted graph over it removes the stale optional files.
  Result<CscGraph> plain = MakeChain(4);
  ASSERT_TRUE(plain->Save(dir).ok());
  Result<CscGraph> reloaded = CscGraph::Load(dir);
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  EXPECT_FALSE(reloaded->has_weights());
  EXPECT_FALSE(reloaded->has_edge_types());
  EXPECT_EQ(reloaded->indices(), plain->indices());
  EXPECT_EQ(reloaded->storage().indices, npy::DType::kInt64);
}

TEST(CscGraphTest, LoadReportsMissingCorruptAndInvalidFiles) {
  const std::string dir = MakeTempDir();
  Result<CscGraph> missing = CscGraph::Load(dir);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("loading a graph from '" + dir + "'"));
  EXPECT_THAT(missing.status().message(), HasSubstr("indptr.npy"));

  ASSERT_TRUE(MakeChain(3)->Save(dir).ok());
  // Wrong dtype for indices.
  ASSERT_TRUE(npy::WriteNpyFloat32(dir + "/indices.npy", {0, 1}).ok());
  EXPECT_THAT(CscGraph::Load(dir).status().message(),
              HasSubstr("indices.npy' has dtype '<f4'; expected one of '<i4', '<i8'"));
  // Truncated indices.
  ASSERT_TRUE(npy::WriteNpyInt(dir + "/indices.npy", {0, 1}, npy::DType::kInt64).ok());
  ASSERT_EQ(truncate((dir + "/indices.npy").c_str(), 128 + 12), 0);
  Result<CscGraph> truncated = CscGraph::Load(dir);
  EXPECT_EQ(truncated.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(truncated.status().message(), HasSubstr("indices.npy' is truncated"));
  // Valid files, invalid graph.
  ASSERT_TRUE(npy::WriteNpyInt(dir + "/indices.npy", {0, 5}, npy::DType::kInt64).ok());
  Result<CscGraph> invalid = CscGraph::Load(dir);
  EXPECT_EQ(invalid.status().message(),
            "loading a graph from '" + dir + "': indices[1]=5 is out of range [0, 3)");
  // Wrong dtype for weights.
  ASSERT_TRUE(npy::WriteNpyInt(dir + "/indices.npy", {0, 1}, npy::DType::kInt64).ok());
  ASSERT_TRUE(npy::WriteNpyInt(dir + "/weights.npy", {1, 1}, npy::DType::kInt64).ok());
  EXPECT_THAT(CscGraph::Load(dir).status().message(), HasSubstr("weights.npy' has dtype '<i8'; expected '<f4'"));
}

}  // namespace
}  // namespace faultline
