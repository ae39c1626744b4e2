// F4 — CUDA context created at library load time (PEFT #1877 / PR 1879;
// HuixiangDou #349 / PR 351). The parent loads a plugin whose static
// initializer touches CUDA, then a fork-started worker uses the device; or
// the parent uses the device and starts a service child. The child gathers
// feature rows with a device kernel and must match the host gather.
// docs/failures/F4.md.
#include <unistd.h>

#include "reference/process/child_registry.h"
#include "reference/process/process.h"
#include "repro/F4/plugin_host.h"
#include "repro/F4/signature.h"
#include "repro/gather_child.h"
#include "repro/registry.h"
#include "repro/scenario_support.h"

namespace faultline {
namespace repro {
namespace {

const GatherCase kGather{64, 8, 0.25f, {5, 63, 0, 5, 17, 42}};

// The child's body for both start methods: reports rows or the error.
int DeviceChild(RuntimeKind kind) {
  std::string step;
  Result<std::vector<float>> rows = GatherOnDevice(kind, kGather, /*device=*/0, &step);
  return ReportGather(rows, step);
}

int SpawnedDeviceChild(const std::vector<std::string>& args) {
  Result<RuntimeKind> kind = ParseRuntimeKind(args.empty() ? "" : args[0]);
  return kind.ok() ? DeviceChild(*kind) : 2;
}
FL_REGISTER_CHILD("faultline_f4_device_child", SpawnedDeviceChild);

// Starts the device child, waits for it and turns its report into an outcome.
Outcome RunChild(RuntimeKind kind, StartMethod method, const std::string& label, const Expected& expected,
                 std::string transcript) {
  transcript += "child: " + label + " started by " + StartMethodName(method) + "\n";
  auto child = ChildProcess::Start(method, [kind] { return DeviceChild(kind); }, "faultline_f4_device_child",
                                   {RuntimeKindName(kind)});
  if (!child.ok()) return Unexpected(Observe(child.status(), "main process", "start_child"), transcript);
  const std::string process = label + " (pid " + std::to_string(child->pid()) + ")";
  Result<std::vector<float>> baseline = GatherOnHost(kGather);
  if (!baseline.ok()) return Unexpected(Observe(baseline.status(), "main process", "baseline"), transcript);
  if (auto ended = CollectGather(*child, process, kind, expected, *baseline, &transcript)) return *ended;
  return PassedIf(true, "the child's device gather equals the host gather", transcript);
}

Outcome RunWithPlugin(RuntimeKind kind, PluginKind plugin_kind, StartMethod method, const Expected& expected) {
  const bool eager = plugin_kind == PluginKind::kEager;
  std::string transcript = std::string("F4: the parent loaded the ") + (eager ? "eager" : "lazy") + " plugin\n";
  Result<Plugin> plugin = Plugin::Load(plugin_kind, kind);
  if (!plugin.ok()) return Unexpected(Observe(plugin.status(), "main process", "dlopen"), transcript);
  transcript += "plugin: " + plugin->path() + "\n";
  Status at_load = LastPluginInitStatus();
  if (!at_load.ok()) return Unexpected(Observe(at_load, "main process", "plugin_load"), transcript);
  Outcome outcome = RunChild(kind, method, "worker 0", expected, transcript);
  if (outcome.verdict == Verdict::kPassed) {
    // The parent still uses the plugin afterwards; lazily it now initializes.
    Status used = plugin->Compute();
    if (!used.ok()) return Unexpected(Observe(used, "main process", "plugin_compute"), outcome.transcript);
    outcome.transcript += "the parent then used the plugin: ok\n";
  }
  return outcome;
}

// HuixiangDou: the parent used the device, then started its service child.
Outcome RunService(RuntimeKind kind, StartMethod method, const Expected& expected) {
  std::string transcript = "F4 service: the parent used the device, then started a service child\n";
  std::string step;
  Result<std::vector<float>> used = GatherOnDevice(kind, kGather, /*device=*/0, &step);
  if (!used.ok()) return Unexpected(Observe(used.status(), "main process", step), transcript);
  return RunChild(kind, method, "service child", expected, transcript);
}

const bool kRegistered = RegisterFailure(Failure{
    "F4",
    "CUDA context created at library load time (PEFT 1877 / 1879, HuixiangDou 349 / 351)",
    {
        Reproduces("legacy", "eager plugin loaded, then a forked worker uses CUDA", F4LegacyWorker,
                   [](RuntimeKind rt, const Signature& s) {
                     return RunWithPlugin(rt, PluginKind::kEager, StartMethod::kFork, ExpectSignature{s});
                   }),
        Passes("fixed", "lazy plugin loaded, then a forked worker uses CUDA",
               [](RuntimeKind rt) { return RunWithPlugin(rt, PluginKind::kLazy, StartMethod::kFork, ExpectPass{}); }),
        Passes("workaround", "eager plugin loaded, then a spawned worker uses CUDA",
               [](RuntimeKind rt) { return RunWithPlugin(rt, PluginKind::kEager, StartMethod::kSpawn, ExpectPass{}); }),
        Reproduces(
            "service-fork", "parent used the device, service child started by fork", F4ServiceFork,
            [](RuntimeKind rt, const Signature& s) { return RunService(rt, StartMethod::kFork, ExpectSignature{s}); }),
        Passes("service-spawn", "parent used the device, service child started by spawn",
               [](RuntimeKind rt) { return RunService(rt, StartMethod::kSpawn, ExpectPass{}); }),
    }});

}  // namespace
}  // namespace repro
}  // namespace faultline
