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
    // The runtime call shows what CUDA itself says in this process.
    Result<int> probe = runtime.GetDeviceCount(loc);
    if (probe.ok() || !probe.status().cuda_error()) return FailedPreconditionError(kCannotReinitializeCuda);
    return Status(*probe.status().cuda_error(),
                  std::string(kCannotReinitializeCuda) + " (" + probe.status().message() + ")");
  }
  if (g_initialized_by.load() == getpid()) return OkStatus();
  FL_RETURN_IF_ERROR(runtime.GetDeviceCount(loc).status());
  g_initialized_by.store(getpid());
  return OkStatus();
}

}  // namespace faultline
