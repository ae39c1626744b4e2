// Provides neighbor sampling on a device runtime (simcuda or cuda): the graph
// lives in device memory (cuda-cuda) or in pinned host memory read by the
// device through unified addressing (pinned-cuda). The kernels run the same
// per-seed routine as the CPU reference, so the results are bit-identical.
#ifndef FAULTLINE_REFERENCE_SAMPLING_DEVICE_SAMPLING_H_
#define FAULTLINE_REFERENCE_SAMPLING_DEVICE_SAMPLING_H_

#include <cstdint>
#include <vector>

#include "reference/base/status.h"
#include "reference/graph/csc_graph.h"
#include "reference/runtime/runtime.h"
#include "reference/sampling/multi_layer.h"
#include "reference/sampling/sample_neighbors.h"
#include "reference/sampling/unique_and_compact.h"
#include "reference/tensor/tensor.h"

namespace faultline {

enum class GraphPlacement {
  kDevice,      // copied into device memory
  kPinnedHost,  // pinned host memory, read by kernels through UVA
};

// A CSC graph placed where kernels can read it.
class DeviceGraph {
 public:
  // Copies (kDevice) or pins a copy of (kPinnedHost) `graph` for `device`
  // of `runtime`, which must be simcuda or cuda.
  static Result<DeviceGraph> Create(const CscGraph& graph, DeviceRuntime& runtime, GraphPlacement placement,
                                    int device = 0);

  DeviceRuntime& runtime() const { return *runtime_; }
  int device() const { return device_; }
  GraphPlacement placement() const { return placement_; }
  int64_t num_nodes() const { return num_nodes_; }
  bool has_weights() const { return has_weights_; }
  const Tensor& indptr() const { return indptr_; }
  const Tensor& indices() const { return indices_; }
  const Tensor& weights() const { return weights_; }

 private:
  DeviceRuntime* runtime_ = nullptr;
  int device_ = 0;
  GraphPlacement placement_ = GraphPlacement::kDevice;
  int64_t num_nodes_ = 0;
  bool has_weights_ = false;  // a weighted graph may have no edges at all
  Tensor indptr_, indices_, weights_;
};

// Samples like SampleNeighbors, on the graph's device, in `stream`
// (options.num_threads is not used). Seeds are validated on the host (the
// error names the position and value) before any launch.
Result<SampledSubgraph> SampleNeighborsOnDevice(const DeviceGraph& graph, const std::vector<int64_t>& seeds,
                                                int64_t fanout, uint32_t layer, const SamplingOptions& options,
                                                StreamHandle stream = nullptr);

// Computes UniqueAndCompact(seeds, indices) with kernels on `device` of
// `runtime`, in `stream`: the same unique order (seeds first, then first
// appearance).
Result<UniqueAndCompactResult> UniqueAndCompactOnDevice(DeviceRuntime& runtime, int device,
                                                        const std::vector<int64_t>& seeds,
                                                        const std::vector<int64_t>& indices,
                                                        StreamHandle stream = nullptr);

// Samples like SampleMultiLayer, every hop (sampling and compaction) on the
// graph's device, in `stream`.
Result<std::vector<SampledLayer>> SampleMultiLayerOnDevice(const DeviceGraph& graph,
                                                           const std::vector<int64_t>& seeds,
                                                           const std::vector<int64_t>& fanouts,
                                                           const SamplingOptions& options,
                                                           StreamHandle stream = nullptr);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_SAMPLING_DEVICE_SAMPLING_H_
