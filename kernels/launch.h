// Provides LaunchKernel: runs a kernel functor on the chosen runtime. On
// simcuda the functor's host twin runs (the same operator() compiled for the
// host, one simulated thread at a time); on cuda the nvcc-compiled launcher
// runs it on the GPU.
#ifndef FAULTLINE_KERNELS_LAUNCH_H_
#define FAULTLINE_KERNELS_LAUNCH_H_

#include <initializer_list>

#include "kernels/kernel_api.h"
#include "reference/base/status.h"
#include "reference/runtime/runtime.h"

namespace faultline {
namespace kernels {

// The nvcc-compiled launcher of kernel K; returns a cudaError_t.
template <class K>
using CudaLauncher = int (*)(const K& kernel, const LaunchConfig& config);

// Runs every simulated thread of a launch in order.
template <class K>
void RunHostTwin(const LaunchConfig& config, const K& kernel) {
  for (unsigned block = 0; block < config.grid; ++block) {
    for (unsigned thread = 0; thread < config.block; ++thread) {
      kernel(ThreadIndex{block, thread, config.block, config.grid});
    }
  }
}

// Launches `kernel` on `runtime` (DeviceRuntime::Launch): simcuda runs its
// host twin, cuda the nvcc-compiled launcher. `buffers` lists the memory the
// kernel touches, which simcuda checks the way the GPU's MMU would.
template <class K>
Status LaunchKernel(DeviceRuntime& runtime, const char* name, const LaunchConfig& config, const K& kernel,
                    std::initializer_list<BufferUse> buffers, CudaLauncher<K> cuda_launcher,
                    SourceLocation loc = SourceLocation::Current()) {
  return runtime.Launch(
      name, config, buffers.begin(), buffers.size(), [&] { RunHostTwin(config, kernel); },
      [&] { return cuda_launcher(kernel, config); }, loc);
}

}  // namespace kernels
}  // namespace faultline

#endif  // FAULTLINE_KERNELS_LAUNCH_H_
