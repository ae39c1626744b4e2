// F6 — a backend probe at import initializes the driver (Triton PR 9578;
// fix PR 10935, related 10443 / 10933 / 10614; seen as PyTorch #184643
// and vLLM #46996). The parent loads a backend library whose static
// initializer asks is_active(), then starts a worker that resolves the
// active driver and gathers feature rows with a device kernel, which must
// equal the host gather. docs/failures/F6.md.
#include <unistd.h>

#include <memory>

#include "reference/process/child_registry.h"
#include "reference/process/process.h"
#include "repro/F6/backend_host.h"
#include "repro/F6/signature.h"
#include "repro/gather_child.h"
#include "repro/registry.h"
#include "repro/scenario_support.h"

namespace faultline {
namespace repro {
namespace {

const GatherCase kGather{48, 4, 0.125f, {47, 1, 1, 30, 12}};

// The worker's work: resolve the backend's driver (triton.runtime.driver.active,
// what a compile worker or a kernel launch does first), then run a kernel.
Result<std::vector<float>> WorkerGather(const Backend& backend, RuntimeKind kind, std::string* step) {
  *step = "driver.active";
  FL_RETURN_IF_ERROR(backend.ResolveActiveDriver());
  return GatherOnDevice(kind, kGather, /*device=*/0, step);
}

int Report(const Result<std::vector<float>>& rows, const std::string& step) { return ReportGather(rows, step); }

// A forked worker inherits the parent's loaded library (its static
// initializer does not run again).
int ForkedWorker(const Backend& backend, RuntimeKind kind) {
  std::string step;
  Result<std::vector<float>> rows = WorkerGather(backend, kind, &step);
  return Report(rows, step);
}

// A spawned worker is a fresh image: importing the backend probes again, here.
// args = runtime, "cuinit" | "nvml".
int SpawnedWorker(const std::vector<std::string>& args) {
  if (args.size() != 2) return 2;
  Result<RuntimeKind> kind = ParseRuntimeKind(args[0]);
  if (!kind.ok()) return 2;
  std::string step = "import";
  Result<Backend> backend = Backend::Load(args[1] == "cuinit" ? ProbeKind::kCuInit : ProbeKind::kNvml, *kind);
  if (!backend.ok()) return Report(backend.status(), step);
  Result<std::vector<float>> rows = WorkerGather(*backend, *kind, &step);
  return Report(rows, step);
}
FL_REGISTER_CHILD("faultline_f6_worker", SpawnedWorker);

Outcome Run(RuntimeKind kind, ProbeKind probe, StartMethod method, const Expected& expected) {
  const bool cuinit = probe == ProbeKind::kCuInit;
  std::string transcript = std::string("F6: the parent imports the backend; its is_active() probe ") +
                           (cuinit ? "calls cuInit (Triton PR 9578)" : "asks NVML (Triton PR 10935 / 10933)") +
                           "; then worker 0 is started by " + StartMethodName(method) + "\n";
  Result<Backend> backend = Backend::Load(probe, kind);
  if (!backend.ok()) return Unexpected(Observe(backend.status(), "main process", "import"), transcript);
  transcript += "backend: " + backend->path() + "\n";
  Status at_load = backend->ActiveAtLoad();
  if (!at_load.ok()) return Unexpected(Observe(at_load, "main process", "import"), transcript);
  transcript += "is_active() at import in the parent: True\n";
  Result<std::vector<float>> baseline = GatherOnHost(kGather);
  if (!baseline.ok()) return Unexpected(Observe(baseline.status(), "main process", "baseline"), transcript);

  const Backend* loaded = &*backend;
  auto child = ChildProcess::Start(method, [loaded, kind] { return ForkedWorker(*loaded, kind); },
                                   "faultline_f6_worker", {RuntimeKindName(kind), cuinit ? "cuinit" : "nvml"});
  if (!child.ok()) return Unexpected(Observe(child.status(), "main process", "start_worker"), transcript);
  const std::string process = "worker 0 (pid " + std::to_string(child->pid()) + ")";
  if (auto ended = CollectGather(*child, process, kind, expected, *baseline, &transcript)) return *ended;
  return PassedIf(true, "the worker's device gather equals the host gather", transcript);
}

const bool kRegistered = RegisterFailure(Failure{
    "F6",
    "a backend probe at import initializes the driver (Triton PR 9578 / 10935; PyTorch 184643, vLLM 46996)",
    {
        Reproduces("legacy", "backend whose is_active() calls cuInit imported, then a forked worker", F6LegacyWorker,
                   [](RuntimeKind rt, const Signature& s) {
                     return Run(rt, ProbeKind::kCuInit, StartMethod::kFork, ExpectSignature{s});
                   }),
        Passes("fixed", "backend whose is_active() asks NVML imported, then a forked worker",
               [](RuntimeKind rt) { return Run(rt, ProbeKind::kNvml, StartMethod::kFork, ExpectPass{}); }),
        Passes("workaround", "backend whose is_active() calls cuInit imported, then a spawned worker",
               [](RuntimeKind rt) { return Run(rt, ProbeKind::kCuInit, StartMethod::kSpawn, ExpectPass{}); }),
    }});

}  // namespace
}  // namespace repro
}  // namespace faultline
