// F2 — pinned memory unregistered from workers (DGL #7381). A
// pinned-cuda loader (graph pinned by the parent, sampled by the device) with
// two workers: the legacy pipeline state carries the parent's unpinner, which
// the worker calls on what it received. docs/failures/F2.md.
#include <unistd.h>

#include <chrono>
#include <vector>

#include "reference/loader/data_loader.h"
#include "reference/loader/dispatch.h"
#include "reference/process/process.h"
#include "reference/tensor/tensor.h"
#include "repro/F2/signature.h"
#include "repro/registry.h"
#include "repro/scenario_support.h"

namespace faultline {
namespace repro {
namespace {

LoaderOptions PinnedLoader(const TempDataset& dataset, RuntimeKind runtime, StartMethod method) {
  LoaderOptions o = ScenarioLoaderOptions(dataset.dir(), runtime);
  o.mode = LoaderMode::kPinnedCuda;
  o.num_workers = 2;
  o.start_method = method;
  return o;
}

constexpr char kHeader[] = "F2: a pinned-cuda loader (graph pinned by the parent) with data-loader workers";

Outcome RunLegacy(RuntimeKind runtime, StartMethod method, const Signature& signature) {
  Result<TempDataset> dataset = TempDataset::Create();
  if (!dataset.ok()) return Unexpected(Observe(dataset.status(), "main process", "create_dataset"), "");
  LoaderOptions o = PinnedLoader(*dataset, runtime, method);
  o.pin_handling = Behaviour::kLegacy;
  return RunLoaderScenario(o, ExpectSignature{signature}, kHeader);
}

// The fix's other half, owner-only unpin (Note [Pin ownership per process],
// reference/tensor/tensor.cc): the parent pins a Tensor (its storage records
// pinned_by) and forks a worker, which runs the fixed restore step and drops
// its copy of the tensor. Neither may make a CUDA call: in this forked child
// one fails with 3, which simcuda keeps as the last error (checked on simcuda
// only: real CUDA's last error there is unverified). The parent's pin must
// still stand afterwards. Returns what went wrong ("" if nothing) and adds
// what it checked to `transcript`.
std::string OwnerOnlyUnpinProblem(RuntimeKind runtime, std::string* transcript) {
  DeviceRuntime& rt = GetRuntime(runtime);
  Result<Tensor> graph = Tensor::FromVector(std::vector<int64_t>(4096, 1));
  if (!graph.ok()) return "the parent could not make the tensor: " + graph.status().ToString();
  if (Status pinned = graph->Pin(rt); !pinned.ok()) return "the parent could not pin: " + pinned.ToString();
  (void)rt.GetLastError();  // the worker inherits this thread's last error: start it clean
  Result<ChildProcess> worker = ChildProcess::Fork([&] {
    Status restored = RestorePinnedGraphInWorker(Behaviour::kFixed, rt, graph->raw_data());
    *graph = Tensor();  // the worker's copy goes: its storage must not unpin the parent's memory
    std::string report = restored.ok() ? "restored" : "restore failed: " + restored.ToString();
    if (runtime == RuntimeKind::kSimCuda) {
      const Status last = rt.PeekAtLastError();
      report += last.ok() ? "; no CUDA call" : "; it made a CUDA call (its last error: " + last.ToString() + ")";
    }
    ReportToParent(report);
    return 0;
  });
  Result<ChildExit> exit = worker.ok() ? worker->Wait(std::chrono::seconds(60)) : Result<ChildExit>(worker.status());
  if (!exit.ok()) return "the forked worker: " + exit.status().ToString();
  const std::string expected = runtime == RuntimeKind::kSimCuda ? "restored; no CUDA call" : "restored";
  if (!exit->succeeded() || exit->transcript != expected) {
    return "the forked worker (pid " + std::to_string(exit->pid) +
           "): " + (exit->transcript.empty() ? exit->Describe() : exit->transcript);
  }
  const char* calls = runtime == RuntimeKind::kSimCuda
                          ? "without a CUDA call"
                          : "(whether it made a CUDA call: simcuda records it, real CUDA does not)";
  *transcript += "owner-only unpin: the parent pinned a tensor; worker (pid " + std::to_string(exit->pid) +
                 "), forked after, ran the fixed restore step and dropped its copy of the tensor " + calls + "\n";
  Result<bool> still_pinned = rt.IsPinned(graph->raw_data());
  if (!still_pinned.ok() || !*still_pinned || graph->pinned_by() != getpid()) {
    return "the parent's pin is gone after the worker dropped its copy";
  }
  *transcript += "the parent's pin stands (pinned_by pid " + std::to_string(graph->pinned_by()) + ")\n";
  if (Status unpinned = graph->Unpin(); !unpinned.ok()) return "the owner could not unpin: " + unpinned.ToString();
  return "";
}

// The fixed loader refuses workers for device sampling and says what to
// use; following its advice (num_workers = 0) gives the baseline.
Outcome RunFixed(RuntimeKind runtime) {
  Result<TempDataset> dataset = TempDataset::Create();
  if (!dataset.ok()) return Unexpected(Observe(dataset.status(), "main process", "create_dataset"), "");
  LoaderOptions o = PinnedLoader(*dataset, runtime, StartMethod::kFork);
  std::string transcript = std::string(kHeader) + "\n";
  Result<std::unique_ptr<DataLoader>> refused = DataLoader::Create(o);
  if (refused.ok() || refused.status().message().rfind(kF2FixedRefusal, 0) != 0) {
    return PassedIf(false,
                    "the refusal \"" + std::string(kF2FixedRefusal) +
                        "...\"; got: " + (refused.ok() ? "a loader" : refused.status().message()),
                    transcript);
  }
  transcript += "fixed loader refused num_workers = 2: " + refused.status().message() + "\n";
  if (std::string problem = OwnerOnlyUnpinProblem(runtime, &transcript); !problem.empty()) {
    return PassedIf(false, "owner-only unpin (a forked worker leaves the parent's pin alone); " + problem, transcript);
  }
  o.num_workers = 0;
  return RunLoaderScenario(o, ExpectPass{}, transcript + "following the advice:");
}

// cpu-cuda samples in the workers and copies to the device in the parent.
Outcome RunCpuCuda(RuntimeKind runtime) {
  Result<TempDataset> dataset = TempDataset::Create();
  if (!dataset.ok()) return Unexpected(Observe(dataset.status(), "main process", "create_dataset"), "");
  LoaderOptions o = PinnedLoader(*dataset, runtime, StartMethod::kFork);
  o.mode = LoaderMode::kCpuCuda;
  return RunLoaderScenario(o, ExpectPass{},
                           "F2 workaround: sample on the CPU in workers, copy to the device in the parent");
}

const bool kRegistered = RegisterFailure(
    Failure{"F2",
            "pinned memory unregistered from data-loader workers (DGL 7381)",
            {
                Reproduces("legacy", "pinned-cuda, 2 forked workers unpin the parent's pinned graph", F2LegacyFork,
                           [](RuntimeKind rt, const Signature& s) { return RunLegacy(rt, StartMethod::kFork, s); }),
                Reproduces("legacy-spawn", "pinned-cuda, 2 spawned workers unpin what they did not pin", F2LegacySpawn,
                           [](RuntimeKind rt, const Signature& s) { return RunLegacy(rt, StartMethod::kSpawn, s); }),
                Passes("fixed", "owner-only unpin; workers refused for pinned-cuda, num_workers = 0 used", RunFixed),
                Passes("workaround", "cpu-cuda with 2 forked workers", RunCpuCuda),
            }});

}  // namespace
}  // namespace repro
}  // namespace faultline
