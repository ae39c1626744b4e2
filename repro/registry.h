// Provides the registry of documented failures: each failure has variants
// (legacy, fixed, workaround) with the outcome each must produce, and runs on
// a chosen runtime. The repro CLI lists and runs what is registered here.
#ifndef FAULTLINE_REPRO_REGISTRY_H_
#define FAULTLINE_REPRO_REGISTRY_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

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

// What running one variant produced.
struct Outcome {
  bool reproduced = false;          // the documented symptom was observed
  bool passed = false;              // ran to the end with the expected output
  std::optional<ObservedError> error;
  std::string transcript;           // human-readable account for the report
};

struct Variant {
  std::string name;  // "legacy", "fixed" or "workaround"
  Expectation expected;
  std::function<Outcome(RuntimeKind)> run;
};

struct Failure {
  std::string id;     // "F1"
  std::string title;  // one line
  std::vector<Variant> variants;
};

// Registers a failure; returns true so it can run at static init.
bool RegisterFailure(Failure failure);
// Returns every registered failure, sorted by id.
std::vector<Failure> Failures();

// Returns whether `outcome` is what `expected` asks for.
bool Matches(Expectation expected, const Outcome& outcome);

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_REGISTRY_H_
