// Provides ParseWhole: an integer parsed from the whole of a string, or
// nothing. One definition for every flag, argument, environment variable and
// child answer that is a number, so that they all reject the same inputs
// (std::stoi took "12abc" as 12 and " 7" as 7, and threw on the rest).
#ifndef FAULTLINE_REFERENCE_BASE_PARSE_INT_H_
#define FAULTLINE_REFERENCE_BASE_PARSE_INT_H_

#include <charconv>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

#include "reference/base/status.h"

namespace faultline {

// Parses all of `text` as a decimal integer of type T; nullopt on anything
// else: an empty string, spaces anywhere, a leading '+' (and, for unsigned T,
// a '-'), trailing characters, or a value outside T's range.
template <typename T>
std::optional<T> ParseWhole(std::string_view text) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>, "ParseWhole parses integers");
  if (text.empty()) return std::nullopt;
  T value{};
  const char* end = text.data() + text.size();
  // from_chars does the range check (errc::result_out_of_range) and never
  // skips whitespace or accepts a '+'.
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// ParseWhole for a count, an index or a file descriptor: digits only, so a
// sign of any kind is refused ("-0" too, which ParseWhole<int> reads as 0).
template <typename T>
std::optional<T> ParseWholeNonNegative(std::string_view text) {
  if (text.empty() || text[0] == '-') return std::nullopt;
  return ParseWhole<T>(text);
}

// ParseWhole for inputs that a caller cannot do without: fails with
// InvalidArgument "<what> is '<text>'; expected an integer in MIN..MAX".
template <typename T>
Result<T> ParseWholeOrError(std::string_view text, std::string_view what) {
  if (const std::optional<T> value = ParseWhole<T>(text)) return *value;
  // +: promotes char-sized types, which to_string has no overload for.
  return InvalidArgumentError(std::string(what) + " is '" + std::string(text) + "'; expected an integer in " +
                              std::to_string(+std::numeric_limits<T>::min()) + ".." +
                              std::to_string(+std::numeric_limits<T>::max()));
}

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_BASE_PARSE_INT_H_
