// F12 — one embedding looked up twice in a step is updated twice (DGL PR
// 2596, "Fix several sparse optimizer bugs", bug 1). A model calls the same
// sparse embedding twice in one forward pass; ids 3 and 7 occur in both
// lookups. Before the fix the optimizer's step looped over the embedding's
// recorded lookups and ran one update per lookup, so a row looked up twice
// had its Adagrad state (G += g * g) and weight updated twice, each time with
// one lookup's gradient. The fix concatenates every lookup's ids and
// gradients, deduplicates (averaging a repeated id's gradients) and updates
// each row once — what faultline's SparseAdagrad / SparseAdam do. The legacy
// step is modelled below on the same DistEmbedding trace; both are compared
// with the dense single-process reference. docs/failures/F12.md.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "reference/distributed/in_process_transport.h"
#include "reference/distributed/sparse_optimizer.h"
#include "reference/distributed/testing/dense_reference.h"
#include "repro/F12/signature.h"
#include "repro/registry.h"
#include "repro/scenario_support.h"

namespace faultline {
namespace repro {
namespace {

constexpr int64_t kNumIds = 20;
constexpr int64_t kDim = 4;
constexpr float kLr = 0.1f;

float Initial(int64_t id, int64_t col) { return static_cast<float>(id) * 0.25f + static_cast<float>(col) / 8.0f; }

// Gradient of element (k, c) of lookup `lookup`: distinct per lookup, so a
// row updated once per lookup cannot land on the averaged update by chance.
std::vector<float> Gradient(int lookup, size_t rows) {
  std::vector<float> grad;
  for (size_t k = 0; k < rows; ++k) {
    for (int64_t c = 0; c < kDim; ++c) {
      grad.push_back((lookup == 0 ? 1.0f : -0.5f) * (0.5f + static_cast<float>(k) * 0.25f) +
                     static_cast<float>(c) * 0.125f);
    }
  }
  return grad;
}

// The pre-2596 step: for each recorded lookup, deduplicate that lookup's ids
// (averaging a repeated id's rows) and apply one Adagrad update to them.
class PerLookupSparseAdagrad {
 public:
  static Result<PerLookupSparseAdagrad> Create(DistEmbedding& param, float lr) {
    FL_ASSIGN_OR_RETURN(DistTensor sum, DistTensor::Create(param.weights().transport(), param.name() + "_sum",
                                                           param.weights().book(), param.dim()));
    return PerLookupSparseAdagrad(param, std::move(sum), lr);
  }

  Status Step() {
    const int64_t dim = param_->dim();
    for (const EmbeddingTrace& lookup : param_->TakeTrace()) {
      if (!lookup.has_grad) return FailedPreconditionError("step: a lookup has no gradient");
      std::vector<int64_t> ids;
      std::vector<float> grad, count;
      std::unordered_map<int64_t, size_t> slot;
      for (size_t k = 0; k < lookup.ids.size(); ++k) {
        auto [it, first] = slot.emplace(lookup.ids[k], ids.size());
        if (first) {
          ids.push_back(lookup.ids[k]);
          grad.resize(grad.size() + dim, 0.0f);
          count.push_back(0.0f);
        }
        for (int64_t c = 0; c < dim; ++c) grad[it->second * dim + c] += lookup.grad[k * dim + c];
        count[it->second] += 1.0f;
      }
      for (size_t u = 0; u < ids.size(); ++u) {
        for (int64_t c = 0; c < dim; ++c) grad[u * dim + c] /= count[u];
      }
      FL_ASSIGN_OR_RETURN(std::vector<float> w, param_->weights().PullHost(ids));
      FL_ASSIGN_OR_RETURN(std::vector<float> sum, sum_.PullHost(ids));
      for (size_t e = 0; e < w.size(); ++e) {
        sum[e] += grad[e] * grad[e];
        w[e] -= lr_ * grad[e] / (std::sqrt(sum[e]) + 1e-10f);
      }
      FL_RETURN_IF_ERROR(sum_.PushHost(ids, sum, WriteMode::kOverwrite));
      FL_RETURN_IF_ERROR(param_->weights().PushHost(ids, w, WriteMode::kOverwrite));
    }
    return OkStatus();
  }

