// Implements the shared gather child of F4, F5 and F6.
#include "repro/gather_child.h"

#include <nlohmann/json.hpp>

#include "reference/base/status_json.h"
#include "reference/features/feature_store.h"
#include "reference/runtime/lazy_init.h"
#include "reference/tensor/tensor.h"
#include "repro/scenario_support.h"

namespace faultline {
namespace repro {
namespace {

Result<Tensor> Table(const GatherCase& gather) {
  std::vector<float> values(static_cast<size_t>(gather.rows * gather.cols));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * gather.scale;
  return Tensor::FromVector(values, {gather.rows, gather.cols});
}

}  // namespace

Result<std::vector<float>> GatherOnHost(const GatherCase& gather) {
  FL_ASSIGN_OR_RETURN(Tensor table, Table(gather));
  FL_ASSIGN_OR_RETURN(Tensor ids, Tensor::FromVector(gather.ids));
  FL_ASSIGN_OR_RETURN(Tensor rows, IndexSelect(table, ids));
  return rows.ToVector<float>();
}

Result<std::vector<float>> GatherOnDevice(RuntimeKind kind, const GatherCase& gather, int device, std::string* step) {
  DeviceRuntime& rt = GetRuntime(kind);
  *step = "lazy_init";
  FL_RETURN_IF_ERROR(LazyInitCuda(rt));
  *step = "set_device";
  FL_RETURN_IF_ERROR(rt.SetDevice(device));
  *step = "index_select";
  FL_ASSIGN_OR_RETURN(Tensor table, Table(gather));
  FL_ASSIGN_OR_RETURN(Tensor ids, Tensor::FromVector(gather.ids));
  FL_ASSIGN_OR_RETURN(Tensor device_table, table.To(Device::Cuda(device), &rt));
  FL_ASSIGN_OR_RETURN(Tensor device_ids, ids.To(Device::Cuda(device), &rt));
  FL_ASSIGN_OR_RETURN(Tensor rows, IndexSelect(device_table, device_ids));
  FL_ASSIGN_OR_RETURN(Tensor host, rows.Cpu());
  return host.ToVector<float>();
}

int ReportGather(const Result<std::vector<float>>& rows, const std::string& step) {
  nlohmann::json report = {{"ok", rows.ok()}};
  if (rows.ok()) {
    report["rows"] = *rows;
  } else {
    report["step"] = step;
    report["status"] = StatusToJson(rows.status());
  }
  ReportToParent(report.dump());
  return rows.ok() ? 0 : 1;
}

std::optional<Outcome> CollectGather(ChildProcess& child, const std::string& process, RuntimeKind kind,
                                     const Expected& expected, const std::vector<float>& baseline,
                                     std::string* transcript) {
  auto exit = child.Wait(std::chrono::seconds(60));
  if (!exit.ok()) return Unexpected(Observe(exit.status(), process, "wait"), *transcript);
  nlohmann::json report = nlohmann::json::parse(exit->transcript, nullptr, /*allow_exceptions=*/false);
  if (report.is_discarded() || !report.contains("ok") || !report["ok"].is_boolean()) {
    return Unexpected(
        Observe(Status(StatusCode::kChildFailed, exit->Describe() + " without a readable report"), process, "report"),
        *transcript);
  }
  if (!report["ok"].get<bool>()) {
    ObservedError error = Observe(StatusFromJson(report["status"]), process, report.value("step", ""));
    *transcript += InitializationSiteNote(kind);
    return EndedInError(expected, error, *transcript);
  }
  if (auto missed = RanToTheEnd(expected, process + " used CUDA fine", *transcript)) return missed;
  const bool equal =
      report.contains("rows") && report["rows"].is_array() && report["rows"].get<std::vector<float>>() == baseline;
  if (!equal) return PassedIf(false, process + "'s rows equal the host gather", *transcript);
  *transcript += process + ": its rows equal the host gather\n";
  return std::nullopt;
}

}  // namespace repro
}  // namespace faultline
