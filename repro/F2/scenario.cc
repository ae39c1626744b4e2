// F2 — pinned memory unregistered from workers (DGL issue 7381). A
// pinned-cuda loader (graph pinned by the parent, sampled by the device) with
// two workers: the legacy pipeline state carries the parent's unpinner, which
// the worker calls on what it received. docs/failures/F2.md.
#include "reference/loader/data_loader.h"
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
