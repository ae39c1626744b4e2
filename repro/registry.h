// Provides the registry of documented failures: each failure has variants
// (legacy, fixed, workaround) with the outcome each must produce, and runs on
// a chosen runtime. The repro CLI lists and runs what is registered here.
#ifndef FAULTLINE_REPRO_REGISTRY_H_
#define FAULTLINE_REPRO_REGISTRY_H_

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "reference/runtime/runtime.h"

namespace faultline {
namespace repro {

enum class Expectation { kReproduces, kPasses };

// Returns "reproduces" or "passes".
const char* ExpectationName(Expectation expectation);

// The error a variant observed: the documented signature fields.
struct ObservedError {
  std::string name;     // e.g. "cudaErrorInitializationError" or "RuntimeError"
  int code = 0;
  std::string message;
  std::string process;  // e.g. "worker 1 (pid 4242)"
  std::string step;     // e.g. "sample_neighbors"
};

// Returns the error as {"name", "code", "message", "process", "step"}, or null.
nlohmann::json ErrorToJson(const std::optional<ObservedError>& error);

// The documented symptom a reproducing variant must show. Empty fields are
// not checked; `message` must occur in the observed message.
struct Signature {
  std::string name;
  int code = 0;
  std::string message;
  std::string process;  // prefix, e.g. "worker " or "service child "
  std::string step;
};

// Returns "" when `error` shows `signature`, else what differs.
std::string SignatureMismatch(const Signature& signature, const ObservedError& error);

// What running one variant produced.
struct Outcome {
  bool reproduced = false;          // the documented symptom was observed
  bool passed = false;              // ran to the end with the expected output
  std::optional<ObservedError> error;
  std::string transcript;           // human-readable account for the report
  // Why this machine cannot run the variant (it needs more GPUs than are
  // visible); empty when it ran. A variant that did not run never matches.
  std::string not_run;
};

struct Variant {
  std::string name;  // "legacy", "fixed", "workaround", or one of those with a suffix ("legacy-spawn")
  Expectation expected;
  std::string scenario;  // one line: what runs
  std::function<Outcome(RuntimeKind)> run;
  // Set in the environment of the variant's process by RunIsolated, e.g.
  // {"FAULTLINE_SIMCUDA_DEVICES", "2"} for a failure that needs two devices.
  std::vector<std::pair<std::string, std::string>> env = {};
};

// Returns whether `variant` is selected by --variant `filter`: an exact
// name, or its family ("legacy" selects "legacy" and "legacy-spawn").
bool VariantSelected(const std::string& variant, const std::string& filter);

struct Failure {
  std::string id;     // "F1"
  std::string title;  // one line
  std::vector<Variant> variants;
};

// Registers a failure; returns true so it can run at static init.
bool RegisterFailure(Failure failure);
// Returns every registered failure, sorted by id.
std::vector<Failure> Failures();
// Returns the variant `variant` of failure `id`, or nullptr.
const Variant* FindVariant(const std::string& id, const std::string& variant);

// Returns whether `outcome` is what `expected` asks for (never when not run).
bool Matches(Expectation expected, const Outcome& outcome);

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_REGISTRY_H_
