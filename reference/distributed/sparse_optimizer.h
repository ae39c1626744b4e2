// Provides SparseAdagrad and SparseAdam for DistEmbedding with DGL 2.2.1's
// math: every trainer's gradients are routed to the owner of each row, the
// gradients of a repeated id are averaged, and only touched rows change.
#ifndef FAULTLINE_REFERENCE_DISTRIBUTED_SPARSE_OPTIMIZER_H_
#define FAULTLINE_REFERENCE_DISTRIBUTED_SPARSE_OPTIMIZER_H_

#include <memory>
#include <string>
#include <vector>

#include "reference/distributed/dist_embedding.h"

namespace faultline {

// Every trainer must pass Create the same arguments. Each checks its own
// before any state tensor exists, and its verdict and hyperparameters join
// the agreement on the first state tensor: a trainer that refuses its
// arguments, or was given other hyperparameters or other embeddings, makes
// every trainer fail,
// naming it, with no state created. (A trainer given no embedding at all
// has no transport to agree through: the others then fail at the join limit.)
class SparseOptimizer {
 public:
  virtual ~SparseOptimizer() = default;

  // Applies one update from the gradients recorded since the last step, then
  // clears them. Every trainer must call it (it exchanges gradients). A
  // trainer that refuses its step (a forward without a gradient) makes every
  // trainer fail, naming it and its reason, before anything changes (the
  // gradients are kept); so does a row id that arrives outside the
  // receiving trainer's partition, naming the trainer that sent it.
  Status Step();

 protected:
  SparseOptimizer(std::vector<DistEmbedding*> params, float lr) : params_(std::move(params)), lr_(lr) {}
  // Updates rows `ids` (unique, owned by this trainer) of parameter `param`
  // with their averaged gradients `grad` (ids.size() x dim).
  virtual Status Update(size_t param, const std::vector<int64_t>& ids, const std::vector<float>& grad) = 0;
  // A state tensor kept per parameter, named the parameter's name followed
  // by `suffix`, with one column (a count per row) or the parameter's dim.
  struct StateTensor {
    const char* suffix;
    bool one_column;
  };
  // Checks that every parameter exists and is given once, that lr is
  // finite and positive, and that no tensor has a state name yet.
  static Status CheckParams(const std::vector<DistEmbedding*>& params, float lr, const char* optimizer,
                            const std::vector<StateTensor>& states);
  // Creates `states` of every parameter (collective), parameter by
  // parameter, after the agreement on the first: `verdict` is this trainer's
  // own on its arguments and `settings` its hyperparameters as text (the
  // embeddings' names and dims are added to what is agreed). Returns them in
  // that order, or the verdict when it is an error.
  static Result<std::vector<DistTensor>> CreateStates(const std::vector<DistEmbedding*>& params,
                                                      const std::vector<StateTensor>& states,
                                                      const std::string& settings, const Status& verdict);

  std::vector<DistEmbedding*> params_;
  float lr_;

 private:
  // The gradients recorded for `param`, grouped by the partition that owns each row.
  static Result<std::vector<RowBatch>> BatchByOwner(const DistEmbedding& param);
  // Every row id that RouteToOwners delivered for `param` lies in its local
  // partition (`local`: the transport's LocalPartitions, in order).
  static Status CheckReceived(const DistEmbedding& param, const std::vector<int>& local,
                              const std::vector<RowBatch>& received);
};

// w -= lr * g / (sqrt(G) + eps) after G += g * g, per element.
class SparseAdagrad : public SparseOptimizer {
 public:
  // Creates the state tensor "<name>_sum" of every parameter (collective).
  static Result<std::unique_ptr<SparseAdagrad>> Create(std::vector<DistEmbedding*> params, float lr,
                                                       float eps = 1e-10f);

 protected:
  Status Update(size_t param, const std::vector<int64_t>& ids, const std::vector<float>& grad) override;

 private:
  SparseAdagrad(std::vector<DistEmbedding*> params, float lr, float eps)
      : SparseOptimizer(std::move(params), lr), eps_(eps) {}
  float eps_;
  std::vector<DistTensor> sum_;
};

// Adam with a step count per row and bias correction by that row's step.
class SparseAdam : public SparseOptimizer {
 public:
  // Creates "<name>_step", "<name>_mem" and "<name>_power" of every parameter (collective).
  static Result<std::unique_ptr<SparseAdam>> Create(std::vector<DistEmbedding*> params, float lr, float beta1 = 0.9f,
                                                    float beta2 = 0.999f, float eps = 1e-8f);

 protected:
  Status Update(size_t param, const std::vector<int64_t>& ids, const std::vector<float>& grad) override;

 private:
  SparseAdam(std::vector<DistEmbedding*> params, float lr, float beta1, float beta2, float eps)
      : SparseOptimizer(std::move(params), lr), beta1_(beta1), beta2_(beta2), eps_(eps) {}
  float beta1_, beta2_, eps_;
  std::vector<DistTensor> step_, mem_, power_;
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_DISTRIBUTED_SPARSE_OPTIMIZER_H_
