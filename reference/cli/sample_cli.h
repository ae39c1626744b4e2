// Provides the logic of the `sample` command line: turning flag values into
// a validated sampling request (every problem with the input becomes a
// one-line usage error naming the flag), running the request on the CPU
// reference or a device runtime, and printing the layers as JSON or as a
// human summary.
#ifndef FAULTLINE_REFERENCE_CLI_SAMPLE_CLI_H_
#define FAULTLINE_REFERENCE_CLI_SAMPLE_CLI_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>  // LayersToJson; the full header costs ~2.5 s per file
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "reference/base/status.h"
#include "reference/graph/csc_graph.h"
#include "reference/runtime/runtime.h"
#include "reference/sampling/device_sampling.h"
#include "reference/sampling/multi_layer.h"

namespace faultline {
namespace cli {

// Exit codes of the sample command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntimeFailure = 1;  // sampling failed (e.g. a CUDA error)
inline constexpr int kExitUsage = 2;           // bad flags or bad input files

// Holds the flag values as typed on the command line.
struct SampleFlags {
  std::string graph;                      // --graph DIR
  std::optional<std::string> seeds;       // --seeds 1,2,3
  std::optional<std::string> seeds_file;  // --seeds-file F.npy
  std::string fanouts;                    // --fanouts 10,5
  bool replace = false;
  bool weighted = false;
  std::string rng_seed;                  // --rng-seed N (uint64)
  std::string runtime = "cpu";           // cpu, simcuda, cuda or auto
  std::optional<std::string> threads;    // CPU worker threads, >= 1 (runtime cpu only; default 1)
  std::optional<std::string> placement;  // device or pinned (device runtimes only; default device)
};

// Holds a validated request: the loaded graph and checked arguments.
struct SampleCommand {
  std::string graph_dir;
  std::optional<CscGraph> graph;
  std::vector<int64_t> seeds;
  std::vector<int64_t> fanouts;
  bool replace = false;
  bool weighted = false;
  uint64_t rng_seed = 0;
  RuntimeKind runtime = RuntimeKind::kCpu;
  int threads = 1;
  GraphPlacement placement = GraphPlacement::kDevice;
};

// Parses a comma-separated list of integers ("10,5", spaces allowed around
// items). Fails with a message naming `flag`, the item and its position.
Result<std::vector<int64_t>> ParseIntList(const std::string& text, const std::string& flag);

// Parses flag values, loads the graph and the seeds file, and checks every
// argument against the graph. Every failure is a usage error whose message
// names the flag, the value and what was expected.
Result<SampleCommand> BuildCommand(const SampleFlags& flags);

// Reports the start and end of each hop (for progress lines).
using ProgressFn = std::function<void(const std::string& line)>;

// Runs the command: the hops of SampleMultiLayer with `threads` on cpu
// (each hop sampled, then compacted, for the progress lines; the same
// layers), or on a DeviceGraph placed as asked each hop sampled
// (SampleNeighborsOnDevice), then compacted (UniqueAndCompactOnDevice): the
// same layers as SampleMultiLayerOnDevice.
// `progress`, when set, gets a line before and after each hop.
Result<std::vector<SampledLayer>> RunCommand(const SampleCommand& command, const ProgressFn& progress = nullptr);

// Returns {"layers": [{"seeds", "indptr", "indices", "original_edge_ids"}, ...]}
// with the keys in that order.
nlohmann::ordered_json LayersToJson(const std::vector<SampledLayer>& layers);

// Returns the human summary: per layer the seed and edge counts, then each
// array with at most `max_values` values shown.
std::string FormatSummary(const SampleCommand& command, const std::vector<SampledLayer>& layers,
                          size_t max_values = 10);

// Holds everything the command line sets: the sampling flags and the
// output flags.
struct SampleArgs {
  SampleFlags flags;
  bool json = false;     // --json
  bool verbose = false;  // --verbose
};

// Parses argv with CLI11 into `args`. Returns the exit code when the command
// ends here: kExitOk after printing the help to `out` (--help), kExitUsage
// after one line "sample: ..." on `err` (a parse error); else std::nullopt.
std::optional<int> ParseSampleArgs(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
                                   SampleArgs* args);

// Runs the whole command line: parses argv with CLI11, builds and runs the
// command, and prints to `out` (results, --help) and `err` (errors as one
// line "sample: ...", progress with --verbose or when `err_is_tty`).
// Returns the exit code.
int SampleMain(int argc, const char* const* argv, std::ostream& out, std::ostream& err, bool err_is_tty);

}  // namespace cli
}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_CLI_SAMPLE_CLI_H_
