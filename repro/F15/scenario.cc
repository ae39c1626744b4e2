// F15 — an optional dependency imported at import time initializes CUDA
// before notebook_launcher forks (accelerate #3524; fixed in accelerate
// 1.7.0). The parent imports the launcher library, whose import eagerly
// imports its optional FP8 backend (torchao.float8 in accelerate 1.6.0),
// and that import initializes CUDA. The launcher then forks two workers;
// each lazily initializes CUDA and gathers rows on the device, which must
// equal the host gather. docs/failures/F15.md.
#include <string>
#include <vector>

#include "reference/process/child_registry.h"
#include "reference/process/process.h"
#include "reference/runtime/lazy_init.h"
#include "repro/F15/signature.h"
#include "repro/gather_child.h"
#include "repro/registry.h"
#include "repro/scenario_support.h"

namespace faultline {
namespace repro {
namespace {

constexpr int kWorkers = 2;
const GatherCase kGather{48, 8, 0.5f, {0, 47, 5, 5, 20}};

// The FP8 backend's import: torchao 0.10.0's float8 modules ask
// torch.cuda.is_available() at module level and leave torch's CUDA
// initialized (torch.cuda.is_initialized() is True after the import):
// lazy init, then the device count.
Status ImportFp8Backend(DeviceRuntime& rt) {
  FL_RETURN_IF_ERROR(LazyInitCuda(rt));
  return rt.GetDeviceCount().status();
}

enum class Import { kEager, kWhereUsed };

// `from accelerate import notebook_launcher`: accelerate 1.6.0 imports the
// backend with the library (kEager); 1.7.0 imports it inside the functions
// that build FP8 layers (kWhereUsed), which a launch without FP8 never calls.
Status ImportLauncher(DeviceRuntime& rt, Import import) {
  return import == Import::kEager ? ImportFp8Backend(rt) : OkStatus();
}

int Worker(RuntimeKind kind) {
  std::string step;
  return ReportGather(GatherOnDevice(kind, kGather, 0, &step), step);
}

// Spawned entry: args = runtime.
int SpawnedWorker(const std::vector<std::string>& args) {
  if (args.size() != 1) return 2;
  Result<RuntimeKind> kind = ParseRuntimeKind(args[0]);
  return kind.ok() ? Worker(*kind) : 2;
}
FL_REGISTER_CHILD("faultline_f15_worker", SpawnedWorker);

Outcome Run(RuntimeKind kind, Import import, StartMethod method, const Expected& expected) {
  DeviceRuntime& rt = GetRuntime(kind);
  std::string transcript = std::string("F15: the parent imports the launcher, which imports its FP8 backend ") +
                           (import == Import::kEager ? "at import (accelerate 1.6.0)"
                                                     : "only where FP8 layers are built (accelerate 1.7.0)") +
                           ", then starts " + std::to_string(kWorkers) + " workers by " + StartMethodName(method) +
                           "\n";
  const Status imported = ImportLauncher(rt, import);
  if (!imported.ok()) return Unexpected(Observe(imported, "main process", "import"), transcript);
  Result<std::vector<float>> baseline = GatherOnHost(kGather);
  if (!baseline.ok()) return Unexpected(Observe(baseline.status(), "main process", "baseline"), transcript);

  std::vector<ChildProcess> workers;
  for (int i = 0; i < kWorkers; ++i) {
    auto child =
        ChildProcess::Start(method, [kind] { return Worker(kind); }, "faultline_f15_worker", {RuntimeKindName(kind)});
    if (!child.ok()) return Unexpected(Observe(child.status(), "main process", "start_worker"), transcript);
    workers.push_back(std::move(*child));
  }
  for (int i = 0; i < kWorkers; ++i) {
    const std::string process = "worker " + std::to_string(i) + " (pid " + std::to_string(workers[i].pid()) + ")";
    if (auto ended = CollectGather(workers[i], process, kind, expected, *baseline, &transcript)) return *ended;
  }
  return PassedIf(true, "every worker's device gather equals the host gather", transcript);
}

const bool kRegistered = RegisterFailure(Failure{
    "F15",
    "an optional dependency imported at import initializes CUDA before notebook_launcher forks (accelerate 3524)",
    {
        Reproduces("legacy", "the launcher's import imports the FP8 backend, which initializes CUDA; 2 forked workers",
                   F15LegacyWorker,
                   [](RuntimeKind rt, const Signature& s) {
                     return Run(rt, Import::kEager, StartMethod::kFork, ExpectSignature{s});
                   }),
        Passes("fixed", "the FP8 backend is imported only where FP8 layers are built; 2 forked workers",
               [](RuntimeKind rt) { return Run(rt, Import::kWhereUsed, StartMethod::kFork, ExpectPass{}); }),
        Passes("workaround", "eager import; 2 spawned workers (accelerate launch, not notebook_launcher)",
               [](RuntimeKind rt) { return Run(rt, Import::kEager, StartMethod::kSpawn, ExpectPass{}); }),
    }});

}  // namespace
}  // namespace repro
}  // namespace faultline
