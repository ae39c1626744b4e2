// Provides the registry of documented failures: each failure has variants
// (legacy, fixed, workaround) with the outcome each must produce, and runs on
// a chosen runtime. The repro CLI lists and runs what is registered here.
#ifndef FAULTLINE_REPRO_REGISTRY_H_
#define FAULTLINE_REPRO_REGISTRY_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
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
  std::string name;  // e.g. "cudaErrorInitializationError" or "RuntimeError"
  int code = 0;
  std::string message;
  std::string process;  // e.g. "worker 1 (pid 4242)"
  std::string step;     // e.g. "sample_neighbors"
};

// Returns the error as {"name", "code", "message", "process", "step"}, or null.
nlohmann::json ErrorToJson(const std::optional<ObservedError>& error);

// How a signature's message or process must read: exactly `text` (a plain
// string converts to this), or, made by Pattern(), all of it matching the
// ECMAScript regex `text` (for what changes between runs: pids, times,
// addresses, and simcuda's extra detail).
struct ExpectedText {
  ExpectedText(const char* exact) : text(exact) {}
  ExpectedText(std::string exact) : text(std::move(exact)) {}
  std::string text;
  bool is_pattern = false;
};

// Returns the ExpectedText matched by the regex `regex`, anchored at both ends.
ExpectedText Pattern(std::string regex);
// Returns `text` with the regex's special characters escaped, to quote fixed
// text inside a Pattern.
std::string Quote(std::string_view text);
// Returns the Pattern of a process name "<label> (pid N)", any N; `label` is
// a regex too: "main process", R"(worker \d+)".
ExpectedText ProcessWithPid(const std::string& label);

// simcuda's note after an error in a child forked after its parent
// initialized CUDA, as a regex: "; this process (pid N) was forked after CUDA
// was initialized in pid P at:" (the backtrace follows on the next lines,
// which are not part of the observed message). Real CUDA adds nothing.
inline constexpr char kForkNotePattern[] =
    R"(; this process \(pid \d+\) was forked after CUDA was initialized in pid \d+ at:)";
// Returns `detail`, a regex, on simcuda, which adds it to an error's message,
// and "" on real CUDA, which adds nothing: a signature asks each runtime for
// exactly what it writes.
inline std::string SimCudaDetail(RuntimeKind runtime, const std::string& detail) {
  return runtime == RuntimeKind::kSimCuda ? detail : "";
}
// `pattern`, then simcuda's fork note on simcuda.
inline std::string WithForkNote(RuntimeKind runtime, const std::string& pattern) {
  return pattern + SimCudaDetail(runtime, kForkNotePattern);
}
// `pattern`, an error whose driver answer is in parentheses: real CUDA closes
// them (")"); simcuda goes on with its fork note instead.
inline std::string ClosedOrForkNote(RuntimeKind runtime, const std::string& pattern) {
  return pattern + (runtime == RuntimeKind::kSimCuda ? kForkNotePattern : R"(\))");
}

// The documented symptom a reproducing variant must show, every field as the
// failure's doc (docs/failures/F*.md) gives it.
struct Signature {
  std::string name;         // exactly
  std::optional<int> code;  // exactly; absent: any code
  ExpectedText message;
  ExpectedText process;  // e.g. ProcessWithPid("worker 0")
  std::string step;      // exactly
};

// Returns "" when `error` shows `signature`, else one line per field that
// differs, starting with the field's name ("code: expected 3, observed 0").
// The repro CLI's verdict (through Reproduced, repro/scenario_support.h) and
// the per-failure gtests both check with this.
std::string SignatureMismatch(const Signature& signature, const ObservedError& error);
// Returns whether `error` shows `signature` (SignatureMismatch is empty).
bool Matches(const Signature& signature, const ObservedError& error);

// What a variant's run came to: exactly one of these.
enum class Verdict {
  kReproduced,  // the documented symptom was observed
  kPassed,      // ran to the end with the expected output
  kFailed,      // neither: an unexpected error, the wrong output, a crash
  kNotRun,      // this machine cannot run it (Outcome::not_run says why)
};
// Returns "reproduced", "passed", "failed" or "not run".
const char* VerdictName(Verdict verdict);
// Returns the verdict VerdictName names; nullopt for any other text.
std::optional<Verdict> ParseVerdict(const std::string& name);

// What running one variant produced.
struct Outcome {
  Verdict verdict = Verdict::kFailed;
  std::optional<ObservedError> error;
  std::string transcript;  // human-readable account for the report
  // Why this machine cannot run the variant (it needs more GPUs than are
  // visible), when the verdict is kNotRun. A variant that did not run never
  // matches.
  std::string not_run;
};

// Runs a variant on a runtime (a reproducing variant's run already holds
// the signature it must show there: Reproduces).
using VariantRun = std::function<Outcome(RuntimeKind runtime)>;
// Environment set in a variant's process by RunIsolated, e.g.
// {"FAULTLINE_SIMCUDA_DEVICES", "2"} for a failure that needs two devices.
using VariantEnv = std::vector<std::pair<std::string, std::string>>;

// What a variant must come to: pass, or reproduce with its documented
// signature on each runtime (the one place it is chosen: the run gets it,
// `repro list --json` prints it).
struct MustPass {};
struct MustReproduce {
  std::function<Signature(RuntimeKind)> signature;
};

struct Variant {
  std::string name;      // "legacy", "fixed", "workaround", or one of those with a suffix ("legacy-spawn")
  std::string scenario;  // one line: what runs
  VariantRun run;
  VariantEnv env;
  std::variant<MustPass, MustReproduce> must;

  Expectation expected() const {
    return std::holds_alternative<MustReproduce>(must) ? Expectation::kReproduces : Expectation::kPasses;
  }
  // The signature it must show on `runtime`; nullopt for a variant that must pass.
  std::optional<Signature> SignatureOn(RuntimeKind runtime) const {
    if (const auto* reproduce = std::get_if<MustReproduce>(&must)) return reproduce->signature(runtime);
    return std::nullopt;
  }
};

// A variant that must show `signature` (docs/failures/F*.md): `run` gets it.
Variant Reproduces(std::string name, std::string scenario, std::function<Signature(RuntimeKind)> signature,
                   std::function<Outcome(RuntimeKind, const Signature&)> run, VariantEnv env = {});
// A variant that must run to the end with the expected output.
Variant Passes(std::string name, std::string scenario, std::function<Outcome(RuntimeKind)> run, VariantEnv env = {});
// The signature of a failure whose symptom reads the same on every runtime.
std::function<Signature(RuntimeKind)> OnEveryRuntime(Signature signature);
// Returns the signature as {"name", "code" (absent: any), "message",
// "process", "step"}, each text as {"text", "pattern"} (pattern: whether
// `text` is an anchored ECMAScript regex).
nlohmann::json SignatureToJson(const Signature& signature);

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
