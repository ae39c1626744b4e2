// Provides the backends that property tests run neighbor sampling on, by
// name, so every property compares all of them against the same invariants.
// Today: the CPU reference at several thread counts; device backends
// (simcuda, cuda) plug in here by adding a name and a case in RunOnBackend.
#ifndef FAULTLINE_PROPERTIES_SAMPLING_BACKENDS_H_
#define FAULTLINE_PROPERTIES_SAMPLING_BACKENDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "reference/base/status.h"
#include "reference/graph/csc_graph.h"
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

// Returns the names of the backends available in this build and machine;
// the first one is the baseline the others are compared with.
std::vector<std::string> BackendNames();

// Runs `request` on the backend `name` ("cpu-1", "cpu-2", "cpu-8": the CPU
// reference with that many threads). Fails with NotFound for an unknown name.
Result<SampledSubgraph> RunOnBackend(const std::string& name, const SampleRequest& request);

}  // namespace properties
}  // namespace faultline

#endif  // FAULTLINE_PROPERTIES_SAMPLING_BACKENDS_H_
