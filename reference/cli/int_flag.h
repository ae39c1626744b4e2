// Provides IntInRange: a CLI11 validator that takes a whole decimal integer
// in [min, max], by ParseWhole's rules. CLI11's own conversion saturates
// values past the type's range (99999999999999999999 became
// 9223372036854775807), reads "0x10" as 16, and its range checks print
// their bounds as doubles (a 250-digit number for int64); every flag of
// faultline's command lines that takes an integer uses this instead, with
// one message: "--rows: expected an integer in 1..9223372036854775807, got '0'".
#ifndef FAULTLINE_REFERENCE_CLI_INT_FLAG_H_
#define FAULTLINE_REFERENCE_CLI_INT_FLAG_H_

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "reference/base/parse_int.h"

namespace faultline {

template <typename T>
CLI::Validator IntInRange(T min, T max) {
  const std::string range = std::to_string(min) + ".." + std::to_string(max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        const std::optional<T> value = ParseWhole<T>(text);
        if (value && *value >= min && *value <= max) return "";
        return "expected an integer in " + range + ", got '" + text + "'";
      },
      "INT in " + range);
}

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_CLI_INT_FLAG_H_
