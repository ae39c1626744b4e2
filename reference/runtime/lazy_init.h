// Provides LazyInitCuda, the analog of PyTorch's torch.cuda._lazy_init guard:
// the first call in a process initializes CUDA; a process forked after that
// ("bad fork") gets PyTorch's "Cannot re-initialize CUDA in forked
// subprocess" error instead, as PyTorch raises it: before any CUDA call, with
// no CUDA error code. See Note [Fork poisoning] in
// reference/runtime/simcuda_runtime.cc and docs/simcuda.md.
#ifndef FAULTLINE_REFERENCE_RUNTIME_LAZY_INIT_H_
#define FAULTLINE_REFERENCE_RUNTIME_LAZY_INIT_H_

#include "reference/base/status.h"
#include "reference/runtime/runtime.h"

namespace faultline {

// PyTorch's message, which the F4 repro matches.
inline constexpr char kCannotReinitializeCuda[] =
    "Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the 'spawn' "
    "start method";

// Initializes `runtime` (simcuda or cuda) on first use in this process. In a
// process forked after an ancestor initialized CUDA through this guard, returns
// FailedPrecondition with kCannotReinitializeCuda, followed in parentheses by
// the driver's own answer in this process (cuInit: initialization error) and,
// on simcuda, where CUDA was initialized in the parent.
Status LazyInitCuda(DeviceRuntime& runtime, SourceLocation loc = SourceLocation::Current());

// Returns whether this process was forked after CUDA was lazily initialized
// (in this process's parent or an earlier ancestor).
bool InBadFork();

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_RUNTIME_LAZY_INIT_H_
