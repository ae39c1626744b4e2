// The benchmark graph, defined once: make_graph writes it, pipeline_bench and
// device_bench load it from FAULTLINE_BENCH_GRAPH (a make_graph folder).
#ifndef FAULTLINE_BENCH_BENCH_GRAPH_H_
#define FAULTLINE_BENCH_BENCH_GRAPH_H_

#include <cstdint>
#include <optional>
#include <string>

#include "reference/base/status.h"
#include "reference/graph/csc_graph.h"

namespace faultline {

// make_graph's defaults: an R-MAT power-law graph with weights.
inline constexpr int64_t kBenchGraphNodes = 2'000'000;
inline constexpr int64_t kBenchGraphEdges = 50'000'000;
inline constexpr uint64_t kBenchGraphSeed = 1;

// What to tell a user who did not set FAULTLINE_BENCH_GRAPH.
inline constexpr char kBenchGraphHint[] =
    "set FAULTLINE_BENCH_GRAPH to a graph directory (bazel run //bench:make_graph -- --out DIR)";

// The folder FAULTLINE_BENCH_GRAPH names; nullopt when it is unset or empty.
std::optional<std::string> BenchGraphDir();

// Loads the graph from BenchGraphDir(), or, when that is unset, generates the
// same graph in memory (make_graph's defaults; tens of seconds).
Result<CscGraph> LoadBenchGraph();

}  // namespace faultline

#endif  // FAULTLINE_BENCH_BENCH_GRAPH_H_
