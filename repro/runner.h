// Provides RunIsolated: runs one variant in a fresh spawned process, so no
// variant sees the CUDA state another one left behind (a parent that already
// initialized CUDA would change every fork-based outcome).
#ifndef FAULTLINE_REPRO_RUNNER_H_
#define FAULTLINE_REPRO_RUNNER_H_

#include <chrono>
#include <functional>
#include <string>

#include "reference/runtime/runtime.h"
#include "repro/registry.h"

namespace faultline {
namespace repro {

// Runs variant `variant` of failure `id` on `runtime` in a spawned child of
// this binary, with the variant's `env` added to its environment. A child that crashes, hangs past `timeout` or reports
// nothing readable becomes an outcome that neither reproduced nor passed.
Outcome RunIsolated(const std::string& id, const std::string& variant, RuntimeKind runtime,
                    std::chrono::seconds timeout = std::chrono::seconds(180));

// What running one variant several times produced.
struct RepeatedOutcome {
  int runs = 0;
  int matched = 0;  // runs whose outcome matched the variant's expectation
  // The first run that did not match, else the last run.
  Outcome shown;
};

// Runs variant `variant` of failure `id` `repeat` times, each with
// RunIsolated (a fresh process), and counts the runs that matched.
// `progress`, when set, is called after each run with its 1-based number.
RepeatedOutcome RunRepeated(const std::string& id, const std::string& variant, RuntimeKind runtime, int repeat,
                            const std::function<void(int run, bool matched)>& progress = nullptr);

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_RUNNER_H_
