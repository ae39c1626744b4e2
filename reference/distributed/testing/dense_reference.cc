// Implements DenseOptimizer.
#include "reference/distributed/testing/dense_reference.h"

#include <cmath>
#include <map>

namespace faultline {

DenseOptimizer::DenseOptimizer(OptimizerKind kind, int64_t num_ids, int64_t dim, float lr, float beta1, float beta2,
                               float eps)
    : kind_(kind), dim_(dim), lr_(lr), beta1_(beta1), beta2_(beta2), eps_(eps) {
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
  for (auto& [id, accumulated] : touched) {
    const float count = accumulated.second;
    if (kind_ == OptimizerKind::kAdam) step_[id] += 1.0f;
    for (int64_t c = 0; c < dim_; ++c) {
      const size_t e = static_cast<size_t>(id * dim_ + c);
      const float g = accumulated.first[c] / count;
      if (kind_ == OptimizerKind::kAdagrad) {
        sum_[e] += g * g;
        weights[e] -= lr_ * g / (std::sqrt(sum_[e]) + eps_);
      } else {
        // 1 - beta in double, as Python computes it, then float32.
        mem_[e] = beta1_ * mem_[e] + static_cast<float>(1.0 - beta1_) * g;
        power_[e] = beta2_ * power_[e] + static_cast<float>(1.0 - beta2_) * (g * g);
        const float m_hat = mem_[e] / (1.0f - std::pow(beta1_, step_[id]));
        const float v_hat = power_[e] / (1.0f - std::pow(beta2_, step_[id]));
        weights[e] -= lr_ * m_hat / (std::sqrt(v_hat) + eps_);
      }
    }
  }
}

}  // namespace faultline
