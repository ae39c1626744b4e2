#include "bench/sampling_workload.h"

#include <random>

namespace faultline {

std::vector<std::vector<int64_t>> BenchSeedBatches(int64_t num_nodes) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int64_t> node(0, num_nodes - 1);
  std::vector<std::vector<int64_t>> batches(kBenchBatchesInPool, std::vector<int64_t>(kBenchBatch));
  for (auto& batch : batches) {
    for (int64_t& seed : batch) seed = node(rng);
  }
  return batches;
}

}  // namespace faultline
