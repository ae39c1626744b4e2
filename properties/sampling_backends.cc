// Implements the backend registry of the sampling property tests.
#include "properties/sampling_backends.h"

namespace faultline {
namespace properties {

std::vector<std::string> BackendNames() { return {"cpu-1", "cpu-2", "cpu-8"}; }

Result<SampledSubgraph> RunOnBackend(const std::string& name, const SampleRequest& r) {
  int threads = 0;
  if (name == "cpu-1") threads = 1;
  else if (name == "cpu-2") threads = 2;
  else if (name == "cpu-8") threads = 8;
  else return NotFoundError("unknown sampling backend '" + name + "'; expected one of cpu-1, cpu-2, cpu-8");
  return SampleNeighbors(*r.graph, r.seeds, r.fanout, r.replace, r.weighted, r.rng_seed, r.layer, threads);
}

}  // namespace properties
}  // namespace faultline
