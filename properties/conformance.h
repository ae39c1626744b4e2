// Provides the conformance scenarios: one per simulated-CUDA claim in
// docs/simcuda.md. Each runs in a fresh spawned process against one backend
// and returns what it observed as text; simcuda and real CUDA must observe
// exactly the expected text. Every scenario names the public source of the
// real behaviour and says whether a run on real CUDA has confirmed it.
#ifndef FAULTLINE_PROPERTIES_CONFORMANCE_H_
#define FAULTLINE_PROPERTIES_CONFORMANCE_H_

#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "reference/base/status.h"
#include "reference/runtime/runtime.h"

namespace faultline {
namespace conformance {

// The driver a scenario needs.
enum class Driver {
  kPresent,  // a working driver (real CUDA: a GPU machine)
  kNone,     // no libcuda.so.1 at all (real CUDA: a machine without a driver)
  kStub,     // the toolkit's stub libcuda.so found as libcuda.so.1 (anywhere)
};

// Returns "present", "none" or "stub".
const char* DriverName(Driver driver);

// What a scenario does and reads back, in its own fresh process.
using Observe = std::function<std::string(DeviceRuntime&)>;

// One scenario, written once: its name, what it runs, the fact it checks
// and that fact's source, and what both backends must observe.
struct Scenario {
  using Env = std::vector<std::pair<std::string, std::string>>;

  std::string name;
  Observe observe;
  std::string fact;      // the real-CUDA behaviour it checks
  std::string source;    // the public source of that behaviour
  std::string expected;  // the observation both backends must produce
  Driver driver = Driver::kPresent;
  Env env = {};     // extra environment for the scenario's process
  int devices = 1;  // the GPUs it needs on real CUDA (simcuda: say so in env)
};

// Prints a scenario by name (gtest parameter output).
void PrintTo(const Scenario& scenario, std::ostream* os);

// Returns every scenario.
const std::vector<Scenario>& Scenarios();

// Returns the scenarios a target runs on `runtime` on a machine whose real
// driver situation is `machine`. simcuda runs every scenario. On real CUDA a
// target runs the scenarios that need exactly `target_devices` GPUs: of
// those, the stub scenarios anywhere, the no-driver ones only where there is
// no driver, the rest only where there is one. (The 2-GPU scenarios have a
// target of their own, tagged multi_device, which a one-GPU run reports as
// not run: they are never left out in silence.)
std::vector<Scenario> ScenariosFor(RuntimeKind runtime, Driver machine, int target_devices);

// Runs `scenario` on `runtime` in a fresh spawned process and returns its
// observation (or the reason it could not run).
Result<std::string> RunScenario(const Scenario& scenario, RuntimeKind runtime);

}  // namespace conformance
}  // namespace faultline

#endif  // FAULTLINE_PROPERTIES_CONFORMANCE_H_
