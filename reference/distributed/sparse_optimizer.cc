// Implements the sparse optimizers' step: route, average, update.
#include "reference/distributed/sparse_optimizer.h"

#include <charconv>
#include <cmath>
#include <unordered_map>

namespace faultline {
namespace {

// The unique ids of a batch (first-appearance order) and their averaged
// gradients: summed in arrival order, then divided by the count, as DGL's
// index_add_ followed by / cnt.
struct Averaged {
  std::vector<int64_t> ids;
  std::vector<float> grad;
};

Averaged AverageDuplicates(const RowBatch& batch, int64_t dim) {
  Averaged out;
  std::unordered_map<int64_t, size_t> slot;
  std::vector<float> count;
  for (size_t i = 0; i < batch.ids.size(); ++i) {
    auto [it, first] = slot.emplace(batch.ids[i], out.ids.size());
    if (first) {
      out.ids.push_back(batch.ids[i]);
      out.grad.resize(out.grad.size() + dim, 0.0f);
      count.push_back(0.0f);
    }
    float* sum = out.grad.data() + it->second * dim;
    for (int64_t c = 0; c < dim; ++c) sum[c] += batch.rows[i * dim + c];
    count[it->second] += 1.0f;
  }
  for (size_t u = 0; u < out.ids.size(); ++u) {
    for (int64_t c = 0; c < dim; ++c) out.grad[u * dim + c] /= count[u];
  }
  return out;
}

// The shortest text that reads back as `value` ("1e-07", not "0.000000").
std::string Number(float value) {
  char text[32];
  return std::string(text, std::to_chars(text, text + sizeof(text), value).ptr);
}

// A hyperparameter that must be finite and positive.
Status CheckPositive(float value, const char* what, const char* optimizer) {
  if (std::isfinite(value) && value > 0.0f) return OkStatus();
  return InvalidArgumentError(std::string(optimizer) + ": " + what + " is " + Number(value) +
                              "; expected a finite value > 0");
}

}  // namespace

Status SparseOptimizer::CheckParams(const std::vector<DistEmbedding*>& params, float lr, const char* optimizer,
                                    const std::vector<StateTensor>& states) {
  if (params.empty()) return InvalidArgumentError(std::string(optimizer) + ": params is empty; expected embeddings");
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i] == nullptr) {
      return InvalidArgumentError(std::string(optimizer) + ": params[" + std::to_string(i) + "] is null");
    }
    for (size_t j = 0; j < i; ++j) {
      if (params[j] == params[i]) {
        return InvalidArgumentError(std::string(optimizer) + ": params[" + std::to_string(i) + "] is params[" +
                                    std::to_string(j) + "] ('" + params[i]->name() +
                                    "'); expected each embedding once");
      }
    }
    // A step agrees, and ends with one barrier, on params[0]'s transport.
    if (&params[i]->weights().transport() != &params[0]->weights().transport()) {
      return InvalidArgumentError(std::string(optimizer) + ": params[" + std::to_string(i) + "] ('" +
                                  params[i]->name() + "') lives on another transport than params[0] ('" +
                                  params[0]->name() + "'); expected every embedding on one transport");
    }
  }
  FL_RETURN_IF_ERROR(CheckPositive(lr, "lr", optimizer));
  // Every state tensor's name is free before any is created: a creation
  // that failed halfway would leave names taken that no call can free.
  for (DistEmbedding* param : params) {
    for (const StateTensor& tensor : states) {
      const std::string state = param->name() + tensor.suffix;
      if (param->weights().transport().FindTensor(state).ok()) {
        return InvalidArgumentError(std::string(optimizer) + ": a distributed tensor named '" + state +
                                    "' already exists; the optimizer keeps the state of '" + param->name() + "' there");
      }
    }
  }
  return OkStatus();
}

