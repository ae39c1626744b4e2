// Implements RunIsolated. The child reports its Outcome as one JSON object
// through the report pipe.
#include "repro/runner.h"

#include <optional>

#include <nlohmann/json.hpp>

#include "reference/process/child_registry.h"
#include "reference/process/process.h"

namespace faultline {
namespace repro {
namespace {

nlohmann::json OutcomeToJson(const Outcome& o) {
  nlohmann::json j = {{"verdict", VerdictName(o.verdict)}, {"transcript", o.transcript}};
  if (o.error) j["error"] = ErrorToJson(o.error);
  if (!o.not_run.empty()) j["not_run"] = o.not_run;
  return j;
}

Outcome OutcomeFromJson(const nlohmann::json& j) {
  Outcome o;
  // An unknown verdict reads as failed; the transcript keeps what it said.
  o.verdict = ParseVerdict(j.at("verdict").get<std::string>()).value_or(Verdict::kFailed);
  o.transcript = j.at("transcript");
  o.not_run = j.value("not_run", "");
  if (j.contains("error")) {
    const nlohmann::json& e = j["error"];
    o.error = ObservedError{e.at("name"), e.at("code"), e.at("message"), e.at("process"), e.at("step")};
  }
  return o;
}

// Child entry: args = failure id, variant, runtime name.
int RunVariantChild(const std::vector<std::string>& args) {
  if (args.size() != 3) return 2;
  const Variant* variant = FindVariant(args[0], args[1]);
  Result<RuntimeKind> runtime = ParseRuntimeKind(args[2]);
  if (variant == nullptr || !runtime.ok()) return 2;
  ReportToParent(OutcomeToJson(variant->run(*runtime)).dump());
  return 0;
}
FL_REGISTER_CHILD("faultline_repro_variant", RunVariantChild);

Outcome Broken(const std::string& why) {
  Outcome o;
  o.transcript = why;
  return o;
}

}  // namespace

Outcome RunIsolated(const std::string& id, const std::string& variant, RuntimeKind runtime,
                    std::chrono::seconds timeout) {
  const Variant* found = FindVariant(id, variant);
  if (found == nullptr) return Broken("no variant " + variant + " of " + id + " is registered");
  SpawnOptions options;
  options.env = found->env;  // read by the runtime when the variant's process first uses it
  auto child = ChildProcess::Spawn("faultline_repro_variant", {id, variant, RuntimeKindName(runtime)}, options);
  if (!child.ok()) return Broken("could not start the variant's process: " + child.status().ToString());
  auto exit = child->Wait(timeout);
  if (!exit.ok()) return Broken("waiting for the variant's process failed: " + exit.status().ToString());
  if (!exit->succeeded()) return Broken("the variant's process failed: " + exit->Describe() + "\n" + exit->transcript);
  nlohmann::json j = nlohmann::json::parse(exit->transcript, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Broken("the variant's process reported no outcome:\n" + exit->transcript);
  try {
    return OutcomeFromJson(j);
  } catch (const nlohmann::json::exception& e) {
    return Broken(std::string("the variant's report is incomplete: ") + e.what());
  }
}

RepeatedOutcome RunRepeated(const std::string& id, const std::string& variant, RuntimeKind runtime, int repeat,
                            const std::function<void(int run, bool matched)>& progress) {
  RepeatedOutcome result;
  const Variant* found = FindVariant(id, variant);
  for (int run = 1; run <= repeat; ++run) {
    Outcome outcome = RunIsolated(id, variant, runtime);
    const bool matched = found != nullptr && Matches(found->expected(), outcome);
    ++result.runs;
    if (matched) ++result.matched;
    // Show the latest run while all matched, then the first that did not.
    const bool all_matched = result.matched == result.runs;
    const bool first_mismatch = !matched && result.runs - result.matched == 1;
    if (all_matched || first_mismatch) result.shown = std::move(outcome);
    if (progress) progress(run, matched);
  }
  return result;
}

}  // namespace repro
}  // namespace faultline
