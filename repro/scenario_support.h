// Provides what every repro scenario needs: a temporary dataset on disk, the
// observed error in the documented-signature form, outcome construction and
// the transcript lines (error, process, step, where CUDA was initialized).
#ifndef FAULTLINE_REPRO_SCENARIO_SUPPORT_H_
#define FAULTLINE_REPRO_SCENARIO_SUPPORT_H_

#include <string>
#include <utility>

#include "reference/base/status.h"
#include "reference/base/temp_dir.h"
#include "reference/loader/data_loader.h"
#include "reference/runtime/runtime.h"
#include "repro/registry.h"

namespace faultline {
namespace repro {

// A small power-law graph with float32 features in a fresh temporary
// directory (under DefaultTempBase()), removed with everything in it on
// destruction.
class TempDataset {
 public:
  static Result<TempDataset> Create();
  TempDataset(TempDataset&&) noexcept = default;
  TempDataset(const TempDataset&) = delete;
  TempDataset& operator=(const TempDataset&) = delete;
  const std::string& dir() const { return dir_.path(); }

 private:
  explicit TempDataset(TempDir dir) : dir_(std::move(dir)) {}
  TempDir dir_;
};

// Returns `error` as the signature fields: CUDA name and code when the error
// came from a runtime (else the status code's name and 0) and the first line
// of the message.
ObservedError Observe(const Status& error, const std::string& process, const std::string& step);

// Returns a reproducing outcome when `error` shows `signature`; otherwise a
// failed outcome whose transcript says what differs.
Outcome Reproduced(const Signature& signature, const ObservedError& error, std::string transcript);
// Returns a failed outcome for an error no signature expected.
Outcome Unexpected(const ObservedError& error, std::string transcript);
// Returns the outcome of a variant this machine cannot run (`why`: e.g. it
// needs 2 GPUs and NVML reports 1): reported as "not run", never a match.
Outcome NotRunHere(const std::string& why, std::string transcript);
// Returns a passing outcome when `equal`, else a failed one saying so.
Outcome PassedIf(bool equal, const std::string& what, std::string transcript);

// Returns, on simcuda, where CUDA was first initialized in this process (the
// parent of the failing child); on other runtimes, that real CUDA does not record it.
std::string InitializationSiteNote(RuntimeKind runtime);

// Loader options for the scenarios: dataset `dir`, two hops, 8 minibatches.
LoaderOptions ScenarioLoaderOptions(const std::string& dir, RuntimeKind runtime);
// Runs `options` and compares with the baseline (passes) or with `signature`
// (reproduces), writing the transcript; `header` opens it.
Outcome RunLoaderScenario(const LoaderOptions& options, const Signature* signature, const std::string& header);

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_SCENARIO_SUPPORT_H_
