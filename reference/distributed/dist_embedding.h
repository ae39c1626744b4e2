// Provides DistEmbedding: a learnable DistTensor whose forward records the
// looked-up ids and, after Backward, their gradients for a sparse optimizer
// (DGL's dgl.distributed.DistEmbedding).
#ifndef FAULTLINE_REFERENCE_DISTRIBUTED_DIST_EMBEDDING_H_
#define FAULTLINE_REFERENCE_DISTRIBUTED_DIST_EMBEDDING_H_

#include <functional>
#include <string>
#include <vector>

#include "reference/distributed/dist_tensor.h"

namespace faultline {

// One forward call as the optimizer sees it: host ids and, once Backward ran,
// the gradient of the returned rows (ids.size() x dim, row-major).
struct EmbeddingTrace {
  std::vector<int64_t> ids;
  std::vector<float> grad;
  bool has_grad = false;
};

class DistEmbedding {
 public:
  // Returns the initial value of element (id, col).
  using Initializer = std::function<float(int64_t id, int64_t col)>;

  // Creates a book.num_ids() x dim embedding; each trainer initializes the
  // rows of its own partitions with `init` (zeros when empty). Collective.
  static Result<DistEmbedding> Create(Transport& transport, const std::string& name, const RangePartitionBook& book,
                                      int64_t dim, const Initializer& init = {},
                                      IdLookup lookup = IdLookup::kCopyToHost);

  const std::string& name() const { return weights_.name(); }
  int64_t dim() const { return weights_.dim(); }
  DistTensor& weights() { return weights_; }
  const DistTensor& weights() const { return weights_; }

  // Returns rows `ids` on the ids' device and records the lookup.
  Result<Tensor> Forward(const Tensor& ids);
  // Records `grad` (float32, any device) as the gradient of the output of the
  // oldest forward that has none yet: forwards are differentiated in call order.
  Status Backward(const Tensor& grad);
  // Returns the lookups recorded since the last TakeTrace.
  const std::vector<EmbeddingTrace>& trace() const { return trace_; }
  // Hands the recorded lookups to the optimizer and clears them.
  std::vector<EmbeddingTrace> TakeTrace();

 private:
  explicit DistEmbedding(DistTensor weights) : weights_(std::move(weights)) {}
  std::string Where(const char* op) const { return "DistEmbedding('" + name() + "')." + op; }

  DistTensor weights_;
  std::vector<EmbeddingTrace> trace_;
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_DISTRIBUTED_DIST_EMBEDDING_H_
