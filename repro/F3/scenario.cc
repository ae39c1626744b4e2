// F3 — device ids reach a host-only partition lookup (DGL #7333,
// introduced by PR 7146, fixed by PR 7197). A trainer keeps its seed ids on
// cuda:0 and calls a DistEmbedding; the pull locates each id's partition.
// legacy takes a host view of the ids; fixed copies them to host int64 first
// (upstream's fix) or locates them with a device kernel. docs/failures/F3.md.
#include <unistd.h>

#include "reference/distributed/in_process_transport.h"
#include "reference/distributed/sparse_optimizer.h"
#include "reference/distributed/testing/dense_reference.h"
#include "repro/F3/signature.h"
#include "repro/registry.h"
#include "repro/scenario_support.h"

namespace faultline {
namespace repro {
namespace {

constexpr int64_t kNumIds = 40;
constexpr int64_t kDim = 8;
constexpr float kLr = 0.1f;

float Initial(int64_t id, int64_t col) { return static_cast<float>(id) + static_cast<float>(col) / 8.0f; }

// The single-process baseline: rows of the same table, gathered locally.
std::vector<float> BaselineRows(const std::vector<int64_t>& ids) {
  std::vector<float> rows;
  for (int64_t id : ids) {
    for (int64_t c = 0; c < kDim; ++c) rows.push_back(Initial(id, c));
  }
  return rows;
}

Outcome Run(RuntimeKind runtime, IdLookup lookup, bool caller_moves_ids_to_host, const Expected& expected) {
  const std::string trainer = "trainer 0 (pid " + std::to_string(getpid()) + ")";
  std::string transcript = std::string("F3: DistEmbedding 'emb' (") + std::to_string(kNumIds) + " x " +
                           std::to_string(kDim) + ", 2 partitions), seed ids on cuda:0, id lookup " +
                           IdLookupName(lookup) + (caller_moves_ids_to_host ? ", caller passes ids.cpu()" : "") + "\n";
  auto fail = [&](const Status& status, const char* step) {
    return Unexpected(Observe(status, trainer, step), transcript);
  };

  Result<InProcessTransport> transport = InProcessTransport::Create(2);
  if (!transport.ok()) return fail(transport.status(), "setup");
  Result<RangePartitionBook> book = RangePartitionBook::Even(kNumIds, 2);
  if (!book.ok()) return fail(book.status(), "setup");
  Result<DistEmbedding> embedding = DistEmbedding::Create(*transport, "emb", *book, kDim, Initial, lookup);
  if (!embedding.ok()) return fail(embedding.status(), "setup");

  const std::vector<int64_t> seeds{3, 37, 3, 20, 19, 0};  // both partitions, one duplicate
  Result<Tensor> device_ids = Tensor::FromVectorOn(seeds, Device::Cuda(0), &GetRuntime(runtime));
  if (!device_ids.ok()) return fail(device_ids.status(), "copy_ids_to_device");
  Tensor ids = *device_ids;
  if (caller_moves_ids_to_host) ids = *ids.Cpu();

  Result<Tensor> rows = embedding->Forward(ids);
  if (!rows.ok()) {
    ObservedError error = Observe(rows.status(), trainer, "DistEmbedding.forward");
    return EndedInError(expected, error, transcript);
  }
  if (auto missed = RanToTheEnd(expected, "the forward returned rows", transcript)) return *missed;
  transcript += "forward returned " + ShapeToString(rows->shape()) + " rows on " + rows->device().ToString() + "\n";
  Result<Tensor> host_rows = rows->Cpu();
  if (!host_rows.ok()) return fail(host_rows.status(), "copy_rows_to_host");
  const bool rows_equal = *host_rows->ToVector<float>() == BaselineRows(seeds) && rows->device() == ids.device();

  // One training step: the rows themselves serve as the gradient.
  Result<std::unique_ptr<SparseAdagrad>> adagrad = SparseAdagrad::Create({&*embedding}, kLr);
  if (!adagrad.ok()) return fail(adagrad.status(), "setup");
  Status stepped = embedding->Backward(*rows);
  if (stepped.ok()) stepped = (*adagrad)->Step();
  if (!stepped.ok()) return fail(stepped, "SparseAdagrad.step");
  std::vector<int64_t> all(kNumIds);
  std::vector<float> dense(kNumIds * kDim);
  for (int64_t id = 0; id < kNumIds; ++id) {
    all[id] = id;
    for (int64_t c = 0; c < kDim; ++c) dense[id * kDim + c] = Initial(id, c);
  }
  DenseOptimizer reference(OptimizerKind::kAdagrad, kNumIds, kDim, kLr);
  reference.Step(dense, {DenseLookup{seeds, BaselineRows(seeds)}});
  Result<std::vector<float>> trained = embedding->weights().PullHost(all);
  if (!trained.ok()) return fail(trained.status(), "pull_weights");
  return PassedIf(rows_equal && *trained == dense,
                  "rows equal the host-id baseline (on the ids' device) and the Adagrad step equals the dense "
                  "single-process reference",
                  transcript);
}

const bool kRegistered = RegisterFailure(Failure{
    "F3",
    "Device ids reach a host-only partition lookup (DGL 7333 / 7146 / 7197)",
    {
        Reproduces(
            "legacy", "DistEmbedding(ids on cuda:0); nid2partid takes a host view of the ids",
            OnEveryRuntime(kF3Legacy),
            [](RuntimeKind rt, const Signature& s) { return Run(rt, IdLookup::kHostView, false, ExpectSignature{s}); }),
        Passes("fixed", "the lookup copies the ids to host int64 first (DGL PR 7197)",
               [](RuntimeKind rt) { return Run(rt, IdLookup::kCopyToHost, false, ExpectPass{}); }),
        Passes("fixed-device-lookup", "the lookup runs as a kernel on the ids' device",
               [](RuntimeKind rt) { return Run(rt, IdLookup::kOnDevice, false, ExpectPass{}); }),
        Passes("workaround", "legacy lookup; the caller passes ids.cpu()",
               [](RuntimeKind rt) { return Run(rt, IdLookup::kHostView, true, ExpectPass{}); }),
    }});

}  // namespace
}  // namespace repro
}  // namespace faultline
