// Implements the shared distributed property checks.
#include "reference/distributed/testing/distributed_properties.h"

#include <cstring>
#include <memory>
#include <sstream>

#include <rapidcheck/state.h>

#include "reference/distributed/sparse_optimizer.h"

namespace faultline {

// FNV-1a over the bytes of `values`.
void Fold(uint64_t* digest, const float* values, size_t count) {
  if (digest == nullptr) return;
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(values);
  for (size_t i = 0; i < count * sizeof(float); ++i) *digest = (*digest ^ bytes[i]) * 1099511628211ull;
}

namespace {

// The model: one local num_ids x dim table.
struct LocalTable {
  int64_t num_ids;
  int64_t dim;
  std::vector<float> rows;
};

struct Sut {
  DistTensor* tensor;
  DeviceRuntime* device;
  uint64_t* digest;  // null, or folds in every pulled row
};

using Command = rc::state::Command<LocalTable, Sut>;

// Values with few significant bits keep sums readable when a case fails.
rc::Gen<float> GenValue() {
  return rc::gen::map(rc::gen::inRange(-64, 65), [](int v) { return static_cast<float>(v) / 8.0f; });
}

std::vector<int64_t> GenIds(const LocalTable& model) {
  return *rc::gen::container<std::vector<int64_t>>(*rc::gen::inRange<size_t>(0, 12),
                                                   rc::gen::inRange<int64_t>(0, model.num_ids));
}

// Places host ids where the command said: on the host or on the device.
Tensor PlaceIds(const std::vector<int64_t>& ids, bool on_device, DeviceRuntime* device) {
  Tensor host = *Tensor::FromVector(ids);
  if (!on_device) return host;
  Result<Tensor> moved = host.To(Device::Cuda(0), device);
  RC_ASSERT(moved.ok());
  return *moved;
}

std::string Show(const std::vector<int64_t>& ids) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < ids.size(); ++i) os << (i ? ", " : "") << ids[i];
  os << "]";
  return os.str();
}

void AssertRowsEqual(const Tensor& pulled, const std::vector<int64_t>& ids, const LocalTable& model, uint64_t* digest) {
  Result<Tensor> host = pulled.Cpu();
  RC_ASSERT(host.ok());
  RC_ASSERT(host->shape() == (std::vector<int64_t>{static_cast<int64_t>(ids.size()), model.dim}));
  const float* got = *host->HostData<float>();
  Fold(digest, got, ids.size() * model.dim);
  for (size_t i = 0; i < ids.size(); ++i) {
    for (int64_t c = 0; c < model.dim; ++c) RC_ASSERT(got[i * model.dim + c] == model.rows[ids[i] * model.dim + c]);
  }
}

struct Pull : Command {
  std::vector<int64_t> ids;
  bool on_device;
  explicit Pull(const LocalTable& model) : ids(GenIds(model)), on_device(*rc::gen::arbitrary<bool>()) {}

  void apply(LocalTable&) const override {}
  void run(const LocalTable& model, Sut& sut) const override {
    const bool device = on_device && sut.device != nullptr;
    Result<Tensor> rows = sut.tensor->Pull(PlaceIds(ids, device, sut.device));
    RC_ASSERT(rows.ok());
    RC_ASSERT(rows->device() == (device ? Device::Cuda(0) : Device::Cpu()));
    AssertRowsEqual(*rows, ids, model, sut.digest);
  }
  void show(std::ostream& os) const override { os << "pull" << (on_device ? "(device) " : " ") << Show(ids); }
};

struct Push : Command {
  std::vector<int64_t> ids;
  std::vector<float> rows;
  bool add;
  bool on_device;
  explicit Push(const LocalTable& model)
      : ids(GenIds(model)),
        rows(*rc::gen::container<std::vector<float>>(ids.size() * model.dim, GenValue())),
        add(*rc::gen::arbitrary<bool>()),
        on_device(*rc::gen::arbitrary<bool>()) {}