Result<std::vector<DistTensor>> SparseOptimizer::CreateStates(const std::vector<DistEmbedding*>& params,
                                                              const std::vector<StateTensor>& states,
                                                              const std::string& settings, const Status& verdict) {
  // The embeddings, in order, are agreed on too: a trainer given another
  // list would agree on the first state tensor and then wait for creations
  // the others never make.
  std::string agreed = settings + "; embeddings";
  const char* separator = " '";
  for (DistEmbedding* param : params) {
    if (param == nullptr) continue;
    agreed += separator + param->name() + "' (dim " + std::to_string(param->dim()) + ")";
    separator = ", '";
  }
  std::vector<DistTensor> created;
  for (DistEmbedding* param : params) {
    if (param == nullptr) continue;  // only when refused: a refusal needs one embedding's transport
    Transport& transport = param->weights().transport();
    for (const StateTensor& state : states) {
      const TensorSpec spec{param->name() + state.suffix, param->weights().book(), state.one_column ? 1 : param->dim(),
                            agreed};
      FL_RETURN_IF_ERROR(transport.CreateTensor(spec, verdict).status());  // a refusal returns here, agreed
      FL_ASSIGN_OR_RETURN(DistTensor tensor, DistTensor::Attach(transport, spec.name));
      created.push_back(std::move(tensor));
    }
  }
  FL_RETURN_IF_ERROR(verdict);  // no embedding to agree through
  return created;
}

// Under MPI every step is collective (RouteToOwners, Barrier): a trainer
// that refused its step alone would leave the others waiting in a
// collective it skipped, until their timeout, with no trainer named; and its
// next collective would pair with the wrong one. So its verdict is agreed
// first (Transport::AgreeOnVerdict): every trainer fails, the refusing one
// with its own reason and the others naming it with that reason, with
// nothing changed anywhere.
Status SparseOptimizer::Step() {
  Transport& transport = params_[0]->weights().transport();
  // This trainer's verdict, and its gradients by owner: every parameter is
  // checked and located before any changes.
  Status verdict;
  for (DistEmbedding* param : params_) {
    for (size_t t = 0; verdict.ok() && t < param->trace().size(); ++t) {
      if (!param->trace()[t].has_grad) {
        verdict = FailedPreconditionError("step: forward " + std::to_string(t) + " of embedding '" + param->name() +
                                          "' has no gradient; call Backward once per Forward before Step");
      }
    }
  }
  std::vector<std::vector<RowBatch>> outgoing(params_.size());
  for (size_t i = 0; verdict.ok() && i < params_.size(); ++i) {
    Result<std::vector<RowBatch>> batches = BatchByOwner(*params_[i]);
    if (batches.ok()) {
      outgoing[i] = std::move(*batches);
    } else {
      verdict = batches.status().WithContext("step: embedding '" + params_[i]->name() + "'");
    }
  }
  FL_RETURN_IF_ERROR(transport.AgreeOnVerdict("the step", verdict));

  // Every parameter is on `transport` (CheckParams): one list of its partitions.
  const std::vector<int> local = transport.LocalPartitions();
  std::vector<std::vector<RowBatch>> received(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    FL_ASSIGN_OR_RETURN(received[i], transport.RouteToOwners(std::move(outgoing[i]), params_[i]->dim()));
  }
  // What arrived is checked before anything is updated, and agreed on too.
  Status arrived;
  for (size_t i = 0; arrived.ok() && i < params_.size(); ++i) {
    arrived = CheckReceived(*params_[i], local, received[i]);
  }
  FL_RETURN_IF_ERROR(transport.AgreeOnVerdict("the gradients it received", arrived));

  for (size_t i = 0; i < params_.size(); ++i) {
    (void)params_[i]->TakeTrace();  // the step is agreed: its gradients are used up
    const RangePartitionBook& book = params_[i]->weights().book();
    for (size_t k = 0; k < local.size(); ++k) {
      Averaged averaged = AverageDuplicates(received[i][k], params_[i]->dim());
      if (averaged.ids.empty()) continue;
      for (int64_t& id : averaged.ids) id += book.start(local[k]);
      FL_RETURN_IF_ERROR(Update(i, averaged.ids, averaged.grad));
    }
  }
  return transport.Barrier();  // after Step, every trainer reads updated rows
}

