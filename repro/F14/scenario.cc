// F14 — a pin-memory DataLoader initializes CUDA before it forks its
// workers (PyTorch #144687, torch 2.5 and 2.6; passes in 2.7). The script
// itself never touches CUDA: the loader's iterator checks that pinning is
// available by counting devices through CUDA, which initializes it in the
// parent; the worker it then forks loads a sparse tensor whose validation
// asks CUDA whether the tensor is pinned. docs/failures/F14.md.
#include <string>
#include <utility>
#include <vector>

#include "reference/process/process.h"
#include "repro/F14/signature.h"
#include "repro/gather_child.h"
#include "repro/registry.h"
#include "repro/scenario_support.h"
#include "repro/sparse_load_child.h"

namespace faultline {
namespace repro {
namespace {

// The iterator's `pin_memory and torch.cuda.is_available()`: without
// PYTORCH_NVML_BASED_CUDA_CHECK, torch._C._cuda_getDeviceCount(), whose
// cudaGetDeviceCount is the process's first CUDA call and initializes CUDA
// (torch's own lazy init does not run).
Result<bool> PinMemoryAvailableLikeDataLoader(DeviceRuntime& rt) {
  FL_ASSIGN_OR_RETURN(int devices, rt.GetDeviceCount());
  return devices > 0;
}

Outcome Run(RuntimeKind kind, PinningCheck check, StartMethod method, const Expected& expected) {
  DeviceRuntime& rt = GetRuntime(kind);
  std::string transcript =
      std::string(
          "F14: the script never touches CUDA; a pin_memory=True loader checks pinning is available "
          "by counting devices through CUDA, then starts a worker by ") +
      StartMethodName(method) + " that loads a sparse tensor; its is_pinned() " +
      (check == PinningCheck::kAsksCuda ? "asks CUDA (torch 2.5, 2.6)"
                                        : "asks CUDA only where torch initialized it (torch 2.7)") +
      "\n";
  Result<bool> available = PinMemoryAvailableLikeDataLoader(rt);
  if (!available.ok()) return Unexpected(Observe(available.status(), "main process", "pin_memory_check"), transcript);
  transcript += std::string("pin memory available: ") + (*available ? "yes" : "no") + "\n";
  return RunSparseLoadWorker(kind, check, method, expected, std::move(transcript));
}

const bool kRegistered = RegisterFailure(Failure{
    "F14",
    "a pin-memory DataLoader initializes CUDA before it forks its workers (PyTorch 144687)",
    {
        Reproduces("legacy",
                   "the loader counts devices through CUDA; a forked worker loads a sparse tensor, is_pinned asks CUDA",
                   F14LegacyWorker,
                   [](RuntimeKind rt, const Signature& s) {
                     return Run(rt, PinningCheck::kAsksCuda, StartMethod::kFork, ExpectSignature{s});
                   }),
        Passes("fixed", "same loader; the forked worker's is_pinned asks CUDA only where torch initialized it",
               [](RuntimeKind rt) {
                 return Run(rt, PinningCheck::kAsksCudaOnlyWhereTorchInitialized, StartMethod::kFork, ExpectPass{});
               }),
        Passes("workaround", "same loader; a spawned worker, is_pinned asks CUDA",
               [](RuntimeKind rt) { return Run(rt, PinningCheck::kAsksCuda, StartMethod::kSpawn, ExpectPass{}); }),
    }});

}  // namespace
}  // namespace repro
}  // namespace faultline
