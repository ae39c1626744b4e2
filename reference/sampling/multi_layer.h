// Provides SampleMultiLayer: neighbor sampling over several hops, each hop
// sampled from the unique nodes the previous hop reached; SampleMultiLayerInto,
// the same handed to a LayerSink as it is sampled; and ChainLayers and
// SampleLayers, the hop loop any backend runs its own hops in.
#ifndef FAULTLINE_REFERENCE_SAMPLING_MULTI_LAYER_H_
#define FAULTLINE_REFERENCE_SAMPLING_MULTI_LAYER_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "reference/base/status.h"
#include "reference/graph/csc_graph.h"
#include "reference/sampling/sample_neighbors.h"
#include "reference/sampling/unique_and_compact.h"

namespace faultline {

// Holds one hop: the sampled subgraph of its seeds, and its unique nodes
// (seeds first, then new nodes in first-appearance order) with the sampled
// indices renumbered into positions of unique_nodes.
struct SampledLayer {
  SampledSubgraph subgraph;
  std::vector<int64_t> unique_nodes;
  std::vector<int64_t> compacted_indices;
};

// Samples one hop: the seeds, the hop's fanout and its layer index.
using SampleOneLayer =
    std::function<Result<SampledSubgraph>(const std::vector<int64_t>& seeds, int64_t fanout, uint32_t layer)>;

// Computes a hop's unique nodes and compacted indices from its seeds and
// sampled indices.
using CompactLayer = std::function<Result<UniqueAndCompactResult>(const std::vector<int64_t>& seeds,
                                                                  const std::vector<int64_t>& indices)>;

// One hop of ChainLayers: samples and compacts from `seeds` with `fanout`
// as layer `layer`, and returns where the hop's unique nodes are kept
// (valid until the chain ends).
using ChainedHop = std::function<Result<const std::vector<int64_t>*>(const std::vector<int64_t>& seeds, int64_t fanout,
                                                                     uint32_t layer)>;

// Checks a multi-layer request before any hop starts, as the hops would
// check it (every backend does, so none starts a hop of a bad request):
// fanouts not empty, then per layer k ValidateSampleRequest of its fanout
// and `options` (and, for layer 0, of `seeds`; later layers start from
// node ids of the graph), the error naming the layer ("layer 1:
// fanout=-2; expected ...").
Status ValidateMultiLayerRequest(int64_t num_nodes, bool has_weights, const std::vector<int64_t>& seeds,
                                 const std::vector<int64_t>& fanouts, const SamplingOptions& options);

// Runs `one_layer` for every fanout, hop k + 1 starting from the unique
// nodes of hop k. Fails when fanouts is empty or a hop fails (the error
// names the hop).
Status ChainLayers(const std::vector<int64_t>& seeds, const std::vector<int64_t>& fanouts, const ChainedHop& one_layer);

// Runs `sample_one` then `compact` for every fanout, hop k + 1 starting from
// the unique nodes of hop k; any backend (CPU, simcuda, cuda) supplies them.
Result<std::vector<SampledLayer>> SampleLayers(const std::vector<int64_t>& seeds, const std::vector<int64_t>& fanouts,
                                               const SampleOneLayer& sample_one, const CompactLayer& compact);

// Samples fanouts.size() hops on the CPU: hop k uses fanouts[k] and layer
// index k in the random counter; hop 0 starts from `seeds`, hop k + 1 from
// the unique nodes of hop k. Fails when fanouts is empty or any hop fails
// (the error names the hop).
Result<std::vector<SampledLayer>> SampleMultiLayer(const CscGraph& graph, const std::vector<int64_t>& seeds,
                                                   const std::vector<int64_t>& fanouts, const SamplingOptions& options);

// Receives SampleMultiLayerInto's layers as they are made, on the calling
// thread: for each layer BeginLayer, its chunks in seed order, EndLayer.
// An error from any of them stops the sampling and is returned.
class LayerSink {
 public:
  virtual ~LayerSink() = default;
  // Layer `layer` starts from `seeds`; about `expected_edges` edges will
  // come (a guess, for reserving).
  virtual Status BeginLayer(uint32_t layer, const std::vector<int64_t>& seeds, size_t expected_edges) = 0;
  // The next chunk's sampled edges; returns where the chunk's
  // chunk.indices.size() compacted indices are to be written (valid until
  // the next call).
  virtual Result<int64_t*> AddChunk(const SampledChunk& chunk) = 0;
  // The layer's unique nodes; returns where the sink keeps them, unchanged
  // at least until the next EndLayer returns: the next layer starts from
  // there.
  virtual Result<const std::vector<int64_t>*> EndLayer(std::vector<int64_t> unique_nodes) = 0;
};

// SampleMultiLayer, handed to `sink` as it is sampled (each chunk
// compacted straight to where the sink wants it), so that a consumer can
// lay a minibatch out where it will be read without building it first.
// Fails as SampleMultiLayer does; a bad request (ValidateMultiLayerRequest)
// fails before the first BeginLayer.
Status SampleMultiLayerInto(const CscGraph& graph, const std::vector<int64_t>& seeds,
                            const std::vector<int64_t>& fanouts, const SamplingOptions& options, LayerSink& sink);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_SAMPLING_MULTI_LAYER_H_
