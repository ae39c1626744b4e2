// Writes the benchmark graph: an R-MAT power-law graph as a folder of .npy
// files (indptr, indices, weights) that both faultline's benchmarks and the
// GraphBolt peer read, and make_graph.json, the parameters it was made with.
// Exit codes: 0 written or already there, 1 failure, 2 usage.

#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <system_error>

#include "bench/bench_graph.h"
#include "reference/base/atomic_file.h"
#include "reference/base/caller_path.h"
#include "reference/base/flush_stdout.h"
#include "reference/base/parse_int.h"
#include "reference/cli/int_flag.h"
#include "reference/graph/csc_graph.h"
#include "reference/graph/generators.h"

namespace {

// The record of the parameters, next to the graph files.
constexpr char kRecordName[] = "make_graph.json";

// Returns the record in `dir`, or null when it is missing or unreadable.
nlohmann::json ReadRecord(const std::string& dir) {
  const std::string path = dir + "/" + kRecordName;
  struct stat st;
  // Anything but a regular file (a FIFO would block the open forever) is no record.
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return nullptr;
  std::ifstream in(path);
  if (!in) return nullptr;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  nlohmann::json record = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return record.is_discarded() ? nlohmann::json(nullptr) : record;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"make_graph: write the benchmark power-law graph (indptr.npy, indices.npy, weights.npy)"};
  std::string out;
  int64_t nodes = faultline::kBenchGraphNodes, edges = faultline::kBenchGraphEdges;
  uint64_t seed = faultline::kBenchGraphSeed;
  std::string seed_text = std::to_string(seed);
  bool force = false, json = false;
  app.add_option("--out", out, "Output directory (created if missing)")->required()->type_name("DIR");
  app.footer(
      "Exit status: 0 written, or already there; 1 the graph could not be made or written (or stdout "
      "could not be); 2 usage error");
  constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
  app.add_option("--nodes", nodes, "Number of nodes, >= 1 (default " + std::to_string(nodes) + ")")
      ->check(faultline::IntInRange<int64_t>(1, kInt64Max));
  app.add_option("--edges", edges, "Number of edges, >= 0 (default " + std::to_string(edges) + ")")
      ->check(faultline::IntInRange<int64_t>(0, kInt64Max));
  // Read by hand: CLI11 wraps -1 to 2^64-1 and saturates values past 2^64.
  app.add_option("--seed", seed_text, "Generator seed, 0..18446744073709551615 (default " + seed_text + ")")
      ->type_name("UINT64");
  app.add_flag("--force", force, "Rewrite even when a graph of this size is already there");
  app.add_flag("--json", json, "Print a JSON summary on stdout");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  auto usage_error = [](const char* flag, const std::string& value, const char* expected) {
    std::fprintf(stderr, "make_graph: %s is %s; expected %s\n", flag, value.c_str(), expected);
    return 2;
  };
  const std::optional<uint64_t> parsed_seed = faultline::ParseWhole<uint64_t>(seed_text);
  if (!parsed_seed) return usage_error("--seed", "'" + seed_text + "'", "an integer in 0..18446744073709551615");
  seed = *parsed_seed;
  out = faultline::CallerPath(out);  // the user's folder, also under `bazel run`
  // Prints the summary; 1 when it could not reach stdout (a full disk, a closed pipe), else 0.
  auto summary = [&](bool reused) {
    if (json) {
      std::cout << nlohmann::json{{"dir", out}, {"nodes", nodes}, {"edges", edges}, {"seed", seed}, {"reused", reused}}
                << std::endl;
    } else {
      std::printf("%s: %lld nodes, %lld edges%s\n", out.c_str(), static_cast<long long>(nodes),
                  static_cast<long long>(edges), reused ? " (already there)" : "");
    }
    if (const std::string lost = faultline::FlushStdout(); !lost.empty()) {
      std::fprintf(stderr, "make_graph: writing the summary to stdout failed: %s\n", lost.c_str());
      return 1;
    }
    return 0;
  };
  // Everything the graph depends on: reuse only a graph made with all of it.
  // "generator" changes when GeneratePowerLaw's output does.
  const nlohmann::json wanted = {
      {"generator", "rmat-v1"}, {"nodes", nodes}, {"edges", edges}, {"seed", seed}, {"weighted", true}};
  if (!force && ReadRecord(out) == wanted) {
    auto existing = faultline::CscGraph::Load(out);
    if (existing.ok() && existing->num_nodes() == nodes && existing->num_edges() == edges && existing->has_weights()) {
      return summary(true);
    }
  }
  std::fprintf(stderr, "generating %lld nodes, %lld edges ...\n", static_cast<long long>(nodes),
               static_cast<long long>(edges));
  auto graph = faultline::GeneratePowerLaw(nodes, edges, seed, /*weighted=*/true);
  if (!graph.ok()) {
    std::fprintf(stderr, "make_graph: %s\n", graph.status().ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "writing %s ...\n", out.c_str());
  // Creates the folder and every missing parent (a fresh ~/.cache has none).
  std::error_code error;
  std::filesystem::create_directories(out, error);
  if (error) {
    std::fprintf(stderr, "make_graph: cannot create %s: %s\n", out.c_str(), error.message().c_str());
    return 1;
  }
  // The old record goes first: while the files are replaced, and if that
  // fails, no record claims them.
  const std::string record_path = out + "/" + kRecordName;
  if (unlink(record_path.c_str()) != 0 && errno != ENOENT) {
    std::fprintf(stderr, "make_graph: cannot remove %s: %s\n", record_path.c_str(), std::strerror(errno));
    return 1;
  }
  faultline::Status saved = graph->Save(out);
  if (!saved.ok()) {
    std::fprintf(stderr, "make_graph: %s\n", saved.ToString().c_str());
    return 1;
  }
  // Atomic: a record is either absent or complete.
  const faultline::Status recorded = faultline::WriteFileAtomically(record_path, {wanted.dump() + "\n"});
  if (!recorded.ok()) {
    std::fprintf(stderr, "make_graph: the graph is written but its record is not: %s\n", recorded.message().c_str());
    return 1;
  }
  return summary(false);
}
