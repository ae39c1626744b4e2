// Provides the conformance scenarios: one per simulated-CUDA fact of the
// design (init, fork after init, fork before init, spawn, primary-context
// creation points, pinned-range registry, pointer attributes, no device,
// sticky illegal address, per-thread last error). Each runs in a fresh
// spawned process against one backend and returns what it observed as text;
// simcuda and real CUDA must observe exactly the expected text.
#ifndef FAULTLINE_REFERENCE_RUNTIME_CONFORMANCE_H_
#define FAULTLINE_REFERENCE_RUNTIME_CONFORMANCE_H_

#include <string>
#include <utility>
#include <vector>

#include "reference/base/status.h"
#include "reference/runtime/runtime.h"

namespace faultline {
namespace conformance {

struct Scenario {
  using Env = std::vector<std::pair<std::string, std::string>>;

  std::string name;
  std::string fact;      // the real-CUDA behaviour it checks
  std::string expected;  // the observation both backends must produce
  // Extra environment for the scenario's process, per backend.
  Env simcuda_env = {};
  Env cuda_env = {};
  bool simcuda_only = false;  // not reproducible on a machine with a GPU
};

// Returns every scenario.
const std::vector<Scenario>& Scenarios();

// Runs `scenario` on `runtime` in a fresh spawned process and returns its
// observation (or the reason it could not run).
Result<std::string> RunScenario(const Scenario& scenario, RuntimeKind runtime);

}  // namespace conformance
}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_RUNTIME_CONFORMANCE_H_
