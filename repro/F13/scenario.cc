// F13 — loading a sparse tensor in a forked worker asks CUDA whether it is
// pinned (PyTorch #144687 and #153143; fix PR 154638, torch 2.8.0). The
// parent initializes CUDA, then starts a data-loader worker; the worker
// loads a sparse COO tensor (indices and values) and validates it as
// torch.load does, which since torch 2.5 compares the memory pinning of the
// indices and the values. The values must equal the host's.
// docs/failures/F13.md.
#include <string>
#include <utility>
#include <vector>

#include "reference/process/process.h"
#include "reference/runtime/lazy_init.h"
#include "repro/F13/signature.h"
#include "repro/gather_child.h"
#include "repro/registry.h"
#include "repro/scenario_support.h"
#include "repro/sparse_load_child.h"

namespace faultline {
namespace repro {
namespace {

// torch.empty(1, device="cuda:0") in the script: lazy init, then a
// device allocation (freed again).
Status InitializeCudaLikeTorchEmpty(DeviceRuntime& rt) {
  FL_RETURN_IF_ERROR(LazyInitCuda(rt));
  FL_ASSIGN_OR_RETURN(void* one, rt.Malloc(sizeof(float)));
  return rt.Free(one);
}

Outcome Run(RuntimeKind kind, PinningCheck check, StartMethod method, const Expected& expected) {
  DeviceRuntime& rt = GetRuntime(kind);
  const bool checks = check != PinningCheck::kSkipped;
  std::string transcript = std::string("F13: the parent initializes CUDA, then a worker started by ") +
                           StartMethodName(method) + " loads a sparse tensor and validates it " +
                           (checks ? "with the pinning check (torch 2.5 to 2.7)"
                                   : "without the pinning check (check_pinning=False, PR 154638)") +
                           "\n";
  const Status init = InitializeCudaLikeTorchEmpty(rt);
  if (!init.ok()) return Unexpected(Observe(init, "main process", "initialize_cuda"), transcript);
  return RunSparseLoadWorker(kind, check, method, expected, std::move(transcript));
}

const bool kRegistered = RegisterFailure(Failure{
    "F13",
    "a sparse tensor loaded in a forked worker asks CUDA if it is pinned (PyTorch 144687, 153143 / 154638)",
    {
        Reproduces("legacy", "CUDA initialized in the parent; a forked worker loads a sparse tensor, pinning checked",
                   F13LegacyWorker,
                   [](RuntimeKind rt, const Signature& s) {
                     return Run(rt, PinningCheck::kAsksCuda, StartMethod::kFork, ExpectSignature{s});
                   }),
        Passes("fixed", "CUDA initialized in the parent; a forked worker loads it with check_pinning=False",
               [](RuntimeKind rt) { return Run(rt, PinningCheck::kSkipped, StartMethod::kFork, ExpectPass{}); }),
        Passes("workaround", "CUDA initialized in the parent; a spawned worker loads it, pinning checked",
               [](RuntimeKind rt) { return Run(rt, PinningCheck::kAsksCuda, StartMethod::kSpawn, ExpectPass{}); }),
    }});

}  // namespace
}  // namespace repro
}  // namespace faultline
