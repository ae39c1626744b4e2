// Provides the device runtime a device test runs on: simcuda, or real CUDA
// when the gpu-tagged target sets FAULTLINE_TEST_RUNTIME=cuda. This is the
// one place tests choose their runtime.
//
// A gpu target must never pass by skipping: when the runtime under test has
// no usable device, DeviceRuntimeUnderTest() is an error that says why (no
// driver: 35, stub driver: 34, no device: 100, ...), and tests fail on it.
#ifndef FAULTLINE_REFERENCE_RUNTIME_TEST_RUNTIME_H_
#define FAULTLINE_REFERENCE_RUNTIME_TEST_RUNTIME_H_

#include <cstdlib>
#include <string>

#include "reference/runtime/runtime.h"

namespace faultline {

// Returns the runtime FAULTLINE_TEST_RUNTIME names: "simcuda" (or unset) or
// "cuda"; any other value is an error naming it.
inline Result<RuntimeKind> RuntimeKindUnderTest() {
  const char* value = std::getenv("FAULTLINE_TEST_RUNTIME");
  const std::string text = value != nullptr && *value != '\0' ? value : "simcuda";
  if (text == "simcuda") return RuntimeKind::kSimCuda;
  if (text == "cuda") return RuntimeKind::kCuda;
  return InvalidArgumentError("FAULTLINE_TEST_RUNTIME is '" + text + "'; expected simcuda or cuda");
}

// Returns the runtime under test, or why it has no usable device here. The
// device count is probed in a forked child, so asking does not initialize
// CUDA in the test process.
inline Result<DeviceRuntime*> DeviceRuntimeUnderTest() {
  FL_ASSIGN_OR_RETURN(const RuntimeKind kind, RuntimeKindUnderTest());
  const std::string what = std::string("FAULTLINE_TEST_RUNTIME=") + RuntimeKindName(kind);
  Result<int> count = ProbeDeviceCount(kind);
  if (!count.ok()) {
    return UnavailableError(what + " has no usable device: " + count.status().ToString() +
                            " (35: no driver, 34: only the stub driver, 100: no device or none visible)");
  }
  if (*count == 0) return UnavailableError(what + " reports 0 devices");
  return &GetRuntime(kind);
}

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_RUNTIME_TEST_RUNTIME_H_