Result<std::vector<RowBatch>> SparseOptimizer::BatchByOwner(const DistEmbedding& param) {
  const int64_t dim = param.dim();
  const RangePartitionBook& book = param.weights().book();
  std::vector<RowBatch> by_partition(book.num_partitions());
  for (const EmbeddingTrace& forward : param.trace()) {
    FL_ASSIGN_OR_RETURN(Tensor ids, Tensor::FromVector(forward.ids));
    FL_ASSIGN_OR_RETURN(IdLocations at, book.Locate(ids, IdLookup::kCopyToHost));
    for (size_t k = 0; k < forward.ids.size(); ++k) {
      RowBatch& batch = by_partition[at.partids[k]];
      batch.ids.push_back(at.localids[k]);
      batch.rows.insert(batch.rows.end(), forward.grad.begin() + k * dim, forward.grad.begin() + (k + 1) * dim);
    }
  }
  return by_partition;
}

// A row id from another trainer that lies outside this partition would
// update another partition's row, or fail in the owner's own call without
// naming the sender.
Status SparseOptimizer::CheckReceived(const DistEmbedding& param, const std::vector<int>& local,
                                      const std::vector<RowBatch>& received) {
  const std::string where = "step: embedding '" + param.name() + "'";
  if (received.size() != local.size()) {
    return InternalError(where + ": RouteToOwners returned " + std::to_string(received.size()) + " batches for " +
                         std::to_string(local.size()) + " local partitions");
  }
  for (size_t k = 0; k < local.size(); ++k) {
    const RowBatch& batch = received[k];
    const int64_t rows = param.weights().book().size(local[k]);
    int64_t announced = 0;
    for (int64_t count : batch.counts_by_sender) announced += count;
    if (announced != static_cast<int64_t>(batch.ids.size()) ||
        batch.rows.size() != batch.ids.size() * static_cast<size_t>(param.dim())) {
      return DataLossError(where + ": partition " + std::to_string(local[k]) + " received " +
                           std::to_string(batch.ids.size()) + " ids, " + std::to_string(batch.rows.size()) +
                           " values and counts from its senders summing to " + std::to_string(announced) +
                           "; expected as many ids as counted and one row of dim " + std::to_string(param.dim()) +
                           " per id");
    }
    size_t at = 0;
    for (size_t sender = 0; sender < batch.counts_by_sender.size(); ++sender) {
      for (int64_t n = 0; n < batch.counts_by_sender[sender]; ++n, ++at) {
        const int64_t id = batch.ids[at];
        if (id >= 0 && id < rows) continue;
        return DataLossError(where + ": rank " + std::to_string(sender) + " sent a gradient for row " +
                             std::to_string(id) + " of partition " + std::to_string(local[k]) + ", which has " +
                             std::to_string(rows) + " rows; expected a local row in [0, " + std::to_string(rows) + ")");
      }
    }
  }
  return OkStatus();
}

Result<std::unique_ptr<SparseAdagrad>> SparseAdagrad::Create(std::vector<DistEmbedding*> params, float lr, float eps) {
  const std::vector<StateTensor> states = {{"_sum", false}};
  Status verdict = CheckParams(params, lr, "SparseAdagrad", states);
  if (verdict.ok()) verdict = CheckPositive(eps, "eps", "SparseAdagrad");
  FL_ASSIGN_OR_RETURN(std::vector<DistTensor> created,
                      CreateStates(params, states, "SparseAdagrad lr " + Number(lr) + ", eps " + Number(eps), verdict));
  std::unique_ptr<SparseAdagrad> optimizer(new SparseAdagrad(params, lr, eps));
  optimizer->sum_ = std::move(created);
  return optimizer;
}

