// Tests BuildWeightTable: the alias columns reproduce each edge's share of
// its segment's weight, zero weights are unreachable, and the rejection
// fanout is the rule's largest fanout.
#include "kernels/weight_table.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/sampling_core.h"

namespace faultline {
namespace kernels {
namespace sampling {
namespace {

constexpr uint64_t kWhole = uint64_t{0xffffffff} << 32;

TEST(WeightTableTest, BuildsVosesTableInTheDocumentedOrder) {
  // Node 0: weights {1, 0, 1, 2}; node 1: empty; node 2: {-0, 0.25} (one
  // eligible edge: never drawn from).
  const WeightTable table = BuildWeightTable({0, 4, 4, 6}, {1.0f, 0.0f, 1.0f, 2.0f, -0.0f, 0.25f});
  EXPECT_EQ(table.alias, (std::vector<uint64_t>{kWhole | 0, 3, kWhole | 2, kWhole | 3, 0, 0}));
  EXPECT_EQ(table.rejection_fanouts, (std::vector<int32_t>{2, 0, 0}));
}

// Each edge's probability (its column's kept share plus the moved-on shares
// of the columns aliasing it, over d) against w / total.
TEST(WeightTableTest, ColumnsReproduceEachEdgesShare) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t d = 2 + static_cast<int64_t>(rng() % 300);
    std::vector<float> w(d);
    for (float& x : w) {
      const uint32_t kind = rng() % 8;
      x = kind == 0 ? 0.0f : kind == 1 ? 1000.0f : std::uniform_real_distribution<float>(0.001f, 1.0f)(rng);
    }
    w[0] = 0.5f;  // at least two positive weights
    w[d - 1] = 0.5f;
    std::vector<uint64_t> alias(d);
    int32_t fanout = 0;
    BuildWeightTable({0, d}, w, alias.data(), &fanout);
    if (fanout == 0) continue;  // a dominant weight: keys, no table
    double total = 0;
    for (float x : w) total += x;
    std::vector<double> share(d, 0.0);
    for (int64_t c = 0; c < d; ++c) {
      const double kept = static_cast<double>(alias[c] >> 32) * 0x1p-32;
      const int64_t to = static_cast<int64_t>(alias[c] & 0xffffffffu);
      if (to == c) {
        share[c] += 1.0 / d;  // a whole column
      } else {
        share[c] += kept / d;
        share[to] += (1.0 - kept) / d;
        EXPECT_GT(w[to], 0.0f) << "column " << c << " moves on to a zero weight";
      }
      if (w[c] == 0.0f) {
        EXPECT_EQ(alias[c] >> 32, 0u) << "zero-weight column " << c << " keeps a share";
      }
    }
    for (int64_t e = 0; e < d; ++e) EXPECT_NEAR(share[e], w[e] / total, 1e-8) << "trial " << trial << " edge " << e;
  }
}

TEST(WeightTableTest, RejectionFanoutIsTheRulesLargestFanout) {
  struct Case {
    std::vector<float> weights;
    int32_t fanout;
  };
  std::vector<float> one_heavy(50, 1.0f);
  one_heavy[7] = 1000.0f;
  for (const Case& c : {
           Case{std::vector<float>(10, 1.0f), 9},     // fanout < 10 eligible
           Case{std::vector<float>(600, 1.0f), 256},  // capped at kMaxRejectionFanout
           Case{one_heavy, 1},                        // 1 * 1000 <= 1049, 2 * 1000 is more
           Case{{3.0f, 1.0f, 1.0f, 1.0f}, 2},         // 2 * 3 <= 6, 3 * 3 is more
           Case{{1.0f, 1.0f, 1.0f}, 2},
           Case{{1.0f}, 0},  // one eligible edge: fanout 1 takes it whole
           Case{{0.0f, 0.0f}, 0},
       }) {
    const int64_t d = static_cast<int64_t>(c.weights.size());
    const WeightTable table = BuildWeightTable({0, d}, c.weights);
    EXPECT_EQ(table.rejection_fanouts[0], c.fanout) << d << " edges";
  }
}

// Threads build ranges of nodes apart: the table is the same bits whatever
// their number (here 3 M edges, above the million a thread needs).
TEST(WeightTableTest, ThreadsBuildTheSameTable) {
  std::mt19937 rng(5);
  std::vector<int64_t> indptr = {0};
  while (indptr.back() < 3'000'000) {
    const uint32_t r = rng() % 100;
    indptr.push_back(indptr.back() + (r < 90 ? r % 40 : r < 99 ? 500 : 60'000));  // many small, some hubs
  }
  std::vector<float> weights(indptr.back());
  for (float& w : weights) w = rng() % 10 == 0 ? 0.0f : std::uniform_real_distribution<float>(0.01f, 1.0f)(rng);
  const WeightTable one = BuildWeightTable(indptr, weights);
  int64_t drawn_from = 0;
  for (int32_t f : one.rejection_fanouts) drawn_from += f > 0 ? 1 : 0;
  EXPECT_GT(drawn_from, 1000);
  for (int threads : {2, 3, 8}) {
    std::vector<uint64_t> alias(weights.size(), ~uint64_t{0});  // all overwritten
    std::vector<int32_t> fanouts(indptr.size() - 1, -1);
    BuildWeightTable(indptr, weights, alias.data(), fanouts.data(), threads);
    EXPECT_EQ(alias, one.alias) << threads << " threads";
    EXPECT_EQ(fanouts, one.rejection_fanouts) << threads << " threads";
  }
}

}  // namespace
}  // namespace sampling
}  // namespace kernels
}  // namespace faultline
