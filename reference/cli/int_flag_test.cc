// IntInRange through a real CLI11 parse: what it takes, and the message it
// gives for everything CLI11 alone would have taken or garbled.
#include "reference/cli/int_flag.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace faultline {
namespace {

// Parses `--n TEXT` into an int64 flag checked by IntInRange(1, INT64_MAX);
// returns "ok VALUE" or the error CLI11 reports.
std::string Parse(const std::string& text) {
  CLI::App app;
  int64_t n = 0;
  app.add_option("--n", n)->check(IntInRange<int64_t>(1, std::numeric_limits<int64_t>::max()));
  std::vector<std::string> args{text, "--n"};  // CLI11 reads a vector from the back
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "ok " + std::to_string(n);
}

TEST(IntFlagTest, TakesAWholeIntegerInRange) {
  EXPECT_EQ(Parse("1"), "ok 1");
  EXPECT_EQ(Parse("9223372036854775807"), "ok 9223372036854775807");
}

TEST(IntFlagTest, RefusesWhatCli11WouldSaturateOrMisreadNamingTheRange) {
  const std::string expected = "--n: expected an integer in 1..9223372036854775807, got '";
  for (const std::string text : {"0", "-5", "99999999999999999999", "0x10", "10abc", "abc", "", " 7", "1e3"}) {
    EXPECT_EQ(Parse(text), expected + text + "'") << text;
  }
}

}  // namespace
}  // namespace faultline
