// Implements the backend registry of the sampling property tests.
#include "properties/sampling_backends.h"

#include "reference/runtime/runtime.h"
#include "reference/runtime/test_runtime.h"
#include "reference/sampling/device_sampling.h"

namespace faultline {
namespace properties {
namespace {

// Parsed form of a backend name.
struct Backend {
  bool on_device = false;
  int threads = 0;                          // CPU backends
  RuntimeKind runtime = RuntimeKind::kCpu;  // device backends
  GraphPlacement placement = GraphPlacement::kDevice;
};

// Returns whether the runtime under test is real CUDA with a usable device.
// Asked once: the answer does not change within a process.
const Result<DeviceRuntime*>& CudaUnderTest() {
  static const auto* runtime = new Result<DeviceRuntime*>(DeviceRuntimeUnderTest());
  return *runtime;
}

bool CudaDevicePresent() { return CudaRequested() && CudaUnderTest().ok(); }

Result<Backend> ParseBackend(const std::string& name) {
  Backend b;
  if (name == "cpu-1")
    b.threads = 1;
  else if (name == "cpu-2")
    b.threads = 2;
  else if (name == "cpu-8")
    b.threads = 8;
  else if (name == "simcuda-device" || name == "simcuda-pinned" || name == "cuda-device" || name == "cuda-pinned") {
    b.on_device = true;
    b.runtime = name.rfind("cuda", 0) == 0 ? RuntimeKind::kCuda : RuntimeKind::kSimCuda;
    b.placement = name.find("-pinned") != std::string::npos ? GraphPlacement::kPinnedHost : GraphPlacement::kDevice;
  } else {
    std::string known;
    for (const std::string& n : BackendNames()) known += (known.empty() ? "" : ", ") + n;
    return NotFoundError("unknown sampling backend '" + name + "'; expected one of " + known);
  }
  if (b.on_device && b.runtime == RuntimeKind::kCuda && !(CudaRequested() && CudaDevicePresent())) {
    return NotFoundError("sampling backend '" + name +
                         "' is unavailable: it needs FAULTLINE_TEST_RUNTIME=cuda and a CUDA device");
  }
  return b;
}

Result<DeviceGraph> PlaceGraph(const Backend& b, const CscGraph& graph) {
  return DeviceGraph::Create(graph, GetRuntime(b.runtime), b.placement, /*device=*/0);
}

}  // namespace

bool CudaRequested() {
  Result<RuntimeKind> kind = RuntimeKindUnderTest();
  return kind.ok() && *kind == RuntimeKind::kCuda;
}

std::optional<std::string> MissingCudaReason() {
  if (!CudaRequested() || CudaDevicePresent()) return std::nullopt;
  return CudaUnderTest().status().ToString();
}

std::vector<std::string> BackendNames() {
  std::vector<std::string> names = {"cpu-1", "cpu-2", "cpu-8", "simcuda-device", "simcuda-pinned"};
  if (CudaRequested() && CudaDevicePresent()) {
    names.push_back("cuda-device");
    names.push_back("cuda-pinned");
  }
  return names;
}

Result<SampledSubgraph> RunOnBackend(const std::string& name, const SampleRequest& r) {
  FL_ASSIGN_OR_RETURN(const Backend b, ParseBackend(name));
  if (!b.on_device) {
    return SampleNeighbors(*r.graph, r.seeds, r.fanout, r.layer,
                           SamplingOptions{r.replace, r.weighted, r.rng_seed, b.threads});
  }
  FL_ASSIGN_OR_RETURN(const DeviceGraph graph, PlaceGraph(b, *r.graph));
  return SampleNeighborsOnDevice(graph, r.seeds, r.fanout, r.layer, SamplingOptions{r.replace, r.weighted, r.rng_seed});
}

Result<std::vector<SampledLayer>> RunMultiLayerOnBackend(const std::string& name, const MultiLayerRequest& r) {
  FL_ASSIGN_OR_RETURN(const Backend b, ParseBackend(name));
  if (!b.on_device) {
    return SampleMultiLayer(*r.graph, r.seeds, r.fanouts,
                            SamplingOptions{r.replace, r.weighted, r.rng_seed, b.threads});
  }
  FL_ASSIGN_OR_RETURN(const DeviceGraph graph, PlaceGraph(b, *r.graph));
  DeviceSamplingWorkspace workspace(DeviceSamplingWorkspace::Growth::kExact, r.bounded_hop_words);
  return SampleMultiLayerOnDevice(graph, r.seeds, r.fanouts, SamplingOptions{r.replace, r.weighted, r.rng_seed},
                                  nullptr, &workspace);
}

}  // namespace properties
}  // namespace faultline
