// The sampling workload every benchmark measures, defined once so that the
// CPU numbers (pipeline_bench) and the device numbers (device_bench) compare:
// fanouts [15, 10, 5], batches of 1024 random seeds, a pool of 64 batches
// drawn with a fixed seed (the same on every run and in both binaries).
#ifndef FAULTLINE_BENCH_SAMPLING_WORKLOAD_H_
#define FAULTLINE_BENCH_SAMPLING_WORKLOAD_H_

#include <cstdint>
#include <vector>

namespace faultline {

inline constexpr int64_t kBenchBatch = 1024;
inline constexpr int kBenchBatchesInPool = 64;
inline const std::vector<int64_t> kBenchFanouts = {15, 10, 5};

// kBenchBatchesInPool batches of kBenchBatch seeds in [0, num_nodes).
std::vector<std::vector<int64_t>> BenchSeedBatches(int64_t num_nodes);

}  // namespace faultline

#endif  // FAULTLINE_BENCH_SAMPLING_WORKLOAD_H_
