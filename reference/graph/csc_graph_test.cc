// Tests CscGraph validation messages and the .npy folder round trip.
#include "reference/graph/csc_graph.h"

#include <dirent.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <limits>

#include "reference/base/status_matchers.h"
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
  Result<CscGraph> graph =
      CscGraph::Create({0, 2, 2, 3}, {1, 2, 0}, std::vector<float>{1, 0, 2.5f}, std::vector<int32_t>{0, 3, 1});
  FL_ASSERT_OK(graph);
  EXPECT_EQ(graph->num_nodes(), 3);
  EXPECT_EQ(graph->num_edges(), 3);
  EXPECT_EQ(graph->degree(0), 2);
  EXPECT_EQ(graph->degree(1), 0);
  EXPECT_TRUE(graph->has_weights());
  EXPECT_TRUE(graph->has_edge_types());
}

TEST(CscGraphTest, AcceptsAnEmptyGraph) {
  Result<CscGraph> graph = CscGraph::Create({0}, {});
  FL_ASSERT_OK(graph);
  EXPECT_EQ(graph->num_nodes(), 0);
  EXPECT_FALSE(graph->has_weights());
}

// The weight table weighted sampling draws from (kernels/weight_table.h):
// per edge its segment's alias column, per node its rejection fanout;
// empty without weights.
TEST(CscGraphTest, BuildsTheWeightTable) {
  FL_ASSERT_OK_AND_ASSIGN(const CscGraph g, CscGraph::Create({0, 4, 4, 6}, {0, 1, 2, 0, 1, 2},
                                                             std::vector<float>{1.0f, 0.0f, 1.0f, 2.0f, -0.0f, 0.25f}));
  constexpr uint64_t kWhole = uint64_t{0xffffffff} << 32;
  EXPECT_EQ(g.weight_alias(), (std::vector<uint64_t>{kWhole | 0, 3, kWhole | 2, kWhole | 3, 0, 0}));
  EXPECT_EQ(g.rejection_fanouts(), (std::vector<int32_t>{2, 0, 0}));
  FL_ASSERT_OK_AND_ASSIGN(const CscGraph unweighted, CscGraph::Create({0, 1}, {0}));
  EXPECT_TRUE(unweighted.weight_alias().empty());
  EXPECT_TRUE(unweighted.rejection_fanouts().empty());
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
  EXPECT_EQ(CreateError(indptr, indices, std::vector<float>{1}), "weights has 1 entries; expected one per edge (2)");
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
  FL_EXPECT_OK(CscGraph::Create(indptr, indices, std::vector<float>{std::numeric_limits<float>::min(), 0}));
}

