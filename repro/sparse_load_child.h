// Provides the child work that F13 and F14 share: a data-loader worker
// loads a sparse COO tensor (indices and values) and validates it as
// torch.load does, then reports its values to the parent as a gather child
// does (repro/gather_child.h), so the parent collects it with CollectGather.
#ifndef FAULTLINE_REPRO_SPARSE_LOAD_CHILD_H_
#define FAULTLINE_REPRO_SPARSE_LOAD_CHILD_H_

#include <optional>
#include <string>
#include <vector>

#include "reference/base/status.h"
#include "reference/process/process.h"
#include "reference/runtime/runtime.h"
#include "repro/gather_child.h"
#include "repro/registry.h"
#include "repro/scenario_support.h"

namespace faultline {
namespace repro {

// The loaded tensor: its values are these rows of a small table, its
// indices the row ids.
inline const GatherCase kSparseTensor{32, 4, 0.25f, {1, 7, 7, 30, 12}};

// How the loaded tensor's validation (torch._validate_sparse_coo_tensor_args)
// treats pinning.
enum class PinningCheck {
  // torch 2.5 and 2.6: indices and values must be pinned alike, and
  // is_pinned() asks CUDA about each.
  kAsksCuda,
  // torch 2.7: the same check, but is_pinned() answers false without a CUDA
  // call in a process where torch never initialized CUDA (not itself, not
  // before it was forked): such a process cannot hold pinned memory.
  kAsksCudaOnlyWhereTorchInitialized,
  // torch 2.8 (PR 154638): loading passes check_pinning=False.
  kSkipped,
};
// Returns "0", "1" or "2", and the check such text names (for spawned
// workers' arguments); nullopt for anything else.
std::string PinningCheckArg(PinningCheck check);
std::optional<PinningCheck> ParsePinningCheck(const std::string& arg);

// What a worker forked after its parent initialized CUDA shows when its
// pinning check asks CUDA: is_pinned() is a CUDA runtime call
// (cudaPointerGetAttributes), and in such a child every one fails with 3
// (docs/simcuda.md, pinned_memory_in_forked_child). PyTorch shows it as
// "CUDA error: initialization error".
inline Signature PinningCheckInForkedWorker(RuntimeKind runtime) {
  return {"cudaErrorInitializationError", 3,
          Pattern(WithForkNote(runtime, Quote("cudaPointerGetAttributes failed: initialization error"))),
          ProcessWithPid(R"(worker \d+)"), "validate_sparse_coo_tensor_args"};
}

// The worker's __getitem__ on runtime `kind`: loads the tensor, validates
// it (step "validate_sparse_coo_tensor_args") and sends its values to the
// parent. Returns the worker's exit code.
int LoadSparseTensorInWorker(RuntimeKind kind, PinningCheck check);

// Starts worker 0 by `method`, which loads the tensor under `check`, and
// collects it (CollectGather): its error checked against the expected
// signature, or its values against the host's. `transcript` is the
// scenario's so far.
Outcome RunSparseLoadWorker(RuntimeKind kind, PinningCheck check, StartMethod method, const Expected& expected,
                            std::string transcript);

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_SPARSE_LOAD_CHILD_H_
