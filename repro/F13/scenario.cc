// F13 — loading a sparse tensor in a forked worker asks CUDA whether it is
// pinned (PyTorch #144687 and #153143; fix PR 154638, torch 2.8.0). The
// parent initializes CUDA, then starts a data-loader worker; the worker
// loads a sparse COO tensor (indices and values) and validates it as
// torch.load does, which since torch 2.5 compares the memory pinning of the
// indices and the values. The values must equal the host's.
// docs/failures/F13.md.
#include <optional>
#include <vector>

#include "reference/base/parse_int.h"
#include "reference/process/child_registry.h"
#include "reference/process/process.h"
#include "reference/runtime/lazy_init.h"
#include "repro/F13/signature.h"
#include "repro/gather_child.h"
#include "repro/registry.h"
#include "repro/scenario_support.h"

namespace faultline {
namespace repro {
namespace {

// The sparse tensor's values are these rows of a small table; its indices
// are the row ids.
const GatherCase kSparse{32, 4, 0.25f, {1, 7, 7, 30, 12}};

enum class Validation { kChecksPinning, kSkipsPinning };

// torch._validate_sparse_coo_tensor_args after loading: since torch 2.5 it
// checks that indices and values are pinned alike, which asks CUDA about
// each (Tensor.is_pinned); PR 154638 (torch 2.8) loads with
// check_pinning=False.
Status ValidateSparseCoo(DeviceRuntime& rt, const std::vector<int64_t>& indices, const std::vector<float>& values,
                         Validation validation) {
  if (indices.size() * static_cast<size_t>(kSparse.cols) != values.size()) {
    return InvalidArgumentError("the sparse tensor has " + std::to_string(indices.size()) + " indices but " +
                                std::to_string(values.size()) + " values");
  }
  if (validation == Validation::kSkipsPinning) return OkStatus();
  FL_ASSIGN_OR_RETURN(bool indices_pinned, rt.IsPinned(indices.data()));
  FL_ASSIGN_OR_RETURN(bool values_pinned, rt.IsPinned(values.data()));
  if (indices_pinned != values_pinned) {
    return InvalidArgumentError("memory pinning of indices (" + std::to_string(indices_pinned) +
                                ") must match memory pinning of values (" + std::to_string(values_pinned) + ")");
  }
  return OkStatus();
}

// The worker's __getitem__: load the tensor, validate it, send its values.
int Worker(RuntimeKind kind, Validation validation) {
  Result<std::vector<float>> values = GatherOnHost(kSparse);
  if (!values.ok()) return ReportGather(values, "load");
  const Status valid = ValidateSparseCoo(GetRuntime(kind), kSparse.ids, *values, validation);
  if (!valid.ok()) return ReportGather(valid, "validate_sparse_coo_tensor_args");
  return ReportGather(values, "");
}

// Spawned entry: args = runtime, 1 when the validation checks pinning.
int SpawnedWorker(const std::vector<std::string>& args) {
  if (args.size() != 2) return 2;
  Result<RuntimeKind> kind = ParseRuntimeKind(args[0]);
  const std::optional<int> checks = ParseWholeNonNegative<int>(args[1]);
  if (!kind.ok() || !checks || *checks > 1) return 2;
  return Worker(*kind, *checks == 1 ? Validation::kChecksPinning : Validation::kSkipsPinning);
}
FL_REGISTER_CHILD("faultline_f13_worker", SpawnedWorker);

// torch.empty(1, device="cuda:0") in the script: lazy init, then a
// device allocation (freed again).
Status InitializeCudaLikeTorchEmpty(DeviceRuntime& rt) {
  FL_RETURN_IF_ERROR(LazyInitCuda(rt));
  FL_ASSIGN_OR_RETURN(void* one, rt.Malloc(sizeof(float)));
  return rt.Free(one);
}

Outcome Run(RuntimeKind kind, Validation validation, StartMethod method, const Signature* signature) {
  DeviceRuntime& rt = GetRuntime(kind);
  const bool checks = validation == Validation::kChecksPinning;
  std::string transcript = std::string("F13: the parent initializes CUDA, then a worker started by ") +
                           StartMethodName(method) + " loads a sparse tensor and validates it " +
                           (checks ? "with the pinning check (torch 2.5 to 2.7)"
                                   : "without the pinning check (check_pinning=False, PR 154638)") +
                           "\n";
  const Status init = InitializeCudaLikeTorchEmpty(rt);
  if (!init.ok()) return Unexpected(Observe(init, "main process", "initialize_cuda"), transcript);
  Result<std::vector<float>> baseline = GatherOnHost(kSparse);
  if (!baseline.ok()) return Unexpected(Observe(baseline.status(), "main process", "baseline"), transcript);

  auto child = ChildProcess::Start(method, [kind, validation] { return Worker(kind, validation); },
                                   "faultline_f13_worker", {RuntimeKindName(kind), checks ? "1" : "0"});
  if (!child.ok()) return Unexpected(Observe(child.status(), "main process", "start_worker"), transcript);
  const std::string process = "worker 0 (pid " + std::to_string(child->pid()) + ")";
  if (auto ended = CollectGather(*child, process, kind, signature, *baseline, &transcript)) return *ended;
  return PassedIf(true, "the worker's loaded values equal the host's", transcript);
}

const bool kRegistered = RegisterFailure(Failure{
    "F13",
    "a sparse tensor loaded in a forked worker asks CUDA if it is pinned (PyTorch 144687, 153143 / 154638)",
    {
        Reproduces("legacy", "CUDA initialized in the parent; a forked worker loads a sparse tensor, pinning checked",
                   F13LegacyWorker,
                   [](RuntimeKind rt, const Signature& s) {
                     return Run(rt, Validation::kChecksPinning, StartMethod::kFork, &s);
                   }),
        Passes("fixed", "CUDA initialized in the parent; a forked worker loads it with check_pinning=False",
               [](RuntimeKind rt) { return Run(rt, Validation::kSkipsPinning, StartMethod::kFork, nullptr); }),
        Passes("workaround", "CUDA initialized in the parent; a spawned worker loads it, pinning checked",
               [](RuntimeKind rt) { return Run(rt, Validation::kChecksPinning, StartMethod::kSpawn, nullptr); }),
    }});

}  // namespace
}  // namespace repro
}  // namespace faultline
