// Tests UniqueAndCompact ordering (seeds first, then first appearance).
#include "reference/sampling/unique_and_compact.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace faultline {
namespace {

using ::testing::ElementsAre;

TEST(UniqueAndCompactTest, SeedsFirstThenNewNodesInFirstAppearanceOrder) {
  UniqueAndCompactResult r = UniqueAndCompact({5, 3, 5}, {7, 3, 9, 7, 5, 1});
  EXPECT_THAT(r.unique_nodes, ElementsAre(5, 3, 7, 9, 1));
  EXPECT_THAT(r.compacted_indices, ElementsAre(2, 1, 3, 2, 0, 4));
}

TEST(UniqueAndCompactTest, HandlesEmptyInputs) {
  UniqueAndCompactResult none = UniqueAndCompact({}, {});
  EXPECT_TRUE(none.unique_nodes.empty());
  EXPECT_TRUE(none.compacted_indices.empty());
  UniqueAndCompactResult only_seeds = UniqueAndCompact({2, 2, 0}, {});
  EXPECT_THAT(only_seeds.unique_nodes, ElementsAre(2, 0));
  UniqueAndCompactResult no_seeds = UniqueAndCompact({}, {4, 4, 1});
  EXPECT_THAT(no_seeds.unique_nodes, ElementsAre(4, 1));
  EXPECT_THAT(no_seeds.compacted_indices, ElementsAre(0, 0, 1));
}

}  // namespace
}  // namespace faultline
