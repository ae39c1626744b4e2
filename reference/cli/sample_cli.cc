// Implements the sample command line: flag validation, the run on the chosen
// runtime, and the JSON and human output.
#include "reference/cli/sample_cli.h"

#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "reference/base/caller_path.h"
#include "reference/base/parse_int.h"
#include "reference/graph/npy.h"
#include "reference/sampling/sample_neighbors.h"
#include "reference/sampling/unique_and_compact.h"

namespace faultline {
namespace cli {
namespace {

constexpr int64_t kMaxFanout = std::numeric_limits<int32_t>::max();

std::string Quoted(const std::string& text) { return "'" + text + "'"; }

std::string Trim(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  const size_t end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

// Checks that every seed is a node id of the graph; `flag` names where the
// seeds came from.
Status CheckSeeds(const std::vector<int64_t>& seeds, int64_t num_nodes, const std::string& flag) {
  for (size_t i = 0; i < seeds.size(); ++i) {
    if (seeds[i] < 0 || seeds[i] >= num_nodes) {
      return OutOfRangeError(flag + ": seed " + std::to_string(seeds[i]) + " at position " + std::to_string(i) +
                             " is out of range; expected a node id in [0, " + std::to_string(num_nodes) +
                             ") (the graph has " + std::to_string(num_nodes) + " nodes)");
    }
  }
  return OkStatus();
}

std::string FormatValues(const std::vector<int64_t>& values, size_t max_values) {
  std::ostringstream os;
  os << "[";
  const size_t shown = std::min(values.size(), max_values);
  for (size_t i = 0; i < shown; ++i) os << (i ? ", " : "") << values[i];
  if (shown < values.size()) os << (shown ? ", " : "") << "...";
  os << "]";
  if (shown < values.size()) os << " (" << values.size() << " values)";
  return os.str();
}

double MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Result<std::vector<int64_t>> ParseIntList(const std::string& text, const std::string& flag) {
  if (Trim(text).empty()) {
    return InvalidArgumentError(flag + " is empty; expected a comma-separated list of integers like 10,5");
  }
  std::vector<int64_t> values;
  size_t start = 0;
  for (size_t position = 0;; ++position) {
    const size_t comma = text.find(',', start);
    const std::string item = Trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    const std::optional<int64_t> value = ParseWhole<int64_t>(item);
    if (!value) {
      // Digits that do not fit are out of range, not "not an integer".
      const bool digits = item.find_first_not_of("0123456789", item[0] == '-' ? 1 : 0) == std::string::npos &&
                          item.size() > (item[0] == '-' ? 1u : 0u);
      const std::string why = digits ? "is out of range; expected integers in -9223372036854775808..9223372036854775807"
                                     : "is not an integer; expected a comma-separated list of integers like 10,5";
      return InvalidArgumentError(flag + " " + Quoted(text) + ": item " + std::to_string(position) + " (" +
                                  Quoted(item) + ") " + why);
    }
    values.push_back(*value);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return values;
}

Result<SampleCommand> BuildCommand(const SampleFlags& flags) {
  SampleCommand c;
  // Flags that need no file first, so a typo is reported before any loading.
  if (flags.graph.empty()) return InvalidArgumentError("--graph is required; expected a graph directory");
  if (flags.seeds.has_value() == flags.seeds_file.has_value()) {
    return InvalidArgumentError(flags.seeds.has_value()
                                    ? "--seeds and --seeds-file were both given; expected exactly one of them"
                                    : "one of --seeds or --seeds-file is required");
  }
  FL_ASSIGN_OR_RETURN(c.fanouts, ParseIntList(flags.fanouts, "--fanouts"));
  for (size_t i = 0; i < c.fanouts.size(); ++i) {
    if (c.fanouts[i] < -1 || c.fanouts[i] > kMaxFanout) {
      return InvalidArgumentError("--fanouts: fanout " + std::to_string(c.fanouts[i]) + " at position " +
                                  std::to_string(i) + " is invalid; expected -1 (all neighbours) or 0.." +
                                  std::to_string(kMaxFanout));
    }
  }
  if (flags.rng_seed.empty()) return InvalidArgumentError("--rng-seed is required; expected an integer in 0..2^64-1");
  const std::optional<uint64_t> rng_seed = ParseWhole<uint64_t>(Trim(flags.rng_seed));
  if (!rng_seed) {
    return InvalidArgumentError("--rng-seed " + Quoted(flags.rng_seed) + " is invalid; expected an integer in 0.." +
                                std::to_string(std::numeric_limits<uint64_t>::max()));
  }
  c.rng_seed = *rng_seed;
  FL_ASSIGN_OR_RETURN(c.runtime, ParseRuntimeKind(flags.runtime, "--runtime"));
  // A flag the chosen runtime would ignore is refused: the user asked for something it cannot do.
  const std::string runtime =
      std::string("runtime ") + RuntimeKindName(c.runtime) + (flags.runtime == "auto" ? " (chosen by auto)" : "");
  if (flags.threads) {
    const std::optional<int> threads = ParseWhole<int>(Trim(*flags.threads));
    if (!threads || *threads < 1 || *threads > kMaxSamplingThreads) {
      return InvalidArgumentError("--threads " + Quoted(*flags.threads) + " is invalid; expected an integer in 1.." +
                                  std::to_string(kMaxSamplingThreads));
    }
    if (c.runtime != RuntimeKind::kCpu) {
      return InvalidArgumentError("--threads applies to runtime cpu only; this is " + runtime +
                                  ", which samples with the device's threads");
    }
    c.threads = *threads;
  }
  if (flags.placement) {
    if (*flags.placement == "device") {
      c.placement = GraphPlacement::kDevice;
    } else if (*flags.placement == "pinned") {
      c.placement = GraphPlacement::kPinnedHost;
    } else {
      return InvalidArgumentError("--placement " + Quoted(*flags.placement) + " is invalid; expected device or pinned");
    }
    if (c.runtime == RuntimeKind::kCpu) {
      return InvalidArgumentError("--placement applies to a device runtime (simcuda, cuda or auto) only; this is " +
                                  runtime + ", which reads the graph in host memory");
    }
  }
  c.replace = flags.replace;
  c.weighted = flags.weighted;

  c.graph_dir = flags.graph;
  struct stat graph_stat;
  const bool found = ::stat(flags.graph.c_str(), &graph_stat) == 0;
  if (!found || !S_ISDIR(graph_stat.st_mode)) {
    const std::string flag = "--graph " + Quoted(flags.graph) + ": ";
    const std::string expected = "; expected a directory with indptr.npy and indices.npy";
    if (!found && errno == ENOENT) return NotFoundError(flag + "no such directory" + expected);
    return InvalidArgumentError(flag + (found ? "not a directory" : std::strerror(errno)) + expected);
  }
  Result<CscGraph> graph = CscGraph::Load(flags.graph);
  if (!graph.ok()) {
    return Status(graph.status().code(), "--graph " + Quoted(flags.graph) + ": " + graph.status().message());
  }
  c.graph = std::move(graph).value();

  if (flags.seeds) {
    FL_ASSIGN_OR_RETURN(c.seeds, ParseIntList(*flags.seeds, "--seeds"));
    FL_RETURN_IF_ERROR(CheckSeeds(c.seeds, c.graph->num_nodes(), "--seeds"));
  } else {
    Result<std::vector<int64_t>> seeds = npy::ReadNpyInt64(*flags.seeds_file, {npy::DType::kInt32, npy::DType::kInt64});
    if (!seeds.ok()) return Status(seeds.status().code(), "--seeds-file: " + seeds.status().message());
    c.seeds = std::move(seeds).value();
    FL_RETURN_IF_ERROR(CheckSeeds(c.seeds, c.graph->num_nodes(), "--seeds-file " + Quoted(*flags.seeds_file)));
  }
  if (c.weighted && !c.graph->has_weights()) {
    return InvalidArgumentError("--weighted: the graph in " + Quoted(flags.graph) +
                                " has no edge weights (no weights.npy); drop --weighted or add weights");
  }
  return c;
}

Result<std::vector<SampledLayer>> RunCommand(const SampleCommand& c, const ProgressFn& progress) {
  std::optional<DeviceGraph> device_graph;
  if (c.runtime != RuntimeKind::kCpu) {
    Result<DeviceGraph> placed = DeviceGraph::Create(*c.graph, GetRuntime(c.runtime), c.placement, /*device=*/0);
    if (!placed.ok()) {
      return placed.status().WithContext("placing the graph on " + std::string(RuntimeKindName(c.runtime)));
    }
    device_graph = std::move(placed).value();
  }
  // The hops of SampleMultiLayer, or on a device each hop through the host
  // (SampleNeighborsOnDevice, then UniqueAndCompactOnDevice), with progress
  // lines around each hop. The results equal SampleMultiLayer's and
  // SampleMultiLayerOnDevice's (pinned by a test); SampleMultiLayerOnDevice
  // keeps every hop's inputs on the device, so its timings are not these.
  const auto sample_one = [&](const std::vector<int64_t>& seeds, int64_t fanout,
                              uint32_t layer) -> Result<SampledSubgraph> {
    const auto start = std::chrono::steady_clock::now();
    if (progress) {
      progress("layer " + std::to_string(layer) + ": sampling " + std::to_string(seeds.size()) + " seeds with fanout " +
               std::to_string(fanout) + " on " + RuntimeKindName(c.runtime));
    }
    Result<SampledSubgraph> sampled =
        device_graph ? SampleNeighborsOnDevice(*device_graph, seeds, fanout, layer,
                                               SamplingOptions{c.replace, c.weighted, c.rng_seed})
                     : SampleNeighbors(*c.graph, seeds, fanout, layer,
                                       SamplingOptions{c.replace, c.weighted, c.rng_seed, c.threads});
    if (progress && sampled.ok()) {
      char ms[32];
      std::snprintf(ms, sizeof(ms), "%.1f", MillisecondsSince(start));
      progress("layer " + std::to_string(layer) + ": " + std::to_string(sampled->indices.size()) +
               " sampled edges in " + ms + " ms");
    }
    return sampled;
  };
  const auto compact = [&](const std::vector<int64_t>& seeds,
                           const std::vector<int64_t>& indices) -> Result<UniqueAndCompactResult> {
    if (device_graph) return UniqueAndCompactOnDevice(device_graph->runtime(), device_graph->device(), seeds, indices);
    return UniqueAndCompact(seeds, indices);
  };
  return SampleLayers(c.seeds, c.fanouts, sample_one, compact);
}

nlohmann::ordered_json LayersToJson(const std::vector<SampledLayer>& layers) {
  nlohmann::ordered_json array = nlohmann::ordered_json::array();
  for (const SampledLayer& layer : layers) {
    nlohmann::ordered_json j;
    j["seeds"] = layer.subgraph.seeds;
    j["indptr"] = layer.subgraph.indptr;
    j["indices"] = layer.subgraph.indices;
    j["original_edge_ids"] = layer.subgraph.original_edge_ids;
    array.push_back(std::move(j));
  }
  nlohmann::ordered_json out;
  out["layers"] = std::move(array);
  return out;
}

std::string FormatSummary(const SampleCommand& c, const std::vector<SampledLayer>& layers, size_t max_values) {
  std::ostringstream os;
  os << "graph " << c.graph_dir << ": " << c.graph->num_nodes() << " nodes, " << c.graph->num_edges() << " edges"
     << (c.graph->has_weights() ? " (weighted)" : "") << "; runtime " << RuntimeKindName(c.runtime);
  if (c.runtime == RuntimeKind::kCpu) {
    os << " (" << c.threads << (c.threads == 1 ? " thread)" : " threads)");
  } else {
    os << " (graph in " << (c.placement == GraphPlacement::kDevice ? "device" : "pinned host") << " memory)";
  }
  os << "; rng seed " << c.rng_seed << (c.replace ? "; with replacement" : "") << (c.weighted ? "; weighted" : "")
     << "\n";
  for (size_t k = 0; k < layers.size(); ++k) {
    const SampledSubgraph& s = layers[k].subgraph;
    os << "layer " << k << " (fanout " << c.fanouts[k] << "): " << s.seeds.size() << " seeds, " << s.indices.size()
       << " sampled edges, " << layers[k].unique_nodes.size() << " unique nodes\n";
    os << "  seeds:             " << FormatValues(s.seeds, max_values) << "\n";
    os << "  indptr:            " << FormatValues(s.indptr, max_values) << "\n";
    os << "  indices:           " << FormatValues(s.indices, max_values) << "\n";
    os << "  original_edge_ids: " << FormatValues(s.original_edge_ids, max_values) << "\n";
  }
  return os.str();
}

namespace {

constexpr const char* kFooter = R"(Output (--json): one line of JSON,
  {"layers": [{"seeds": [...], "indptr": [...], "indices": [...],
               "original_edge_ids": [...]}, ...]}
  one object per fanout. Layer 0 samples the given seeds with fanouts[0];
  layer k+1 samples the unique nodes of layer k (its seeds first, then newly
  reached nodes in first-appearance order) with fanouts[k+1]. The picks of
  seeds[i] are positions indptr[i]..indptr[i+1]-1 of indices (source node ids)
  and original_edge_ids (edge positions in the graph). Every runtime and
  thread count gives bit-identical output for the same arguments.
Without --json: a per-layer summary with the arrays truncated.

Exit codes: 0 success; 1 sampling failed at run time (e.g. a CUDA error);
  2 bad usage or input (flag values, fanout list, seeds out of range, missing
  or malformed graph or seeds file, --weighted on an unweighted graph, a flag
  the runtime does not use: --threads off cpu, --placement on cpu).
)";

// Prints --help; a failed write (a full disk) is a failure that says so.
int PrintHelp(const std::string& help, std::ostream& out, std::ostream& err) {
  out << help;
  out.flush();
  if (out) return kExitOk;
  err << "sample: writing the help to stdout failed\n";
  return kExitRuntimeFailure;
}

}  // namespace

std::optional<int> ParseSampleArgs(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
                                   SampleArgs* args) {
  CLI::App app{
      "faultline sample: multi-layer neighbor sampling of a CSC graph directory (indptr.npy, indices.npy and "
      "optional weights.npy), on the CPU reference or a device runtime",
      "sample"};
  app.footer(kFooter);
  SampleFlags& flags = args->flags;
  std::string seeds_text, seeds_file;
  bool& json = args->json;
  bool& verbose = args->verbose;
  app.add_option("--graph", flags.graph, "Graph directory written by CscGraph::Save (required)")->type_name("DIR");
  CLI::Option* seeds_opt =
      app.add_option("--seeds", seeds_text,
                     "Comma-separated seed node ids, e.g. 1,2,3 (exactly one of --seeds/--seeds-file)")
          ->type_name("LIST");
  CLI::Option* seeds_file_opt =
      app.add_option("--seeds-file", seeds_file, "1-D int32 or int64 .npy file of seed node ids")->type_name("FILE");
  app.add_option("--fanouts", flags.fanouts,
                 "Comma-separated fanout per layer, e.g. 10,5; -1 takes every neighbour (required)")
      ->type_name("LIST");
  app.add_flag("--replace", flags.replace, "Sample with replacement (exactly fanout draws per seed)");
  app.add_flag("--weighted", flags.weighted,
               "Pick by edge weight (the graph needs weights.npy); zero-weight edges are never picked");
  app.add_option("--rng-seed", flags.rng_seed, "Random seed, an integer in 0..2^64-1 (required)")->type_name("N");
  app.add_option("--runtime", flags.runtime,
                 "cpu (default), simcuda, cuda, or auto (cuda when a GPU is usable, else simcuda)")
      ->type_name("KIND");
  std::string threads_text, placement_text;
  CLI::Option* threads_opt =
      app.add_option("--threads", threads_text, "CPU worker threads, 1..1024 (default 1; runtime cpu only)")
          ->type_name("T");
  CLI::Option* placement_opt =
      app.add_option("--placement", placement_text,
                     "Where a device runtime keeps the graph: device (default) or pinned (pinned host memory); "
                     "device runtimes only")
          ->type_name("PLACE");
  app.add_flag("--json", json, "Print the layers as JSON (format below)");
  app.add_flag("--verbose", verbose, "Print a progress line per layer on stderr (default when stderr is a terminal)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return PrintHelp(app.help(), out, err);
  } catch (const CLI::CallForAllHelp&) {
    return PrintHelp(app.help("", CLI::AppFormatMode::All), out, err);
  } catch (const CLI::ParseError& e) {
    err << "sample: " << e.what() << " (see --help)\n";
    return kExitUsage;
  }
  if (seeds_opt->count() > 0) flags.seeds = seeds_text;
  if (seeds_file_opt->count() > 0) flags.seeds_file = CallerPath(seeds_file);
  if (threads_opt->count() > 0) flags.threads = threads_text;
  if (placement_opt->count() > 0) flags.placement = placement_text;
  flags.graph = CallerPath(flags.graph);  // the user's folder, also under `bazel run`
  return std::nullopt;
}

int SampleMain(int argc, const char* const* argv, std::ostream& out, std::ostream& err, bool err_is_tty) {
  SampleArgs args;
  if (std::optional<int> exit_code = ParseSampleArgs(argc, argv, out, err, &args)) return *exit_code;
  const SampleFlags& flags = args.flags;
  const bool json = args.json, verbose = args.verbose;

  Result<SampleCommand> command = BuildCommand(flags);
  if (!command.ok()) {
    err << "sample: " << command.status().message() << "\n";
    return kExitUsage;
  }
  ProgressFn progress;
  if (verbose || err_is_tty) {
    progress = [&err](const std::string& line) { err << "sample: " << line << std::endl; };
  }
  Result<std::vector<SampledLayer>> layers = InternalError("not run");
  try {
    layers = RunCommand(*command, progress);
  } catch (const std::bad_alloc&) {  // a request whose layers do not fit in memory
    layers = UnavailableError("out of memory: the layers of this request do not fit");
  }
  if (!layers.ok()) {
    err << "sample: sampling failed on runtime " << RuntimeKindName(command->runtime) << ": "
        << layers.status().ToString() << "\n";
    return kExitRuntimeFailure;
  }
  if (json) {
    out << LayersToJson(*layers).dump() << "\n";
  } else {
    out << FormatSummary(*command, *layers);
  }
  out.flush();
  if (!out) {  // e.g. a full disk: say so rather than exit 1 in silence
    err << "sample: writing the result to stdout failed\n";
    return kExitRuntimeFailure;
  }
  return kExitOk;
}

}  // namespace cli
}  // namespace faultline
