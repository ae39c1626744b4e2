#include "repro/repro_test_support.h"

#include <regex>

namespace faultline {
namespace repro {

bool RegexFullMatch(const std::string& text, const std::string& pattern) {
  return std::regex_match(text, std::regex(pattern));
}

bool RegexSearch(const std::string& text, const std::string& pattern) {
  return std::regex_search(text, std::regex(pattern));
}

}  // namespace repro
}  // namespace faultline
