// Provides the device runtime a device test runs on: simcuda, or real CUDA
// when the gpu-tagged target sets FAULTLINE_TEST_RUNTIME=cuda.
#ifndef FAULTLINE_REFERENCE_RUNTIME_TEST_RUNTIME_H_
#define FAULTLINE_REFERENCE_RUNTIME_TEST_RUNTIME_H_

#include <cstdlib>
#include <cstring>

#include "reference/runtime/runtime.h"

namespace faultline {

// Returns the runtime under test, or nullptr when it has no device here
// (the caller skips with a reason).
inline DeviceRuntime* DeviceRuntimeUnderTest() {
  const char* value = std::getenv("FAULTLINE_TEST_RUNTIME");
  const bool cuda = value != nullptr && std::strcmp(value, "cuda") == 0;
  DeviceRuntime& rt = GetRuntime(cuda ? RuntimeKind::kCuda : RuntimeKind::kSimCuda);
  return rt.DeviceCount() > 0 ? &rt : nullptr;
}

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_RUNTIME_TEST_RUNTIME_H_