  void apply(LocalTable& model) const override {
    for (size_t i = 0; i < ids.size(); ++i) {
      for (int64_t c = 0; c < model.dim; ++c) {
        float& stored = model.rows[ids[i] * model.dim + c];
        stored = add ? stored + rows[i * model.dim + c] : rows[i * model.dim + c];
      }
    }
  }
  void run(const LocalTable& model, Sut& sut) const override {
    const bool device = on_device && sut.device != nullptr;
    Tensor values = *Tensor::FromVector(rows, {static_cast<int64_t>(ids.size()), model.dim});
    if (device) values = *values.To(Device::Cuda(0), sut.device);
    Tensor where = PlaceIds(ids, device, sut.device);
    RC_ASSERT((add ? sut.tensor->PushAdd(where, values) : sut.tensor->Push(where, values)).ok());
  }
  void show(std::ostream& os) const override {
    os << (add ? "push_add" : "push") << (on_device ? "(device) " : " ") << Show(ids);
  }
};

// A rejected call: it must name the problem and change nothing.
struct BadInput : Command {
  enum Kind { kIdTooLarge, kNegativeId, kWrongDtype, kRowShape };
  int kind;
  int op;  // 0 pull, 1 push, 2 push_add
  explicit BadInput(const LocalTable&) : kind(*rc::gen::inRange(0, 4)), op(*rc::gen::inRange(0, 3)) {}

  void apply(LocalTable&) const override {}
  void run(const LocalTable& model, Sut& sut) const override {
    std::vector<int64_t> ids{0, model.num_ids - 1};
    if (kind == kIdTooLarge) ids.push_back(model.num_ids);
    if (kind == kNegativeId) ids.push_back(-1);
    Tensor id_tensor = *Tensor::FromVector(ids);
    if (kind == kWrongDtype) id_tensor = *Tensor::FromVector(std::vector<float>{0.0f, 1.0f});
    const int64_t row_count = kind == kRowShape ? static_cast<int64_t>(ids.size()) : id_tensor.numel();
    const int64_t row_dim = kind == kRowShape ? model.dim + 1 : model.dim;
    Tensor rows = *Tensor::FromVector(std::vector<float>(row_count * row_dim, 1.0f), {row_count, row_dim});
    Status status = op == 0   ? sut.tensor->Pull(id_tensor).status()
                    : op == 1 ? sut.tensor->Push(id_tensor, rows)
                              : sut.tensor->PushAdd(id_tensor, rows);
    if (kind == kRowShape && op == 0) {
      RC_ASSERT(status.ok());  // pull takes no rows: this one is a valid call
      return;
    }
    RC_ASSERT(!status.ok());
    const std::string& message = status.message();
    if (kind == kIdTooLarge || kind == kNegativeId) {
      RC_ASSERT(status.code() == StatusCode::kOutOfRange);
      RC_ASSERT(message.find("ids[2] is " + std::to_string(ids[2])) != std::string::npos);
    } else if (kind == kWrongDtype) {
      RC_ASSERT(status.code() == StatusCode::kInvalidArgument);
      RC_ASSERT(message.find("ids has dtype float32") != std::string::npos);
    } else {
      RC_ASSERT(status.code() == StatusCode::kInvalidArgument);
      RC_ASSERT(message.find("expected float32 " + ShapeToString({static_cast<int64_t>(ids.size()), model.dim})) !=
                std::string::npos);
    }
    RC_ASSERT(message.find("DistTensor('" + sut.tensor->name() + "')") == 0);
    std::vector<int64_t> all(model.num_ids);
    for (int64_t i = 0; i < model.num_ids; ++i) all[i] = i;
    Result<std::vector<float>> stored = sut.tensor->PullHost(all);
    RC_ASSERT(stored.ok());
    RC_ASSERT(*stored == model.rows);
  }
  void show(std::ostream& os) const override { os << "bad input kind " << kind << " op " << op; }
};

}  // namespace

void CheckDistTensorAgainstLocalTensor(DistTensor& tensor, DeviceRuntime* device, uint64_t* digest) {
  LocalTable model{tensor.num_rows(), tensor.dim(), std::vector<float>(tensor.num_rows() * tensor.dim(), 0.0f)};
  std::vector<int64_t> all(model.num_ids);
  for (int64_t i = 0; i < model.num_ids; ++i) all[i] = i;
  RC_ASSERT(tensor.PushHost(all, model.rows, WriteMode::kOverwrite).ok());
  Sut sut{&tensor, device, digest};
  rc::state::check(model, sut, rc::state::gen::execOneOfWithArgs<Pull, Push, BadInput>());
}

rc::Gen<std::vector<int64_t>> GenPartitionEnds(int64_t num_ids, int num_partitions) {
  return rc::gen::map(
      rc::gen::container<std::vector<int64_t>>(num_partitions - 1, rc::gen::inRange<int64_t>(0, num_ids + 1)),
      [num_ids](std::vector<int64_t> cuts) {
        std::sort(cuts.begin(), cuts.end());
        cuts.push_back(num_ids);
        return cuts;
      });
}