Status SparseAdagrad::Update(size_t param, const std::vector<int64_t>& ids, const std::vector<float>& grad) {
  DistTensor& weights = params_[param]->weights();
  FL_ASSIGN_OR_RETURN(std::vector<float> w, weights.PullHost(ids));
  FL_ASSIGN_OR_RETURN(std::vector<float> sum, sum_[param].PullHost(ids));
  for (size_t e = 0; e < w.size(); ++e) {
    sum[e] += grad[e] * grad[e];
    w[e] -= lr_ * grad[e] / (std::sqrt(sum[e]) + eps_);
  }
  FL_RETURN_IF_ERROR(sum_[param].PushHost(ids, sum, WriteMode::kOverwrite));
  return weights.PushHost(ids, w, WriteMode::kOverwrite);
}

Result<std::unique_ptr<SparseAdam>> SparseAdam::Create(std::vector<DistEmbedding*> params, float lr, float beta1,
                                                       float beta2, float eps) {
  const std::vector<StateTensor> states = {{"_step", true}, {"_mem", false}, {"_power", false}};
  Status verdict = CheckParams(params, lr, "SparseAdam", states);
  for (auto [beta, name] : {std::make_pair(beta1, "beta1"), std::make_pair(beta2, "beta2")}) {
    if (verdict.ok() && !(beta >= 0.0f && beta < 1.0f)) {
      verdict = InvalidArgumentError(std::string("SparseAdam: ") + name + " is " + Number(beta) + "; expected [0, 1)");
    }
  }
  if (verdict.ok()) verdict = CheckPositive(eps, "eps", "SparseAdam");
  const std::string settings =
      "SparseAdam lr " + Number(lr) + ", beta1 " + Number(beta1) + ", beta2 " + Number(beta2) + ", eps " + Number(eps);
  FL_ASSIGN_OR_RETURN(std::vector<DistTensor> created, CreateStates(params, states, settings, verdict));
  std::unique_ptr<SparseAdam> optimizer(new SparseAdam(params, lr, beta1, beta2, eps));
  for (size_t t = 0; t < created.size(); t += states.size()) {
    optimizer->step_.push_back(std::move(created[t]));
    optimizer->mem_.push_back(std::move(created[t + 1]));
    optimizer->power_.push_back(std::move(created[t + 2]));
  }
  return optimizer;
}

Status SparseAdam::Update(size_t param, const std::vector<int64_t>& ids, const std::vector<float>& grad) {
  DistTensor& weights = params_[param]->weights();
  const int64_t dim = weights.dim();
  FL_ASSIGN_OR_RETURN(std::vector<float> w, weights.PullHost(ids));
  FL_ASSIGN_OR_RETURN(std::vector<float> step, step_[param].PullHost(ids));
  FL_ASSIGN_OR_RETURN(std::vector<float> mem, mem_[param].PullHost(ids));
  FL_ASSIGN_OR_RETURN(std::vector<float> power, power_[param].PullHost(ids));
  // Python computes 1 - beta in double; the tensor op sees it as float32.
  const float one_minus_beta1 = static_cast<float>(1.0 - static_cast<double>(beta1_));
  const float one_minus_beta2 = static_cast<float>(1.0 - static_cast<double>(beta2_));
  for (size_t r = 0; r < ids.size(); ++r) {
    step[r] += 1.0f;
    const float correction1 = 1.0f - std::pow(beta1_, step[r]);
    const float correction2 = 1.0f - std::pow(beta2_, step[r]);
    for (int64_t c = 0; c < dim; ++c) {
      const size_t e = r * dim + c;
      mem[e] = beta1_ * mem[e] + one_minus_beta1 * grad[e];
      power[e] = beta2_ * power[e] + one_minus_beta2 * (grad[e] * grad[e]);
      const float mem_corrected = mem[e] / correction1;
      const float power_corrected = power[e] / correction2;
      w[e] -= lr_ * mem_corrected / (std::sqrt(power_corrected) + eps_);
    }
  }
  FL_RETURN_IF_ERROR(step_[param].PushHost(ids, step, WriteMode::kOverwrite));
  FL_RETURN_IF_ERROR(mem_[param].PushHost(ids, mem, WriteMode::kOverwrite));
  FL_RETURN_IF_ERROR(power_[param].PushHost(ids, power, WriteMode::kOverwrite));
  return weights.PushHost(ids, w, WriteMode::kOverwrite);
}

}  // namespace faultline
