// Implements ChainLayers (the hop loop), SampleLayers (a loop of a
// backend's sampling and compaction) and SampleMultiLayerInto (on the CPU:
// each hop's chunks compacted as they are sampled, into a LayerSink), with
// SampleMultiLayer built on it.
#include "reference/sampling/multi_layer.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "reference/sampling/subgraph_assembly.h"
#include "reference/sampling/unique_and_compact.h"

namespace faultline {
namespace {

// One hop on the CPU into `sink`: this thread compacts each chunk of
// sampled edges as it comes, while the crew's threads sample the next ones.
// The compactor starts with the first chunk: the seeds are checked by then.
// Returns the hop's unique nodes, where the sink keeps them.
Result<const std::vector<int64_t>*> SampleAndCompactLayer(const CscGraph& graph, const std::vector<int64_t>& seeds,
                                                          int64_t fanout, uint32_t layer,
                                                          const SamplingOptions& options, LayerSink& sink,
                                                          HelperCrew& crew) {
  const size_t expected = static_cast<size_t>(ExpectedSampledEdges(graph, static_cast<int64_t>(seeds.size()), fanout));
  FL_RETURN_IF_ERROR(sink.BeginLayer(layer, seeds, expected));
  std::optional<LayerCompactor> compactor;
  auto start_compactor = [&] {
    // Node ids lie in [0, num_nodes).
    compactor.emplace(seeds, 0, std::max<int64_t>(graph.num_nodes() - 1, 0), expected);
  };
  FL_RETURN_IF_ERROR(SampleNeighborsInChunks(
      graph, seeds, fanout, layer, options,
      [&](const SampledChunk& chunk) -> Status {
        if (!compactor) start_compactor();
        FL_ASSIGN_OR_RETURN(int64_t * compacted, sink.AddChunk(chunk));
        compactor->Add(chunk.indices.begin(), static_cast<size_t>(chunk.indices.size()), compacted);
        return OkStatus();
      },
      crew));
  if (!compactor) start_compactor();  // no seeds, no chunks
  return sink.EndLayer(compactor->TakeUniqueNodes());
}

// Builds SampleMultiLayer's layers from SampleMultiLayerInto.
class LayersBuilder : public LayerSink {
 public:
  explicit LayersBuilder(size_t num_layers) { layers_.reserve(num_layers); }  // EndLayer's pointers stay valid

  Status BeginLayer(uint32_t, const std::vector<int64_t>& seeds, size_t expected_edges) override {
    SampledLayer& layer = layers_.emplace_back();
    layer.subgraph = SubgraphToFill(seeds, expected_edges);
    layer.compacted_indices.reserve(expected_edges);
    return OkStatus();
  }
  Result<int64_t*> AddChunk(const SampledChunk& chunk) override {
    SampledLayer& layer = layers_.back();
    AppendChunk(chunk, layer.subgraph);
    const size_t compacted = layer.compacted_indices.size();
    layer.compacted_indices.resize(compacted + static_cast<size_t>(chunk.indices.size()));
    return layer.compacted_indices.data() + compacted;
  }
  Result<const std::vector<int64_t>*> EndLayer(std::vector<int64_t> unique_nodes) override {
    layers_.back().unique_nodes = std::move(unique_nodes);
    return &layers_.back().unique_nodes;
  }
  std::vector<SampledLayer> Take() { return std::move(layers_); }

 private:
  std::vector<SampledLayer> layers_;
};

}  // namespace

Status ValidateMultiLayerRequest(int64_t num_nodes, bool has_weights, const std::vector<int64_t>& seeds,
                                 const std::vector<int64_t>& fanouts, const SamplingOptions& options) {
  if (fanouts.empty()) return InvalidArgumentError("fanouts is empty; expected one fanout per layer");
  const std::vector<int64_t> no_seeds;
  for (size_t k = 0; k < fanouts.size(); ++k) {
    const Status layer = ValidateSampleRequest(num_nodes, has_weights, k == 0 ? seeds : no_seeds, fanouts[k], options);
    if (!layer.ok()) return layer.WithContext("layer " + std::to_string(k));
  }
  return OkStatus();
}

Status ChainLayers(const std::vector<int64_t>& seeds, const std::vector<int64_t>& fanouts,
                   const ChainedHop& one_layer) {
  if (fanouts.empty()) return InvalidArgumentError("fanouts is empty; expected one fanout per layer");
  const std::vector<int64_t>* layer_seeds = &seeds;
  for (size_t k = 0; k < fanouts.size(); ++k) {
    Result<const std::vector<int64_t>*> unique = one_layer(*layer_seeds, fanouts[k], static_cast<uint32_t>(k));
    if (!unique.ok()) return unique.status().WithContext("layer " + std::to_string(k));
    layer_seeds = *unique;
  }
  return OkStatus();
}

Result<std::vector<SampledLayer>> SampleLayers(const std::vector<int64_t>& seeds, const std::vector<int64_t>& fanouts,
                                               const SampleOneLayer& sample_one, const CompactLayer& compact) {
  std::vector<SampledLayer> layers;
  layers.reserve(fanouts.size());  // the unique nodes returned stay where they are
  FL_RETURN_IF_ERROR(ChainLayers(seeds, fanouts,
                                 [&](const std::vector<int64_t>& layer_seeds, int64_t fanout,
                                     uint32_t layer) -> Result<const std::vector<int64_t>*> {
                                   FL_ASSIGN_OR_RETURN(SampledSubgraph sampled, sample_one(layer_seeds, fanout, layer));
                                   SampledLayer& out = layers.emplace_back();
                                   out.subgraph = std::move(sampled);
                                   FL_ASSIGN_OR_RETURN(UniqueAndCompactResult compacted,
                                                       compact(out.subgraph.seeds, out.subgraph.indices));
                                   out.unique_nodes = std::move(compacted.unique_nodes);
                                   out.compacted_indices = std::move(compacted.compacted_indices);
                                   return &out.unique_nodes;
                                 }));
  return layers;
}

Status SampleMultiLayerInto(const CscGraph& graph, const std::vector<int64_t>& seeds,
                            const std::vector<int64_t>& fanouts, const SamplingOptions& options, LayerSink& sink) {
  FL_RETURN_IF_ERROR(ValidateMultiLayerRequest(graph.num_nodes(), graph.has_weights(), seeds, fanouts, options));
  HelperCrew crew(options.num_threads - 1);  // every hop's helpers
  return ChainLayers(seeds, fanouts, [&](const std::vector<int64_t>& layer_seeds, int64_t fanout, uint32_t layer) {
    return SampleAndCompactLayer(graph, layer_seeds, fanout, layer, options, sink, crew);
  });
}

Result<std::vector<SampledLayer>> SampleMultiLayer(const CscGraph& graph, const std::vector<int64_t>& seeds,
                                                   const std::vector<int64_t>& fanouts,
                                                   const SamplingOptions& options) {
  LayersBuilder builder(fanouts.size());
  FL_RETURN_IF_ERROR(SampleMultiLayerInto(graph, seeds, fanouts, options, builder));
  return builder.Take();
}

}  // namespace faultline
