// Implements the JSON form of Status.
#include "reference/base/status_json.h"

namespace faultline {

nlohmann::json StatusToJson(const Status& status) {
  nlohmann::json j = {{"code", static_cast<int>(status.code())}, {"message", status.message()}};
  if (const auto& cuda = status.cuda_error()) {
    j["cuda"] = {{"code", cuda->code}, {"name", cuda->name}, {"string", cuda->string},
                 {"api", cuda->api},   {"file", cuda->file}, {"line", cuda->line}};
  }
  return j;
}

Status StatusFromJson(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("message")) return InternalError("unreadable status: " + j.dump());
  const std::string message = j.value("message", "");
  if (j.contains("cuda") && j["cuda"].is_object()) {
    const nlohmann::json& c = j["cuda"];
    return Status(CudaErrorInfo{c.value("code", 0), c.value("name", ""), c.value("string", ""), c.value("api", ""),
                                c.value("file", ""), c.value("line", 0)},
                  message);
  }
  const int code = j.value("code", static_cast<int>(StatusCode::kInternal));
  if (code <= 0 || code > static_cast<int>(StatusCode::kInternal)) {
    return InternalError("status code " + std::to_string(code) + " out of range: " + message);
  }
  return Status(static_cast<StatusCode>(code), message);
}

}  // namespace faultline
