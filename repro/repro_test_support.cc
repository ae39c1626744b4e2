#include "repro/repro_test_support.h"

#include <gmock/gmock.h>

#include <regex>

namespace faultline {
namespace repro {

std::vector<std::string> RegexGroups(const std::string& text, const std::string& pattern) {
  std::smatch match;
  if (!std::regex_search(text, match, std::regex(pattern))) return {};
  std::vector<std::string> groups;
  for (size_t i = 1; i < match.size(); ++i) groups.push_back(match[i].str());
  return groups;
}

void ExpectPassedWith(const Outcome& o, const std::string& text) {
  EXPECT_EQ(VerdictName(o.verdict), std::string("passed")) << o.transcript;
  EXPECT_FALSE(o.error.has_value()) << o.transcript;
  EXPECT_THAT(o.transcript, ::testing::HasSubstr(text)) << o.transcript;
}

std::string InitializationBacktrace(const std::string& transcript) {
  const std::regex header(R"(CUDA was first initialized in the parent \(pid \d+\) at:\n)");
  std::smatch found;
  if (!std::regex_search(transcript, found, header)) return "";
  // The frames follow, one per line, each "  #<k> <function> at <file>:<line>".
  std::smatch frames;
  const std::string rest = found.suffix();
  std::regex_search(rest, frames, std::regex(R"(^(  #\d+ .*\n)*)"));
  return frames.str();
}

}  // namespace repro
}  // namespace faultline
