// Implements the JSON form of Status.
#include "reference/base/status_json.h"

#include <limits>

namespace faultline {
namespace {

// Returns `text` as valid UTF-8: each invalid byte becomes U+FFFD, so that
// dump() of the JSON never throws (a message may quote a file name or bytes
// read from a corrupt file).
std::string ValidUtf8(const std::string& text) {
  const std::string quoted =
      nlohmann::json(text).dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
  return nlohmann::json::parse(quoted).get<std::string>();
}

// Read optional member `key` of object `j` into `out`: an absent member
// leaves `out` as it is; a value of another type (or an integer outside
// int) returns false, so malformed input never throws.
bool ReadString(const nlohmann::json& j, const char* key, std::string* out) {
  const auto it = j.find(key);
  if (it == j.end()) return true;
  if (!it->is_string()) return false;
  *out = it->get<std::string>();
  return true;
}

bool ReadInt(const nlohmann::json& j, const char* key, int* out) {
  const auto it = j.find(key);
  if (it == j.end()) return true;
  if (it->is_number_unsigned()) {  // a non-negative integer
    const auto value = it->get<nlohmann::json::number_unsigned_t>();
    if (value > static_cast<nlohmann::json::number_unsigned_t>(std::numeric_limits<int>::max())) return false;
    *out = static_cast<int>(value);
    return true;
  }
  if (!it->is_number_integer()) return false;
  const auto value = it->get<nlohmann::json::number_integer_t>();
  if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) return false;
  *out = static_cast<int>(value);
  return true;
}

Status Unreadable(const nlohmann::json& j) {
  return InternalError("unreadable status: " + j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace

nlohmann::json StatusToJson(const Status& status) {
  nlohmann::json j = {{"code", static_cast<int>(status.code())}, {"message", ValidUtf8(status.message())}};
  if (const auto& cuda = status.cuda_error()) {
    j["cuda"] = {{"code", cuda->code},          {"name", ValidUtf8(cuda->name)}, {"string", ValidUtf8(cuda->string)},
                 {"api", ValidUtf8(cuda->api)}, {"file", ValidUtf8(cuda->file)}, {"line", cuda->line}};
  }
  return j;
}

Status StatusFromJson(const nlohmann::json& j) {
  std::string message;
  if (!j.is_object() || !j.contains("message") || !ReadString(j, "message", &message)) return Unreadable(j);
  if (j.contains("cuda") && j["cuda"].is_object()) {
    const nlohmann::json& c = j["cuda"];
    CudaErrorInfo cuda;
    if (!ReadInt(c, "code", &cuda.code) || !ReadString(c, "name", &cuda.name) ||
        !ReadString(c, "string", &cuda.string) || !ReadString(c, "api", &cuda.api) ||
        !ReadString(c, "file", &cuda.file) || !ReadInt(c, "line", &cuda.line)) {
      return Unreadable(j);
    }
    return Status(std::move(cuda), message);
  }
  int code = static_cast<int>(StatusCode::kInternal);
  if (!ReadInt(j, "code", &code)) return Unreadable(j);
  if (code <= 0 || code > static_cast<int>(StatusCode::kInternal)) {
    return InternalError("status code " + std::to_string(code) + " out of range: " + message);
  }
  return Status(static_cast<StatusCode>(code), message);
}

}  // namespace faultline