TEST(CscGraphTest, RejectsBadEdgeTypes) {
  const std::vector<int64_t> indptr = {0, 3, 5};
  const std::vector<int64_t> indices = {1, 0, 1, 0, 1};
  FL_EXPECT_OK(CscGraph::Create(indptr, indices, std::nullopt, std::vector<int32_t>{0, 0, 2, 1, 1}));
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
  FL_ASSERT_OK(graph);
  FL_ASSERT_OK(graph->Save(dir));
  Result<CscGraph> loaded = CscGraph::Load(dir);
  FL_ASSERT_OK(loaded);
  EXPECT_EQ(loaded->indptr(), graph->indptr());
  EXPECT_EQ(loaded->indices(), graph->indices());
  EXPECT_EQ(loaded->weights(), graph->weights());
  EXPECT_EQ(loaded->edge_types(), graph->edge_types());
  EXPECT_EQ(loaded->storage().indices, npy::DType::kInt32);
  EXPECT_EQ(loaded->storage().edge_types, npy::DType::kUInt8);

  // Saving an unweighted graph over it removes the stale optional files.
  Result<CscGraph> plain = MakeChain(4);
  FL_ASSERT_OK(plain->Save(dir));
  Result<CscGraph> reloaded = CscGraph::Load(dir);
  FL_ASSERT_OK(reloaded);
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

  FL_ASSERT_OK(MakeChain(3)->Save(dir));
  // Wrong dtype for indices.
  FL_ASSERT_OK(npy::WriteNpyFloat32(dir + "/indices.npy", {0, 1}));
  EXPECT_THAT(CscGraph::Load(dir).status().message(),
              HasSubstr("indices.npy' has dtype '<f4'; expected one of '<i4', '<i8'"));
  // Truncated indices.
  FL_ASSERT_OK(npy::WriteNpyInt(dir + "/indices.npy", {0, 1}, npy::DType::kInt64));
  ASSERT_EQ(truncate((dir + "/indices.npy").c_str(), 128 + 12), 0);
  Result<CscGraph> truncated = CscGraph::Load(dir);
  EXPECT_EQ(truncated.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(truncated.status().message(), HasSubstr("indices.npy' is truncated"));
  // Valid files, invalid graph.
  FL_ASSERT_OK(npy::WriteNpyInt(dir + "/indices.npy", {0, 5}, npy::DType::kInt64));
  Result<CscGraph> invalid = CscGraph::Load(dir);
  EXPECT_EQ(invalid.status().message(), "loading a graph from '" + dir + "': indices[1]=5 is out of range [0, 3)");
  // Wrong dtype for weights.
  FL_ASSERT_OK(npy::WriteNpyInt(dir + "/indices.npy", {0, 1}, npy::DType::kInt64));
  FL_ASSERT_OK(npy::WriteNpyInt(dir + "/weights.npy", {1, 1}, npy::DType::kInt64));
  EXPECT_THAT(CscGraph::Load(dir).status().message(), HasSubstr("weights.npy' has dtype '<i8'; expected '<f4'"));
}

// stat() fails on a dangling link as on a missing file: the weights were
// silently dropped, and the graph loaded as unweighted.
TEST(CscGraphTest, ADanglingWeightsLinkIsAnError) {
  const std::string dir = MakeTempDir();
  Result<CscGraph> graph =
      CscGraph::Create({0, 1, 2}, {1, 0}, std::vector<float>{0.5f, 2.0f}, std::vector<int32_t>{1, 2});
  FL_ASSERT_OK(graph);
  FL_ASSERT_OK(graph->Save(dir));
  ASSERT_EQ(rename((dir + "/weights.npy").c_str(), (dir + "/real_weights.npy").c_str()), 0);
  ASSERT_EQ(symlink((dir + "/gone.npy").c_str(), (dir + "/weights.npy").c_str()), 0);
  Result<CscGraph> dangling = CscGraph::Load(dir);
  ASSERT_FALSE(dangling.ok());
  EXPECT_EQ(dangling.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(dangling.status().message(),
            "loading a graph from '" + dir + "': '" + dir + "/weights.npy' is a symbolic link to '" + dir +
                "/gone.npy', which cannot be opened: No such file or directory; expected the .npy file, or no "
                "file for a graph without it");
  // The same for edge types.
  ASSERT_EQ(unlink((dir + "/weights.npy").c_str()), 0);
  ASSERT_EQ(symlink("real_weights.npy", (dir + "/weights.npy").c_str()), 0);  // a working link is followed
  ASSERT_EQ(rename((dir + "/edge_types.npy").c_str(), (dir + "/real_types.npy").c_str()), 0);
  ASSERT_EQ(symlink("gone_types.npy", (dir + "/edge_types.npy").c_str()), 0);
  EXPECT_THAT(CscGraph::Load(dir).status().message(),
              HasSubstr("edge_types.npy' is a symbolic link to 'gone_types.npy', which cannot be opened"));
  ASSERT_EQ(unlink((dir + "/edge_types.npy").c_str()), 0);
  Result<CscGraph> linked = CscGraph::Load(dir);
  FL_ASSERT_OK(linked);
  EXPECT_EQ(linked->weights(), graph->weights());
  EXPECT_FALSE(linked->has_edge_types());
  // Saving a graph without weights removes a stale link too, dangling or not.
  ASSERT_EQ(unlink((dir + "/weights.npy").c_str()), 0);
  ASSERT_EQ(symlink("gone.npy", (dir + "/weights.npy").c_str()), 0);
  FL_ASSERT_OK(MakeChain(2)->Save(dir));
  Result<CscGraph> plain = CscGraph::Load(dir);
  FL_ASSERT_OK(plain);
  EXPECT_FALSE(plain->has_weights());
}

// Save wrote the files one by one: a failure after indptr.npy left the new
// indptr with the old indices (a mixed graph, often a valid one).
TEST(CscGraphTest, AFailedSaveLeavesThePreviousGraphWhole) {
  const std::string dir = MakeTempDir();
  Result<CscGraph> old_graph = MakeStar(3, std::vector<float>{1, 2, 3});
  FL_ASSERT_OK(old_graph->Save(dir));
  // indptr.npy of the new graph fits under the file size limit, indices.npy does not.
  std::vector<std::pair<int64_t, int64_t>> edges;
  for (int64_t i = 0; i < 2000; ++i) edges.emplace_back(i % 4, 3 - i % 4);
  Result<CscGraph> new_graph = GraphFromEdges(4, edges);
  FL_ASSERT_OK(new_graph);
  rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = 8192;
  void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);  // write() then fails with EFBIG
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  Status failed = new_graph->Save(dir);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &saved), 0);
  signal(SIGXFSZ, old_handler);
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(failed.message(), HasSubstr("saving a graph to '" + dir + "'"));
  EXPECT_THAT(failed.message(), HasSubstr("indices.npy"));
  Result<CscGraph> loaded = CscGraph::Load(dir);
  FL_ASSERT_OK(loaded);
  EXPECT_EQ(loaded->indptr(), old_graph->indptr());
  EXPECT_EQ(loaded->indices(), old_graph->indices());
  EXPECT_EQ(loaded->weights(), old_graph->weights());
  // No temporary file is left behind.
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  while (dirent* entry = readdir(d)) names.push_back(entry->d_name);
  closedir(d);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{".", "..", "indices.npy", "indptr.npy", "weights.npy"}));
  // Without the limit the same Save replaces all, and removes the stale weights.
  FL_ASSERT_OK(new_graph->Save(dir));
  EXPECT_EQ(CscGraph::Load(dir)->indices(), new_graph->indices());
  EXPECT_FALSE(CscGraph::Load(dir)->has_weights());
}

}  // namespace
}  // namespace faultline
