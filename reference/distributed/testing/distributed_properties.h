// Provides the property checks shared by the in-process and MPI tests: a
// rapidcheck state machine comparing a DistTensor with one local tensor, and
// one optimizer run compared with the dense reference. Both run unchanged
// over any Transport.
#ifndef FAULTLINE_REFERENCE_DISTRIBUTED_TESTING_DISTRIBUTED_PROPERTIES_H_
#define FAULTLINE_REFERENCE_DISTRIBUTED_TESTING_DISTRIBUTED_PROPERTIES_H_

#include <cstdint>
#include <vector>

#include <rapidcheck.h>

#include "reference/distributed/dist_tensor.h"
#include "reference/distributed/testing/dense_reference.h"

namespace faultline {

// Runs random pull / push / push_add sequences (ids on the host or on
// `device` when it is not null), interleaved with rejected bad inputs, against
// `tensor` and against a local copy; RC_ASSERTs that they never differ. Resets
// `tensor` to zeros first. Call inside a rapidcheck property. When `digest`
// is not null, every pulled row is folded into it (FNV-1a over the float
// bits), so that two runs of the same seed can be compared bit for bit.
void CheckDistTensorAgainstLocalTensor(DistTensor& tensor, DeviceRuntime* device, uint64_t* digest = nullptr);

// Folds `count` floats' bits into an FNV-1a `digest` (no-op when it is null).
void Fold(uint64_t* digest, const float* values, size_t count);

// Returns partition ends for `num_ids` ids in `num_partitions` (some may be empty).
rc::Gen<std::vector<int64_t>> GenPartitionEnds(int64_t num_ids, int num_partitions);

// One optimizer run: initial weights, then `lookups[step][rank]` per step.
struct OptimizerCase {
  OptimizerKind kind = OptimizerKind::kAdagrad;
  std::vector<int64_t> ends;
  int64_t dim = 1;
  float lr = 0.1f;
  float beta1 = 0.9f, beta2 = 0.999f;  // Adam's
  float eps = 1e-10f;
  std::vector<float> initial;                                  // num_ids x dim
  std::vector<std::vector<std::vector<DenseLookup>>> lookups;  // [step][rank] -> that trainer's lookups
};

// Generates a case for `num_partitions` partitions and `world_size` trainers.
rc::Gen<OptimizerCase> GenOptimizerCase(int num_partitions, int world_size);

// Runs `c` on this trainer of `transport` (every trainer calls it) and returns
// every row of the embedding afterwards. `name` must be new on the transport.
Result<std::vector<float>> RunDistributedOptimizer(Transport& transport, const OptimizerCase& c,
                                                   const std::string& name);
// Runs `c` through DenseOptimizer and returns the weights.
std::vector<float> RunDenseOptimizer(const OptimizerCase& c);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_DISTRIBUTED_TESTING_DISTRIBUTED_PROPERTIES_H_
