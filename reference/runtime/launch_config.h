// Provides the launch interface's plain data: how a 1-D kernel is launched
// and which buffers it touches. Part of the runtime (DeviceRuntime::Launch)
// so that the runtime knows nothing of kernels; plain structs with no
// project includes, so nvcc-compiled .cu files can use them too.
#ifndef FAULTLINE_REFERENCE_RUNTIME_LAUNCH_CONFIG_H_
#define FAULTLINE_REFERENCE_RUNTIME_LAUNCH_CONFIG_H_

#include <cstddef>

namespace faultline {

// Describes a 1-D launch: grid and block size and the stream (nullptr = default).
struct LaunchConfig {
  unsigned grid = 1;
  unsigned block = 1;
  void* stream = nullptr;
};

// A buffer a kernel reads or writes; simcuda checks each one before it runs
// the host twin, the way a real GPU faults on an illegal address.
struct BufferUse {
  const void* ptr;
  size_t bytes;
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_RUNTIME_LAUNCH_CONFIG_H_
