// F2 — pinned memory unregistered from workers (DGL issue 7381). A
// pinned-cuda loader (graph pinned by the parent, sampled by the device) with
// two workers: the legacy pipeline state carries the parent's unpinner, which
// the worker calls on what it received. docs/failures/F2.md.
#include <chrono>
#include <vector>

#include "reference/loader/data_loader.h"
#include "reference/loader/dispatch.h"
#include "reference/process/process.h"
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
  return RunLoaderScenario(o, &signature, kHeader);
}

// The fix's other half, owner-only unpin: a worker that receives the
// parent's pinned graph leaves it to its owner, and its restore step
// succeeds. The fixed loader refuses such workers, so this runs that step
// (RestorePinnedGraphInWorker) itself, in a child forked after the pin, and
// says what went wrong ("" if nothing). (Whatever the child did, the
// parent's pin would stand: CUDA refuses a forked child's unpin. What a
// wrong fix changes is the step's own result.)
std::string OwnerOnlyUnpinProblem(RuntimeKind runtime) {
  DeviceRuntime& rt = GetRuntime(runtime);
  std::vector<int64_t> graph(4096, 1);
  const size_t bytes = graph.size() * sizeof(int64_t);
  if (Status pinned = rt.HostRegister(graph.data(), bytes); !pinned.ok()) {
    return "the parent could not pin: " + pinned.ToString();
  }
  std::string problem;
  Result<ChildProcess> worker = ChildProcess::Fork([&] {
    Status restored = RestorePinnedGraphInWorker(Behaviour::kFixed, rt, graph.data());
    ReportToParent(restored.ok() ? "ok" : restored.ToString());
    return 0;
  });
  Result<ChildExit> exit = worker.ok() ? worker->Wait(std::chrono::seconds(60)) : Result<ChildExit>(worker.status());
  if (!exit.ok()) {
    problem = "the forked worker: " + exit.status().ToString();
  } else if (!exit->succeeded() || exit->transcript != "ok") {
    problem = "the forked worker's restore: " + (exit->transcript.empty() ? exit->Describe() : exit->transcript);
  }
  if (Status unpinned = rt.HostUnregister(graph.data()); problem.empty() && !unpinned.ok()) {
    problem = "the owner could not unpin: " + unpinned.ToString();
  }
  return problem;
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
    return PassedIf(false, "the refusal \"" + std::string(kF2FixedRefusal) + "...\"; got: " +
                               (refused.ok() ? "a loader" : refused.status().message()),
                    transcript);
  }
  transcript += "fixed loader refused num_workers = 2: " + refused.status().message() + "\n";
  if (std::string problem = OwnerOnlyUnpinProblem(runtime); !problem.empty()) {
    return PassedIf(false, "owner-only unpin (a forked worker's restore leaves the parent's pin alone); " + problem,
                    transcript);
  }
  transcript += "owner-only unpin: a worker forked after the pin restored the graph without unpinning it\n";
  o.num_workers = 0;
  return RunLoaderScenario(o, nullptr, transcript + "following the advice:");
}

// cpu-cuda samples in the workers and copies to the device in the parent.
Outcome RunCpuCuda(RuntimeKind runtime) {
  Result<TempDataset> dataset = TempDataset::Create();
  if (!dataset.ok()) return Unexpected(Observe(dataset.status(), "main process", "create_dataset"), "");
  LoaderOptions o = PinnedLoader(*dataset, runtime, StartMethod::kFork);
  o.mode = LoaderMode::kCpuCuda;
  return RunLoaderScenario(o, nullptr, "F2 workaround: sample on the CPU in workers, copy to the device in the parent");
}

const bool kRegistered = RegisterFailure(Failure{
    "F2",
    "pinned memory unregistered from data-loader workers (DGL 7381)",
    {
        {"legacy", Expectation::kReproduces, "pinned-cuda, 2 forked workers unpin the parent's pinned graph",
         [](RuntimeKind rt) { return RunLegacy(rt, StartMethod::kFork, kF2LegacyFork); }},
        {"legacy-spawn", Expectation::kReproduces, "pinned-cuda, 2 spawned workers unpin what they did not pin",
         [](RuntimeKind rt) { return RunLegacy(rt, StartMethod::kSpawn, kF2LegacySpawn); }},
        {"fixed", Expectation::kPasses, "owner-only unpin; workers refused for pinned-cuda, num_workers = 0 used",
         RunFixed},
        {"workaround", Expectation::kPasses, "cpu-cuda with 2 forked workers", RunCpuCuda},
    }});

}  // namespace
}  // namespace repro
}  // namespace faultline
