// Implements the shared scenario helpers.
#include "repro/scenario_support.h"

#include <unistd.h>

#include <cstring>
#include <memory>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "reference/graph/generators.h"
#include "reference/graph/npy.h"
#include "reference/runtime/simcuda_runtime.h"

namespace faultline {
namespace repro {
namespace {

constexpr int64_t kNodes = 2000;
constexpr int64_t kEdges = 20000;
constexpr int64_t kFeatureDim = 16;

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// Returns "error: <name> (<code>): <message>\nprocess: ...\nstep: ...\n".
std::string DescribeError(const ObservedError& e) {
  return "error: " + e.name + " (" + std::to_string(e.code) + "): " + e.message + "\nprocess: " + e.process +
         "\nstep: " + e.step + "\n";
}

// Runs a loader to the end; on failure fills *failure when the loader knows where.
Result<std::vector<MiniBatch>> DrainLoader(const LoaderOptions& options, std::optional<LoaderFailure>* failure) {
  FL_ASSIGN_OR_RETURN(std::unique_ptr<DataLoader> loader, DataLoader::Create(options));
  std::vector<MiniBatch> batches;
  for (;;) {
    Result<std::optional<MiniBatch>> next = loader->Next();
    if (!next.ok()) {
      if (failure != nullptr) *failure = loader->failure();
      return next.status();
    }
    if (!next->has_value()) return batches;
    batches.push_back(std::move(**next));
  }
}

// Returns the single-process baseline: cpu-cpu, num_workers = 0, fixed.
Result<std::vector<MiniBatch>> LoaderBaseline(const LoaderOptions& options) {
  LoaderOptions baseline = options;
  baseline.mode = LoaderMode::kCpuCpu;
  baseline.num_workers = 0;
  baseline.dispatch = Behaviour::kFixed;
  baseline.pin_handling = Behaviour::kFixed;
  return DrainLoader(baseline, nullptr);
}

}  // namespace

Result<TempDataset> TempDataset::Create() {
  FL_ASSIGN_OR_RETURN(TempDir dir, TempDir::Create("", "faultline-repro-", "a folder for the scenario's dataset"));
  TempDataset dataset(std::move(dir));
  FL_ASSIGN_OR_RETURN(CscGraph graph, GeneratePowerLaw(kNodes, kEdges, /*seed=*/7, /*weighted=*/false));
  FL_RETURN_IF_ERROR(graph.Save(dataset.dir()));
  npy::NpyArray features;
  features.dtype = npy::DType::kFloat32;
  features.shape = {kNodes, kFeatureDim};
  std::vector<float> values(kNodes * kFeatureDim);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 9973) * 0.5f;
  features.bytes.resize(values.size() * sizeof(float));
  std::memcpy(features.bytes.data(), values.data(), features.bytes.size());
  FL_RETURN_IF_ERROR(npy::WriteNpy(dataset.dir() + "/features.npy", features));
  return dataset;
}

ObservedError Observe(const Status& error, const std::string& process, const std::string& step) {
  ObservedError observed;
  if (const auto& cuda = error.cuda_error()) {
    observed.name = cuda->name;
    observed.code = cuda->code;
  } else {
    observed.name = StatusCodeName(error.code());
  }
  observed.message = FirstLine(error.message());
  observed.process = process;
  observed.step = step;
  return observed;
}

Outcome Reproduced(const Signature& signature, const ObservedError& error, std::string transcript) {
  Outcome outcome;
  outcome.error = error;
  const std::string mismatch = SignatureMismatch(signature, error);
  outcome.verdict = mismatch.empty() ? Verdict::kReproduced : Verdict::kFailed;
  outcome.transcript = std::move(transcript) + DescribeError(error);
  if (!mismatch.empty()) outcome.transcript += "not the documented signature:\n" + mismatch;
  return outcome;
}

Outcome Unexpected(const ObservedError& error, std::string transcript) {
  Outcome outcome;
  outcome.error = error;
  outcome.transcript = std::move(transcript) + "unexpected " + DescribeError(error);
  return outcome;
}

Outcome NotRunHere(const std::string& why, std::string transcript) {
  Outcome outcome;
  outcome.verdict = Verdict::kNotRun;
  outcome.not_run = why;
  outcome.transcript = std::move(transcript) + "not run: " + why + "\n";
  return outcome;
}

Outcome PassedIf(bool equal, const std::string& what, std::string transcript) {
  Outcome outcome;
  outcome.verdict = equal ? Verdict::kPassed : Verdict::kFailed;
  outcome.transcript = std::move(transcript) + (equal ? "passed: " : "FAILED: not ") + what + "\n";
  return outcome;
}

Outcome EndedInError(const Expected& expected, const ObservedError& error, std::string transcript) {
  if (const auto* reproduce = std::get_if<ExpectSignature>(&expected)) {
    return Reproduced(reproduce->signature, error, std::move(transcript));
  }
  return Unexpected(error, std::move(transcript));
}

std::optional<Outcome> RanToTheEnd(const Expected& expected, const std::string& how, const std::string& transcript) {
  if (std::holds_alternative<ExpectPass>(expected)) return std::nullopt;
  return PassedIf(false, "the documented failure (" + how + ")", transcript);
}

std::string InitializationSiteNote(RuntimeKind runtime) {
  if (runtime != RuntimeKind::kSimCuda) return "where CUDA was first initialized: not recorded by real CUDA\n";
  const std::string site = SimCuda().InitializationSite();
  if (site.empty()) return "CUDA was not initialized in the parent (pid " + std::to_string(getpid()) + ")\n";
  return "CUDA was first initialized in the parent (pid " + std::to_string(getpid()) + ") at:\n" + site + "\n";
}

LoaderOptions ScenarioLoaderOptions(const std::string& dir, RuntimeKind runtime) {
  LoaderOptions o;
  o.graph_dir = dir;
  o.fanouts = {10, 5};
  o.batch_size = 64;
  o.num_items = 512;
  o.seed = 2024;
  o.runtime = runtime;
  return o;
}

Outcome RunLoaderScenario(const LoaderOptions& options, const Expected& expected, const std::string& header) {
  std::string transcript = header + "\nloader: mode " + LoaderModeName(options.mode) + ", num_workers " +
                           std::to_string(options.num_workers) + ", " + StartMethodName(options.start_method) +
                           ", dispatch " + BehaviourName(options.dispatch) + ", pin handling " +
                           BehaviourName(options.pin_handling) + ", runtime " + RuntimeKindName(options.runtime) + "\n";
  std::optional<LoaderFailure> where;
  Result<std::vector<MiniBatch>> got = DrainLoader(options, &where);
  if (!got.ok()) {
    ObservedError error =
        Observe(got.status(), where ? where->Process() : "main process (pid " + std::to_string(getpid()) + ")",
                where ? where->step : "create");
    transcript += InitializationSiteNote(options.runtime);
    return EndedInError(expected, error, transcript);
  }
  if (auto missed = RanToTheEnd(expected, "the loader ran to the end", transcript)) return *missed;
  Result<std::vector<MiniBatch>> baseline = LoaderBaseline(options);
  if (!baseline.ok()) return Unexpected(Observe(baseline.status(), "main process", "baseline"), transcript);
  return PassedIf(*got == *baseline, std::to_string(got->size()) + " minibatches equal to the num_workers = 0 baseline",
                  transcript);
}

}  // namespace repro
}  // namespace faultline
