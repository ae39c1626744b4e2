// Implements LoaderOptions' names and JSON form (loader_options.h).
#include "reference/loader/loader_options.h"

#include <nlohmann/json.hpp>

namespace faultline {
namespace {

using Json = nlohmann::json;

Status BadField(const char* name, const char* expected) {
  return InvalidArgumentError(std::string("loader options JSON: field '") + name + "' is missing or not " + expected);
}

// Reads field `name` of `j`; each overload checks the JSON type first, so
// nothing here throws.
Status Field(const Json& j, const char* name, std::string* out) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_string()) return BadField(name, "a string");
  *out = it->get<std::string>();
  return OkStatus();
}
Status Field(const Json& j, const char* name, bool* out) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_boolean()) return BadField(name, "a boolean");
  *out = it->get<bool>();
  return OkStatus();
}
template <typename Int>
Status Field(const Json& j, const char* name, Int* out) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_number_integer()) return BadField(name, "an integer");
  *out = it->get<Int>();
  return OkStatus();
}
Status Field(const Json& j, const char* name, std::vector<int64_t>* out) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_array()) return BadField(name, "an array of integers");
  out->clear();
  for (const Json& v : *it) {
    if (!v.is_number_integer()) return BadField(name, "an array of integers");
    out->push_back(v.get<int64_t>());
  }
  return OkStatus();
}

}  // namespace

const char* LoaderModeName(LoaderMode mode) {
  switch (mode) {
    case LoaderMode::kCpuCpu: return "cpu-cpu";
    case LoaderMode::kCpuCuda: return "cpu-cuda";
    case LoaderMode::kPinnedCuda: return "pinned-cuda";
    case LoaderMode::kCudaCuda: return "cuda-cuda";
  }
  return "unknown";
}

Result<LoaderMode> ParseLoaderMode(std::string_view text, std::string_view what) {
  for (LoaderMode mode : {LoaderMode::kCpuCpu, LoaderMode::kCpuCuda, LoaderMode::kPinnedCuda, LoaderMode::kCudaCuda}) {
    if (text == LoaderModeName(mode)) return mode;
  }
  return InvalidArgumentError(std::string(what) + " is '" + std::string(text) +
                              "'; expected one of cpu-cpu, cpu-cuda, pinned-cuda, cuda-cuda");
}

bool IsDeviceSamplingMode(LoaderMode mode) { return mode == LoaderMode::kPinnedCuda || mode == LoaderMode::kCudaCuda; }

uint64_t LoaderRngSeed(uint64_t seed, int64_t index) {
  // Each minibatch has its own random stream, so no worker assignment matters.
  return seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(index + 1);
}

std::string OptionsToJson(const LoaderOptions& o) {
  return Json{{"graph_dir", o.graph_dir},
              {"fanouts", o.fanouts},
              {"batch_size", o.batch_size},
              {"num_items", o.num_items},
              {"shuffle", o.shuffle},
              {"drop_last", o.drop_last},
              {"seed", o.seed},
              {"replace", o.replace},
              {"weighted", o.weighted},
              {"num_workers", o.num_workers},
              {"sampler_threads", o.sampler_threads},
              {"mode", LoaderModeName(o.mode)},
              {"runtime", RuntimeKindName(o.runtime)},
              {"device", o.device},
              {"dispatch", BehaviourName(o.dispatch)},
              {"pin_handling", BehaviourName(o.pin_handling)}}
      .dump(-1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);  // never throws
}

Status CheckOptionsFitJson(const LoaderOptions& o) {
  try {
    (void)Json(o.graph_dir).dump();  // strict: throws on bytes that are not UTF-8
  } catch (const Json::type_error&) {
    return InvalidArgumentError("graph_dir is not valid UTF-8 ('" + o.graph_dir +
                                "'); spawned workers receive the options as JSON, which cannot carry it: use "
                                "start_method fork, or a UTF-8 path");
  }
  return OkStatus();
}

Result<LoaderOptions> OptionsFromJson(std::string_view json) {
  const Json j = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgumentError("loader options are not a JSON object");
  LoaderOptions o;
  std::string mode, runtime, dispatch, pin_handling;
  FL_RETURN_IF_ERROR(Field(j, "graph_dir", &o.graph_dir));
  FL_RETURN_IF_ERROR(Field(j, "fanouts", &o.fanouts));
  FL_RETURN_IF_ERROR(Field(j, "batch_size", &o.batch_size));
  FL_RETURN_IF_ERROR(Field(j, "num_items", &o.num_items));
  FL_RETURN_IF_ERROR(Field(j, "shuffle", &o.shuffle));
  FL_RETURN_IF_ERROR(Field(j, "drop_last", &o.drop_last));
  FL_RETURN_IF_ERROR(Field(j, "seed", &o.seed));
  FL_RETURN_IF_ERROR(Field(j, "replace", &o.replace));
  FL_RETURN_IF_ERROR(Field(j, "weighted", &o.weighted));
  FL_RETURN_IF_ERROR(Field(j, "num_workers", &o.num_workers));
  FL_RETURN_IF_ERROR(Field(j, "sampler_threads", &o.sampler_threads));
  FL_RETURN_IF_ERROR(Field(j, "mode", &mode));
  FL_RETURN_IF_ERROR(Field(j, "runtime", &runtime));
  FL_RETURN_IF_ERROR(Field(j, "device", &o.device));
  FL_RETURN_IF_ERROR(Field(j, "dispatch", &dispatch));
  FL_RETURN_IF_ERROR(Field(j, "pin_handling", &pin_handling));
  FL_ASSIGN_OR_RETURN(o.mode, ParseLoaderMode(mode, "mode"));
  FL_ASSIGN_OR_RETURN(o.runtime, ParseRuntimeKind(runtime));
  FL_ASSIGN_OR_RETURN(o.dispatch, ParseBehaviour(dispatch, "dispatch"));
  FL_ASSIGN_OR_RETURN(o.pin_handling, ParseBehaviour(pin_handling, "pin_handling"));
  return o;
}

}  // namespace faultline
