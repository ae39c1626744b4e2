// PlanRoute on its own: no MPI, so counts far past INT_MAX cost nothing.
#include "reference/distributed/route_plan.h"

#include <climits>

#include <gtest/gtest.h>

#include "reference/base/status_matchers.h"

namespace faultline {
namespace {

// 3 ranks: counts[s * 3 + r] rows from s to r.
TEST(PlanRouteTest, GivesEachRankItsCountsAndDisplacementsInRowsAndFloats) {
  const std::vector<int64_t> counts = {1, 2, 3,  //
                                       4, 0, 6,  //
                                       7, 8, 0};
  Result<RoutePlan> plan = PlanRoute(counts, 3, 1, 2);
  FL_ASSERT_OK(plan);
  EXPECT_EQ(plan->send_rows, (std::vector<int>{4, 0, 6}));
  EXPECT_EQ(plan->send_row_offsets, (std::vector<int>{0, 4, 4}));
  EXPECT_EQ(plan->send_floats, (std::vector<int>{8, 0, 12}));
  EXPECT_EQ(plan->send_float_offsets, (std::vector<int>{0, 8, 8}));
  EXPECT_EQ(plan->receive_rows, (std::vector<int>{2, 0, 8}));
  EXPECT_EQ(plan->receive_row_offsets, (std::vector<int>{0, 2, 2}));
  EXPECT_EQ(plan->receive_floats, (std::vector<int>{4, 0, 16}));
  EXPECT_EQ(plan->receive_float_offsets, (std::vector<int>{0, 4, 4}));
  EXPECT_EQ(plan->total_receive_rows, 10);
}

// A rank that refused its own batches is named by every rank; a negative
// count (before: a resize that threw length_error) names its sender.
TEST(PlanRouteTest, NamesARankThatRefusedOrAnnouncedANegativeCount) {
  EXPECT_EQ(PlanRoute({0, 0, 0, -1, -1, -1, 0, 0, 0}, 3, 0, 4).status().ToString(),
            "invalid_argument: rank 1 refused its own batches (its error says why; nothing was routed)");
  EXPECT_EQ(PlanRoute({0, 0, 0, 0, 0, 0, 0, -7, 0}, 3, 0, 4).status().ToString(),
            "data_loss: rank 2 announced -7 rows for rank 1; expected a count >= 0");
}

// Past INT_MAX values in all, every rank fails naming the rank and the size
// (before: static_cast<int> wrapped the counts and offsets).
TEST(PlanRouteTest, RefusesTotalsPastMpisIntCountsNamingTheRankAndTheSize) {
  // Rank 0 sends 2^29 rows of dim 4 to rank 1 (2^31 values): one past INT_MAX.
  const std::vector<int64_t> one_past = {0, int64_t{1} << 29, 0, 0};
  for (int rank : {0, 1}) {
    EXPECT_EQ(PlanRoute(one_past, 2, rank, 4).status().ToString(),
              "invalid_argument: rank 0 sends 2147483648 float32 values (536870912 rows of dim 4) in all; one MPI "
              "call moves at most 2147483647: expected fewer rows per call, or a smaller dim");
  }
  // Two senders whose sums are each below the limit, into one receiver above it.
  const int64_t half = (int64_t{1} << 30) / 4;  // 2^30 values each
  EXPECT_EQ(PlanRoute({half, 0, half, 0}, 2, 1, 4).status().ToString(),
            "invalid_argument: rank 0 would receive 2147483648 float32 values (536870912 rows of dim 4) in all; one "
            "MPI call moves at most 2147483647: expected fewer rows per call, or a smaller dim");
  // Exactly INT_MAX values pass; a product past int64 is named without wrapping.
  FL_EXPECT_OK(PlanRoute({INT_MAX, 0, 0, 0}, 2, 0, 1));
  EXPECT_EQ(PlanRoute({int64_t{1} << 40, 0, 0, 0}, 2, 0, int64_t{1} << 30).status().ToString(),
            "invalid_argument: rank 0 sends more than 9223372036854775807 float32 values (1099511627776 rows of dim "
            "1073741824) in all; one MPI call moves at most 2147483647: expected fewer rows per call, or a smaller "
            "dim");
}

TEST(PlanRouteTest, RefusesADimThatIsNotOneMpiCount) {
  EXPECT_EQ(PlanRoute({0}, 1, 0, int64_t{INT_MAX} + 1).status().ToString(),
            "invalid_argument: dim is 2147483648; expected 1 to 2147483647");
  EXPECT_EQ(PlanRoute({0}, 1, 0, 0).status().ToString(), "invalid_argument: dim is 0; expected 1 to 2147483647");
}

}  // namespace
}  // namespace faultline
