// Implements DistEmbedding.
#include "reference/distributed/dist_embedding.h"

#include <cmath>

namespace faultline {

Result<DistEmbedding> DistEmbedding::Create(Transport& transport, const std::string& name,
                                            const RangePartitionBook& book, int64_t dim, const Initializer& init,
                                            IdLookup lookup) {
  FL_ASSIGN_OR_RETURN(DistTensor weights, DistTensor::Create(transport, name, book, dim, lookup));
  if (init) {
    for (int p : transport.LocalPartitions()) {
      std::vector<int64_t> ids(book.size(p));
      std::vector<float> rows(ids.size() * dim);
      for (size_t i = 0; i < ids.size(); ++i) {
        ids[i] = book.start(p) + static_cast<int64_t>(i);
        for (int64_t c = 0; c < dim; ++c) rows[i * dim + c] = init(ids[i], c);
      }
      FL_RETURN_IF_ERROR(weights.PushHost(ids, rows, WriteMode::kOverwrite));
    }
  }
  FL_RETURN_IF_ERROR(transport.Barrier());  // nobody reads a row before its owner initialized it
  return DistEmbedding(std::move(weights));
}

Result<Tensor> DistEmbedding::Forward(const Tensor& ids) {
  Result<Tensor> rows = weights_.Pull(ids);
  if (!rows.ok()) return rows.status().WithContext(Where("forward"));
  FL_ASSIGN_OR_RETURN(Tensor host_ids, ids.Cpu());
  EmbeddingTrace entry;
  FL_ASSIGN_OR_RETURN(entry.ids, host_ids.ToVector<int64_t>());
  trace_.push_back(std::move(entry));
  return rows;
}

Status DistEmbedding::Backward(const Tensor& grad) {
  EmbeddingTrace* pending = nullptr;
  for (EmbeddingTrace& entry : trace_) {
    if (!entry.has_grad) {
      pending = &entry;
      break;
    }
  }
  if (pending == nullptr) {
    return FailedPreconditionError(Where("backward") + ": every forward already has a gradient; call Forward first");
  }
  const std::vector<int64_t> expected{static_cast<int64_t>(pending->ids.size()), dim()};
  if (grad.dtype() != DType::kFloat32 || grad.shape() != expected) {
    return InvalidArgumentError(Where("backward") + ": grad has dtype " + DTypeName(grad.dtype()) + " and shape " +
                                ShapeToString(grad.shape()) + "; expected float32 " + ShapeToString(expected) +
                                " (the forward's output)");
  }
  FL_ASSIGN_OR_RETURN(Tensor host, grad.Cpu());
  FL_ASSIGN_OR_RETURN(std::vector<float> values, host.ToVector<float>());
  // A NaN or infinity would stay in the optimizer's state of its row for good.
  for (size_t e = 0; e < values.size(); ++e) {
    if (std::isfinite(values[e])) continue;
    const int64_t row = static_cast<int64_t>(e) / dim(), column = static_cast<int64_t>(e) % dim();
    return InvalidArgumentError(Where("backward") + ": grad[" + std::to_string(row) + "][" + std::to_string(column) +
                                "] is " +
                                (std::isnan(values[e]) ? "nan"
                                 : values[e] > 0       ? "inf"
                                                       : "-inf") +
                                " (id " + std::to_string(pending->ids[row]) + "); expected finite gradients");
  }
  pending->grad = std::move(values);
  pending->has_grad = true;
  return OkStatus();
}

std::vector<EmbeddingTrace> DistEmbedding::TakeTrace() {
  std::vector<EmbeddingTrace> taken;
  taken.swap(trace_);
  return taken;
}

}  // namespace faultline