rc::Gen<OptimizerCase> GenOptimizerCase(int num_partitions, int world_size) {
  return rc::gen::exec([num_partitions, world_size] {
    OptimizerCase c;
    c.kind = *rc::gen::element(OptimizerKind::kAdagrad, OptimizerKind::kAdam);
    const int64_t num_ids = *rc::gen::inRange<int64_t>(1, 24);
    c.ends = *GenPartitionEnds(num_ids, num_partitions);
    c.dim = *rc::gen::inRange<int64_t>(1, 5);
    c.lr = *rc::gen::element(0.01f, 0.1f, 0.5f);
    // Not only the defaults: an optimizer that ignored or swapped them must fail.
    c.beta1 = *rc::gen::element(0.0f, 0.5f, 0.9f);
    c.beta2 = *rc::gen::element(0.0f, 0.99f, 0.999f);
    c.eps = *rc::gen::element(1e-10f, 1e-8f, 0.25f);
    c.initial = *rc::gen::container<std::vector<float>>(num_ids * c.dim, GenValue());
    const int steps = *rc::gen::inRange(1, 4);
    c.lookups.resize(steps);
    for (auto& by_rank : c.lookups) {
      by_rank.resize(world_size);
      for (auto& lookups : by_rank) {
        lookups.resize(*rc::gen::inRange(0, 3));
        for (DenseLookup& lookup : lookups) {
          // Few distinct ids so that duplicates are common.
          lookup.ids = *rc::gen::container<std::vector<int64_t>>(*rc::gen::inRange<size_t>(0, 8),
                                                                 rc::gen::inRange<int64_t>(0, num_ids));
          lookup.grad = *rc::gen::container<std::vector<float>>(lookup.ids.size() * c.dim, GenValue());
        }
      }
    }
    return c;
  });
}

Result<std::vector<float>> RunDistributedOptimizer(Transport& transport, const OptimizerCase& c,
                                                   const std::string& name) {
  FL_ASSIGN_OR_RETURN(RangePartitionBook book, RangePartitionBook::Create(c.ends));
  const int64_t dim = c.dim;
  FL_ASSIGN_OR_RETURN(DistEmbedding embedding,
                      DistEmbedding::Create(transport, name, book, dim,
                                            [&c, dim](int64_t id, int64_t col) { return c.initial[id * dim + col]; }));
  std::unique_ptr<SparseOptimizer> optimizer;
  if (c.kind == OptimizerKind::kAdagrad) {
    FL_ASSIGN_OR_RETURN(optimizer, SparseAdagrad::Create({&embedding}, c.lr, c.eps));
  } else {
    FL_ASSIGN_OR_RETURN(optimizer, SparseAdam::Create({&embedding}, c.lr, c.beta1, c.beta2, c.eps));
  }
  for (const auto& by_rank : c.lookups) {
    for (const DenseLookup& lookup : by_rank[transport.rank()]) {
      FL_ASSIGN_OR_RETURN(Tensor ids, Tensor::FromVector(lookup.ids));
      FL_RETURN_IF_ERROR(embedding.Forward(ids).status());
      FL_ASSIGN_OR_RETURN(Tensor grad, Tensor::FromVector(lookup.grad, {static_cast<int64_t>(lookup.ids.size()), dim}));
      FL_RETURN_IF_ERROR(embedding.Backward(grad));
    }
    FL_RETURN_IF_ERROR(optimizer->Step());
  }
  FL_RETURN_IF_ERROR(transport.Barrier());  // every owner finished its updates
  std::vector<int64_t> all(book.num_ids());
  for (int64_t i = 0; i < book.num_ids(); ++i) all[i] = i;
  return embedding.weights().PullHost(all);
}

std::vector<float> RunDenseOptimizer(const OptimizerCase& c) {
  std::vector<float> weights = c.initial;
  DenseOptimizer optimizer(c.kind, c.ends.back(), c.dim, c.lr, c.beta1, c.beta2, c.eps);
  for (const auto& by_rank : c.lookups) {
    std::vector<DenseLookup> all;
    for (const auto& lookups : by_rank) all.insert(all.end(), lookups.begin(), lookups.end());
    optimizer.Step(weights, all);
  }
  return weights;
}

}  // namespace faultline
