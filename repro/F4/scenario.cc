// F4 — CUDA context created at library load time (PEFT issue 1877 / PR 1879;
// HuixiangDou issue 349 / PR 351). The parent loads a plugin whose static
// initializer touches CUDA, then a fork-started worker uses the device; or
// the parent uses the device and starts a service child. The child gathers
// feature rows with a device kernel and must match the host gather.
// docs/failures/F4.md.
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "reference/base/status_json.h"
#include "reference/features/feature_store.h"
#include "reference/process/child_registry.h"
#include "reference/process/process.h"
#include "reference/runtime/lazy_init.h"
#include "repro/F4/plugin_host.h"
#include "repro/F4/signature.h"
#include "repro/registry.h"
#include "repro/scenario_support.h"

namespace faultline {
namespace repro {
namespace {

constexpr int64_t kRows = 64, kDim = 8;

Result<Tensor> Table() {
  std::vector<float> values(kRows * kDim);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.25f;
  return Tensor::FromVector(values, {kRows, kDim});
}

Result<Tensor> Ids() { return Tensor::FromVector(std::vector<int64_t>{5, 63, 0, 5, 17, 42}); }

// Gathers rows on the host: the single-process baseline, no CUDA involved.
Result<std::vector<float>> GatherOnHost() {
  FL_ASSIGN_OR_RETURN(Tensor table, Table());
  FL_ASSIGN_OR_RETURN(Tensor ids, Ids());
  FL_ASSIGN_OR_RETURN(Tensor rows, IndexSelect(table, ids));
  return rows.ToVector<float>();
}

// Gathers the same rows with a device kernel, as the child's real work.
Result<std::vector<float>> GatherOnDevice(RuntimeKind kind, std::string* step) {
  DeviceRuntime& rt = GetRuntime(kind);
  *step = "lazy_init";
  FL_RETURN_IF_ERROR(LazyInitCuda(rt));
  *step = "index_select";
  FL_ASSIGN_OR_RETURN(Tensor table, Table());
  FL_ASSIGN_OR_RETURN(Tensor ids, Ids());
  FL_ASSIGN_OR_RETURN(Tensor device_table, table.To(Device::Cuda(0), &rt));
  FL_ASSIGN_OR_RETURN(Tensor device_ids, ids.To(Device::Cuda(0), &rt));
  FL_ASSIGN_OR_RETURN(Tensor rows, IndexSelect(device_table, device_ids));
  FL_ASSIGN_OR_RETURN(Tensor host, rows.Cpu());
  return host.ToVector<float>();
}

// The child's body for both start methods: reports rows or the error.
int DeviceChild(RuntimeKind kind) {
  std::string step;
  Result<std::vector<float>> rows = GatherOnDevice(kind, &step);
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

int SpawnedDeviceChild(const std::vector<std::string>& args) {
  Result<RuntimeKind> kind = ParseRuntimeKind(args.empty() ? "" : args[0]);
  return kind.ok() ? DeviceChild(*kind) : 2;
}
FL_REGISTER_CHILD("faultline_f4_device_child", SpawnedDeviceChild);

// Starts the device child, waits for it and turns its report into an outcome.
Outcome RunChild(RuntimeKind kind, StartMethod method, const std::string& label, const Signature* signature,
                 std::string transcript) {
  transcript += "child: " + label + " started by " + StartMethodName(method) + "\n";
  auto child = ChildProcess::Start(method, [kind] { return DeviceChild(kind); }, "faultline_f4_device_child",
                                   {RuntimeKindName(kind)});
  if (!child.ok()) return Unexpected(Observe(child.status(), "main process", "start_child"), transcript);
  const std::string process = label + " (pid " + std::to_string(child->pid()) + ")";
  auto exit = child->Wait(std::chrono::seconds(60));
  if (!exit.ok()) return Unexpected(Observe(exit.status(), process, "wait"), transcript);
  nlohmann::json report = nlohmann::json::parse(exit->transcript, nullptr, /*allow_exceptions=*/false);
  if (report.is_discarded() || !report.contains("ok")) {
    return Unexpected(Observe(Status(StatusCode::kChildFailed, exit->Describe()), process, "report"), transcript);
  }
  if (!report["ok"].get<bool>()) {
    ObservedError error = Observe(StatusFromJson(report["status"]), process, report.value("step", ""));
    transcript += InitializationSiteNote(kind);
    return signature ? Reproduced(*signature, error, transcript) : Unexpected(error, transcript);
  }
  if (signature) return PassedIf(false, "the documented failure (the child used CUDA fine)", transcript);
  Result<std::vector<float>> baseline = GatherOnHost();
  const bool equal = baseline.ok() && report["rows"].get<std::vector<float>>() == *baseline;
  return PassedIf(equal, "the child's device gather equals the host gather", transcript);
}

Outcome RunWithPlugin(RuntimeKind kind, PluginKind plugin_kind, StartMethod method, const Signature* signature) {
  const bool eager = plugin_kind == PluginKind::kEager;
  std::string transcript = std::string("F4: the parent loaded the ") + (eager ? "eager" : "lazy") + " plugin\n";
  Result<Plugin> plugin = Plugin::Load(plugin_kind, kind);
  if (!plugin.ok()) return Unexpected(Observe(plugin.status(), "main process", "dlopen"), transcript);
  transcript += "plugin: " + plugin->path() + "\n";
  Status at_load = LastPluginInitStatus();
  if (!at_load.ok()) return Unexpected(Observe(at_load, "main process", "plugin_load"), transcript);
  Outcome outcome = RunChild(kind, method, "worker 0", signature, transcript);
  if (outcome.passed) {
    // The parent still uses the plugin afterwards; lazily it now initializes.
    Status used = plugin->Compute();
    if (!used.ok()) return Unexpected(Observe(used, "main process", "plugin_compute"), outcome.transcript);
    outcome.transcript += "the parent then used the plugin: ok\n";
  }
  return outcome;
}

// HuixiangDou: the parent used the device, then started its service child.
Outcome RunService(RuntimeKind kind, StartMethod method, const Signature* signature) {
  std::string transcript = "F4 service: the parent used the device, then started a service child\n";
  std::string step;
  Result<std::vector<float>> used = GatherOnDevice(kind, &step);
  if (!used.ok()) return Unexpected(Observe(used.status(), "main process", step), transcript);
  return RunChild(kind, method, "service child", signature, transcript);
}

const bool kRegistered = RegisterFailure(Failure{
    "F4",
    "CUDA context created at library load time (PEFT 1877 / 1879, HuixiangDou 349 / 351)",
    {
        {"legacy", Expectation::kReproduces, "eager plugin loaded, then a forked worker uses CUDA",
         [](RuntimeKind rt) { return RunWithPlugin(rt, PluginKind::kEager, StartMethod::kFork, &kF4LegacyWorker); }},
        {"fixed", Expectation::kPasses, "lazy plugin loaded, then a forked worker uses CUDA",
         [](RuntimeKind rt) { return RunWithPlugin(rt, PluginKind::kLazy, StartMethod::kFork, nullptr); }},
        {"workaround", Expectation::kPasses, "eager plugin loaded, then a spawned worker uses CUDA",
         [](RuntimeKind rt) { return RunWithPlugin(rt, PluginKind::kEager, StartMethod::kSpawn, nullptr); }},
        {"service-fork", Expectation::kReproduces, "parent used the device, service child started by fork",
         [](RuntimeKind rt) { return RunService(rt, StartMethod::kFork, &kF4ServiceFork); }},
        {"service-spawn", Expectation::kPasses, "parent used the device, service child started by spawn",
         [](RuntimeKind rt) { return RunService(rt, StartMethod::kSpawn, nullptr); }},
    }});

}  // namespace
}  // namespace repro
}  // namespace faultline
