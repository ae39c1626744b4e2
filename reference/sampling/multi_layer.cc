// Implements SampleMultiLayer as a loop of SampleNeighbors and UniqueAndCompact.
#include "reference/sampling/multi_layer.h"

#include <string>
#include <utility>

#include "reference/sampling/unique_and_compact.h"

namespace faultline {

Result<std::vector<SampledLayer>> SampleLayers(const std::vector<int64_t>& seeds, const std::vector<int64_t>& fanouts,
                                               const SampleOneLayer& sample_one, const CompactLayer& compact) {
  if (fanouts.empty()) return InvalidArgumentError("fanouts is empty; expected one fanout per layer");
  std::vector<SampledLayer> layers;
  layers.reserve(fanouts.size());  // layer_seeds points into the last layer pushed (a safeguard)
  const std::vector<int64_t>* layer_seeds = &seeds;
  for (size_t k = 0; k < fanouts.size(); ++k) {
    Result<SampledSubgraph> sampled = sample_one(*layer_seeds, fanouts[k], static_cast<uint32_t>(k));
    if (!sampled.ok()) return sampled.status().WithContext("layer " + std::to_string(k));
    SampledLayer layer;
    layer.subgraph = std::move(sampled).value();
    Result<UniqueAndCompactResult> compacted = compact(layer.subgraph.seeds, layer.subgraph.indices);
    if (!compacted.ok()) return compacted.status().WithContext("layer " + std::to_string(k));
    layer.unique_nodes = std::move(compacted->unique_nodes);
    layer.compacted_indices = std::move(compacted->compacted_indices);
    layers.push_back(std::move(layer));
    layer_seeds = &layers.back().unique_nodes;
  }
  return layers;
}

Result<std::vector<SampledLayer>> SampleMultiLayer(const CscGraph& graph, const std::vector<int64_t>& seeds,
                                                   const std::vector<int64_t>& fanouts,
                                                   const SamplingOptions& options) {
  return SampleLayers(
      seeds, fanouts,
      [&](const std::vector<int64_t>& layer_seeds, int64_t fanout, uint32_t layer) {
        return SampleNeighbors(graph, layer_seeds, fanout, layer, options);
      },
      [](const std::vector<int64_t>& layer_seeds, const std::vector<int64_t>& indices) {
        return Result<UniqueAndCompactResult>(UniqueAndCompact(layer_seeds, indices));
      });
}

}  // namespace faultline
