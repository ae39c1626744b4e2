// Implements SampleLayers (a loop of a backend's sampling and compaction)
// and SampleMultiLayer (on the CPU: each hop's chunks compacted as they are
// sampled).
#include "reference/sampling/multi_layer.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "reference/sampling/unique_and_compact.h"

namespace faultline {
namespace {

// Runs `one_layer` for every fanout, hop k + 1 starting from the unique
// nodes of hop k; an error names the hop.
using OneLayer = std::function<Result<SampledLayer>(const std::vector<int64_t>& seeds, int64_t fanout, uint32_t layer)>;
Result<std::vector<SampledLayer>> ChainLayers(const std::vector<int64_t>& seeds, const std::vector<int64_t>& fanouts,
                                              const OneLayer& one_layer) {
  if (fanouts.empty()) return InvalidArgumentError("fanouts is empty; expected one fanout per layer");
  std::vector<SampledLayer> layers;
  layers.reserve(fanouts.size());  // layer_seeds points into the last layer pushed (a safeguard)
  const std::vector<int64_t>* layer_seeds = &seeds;
  for (size_t k = 0; k < fanouts.size(); ++k) {
    Result<SampledLayer> layer = one_layer(*layer_seeds, fanouts[k], static_cast<uint32_t>(k));
    if (!layer.ok()) return layer.status().WithContext("layer " + std::to_string(k));
    layers.push_back(std::move(layer).value());
    layer_seeds = &layers.back().unique_nodes;
  }
  return layers;
}

// One hop on the CPU: this thread compacts each chunk of sampled edges as
// it comes, while the other threads sample the next ones. The compactor
// starts with the first chunk: the seeds are checked by then.
Result<SampledLayer> SampleAndCompactLayer(const CscGraph& graph, const std::vector<int64_t>& seeds, int64_t fanout,
                                           uint32_t layer, const SamplingOptions& options) {
  SampledLayer out;
  out.subgraph = SubgraphToFill(graph, seeds, fanout);
  const size_t expected = static_cast<size_t>(ExpectedSampledEdges(graph, static_cast<int64_t>(seeds.size()), fanout));
  out.compacted_indices.reserve(expected);
  std::optional<LayerCompactor> compactor;
  auto start_compactor = [&] {
    // Node ids lie in [0, num_nodes).
    compactor.emplace(seeds, 0, std::max<int64_t>(graph.num_nodes() - 1, 0), expected);
  };
  FL_RETURN_IF_ERROR(SampleNeighborsInChunks(graph, seeds, fanout, layer, options, [&](const SampledChunk& chunk) {
    if (!compactor) start_compactor();
    AppendChunk(chunk, out.subgraph);
    const size_t compacted = out.compacted_indices.size();
    out.compacted_indices.resize(compacted + static_cast<size_t>(chunk.indices.size()));
    compactor->Add(chunk.indices.begin(), static_cast<size_t>(chunk.indices.size()),
                   out.compacted_indices.data() + compacted);
  }));
  if (!compactor) start_compactor();  // no seeds, no chunks
  out.unique_nodes = compactor->TakeUniqueNodes();
  return out;
}

}  // namespace

Result<std::vector<SampledLayer>> SampleLayers(const std::vector<int64_t>& seeds, const std::vector<int64_t>& fanouts,
                                               const SampleOneLayer& sample_one, const CompactLayer& compact) {
  return ChainLayers(seeds, fanouts,
                     [&](const std::vector<int64_t>& layer_seeds, int64_t fanout, uint32_t layer) -> Result<SampledLayer> {
    FL_ASSIGN_OR_RETURN(SampledSubgraph sampled, sample_one(layer_seeds, fanout, layer));
    SampledLayer out;
    out.subgraph = std::move(sampled);
    FL_ASSIGN_OR_RETURN(UniqueAndCompactResult compacted, compact(out.subgraph.seeds, out.subgraph.indices));
    out.unique_nodes = std::move(compacted.unique_nodes);
    out.compacted_indices = std::move(compacted.compacted_indices);
    return out;
  });
}

Result<std::vector<SampledLayer>> SampleMultiLayer(const CscGraph& graph, const std::vector<int64_t>& seeds,
                                                   const std::vector<int64_t>& fanouts,
                                                   const SamplingOptions& options) {
  return ChainLayers(seeds, fanouts, [&](const std::vector<int64_t>& layer_seeds, int64_t fanout, uint32_t layer) {
    return SampleAndCompactLayer(graph, layer_seeds, fanout, layer, options);
  });
}

}  // namespace faultline
