// Provides StrJoin: strings joined with a separator between them, for
// messages that list things ("a; b; c").
#ifndef FAULTLINE_REFERENCE_BASE_STR_JOIN_H_
#define FAULTLINE_REFERENCE_BASE_STR_JOIN_H_

#include <string>
#include <string_view>
#include <vector>

namespace faultline {

inline std::string StrJoin(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_BASE_STR_JOIN_H_
