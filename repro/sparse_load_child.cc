// Implements the sparse-tensor load and validation of a data-loader worker.
#include "repro/sparse_load_child.h"

#include "reference/process/child_registry.h"
#include "reference/runtime/lazy_init.h"
#include "repro/scenario_support.h"

namespace faultline {
namespace repro {
namespace {

// Tensor.is_pinned() under `check`.
Result<bool> IsPinned(DeviceRuntime& rt, const void* data, PinningCheck check) {
  // The workers never initialize CUDA themselves: torch's CUDA is
  // initialized in this process only when it was before the fork.
  if (check == PinningCheck::kAsksCudaOnlyWhereTorchInitialized && !InBadFork()) return false;
  return rt.IsPinned(data);
}

Status ValidateSparseCoo(DeviceRuntime& rt, const std::vector<int64_t>& indices, const std::vector<float>& values,
                         PinningCheck check) {
  if (indices.size() * static_cast<size_t>(kSparseTensor.cols) != values.size()) {
    return InvalidArgumentError("the sparse tensor has " + std::to_string(indices.size()) + " indices but " +
                                std::to_string(values.size()) + " values");
  }
  if (check == PinningCheck::kSkipped) return OkStatus();
  FL_ASSIGN_OR_RETURN(bool indices_pinned, IsPinned(rt, indices.data(), check));
  FL_ASSIGN_OR_RETURN(bool values_pinned, IsPinned(rt, values.data(), check));
  if (indices_pinned != values_pinned) {
    return InvalidArgumentError("memory pinning of indices (" + std::to_string(indices_pinned) +
                                ") must match memory pinning of values (" + std::to_string(values_pinned) + ")");
  }
  return OkStatus();
}

// Spawned entry: args = runtime, the pinning check (PinningCheckArg).
int SpawnedWorker(const std::vector<std::string>& args) {
  if (args.size() != 2) return 2;
  Result<RuntimeKind> kind = ParseRuntimeKind(args[0]);
  const std::optional<PinningCheck> check = ParsePinningCheck(args[1]);
  return kind.ok() && check ? LoadSparseTensorInWorker(*kind, *check) : 2;
}
FL_REGISTER_CHILD("faultline_sparse_load_worker", SpawnedWorker);

}  // namespace

std::string PinningCheckArg(PinningCheck check) { return std::to_string(static_cast<int>(check)); }

std::optional<PinningCheck> ParsePinningCheck(const std::string& arg) {
  if (arg == "0") return PinningCheck::kAsksCuda;
  if (arg == "1") return PinningCheck::kAsksCudaOnlyWhereTorchInitialized;
  if (arg == "2") return PinningCheck::kSkipped;
  return std::nullopt;
}

int LoadSparseTensorInWorker(RuntimeKind kind, PinningCheck check) {
  Result<std::vector<float>> values = GatherOnHost(kSparseTensor);
  if (!values.ok()) return ReportGather(values, "load");
  const Status valid = ValidateSparseCoo(GetRuntime(kind), kSparseTensor.ids, *values, check);
  if (!valid.ok()) return ReportGather(valid, "validate_sparse_coo_tensor_args");
  return ReportGather(values, "");
}

Outcome RunSparseLoadWorker(RuntimeKind kind, PinningCheck check, StartMethod method, const Expected& expected,
                            std::string transcript) {
  Result<std::vector<float>> baseline = GatherOnHost(kSparseTensor);
  if (!baseline.ok()) return Unexpected(Observe(baseline.status(), "main process", "baseline"), transcript);
  auto child = ChildProcess::Start(method, [kind, check] { return LoadSparseTensorInWorker(kind, check); },
                                   "faultline_sparse_load_worker", {RuntimeKindName(kind), PinningCheckArg(check)});
  if (!child.ok()) return Unexpected(Observe(child.status(), "main process", "start_worker"), transcript);
  const std::string process = "worker 0 (pid " + std::to_string(child->pid()) + ")";
  if (auto ended = CollectGather(*child, process, kind, expected, *baseline, &transcript)) return *ended;
  return PassedIf(true, "the worker's loaded values equal the host's", transcript);
}

}  // namespace repro
}  // namespace faultline
