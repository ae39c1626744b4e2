// F1 — CUDA initialized in CPU mode by data-loader workers (DGL #6921,
// fix PR 6924). The parent is a "CUDA build" that has probed the device; the
// loader samples on the CPU with two forked workers. The legacy GPU-dispatch
// check asks CUDA whether the graph is pinned, which fails in the forked
// workers. docs/failures/F1.md.
#include "reference/loader/data_loader.h"
#include "repro/F1/signature.h"
#include "repro/registry.h"
#include "repro/scenario_support.h"

namespace faultline {
namespace repro {
namespace {

// Named so the transcript's initialization site shows it: a CUDA build
// probing the device at startup, as torch does.
Status ProbeCudaLikeACudaBuild(RuntimeKind runtime) { return GetRuntime(runtime).GetDeviceCount().status(); }

Outcome Run(RuntimeKind runtime, Behaviour dispatch, StartMethod method, const Expected& expected) {
  Result<TempDataset> dataset = TempDataset::Create();
  if (!dataset.ok()) return Unexpected(Observe(dataset.status(), "main process", "create_dataset"), "");
  Status probed = ProbeCudaLikeACudaBuild(runtime);
  if (!probed.ok()) return Unexpected(Observe(probed, "main process", "probe_cuda"), "");
  LoaderOptions o = ScenarioLoaderOptions(dataset->dir(), runtime);
  o.mode = LoaderMode::kCpuCpu;
  o.num_workers = 2;
  o.start_method = method;
  o.dispatch = dispatch;
  return RunLoaderScenario(o, expected, "F1: the parent probed CUDA, then a cpu-cpu loader sampled in workers");
}

const bool kRegistered = RegisterFailure(
    Failure{"F1",
            "CUDA initialized in CPU mode by data-loader workers (DGL 6921 / 6924)",
            {
                Reproduces("legacy", "cpu-cpu, 2 forked workers, dispatch asks CUDA is_pinned(graph)", F1Legacy,
                           [](RuntimeKind rt, const Signature& s) {
                             return Run(rt, Behaviour::kLegacy, StartMethod::kFork, ExpectSignature{s});
                           }),
                Passes("fixed", "cpu-cpu, 2 forked workers, dispatch decides by the seeds' device",
                       [](RuntimeKind rt) { return Run(rt, Behaviour::kFixed, StartMethod::kFork, ExpectPass{}); }),
                Passes("workaround", "legacy dispatch with 2 spawned workers",
                       [](RuntimeKind rt) { return Run(rt, Behaviour::kLegacy, StartMethod::kSpawn, ExpectPass{}); }),
            }});

}  // namespace
}  // namespace repro
}  // namespace faultline
