// Writes the benchmark graph: an R-MAT power-law graph as a folder of .npy
// files (indptr, indices, weights) that both faultline's benchmarks and the
// GraphBolt peer read. Exit codes: 0 written or already there, 1 failure,
// 2 usage.

#include <CLI/CLI.hpp>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <iostream>
#include <nlohmann/json.hpp>

#include "reference/graph/csc_graph.h"
#include "reference/base/caller_path.h"
#include "reference/graph/generators.h"

int main(int argc, char** argv) {
  CLI::App app{"make_graph: write the benchmark power-law graph (indptr.npy, indices.npy, weights.npy)"};
  std::string out;
  int64_t nodes = 2'000'000, edges = 50'000'000;
  uint64_t seed = 1;
  bool force = false, json = false;
  app.add_option("--out", out, "Output directory (created if missing)")->required()->type_name("DIR");
  app.add_option("--nodes", nodes, "Number of nodes (default 2000000)")->check(CLI::PositiveNumber);
  app.add_option("--edges", edges, "Number of edges (default 50000000)")->check(CLI::NonNegativeNumber);
  app.add_option("--seed", seed, "Generator seed (default 1)");
  app.add_flag("--force", force, "Rewrite even when a graph of this size is already there");
  app.add_flag("--json", json, "Print a JSON summary on stdout");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  out = faultline::CallerPath(out);  // the user's folder, also under `bazel run`
  auto summary = [&](bool reused) {
    if (json) {
      std::cout << nlohmann::json{{"dir", out}, {"nodes", nodes}, {"edges", edges}, {"seed", seed}, {"reused", reused}}
                << std::endl;
    } else {
      std::printf("%s: %lld nodes, %lld edges%s\n", out.c_str(), static_cast<long long>(nodes),
                  static_cast<long long>(edges), reused ? " (already there)" : "");
    }
  };
  if (!force) {
    auto existing = faultline::CscGraph::Load(out);
    if (existing.ok() && existing->num_nodes() == nodes && existing->num_edges() == edges && existing->has_weights()) {
      summary(true);
      return 0;
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
  faultline::Status saved = graph->Save(out);
  if (!saved.ok()) {
    std::fprintf(stderr, "make_graph: %s\n", saved.ToString().c_str());
    return 1;
  }
  summary(false);
  return 0;
}
