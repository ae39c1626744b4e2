// Implements runtime selection: by name, from FAULTLINE_RUNTIME, and the
// backend singletons behind GetRuntime. Kept apart from runtime.cc so the
// simcuda model links without the real CUDA runtime (the drop-in libraries).
#include <cstdlib>

#include "reference/runtime/backends.h"
#include "reference/runtime/runtime.h"

namespace faultline {

Result<RuntimeKind> ParseRuntimeKind(std::string_view text, std::string_view what) {
  if (text == "cpu") return RuntimeKind::kCpu;
  if (text == "simcuda") return RuntimeKind::kSimCuda;
  if (text == "cuda") return RuntimeKind::kCuda;
  if (text == "auto") return CudaDevicePresent() ? RuntimeKind::kCuda : RuntimeKind::kSimCuda;
  return InvalidArgumentError(std::string(what) + " is '" + std::string(text) +
                              "'; expected one of cpu, simcuda, cuda, auto");
}

Result<RuntimeKind> RuntimeKindFromEnv() {
  const char* value = std::getenv("FAULTLINE_RUNTIME");
  return ParseRuntimeKind(value && *value ? value : "auto", "FAULTLINE_RUNTIME");
}

DeviceRuntime& GetRuntime(RuntimeKind kind) {
  switch (kind) {
    case RuntimeKind::kCpu: return CpuRuntimeInstance();
    case RuntimeKind::kSimCuda: return SimCudaRuntimeInstance();
    case RuntimeKind::kCuda: return CudaRuntimeInstance();
  }
  return CpuRuntimeInstance();
}

}  // namespace faultline
