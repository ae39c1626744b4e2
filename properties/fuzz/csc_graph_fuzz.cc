// Fuzzes graph loading and validation (CscGraph::Load, reference/graph/
// csc_graph.h). Feeds: the input split at "\xffNEXT\xff" into the bytes of
// indptr.npy, indices.npy and, when their parts are present and not empty,
// weights.npy and edge_types.npy of a graph folder. Asserts: Load never
// crashes and either fails with InvalidArgument or DataLoss in a message
// that says which folder it was loading, or returns a graph that satisfies
// every documented invariant (checked here independently); a loaded graph
// saved with Save loads back identical.
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <limits>

#include "properties/fuzz/fuzz_support.h"
#include "reference/graph/csc_graph.h"

namespace faultline {
namespace {

constexpr char kSeparator[] = "\xffNEXT\xff";
const char* const kFiles[] = {"indptr.npy", "indices.npy", "weights.npy", "edge_types.npy"};

void CheckInvariants(const CscGraph& g) {
  const std::vector<int64_t>& indptr = g.indptr();
  FUZZ_CHECK(!indptr.empty() && indptr[0] == 0, "indptr must start at 0");
  for (size_t v = 0; v + 1 < indptr.size(); ++v) FUZZ_CHECK(indptr[v] <= indptr[v + 1], "indptr not monotone");
  FUZZ_CHECK(indptr.back() == g.num_edges(), "indptr does not end at the edge count");
  for (int64_t u : g.indices()) FUZZ_CHECK(u >= 0 && u < g.num_nodes(), "index out of range: " + std::to_string(u));
  if (g.has_weights()) {
    FUZZ_CHECK(static_cast<int64_t>(g.weights().size()) == g.num_edges(), "one weight per edge");
    for (float w : g.weights()) FUZZ_CHECK(std::isfinite(w) && w >= 0, "bad weight");
  }
  if (g.has_edge_types()) {
    FUZZ_CHECK(static_cast<int64_t>(g.edge_types().size()) == g.num_edges(), "one type per edge");
    for (int32_t t : g.edge_types()) {
      FUZZ_CHECK(t >= 0, "negative edge type");
      FUZZ_CHECK(g.storage().edge_types != npy::DType::kUInt8 || t <= 255, "edge type does not fit '|u1'");
    }
    for (size_t v = 0; v + 1 < indptr.size(); ++v) {
      for (int64_t e = indptr[v]; e + 1 < indptr[v + 1]; ++e) {
        FUZZ_CHECK(g.edge_types()[e] <= g.edge_types()[e + 1], "edge types unsorted in a segment");
      }
    }
  }
  FUZZ_CHECK(g.storage().indices != npy::DType::kInt32 || g.num_nodes() - 1 <= std::numeric_limits<int32_t>::max(),
             "node ids do not fit '<i4'");
}

}  // namespace
}  // namespace faultline

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace faultline;
  static const std::string dir = [] {
    const std::string d = fuzz::ScratchDir() + "/graph";
    FUZZ_CHECK(mkdir(d.c_str(), 0700) == 0, d);
    return d;
  }();
  static const std::string copy = [] {
    const std::string d = fuzz::ScratchDir() + "/copy";
    FUZZ_CHECK(mkdir(d.c_str(), 0700) == 0, d);
    return d;
  }();
  const std::vector<std::string_view> parts =
      fuzz::Split(std::string_view(reinterpret_cast<const char*>(data), size), kSeparator, 4);
  for (size_t i = 0; i < 4; ++i) {
    const std::string path = dir + "/" + kFiles[i];
    if (i < 2 || (i < parts.size() && !parts[i].empty())) {
      fuzz::WriteFile(path, i < parts.size() ? parts[i] : std::string_view());
    } else {
      unlink(path.c_str());
    }
  }

  Result<CscGraph> graph = CscGraph::Load(dir);
  if (!graph.ok()) {
    const StatusCode code = graph.status().code();
    FUZZ_CHECK(code == StatusCode::kInvalidArgument || code == StatusCode::kDataLoss, graph.status().ToString());
    FUZZ_CHECK(graph.status().message().rfind("loading a graph from '" + dir + "'", 0) == 0,
               "the error does not name the folder: " + graph.status().message());
    return 0;
  }
  CheckInvariants(*graph);

  Status saved = graph->Save(copy);
  FUZZ_CHECK(saved.ok(), saved.ToString());
  Result<CscGraph> back = CscGraph::Load(copy);
  FUZZ_CHECK(back.ok(), back.status().ToString());
  FUZZ_CHECK(back->indptr() == graph->indptr() && back->indices() == graph->indices(), "Save then Load: structure");
  FUZZ_CHECK(back->has_weights() == graph->has_weights() && back->has_edge_types() == graph->has_edge_types(),
             "Save then Load: optional arrays");
  if (graph->has_weights()) FUZZ_CHECK(back->weights() == graph->weights(), "Save then Load: weights");
  if (graph->has_edge_types()) FUZZ_CHECK(back->edge_types() == graph->edge_types(), "Save then Load: edge types");
  FUZZ_CHECK(
      back->storage().indices == graph->storage().indices && back->storage().edge_types == graph->storage().edge_types,
      "Save then Load: storage types");
  return 0;
}
