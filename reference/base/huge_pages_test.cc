// Tests BackWithHugePages: contents kept, nothing done for regions without a
// whole aligned huge page, and the interior collapsed where the kernel allows
// huge pages at all.
#include "reference/base/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace faultline {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// "always [madvise] never": the bracketed word is the mode.
std::string TransparentHugePageMode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(in, line);
  const size_t open = line.find('['), close = line.find(']');
  return open == std::string::npos || close == std::string::npos ? "" : line.substr(open + 1, close - open - 1);
}

TEST(HugePagesTest, SmallOrEmptyRegionsAreLeftAlone) {
  std::vector<int64_t> small(1000, 7);
  EXPECT_EQ(BackWithHugePages(small.data(), small.size() * sizeof(int64_t)), 0u);
  EXPECT_EQ(BackWithHugePages(nullptr, 1 << 30), 0u);
  EXPECT_EQ(small, std::vector<int64_t>(1000, 7));
}

TEST(HugePagesTest, CollapsesTheAlignedInteriorAndKeepsTheContents) {
  std::vector<int64_t> values(5 * kHugePage / sizeof(int64_t));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int64_t>(i * 2654435761u);
  const std::vector<int64_t> expected = values;
  const size_t collapsed = BackWithHugePages(values.data(), values.size() * sizeof(int64_t));
  EXPECT_EQ(values, expected);
  const std::string mode = TransparentHugePageMode();
  ASSERT_FALSE(mode.empty()) << "cannot read /sys/kernel/mm/transparent_hugepage/enabled";
  if (mode == "never") {
    EXPECT_EQ(collapsed, 0u) << "THP mode 'never'";
  } else {
    // 5 huge pages of bytes hold at least 4 aligned huge pages.
    EXPECT_GE(collapsed, 4 * kHugePage) << "THP mode '" << mode << "'";
    EXPECT_EQ(collapsed % kHugePage, 0u);
  }
}

}  // namespace
}  // namespace faultline
