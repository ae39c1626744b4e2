// Implements the benchmark graph's lookup (bench_graph.h).
#include "bench/bench_graph.h"

#include <cstdlib>

#include "reference/graph/generators.h"

namespace faultline {

std::optional<std::string> BenchGraphDir() {
  const char* dir = std::getenv("FAULTLINE_BENCH_GRAPH");
  if (dir == nullptr || *dir == '\0') return std::nullopt;
  return std::string(dir);
}

Result<CscGraph> LoadBenchGraph() {
  if (const std::optional<std::string> dir = BenchGraphDir()) return CscGraph::Load(*dir);
  return GeneratePowerLaw(kBenchGraphNodes, kBenchGraphEdges, kBenchGraphSeed, /*weighted=*/true);
}

}  // namespace faultline
