// Implements DenseOptimizer.
#include "reference/distributed/dense_reference.h"

#include <cmath>
#include <map>

namespace faultline {

DenseOptimizer::DenseOptimizer(OptimizerKind kind, int64_t num_ids, int64_t dim, float lr)
    : kind_(kind), dim_(dim), lr_(lr) {
  const size_t n = static_cast<size_t>(num_ids * dim);
  sum_.assign(n, 0.0f);
  mem_.assign(n, 0.0f);
  power_.assign(n, 0.0f);
  step_.assign(static_cast<size_t>(num_ids), 0.0f);
}

void DenseOptimizer::Step(std::vector<float>& weights, const std::vector<DenseLookup>& lookups) {
  // Gradient sum and count per touched row, accumulated in lookup order.
  std::map<int64_t, std::pair<std::vector<float>, float>> touched;
  for (const DenseLookup& lookup : lookups) {
    for (size_t k = 0; k < lookup.ids.size(); ++k) {
      auto& [sum, count] = touched[lookup.ids[k]];
      sum.resize(dim_, 0.0f);
      for (int64_t c = 0; c < dim_; ++c) sum[c] += lookup.grad[k * dim_ + c];
      count += 1.0f;
    }
  }
  const float beta1 = 0.9f, beta2 = 0.999f;
  for (auto& [id, accumulated] : touched) {
    const float count = accumulated.second;
    if (kind_ == OptimizerKind::kAdam) step_[id] += 1.0f;
    for (int64_t c = 0; c < dim_; ++c) {
      const size_t e = static_cast<size_t>(id * dim_ + c);
      const float g = accumulated.first[c] / count;
      if (kind_ == OptimizerKind::kAdagrad) {
        sum_[e] += g * g;
        weights[e] -= lr_ * g / (std::sqrt(sum_[e]) + 1e-10f);
      } else {
        mem_[e] = beta1 * mem_[e] + static_cast<float>(1.0 - 0.9f) * g;
        power_[e] = beta2 * power_[e] + static_cast<float>(1.0 - 0.999f) * (g * g);
        const float m_hat = mem_[e] / (1.0f - std::pow(beta1, step_[id]));
        const float v_hat = power_[e] / (1.0f - std::pow(beta2, step_[id]));
        weights[e] -= lr_ * m_hat / (std::sqrt(v_hat) + 1e-8f);
      }
    }
  }
}

}  // namespace faultline
