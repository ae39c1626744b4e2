// The repro command line: lists the documented failures and reproduces them
// (legacy variants must show the documented symptom, fixed and workaround
// variants must pass). Exit 0 only when every outcome matched.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "reference/base/flush_stdout.h"
#include "reference/process/child_registry.h"
#include "repro/cli.h"
#include "repro/registry.h"
#include "repro/runner.h"
#include "repro/shared_library.h"

namespace faultline {
namespace repro {
namespace {

// One variant's result. With --repeat N: `outcome`, `error` and `transcript`
// are those of the first run that did not match (else of the last run), and
// `matched` holds only when all N runs matched.
struct Row {
  std::string id, variant, runtime, expected, outcome;
  bool matched;
  int runs, matched_runs;
  std::optional<ObservedError> error;
  std::string transcript;
  std::string not_run;       // why the variant could not run here, or empty
  nlohmann::json signature;  // a reproducing variant's, on this runtime; else null
};

nlohmann::json ToJson(const Row& row) {
  nlohmann::json j = {
      {"id", row.id},           {"variant", row.variant}, {"runtime", row.runtime}, {"expected", row.expected},
      {"outcome", row.outcome}, {"matched", row.matched}, {"runs", row.runs},       {"matched_runs", row.matched_runs}};
  j["error"] = ErrorToJson(row.error);
  // What `error` had to show (null for a variant that must pass).
  j["signature"] = row.signature;
  // What the variant's process said: the whole story when it crashed, timed
  // out or reported nothing (then `error` is null).
  j["transcript"] = row.transcript;
  if (!row.not_run.empty()) j["not_run"] = row.not_run;
  return j;
}

void PrintTable(const std::vector<Row>& rows, bool repeated) {
  std::printf("%-8s %-20s %-8s %-11s %-11s %-7s%s\n", "failure", "variant", "runtime", "expected", "outcome", "matched",
              repeated ? " matched k of N" : "");
  for (const Row& r : rows) {
    const std::string counts = std::to_string(r.matched_runs) + " of " + std::to_string(r.runs);
    std::printf("%-8s %-20s %-8s %-11s %-11s %-7s%s\n", r.id.c_str(), r.variant.c_str(), r.runtime.c_str(),
                r.expected.c_str(), r.outcome.c_str(), r.matched ? "yes" : "NO",
                repeated ? (" " + counts).c_str() : "");
  }
}

const char* OutcomeName(const Outcome& outcome) { return VerdictName(outcome.verdict); }

// Runs one variant `repeat` times, each in a fresh process (CUDA state must
// not leak between runs). Progress goes to stderr, --json or not: one line
// per variant when repeat is 1, else a mark per run ('.' matched, 'X' did
// not). Without --json the transcript follows on stderr (with --json it is
// in the row).
Row RunOne(const Failure& failure, const Variant& variant, RuntimeKind runtime, int repeat, bool json) {
  const char* runtime_name = RuntimeKindName(runtime);
  if (repeat == 1) {
    std::fprintf(stderr, "running %s %s on %s ...\n", failure.id.c_str(), variant.name.c_str(), runtime_name);
  } else {
    std::fprintf(stderr, "running %s %s on %s x%d ", failure.id.c_str(), variant.name.c_str(), runtime_name, repeat);
  }
  RepeatedOutcome result = RunRepeated(failure.id, variant.name, runtime, repeat, [repeat](int, bool matched) {
    if (repeat > 1) std::fputc(matched ? '.' : 'X', stderr);
  });
  if (repeat > 1) std::fprintf(stderr, " matched %d of %d\n", result.matched, result.runs);
  const Outcome& shown = result.shown;
  Row row{failure.id,         variant.name,
          runtime_name,       ExpectationName(variant.expected()),
          OutcomeName(shown), result.matched == result.runs,
          result.runs,        result.matched,
          shown.error,        shown.transcript,
          shown.not_run,      nullptr};
  if (std::optional<Signature> signature = variant.SignatureOn(runtime)) row.signature = SignatureToJson(*signature);
  // With --repeat, only a run that did not match has its transcript shown.
  if (!json && !row.transcript.empty() && (repeat == 1 || !row.matched)) {
    std::fprintf(stderr, "%s\n", row.transcript.c_str());
  }
  return row;
}

int Report(const std::vector<Row>& rows, bool json, bool repeated) {
  int mismatched = 0, not_run = 0;
  for (const Row& r : rows) {
    if (r.matched) continue;
    if (r.not_run.empty()) {
      ++mismatched;
    } else {
      ++not_run;
      std::fprintf(stderr, "repro: %s %s not run: %s\n", r.id.c_str(), r.variant.c_str(), r.not_run.c_str());
    }
  }
  if (json) {
    nlohmann::json array = nlohmann::json::array();
    for (const Row& r : rows) array.push_back(ToJson(r));
    std::cout << array.dump(2) << std::endl;
  } else if (rows.empty()) {
    std::printf("no repro registered yet\n");
  } else {
    PrintTable(rows, repeated);
  }
  if (mismatched > 0) return kExitMismatch;
  if (not_run > 0) {
    std::fprintf(stderr, "repro: every variant that ran matched; %d could not run on this machine\n", not_run);
    return kExitNotRun;
  }
  return 0;
}

// `repro run|all --upstream`: hands the command to repro/upstream/upstream.py
// (a runfile of this binary; FAULTLINE_UPSTREAM_DIR names another folder
// holding it), whose exit status and output are this command's. Returns
// only when it cannot be started.
int RunUpstream(const Command& command) {
  const Result<std::string> script = FindRunfile("repro/upstream", "upstream.py", "FAULTLINE_UPSTREAM_DIR");
  std::string why;
  if (script.ok()) {
    std::vector<std::string> args = {"python3", *script};
    for (std::string& a : UpstreamArguments(command)) args.push_back(std::move(a));
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fflush(nullptr);
    execvp("python3", argv.data());
    why = std::string("cannot run python3 (needed by --upstream): ") + std::strerror(errno);
  } else {
    why = script.status().message();
  }
  std::fprintf(stderr, "repro: %s\n", why.c_str());
  if (command.json) std::cout << nlohmann::json{{"error", why}}.dump() << std::endl;
  return kExitMismatch;
}

int Main(int argc, char** argv) {
  int exit_code = 0;
  std::ostringstream usage_error;
  const std::optional<Command> command = ParseCommandLine(argc, argv, std::cout, usage_error, &exit_code);
  if (!command) {
    std::cerr << usage_error.str();
    // With --json a script reads stdout: the usage error goes there too.
    const bool json = std::any_of(argv + 1, argv + argc, [](const char* a) { return std::string(a) == "--json"; });
    std::string message = usage_error.str();
    while (!message.empty() && message.back() == '\n') message.pop_back();
    if (json && exit_code == kExitUsage) std::cout << nlohmann::json{{"error", message}}.dump() << std::endl;
    return exit_code;
  }
  const bool json = command->json;
  if (command->upstream) return RunUpstream(*command);

  std::vector<Failure> failures = Failures();
  if (command->kind == Command::Kind::kList) {
    nlohmann::json array = nlohmann::json::array();
    for (const Failure& f : failures) {
      nlohmann::json variants = nlohmann::json::array();
      for (const Variant& v : f.variants) {
        nlohmann::json variant = {
            {"variant", v.name}, {"expected", ExpectationName(v.expected())}, {"scenario", v.scenario}};
        for (RuntimeKind runtime : {RuntimeKind::kSimCuda, RuntimeKind::kCuda}) {
          if (std::optional<Signature> signature = v.SignatureOn(runtime)) {
            variant["signature"][RuntimeKindName(runtime)] = SignatureToJson(*signature);
          }
        }
        variants.push_back(std::move(variant));
      }
      array.push_back({{"id", f.id}, {"title", f.title}, {"variants", variants}});
      if (!json) {
        std::printf("%s  %s\n", f.id.c_str(), f.title.c_str());
        for (const Variant& v : f.variants) {
          std::printf("      %-20s %-11s %s\n", v.name.c_str(), ExpectationName(v.expected()), v.scenario.c_str());
        }
      }
    }
    if (json) std::cout << array.dump(2) << std::endl;
    if (!json && failures.empty()) std::printf("no repro registered yet\n");
    return 0;
  }

  // Ends the command before any variant ran: the reason on stderr, and with
  // --json also as {"error": ...} on stdout.
  auto stop = [json](const std::string& why, int code) {
    std::fprintf(stderr, "repro: %s\n", why.c_str());
    if (json) std::cout << nlohmann::json{{"error", why}}.dump() << std::endl;
    return code;
  };
  const Result<std::vector<Selected>> selected = SelectVariants(*command, failures);
  if (!selected.ok()) return stop(selected.status().message(), kExitUsage);
  // Without a usable device every variant would fail alike and read as a
  // regression of every fix.
  if (command->runtime == RuntimeKind::kCuda) {
    const Result<int> devices = ProbeDeviceCount(RuntimeKind::kCuda);
    if (!devices.ok() || *devices == 0) {
      return stop("--runtime cuda, but no CUDA device is usable here (" +
                      (devices.ok() ? std::string("the driver counts 0 devices") : devices.status().ToString()) +
                      "); use --runtime simcuda, or auto to pick cuda only where a GPU is usable",
                  kExitNoDevice);
    }
  }
  std::vector<Row> rows;
  for (const Selected& s : *selected) {
    rows.push_back(RunOne(*s.failure, *s.variant, command->runtime, command->repeat, json));
  }
  return Report(rows, json, command->repeat > 1);
}

}  // namespace
}  // namespace repro
}  // namespace faultline

int main(int argc, char** argv) {
  int exit_code = 0;
  if (faultline::MaybeRunRegisteredChild(argc, argv, &exit_code)) return exit_code;
  exit_code = faultline::repro::Main(argc, argv);
  // A table or JSON that never reached its reader (a full disk, a closed
  // pipe) is a failure, not the outcome it would have shown.
  if (const std::string lost = faultline::FlushStdout(); !lost.empty()) {
    std::fprintf(stderr, "repro: writing the output to stdout failed: %s\n", lost.c_str());
    return 1;
  }
  return exit_code;
}
