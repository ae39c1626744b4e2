#include "reference/base/parse_int.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "reference/base/status_matchers.h"

namespace faultline {
namespace {

TEST(ParseWholeTest, ParsesTheWholeString) {
  EXPECT_EQ(ParseWhole<int>("0"), 0);
  EXPECT_EQ(ParseWhole<int>("42"), 42);
  EXPECT_EQ(ParseWhole<int64_t>("007"), 7);
  EXPECT_EQ(ParseWhole<int>("12abc"), std::nullopt);
  EXPECT_EQ(ParseWhole<int>("1.5"), std::nullopt);
  EXPECT_EQ(ParseWhole<int>("0x10"), std::nullopt);
  EXPECT_EQ(ParseWhole<int>("abc"), std::nullopt);
  // A string_view that ends before a following digit reads only its part.
  const std::string text = "123";
  EXPECT_EQ(ParseWhole<int>(std::string_view(text).substr(0, 2)), 12);
}

TEST(ParseWholeTest, Signs) {
  EXPECT_EQ(ParseWhole<int>("-5"), -5);
  EXPECT_EQ(ParseWhole<int>("+5"), std::nullopt);
  EXPECT_EQ(ParseWhole<int>("-"), std::nullopt);
  EXPECT_EQ(ParseWhole<int>("--5"), std::nullopt);
  EXPECT_EQ(ParseWhole<uint64_t>("-1"), std::nullopt);  // not wrapped to 2^64-1
  EXPECT_EQ(ParseWhole<uint64_t>("-0"), std::nullopt);
  EXPECT_EQ(ParseWhole<int>("-0"), 0);                        // a signed zero is zero...
  EXPECT_EQ(ParseWholeNonNegative<int>("-0"), std::nullopt);  // ...but not digits only
  EXPECT_EQ(ParseWholeNonNegative<int>("-1"), std::nullopt);
  EXPECT_EQ(ParseWholeNonNegative<int>("0"), 0);
  EXPECT_EQ(ParseWholeNonNegative<int>("2147483647"), 2147483647);
  EXPECT_EQ(ParseWholeNonNegative<int>(""), std::nullopt);
}

TEST(ParseWholeTest, Overflow) {
  EXPECT_EQ(ParseWhole<int>("2147483647"), std::numeric_limits<int>::max());
  EXPECT_EQ(ParseWhole<int>("-2147483648"), std::numeric_limits<int>::min());
  EXPECT_EQ(ParseWhole<int>("2147483648"), std::nullopt);
  EXPECT_EQ(ParseWhole<int>("-2147483649"), std::nullopt);
  EXPECT_EQ(ParseWhole<uint64_t>("18446744073709551615"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(ParseWhole<uint64_t>("18446744073709551616"), std::nullopt);
  EXPECT_EQ(ParseWhole<int64_t>("99999999999999999999999"), std::nullopt);
}

TEST(ParseWholeTest, Empty) {
  EXPECT_EQ(ParseWhole<int>(""), std::nullopt);
  EXPECT_EQ(ParseWhole<uint64_t>(std::string_view()), std::nullopt);
}

TEST(ParseWholeTest, SpacesAreNotSkipped) {
  EXPECT_EQ(ParseWhole<int>(" 7"), std::nullopt);
  EXPECT_EQ(ParseWhole<int>("7 "), std::nullopt);
  EXPECT_EQ(ParseWhole<int>("\t7"), std::nullopt);
  EXPECT_EQ(ParseWhole<int>("1 2"), std::nullopt);
  EXPECT_EQ(ParseWhole<int>(" "), std::nullopt);
}

TEST(ParseWholeOrErrorTest, NamesTheValueAndTheRange) {
  EXPECT_EQ(*ParseWholeOrError<int>("17", "cases"), 17);
  EXPECT_THAT(ParseWholeOrError<int>("17x", "cases"),
              StatusIs(StatusCode::kInvalidArgument, "cases is '17x'; expected an integer in -2147483648..2147483647"));
  EXPECT_THAT(ParseWholeOrError<uint64_t>("", "seed"),
              StatusIs(StatusCode::kInvalidArgument, "seed is ''; expected an integer in 0..18446744073709551615"));
}

}  // namespace
}  // namespace faultline
