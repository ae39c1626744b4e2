// Provides the backends that property tests run neighbor sampling on, by
// name, so every property compares all of them against the same invariants:
// the CPU reference at several thread counts, simcuda with the graph in
// device memory and in pinned host memory, and (when the test asks for real
// CUDA and a device is present) the same two placements on cuda.
#ifndef FAULTLINE_PROPERTIES_SAMPLING_BACKENDS_H_
#define FAULTLINE_PROPERTIES_SAMPLING_BACKENDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reference/base/status.h"
#include "reference/graph/csc_graph.h"
#include "reference/sampling/device_sampling.h"
#include "reference/sampling/multi_layer.h"
#include "reference/sampling/sample_neighbors.h"

namespace faultline {
namespace properties {

// Describes one sampling call: the arguments of SampleNeighbors minus threads.
struct SampleRequest {
  const CscGraph* graph = nullptr;
  std::vector<int64_t> seeds;
  int64_t fanout = 0;
  bool replace = false;
  bool weighted = false;
  uint64_t rng_seed = 0;
  uint32_t layer = 0;
};

// Describes one multi-layer sampling call: the arguments of SampleMultiLayer
// minus threads.
struct MultiLayerRequest {
  const CscGraph* graph = nullptr;
  std::vector<int64_t> seeds;
  std::vector<int64_t> fanouts;
  bool replace = false;
  bool weighted = false;
  uint64_t rng_seed = 0;
  // The device backends' workspace bound: a hop whose bound is larger
  // waits for its counts, a smaller one is sized by the bound. Every value
  // must give the same layers.
  int64_t bounded_hop_words = DeviceSamplingWorkspace::kDefaultBoundedHopWords;
};

// Returns whether the test asked for real CUDA (FAULTLINE_TEST_RUNTIME=cuda).
bool CudaRequested();

// Returns why the cuda backends are missing although CudaRequested(), or
// nullopt when they are present or were not requested. Tests use it to fail
// with the reason (never to skip): a run that asked for real CUDA on a
// machine without a GPU must not pass.
std::optional<std::string> MissingCudaReason();

// Returns the names of the backends available in this build and machine;
// the first one ("cpu-1") is the baseline the others are compared with.
// Always: cpu-1, cpu-2, cpu-8, simcuda-device, simcuda-pinned. With
// FAULTLINE_TEST_RUNTIME=cuda and at least one CUDA device: cuda-device,
// cuda-pinned.
std::vector<std::string> BackendNames();

// Runs `request` on the backend `name`. "cpu-N" is the CPU reference with N
// threads; "<runtime>-device" and "<runtime>-pinned" place the graph with
// DeviceGraph on device 0 of that runtime (device memory or pinned host
// memory) and sample with SampleNeighborsOnDevice. Fails with NotFound for
// an unknown or unavailable name.
Result<SampledSubgraph> RunOnBackend(const std::string& name, const SampleRequest& request);

// Runs `request` on the backend `name`: SampleMultiLayer on the CPU ones,
// SampleMultiLayerOnDevice on the device ones.
Result<std::vector<SampledLayer>> RunMultiLayerOnBackend(const std::string& name, const MultiLayerRequest& request);

}  // namespace properties
}  // namespace faultline

#endif  // FAULTLINE_PROPERTIES_SAMPLING_BACKENDS_H_
