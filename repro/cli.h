// Provides the repro command line's parsing and variant selection, apart
// from running the variants (main.cc), so that both can be fuzzed
// (properties/fuzz/repro_cli_fuzz.cc).
#ifndef FAULTLINE_REPRO_CLI_H_
#define FAULTLINE_REPRO_CLI_H_

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "reference/base/status.h"
#include "reference/runtime/runtime.h"
#include "repro/registry.h"

namespace faultline {
namespace repro {

inline constexpr int kExitMismatch = 1;
inline constexpr int kExitUsage = 2;
// Every variant that ran matched, but some could not run on this machine
// (they need more GPUs than it has): not a pass, not a mismatch.
inline constexpr int kExitNotRun = 3;
// --runtime cuda on a machine where no CUDA device is usable: nothing ran.
inline constexpr int kExitNoDevice = 4;

// What the command line asks for.
struct Command {
  enum class Kind { kList, kRun, kAll };
  Kind kind = Kind::kList;
  bool json = false;
  RuntimeKind runtime = RuntimeKind::kSimCuda;  // run, all
  int repeat = 1;                               // run, all: >= 1
  std::string failure_id;                       // run
  std::string variant;                          // run: the --variant filter ("" selects all)
  // run, all: the upstream variants (repro/upstream/upstream.py: real PyPI
  // releases over drop-in simcuda) instead of the re-creations.
  bool upstream = false;
  std::vector<std::string> withs;  // run --upstream: each --with NAME=PATH, in order
};

// Parses argv with CLI11 and checks --repeat and --runtime (and that
// --with comes with --upstream, --runtime without it). Returns the
// command, or std::nullopt with `exit_code` set when the command line ends
// here: 0 after the help (printed to `out`), kExitUsage after the error
// (printed to `err`).
std::optional<Command> ParseCommandLine(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
                                        int* exit_code);

// One variant a command runs.
struct Selected {
  const Failure* failure;
  const Variant* variant;
};

// Returns the variants a run or all command selects from `failures`, in
// order. An unknown failure id, or a --variant that selects none of the
// failure's variants, is an InvalidArgument error whose message is the
// usage line (without the "repro: " prefix).
Result<std::vector<Selected>> SelectVariants(const Command& command, const std::vector<Failure>& failures);

// Returns the arguments after `upstream.py` that run what an --upstream
// command asks for: "run F4 --variant V --with N=P ... --repeat N --json" or
// "all --repeat N --json" (its own checks decide the rest).
std::vector<std::string> UpstreamArguments(const Command& command);

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_CLI_H_
