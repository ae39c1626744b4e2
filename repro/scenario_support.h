// Provides what every repro scenario needs: a temporary dataset on disk, the
// observed error in the documented-signature form, outcome construction and
// the transcript lines (error, process, step, where CUDA was initialized).
#ifndef FAULTLINE_REPRO_SCENARIO_SUPPORT_H_
#define FAULTLINE_REPRO_SCENARIO_SUPPORT_H_

#include <optional>
#include <string>
#include <utility>
#include <variant>

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

// What one run of a scenario must come to on the runtime it runs on: pass (run
// to the end with the expected output) or reproduce (fail showing
// `signature`). A failure's registration makes it from the variant's `must`:
// ExpectPass{} in a Passes run, ExpectSignature{s} in a Reproduces run, which
// is handed its signature s on that runtime.
struct ExpectPass {};
struct ExpectSignature {
  Signature signature;
};
using Expected = std::variant<ExpectPass, ExpectSignature>;

// The two endings every scenario shares. The run ended in `error`: reproduced
// when `expected` is a signature that `error` shows (Reproduced), else failed
// (Unexpected).
Outcome EndedInError(const Expected& expected, const ObservedError& error, std::string transcript);
// The run ran to the end (`how`, e.g. "the loader ran to the end"): a failed
// outcome when `expected` is a signature, since the documented failure did
// not happen; nullopt when it must pass, and the caller goes on to check the
// output.
std::optional<Outcome> RanToTheEnd(const Expected& expected, const std::string& how, const std::string& transcript);

// Returns, on simcuda, where CUDA was first initialized in this process (the
// parent of the failing child); on other runtimes, that real CUDA does not record it.
std::string InitializationSiteNote(RuntimeKind runtime);

// Loader options for the scenarios: dataset `dir`, two hops, 8 minibatches.
LoaderOptions ScenarioLoaderOptions(const std::string& dir, RuntimeKind runtime);
// Runs `options` and compares with the baseline (ExpectPass) or with the
// signature (ExpectSignature), writing the transcript; `header` opens it.
Outcome RunLoaderScenario(const LoaderOptions& options, const Expected& expected, const std::string& header);

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_SCENARIO_SUPPORT_H_
