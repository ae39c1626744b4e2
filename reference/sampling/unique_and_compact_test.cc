// Tests UniqueAndCompact ordering (seeds first, then first appearance).
#include "reference/sampling/unique_and_compact.h"
#include "reference/sampling/unique_and_compact_testing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include "reference/base/status_matchers.h"

namespace faultline {
namespace {

using ::testing::ElementsAre;

TEST(UniqueAndCompactTest, SeedsFirstThenNewNodesInFirstAppearanceOrder) {
  UniqueAndCompactResult r = *UniqueAndCompact({5, 3, 5}, {7, 3, 9, 7, 5, 1});
  EXPECT_THAT(r.unique_nodes, ElementsAre(5, 3, 7, 9, 1));
  EXPECT_THAT(r.compacted_indices, ElementsAre(2, 1, 3, 2, 0, 4));
}

// Negative ids are no node ids: refused, the first one named (seeds before
// indices), as UniqueAndCompactOnDevice refuses them; id 0 is fine.
TEST(UniqueAndCompactTest, NegativeIdsAreRefusedByName) {
  Result<UniqueAndCompactResult> seed = UniqueAndCompact({-5}, {});
  ASSERT_FALSE(seed.ok());
  EXPECT_EQ(seed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(seed.status().message(), "seeds[0]=-5 is negative; expected node ids >= 0");
  EXPECT_EQ(UniqueAndCompact({1}, {2, -4, -1}).status().message(), "indices[1]=-4 is negative; expected node ids >= 0");
  EXPECT_EQ(UniqueAndCompact({3, std::numeric_limits<int64_t>::min()}, {-1}).status().message(),
            "seeds[1]=-9223372036854775808 is negative; expected node ids >= 0");
  Result<UniqueAndCompactResult> zero = UniqueAndCompact({0}, {0, 1});
  FL_ASSERT_OK(zero);
  EXPECT_THAT(zero->unique_nodes, ElementsAre(0, 1));
  FL_EXPECT_OK(CheckCompactIds({0, 5}, {1}));
}

TEST(UniqueAndCompactTest, HandlesEmptyInputs) {
  UniqueAndCompactResult none = *UniqueAndCompact({}, {});
  EXPECT_TRUE(none.unique_nodes.empty());
  EXPECT_TRUE(none.compacted_indices.empty());
  UniqueAndCompactResult only_seeds = *UniqueAndCompact({2, 2, 0}, {});
  EXPECT_THAT(only_seeds.unique_nodes, ElementsAre(2, 0));
  UniqueAndCompactResult no_seeds = *UniqueAndCompact({}, {4, 4, 1});
  EXPECT_THAT(no_seeds.unique_nodes, ElementsAre(4, 1));
  EXPECT_THAT(no_seeds.compacted_indices, ElementsAre(0, 0, 1));
}

// Runs the test's body once with the dense-id table's default entries
// (4 bytes for these ids) and once with 8-byte entries for every id.
class BothDirectEntryWidths : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { UseWideDirectEntriesOnlyForTesting(GetParam()); }
  void TearDown() override { UseWideDirectEntriesOnlyForTesting(false); }
};
INSTANTIATE_TEST_SUITE_P(UniqueAndCompact, BothDirectEntryWidths, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "WideEntriesOnly" : "DefaultEntries";
                         });

// Dense ids go through a table indexed by id whose entries are stamped with
// the call: a node of an earlier call is new again, also in the call where
// the stamp wraps (the table must be cleared then, or the stamps of 255 or
// 2^32 - 1 calls ago would match).
TEST_P(BothDirectEntryWidths, NodesOfEarlierCallsAreNewAgainAlsoWhenTheStampWraps) {
  UniqueAndCompactResult first = *UniqueAndCompact({}, {3, 4});
  EXPECT_THAT(first.unique_nodes, ElementsAre(3, 4));
  UniqueAndCompactResult second = *UniqueAndCompact({9}, {4, 3});
  EXPECT_THAT(second.unique_nodes, ElementsAre(9, 4, 3));
  EXPECT_THAT(second.compacted_indices, ElementsAre(1, 2));

  SetUniqueAndCompactGenerationForTesting(0);  // the next call stamps 1
  FL_ASSERT_OK(UniqueAndCompact({}, {3, 4}));
  SetUniqueAndCompactGenerationForTesting(0xffffffff);  // the last: the next call clears, then stamps 1 again
  UniqueAndCompactResult wrapped = *UniqueAndCompact({}, {4, 3});
  EXPECT_THAT(wrapped.unique_nodes, ElementsAre(4, 3));
  EXPECT_THAT(wrapped.compacted_indices, ElementsAre(0, 1));
}

// Each call's nodes are new to the next, through more calls than the 4-byte
// entries have generations (255): the wraps come from counting, not from
// the testing hook, and every stamp (1 to 255) is used. (With 8-byte
// entries nothing wraps here: the same calls, one generation each.)
TEST_P(BothDirectEntryWidths, NodesAreNewToEveryLaterCallThroughSeveralWraps) {
  for (int call = 0; call < 600; ++call) {
    UniqueAndCompactResult r = *UniqueAndCompact({7}, {3, 7, 3, 9});
    ASSERT_THAT(r.unique_nodes, ElementsAre(7, 3, 9)) << "call " << call;
    ASSERT_THAT(r.compacted_indices, ElementsAre(1, 0, 1, 2)) << "call " << call;
  }
}

// The same lists as a std::map oracle builds, for ids that fit the 8-byte
// hash slots and for ids that need the 16-byte ones (>= 2^32), ids
// that differ only in their high bits (id = low + k * stride), more new nodes
// than the table is first sized for (so it grows mid-call), and across calls
// that reuse the table's memory.
TEST_P(BothDirectEntryWidths, MatchesAMapOracleForNarrowAndWideIdsAndGrowingTables) {
  std::mt19937_64 rng(11);
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  struct Ids {
    int64_t low, high, stride;
  };
  const std::vector<Ids> id_sets = {{0, 50, 1},
                                    {0, 1'000'000, 1},
                                    {0, (int64_t{1} << 32) - 1, 1},
                                    {3, (int64_t{1} << 32) - 1, int64_t{1} << 16},
                                    {(int64_t{1} << 32) - 8, (int64_t{1} << 32) + 8, 1},
                                    {7, kMax, int64_t{1} << 32},
                                    {kMax - 1000, kMax, 1}};
  for (const Ids& ids : id_sets) {
    const int64_t low = ids.low, high = ids.high;
    for (size_t num_indices : {size_t{0}, size_t{7}, size_t{5000}, size_t{60000}}) {
      std::uniform_int_distribution<int64_t> step(0, (high - low) / ids.stride);
      auto id = [&](std::mt19937_64& g) { return low + step(g) * ids.stride; };
      std::vector<int64_t> seeds(num_indices / 10 + 3), indices(num_indices);
      for (int64_t& s : seeds) s = id(rng);
      for (int64_t& i : indices) i = id(rng);
      std::map<int64_t, int64_t> position;
      std::vector<int64_t> expected_unique, expected_compacted;
      auto add = [&](int64_t node) {
        auto [it, inserted] = position.emplace(node, static_cast<int64_t>(expected_unique.size()));
        if (inserted) expected_unique.push_back(node);
        return it->second;
      };
      for (int64_t s : seeds) add(s);
      for (int64_t i : indices) expected_compacted.push_back(add(i));
      UniqueAndCompactResult r = *UniqueAndCompact(seeds, indices);
      ASSERT_EQ(r.unique_nodes, expected_unique) << "ids in [" << low << ", " << high << "], " << num_indices;
      ASSERT_EQ(r.compacted_indices, expected_compacted) << "ids in [" << low << ", " << high << "], " << num_indices;
    }
  }
}

// Dense ids above 2^22 take the dense-id table too (sized to the next power
// of two): a call whose largest id is above 2^22, then one whose largest id
// is above the first table's size (it grows), both as the oracle says.
TEST_P(BothDirectEntryWidths, DenseIdsAboveTwoToTheTwentyTwoGrowTheTable) {
  std::mt19937_64 rng(5);
  for (int64_t largest : {(int64_t{1} << 22) + 1000, (int64_t{1} << 23) + 7}) {
    std::uniform_int_distribution<int64_t> id(0, largest - 1);
    std::vector<int64_t> seeds = {largest};                           // the largest id is present
    std::vector<int64_t> indices(static_cast<size_t>(largest / 15));  // dense: largest < 16 * inputs
    for (int64_t& i : indices) i = id(rng);
    std::unordered_map<int64_t, int64_t> position;
    std::vector<int64_t> expected_unique = {largest}, expected_compacted;
    position[largest] = 0;
    for (int64_t i : indices) {
      auto [it, inserted] = position.emplace(i, static_cast<int64_t>(expected_unique.size()));
      if (inserted) expected_unique.push_back(i);
      expected_compacted.push_back(it->second);
    }
    UniqueAndCompactResult r = *UniqueAndCompact(seeds, indices);
    ASSERT_EQ(r.unique_nodes, expected_unique) << "largest id " << largest;
    ASSERT_EQ(r.compacted_indices, expected_compacted) << "largest id " << largest;
  }
}

// The entry size follows the largest id: 4 bytes up to 2^24 - 1, 8 from
// 2^24 (each with enough expected inputs to count as dense), and a hash
// table for sparse ids. The tables are allocated, not filled by inputs.
TEST(UniqueAndCompactTest, EntriesAreFourBytesBelowTwoToTheTwentyFourAndEightFromIt) {
  const int64_t boundary = int64_t{1} << 24;
  const size_t dense = static_cast<size_t>(boundary / 16) + 1;  // largest < 16 * inputs
  {
    LayerCompactor below({0}, 0, boundary - 1, dense);
    EXPECT_EQ(LastDirectEntryBytesForTesting(), 4);
  }
  {
    LayerCompactor at({0}, 0, boundary, dense);
    EXPECT_EQ(LastDirectEntryBytesForTesting(), 8);
  }
  {
    LayerCompactor sparse({0}, 0, boundary, 10);
    EXPECT_EQ(LastDirectEntryBytesForTesting(), 0);
  }
  FL_ASSERT_OK(UniqueAndCompact({}, {1, 2}));
  EXPECT_EQ(LastDirectEntryBytesForTesting(), 4);
}

// UniqueAndCompact comes second: the table and buffers are the compactor's
// growth, not sized by an earlier call.
void ExpectPiecesGiveWhatOneCallGives() {
  std::mt19937_64 rng(17);
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  struct Ids {
    int64_t low, high;
  };
  for (const Ids& ids : {Ids{0, 5000}, Ids{0, (int64_t{1} << 30)}, Ids{-100, 100}, Ids{kMax - 100, kMax}}) {
    std::uniform_int_distribution<int64_t> id(ids.low, ids.high);
    std::vector<int64_t> seeds(40), indices(20000);
    for (int64_t& s : seeds) s = id(rng);
    for (int64_t& i : indices) i = id(rng);
    LayerCompactor compactor(seeds, ids.low, ids.high, /*expected_indices=*/100);
    std::vector<int64_t> compacted(indices.size());
    std::uniform_int_distribution<size_t> piece(0, 700);
    for (size_t at = 0; at < indices.size();) {
      const size_t count = std::min(piece(rng), indices.size() - at);
      compactor.Add(indices.data() + at, count, compacted.data() + at);
      at += count;
    }
    const std::vector<int64_t> unique = compactor.TakeUniqueNodes();
    // UniqueAndCompact refuses negative ids (a compactor takes the range it is given): one piece then.
    UniqueAndCompactResult whole;
    if (ids.low >= 0) {
      whole = *UniqueAndCompact(seeds, indices);
    } else {
      LayerCompactor one_piece(seeds, ids.low, ids.high, indices.size());
      whole.compacted_indices.resize(indices.size());
      one_piece.Add(indices.data(), indices.size(), whole.compacted_indices.data());
      whole.unique_nodes = one_piece.TakeUniqueNodes();
    }
    EXPECT_EQ(compacted, whole.compacted_indices) << "ids in [" << ids.low << ", " << ids.high << "]";
    EXPECT_EQ(unique, whole.unique_nodes) << "ids in [" << ids.low << ", " << ids.high << "]";
  }
}

// A LayerCompactor fed the indices in pieces of any size gives what one
// UniqueAndCompact call gives, for the dense-id table and both hash tables;
// on a fresh thread, whose reused buffers grow while the layer is under way.
TEST_P(BothDirectEntryWidths, PiecesGiveWhatOneCallGives) {
  std::thread fresh([] { ExpectPiecesGiveWhatOneCallGives(); });
  fresh.join();
  ExpectPiecesGiveWhatOneCallGives();
}

// Two compactors alive on one thread, fed in turn, keep to their own nodes
// (the second does not reuse the thread's tables under the first), and the
// thread's tables serve the next compactor again once both are gone.
TEST(LayerCompactorTest, TwoAliveOnOneThreadKeepToTheirOwnNodes) {
  const std::vector<int64_t> first_seeds = {1, 2}, second_seeds = {2, 9};
  const std::vector<int64_t> first_indices = {3, 1, 3, 4}, second_indices = {4, 1, 9, 5};
  std::vector<int64_t> first_compacted(4), second_compacted(4);
  {
    LayerCompactor first(first_seeds, 0, 10, 4);
    LayerCompactor second(second_seeds, 0, 10, 4);
    for (size_t i = 0; i < 4; ++i) {
      first.Add(&first_indices[i], 1, &first_compacted[i]);
      second.Add(&second_indices[i], 1, &second_compacted[i]);
    }
    EXPECT_THAT(first.TakeUniqueNodes(), ElementsAre(1, 2, 3, 4));
    EXPECT_THAT(first_compacted, ElementsAre(2, 0, 2, 3));
    EXPECT_THAT(second.TakeUniqueNodes(), ElementsAre(2, 9, 4, 1, 5));
    EXPECT_THAT(second_compacted, ElementsAre(2, 3, 1, 4));
  }
  UniqueAndCompactResult after = *UniqueAndCompact({3}, {1, 3});
  EXPECT_THAT(after.unique_nodes, ElementsAre(3, 1));
  EXPECT_THAT(after.compacted_indices, ElementsAre(1, 0));
}

}  // namespace
}  // namespace faultline
