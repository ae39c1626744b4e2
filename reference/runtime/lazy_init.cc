// Implements LazyInitCuda. As in PyTorch, the state is the pid that
// initialized; a forked child inherits it and sees a different pid, while an
// exec'd (spawned) child starts with a fresh image and no state.
#include "reference/runtime/lazy_init.h"

#include <unistd.h>

#include <atomic>

namespace faultline {
namespace {

std::atomic<pid_t> g_initialized_by{0};

}  // namespace

bool InBadFork() {
  const pid_t by = g_initialized_by.load();
  return by != 0 && by != getpid();
}

Status LazyInitCuda(DeviceRuntime& runtime, SourceLocation loc) {
  if (runtime.kind() == RuntimeKind::kCpu) {
    return FailedPreconditionError("LazyInitCuda: runtime is cpu; expected simcuda or cuda");
  }
  if (InBadFork()) {
    // PyTorch raises before any CUDA call, so the error carries no CUDA code
    // (seen with torch 2.11 on an H100). The driver's own answer goes into
    // the message: cuInit fails with 3 here, and simcuda adds where the
    // parent initialized. Not cudaGetDeviceCount: in a poisoned child it
    // succeeds from the runtime's inherited cache (Note [Fork poisoning]).
    const Status driver = runtime.DriverInit(loc);
    if (driver.ok()) return FailedPreconditionError(kCannotReinitializeCuda);
    return FailedPreconditionError(std::string(kCannotReinitializeCuda) + " (" + driver.message() + ")");
  }
  if (g_initialized_by.load() == getpid()) return OkStatus();
  FL_RETURN_IF_ERROR(runtime.GetDeviceCount(loc).status());
  g_initialized_by.store(getpid());
  return OkStatus();
}

}  // namespace faultline