 private:
  PerLookupSparseAdagrad(DistEmbedding& param, DistTensor sum, float lr)
      : param_(&param), sum_(std::move(sum)), lr_(lr) {}
  DistEmbedding* param_;
  DistTensor sum_;
  float lr_;
};

enum class Step { kPerLookupAdagrad, kAdagrad, kAdam };

std::string Float(float value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", static_cast<double>(value));
  return text;
}

Outcome Run(Step step, bool one_lookup_per_step, const Expected& expected) {
  const std::string trainer = "trainer 0 (pid " + std::to_string(getpid()) + ")";
  const char* optimizer = step == Step::kAdam ? "SparseAdam" : "SparseAdagrad";
  const std::string where = std::string(optimizer) + ".step";
  std::string transcript =
      std::string("F12: DistEmbedding 'emb' (") + std::to_string(kNumIds) + " x " + std::to_string(kDim) +
      ", 2 partitions) looked up twice in one step, ids {3, 7, 12, 3} " + "and {7, 15, 3}; " +
      (step == Step::kPerLookupAdagrad
           ? "legacy SparseAdagrad step (one update per lookup)"
           : std::string("faultline's ") + optimizer + " step (concatenate, deduplicate, one update)") +
      (one_lookup_per_step ? "; the caller concatenates the ids into one lookup" : "") + "\n";
  auto fail = [&](const Status& status, const std::string& at) {
    return Unexpected(Observe(status, trainer, at), transcript);
  };

  Result<InProcessTransport> transport = InProcessTransport::Create(2);
  if (!transport.ok()) return fail(transport.status(), "setup");
  Result<RangePartitionBook> book = RangePartitionBook::Even(kNumIds, 2);
  if (!book.ok()) return fail(book.status(), "setup");
  Result<DistEmbedding> embedding = DistEmbedding::Create(*transport, "emb", *book, kDim, Initial);
  if (!embedding.ok()) return fail(embedding.status(), "setup");

  const std::vector<std::vector<int64_t>> lookups{{3, 7, 12, 3}, {7, 15, 3}};
  std::vector<DenseLookup> dense_lookups;
  for (int l = 0; l < 2; ++l) dense_lookups.push_back({lookups[l], Gradient(l, lookups[l].size())});

  // Forward and backward: two lookups, or (workaround) one of their concatenation.
  std::vector<std::vector<int64_t>> calls = lookups;
  std::vector<std::vector<float>> grads{dense_lookups[0].grad, dense_lookups[1].grad};
  if (one_lookup_per_step) {
    calls = {lookups[0]};
    calls[0].insert(calls[0].end(), lookups[1].begin(), lookups[1].end());
    grads = {dense_lookups[0].grad};
    grads[0].insert(grads[0].end(), dense_lookups[1].grad.begin(), dense_lookups[1].grad.end());
  }
  for (const std::vector<int64_t>& ids : calls) {
    Result<Tensor> id_tensor = Tensor::FromVector(ids);
    if (!id_tensor.ok()) return fail(id_tensor.status(), "DistEmbedding.forward");
    Result<Tensor> rows = embedding->Forward(*id_tensor);
    if (!rows.ok()) return fail(rows.status(), "DistEmbedding.forward");
  }
  for (size_t k = 0; k < calls.size(); ++k) {
    Result<Tensor> grad = Tensor::FromVector(grads[k], {static_cast<int64_t>(calls[k].size()), kDim});
    if (!grad.ok()) return fail(grad.status(), "DistEmbedding.backward");
    Status backward = embedding->Backward(*grad);
    if (!backward.ok()) return fail(backward, "DistEmbedding.backward");
  }

  Status stepped = OkStatus();
  if (step == Step::kPerLookupAdagrad) {
    Result<PerLookupSparseAdagrad> legacy = PerLookupSparseAdagrad::Create(*embedding, kLr);
    stepped = legacy.ok() ? legacy->Step() : legacy.status();
  } else if (step == Step::kAdagrad) {
    Result<std::unique_ptr<SparseAdagrad>> adagrad = SparseAdagrad::Create({&*embedding}, kLr);
    stepped = adagrad.ok() ? (*adagrad)->Step() : adagrad.status();
  } else {
    Result<std::unique_ptr<SparseAdam>> adam = SparseAdam::Create({&*embedding}, kLr);
    stepped = adam.ok() ? (*adam)->Step() : adam.status();
  }
  if (!stepped.ok()) return fail(stepped, where);

  std::vector<int64_t> all(kNumIds);
  std::vector<float> dense(kNumIds * kDim);
  for (int64_t id = 0; id < kNumIds; ++id) {
    all[id] = id;
    for (int64_t c = 0; c < kDim; ++c) dense[id * kDim + c] = Initial(id, c);
  }
  DenseOptimizer reference(step == Step::kAdam ? OptimizerKind::kAdam : OptimizerKind::kAdagrad, kNumIds, kDim, kLr);
  reference.Step(dense, dense_lookups);
  Result<std::vector<float>> trained = embedding->weights().PullHost(all);
  if (!trained.ok()) return fail(trained.status(), "pull_weights");

  int differing_rows = 0;
  std::string first;
  for (int64_t id = 0; id < kNumIds; ++id) {
    bool row_differs = false;
    for (int64_t c = 0; c < kDim; ++c) {
      const float want = dense[id * kDim + c], got = (*trained)[id * kDim + c];
      if (want == got) continue;
      row_differs = true;
      if (first.empty()) {
        first = "weight row " + std::to_string(id) + " col " + std::to_string(c) + " = " + Float(got) +
                ", dense reference " + Float(want);
      }
    }
    differing_rows += row_differs ? 1 : 0;
  }
  if (step != Step::kAdam) {
    // The Adagrad state of row 3, col 0: one update leaves G = g * g of the
    // row's gradient averaged over both lookups (printed as the expected
    // value); two updates leave the sum of each lookup's own averaged g * g.
    const float g =
        (dense_lookups[0].grad[0] + dense_lookups[0].grad[3 * kDim] + dense_lookups[1].grad[2 * kDim]) / 3.0f;
    Result<DistTensor> sum = DistTensor::Attach(*transport, "emb_sum");
    Result<std::vector<float>> row3 = sum.ok() ? sum->PullHost({3}) : Result<std::vector<float>>(sum.status());
    if (!row3.ok()) return fail(row3.status(), "pull_state");
    transcript +=
        "Adagrad state emb_sum[3][0] = " + Float((*row3)[0]) + " (expected after one update: " + Float(g * g) + ")\n";
  }
  transcript += "rows differing from the dense single-process reference: " + std::to_string(differing_rows) + "\n";
  if (!first.empty()) {
    ObservedError error{"OutputMismatch", 0, where + ": " + first, trainer, where};
    return EndedInError(expected, error, transcript);
  }
  if (auto missed = RanToTheEnd(expected, "the step equals the dense reference", transcript)) return *missed;
  return PassedIf(true, std::string("the ") + optimizer + " step equals the dense single-process reference bit for bit",
                  transcript);
}

const bool kRegistered = RegisterFailure(Failure{
    "F12",
    "One embedding looked up twice in a step is updated twice (DGL PR 2596, bug 1)",
    {
        Reproduces(
            "legacy", "two lookups of one embedding; SparseAdagrad updates once per lookup", OnEveryRuntime(kF12Legacy),
            [](RuntimeKind, const Signature& s) { return Run(Step::kPerLookupAdagrad, false, ExpectSignature{s}); }),
        Passes("fixed", "SparseAdagrad concatenates both lookups, deduplicates, updates once (PR 2596)",
               [](RuntimeKind) { return Run(Step::kAdagrad, false, ExpectPass{}); }),
        Passes("fixed-adam", "the same two lookups through SparseAdam",
               [](RuntimeKind) { return Run(Step::kAdam, false, ExpectPass{}); }),
        Passes("workaround", "legacy step; the model looks up the concatenated ids once",
               [](RuntimeKind) { return Run(Step::kPerLookupAdagrad, true, ExpectPass{}); }),
    }});

}  // namespace
}  // namespace repro
}  // namespace faultline
