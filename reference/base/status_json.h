// Provides the JSON form of a Status, CUDA detail included, so an error can
// cross a process boundary (worker -> parent) without losing its fields.
#ifndef FAULTLINE_REFERENCE_BASE_STATUS_JSON_H_
#define FAULTLINE_REFERENCE_BASE_STATUS_JSON_H_

#include <nlohmann/json.hpp>

#include "reference/base/status.h"

namespace faultline {

// Returns {"code", "message"[, "cuda": {code, name, string, api, file, line}]}.
// Its strings are valid UTF-8 (an invalid byte becomes U+FFFD), so dump()
// never throws.
nlohmann::json StatusToJson(const Status& status);
// Rebuilds a Status from StatusToJson's form; malformed input (not an
// object, no "message", a member of the wrong type, a number outside int)
// is an internal error, never an exception and never OK.
Status StatusFromJson(const nlohmann::json& j);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_BASE_STATUS_JSON_H_
