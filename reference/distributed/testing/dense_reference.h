// Provides the dense single-process reference of the sparse optimizers: one
// table, one loop, the DGL 2.2.1 formulas written out directly. The
// distributed step over any number of partitions and trainers must equal it
// bit for bit.
#ifndef FAULTLINE_REFERENCE_DISTRIBUTED_TESTING_DENSE_REFERENCE_H_
#define FAULTLINE_REFERENCE_DISTRIBUTED_TESTING_DENSE_REFERENCE_H_

#include <cstdint>
#include <vector>

namespace faultline {

enum class OptimizerKind { kAdagrad, kAdam };

// One forward/backward: looked-up ids and the gradient of the rows.
struct DenseLookup {
  std::vector<int64_t> ids;
  std::vector<float> grad;  // ids.size() x dim
};

class DenseOptimizer {
 public:
  // beta1 and beta2 are Adam's; eps is either's.
  DenseOptimizer(OptimizerKind kind, int64_t num_ids, int64_t dim, float lr, float beta1, float beta2, float eps);
  // With DGL's defaults (SparseAdagrad's and SparseAdam's): betas 0.9 and
  // 0.999, eps 1e-10 (Adagrad) or 1e-8 (Adam).
  DenseOptimizer(OptimizerKind kind, int64_t num_ids, int64_t dim, float lr)
      : DenseOptimizer(kind, num_ids, dim, lr, 0.9f, 0.999f, kind == OptimizerKind::kAdagrad ? 1e-10f : 1e-8f) {}

  // Applies one step to `weights` (num_ids x dim) from `lookups`, which are
  // every trainer's lookups in rank order.
  void Step(std::vector<float>& weights, const std::vector<DenseLookup>& lookups);

 private:
  OptimizerKind kind_;
  int64_t dim_;
  float lr_, beta1_, beta2_, eps_;
  std::vector<float> sum_;          // Adagrad: G
  std::vector<float> step_;         // Adam: per-row step count
  std::vector<float> mem_, power_;  // Adam: first and second moments
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_DISTRIBUTED_TESTING_DENSE_REFERENCE_H_
