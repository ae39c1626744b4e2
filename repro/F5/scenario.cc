// F5 — counting devices poisons every later fork (PyTorch #83973; fix
// PRs 84879 and 85951). The parent asks how many devices there are, then
// starts two workers; each worker initializes CUDA, selects device
// `index % count` and gathers feature rows with a device kernel, which must
// equal the host gather. docs/failures/F5.md.
#include <unistd.h>

#include <optional>

#include "reference/base/parse_int.h"
#include "reference/process/child_registry.h"
#include "reference/process/process.h"
#include "reference/runtime/lazy_init.h"
#include "repro/F5/signature.h"
#include "repro/gather_child.h"
#include "repro/registry.h"
#include "repro/scenario_support.h"

namespace faultline {
namespace repro {
namespace {

constexpr int kWorkers = 2;
const GatherCase kGather{64, 8, 0.5f, {3, 63, 0, 3, 21, 40}};

// torch.cuda.device_count() before PR 84879: torch._C._cuda_getDeviceCount(),
// which marks the process for the bad-fork check (poison_fork) and calls
// cudaGetDeviceCount. That runtime call is the process's first, so it
// initializes CUDA (cuInit). LazyInitCuda is faultline's pair of those two
// steps: the mark and cudaGetDeviceCount.
Result<int> DeviceCountLegacy(DeviceRuntime& rt) {
  FL_RETURN_IF_ERROR(LazyInitCuda(rt));
  return rt.GetDeviceCount();
}

// torch.cuda.device_count() after PR 84879 (and torch.cuda.is_available()
// under PYTORCH_NVML_BASED_CUDA_CHECK=1, PR 85951): ask NVML, which does not
// initialize CUDA, so the process may still fork workers that use it.
Result<int> DeviceCountFixed(DeviceRuntime& rt) { return rt.NvmlDeviceCount(); }

// The worker's work, as in the issue's `torch.cuda.set_device(idx)`: lazy
// init, select its device, gather the rows there and bring them back.
int Worker(RuntimeKind kind, int index, int count) {
  std::string step;
  Result<std::vector<float>> rows = GatherOnDevice(kind, kGather, count > 0 ? index % count : 0, &step);
  return ReportGather(rows, step);
}

// Spawned entry: args = runtime, worker index, device count.
int SpawnedWorker(const std::vector<std::string>& args) {
  if (args.size() != 3) return 2;
  Result<RuntimeKind> kind = ParseRuntimeKind(args[0]);
  const std::optional<int> index = ParseWholeNonNegative<int>(args[1]);
  const std::optional<int> count = ParseWholeNonNegative<int>(args[2]);
  return kind.ok() && index && count ? Worker(*kind, *index, *count) : 2;
}
FL_REGISTER_CHILD("faultline_f5_worker", SpawnedWorker);

enum class Count { kLegacy, kFixed };

Outcome Run(RuntimeKind kind, Count how, StartMethod method, const Expected& expected) {
  DeviceRuntime& rt = GetRuntime(kind);
  const bool legacy = how == Count::kLegacy;
  std::string transcript = std::string("F5: the parent counts devices with ") +
                           (legacy ? "cudaGetDeviceCount (torch.cuda.device_count before PR 84879)"
                                   : "NVML (torch.cuda.device_count after PR 84879)") +
                           ", then starts " + std::to_string(kWorkers) + " workers by " + StartMethodName(method) +
                           "\n";
  Result<int> count = legacy ? DeviceCountLegacy(rt) : DeviceCountFixed(rt);
  if (!count.ok()) return Unexpected(Observe(count.status(), "main process", "device_count"), transcript);
  transcript += "device_count() = " + std::to_string(*count) + "\n";
  Result<std::vector<float>> baseline = GatherOnHost(kGather);
  if (!baseline.ok()) return Unexpected(Observe(baseline.status(), "main process", "baseline"), transcript);

  std::vector<ChildProcess> workers;
  for (int i = 0; i < kWorkers; ++i) {
    const int n = *count;
    auto child = ChildProcess::Start(method, [kind, i, n] { return Worker(kind, i, n); }, "faultline_f5_worker",
                                     {RuntimeKindName(kind), std::to_string(i), std::to_string(n)});
    if (!child.ok()) return Unexpected(Observe(child.status(), "main process", "start_worker"), transcript);
    workers.push_back(std::move(*child));
  }
  for (int i = 0; i < kWorkers; ++i) {
    const std::string process = "worker " + std::to_string(i) + " (pid " + std::to_string(workers[i].pid()) + ")";
    if (auto ended = CollectGather(workers[i], process, kind, expected, *baseline, &transcript)) return *ended;
  }
  return PassedIf(true, "every worker's device gather equals the host gather", transcript);
}

const bool kRegistered = RegisterFailure(
    Failure{"F5",
            "counting devices poisons every later fork (PyTorch 83973 / 84879, 85951)",
            {
                Reproduces("legacy", "cudaGetDeviceCount in the parent, then 2 forked workers use CUDA", F5LegacyWorker,
                           [](RuntimeKind rt, const Signature& s) {
                             return Run(rt, Count::kLegacy, StartMethod::kFork, ExpectSignature{s});
                           }),
                Passes("fixed", "NVML device count in the parent, then 2 forked workers use CUDA",
                       [](RuntimeKind rt) { return Run(rt, Count::kFixed, StartMethod::kFork, ExpectPass{}); }),
                Passes("workaround", "cudaGetDeviceCount in the parent, then 2 spawned workers use CUDA",
                       [](RuntimeKind rt) { return Run(rt, Count::kLegacy, StartMethod::kSpawn, ExpectPass{}); }),
            }});

}  // namespace
}  // namespace repro
}  // namespace faultline
